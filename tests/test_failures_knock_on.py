"""Horovod's word that it has been shut down (horovod/common/operations.cc: `Horovod has been shut down. This
was caused by an exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor
after one of the ranks finished execution.`) is a knock-on of another rank's failure, never the cause (alone,
it says a rank raised or exited first: crashed-rank, session 23); and
TensorFlow 1.x's `XxxError (see above for traceback): message` is a Python exception line like any other."""

import polars as pl

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

SHUT = ("tensorflow.python.framework.errors_impl.AbortedError (see above for traceback): Horovod has been shut "
        "down. This was caused by an exception on one of the ranks or an attempt to allreduce, allgather or "
        "broadcast a tensor after one of the ranks finished execution.\n")


def _decide(tmp_path, text, name="rank0.log"):
    (tmp_path / name).write_text(text)
    s = ingest([tmp_path / name])
    return s, decide(s)


def test_tensorflows_exception_line_is_read(tmp_path):
    s, _ = _decide(tmp_path, SHUT)
    exc = s.events.filter(pl.col("kind").cast(pl.Utf8) == "exception")
    assert exc.height == 1 and "Horovod has been shut down" in exc["message"][0]


def test_horovods_shutdown_alone_says_another_rank_failed_first(tmp_path):
    # (session 23: both readings of horovod/common/common.h:232 SHUT_DOWN_ERROR are a rank that raised or
    # exited first; the dev label of dv10-018 gives crashed-rank first)
    _, v = _decide(tmp_path, SHUT)
    assert v.kind == Kind.CRASHED_RANK and "Horovod has been shut down" in v.summary
    assert "raised or exited first" in v.summary


def test_the_exception_before_it_is_the_cause(tmp_path):
    _, v = _decide(tmp_path, "ValueError: labels of batch 12 out of range\n" + SHUT)
    assert v.kind == Kind.CRASHED_RANK and "ValueError: labels of batch 12" in v.summary
