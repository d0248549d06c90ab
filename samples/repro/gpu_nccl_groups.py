"""Issue 33's hangs across process groups, on NCCL: 4 ranks, each its own fake node (NCCL_HOSTID per launch).

Every step (TK_STEPS, 40): a compute pause (0.2-0.5 s), an all_reduce of the rank's own small group ({0, 1} or
{2, 3}, made with dist.new_group at the start), then an all_reduce of the world (default_pg).
At step TK_FAULT_STEP (30: tracekit run has learned the rhythm by then) the case (TK_CASE) happens:

subgroup  rank 1 never joins its small group's all_reduce (it stops in a data-loader wait, the
          time.sleep in next_batch_stuck): rank 0 waits in the group [0, 1] all_reduce; ranks 2-3
          finish theirs and wait for ranks 0-1 in the next world all_reduce. The rank to name: 1.
newgroup  a group [1, 2, 3] is made mid-run (dist.new_group, every rank calls it); its first
          collective (an all_reduce, where NCCL builds its communicator) is never made by rank 3
          (stuck as above): ranks 1-2 wait in the new communicator's init (comm ranks 0-1 of 3), rank 0
          goes on and waits in the world all_reduce. The rank to name: 3.
alltoall  an all_to_all_single of the world where rank 2 sends rank 0 twice the elements its
          input_split_sizes promise the others (16 floats, 64 bytes, where rank 0 expects 8, 32 bytes):
          over NET/Socket NCCL warns `message truncated : receiving 64 bytes instead of 32`. A size
          mismatch between ranks (rank 2), not the network.

The faulting rank writes the wall-clock time its fault starts to TK_FAULT_FILE (when set). The
process group timeout is TK_TIMEOUT_S (45 s): the NCCL watchdog then ends the waiting ranks and
dumps their Flight Recorder. Run by samples/repro/gpu_nccl_groups.sh, under `tracekit run`.
"""

import datetime
import os
import random
import time

import torch
import torch.distributed as dist

CASE = os.environ.get("TK_CASE", "subgroup")
STEPS = int(os.environ.get("TK_STEPS", 40))
FAULT_STEP = int(os.environ.get("TK_FAULT_STEP", 30))
RANK = int(os.environ["RANK"])


def fault_starts() -> None:
    path = os.environ.get("TK_FAULT_FILE")
    if path:
        with open(path, "a") as f:
            f.write(f"{time.time():.3f} rank {RANK} {CASE}\n")


def next_batch_stuck():
    """Stands in for a DataLoader worker that never returns a batch."""
    time.sleep(600)


def main():
    local = int(os.environ.get("LOCAL_RANK", 0))
    dev = torch.device("cuda", local if local < torch.cuda.device_count() else 0)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=float(os.environ.get("TK_TIMEOUT_S", "45"))))
    world = dist.get_world_size()
    assert world == 4, "four ranks"
    pairs = [dist.new_group([0, 1]), dist.new_group([2, 3])]  # every rank makes every group, in one order
    mine = pairs[RANK // 2]
    grad = torch.ones(1024, device=dev)
    late = None
    for step in range(1, STEPS + 1):
        time.sleep(random.Random(step).uniform(0.2, 0.5))  # the step's compute, the same on every rank
        if CASE == "subgroup" and step == FAULT_STEP and RANK == 1:
            fault_starts()
            next_batch_stuck()
        dist.all_reduce(grad, group=mine)  # the tensor-parallel-like small group
        if CASE == "newgroup" and step == FAULT_STEP:
            late = dist.new_group([1, 2, 3])  # made mid-run: its NCCL communicator comes at its first collective
            if RANK == 3:
                fault_starts()
                next_batch_stuck()
            if RANK in (1, 2):
                dist.all_reduce(torch.ones(8, device=dev), group=late)
        if CASE == "alltoall" and step >= FAULT_STEP - 2:
            n = 8  # floats each rank sends each rank
            splits = [n] * world
            if step == FAULT_STEP and RANK == 2:
                fault_starts()
                splits[0] = 2 * n  # rank 0 expects n from rank 2
            inp = torch.full((sum(splits),), float(RANK), device=dev)
            out = torch.empty(n * world, device=dev)
            dist.all_to_all_single(out, inp, output_split_sizes=[n] * world, input_split_sizes=splits)
        dist.all_reduce(grad)  # the world (default_pg)
        grad.div_(world)
        torch.cuda.synchronize()
        if RANK == 0:
            print({"step": step, "case": CASE, "global_step/max_steps": f"{step}/{STEPS}"}, flush=True)
    dist.barrier()
    dist.destroy_process_group()
    del late


if __name__ == "__main__":
    main()
