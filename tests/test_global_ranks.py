"""Global ranks beside group-local ones (issue 33): NCCL's communicators, c10d's `[PG ID x ... Rank N]`."""

from __future__ import annotations

import polars as pl

from tests.conftest import SAMPLES
from tracekit import schema
from tracekit.ingest import ingest
from tracekit.parsers import nccl, text, torch_log


def _parse(parser, path, body: str):
    path.write_text(body)
    return parser.parse(text.lines_frame(str(path), body)).tables


def test_split_communicators_of_a_real_run_read_color_key_and_one_key_across_ranks():
    """Real NCCL 2.28.9 (samples/gpu_2x1_healthy): `ncclCommSplit ... parent 0x.. splitCount 1 color C key K-
    Init START` puts splitCount before color and drops commId; both processes' rows of the split share
    one comm_key, made of the parent's commId, the split count and the color."""
    comms = ingest([SAMPLES / "gpu_2x1_healthy"]).comms
    split = comms.filter(pl.col("api") == "ncclCommSplit")
    assert set(split["color"]) == {2130503744} and set(split["split_count"]) == {1}
    assert sorted(split.filter(pl.col("state") == "init_start")["key"]) == [0, 1]
    world = comms.filter(pl.col("api") == "ncclCommInitRankConfig")["comm_id"][0]
    assert set(split["comm_key"]) == {f"{world}/split 1 color 2130503744"}
    # every row of a communicator (its topology line too) carries the key and the process's global rank
    assert comms["comm_key"].null_count() == 0
    assert dict(comms.select("pid", "global_rank").unique().iter_rows()) == {1037: 0, 1038: 1}


# NCCL 2.28.9's init line under torchrun's prefix: a group made mid-run whose communicator only ranks 1-2
# started (NCCL inits lazily: no world communicator was ever made in these processes)
LATE_GROUP = """\
[rank1]:vm:2001:2001 [1] NCCL INFO ncclCommInitRankConfig comm 0x3a1c5e0 rank 0 nranks 3 cudaDev 1 nvmlDev 1 \
busId 70 commId 0x5c2f9e1b7a3d4c11 - Init START
[rank2]:vm:2002:2002 [2] NCCL INFO ncclCommInitRankConfig comm 0x2b7d9a0 rank 1 nranks 3 cudaDev 2 nvmlDev 2 \
busId 80 commId 0x5c2f9e1b7a3d4c11 - Init START
"""


def test_a_launchers_prefix_names_the_global_rank_not_the_rank_in_the_communicator(tmp_path):
    tables = _parse(nccl, tmp_path / "torchrun.log", LATE_GROUP)
    comms = tables["comms"]
    assert comms.select("rank", "global_rank", "nranks", "comm_key").rows() == [
        (0, 1, 3, "0x5c2f9e1b7a3d4c11"), (1, 2, 3, "0x5c2f9e1b7a3d4c11")]
    assert sorted(tables["ranks"]["rank"]) == [1, 2]
    assert set(schema.COMMS) <= set(schema.conform(comms, schema.COMMS).columns)


def test_without_a_prefix_the_rank_comes_from_the_largest_communicator(tmp_path):
    """The same lines as NCCL_DEBUG_FILE writes them (no launcher prefix): the ranks inside the only
    communicator are all NCCL says; they stay the process's rank, as before."""
    body = "\n".join(line.split("]:", 1)[1] for line in LATE_GROUP.splitlines()) + "\n"
    comms = _parse(nccl, tmp_path / "nccl.log", body)["comms"]
    assert comms.select("rank", "global_rank").rows() == [(0, 0), (1, 1)]


C10D = """\
[tracekit] rank=3 local_rank=1 world_size=4 node_rank=1 host=vm pid=4242 torch=2.13.0 deepspeed=0.19.8
I1204 14:01:02.000000 4242 ProcessGroupNCCL.cpp:2183] \
[PG ID 2 PG GUID 3(TENSOR_MODEL_PARALLEL_GROUP) Rank 1] \
ProcessGroupNCCL created ncclComm_ 0x55b616e29000 on CUDA device: 1
[E1204 14:11:02.408271257 ProcessGroupNCCL.cpp:632] \
[PG ID 2 PG GUID 3(TENSOR_MODEL_PARALLEL_GROUP) Rank 1] \
Watchdog caught collective operation timeout: \
WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=256, NumelOut=256, Timeout(ms)=600000) \
ran for 600012 milliseconds before timing out.
"""


