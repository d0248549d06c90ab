"""The progress rules: a run that still moves (slow between dumps, slow steps), a rank the others
wait for (straggler), a healthy run (positive evidence from every rank), a clean end on only some
ranks, and ``nothing``: what was seen when no rule fires."""

from __future__ import annotations

import math

import polars as pl

from tracekit import sources
from tracekit.evidence import Evidence, lines
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.rules_common import COLLECT, count_rows, late_text
from tracekit.wording import who


def slow_progress(ev: Evidence) -> Verdict | None:
    """FR dumps of one rank, taken at different times, whose frontier moved: slow, not hung."""
    m = ev.motion
    if not m.height:
        return None
    moved = (m.filter(pl.col("last") > pl.col("first"))
             .with_columns((pl.col("last") - pl.col("first")).alias("dseq")))
    if not moved.height:
        return None
    rate = (moved["dseq"] / moved["dt"].clip(lower_bound=1e-9)).median()
    per_coll = (moved["bytes"] / moved["dseq"]).median()
    took = (ev.kinds(EventKind.STEP)["message"].str.extract(r"'elapsed_s': ([\d.]+)", 1)
            .cast(pl.Float64, strict=False).drop_nulls())
    step_s = f"; steps took {took.median():.1f} s each" if took.len() else ""
    gbps = (moved["bytes"] / moved["dt"].clip(lower_bound=1e-9)).median() / 1e9
    # a figure that cannot be worked out (no sizes recorded) is left out, never printed as 0.0
    size = (f", {_bytes(per_coll)} per collective, {_bytes(gbps * 1e9)}/s through each rank"
            if per_coll and per_coll > 0 else "")
    late = late_text(ev)
    ranks = moved["rank"].sort().to_list()
    each = [f"rank {r['rank']}: seq {r['first']} -> {r['last']} over {r['dt']:.1f}s across {r['dumps']} dumps"
            for r in moved.sort("rank").iter_rows(named=True)]
    v = Verdict(Kind.SLOW_PROGRESS, (f"{late}; " if late else "") + "sequence numbers advanced between dumps "
                f"on {moved.height} rank(s): about {rate:.2f} collectives/s{size}{step_s}; "
                f"the run is slow, not hung" + (" (and it finished)" if ev.finished else ""),
                [ev.late["rank"]] if late else ranks, ([late] if late else []) + each[:6])
    if ev.missing:
        v.notes.append("the ranks' frontiers differ only by when each was dumped: " + (
            "every launcher exited with code 0" if ev.finished
            else "every rank advanced between its last two dumps"))
    return v


def _bytes(n: float) -> str:
    """``17.0 MB``, ``33 KB``, ``4 B``: a size in the unit that shows it."""
    for unit, k in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= k:
            return f"{n / k:.1f} {unit}" if n < 100 * k else f"{n / k:.0f} {unit}"
    return f"{n:.0f} B"


def straggler(ev: Evidence, min_collectives: int = 20, share: float = 0.6) -> Verdict | None:
    """One rank enters most collectives last (clock offsets per host removed), by a margin that
    matters. Needs enqueue times of every rank (Flight Recorder, Kineto)."""
    known = pl.col("start_ns").is_not_null() & pl.col("rank").is_not_null() & pl.col("seq").is_not_null()
    c, source = sources.best_lazy(ev.store.collectives.lazy(), sources.TIMED, known,
                                  ("rank", "pg", "seq", "host", "start_ns", "end_ns"))
    if not source:
        return None
    c = sources.on_one_clock(c.unique(["rank", "pg", "seq"]), {"start_ns": "t"})
    n = c.group_by("pg", "seq").agg(pl.col("rank").n_unique().alias("n"))
    full = c.join(n.filter(pl.col("n") == n["n"].max()), on=["pg", "seq"], how="semi")
    if full["rank"].n_unique() < 2:
        return None
    lag_ms = ((pl.col("t").max() - pl.col("t").median()) / 1e6).alias("lag_ms")
    last = full.sort("t").group_by("pg", "seq").agg(pl.col("rank").last().alias("late"), lag_ms)
    if last.height < min_collectives:
        return None
    top = (last.group_by("late").agg(pl.len().alias("times"), pl.col("lag_ms").median())
           .sort("times", descending=True).row(0, named=True))
    # some rank is last by chance in 1/R of them: ask for 3 standard deviations above that too
    # (with 2 ranks, one of them is last in 60% of 20 collectives half the time)
    chance = 1 / full["rank"].n_unique()
    need = max(share, chance + 3 * math.sqrt(chance * (1 - chance) / last.height))
    if top["times"] < need * last.height or top["lag_ms"] < 5.0:  # 1-2 ms is scheduling noise on a busy CPU
        return None
    return Verdict(Kind.STRAGGLER, f"rank {top['late']} enters {top['times']} of {last.height} collectives "
                   f"last, a median {top['lag_ms']:.1f} ms after the others: the others wait for it every "
                   "time",
                   [top["late"]], [f"{source}: rank {top['late']} last in {top['times']}/{last.height} "
                                   f"collectives (median lag {top['lag_ms']:.1f} ms)"])


