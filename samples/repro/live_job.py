"""A data-parallel job with the rhythm of a real one, and one fault (TK_SCENARIO) at step TK_FAULT_STEP.

The backend: TK_BACKEND=gloo|nccl, or the first argument (gloo where neither is given). On nccl each
rank puts its model and tensors on cuda:LOCAL_RANK (cuda:0 where the node has fewer GPUs: several
ranks then share one GPU). Where NCCL_HOSTID is set and the node runs several ranks, each rank takes
NCCL_HOSTID.LOCAL_RANK as its own, so that NCCL sees one fake host per rank and accepts two ranks on one
GPU (NCCL refuses a duplicate GPU within one host): two fake nodes of 2 ranks on one GPU are 4 NCCL hosts.

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

TK_FAULT_RANK, where set, is the faulting rank of any scenario (the defaults are those above).

The faulting rank writes the wall-clock time its fault starts to TK_FAULT_FILE (when set): the
benchmark (benchmarks/detect_latency.py) measures from it. Run under ``tracekit run``.
"""

import datetime
import os
import random
import sys
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
BACKEND = (sys.argv[1] if len(sys.argv) > 1 else os.environ.get("TK_BACKEND", "gloo")).lower()
FAULT_RANK = {"deadlock": 3, "crash": 3, "mismatch": 1, "slow": 2}.get(SCENARIO, -1)
if os.environ.get("TK_FAULT_RANK"):
    FAULT_RANK = int(os.environ["TK_FAULT_RANK"])


def fault_starts() -> None:
    path = os.environ.get("TK_FAULT_FILE")
    if path:
        with open(path, "a") as f:
            f.write(f"{time.time():.3f} rank {RANK} {SCENARIO}\n")


def next_batch_stuck():
    """Stands in for a DataLoader worker that never returns a batch."""
    time.sleep(600)


def device() -> torch.device:
    if BACKEND != "nccl":
        return torch.device("cpu")
    local = int(os.environ.get("LOCAL_RANK", 0))
    if os.environ.get("NCCL_HOSTID") and int(os.environ.get("LOCAL_WORLD_SIZE", 1)) > 1:
        os.environ["NCCL_HOSTID"] = f"{os.environ['NCCL_HOSTID']}.{local}"  # one fake host per rank
    dev = torch.device("cuda", local if local < torch.cuda.device_count() else 0)
    torch.cuda.set_device(dev)
    return dev


def main():
    dev = device()
    dist.init_process_group(BACKEND, timeout=datetime.timedelta(seconds=float(os.environ.get("TK_TIMEOUT_S", "120"))))
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1)).to(dev)
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    time.sleep(FIRST_S)  # the first step: compilation, partitioning
    for step in range(1, STEPS + 1):
        took = 1.5 if step % 12 == 0 else random.Random(step).uniform(0.05, 0.6)
        time.sleep(took)  # the same on every rank: the step's compute and data loading
        loss = model(torch.randn(32, 64, device=dev)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        flat = torch.cat([p.grad.flatten() for p in model.parameters()])
        if step == FAULT_STEP and SCENARIO == "deadlock" and RANK == FAULT_RANK:
            fault_starts()
            next_batch_stuck()
        if step == FAULT_STEP and SCENARIO == "crash" and RANK == FAULT_RANK:
            fault_starts()
            raise RuntimeError(f"simulated failure on rank {RANK} before its all_reduce")
        if step == FAULT_STEP and SCENARIO == "mismatch" and RANK == FAULT_RANK:
            fault_starts()
            flat = flat[:-1].contiguous()
        if step >= FAULT_STEP and SCENARIO == "slow" and RANK == FAULT_RANK:
            if step == FAULT_STEP:
                fault_starts()
            time.sleep(SLOW_S)  # a throttled device, a failing link: every step of this rank is slow
        dist.all_reduce(flat)
        opt.step()
        losses = [torch.zeros(1, device=dev) for _ in range(world)]
        dist.all_gather(losses, loss.detach().reshape(1))
        if RANK == 0:
            print({"loss": round(float(torch.cat(losses).mean()), 4), "global_step/max_steps": f"{step}/{STEPS}"}, flush=True)
        if step % EVAL_EVERY == 0:
            if RANK == 0:
                print("***** Running Evaluation *****", flush=True)
            time.sleep(EVAL_S)
            metric = torch.ones(1, device=dev)
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
