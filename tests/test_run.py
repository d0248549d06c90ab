"""`tracekit run` on real gloo runs: per-rank logs, launch record, stall dumps, and the verdict."""

import os
import subprocess
import sys

import polars as pl

from tests.conftest import ROOT
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide


def tracekit_run(out, scenario, *flags, timeout_s="20"):
    env = dict(os.environ, TK_SCENARIO=scenario, TK_TIMEOUT_S=timeout_s, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    env.pop("TK_OUT", None)
    cmd = [sys.executable, "-m", "tracekit.cli", "run", "--out", str(out), "--quiet", *flags, "--",
           sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=4", str(ROOT / "samples/repro/train.py")]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)


def test_run_healthy_collects_per_rank_logs_and_settings(tmp_path):
    r = tracekit_run(tmp_path, "healthy")
    assert r.returncode == 0, r.stderr[-2000:]
    names = sorted(p.name for p in tmp_path.iterdir())
    assert sum(n.startswith("rank") and n.endswith(".log") for n in names) == 4
    store = ingest([tmp_path])
    assert decide(store).kind == Kind.HEALTHY
    assert sorted(store.ranks["rank"].to_list()) == [0, 1, 2, 3]
    settings = store.events.filter(pl.col("kind") == "setting")["message"].to_list()
    assert "NCCL_DEBUG=INFO" in settings and "TORCH_FR_BUFFER_SIZE=2000" in settings
    assert store.events.filter(pl.col("kind") == "package")["message"].str.starts_with("torch==").any()
    logs = store.files.filter(pl.col("file").str.contains(r"/rank\d\."))
    assert logs.height == 4 and (logs["unknown"] <= 1).all(), logs  # the profiler warning's source line


def test_run_deadlock_dumps_stacks_twice_and_names_the_rank(tmp_path):
    r = tracekit_run(tmp_path, "deadlock", "--stall", "3", "--repeat", "3")
    assert r.returncode != 0  # the gloo timeout ends the hung job
    names = [p.name for p in tmp_path.iterdir()]
    assert sum(n.startswith("pyspy.") or n.startswith("stacks_") for n in names) >= 8  # 4 ranks x 2 rounds
    assert sum(n.startswith("fr_rank") for n in names) >= 8
    v = decide(ingest([tmp_path]))
    assert v.kind == Kind.DEADLOCK and v.ranks == [3], v.summary
    assert "next_batch_stuck" in v.summary
    notes = ingest([tmp_path]).events.filter(pl.col("kind") == "run_note")["message"].to_list()
    assert any(n.startswith("stall dump 2") for n in notes)
