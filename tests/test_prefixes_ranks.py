"""Rank identity through ingest.resolve_ranks (issue 31): a launcher's own lines take no rank from
the file they sit in; a local rank is the global one only on a job of one node; the launcher's
global prefix wins over a group-local rank inside the message; wrapper prefixes of real excerpts
(samples/wild, dev split) give the ranks their labels name."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tracekit.coverage import coverage
from tracekit.ingest import ingest

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"
FAILED = ("E1212 03:27:33.598000 4609 torch/distributed/elastic/multiprocessing/api.py:863] "
          "failed (exitcode: -11) local_rank: 2 (pid: 4677) of binary: /usr/bin/python")
NCCL_INIT = ("{h}:{pid}:{pid} [{d}] NCCL INFO comm 0xa rank {r} nranks 16 cudaDev {d} busId 1000 commId 0xabc"
             " - Init COMPLETE")


def _store(tmp_path, log: str):
    path = tmp_path / "log.txt"
    path.write_text(log)
    return ingest([path])


def test_a_local_rank_is_global_on_one_host(tmp_path):
    log = NCCL_INIT.format(h="gpu1", pid=4675, d=0, r=0) + "\n" + FAILED + "\n"
    s = _store(tmp_path, log)
    assert sorted(s.ranks["rank"].drop_nulls().to_list()) == [0, 2]
    assert s.events.filter(pl.col("kind") == "child_failed")["rank"].to_list() == [2]


def test_a_local_rank_is_read_as_global_where_no_line_shows_a_second_node(tmp_path):
    # torchrun's agent line alone: one process seen, numbered by its local rank 2, and said so
    s = _store(tmp_path, FAILED + "\n")
    assert s.ranks["rank"].drop_nulls().to_list() == [2]
    assert s.ranks["local_rank"].to_list() == [2]
    assert "rank 2 numbered by local rank" in coverage(s).describe()


def test_a_local_rank_is_not_global_on_two_hosts(tmp_path):
    log = "\n".join([NCCL_INIT.format(h="gpu1", pid=4675, d=0, r=0),
                     NCCL_INIT.format(h="gpu2", pid=5675, d=0, r=8), FAILED]) + "\n"
    s = _store(tmp_path, log)
    assert sorted(s.ranks["rank"].drop_nulls().to_list()) == [0, 8]


def test_a_launchers_own_line_takes_no_rank_from_the_file(tmp_path):
    log = ("[rank0]:[E1202 12:00:00.123 4242 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
           "Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
           "[default] Worker group FAILED. 1/1 attempts left; will restart worker group\n")
    s = _store(tmp_path, log)
    assert s.events.filter(pl.col("kind") == "watchdog_timeout")["rank"].to_list() == [0]
    assert s.events.filter(pl.col("kind") == "elastic_failed")["rank"].to_list() == [None]


def test_the_launchers_global_prefix_wins_over_a_group_local_rank(tmp_path):
    log = ("[rank13]:[E1202 12:00:00.123 4242 ProcessGroupNCCL.cpp:607] [PG ID 2 PG GUID 3 Rank 1] Watchdog "
           "caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, "
           "Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n")
    s = _store(tmp_path, log)
    assert s.ranks["rank"].drop_nulls().unique().to_list() == [13]
    assert s.events.filter(pl.col("kind") == "watchdog_timeout")["rank"].to_list() == [13]


@pytest.mark.parametrize("name, ranks, unknown", [
    ("dv2-028-nccl2277-socket-ifname-eth2-missing-family.txt", [0, 3], 0),  # `[trainer3]:`, `[trainer0|0]:`
    ("dv2-046-nemo-run-rank1-nccluniqueid-store-timeout.txt", [1], 0),  # `B-nemo-ft3/0 [default1]:[rank1]:`
    # torchx on Ray: `(CommandActor pid=369, ip=...) [0]:` (the 3 lines before it are Ray's job client's)
    ("dv2-063-torchx-ray-head-name-unresolved-client-socket.txt", [0], 3),
    # pytest's `E   `: mp.spawn's process index is a local rank, of a job no line shows a second node of
    ("dv2-004-colossal-pytest-verify-model-ncclsystemerror.txt", [3], 1),
])
def test_wrapped_excerpts_are_read_whole(name, ranks, unknown):
    s = ingest([WILD / name])
    assert sorted(s.ranks["rank"].drop_nulls().unique().to_list()) == ranks
    assert s.files["unknown"].sum() <= unknown


def test_ray_trains_process_group_line_names_its_workers_rank_under_the_actors_prefix(tmp_path):
    # ray/train/torch/config.py logs each worker's rank; Ray's prefix names the worker's pid and node
    log = "".join(f"(BaseWorkerMixin pid={pid}, ip=10.0.100.{ip}) 2022-03-11 01:47:25,905\tINFO torch.py:66"
                  f" -- Setting up process group for: env:// [rank={r}, world_size=3]\n"
                  for r, pid, ip in [(0, 20102, 15), (1, 25342, 14), (2, 25343, 14)])
    s = _store(tmp_path, log)
    assert s.ranks.sort("rank").select("rank", "host", "pid", "world_size").rows() == [
        (0, "10.0.100.15", 20102, 3), (1, "10.0.100.14", 25342, 3), (2, "10.0.100.14", 25343, 3)]


@pytest.mark.parametrize("line", [
    "RuntimeError: Processes 1 exited with error code 10",  # common_distributed.py
    "RuntimeError: Process 1 terminated or timed out after 300.0 seconds",
    "AssertionError: True is not false : Timeout waiting for rank 1 to terminate",  # test_distributed.py
])
def test_pytorchs_test_harness_names_its_processes_by_rank(tmp_path, line):
    assert _store(tmp_path, line + "\n").ranks["rank"].to_list() == [1]
