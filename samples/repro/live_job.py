"""A gloo data-parallel job with the rhythm of a real one, and one fault (TK_SCENARIO) at step TK_FAULT_STEP.

The rhythm: a slow first step (TK_FIRST_S, as compilation or ZeRO-3 partitioning), uneven steps
(0.05-0.6 s, every 12th 1.5 s, as a data loader hiccups), an evaluation every TK_EVAL_EVERY steps
announced as HF Trainer does (``***** Running Evaluation *****``, TK_EVAL_S of silence, then the
eval loss) and a checkpoint save at step TK_CKPT_STEP (``Saving model checkpoint to``, TK_CKPT_S
on rank 0 while the others wait in a barrier).

healthy   TK_STEPS steps, no fault
deadlock  rank 3 stops before the fault step's all_reduce, stuck in a data-loader wait
crash     rank 3 raises at the fault step, before its all_reduce
mismatch  rank 1 all_reduces a gradient of another size at the fault step
slow      from the fault step on, rank 2 takes TK_SLOW_S longer for every step

The faulting rank writes the wall-clock time its fault starts to TK_FAULT_FILE (when set): the
benchmark (benchmarks/detect_latency.py) measures from it. Run under ``tracekit run``.
"""

import datetime
import os
import random
import tempfile
import time

import torch
import torch.distributed as dist

SCENARIO = os.environ.get("TK_SCENARIO", "healthy")
STEPS = int(os.environ.get("TK_STEPS", 24))
FAULT_STEP = int(os.environ.get("TK_FAULT_STEP", 20))
EVAL_EVERY, EVAL_S = int(os.environ.get("TK_EVAL_EVERY", 8)), float(os.environ.get("TK_EVAL_S", 4))
CKPT_STEP, CKPT_S = int(os.environ.get("TK_CKPT_STEP", 12)), float(os.environ.get("TK_CKPT_S", 6))
FIRST_S, SLOW_S = float(os.environ.get("TK_FIRST_S", 6)), float(os.environ.get("TK_SLOW_S", 6))
RANK = int(os.environ["RANK"])


def fault_starts() -> None:
    path = os.environ.get("TK_FAULT_FILE")
    if path:
        with open(path, "a") as f:
            f.write(f"{time.time():.3f} rank {RANK} {SCENARIO}\n")


def next_batch_stuck():
    """Stands in for a DataLoader worker that never returns a batch."""
    time.sleep(600)


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("TK_TIMEOUT_S", "120"))))
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    time.sleep(FIRST_S)  # the first step: compilation, partitioning
    for step in range(1, STEPS + 1):
        took = 1.5 if step % 12 == 0 else random.Random(step).uniform(0.05, 0.6)
        time.sleep(took)  # the same on every rank: the step's compute and data loading
        loss = model(torch.randn(32, 64)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        flat = torch.cat([p.grad.flatten() for p in model.parameters()])
        if step == FAULT_STEP and SCENARIO == "deadlock" and RANK == 3:
            fault_starts()
            next_batch_stuck()
        if step == FAULT_STEP and SCENARIO == "crash" and RANK == 3:
            fault_starts()
            raise RuntimeError("simulated failure on rank 3 before its all_reduce")
        if step == FAULT_STEP and SCENARIO == "mismatch" and RANK == 1:
            fault_starts()
            flat = flat[:-1].contiguous()
        if step >= FAULT_STEP and SCENARIO == "slow" and RANK == 2:
            if step == FAULT_STEP:
                fault_starts()
            time.sleep(SLOW_S)  # a throttled device, a failing link: every step of this rank is slow
        dist.all_reduce(flat)
        opt.step()
        losses = [torch.zeros(1) for _ in range(world)]
        dist.all_gather(losses, loss.detach().reshape(1))
        if RANK == 0:
            print({"loss": round(float(torch.cat(losses).mean()), 4), "global_step/max_steps": f"{step}/{STEPS}"}, flush=True)
        if step % EVAL_EVERY == 0:
            if RANK == 0:
                print("***** Running Evaluation *****", flush=True)
            time.sleep(EVAL_S)
            metric = torch.ones(1)
            dist.all_reduce(metric)
            if RANK == 0:
                print({"eval_loss": round(float(loss), 4), "step": step}, flush=True)
        if step == CKPT_STEP:
            if RANK == 0:
                where = tempfile.mkdtemp(prefix="tk-ckpt-")
                print(f"Saving model checkpoint to {where}/checkpoint-{step}", flush=True)
                t0 = time.monotonic()
                torch.save(model.state_dict(), os.path.join(where, "model.pt"))
                time.sleep(max(0.0, CKPT_S - (time.monotonic() - t0)))
                os.remove(os.path.join(where, "model.pt"))
                os.rmdir(where)
            dist.barrier()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
