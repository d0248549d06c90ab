"""A small data-parallel training loop on gloo, with one fault per scenario (TK_SCENARIO).

healthy   every rank runs every step
deadlock  rank 3 stops before the step-3 all_reduce, stuck in a data-loader wait
mismatch  rank 1 all_reduces a gradient of another size at step 3
crash     rank 3 raises at step 3, before its all_reduce
straggler rank 2 is 50 ms late to every step's all_reduce
timing    healthy, no hook, no profiler: for benchmarks/run_overhead.py

Each rank writes rank<R>.log, its Flight Recorder buffer and a stack dump when progress stops
(tracekit.hook), and a Kineto trace of steps 1-2 in the healthy scenario.
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

from tracekit import hook

OUT = os.environ.get("TK_OUT") or os.environ["TRACEKIT_RUN_DIR"]
SCENARIO = os.environ.get("TK_SCENARIO", "healthy")
RANK = int(os.environ["RANK"])
STEPS = int(os.environ.get("TK_STEPS", 5))

UNDER_RUN = bool(os.environ.get("TRACEKIT_RUN_DIR"))  # tracekit run collects the logs and dumps itself
if not UNDER_RUN:
    log = open(os.path.join(OUT, f"rank{RANK}.log"), "w", buffering=1)
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log


def next_batch_stuck():
    """Stands in for a DataLoader worker that never returns a batch."""
    time.sleep(600)


def main():
    if not UNDER_RUN and SCENARIO != "timing":
        hook.install(OUT, stall_s=float(os.environ.get("TK_STALL_S", "4")), exit_after_dump=1.0)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("TK_TIMEOUT_S", "60"))))
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    prof = None
    if SCENARIO == "healthy":
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                      schedule=torch.profiler.schedule(wait=1, warmup=0, active=2, repeat=1))
        prof.start()
    t_loop = time.perf_counter()
    for step in range(1, STEPS + 1):
        x = torch.randn(32, 64)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        flat = torch.cat([p.grad.flatten() for p in model.parameters()])
        if step == 3 and SCENARIO == "deadlock" and RANK == 3:
            next_batch_stuck()
        if step == 3 and SCENARIO == "crash" and RANK == 3:
            raise RuntimeError("simulated failure on rank 3 before its step-3 all_reduce")
        if SCENARIO == "straggler" and RANK == 2:
            time.sleep(0.05)  # a slower GPU, a noisy neighbour: late to every all_reduce
        if step == 3 and SCENARIO == "mismatch" and RANK == 1:
            flat = flat[:-1].contiguous()
        dist.all_reduce(flat)
        flat /= world
        torch.nn.utils.vector_to_parameters(flat, [p.grad for p in model.parameters()]) if False else None
        opt.step()
        losses = [torch.zeros(1) for _ in range(world)]
        dist.all_gather(losses, loss.detach().reshape(1))
        if RANK == 0:
            print({"loss": round(float(torch.cat(losses).mean()), 4), "global_step/max_steps": f"{step}/{STEPS}"})
        if prof:
            prof.step()
        hook.progress()
    if RANK == 0 and SCENARIO == "timing":
        print(f"[timing] steps={STEPS} seconds={time.perf_counter() - t_loop:.4f}", flush=True)
    if prof:
        prof.stop()
        prof.export_chrome_trace(os.path.join(OUT, f"kineto_rank{RANK}.json"))
    dist.barrier()
    if not UNDER_RUN and SCENARIO != "timing":
        hook.dump_now(OUT)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
