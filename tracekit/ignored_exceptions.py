"""Exceptions Python says it ignored (issue 31, fail31b).

CPython prints ``Exception ignored in: <function NCCLCommunicator.__del__ at 0x7f4d8c3212d0>`` (or ``Exception
ignored in atexit callback: <function ...>``, Python/errors.c PyErr_WriteUnraisable) above the traceback of
an exception raised where nothing can catch it: a finaliser (``__del__``), a weakref callback, an atexit
function. The process goes on; the exception under that header is a side effect (a half-built object's
destructor after the real error, a data loader's clean-up at exit), never the failure. Read as the first
crash, it named the wrong error (samples/wild dev-060: the real one is vLLM's `Error executing method
init_device` below it).
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence
from tracekit.outcome import EventKind

IGNORED = r"^Exception ignored in(?: atexit callback)?:"
#: how far below its header an ignored exception's own line may stand (its traceback's frames between)
WITHIN = 40


def ignored(ev: Evidence, failures: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``failures`` that are exception lines under Python's ``Exception ignored in`` header: the
    first exception line of the same file below the header, within ``WITHIN`` lines."""
    heads = ev.store.events.filter(pl.col("message").fill_null("").str.contains(IGNORED)).select(
        "file", pl.col("line").alias("_head"))
    if not heads.height or not failures.height:
        return failures.clear()
    raised = ev.kinds(EventKind.EXCEPTION).select("file", "line")
    first = (raised.join(heads, on="file").filter((pl.col("line") > pl.col("_head"))
                                                  & (pl.col("line") <= pl.col("_head") + WITHIN))
             .group_by("file", "_head").agg(pl.col("line").min()))
    return failures.join(first.select("file", "line"), on=["file", "line"], how="semi")
