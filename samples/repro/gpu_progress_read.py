"""The live detector's progress read on a real NCCL process group (tracekit.hook.collectives_done):
two ranks on one GPU as two fake nodes (NCCL_HOSTID), NET/Socket. Both run 20 all_reduces and read
their progress; then rank 1 stops and rank 0 enqueues one more, which cannot complete: its read
must show one more enqueued than completed, and stay so, which is what the launcher's stall
detector watches. Run by gpu_progress_read.sh; prints one `progress` line per read."""

import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.environ.get("REPO", "."))
from tracekit.hook import collectives_done  # noqa: E402

rank = int(os.environ["RANK"])
dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
x = torch.ones(1 << 20, device="cuda")


def read(what: str) -> None:
    t = time.perf_counter()
    got = collectives_done()
    print(f"progress rank={rank} {what} enqueued,completed={got} read_us={(time.perf_counter() - t) * 1e6:.0f}", flush=True)


read("before any collective")
for _ in range(20):
    dist.all_reduce(x)
torch.cuda.synchronize()
read("after 20 all_reduces")
if rank == 0:
    dist.all_reduce(x)  # rank 1 never joins: enqueued, never completed
    for i in range(3):
        time.sleep(2)
        read(f"stalled {2 * (i + 1)} s")
    os._exit(0)  # the collective never ends; leave without waiting for it
else:
    time.sleep(8)
    read("idle")
    os._exit(0)
