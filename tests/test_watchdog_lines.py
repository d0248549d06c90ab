"""The watchdog's timeout line names its collective whatever the order of WorkNCCL's fields: torch
1.x's (no SeqNum), a post that reorders them, a terminal that wrapped the line mid-name."""

import polars as pl

from tracekit.ingest import ingest
from tracekit.outcome import EventKind


def timeouts(tmp_path, text):
    (tmp_path / "rank0.log").write_text(text)
    e = ingest([tmp_path]).events
    return e.filter(pl.col("kind") == EventKind.WATCHDOG_TIMEOUT).select("op", "seq").rows()


def test_seqnum_after_optype_and_no_timeout_field(tmp_path):
    got = timeouts(tmp_path, "[E ProcessGroupNCCL.cpp:523] Watchdog caught collective operation timeout:\n"
                   "WorkNCCL(OpType=ALLREDUCE, SeqNum=458) ran for 1800600 ms before timing out.\n")
    assert [(op.upper(), str(seq)) for op, seq in got] == [("ALLREDUCE", "458")]


def test_a_line_wrapped_mid_name_keeps_its_seqnum(tmp_path):
    got = timeouts(tmp_path, "[rank6]:[E908 05:24:11.571310624 ProcessGroupNCCL.cpp:629] [Rank 6] "
                   "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1782692, "
                   "OpType=_REDUCE_SCAT\nTER_BASE, NumelIn=778567680, NumelOut=19464192, "
                   "Timeout(ms)=600000) ran for 600011 milliseconds before timing out.\n")
    assert [str(seq) for _, seq in got] == ["1782692"]


def test_the_full_form_still_reads(tmp_path):
    got = timeouts(tmp_path, "[rank0]:[E220 10:59:35.441597707 ProcessGroupNCCL.cpp:629] [Rank 0] "
                   "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3497, "
                   "OpType=_ALLGATHER_BASE, NumelIn=1572864, NumelOut=3145728, Timeout(ms)=1800000) "
                   "ran for 1800039 milliseconds before timing out.\n")
    assert [(op.upper(), str(seq)) for op, seq in got] == [("_ALLGATHER_BASE", "3497")]
