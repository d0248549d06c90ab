"""Steady progress printed by a program that names no rank, in a world whose size it logs (issue 31, s31).

What it reads: a training or benchmark script that logs its world size once (``world_size: 8``,
``Initialized process group: world_size=8``) and then its own pace on every report (``throughput: 1231.0
samples/s``, ``iteration time: 0.81s``), printed by one process (``if rank == 0: print(...)``, the common
idiom) and naming no rank. ``rules_bench.steady_ticks`` calls such lines healthy where no world size is
logged, but leaves them where a logged world has ranks that "left no record": with no rank named on any
line, that is every rank, the printing one included, so it says nothing of who is missing. Here that case
is HEALTHY for what is seen, as steady_ticks says it: the steps of a synchronous job advance only while
every rank takes part, and the summary says that no line names a rank. Never where any rank is named (then
the ranks not seen are truly unseen), where the pace is not steady, or beside any error, stall, pending
init, mismatch or stack dump.
"""

from __future__ import annotations

from tracekit import file_ranks, pace
from tracekit.evidence import Evidence, lines
from tracekit.outcome import Kind, Verdict


def steady_unnamed(ev: Evidence) -> Verdict | None:
    """HEALTHY where progress lines hold a steady figure (``pace.steady`` or ``pace.holds``), the world size
    is logged, no line names a rank, and nothing but calm lines are logged."""
    cov = ev.coverage
    if not file_ranks.names_no_rank(ev) or not cov.world_size or cov.world_size < 2:
        return None  # (a rank named: the others' absence is real; steady_ticks decides the rest)
    if (ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.missing or ev.mismatches
            or ev.pending.height or ev.stacks.height or ev.pace["slow"] or ev.pace["falling"]):
        return None
    t = ev.ticks
    st = None if pace.stopped(t) else pace.steady(t) or pace.holds(t)
    if st is None:
        return None
    return Verdict(Kind.HEALTHY, f"the program's own progress lines hold at {st['text']} and no error, signal "
                   f"or stall is logged; the world size is {cov.world_size} and no line names a rank (one "
                   "process, usually rank 0, prints them): the steps of a synchronous job advance only while "
                   f"every rank takes part; this covers what is seen ({cov.describe()})", [], lines(t.tail(2), 2))
