"""Which ranks an excerpt shows: a local rank where no line shows a second node, and the worker DeepSpeed's
launcher names (issue 31, rank identity)."""

from __future__ import annotations

from pathlib import Path

from tests.factory import ranks_of as ranks
from tracekit.coverage import coverage
from tracekit.ingest import ingest

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"

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
