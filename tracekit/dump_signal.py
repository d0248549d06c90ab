"""c10d's word that a rank's collective timed out, said by the ranks that were told of it: the dump signal.

Since torch 2.3 the watchdog of the rank whose collective ran past its timeout writes a key to the c10d store, and
every other rank's watchdog, seeing it, dumps its Flight Recorder too (torch/csrc/distributed/c10d/
ProcessGroupNCCL.cpp, ``watchdogHandler`` / ``heartbeatMonitor``):

- ``[PG ID 0 PG GUID 0(default_pg) Rank 2] Received a dump signal due to a collective timeout from  rank 0 and we
  will try our best to dump the debug info. Last enqueued NCCL work: 7, last completed NCCL work: 7.`` (2.5+: the
  rank that timed out named; ``from this local rank`` on that rank itself);
- ``[Rank 1] Received a global timeout from another rank and will start to dump the debug info.`` and ``Received a
  timeout signal from this local rank`` (2.3, 2.4);
- ``Observed flight recorder dump signal from another rank via TCPStore.`` (the signal seen, its source unnamed).

These lines are read here, so that an excerpt that shows only them says which rank timed out and where each
rank stood (its last enqueued and completed work), never a start-up that stopped: a collective timed out.
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence, lines
from tracekit.outcome import Kind, Verdict
from tracekit.rules_common import COLLECT, msg
from tracekit.wording import who

#: the signal, with the rank it came from where the line names it (``from  rank 0``: two spaces in 2.5's format)
SIGNAL = (r"Received a dump signal due to a collective timeout from\s+(?:this local rank|rank\s*(\d+))"
          r"|Received a (?:global timeout|timeout signal) from (?:another rank|this local rank)"
          r"|Observed flight recorder dump signal from another rank")
#: the line's own rank timed out (it received the signal from itself)
OWN = r"from (?:this local rank)"
#: where the rank stood: its last enqueued and completed NCCL work
WORK = r"Last enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+)"


def signalled(ev: Evidence) -> pl.DataFrame:
    """The dump-signal lines, with ``source`` (the rank whose collective timed out, where said) and the rank's last
    enqueued and completed work."""
    m = pl.col("message").fill_null("")
    rows = ev.store.events.filter(m.str.contains(SIGNAL)).unique(["file", "line"], maintain_order=True)
    return rows.sort("file", "line").with_columns(
        pl.when(m.str.contains(OWN)).then(pl.col("rank"))
        .otherwise(m.str.extract(SIGNAL, 1).cast(pl.Int64, strict=False)).alias("source"),
        m.str.extract(WORK, 1).cast(pl.Int64, strict=False).alias("enq"),
        m.str.extract(WORK, 2).cast(pl.Int64, strict=False).alias("done"))


def idle(s: pl.DataFrame, src: list[int]) -> str:
    """``; ranks 2-3 had no collective in flight ...`` where ranks told of another's timeout say their last
    enqueued work is their last completed: they never issued the collective the source waits in."""
    quiet = s.filter(pl.col("enq").is_not_null() & (pl.col("enq") == pl.col("done"))
                     & ~pl.col("rank").is_in(src))["rank"].drop_nulls().unique().sort().to_list()
    if not quiet or not src:
        return ""
    return (f"; {who(quiet)} had no collective in flight (last enqueued NCCL work = last completed): "
            f"{'it' if len(quiet) == 1 else 'they'} never issued the one {who(src)} timed out in")


def source_said(ev: Evidence) -> str:
    """For a timeout's summary: ``; rank 0 timed out first: ranks 1-3 received its dump signal`` where the lines
    name the rank, else ``""``."""
    s = signalled(ev)
    src = s["source"].drop_nulls().unique().sort().to_list() if s.height else []
    if not src:
        return ""
    told = sorted(set(s["rank"].drop_nulls().to_list()) - set(src))
    return (f"; {who(src)} timed out first (c10d's dump signal came from {'it' if len(src) == 1 else 'them'}"
            + (f": {who(told)} received it" if told else "") + ")") + idle(s, src)


def timeout_signalled(ev: Evidence) -> Verdict | None:
    """UNDECIDED where ranks say they received c10d's dump signal of a collective timeout and no watchdog line of
    the timeout itself is in view: which rank timed out (where the line names it), where each rank stood, and
    what decides which rank never reached the collective (every rank's Flight Recorder dump)."""
    s = signalled(ev)
    if not s.height or ev.timeouts.join(s.select("file", "line"), on=["file", "line"], how="anti").height:
        return None  # (a watchdog's own timeout line in view: ``timed_out`` reads it, with ``source_said``)
    src = s["source"].drop_nulls().unique().sort().to_list()
    told = sorted(set(s["rank"].drop_nulls().to_list()) - set(src))
    head = (f"{who(src)} timed out in a collective (its watchdog's dump signal reached the others"
            + (f": {who(told)}" if told else "") + ")" if src else
            f"{who(told) if told else 'a rank'} received c10d's dump signal of a collective timeout from another "
            "rank, which the lines do not name")
    work = s.filter(pl.col("enq").is_not_null()).unique("rank", maintain_order=True)
    stood = ""
    if work.height:
        same = work.group_by("enq", "done", maintain_order=True).agg(pl.col("rank").drop_nulls().sort())
        stood = "; " + ", ".join(f"{who(x['rank']) if x['rank'] else 'a rank'} last enqueued NCCL work "
                                 f"{x['enq']}, last completed {x['done']}" for x in same.head(4).iter_rows(named=True))
        stood += idle(s, src)
    done = s["done"].max()
    past = (f"the ranks had completed {done} collective(s), so the job was past start-up" if done else
            "whether the job had got past start-up the lines do not say")
    return Verdict(Kind.UNDECIDED, f"{head} (`{msg(s, 0, 140)}`){stood}: a collective ran past its timeout and "
                   f"{past}; the watchdog line of the timeout (its op and SeqNum) is not in "
                   "view, nor which rank never reached it: collect every rank's Flight Recorder dump "
                   f"(TORCH_NCCL_DEBUG_INFO_TEMP_FILE) and log ({COLLECT})", src, lines(s, 4))
