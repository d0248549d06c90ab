"""A bandwidth check's own tally against the threshold it states (parsers/bw_checks.py, session 31).

A health check that measured every node (or pair) and counts none under its own threshold says the links
measured give what the check asks: healthy, with its threshold and counts. One that counts some under it has
measured a slowness against a stated figure, or a failure it folds into the same count (``or failed``):
undecided, with the count said; which nodes and why are in its lines above the tally.
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.rules_common import calm


def bandwidth_check(ev: Evidence) -> Verdict | None:
    """The check's tally: 0 under its threshold and some at or above it, nothing but calm lines: healthy; some
    under it: undecided, with the count."""
    rows = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "bandwidth_check").sort("file", "line")
    if not rows.height or not calm(ev, init_done=True):
        return None
    under, at = rows.filter(pl.col("op") == "under"), rows.filter(pl.col("op") == "at")
    if not under.height or not at.height:
        return None  # (one side of the tally alone: what the other holds is not said)
    measured = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "benchmark")["busbw_gbs"].drop_nulls()
    figures = (f"; its measured figures {measured.min():g}-{measured.max():g} GB/s" if measured.len() else "")
    cited = [Cited(r["file"], r["line"], r["message"]) for r in rows.head(2).iter_rows(named=True)]
    said = "; ".join(f"`{m}`" for m in rows["message"].head(2))
    if under["numel"].sum() == 0 and at["numel"].sum() > 0:
        return Verdict(Kind.HEALTHY, f"the bandwidth check's own tally: {at['numel'].sum()} at or above its "
                       f"threshold of {at['busbw_gbs'][0]:g} GB/s and none under it or failed ({said}){figures}; "
                       "no error, signal or stall is logged: the links it measured give what it asks "
                       f"({ev.coverage.describe()})", [], cited)
    return Verdict(Kind.UNDECIDED, f"the bandwidth check's own tally: {under['numel'].sum()} under its threshold "
                   f"of {under['busbw_gbs'][0]:g} GB/s or failed ({said}){figures}: slow links or a failed test, "
                   "which its lines above the tally say per node; rerun the check on those nodes alone "
                   f"({ev.coverage.describe()})", [], cited)
