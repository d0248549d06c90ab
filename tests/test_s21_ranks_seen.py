"""Which ranks an excerpt shows: the ranks a cross-rank check names, and a local rank where no line shows
a second node (issue 31, rank identity)."""

from __future__ import annotations

from pathlib import Path

from tests.factory import text_store as store_of, ranks_of as ranks
from tracekit.coverage import coverage
from tracekit.ingest import ingest
from tracekit.schema import EventKind

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"

# ProcessGroupWrapper's check (torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp, checkForMismatch):
# the rank that found the mismatch names its own fingerprint and the other rank's
WRAPPER = ("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
           "CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE, TensorShape=[20, 10], TensorDtypes=Float), "
           "but Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=12, OpType=REDUCE, "
           "TensorShape=[20, 10], TensorDtypes=Float).\n")
# reducer.cpp's check of the model at DDP's construction: the printing rank first
DDP = ("RuntimeError: DDP expects same model across all ranks, but Rank 1 has 212 params, while rank 0 has "
       "inconsistent 0 params.\n")
# NCCL's init line of the process that printed it (init.cc: `comm %p rank %d nranks %d ... - Init COMPLETE`)
NCCL_INIT = ("gpu1:4675:4675 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xabc"
             " - Init COMPLETE\n")


def test_the_ranks_a_collective_check_compares_are_seen():
    # a real paste of the wrapper's message (two ranks' fingerprints, one line each)
    s = ingest([WILD / "dv16-018-pytorch-pgwrapper-rank0-allreduce-vs-rank1-reduce.txt"])
    assert ranks(s) == [0, 1]
    assert coverage(s).sources == {0: ["another rank's cross-rank check"], 1: ["another rank's cross-rank check"]}


def test_the_ranks_ddps_model_check_compares_are_seen():
    # reducer's `DDP expects same model across all ranks, but Rank 1 has 212 params, while rank 0 has
    # inconsistent 0 params.` under DDP's construction
    s = ingest([WILD / "dv9-003-stream-of-search-ddp-param-count-mismatch.txt"])
    assert ranks(s) == [0, 1]


def test_a_rank_a_check_names_does_not_hide_the_files_own_rank(tmp_path):
    # the file is rank 1's (its NCCL init says so); DDP's check names rank 0 too, which is not the
    # writer: the exception stays rank 1's
    s = store_of(tmp_path, NCCL_INIT.replace("rank 0 nranks", "rank 1 nranks") + DDP)
    assert ranks(s) == [0, 1]
    raised = s.events.filter(s.events["kind"] == EventKind.EXCEPTION)
    assert raised["rank"].to_list() == [1]


def test_spawns_process_index_numbers_a_rank_where_no_second_node_shows():
    # torch.multiprocessing.spawn's `-- Process 3 terminated with the following error:` on a job that
    # names no host
    s = ingest([WILD / "dv2-004-colossal-pytest-verify-model-ncclsystemerror.txt"])
    assert ranks(s) == [3]
    assert "rank 3 numbered by local rank, no line showing a second node" in coverage(s).describe()


def test_the_last_worker_deepspeeds_launcher_names_is_seen_and_not_called_the_failed_one():
    # launch.py's sigkill_handler: `logger.error(f"{cmd} exits with return code = {code}")`, where `cmd` is
    # its launch loop's last command (`--local_rank=4` here): local rank 4 was started; which worker
    # failed is not said
    s = ingest([WILD / "dev-035-llamafactory-zero3-local-rank4-return-code-1.txt"])
    assert ranks(s) == [4]
    assert coverage(s).sources[4] == ["DeepSpeed launcher's command (its last worker's)", "local rank"]
    from tracekit.verdict import decide
    v = decide(s)
    assert v.summary.startswith("a worker of the deepspeed launcher ended: exit code 1")
    assert "rank 4:" not in v.summary
