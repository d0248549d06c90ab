"""The rules over the collectives' own timing (split from rules_progress.py in session 28): Flight Recorder
dumps of a rank taken at different times whose frontier moved (slow, not hung), one rank that enters most
collectives last by a margin that outlasts a busy CPU's jitter (straggler, ``figures.latest_rank``), and a
rank the others wait for by its own durations (``straggler_by_wait``)."""

from __future__ import annotations

import math

import polars as pl

from tracekit import figures
from tracekit.evidence import Evidence
from tracekit.outcome import Kind, Verdict
from tracekit.rules_common import late_text


def slow_progress(ev: Evidence) -> Verdict | None:
    """FR dumps of one rank, taken at different times, whose frontier moved: slow, not hung."""
    m = ev.motion
    if not m.height:
        return None
    moved = (m.filter(pl.col("last") > pl.col("first"))
             .with_columns((pl.col("last") - pl.col("first")).alias("dseq")))
    if not moved.height:
        return None
    # one figure, one value: the rate and step time diff, the plots and the report show (figures.py)
    rate = figures.collective_rate(ev.store).value
    if rate is None:  # (fewer than figures.MIN_COLLECTIVES timed per rank: the dumps' own motion)
        rate = (moved["dseq"] / moved["dt"].clip(lower_bound=1e-9)).median()
    per_coll = (moved["bytes"] / moved["dseq"]).median()
    step = figures.step_median(ev.store)
    step_s = f"; steps took {step.value:.1f} s each" if step.value is not None else ""
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
    top = figures.latest_rank(ev.store)  # one figure, one value: the straggler plot draws the same
    if top is None or top["of"] < min_collectives:
        return None
    # some rank is last by chance in 1/R of them: ask for 3 standard deviations above that too
    # (with 2 ranks, one of them is last in 60% of 20 collectives half the time)
    chance = 1 / figures.lateness(ev.store)[0]["rank"].n_unique()
    need = max(share, chance + 3 * math.sqrt(chance * (1 - chance) / top["of"]))
    if top["times_last"] < need * top["of"]:
        return None
    # late by more than the noise in a quarter of them: a few hiccups of a busy CPU (4 of 24 by 6 ms, a
    # rank otherwise last by 0.1 ms) are not a rank that makes the others wait
    if top["times_late"] < max(3, top["of"] / 4):
        return None
    # (s28) and in as many delays of its own: collectives launched back to back carry one delay (a busy CPU
    # that held the rank once), so late ones count once per burst (``figures.rank_lateness``): a straggler is
    # late again after each gap it had time to catch up in, in a quarter of its bursts or more
    if top["late_spells"] < max(3, top["bursts"] / 4):
        return None
    r, of, noise = top["rank"], top["of"], f"{figures.NOISE_MS:g} ms"
    return Verdict(Kind.STRAGGLER, f"rank {r} enters {top['times_last']} of {of} collectives last, "
                   f"{top['times_late']} of them more than {noise} after the median rank, in "
                   f"{top['late_spells']} separate delays of {top['bursts']} bursts (a median "
                   f"{top['late_when_late_ms']:.1f} ms then; {top['late_ms']:.1f} ms over all {of}): the "
                   "others wait for it", [r],
                   [f"{top['source']}: rank {r} last in {top['times_last']}/{of} collectives, "
                    f"{top['times_late']} by more than {noise}"])


def straggler_by_wait(ev: Evidence) -> Verdict | None:
    """Without a clock shared by the ranks: one rank spends least time in most collectives, the others
    wait for it (each rank's own durations)."""
    late = late_text(ev)
    if not late or ev.failure_signs:
        return None
    return Verdict(Kind.STRAGGLER, late, [ev.late["rank"]], [late])
