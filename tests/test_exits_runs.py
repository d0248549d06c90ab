"""Real torch.distributed runs (gloo on CPU) where a rank ends: its launcher's own words, ingested,
decide the verdict. torchrun with a rank that SIGKILLs itself; torch.multiprocessing.spawn with a rank
that raises."""

import os
import socket
import subprocess
import sys

import polars as pl

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WORKER = """
import os, signal, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(4)
dist.all_reduce(t)
print(f"rank {rank} reduced {t.sum().item()}", flush=True)
if rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
dist.all_reduce(t)  # rank 0 waits here for a rank that is gone
"""

SPAWN = """
import os, sys, time, torch, torch.distributed as dist, torch.multiprocessing as mp

def work(i, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=i, world_size=2)
    t = torch.ones(4)
    dist.all_reduce(t)
    if i == 1:
        raise ValueError("batch 7 has 3 samples, expected 4")
    time.sleep(5)  # rank 0 computes: spawn sees rank 1's exit first, not rank 0's knock-on gloo error
    dist.all_reduce(t)

if __name__ == "__main__":
    mp.spawn(work, args=(int(sys.argv[1]),), nprocs=2)
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(tmp_path, argv: list[str]) -> tuple[int, object]:
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=240, cwd=tmp_path)
    log = tmp_path / "job.log"
    log.write_text(done.stdout + done.stderr)
    return done.returncode, ingest([log])


def test_torchrun_rank_killed_by_sigkill(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    code, store = _run(tmp_path, [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2",
                                  "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{_port()}", str(script)])
    assert code != 0
    exits = store.events.filter(pl.col("kind").cast(pl.Utf8).is_in(["rank_exit", "child_failed"]))
    assert -9 in exits["exit_code"].to_list()
    v = decide(store)
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [1], v.summary
    assert "SIGKILL" in v.summary and "OOM killer" in v.summary and v.fix.startswith("use less host memory")
    # the same summary cut after its Root Cause's rank line (an excerpt that ends there): still rank 1 first
    text = (tmp_path / "job.log").read_text().splitlines()
    root = next(i for i, ln in enumerate(text) if ln.strip().startswith("Root Cause (first observed failure)"))
    cut = next(i for i in range(root, len(text)) if text[i].strip().startswith("rank "))
    (tmp_path / "cut.log").write_text("\n".join(text[:cut + 1]) + "\n")
    v = decide(ingest([tmp_path / "cut.log"]))
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [1] and "failed first (torchrun's root cause" in v.summary


def test_spawn_rank_raises(tmp_path):
    script = tmp_path / "spawn.py"
    script.write_text(SPAWN)
    code, store = _run(tmp_path, [sys.executable, str(script), str(_port())])
    assert code != 0
    spawn = (pl.col("kind") == "child_failed") & (pl.col("where") == "torch.multiprocessing.spawn")
    ended = store.events.filter(spawn)
    assert ended.height == 1
    assert ended["message"][0].startswith("torch.multiprocessing.spawn: process 1 (local rank 1) raised "
                                          "ValueError: batch 7 has 3 samples")
    v = decide(store)
    assert v.kind == Kind.CRASHED_RANK, v.summary
    assert "ValueError: batch 7 has 3 samples, expected 4" in v.summary, v.summary