def test_pg_tag_keeps_the_rank_in_the_group_beside_the_global_one(tmp_path):
    """A per-rank log: the tag's `Rank 1` is the rank in group 2 (GUID 3); the file's header says it is
    global rank 3. c10d's `created ncclComm_` line ties the group to its NCCL communicator."""
    ev = _parse(torch_log, tmp_path / "rank3.log", C10D)["events"].sort("line")
    rows = ev.select("kind", "rank", "pg", "pg_name", "pg_desc", "pg_rank", "comm", "seq").rows()
    assert rows[0] == ("pg_comm", 3, "2", "3", "TENSOR_MODEL_PARALLEL_GROUP", 1, "0x55b616e29000", None)
    assert ("watchdog_timeout", 3, "2", "3", "TENSOR_MODEL_PARALLEL_GROUP", 1, None, 12) in rows


def test_pg_tag_beside_a_launchers_prefix(tmp_path):
    body = "".join(f"[rank{r}]:" + line + "\n" for r in (3, 2) for line in C10D.splitlines()[1:2])
    ev = _parse(torch_log, tmp_path / "torchrun.log", body)["events"].sort("line")
    assert ev.select("rank", "pg_rank", "pg_desc").rows() == [
        (3, 1, "TENSOR_MODEL_PARALLEL_GROUP"), (2, 1, "TENSOR_MODEL_PARALLEL_GROUP")]


def test_a_shared_log_of_several_ranks_lends_no_rank_to_an_unprefixed_group_line(tmp_path):
    """Two ranks' default-group lines in one unprefixed file: a line of group 2 could be either's."""
    timeout = ("Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, "
               "Timeout(ms)=600000) ran for 600010 milliseconds before timing out.")
    body = "".join(f"[PG ID 0 PG GUID 0(default_pg) Rank {r}] {timeout}\n" for r in (0, 1))
    body += C10D.splitlines()[1] + "\n"
    ev = _parse(torch_log, tmp_path / "stdout.log", body)["events"].sort("line")
    assert ev.select("rank", "pg_rank").rows() == [(0, 0), (1, 1), (None, 1)]


def _split_process(pid: int, rank: int, world_comm: str, split_comm: str, opcount: str) -> str:
    """One process of NCCL 2.28.9 (the shapes of samples/gpu_2x1_healthy): the world's init, a split,
    and an all_reduce on the split."""
    head = f"vm:{pid}:{pid} [0] NCCL INFO"
    return (f"{head} ncclCommInitRankConfig comm {world_comm} rank {rank} nranks 2 cudaDev 0 "
            f"nvmlDev 0 busId 60 commId 0x9e176b0b68c3a9c8 - Init COMPLETE\n"
            f"{head} ncclCommSplit comm {split_comm} rank {rank} nranks 2 cudaDev 0 nvmlDev 0 "
            f"busId 60 parent {world_comm} splitCount 1 color 2130503744 key {rank} - Init COMPLETE\n"
            f"{head} AllReduce: opCount {opcount} sendbuff 0x7fe803800600 recvbuff "
            f"0x7fe803800600 count 1 datatype 7 op 0 root 0 comm {split_comm} [nranks=2] stream (nil)\n")


def test_a_splits_collectives_share_one_process_group_across_ranks(tmp_path):
    """A split communicator has no commId (NCCL 2.23+) and another pointer in every process: its COLL
    lines are one process group by the split's key, so the ranks' sequence numbers line up."""
    body = _split_process(1037, 0, "0x1ab09630", "0x27c115a0", "3") + _split_process(1038, 1, "0x12196970",
                                                                                     "0x1f29eb60", "3")
    coll = _parse(nccl, tmp_path / "nccl.log", body)["collectives"]
    split = "0x9e176b0b68c3a9c8/split 1 color 2130503744"
    assert coll.select("rank", "pg", "seq").rows() == [(0, split, 3), (1, split, 3)]
