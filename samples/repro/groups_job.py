"""Four gloo ranks in several process groups at once, and a hang in one group that stalls the others.

Run under ``tracekit run`` (issue 33), one torchrun of 4 ranks:
    tracekit run --out OUT --stall 4 -- torchrun --nproc_per_node=4 samples/repro/groups_job.py

TK_SCENARIO:
small_group  tensor groups [0, 1] and [2, 3] beside the world. At step 3 rank 1 stays in
             ``load_shard`` and never joins its tensor group's all_reduce: rank 0 waits there, and
             ranks 2-3, done with their own tensor group, wait in the world all_reduce after it.
late_group   at step 3 every rank but 3 makes the group [1, 2, 3] (``new_group``) for a first
             all_reduce in it; rank 3 stays in ``load_shard`` and never makes it: ranks 1-2 wait in the
             group's creation, and rank 0, not a member, waits in the world all_reduce after it.
healthy      every rank runs every step.

The groups carry descriptions (``group_desc``) as Megatron's do, so the dumps name them.
"""

import datetime
import os
import time

import torch
import torch.distributed as dist

SCENARIO = os.environ.get("TK_SCENARIO", "healthy")
RANK = int(os.environ["RANK"])
STEPS = int(os.environ.get("TK_STEPS", 4))
TIMEOUT_S = float(os.environ.get("TK_TIMEOUT_S", "40"))


def load_shard():
    """Stands in for a rank held outside any collective (a data loader, a checkpoint read)."""
    time.sleep(TIMEOUT_S + 30)


def main():
    timeout = datetime.timedelta(seconds=TIMEOUT_S)
    dist.init_process_group("gloo", timeout=timeout)
    world = dist.get_world_size()
    tensor_groups = [dist.new_group(r, timeout=timeout, group_desc=f"TENSOR_MODEL_PARALLEL_GROUP_{i}")
                     for i, r in enumerate(([0, 1], [2, 3]))]
    tp = tensor_groups[RANK // 2]
    model = torch.nn.Linear(16, 16)
    for step in range(1, STEPS + 1):
        loss = model(torch.randn(8, 16)).pow(2).mean()
        model.zero_grad()
        loss.backward()
        grad = model.weight.grad.flatten()
        if step == 3 and SCENARIO == "small_group" and RANK == 1:
            load_shard()
        if step == 3 and SCENARIO == "late_group":
            if RANK == 3:
                load_shard()
            late = dist.new_group([1, 2, 3], timeout=timeout, group_desc="EXPERT_PARALLEL_GROUP")
            if RANK in (1, 2, 3):
                dist.all_reduce(grad.clone(), group=late)
        dist.all_reduce(grad, group=tp)  # the tensor group's partial sums
        dist.all_reduce(grad)  # the data-parallel sum over the world
        losses = [torch.zeros(1) for _ in range(world)]
        dist.all_gather(losses, loss.detach().reshape(1))
        if RANK == 0:
            mean = round(float(torch.cat(losses).mean()), 4)
            print({"loss": mean, "global_step/max_steps": f"{step}/{STEPS}"}, flush=True)
        time.sleep(0.3)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
