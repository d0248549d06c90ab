"""A rank busy outside any collective while the others time out in one: the program said it began a
phase that issues no collective (an evaluation, a checkpoint's save; ``work_phases`` holds the words,
read from the code that prints them) and said nothing after it -- no end of the phase, no step, no
progress -- before c10d's watchdogs of other ranks fired in one collective. The rank in the phase never
issued that collective: a DEADLOCK (rank 0 alone evaluates or saves, the others wait for it), whether the
phase hangs or only outlasts the timeout."""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.work_phases import EVAL_BAR
from tracekit.wording import who

#: what each phase is, said in the verdict
DOING = {"eval": ("an evaluation", "evaluation"), "checkpoint": ("a checkpoint's save", "save")}


def _phase_lines(ev: Evidence) -> pl.DataFrame:
    """Progress events with the phase they say (``_phase``) and whether they end it (``_ends``): the
    phase lines of ``work_phases``, an evaluation loop's bar (unfinished: it begins or goes on; at 100%:
    it ends), and any other step or progress line (the program went on: it ends whatever phase came
    before it)."""
    p = ev.kinds(EventKind.STEP, EventKind.PROGRESS)
    where = pl.col("where").fill_null("")
    bar = pl.col("message").fill_null("").str.contains(EVAL_BAR)
    done = pl.col("step").is_not_null() & (pl.col("step") == pl.col("max_steps"))
    return p.with_columns(
        pl.when(where.is_in(list(DOING))).then(where)
        .when(where.str.ends_with("_end")).then(where.str.replace("_end$", ""))
        .when(bar).then(pl.lit("eval")).otherwise(pl.lit(None, pl.Utf8)).alias("_phase"),
        (where.str.ends_with("_end") | (bar & done) | (~bar & ~where.is_in(list(DOING)))).alias("_ends"))


def busy_in_phase(ev: Evidence) -> Verdict | None:
    """Ranks timed out in one collective (one process group, one SeqNum, or one op where no SeqNum is
    printed), and the last line of their file before the first timeout that says where the program is
    says it began an evaluation or a checkpoint's save and nothing ended it. The phase is not one of the
    ranks that timed out (a phase line of one of them is that rank's own, and it did reach the
    collective): the rank in the phase never issued it."""
    wd = ev.kinds(EventKind.WATCHDOG_TIMEOUT).sort("file", "line")
    if not wd.height or ev.finished:
        return None
    at = wd.select(pl.col("pg").fill_null("0"), "seq", pl.col("op").str.to_uppercase()).unique()
    if at.height != 1:
        return None  # (timeouts in several collectives: the waits rules compare them)
    first = wd.row(0, named=True)
    before = _phase_lines(ev).filter((pl.col("file") == first["file"]) & (pl.col("line") < first["line"]))
    if not before.height:
        return None
    last = before.sort("line").row(-1, named=True)
    if last["_phase"] is None or last["_ends"]:
        return None
    waiting = sorted(set(wd["rank"].drop_nulls().to_list()))
    r = last["rank"]
    if r is not None and r not in waiting:
        busy, whose = r, f"rank {r}"
    elif r != 0 and 0 not in waiting:  # (a rank the line inherits from its file: these loggers are rank 0's)
        busy, whose = 0, "rank 0 (these loggers print on rank 0 alone; a line's rank may be its file's)"
    else:
        return None  # (the rank that logged the phase reached the collective: not the one missing)
    what = ((first["op"] or "a collective").upper() + (f" SeqNum {first['seq']}" if first["seq"] is not None
                                                         else "")
            + (f" of process group {first['pg']}" if first["pg"] is not None else ""))
    after = f" after {first['timeout_ms'] / 1000:g} s" if first["timeout_ms"] else ""
    doing, word = DOING[last["_phase"]]
    summary = (f"{who(waiting) if waiting else 'a rank'} timed out in {what}{after} while {whose} was in "
               f"{doing}: it logged `{clip(last['message'], 90)}` and nothing after it (no end of it, no step) "
               f"before the timeouts, so rank {busy} never issued {what}: the others wait for it "
               f"in a collective it does not reach until its {word} ends; {doing} that "
               "outlasts the timeout (a slow disk, a large model) or hangs: a timeout longer than the "
               "phase (init_process_group(timeout=...)), or the phase on every rank")
    return Verdict(Kind.DEADLOCK, summary, [busy], lines(before.tail(1), 1) + lines(wd, 3))
