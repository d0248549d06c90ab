"""(s32) Whether a pace that ``pace.trend`` reads as slower only moves: a time per step (or a rate) whose last
third is slower than its first because of slow steps that come and go (an evaluation, a checkpoint save, a compile
or a warm-up inside the lines compared), not because the run slows down. rules_bench.pace_trend asks it before
it says slow: a run whose latest line is back at its early pace, or that was as slow before and came back, is not
slowing down (the issue 31 blind split: healthy runs read slow on such lines)."""

from __future__ import annotations

import polars as pl

from tracekit import pace

#: (s32) a figure within this many times the early pace is back at it
BACK = 1.5
#: (s32) an earlier line at this share of the late pace or more reached it already
REACHED = 0.8


def moves_back(ticks: pl.DataFrame) -> bool:
    """(s32) Whether the pace that ``pace.trend`` read as slower moves, not trends: the last line is back within
    ``BACK`` of the early pace (a slow eval, save or compile step inside the last third), or an earlier line
    was already as slow as the late pace and the pace came back after it (a periodic slow step that the last
    third caught again). Read on the loop's lines, the first left out as ``pace.trend`` does (warm-up)."""
    got = pace._figure(pace._loop_only(ticks))
    if got is None:
        return False
    what, f = got
    v = f[what] if what == "took" else 1 / f[what]  # (a time, or a rate as its inverse: higher is slower)
    v = v.slice(1) if v.len() > 4 else v
    k = max(1, v.len() // 3)
    early, late = v.head(k).median(), v.tail(k).median()
    if not early or late < pace.TREND * early:
        return False
    before = v.head(v.len() - k)
    slow_at = [i for i, x in enumerate(before.to_list()) if x >= REACHED * late]
    came_back = bool(slow_at) and before.slice(slow_at[0] + 1).le(BACK * early).any()
    return bool(v[-1] <= BACK * early or came_back)
