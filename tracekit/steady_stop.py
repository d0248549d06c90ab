"""Whether a run was advancing steadily when something stopped it from outside (a scheduler's cancel, a signal to
the launcher): the step lines before the stop advance, and the last of them is near the stop by the lines' own
clocks. A run stopped while it ran is healthy work interrupted; one whose steps had stopped long before the stop
was hanging, and the stop only ended the hang (read by ``rules_exit``)."""

from __future__ import annotations

import polars as pl

from tracekit.ended_first import clock, said
from tracekit.evidence import Evidence

#: the longest silence between the last step line and the stop, by the lines' own clocks, that still reads as a
#: run stopped while it ran (c10d's default collective timeout: a hang longer than it would have raised)
STEADY_GAP_S = 1800


def steady_until(ev: Evidence, at: pl.DataFrame) -> str | None:
    """``steps 10 to 200 in 20 step lines, ...`` where step lines advance (three step numbers or more) before the first
    line of ``at`` and, where both carry a clock, the last of them is within ``STEADY_GAP_S`` of it (the gap said; where
    they carry none, that said: a hang after the last step line is then not ruled out); else None."""
    first = at.sort("file", "line").row(0, named=True)
    st = ev.steps.filter(pl.col("step").is_not_null()).sort("file", "line")
    st = st.filter((pl.col("file") != first["file"]) | (pl.col("line") < first["line"]))
    if st["step"].n_unique() < 3 or st["step"][-1] != st["step"].max():
        return None
    t_step = st.tail(1).select(clock(said())).item()
    t_stop = at.sort("file", "line").head(1).select(clock(said())).item()
    if t_step is not None and t_stop is not None and not 0 <= t_stop - t_step <= STEADY_GAP_S:
        return None
    gap = (f", the last {t_stop - t_step:.0f} s before the stop" if t_step is not None and t_stop is not None else
           ", the step lines carry no clock: how long before the stop the last one came is not shown")
    return f"steps {st['step'].min()} to {st['step'].max()} in {st.height} step lines{gap}"
