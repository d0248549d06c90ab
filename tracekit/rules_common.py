"""What the rule families share (rules_mismatch, rules_failure, rules_stall, rules_progress, and the
families other modules add): how a rule names the ranks of some rows, quotes a message, cites where
the ranks' main threads are, and finds the collective a rank stopped in."""

from __future__ import annotations

import polars as pl

from tracekit import align, sources
from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import EventKind
from tracekit.parsers import minmax_timers
from tracekit.wording import who

COLLECT = ("run under `tracekit run` on every node (NCCL INFO, Flight Recorder dumps, stack dumps when "
           "progress stops), or set TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and a ddp_timeout of minutes")


#: phase timers that are no step's own breakdown: a compile's stages (progress_messages' ``where="compile"``) and
#: Megatron's report of every rank's (min, max) (parsers/minmax_timers, read by rules_spread)
NOT_STEP_PHASES = ("compile", minmax_timers.WHERE)


def step_phases(ev: Evidence) -> pl.DataFrame:
    """The ``phase_times`` events that break one step down (forward, backward, optimizer), by file and line."""
    return (ev.kinds(EventKind.PHASE_TIMES).filter(~pl.col("where").is_in(NOT_STEP_PHASES).fill_null(False))
            .sort("file", "line"))


def last_per_file(df: pl.DataFrame) -> pl.DataFrame:
    """Each file's last row, in line order: where its log ends (what came last decides whether a loop went
    on, a timer report was the end, ...)."""
    return df.sort("file", "line").group_by("file", maintain_order=True).last()


def msg(df: pl.DataFrame, i: int = 0, n: int = 200) -> str:
    return clip(df["message"][i], n)


def rank_of(df: pl.DataFrame, ev: Evidence) -> list[int]:
    r = df["rank"].drop_nulls().unique().sort().to_list()
    return r or ([ev.root_cause_rank] if ev.root_cause_rank is not None else [])


def who_or(df: pl.DataFrame) -> str:
    """The ranks of the rows (``ranks 1-3``), or ``a rank`` where none is known."""
    r = df["rank"].drop_nulls().unique().sort().to_list()
    return who(r) if r else "a rank"


def stacks_of(ev: Evidence, ranks: list[int]) -> pl.DataFrame:
    return ev.stacks.filter(pl.col("rank").is_in(ranks)).unique(["rank", "where"], maintain_order=True)


def frames_text(where: pl.DataFrame, n: int = 4) -> str:
    return "".join(f"; rank {w['rank']} is in {w['where']}" for w in where.head(n).iter_rows(named=True))


def stack_lines(where: pl.DataFrame, n: int = 4) -> list[str]:
    said = pl.format("rank {} main thread in {}", "rank", "where").alias("message")
    return lines(where.with_columns(said), n)


def count_rows(table: pl.DataFrame | pl.LazyFrame) -> int:
    """Rows of a table in memory or scanned from disk (a store's metadata says, nothing is read)."""
    return align.collect(table.lazy().select(pl.len())).item()


def last_open(ev: Evidence, ranks: list[int]) -> str:
    """The collective these ranks were in when they stopped: their last FR/Kineto entry."""
    c = align.collect(ev.store.collectives.lazy().filter(pl.col("rank").is_in(ranks)
                                                         & pl.col("source").is_in(sources.TIMED)))
    if not c.height:
        return ""
    last = c.sort("start_ns", "record_id", nulls_last=True).tail(1).row(0, named=True)
    return (f"{last['op_raw'] or last['op']} seq {last['seq']}"
            + align.tensor_text(last["sizes"], last["dtype"]) + f" on process group {last['pg']}")


def late_text(ev: Evidence) -> str:
    """The rank that makes the others wait, how late per collective and since when (empty when none)."""
    x = ev.late
    if x is None:
        return ""
    source = align.SOURCE_NAMES.get(x["source"], x["source"])
    return (f"rank {x['rank']} makes the others wait: it arrives last in {x['times']} of {x['of']} "
            f"collectives, a median {x['lag_s']:.2f} s after the next rank, since {x['since_op']} "
            f"seq {x['since_seq']} on process group {x['pg']} ({source} durations)")


def calm(ev: Evidence, *, init_done: bool = False, every_rank_seen: bool = False,
         nothing_looked_at: bool = False) -> bool:
    """Nothing but calm lines: no error, failure sign, stall, or rank left behind. What else must be
    absent is the caller's: ``init_done`` no pending NCCL init (a benchmark's or a server's figures
    printed while a communicator still starts are no result); ``every_rank_seen`` no rank of a known
    world that left no record (a healthy verdict over ranks whose logs are not known); and
    ``nothing_looked_at`` no mismatch and no stack dump (someone looked for where it waits)."""
    return not (ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.missing
                or (init_done and ev.pending.height) or (every_rank_seen and ev.coverage.missing)
                or (nothing_looked_at and (ev.mismatches or ev.stacks.height)))


def said_in_files(ev: Evidence, e: pl.DataFrame, pattern: str) -> pl.DataFrame:
    """The events of ``e``'s files whose frame (``where``) or message matches ``pattern``, in file order:
    what the failing process was doing when its error came (a set-up call, a set-up frame)."""
    return ev.store.events.join(e.select("file").unique(), on="file").filter(
        pl.concat_str(pl.col("where").fill_null(""), pl.lit(" "), pl.col("message").fill_null(""))
        .str.contains(pattern)).sort("file", "line")
