"""Which process ended first, where ranks timed out in a collective and a launcher says another process ended
(torchrun's ``failed (exitcode: N) local_rank: R``, DeepSpeed's ``exits with return code = N``, srun's ``task N:
Killed``): the watchdog of a rank in the collective fires with the others', so a rank not seen timing out that
ended before their timeout never reached it -- it ended first, and their wait is the consequence (CRASHED_RANK).

The order of events is read from each line's own clock (glog's ``E0607 12:00:06`` and c10d's ``[rank0]:[E607
12:30:01``, a launcher's ``[2024-06-07 12:00:01,100]``), else from the line order of one file. A death by a
signal no peer's failure and no launcher's stop sends (SIGSEGV, SIGBUS, SIGILL, SIGFPE) is the process's own
whatever its time. With no order shown the timeout rule stays UNDECIDED and says the end it saw
(``ends_said``)."""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence, clip, lines
from tracekit.facts_in_view import seq_said
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.wording import who

#: a line's own clock: glog's head (``E0607 12:00:06.1``, c10d's ``[E607 12:30:01.5``: month and day, then the
#: time) or an ISO date and time (``2024-06-07 12:00:01,100``)
GLOG_CLOCK = r"(?:^|[\[\s:])[IWEF](\d{3,4}) (\d\d):(\d\d):(\d\d)(?:\.\d+)?\b"
ISO_CLOCK = r"\b\d{4}-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)\b"
#: deaths by a signal the process got from its own fault, never from a peer's failure or a launcher's stop
OWN_FAULTS = (-11, -7, -4, -8, 139, 135, 132, 136)
#: a process's end that is the consequence of its own wait (SIGABRT: c10d's abort after the timeout) or a stop
#: request (SIGTERM, SIGINT, SIGHUP, coreutils `timeout`)
NOT_FIRST = (-6, 134, -15, 143, -2, 130, -1, 129, 124)


def clock(message: pl.Expr) -> pl.Expr:
    """A comparable time of day and date (MMDD x 100000 + seconds) from a line's own clock, or null."""
    g = message.str.extract_groups(GLOG_CLOCK)
    i = message.str.extract_groups(ISO_CLOCK)
    glog = (g.struct.field("1").cast(pl.Int64, strict=False) * 100000
            + g.struct.field("2").cast(pl.Int64, strict=False) * 3600
            + g.struct.field("3").cast(pl.Int64, strict=False) * 60 + g.struct.field("4").cast(pl.Int64, strict=False))
    iso = ((i.struct.field("1").cast(pl.Int64, strict=False) * 100 + i.struct.field("2").cast(pl.Int64, strict=False))
           * 100000 + i.struct.field("3").cast(pl.Int64, strict=False) * 3600
           + i.struct.field("4").cast(pl.Int64, strict=False) * 60 + i.struct.field("5").cast(pl.Int64, strict=False))
    return glog.fill_null(iso)


def said() -> pl.Expr:
    """A line's message, then its parsed time (a launcher's rewritten message keeps its time only there)."""
    return pl.concat_str([pl.col("message").fill_null(""), pl.col("ts").fill_null("")], separator=" | ")


def _timeouts(ev: Evidence) -> pl.DataFrame:
    return (ev.kinds(EventKind.WATCHDOG_TIMEOUT).filter(pl.col("rank").is_not_null())
            .with_columns(clock(said()).alias("_t")).sort("file", "line"))


def ends(ev: Evidence, waiting: list[int]) -> pl.DataFrame:
    """Processes a launcher says ended with a non-zero code that is neither a stop request nor an abort after
    a wait, that are no rank seen timing out, with their clock."""
    e = ev.kinds(EventKind.CHILD_FAILED, EventKind.RANK_EXIT).filter(
        pl.col("exit_code").is_not_null() & (pl.col("exit_code") != 0)
        & ~pl.col("exit_code").is_in(list(NOT_FIRST)) & ~pl.col("rank").is_in(waiting).fill_null(False))
    return e.with_columns(clock(said()).alias("_t")).sort("file", "line")


