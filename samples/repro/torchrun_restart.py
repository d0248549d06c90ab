"""Two ranks over gloo; rank 1 fails on the first attempt, torchrun restarts the group once."""
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
print(f"| distributed init (rank {rank}): env://", flush=True)
t = torch.ones(4)
for step in range(3):
    dist.all_reduce(t)
    print(f"step {step} restart {restart} sum {t[0].item():.0f}", flush=True)
if restart == 0 and rank == 1:
    raise RuntimeError("rank 1 fails on the first attempt (on purpose)")
dist.barrier()
dist.destroy_process_group()

# samples/torchrun_restart_1x2 was made with (torch 2.13 CPU, gloo):
#   LOGLEVEL=INFO torchrun --nnodes=1 --nproc-per-node=2 --max-restarts 1 --rdzv-backend=c10d \
#     --rdzv-endpoint=localhost:29535 --rdzv-id job42 --log-dir logs -t 3 torchrun_restart.py > launcher.log 2>&1