def straggler_by_wait(ev: Evidence) -> Verdict | None:
    """Without a clock shared by the ranks: one rank spends least time in most collectives, the others
    wait for it (each rank's own durations)."""
    late = late_text(ev)
    if not late or ev.failure_signs:
        return None
    return Verdict(Kind.STRAGGLER, late, [ev.late["rank"]], [late])


def slow_steps(ev: Evidence) -> Verdict | None:
    """Steps that still advance, one of them far slower than the others (their timestamps or their
    own per-step times), and no error: slow, not hung."""
    slow = ev.pace["slow"]
    if not slow or ev.trouble.height or ev.failure_signs:
        return None
    text, file, line = slow
    return Verdict(Kind.SLOW_PROGRESS, f"{text}: the run is slow, not hung (steps advanced "
                   f"{ev.steps['step'].min()} -> {ev.steps['step'].max()}, no error logged)",
                   [], [Cited(file, line, text)])


def steady_progress(ev: Evidence) -> Verdict | None:
    """Steps advance at a steady pace and nothing else is logged but calm lines: healthy, though only
    some ranks log steps (and no rank of a known world is known to have left no file). A synchronous
    job's steps advance only while every rank of it takes part in its collectives, so the ranks that
    do not log are moving too."""
    if (not ev.progressed or ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.missing
            or ev.mismatches):
        return None
    if ev.coverage.missing:
        return None  # ranks of the world known to have left no file: what they logged is not known
    pace, rate = ev.pace["per_step_s"], ev.pace["rate"]
    if ev.steps.height < 2 or ev.pace["slow"] or ev.pace["falling"] or (pace is None and rate is None):
        return None  # a pace that cannot be measured might hide a stall between two step lines
    steady = f" at a steady {pace:.1f} s per step" if pace else f" at a steady throughput ({rate:g})"
    return Verdict(Kind.HEALTHY, f"{'; '.join(ev.progressed[:2])}" + steady
                   + " and no error, signal or stall is logged: the steps of a synchronous job advance only "
                   f"while every rank takes part ({ev.coverage.describe()})", [],
                   lines(ev.steps.sort("step"), 2))


def healthy(ev: Evidence) -> Verdict | None:
    """Positive evidence of a clean run: a clean end or progress (or Flight Recorder dumps that show
    every group healthy), every rank of the world seen."""
    windows = [w.message for w in ev.windows]
    good = ev.clean_end or ev.progressed or windows
    if not good or not ev.coverage.complete:
        return None
    what = "; ".join((ev.clean_end + ev.progressed + windows)[:3])
    return Verdict(Kind.HEALTHY,
                   f"every rank of {ev.coverage.world_size} seen, no failure logged, and {what}", [], [])


def clean_but_partial(ev: Evidence) -> Verdict | None:
    """A clean end or progress on the ranks seen, but not every rank seen (or the world size unknown)."""
    good = ev.clean_end or ev.progressed
    if not good:
        return None
    if ev.pace["falling"]:
        text, file, line = ev.pace["falling"]
        return Verdict(Kind.UNDECIDED, f"{'; '.join(good[:2])}, but {text}: a stall between those steps or a "
                       f"slower phase; the step lines' timestamps or per-step times decide it "
                       f"({ev.coverage.describe()})", [], [Cited(file, line, text)])
    return Verdict(Kind.UNDECIDED, "what was seen ended cleanly or progressed "
                   f"({'; '.join((ev.clean_end + ev.progressed)[:2])}), but only {ev.coverage.describe()}: "
                   "the other ranks' logs decide it", [], [])


def nothing(ev: Evidence) -> Verdict:
    """No rule fired: say what was seen and what would decide it."""
    n = count_rows(ev.store.collectives)
    errors = ev.kinds(EventKind.NCCL_WARN, EventKind.C10D_ERROR, EventKind.EXCEPTION, EventKind.CRASH,
                      EventKind.STALL, EventKind.RANK_MISSING, EventKind.WATCHDOG_ABORT)
    seen = [f"{n} collective record(s)" if n else "no collective record",
            f"{errors.height} error line(s) no rule explains" if errors.height else "no sign of failure"]
    done = ev.store.comms.filter(pl.col("state") == "init_complete")
    if done.height and not n and not errors.height:
        # the last thing the log says is that init completed: stuck right after it, or the log ends there
        r = done["rank"].drop_nulls().unique().sort().to_list()
        said = done.with_columns(pl.lit("Init COMPLETE").alias("message"))
        return Verdict(Kind.UNDECIDED, f"{who(r) if r else 'the processes seen'} finished NCCL init "
                       f"({done.select('comm').n_unique()} communicator(s)) and logged nothing after: no "
                       f"collective, no error, no step ({ev.coverage.describe()}); whether they hang in the "
                       "first collective or the log ends there is not in it: a stack dump of every rank "
                       "(py-spy dump) and NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=COLL decide it", [],
                       lines(said, 2))
    return Verdict(Kind.UNDECIDED, f"{' and '.join(seen)}, but no clean end or progress to call it healthy "
                   f"({ev.coverage.describe()}): {COLLECT}", [], lines(errors, 4))