def _before(ends: pl.DataFrame, wd: pl.DataFrame) -> pl.DataFrame:
    """The ends shown before the first timeout: by their clocks, else by line order in one file; and the
    deaths by a process's own fault, whatever their time."""
    t0 = wd["_t"].drop_nulls().min()
    first = wd.group_by("file").agg(pl.col("line").min().alias("_at"))
    e = ends.join(first, on="file", how="left")
    by_clock = pl.col("_t").is_not_null() & (pl.col("_t") < t0) if t0 is not None else pl.lit(False)
    by_line = ((pl.col("_t").is_null() | pl.lit(t0 is None)) & pl.col("_at").is_not_null()
               & (pl.col("line") < pl.col("_at")))
    return e.filter(by_clock | by_line | pl.col("exit_code").is_in(list(OWN_FAULTS)))


def died_before_timeout(ev: Evidence) -> Verdict | None:
    """CRASHED_RANK: ranks timed out in a collective, and a process that is not one of them ended before their
    timeout (or of its own fault): it never reached the collective they wait in."""
    wd = _timeouts(ev)
    if not wd.height:
        return None
    waiting = sorted(set(wd["rank"].to_list()))
    gone = _before(ends(ev, waiting), wd)
    if not gone.height:
        return None
    from tracekit.rules_exit import _name, meaning  # (rules_exit imports the rules of its family, not these)
    d = gone.row(0, named=True)
    if gone["rank"].drop_nulls().n_unique() > 1 and gone["exit_code"].n_unique() == 1 and d["_t"] is None:
        return None  # (several ranks ended alike, no clock: which came first is not shown)
    w = wd.row(0, named=True)
    what = ((w["op"] or "a collective").upper() + (f" {seq_said(w['seq'])}" if w["seq"] is not None else "")
            + (f" of process group {w['pg']}" if w["pg"] is not None else "")
            + (f" after {w['timeout_ms'] / 1000:g} s" if w["timeout_ms"] else ""))
    how = ("its line's time is before their timeout" if d["_t"] is not None and wd["_t"].drop_nulls().len()
           else "it is logged before their timeout" if d["exit_code"] not in OWN_FAULTS
           else "a signal of its own fault, which no peer's failure sends")
    name = _name(d)
    return Verdict(Kind.CRASHED_RANK, f"{name} ended first: exit code {d['exit_code']} ({meaning(d['exit_code'])}) "
                   f"(`{clip(d['message'], 120)}`; {how}); {who(waiting)} then timed out in {what}, waiting for "
                   f"it: had it been in that collective its watchdog would have fired with theirs; its own log and "
                   "its host (dmesg -T) say why it ended",
                   [d["rank"]] if d["rank"] is not None else [], lines(gone, 2) + lines(wd, 3))


def ends_said(ev: Evidence) -> str:
    """For an undecided timeout: the other processes' ends in view, whose order against the timeout is not
    shown (``; rank 2 (local rank 2, pid 9) ended: exit code -9 (SIGKILL), before or after the timeout the
    excerpt does not show``)."""
    wd = _timeouts(ev)
    waiting = sorted(set(wd["rank"].to_list())) if wd.height else []
    e = ends(ev, waiting)
    if not e.height:  # (stall33: an abort or a stop of a rank not seen waiting is said too, as what it is)
        e = _any_end(ev, waiting)
    if not e.height:
        return ""
    from tracekit.rules_exit import _name, meaning
    d = e.row(0, named=True)
    return (f"; {_name(d)} ended: exit code {d['exit_code']} ({clip(meaning(d['exit_code']), 60)}); whether "
            "before the timeout (its cause: a crashed rank) or after it, the excerpt does not show")


def _any_end(ev: Evidence, waiting: list[int]) -> pl.DataFrame:
    """Ends with a non-zero code of a named rank not seen timing out, whatever the code (an abort, a stop): for a
    summary to say, never to decide by."""
    return (ev.kinds(EventKind.CHILD_FAILED, EventKind.RANK_EXIT)
            .filter(pl.col("exit_code").is_not_null() & (pl.col("exit_code") != 0) & pl.col("rank").is_not_null()
                    & ~pl.col("rank").is_in(waiting)).sort("file", "line"))
