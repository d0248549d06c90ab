"""A rank busy outside any collective while the others time out in one: the program said it began a
phase that issues no collective (an evaluation, a checkpoint's save; ``work_phases`` holds the words,
read from the code that prints them) and said nothing after it -- no end of the phase, no step, no
progress -- before c10d's watchdogs of other ranks fired in one collective. The rank in the phase never
issued that collective: a DEADLOCK (rank 0 alone evaluates or saves, the others wait for it), whether the
phase hangs or only outlasts the timeout."""

from __future__ import annotations

import polars as pl

from tracekit import ended_first, rules_apart
from tracekit.evidence import Evidence, clip, lines
from tracekit.facts_in_view import seq_said
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.rules_common import stack_lines
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
    where = pl.col("where").fill_null("").str.replace(":own$", "")  # (`:own`: its rank is its prefix's)
    bar = pl.col("message").fill_null("").str.contains(EVAL_BAR)
    done = pl.col("step").is_not_null() & (pl.col("step") == pl.col("max_steps"))
    return p.with_columns(
        pl.when(where.is_in(list(DOING))).then(where)
        .when(where.str.ends_with("_end")).then(where.str.replace("_end$", ""))
        .when(bar).then(pl.lit("eval")).otherwise(pl.lit(None, pl.Utf8)).alias("_phase"),
        (where.str.ends_with("_end") | (bar & done) | (~bar & ~where.is_in(list(DOING)))).alias("_ends"),
        pl.col("where").fill_null("").str.ends_with(":own").alias("_own"))


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
    elif not last["_own"] and r != 0 and 0 not in waiting:  # (a rank inherited from its file: the line is rank 0's)
        busy, whose = 0, "rank 0 (these loggers print on rank 0 alone; a line's rank may be its file's)"
    else:
        return None  # (the rank that logged the phase reached the collective: not the one missing)
    what = ((first["op"] or "a collective").upper() + (f" {seq_said(first['seq'])}" if first["seq"] is not None
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


#: what a rank's line says of its end: a rank that logged one of these was not alive elsewhere
ENDED = (EventKind.CRASH, EventKind.EXCEPTION, EventKind.CUDA_ERROR, EventKind.SIGNAL, EventKind.RANK_EXIT,
         EventKind.CHILD_FAILED, EventKind.WATCHDOG_TIMEOUT, EventKind.WATCHDOG_ABORT, EventKind.WATCHDOG_STATUS,
         EventKind.C10D_ERROR, EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR, EventKind.CLEAN_EXIT,
         EventKind.PROGRAM_END)


def absent_but_alive(ev: Evidence) -> Verdict | None:
    """Every rank of a group but one timed out in one collective (``rules_apart.absent_one``: had the one
    been in it, its watchdog would have fired with theirs), and the one shows it was alive while they
    waited: a stack of its own outside any collective, or a line of its own after their first timeout (a
    step, a log line; no error, signal or end of it). It never issued the collective and it had not ended:
    DEADLOCK naming it, with its frame where a stack says it. (Without such a sign it stays UNDECIDED in
    ``timed_out``: a rank that ended and one stuck elsewhere leave the same waits.)"""
    found = rules_apart.absent_one(ev)
    if found is None or ev.finished:
        return None
    absent, n, seen, w = found
    own = ev.store.events.filter(pl.col("rank") == absent)
    if own.filter(pl.col("kind").is_in(list(ENDED))).height:
        return None
    later = own.filter((pl.col("file") == w["file"]) & (pl.col("line") > w["line"])).sort("line")
    if not later.height:  # (s32) its own line in another file (a log per rank) by the lines' own clocks
        t0 = ev.timeouts.select(ended_first.clock(ended_first.said()).min()).item()
        later = (own.filter((ended_first.clock(ended_first.said()) >= t0).fill_null(False)).sort("file", "line")
                 if t0 is not None else later)
    where = ev.stacks.filter((pl.col("rank") == absent) & ~pl.col("in_c10d"))
    if not (later.height or where.height):
        return None
    what = f"{(w['op'] or '').upper()} {seq_said(w['seq'])}" + (f" of process group {w['pg']}" if w["pg"] != "0"
                                                               else "")
    alive = (f"its stack is in {where['where'][0]}, outside any collective" if where.height
             else f"it logged `{clip(later['message'][0], 90)}` after their first timeout")
    return Verdict(Kind.DEADLOCK, f"rank {absent} never joined {what}{rules_apart.size_text(w)}: {who(seen)} are "
                   f"every other rank of the group of {n} and timed out in it, and rank {absent} was alive while "
                   f"they waited ({alive}): it is stuck or busy outside the collective the others wait in",
                   [absent], stack_lines(where, 2) + lines(later, 2) + lines(ev.timeouts, 3))


def timed_out_after_the_end(ev: Evidence) -> Verdict | None:
    """A rank timed out in a collective after its program said its training ended (Lightning's `Trainer.fit`
    stopped: ...`, the HF Trainer's `{'train_runtime': ...}`), with no crash before the timeout: the
    collective was issued after the end of training, and the abort that follows (`Aborted (core dumped)`,
    c10d's SIGABRT) is the watchdog's own, not a crash that explains it. Said, not decided: ranks that
    ended without it (a collective only some ranks call after the loop) and a rank still busy leave the same
    lines, and on dev the two are labelled alike (dv17-041 deadlock, dv6-004 undecided first)."""
    wd = ev.kinds(EventKind.WATCHDOG_TIMEOUT).sort("file", "line")
    if not wd.height:
        return None
    first = wd.row(0, named=True)
    waiting = sorted(set(wd["rank"].drop_nulls().to_list()))
    mine = pl.col("rank").is_null() | pl.col("rank").is_in(waiting)
    ended = ev.kinds(EventKind.PROGRAM_END, EventKind.TRAIN_END).filter(
        (pl.col("file") == first["file"]) & (pl.col("line") < first["line"]) & mine).sort("line")
    crashes = ev.kinds(EventKind.CRASH, EventKind.CUDA_ERROR, EventKind.EXCEPTION).sort("file", "line")
    before = crashes.filter((pl.col("file") != first["file"]) | (pl.col("line") < first["line"]))
    if not ended.height or before.height:
        return None
    what = ((first["op"] or "a collective").upper() + (f" {seq_said(first['seq'])}" if first["seq"] is not None
                                                         else "")
            + (f" of process group {first['pg']}" if first["pg"] is not None else "")
            + rules_apart.size_text(first))
    after = f" after {first['timeout_ms'] / 1000:g} s" if first["timeout_ms"] else ""
    then = (f"; the abort after it (`{clip(crashes['message'][0], 60)}`) is the watchdog's own (c10d takes the "
            "process down after a timeout), not a crash that explains it" if crashes.height else "")
    return Verdict(Kind.UNDECIDED, f"{who(waiting) if waiting else 'a rank'} timed out in {what}{after} after its "
                   f"training had ended (\"{clip(ended['message'][-1], 70)}\"): a collective issued after the end of "
                   "training that the other ranks did not join: ranks that ended without it (a save, log or "
                   "evaluation on some ranks only after the loop, ranks that left the loop at another step) or a "
                   f"rank still busy{then}; which, only the other ranks' logs say: collect them",
                   waiting, lines(ended.tail(1), 1) + lines(wd, 2) + lines(crashes, 1))
