"""Ascend's HCCL as torch_npu reports it (ProcessGroupHCCL.cpp, OpParamMaker.cpp): the exception a rank
raised (`RuntimeError: [ERROR] HCCL error in: torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:64`,
`OPS function error: HcclAllreduce, error code is 6`, `ACL stream synchronize failed`), then CANN's
`[ERROR] <time> (PID:.., Device:.., RankID:3) ERR02200 DIST call hccl api failed.` and the error code with
its reason (`EI0006: ... Getting socket times out. Reason: Remote Rank did not send the data in time`).
The code says why, and it decides the reading, as NCCL's `Last error:` does for NCCL:

- a collective that timed out (EI0006, a socket HCCL sets up at a collective's first call that the peer
  never answered; EI0002, a notify wait; EI9999 `hccl ... task timeout`, `stuck notify`): the counterpart
  of c10d's watchdog timeout, a wait for a rank that never came: a ``watchdog_timeout`` event, with the op;
  the exception the rank raised then is its consequence (``watchdog_abort``), never a crash of its own;
- any other code (EJ0001: the HCCP process failed to start): the exception's reason, said first.

torch_log calls ``read`` on its lines and its events."""

from __future__ import annotations

import polars as pl

from tracekit.schema import EventKind

#: how many lines after the exception its `[ERROR] ... RankID` and code lines may stand
AHEAD = 6
#: torch_npu's exception of an HCCL, operator or ACL call (ProcessGroupHCCL.cpp's HCCL_CHECK_ERROR,
#: OpParamMaker.cpp's OPS function error)
RAISED = (r"HCCL error in:|OPS function error: \w+|ACL stream synchronize failed"
          r"|ERR0\d{4} (?:DIST|OPS) call (?:hccl|acl) api failed")
#: CANN's error code and its reason (`EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket
#: times out. ...`), after any prefix a launcher or a logger put before it
CODE = r"(?:^|[\s\]:])(?P<code>E[A-Z][0-9A-Z]\d{3}): (?P<reason>.*\S)"
#: a code line that only announces the next one
EMPTY = r"^Inner Error!?$"
#: a collective HCCL gave up waiting for (the codes of a timeout, or a reason that says one)
TIMEOUT = (r"^EI000[26]:|(?i:hccl\w*(?: \w+)* task timeout|stuck notify|notify wait\w*(?: \w+)* time"
           r"|times out\. Reason: Remote Rank)")
#: the rank CANN's error head names (`RankID:-1` where HCCL had none yet)
RANK_ID = r"RankID:(\d+)"
#: the collective torch_npu named (`OPS function error: HcclAllreduce,`)
OP = r"Hccl(Allreduce|AllGather|Allgather|Broadcast|ReduceScatter|Reduce|AlltoAllV?C?|Alltoall\w*|Barrier"\
     r"|Send|Recv|BatchSendRecv)\b"


def _reason(text: pl.Expr) -> pl.Expr:
    """A code line's ``E...: reason`` (null for a line of no code, or one that only says `Inner Error`)."""
    code = text.str.extract(CODE, 1)
    reason = text.str.extract(CODE, 2)
    return pl.when(code.is_not_null() & ~reason.str.contains(EMPTY)).then(
        pl.format("{}: {}", code, reason))


def ranks(df: pl.DataFrame) -> pl.DataFrame:
    """The ranks CANN's error heads name (`(PID:927000, Device:3, RankID:3)`), one row a file and rank."""
    t = pl.col("raw") if "raw" in df.columns else pl.col("text")
    return (df.filter(t.str.contains(RANK_ID))
            .select("file", t.str.extract(RANK_ID, 1).cast(pl.Int64, strict=False).alias("rank"),
                    t.str.extract(r"PID:(\d+)", 1).cast(pl.Int64, strict=False).alias("pid"),
                    pl.lit("torch").alias("source"))
            .unique(maintain_order=True))


def read(df: pl.DataFrame, events: pl.DataFrame | None) -> tuple[pl.DataFrame | None, pl.Series]:
    """``df``: torch_log's lines (file, line, text, rank, and raw where the lines frame kept it);
    ``events``: the events torch_log read from them.
    The events with HCCL's reasons read in, and which lines of ``df`` this module decoded."""
    # (the line as written: the lines frame's text loses `EJ0001: ` where text.py reads it as a tag)
    t = pl.col("raw") if "raw" in df.columns else pl.col("text")
    ahead = [t.shift(-k).over("file") for k in range(1, AHEAD + 1)]
    behind = [t.shift(k).over("file") for k in range(1, AHEAD + 1)]
    said = df.select(
        "file", "line",
        pl.coalesce(_reason(a) for a in ahead).alias("_why"),
        pl.coalesce(t.str.extract(RANK_ID, 1), *(a.str.extract(RANK_ID, 1) for a in ahead))
        .cast(pl.Int64, strict=False).alias("_rank_id"),
        pl.coalesce(*(b.str.extract(RANK_ID, 1) for b in behind)).cast(pl.Int64, strict=False)
        .alias("_id_before"),
        pl.coalesce(*(b.str.extract(OP, 1) for b in behind)).str.to_lowercase().alias("_op_before"),
        _reason(t).alias("_code"),
        t.str.contains(RAISED).alias("_raised"))
    used = said["_raised"] | said["_code"].is_not_null()
    # (a timeout's code line: a watchdog_timeout of the op the exception above it named)
    waits = df.join(said.filter(pl.col("_code").str.contains(TIMEOUT).fill_null(False)), on=["file", "line"])
    waits = waits.select("file", "line", "text", pl.coalesce("rank", "_id_before").alias("rank"),
                         pl.lit(EventKind.WATCHDOG_TIMEOUT).alias("kind"), pl.col("_code").alias("message"),
                         pl.col("_op_before").alias("op"), pl.lit("HCCL").alias("where"))
    if events is None or not events.height:
        return (waits if waits.height else events), used
    # the exception over a code: its reason first, its rank from CANN's head; over a timeout's code, the
    # exception is the wait's consequence (c10d's abort after a timeout), not a crash of its own
    raised = pl.col("kind").is_in([EventKind.EXCEPTION, EventKind.CRASH]) & pl.col("_raised")
    timed = pl.col("_why").str.contains(TIMEOUT).fill_null(False)
    events = events.join(said.select("file", "line", "_why", "_rank_id", "_raised"), on=["file", "line"],
                         how="left").with_columns(pl.col("_raised").fill_null(False))
    events = events.with_columns(
        pl.when(raised & pl.col("_why").is_not_null())
        .then(pl.format("{} (raised as: {})", "_why", "message")).otherwise("message").alias("message"),
        pl.when(raised).then(pl.coalesce("rank", "_rank_id")).otherwise("rank").alias("rank"),
        pl.when(raised & timed).then(pl.lit(EventKind.WATCHDOG_ABORT)).otherwise("kind").alias("kind"),
    ).drop("_why", "_rank_id", "_raised")
    return pl.concat([events, waits], how="diagonal_relaxed"), used
