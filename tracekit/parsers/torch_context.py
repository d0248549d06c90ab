"""What a torch log line says from the lines around it (parsers/torch_log.py reads the lines): a watchdog
head whose work a paste wrapped onto the next line, an exception whose message goes on past its line, the
set-up function a traceback's frames reach, and a traceback whose exception line the excerpt cut."""

from __future__ import annotations

import polars as pl

from tracekit.parsers import any_of, process_end
from tracekit.parsers.torch_patterns import (
    ABORT, CANCELLED, CRASH, CUDA, CUT_TRACEBACK, EXCEPTION, GLOO_ERROR, INIT_FRAME, KILLING, SIGNAL,
    SIGNAL_RECEIVED, STUCK, TERMINATE, WHAT, WORK, WRAPPED_HEAD,
)
from tracekit.schema import EventKind
from tracekit.start_up_frames import PATHED_FRAME


def raised_in_init(df: pl.DataFrame) -> pl.Expr:
    """Per line: the set-up function (``init_process_group``) of the traceback the line ends, where one of
    its frames is one (null otherwise); a new ``Traceback`` line, or the line after an exception, starts
    afresh."""
    t = pl.col("text")
    ended = t.shift(1).over("file").str.contains(EXCEPTION).fill_null(False)
    # (a frame a path restricts, pynccl's `__init__`, named as a stack names it: `__init__ (path:line)`)
    pathed = t.str.extract_groups(PATHED_FRAME).struct
    mark = (pl.when(t.str.contains(INIT_FRAME)).then(t.str.extract(INIT_FRAME, 1))
            .when(t.str.contains(PATHED_FRAME))
            .then(pl.format("{} ({}:{})", pathed.field("fn"), pathed.field("file"), pathed.field("line")))
            .when(t.str.contains(r"^\s*Traceback \(most recent call last\)") | ended).then(pl.lit(""))
            .otherwise(pl.lit(None, pl.Utf8)))
    return pl.when(mark.forward_fill().over("file") != "").then(mark.forward_fill().over("file"))

def joined_work(df: pl.DataFrame) -> pl.DataFrame:
    """A watchdog line wrapped after its head (`[Rank 1] Watchdog caught collective operation timeout:` at the
    end of a line, `WorkNCCL(SeqNum=..., ...) ran for ...` on the next, as a terminal or a paste breaks it):
    the continuation takes the head's rank and group where it names none of its own."""
    head = pl.col("text").shift(1).over("file").str.contains(WRAPPED_HEAD).fill_null(False)
    cont = head & pl.col("text").str.contains(r"^\s*" + WORK)  # (its work on the next line)
    return df.with_columns(pl.when(cont & pl.col(c).is_null()).then(pl.col(c).shift(1).over("file"))
                           .otherwise(pl.col(c)).alias(c) for c in ("rank", "pg", "pg_name", "pg_rank"))

def line_said(df: pl.DataFrame) -> pl.Expr:
    """Per line, what its event says: the line, and the text it continues into on the next line where it
    is cut there: a C++ exception that escaped with its ``what():`` line, a Python exception whose message
    goes on past a line that ends in ``:`` (`RuntimeError: work = default_pg.broadcast([tensor], opts):`
    over `NCCL error in: ...`), a side of c10d's mismatch report whose fingerprint a paste put on the next line."""
    t = pl.col("text")
    more = t.shift(-1).over("file").str.strip_chars()
    goes_on = (more.is_not_null() & (more != "") & ~more.str.contains(r"^(?:Traceback|File |[=\-*^~]+$)")
               & ~more.str.contains(EXCEPTION))
    return (pl.when(t.str.contains(TERMINATE) & more.str.contains(WHAT).fill_null(False))
            .then(pl.format("{}: what(): {}", t.str.strip_chars_end(), more.str.extract(WHAT, 1)))
            .when(t.str.contains(EXCEPTION) & t.str.strip_chars_end().str.ends_with(":") & goes_on)
            .then(pl.format("{} {}", t.str.strip_chars_end(), more))
            # (c10d's NCCL error inside a program's own error line: from its own words on)
            .when(t.str.contains(r"\sNCCL error in: ") & ~t.str.contains(EXCEPTION))
            .then(t.str.extract(r"\s(NCCL error in: .*)$", 1))
            .when(t.str.contains(r"is running (?:inconsistent )?collective:\s*$")
                  & more.str.starts_with("CollectiveFingerPrint(").fill_null(False))
            .then(pl.format("{} {}", t.str.strip_chars_end(), more))
            .otherwise(t))

def cut_traceback(df: pl.DataFrame) -> pl.DataFrame | None:
    """A Python traceback that begins after the file's last exception line: its exception is cut (the
    excerpt ends inside it), yet a process raised -- an ``exception`` event of its own words. (Not under
    spawn's `-- Process N terminated with the following error:`, which process_end reads with its process.)"""
    t = pl.col("text")
    raised = pl.when(t.str.contains(process_end.RAISED)).then(pl.col("line")).max().over("file").fill_null(-1)
    spawn = t.shift(1).over("file").str.contains(process_end.SPAWN_RAISED).fill_null(False)
    # only where nothing else in the file says what went wrong (an error, a warning, a signal, an interrupt,
    # a timeout): a cut traceback is the weakest word of a failure and never outranks one that says more
    other = t.str.contains(any_of(CRASH, CUDA, ABORT, STUCK, GLOO_ERROR, SIGNAL, SIGNAL_RECEIVED, KILLING,
                                  CANCELLED, process_end.ANY,
                                  r"NCCL WARN|^\[?E\d{0,4}[ \d:.]*[\w/.\-]+:\d+\]|KeyboardInterrupt"
                                  r"|timed? ?out",
                                  r"(?i)\berror\b|\bfailed\b|\bwarn(?:ing)?\b"))
    # (c10d's destructor warning, printed at every exit that skipped destroy_process_group, failed or not
    # (ProcessGroupNCCL.cpp, ~ProcessGroupNCCL), and Python's own warnings (a FutureWarning's "to disable
    # this warning"): neither says what went wrong)
    benign = (r"^\s*(?:Traceback|File )|process group has NOT been destroyed before"
              r"|\b\w*(?:Deprecation|Future|User)Warning\b")
    quiet = ~(other & ~t.str.contains(benign)).any().over("file")
    hit = df.filter(t.str.contains(r"^\s*Traceback \(most recent call last\):?\s*$")
                    & (pl.col("line") > raised) & ~spawn & quiet)
    if not hit.height:
        return None
    hit = hit.head(1)
    # (where: the start-up frame its frames reach, the innermost the excerpt shows, not its head line's)
    inner = (df.join(hit.select("file", pl.col("line").alias("_head")), on="file")
             .filter((pl.col("line") > pl.col("_head")) & pl.col("_init").is_not_null())
             .group_by("file").agg(pl.col("_init").last().alias("_inner")))
    return hit.join(inner, on="file", how="left").with_columns(
        pl.lit(EventKind.EXCEPTION).alias("kind"), pl.coalesce("_inner", "_init").alias("where"),
        pl.lit(CUT_TRACEBACK).alias("message")).drop("_inner")
