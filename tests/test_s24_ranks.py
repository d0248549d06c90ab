"""Rank identity (issue 31 item 4), session 24: the writer's own rank in sentences no prefix decodes
(parsers/rank_words.py ``MID_TAGS``, ``WRITER_WORDS``, ``HOSTLESS``), the one process of a world
communicator that names no rank and a CUDA device, neither of them read as a rank (identity): real
dev excerpts, each sentence in its runtime's own format, and the numbers that are no rank of the writer's."""

from __future__ import annotations

import polars as pl
import pytest

from tests.conftest import ROOT
from tests.factory import file_ranks, text_ranks
from tracekit.ingest import ingest
from tracekit.parsers import rank_words, text

WILD = ROOT / "samples" / "wild"


@pytest.mark.parametrize("excerpt, want", [
    # Open MPI's `[1,1040]<stdout>:` written into the middle of rank 3016's line (two writes interleaved)
    ("dv18-021-ucx-mtt-rc-create-qp-einval.txt", [1040, 1664, 2704, 3016, 3120]),
    # two processes of one host on devices [0] and [1], no rank named: a device is no rank (its label's 0)
    ("dev-016-torch27-nccl2262-alloc-2ranks.txt", []),
])
def test_dev_excerpts_count_the_ranks_their_lines_show(excerpt, want):
    assert file_ranks(WILD / excerpt) == want


def _words(tmp_path, body: str):
    p = tmp_path / "rank.log"
    p.write_text(body)
    return rank_words.parse(text.lines_frame(str(p), body)).tables.get("ranks")


def test_a_launcher_tag_in_the_middle_of_a_line_names_its_process(tmp_path):
    body = ("Mon Jul  2 19:35:38 2018[1,3016]<stderr>:Caught signal 11"
            "Mon Jul  2 19:35:38 2018[1,1040]<stdout>:[1530549338.249486] ucx\n"
            "Traceback (most recent call last):[rank5]:[E ProcessGroupNCCL.cpp:1] watchdog\n")
    r = _words(tmp_path, body)
    assert set(r["rank"].to_list()) == {1040, 5}
    assert text_ranks(tmp_path, body) == [5, 1040, 3016]


@pytest.mark.parametrize("line, rank", [
    ("2024-01-01 12:00:00 INFO Rank 3: loss 1.23", 3),  # a program's print under a logger's header
    ("[2024-01-01 12:00:00] WARNING rank 2: slow step", 2),
    ("I0101 12:00:00.000000 123 train.py:12] Rank 2: starting epoch 1", 2),  # absl/glog's header
    ("rank=1 world_size=8 local_rank=1 master_addr=10.0.0.1", 1),  # a process's own keys
    ("{'rank': 6, 'world_size': 8, 'local_rank': 6}", 6),  # a Python dict of them
    ("RANK=2 WORLD_SIZE=4 LOCAL_RANK=2", 2),  # an environment dump
    ("RANK: 3", 3),  # a script's print of its RANK alone
    ("Rank 0 | step 10 | loss 1.0", 0),  # a script's own tag
    ("2024-01-01 12:00:00,123 - INFO - [rank 3] loss=0.5", 3),  # `[rank N]` after a logger's header
    # JAX's initialize call, as a traceback's source line shows it
    ("jax.distributed.initialize(coordinator_address='10.0.0.1:1234', num_processes=4, process_id=2)", 2),
    # NCCL's communicator line whose `host:pid:tid` head a paste lost (`[0] ` taken off as a tag)
    ("[0] NCCL INFO comm 0x5 rank 5 nranks 8 cudaDev 0 busId 1000 - Init COMPLETE", 5),
])
def test_the_writer_names_its_own_rank(tmp_path, line, rank):
    assert text_ranks(tmp_path, line + "\n") == [rank]


