"""An NCCL communicator that never finishes init: rank 1 stops before its first collective (stands
for a rank stuck loading data or in a hanging wandb.init before the first step), so rank 0's first
all_reduce starts NCCL's lazy communicator init (Init START) and waits in the bootstrap for a peer
that never comes. Run two fake nodes on one GPU (samples/repro/gpu_capture.sh, scenario init_stall)."""

import datetime
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=float(os.environ.get("TK_TIMEOUT_S", 30))))
rank = dist.get_rank()
torch.cuda.set_device(0)
print(f"rank {rank} up", flush=True)
if rank == 1:
    time.sleep(float(os.environ.get("TK_SLEEP_S", 600)))
x = torch.ones(1 << 20, device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
print(f"rank {rank} all_reduce done {x[0].item()}", flush=True)
dist.destroy_process_group()