@pytest.mark.parametrize("line", [
    "def run(rank=0, world_size=1):",  # a function's defaults
    "python train.py --rank=0 --world_size=2",  # a command line's flags
    "node_rank=1 world_size=16",  # a node's rank
    "tp_rank=1, world_size=8",  # a group's rank
    "waiting for rank=3 to connect",  # a lone rank key: a peer's, maybe
    "Traceback: see rank 3: it failed",  # prose: no header, no own sentence
    "LOCAL_RANK: 3",  # a local rank alone: no global one
    # a sub-group's rank in c10d's head (`[PG ID 1 ... Rank 1]`: group 1's rank 1)
    "[E1120 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [PG ID 1 PG GUID 1 Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600001 "
    "milliseconds before timing out.",
])
def test_numbers_that_are_not_the_writers_rank_are_not_counted(tmp_path, line):
    assert text_ranks(tmp_path, line + "\n") == []


def test_under_a_launcher_prefix_the_prefix_names_the_writer(tmp_path):
    # FlagScale's straggler report under `[default0]:`: rank 0's word about the others, not their lines
    body = "".join(f"[default0]:2024-01-01 12:00:00 INFO Rank {r}: 9.9ms\n" for r in range(4))
    assert _words(tmp_path, body) is None or _words(tmp_path, body).filter(
        ~_words(tmp_path, body)["rank"].is_null()).height == 0


def _nccl(host: str, pid: int, dev: int) -> str:
    return f"{host}:{pid}:{pid} [{dev}] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"


@pytest.mark.parametrize("body", [
    _nccl("node1", 100, 0) + _nccl("node1", 101, 1) + _nccl("node1", 102, 2),  # one host, devices 0..2
    _nccl("node1", 100, 0) + _nccl("node2", 101, 1),  # two hosts
])
def test_a_device_index_is_never_a_rank(tmp_path, body):
    assert text_ranks(tmp_path, body) == []


def test_a_communicators_own_rank_wins_over_the_device(tmp_path):
    body = (_nccl("node1", 100, 0) + _nccl("node1", 101, 1)
            + "node1:100:100 [0] NCCL INFO comm 0x1 rank 4 nranks 8 cudaDev 0 busId 1000 - Init COMPLETE\n"
            + "node1:101:101 [1] NCCL INFO comm 0x2 rank 5 nranks 8 cudaDev 1 busId 2000 - Init COMPLETE\n")
    assert text_ranks(tmp_path, body) == [4, 5]


def test_hostless_nccl_lines_count_only_the_largest_communicators_ranks(tmp_path):
    body = ("[0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
            "[1] NCCL INFO comm 0x6 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE\n"
            "[1] NCCL INFO comm 0x7 rank 0 nranks 1 cudaDev 1 busId 2000 - Init COMPLETE\n"
            "[3] NCCL INFO comm 0x8 rank 3 nranks 4 cudaDev 3 busId 4000 - Init COMPLETE\n")
    assert text_ranks(tmp_path, body) == [3]


def test_the_one_unnamed_process_of_a_world_is_not_given_the_rank_left(tmp_path):
    # rank 1's `comm ... rank 1 nranks 2` beside a process that names none: the labels split on it
    # (identity's docstring), so only the named rank counts
    body = ("node1:101:101 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE\n"
            + _nccl("node1", 100, 0))
    assert text_ranks(tmp_path, body) == [1]


def test_ray_trains_worker_list_names_each_workers_rank_and_process(tmp_path):
    # Ray Train's driver lists its workers (backend_executor.py); worker 45450's own line then is rank 1's
    body = ("(TorchTrainer pid=45197, ip=10.76.0.71) Started distributed worker processes:\n"
            "(TorchTrainer pid=45197, ip=10.76.0.71) - (node_id=4c934ab2f646, ip=10.76.0.71, pid=45455) "
            "world_rank=0, local_rank=0, node_rank=0\n"
            "(TorchTrainer pid=45197, ip=10.76.0.71) - (node_id=4c934ab2f646, ip=10.76.0.71, pid=45450) "
            "world_rank=1, local_rank=1, node_rank=0\n"
            "(RayTrainWorker pid=45450, ip=10.76.0.71) torch.OutOfMemoryError: CUDA out of memory.\n")
    p = tmp_path / "ray.log"
    p.write_text(body)
    r = ingest([p]).ranks
    assert sorted(r["rank"].drop_nulls().to_list()) == [0, 1]
    assert r.filter((pl.col("pid") == 45450) & (pl.col("host") == "10.76.0.71"))["rank"].to_list() == [1]
