"""A collective's figures that a benchmark or a script printed itself, outside nccl-tests (session 31).

A user's all-reduce benchmark (stas00's and BigScience's all_reduce_bench.py, per rank or by rank 0 alone),
DeepSpeed's comms logger (``comm op: all_reduce | time (ms): 9.46 | msg size: 678.86 MB | algbw (Gbps): ...
| busbw (Gbps): ...``, deepspeed/utils/comms_logging.py, logged by rank 0 only) and a script's
``size=1.00 MB time=0.061 ms algbw=17.19 GB/s busbw=30.08 GB/s`` time a collective and print its figure once it
returned. A collective (all-reduce, all-gather, reduce-scatter, all-to-all, broadcast) returns on a rank only
once every rank of its group took part: one rank's figure says the collective completed on all of them, so
the ranks that printed nothing are no gap, unlike a training's step lines (rules_results.benchmark_result asks
every rank's record of figures that are no collective's).

HEALTHY where every figure is a collective's, the figures of the ranks that print agree (each rank's last
trial: a benchmark's first trials warm up), and nothing but calm lines are logged. Slow wants a yardstick
(a link rate stated, a bus bandwidth that falls by half across sizes, a collective under what any GPU
interconnect carries at large sizes): those are rules_measured's and rules_nccl_tests' and come first; this
rule leaves every such case, and ranks that disagree, to them and to rules_results.
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.parsers.series import template
from tracekit.rules_common import calm
from tracekit.rules_measured import APART, COLLECTIVE, _tool, warnings
from tracekit.rules_nccl_tests import LARGE, LOW_BUSBW, ONE_NIC_GBS, _fall, _nodes, _size
from tracekit.wording import fmt_ranks

#: a line that gives a collective's figure: the collective named, or a bus or algorithm bandwidth (a
#: collective's own measures: nccl-tests' doc/PERFORMANCE.md)
COLLECTIVE_SAID = COLLECTIVE + r"|(?i)\b(?:busbw|algbw|bus ?bandwidth|algo throughput)\b"
#: the ranks' last figures of one line agree: the largest at most this many times the smallest
EVEN = 1.5
#: where to compare a figure, where the log names no link's speed
YARDSTICK = ("compare it with the links it crosses: NVLink (H100: ~450 GB/s of bus bandwidth in a node), a "
             "400 Gb/s NIC (~48 GB/s), a 100 Gb/s NIC (~12 GB/s), TCP through the kernel (a few GB/s)")


def collective_measured(ev: Evidence) -> Verdict | None:
    """Every measured figure a collective's (``COLLECTIVE_SAID``), the ranks that print it even, no
    yardstick that says slow, nothing but calm lines: the collectives completed on every rank of their
    group; healthy, with the figures."""
    rows = ev.kinds(EventKind.BANDWIDTH).filter(
        (pl.col("where") == "benchmark") & pl.col("busbw_gbs").is_not_null()).sort("file", "line")
    # (the figures' own lines are read as progress ticks too, their rates and times: only step lines, a
    # training's, leave the pace to its rules)
    if (not rows.height or not calm(ev, init_done=True) or ev.steps.height
            or ev.kinds(EventKind.TEST_WRONG).height or warnings(ev, rows.row(0, named=True))[1]):
        return None  # (a training's pace, a wrong value, an error after the first figure: others decide)
    said = pl.col("message").str.contains(COLLECTIVE_SAID) | pl.col("op").fill_null("").str.contains(COLLECTIVE)
    if not rows.select(said.all()).item():
        return None  # (a figure of no collective, a copy's or a point-to-point's: its own rules)
    if ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "link_rate").height:
        return None  # (a link's rate stated: rules_measured compares the figures with it)
    rows = rows.with_columns(template(pl.col("message")).alias("_shape"))
    if _uneven(rows) or _apart(rows) or _slow_sizes(rows):
        return None
    bus = rows.filter(pl.col("message").str.contains(r"(?i)\bbusbw|bus ?bandwidth"))
    top = (bus if bus.height else rows).sort("busbw_gbs").row(-1, named=True)
    spans, _ = _nodes(ev)
    if top["busbw_gbs"] < LOW_BUSBW or (spans and top["busbw_gbs"] < ONE_NIC_GBS):
        # (under what any GPU interconnect carries, or across nodes under one 400 Gb/s NIC: whether that is
        # the links' limit or slow the log does not say here; left to the rules after, undecided)
        return None
    ranks = rows["rank"].drop_nulls().unique().sort().to_list()
    who = (f"by {'rank' if len(ranks) == 1 else 'ranks'} {fmt_ranks(ranks)}" if ranks else "by the benchmark")
    sized = rows.filter(pl.col("bytes").is_not_null())
    span = (f" over {sized['bytes'].n_unique()} size(s) ({_size(sized['bytes'].min())} - "
            f"{_size(sized['bytes'].max())})" if sized.height else "")
    at = f" at {_size(top['bytes'])}" if top["bytes"] is not None else ""
    return Verdict(Kind.HEALTHY, f"{_tool(rows)} printed {rows.height} measured figure(s) of a collective"
                   f"{span} {who}, up to {top['busbw_gbs']:.4g} GB/s{at} (`{top['message'][-100:]}`); a "
                   "collective returns only once every rank of its group took part, so each figure says it "
                   "completed on all of them, and the ranks that print agree; no error, signal or stall is "
                   f"logged: healthy; whether that is fast enough is the links' question: {YARDSTICK} "
                   f"({ev.coverage.describe()})", [],
                   [Cited(top["file"], top["line"], top["message"]),
                    Cited(rows[-1, "file"], rows[-1, "line"], rows[-1, "message"])])


def _uneven(rows: pl.DataFrame) -> bool:
    """Whether the ranks' last figures of one line differ by ``EVEN`` or more (a rank that lags)."""
    last = (rows.filter(pl.col("rank").is_not_null()).group_by("_shape", "rank", maintain_order=True)
            .agg(pl.col("busbw_gbs").last()).group_by("_shape")
            .agg(pl.len().alias("n"), pl.col("busbw_gbs").max().alias("hi"), pl.col("busbw_gbs").min().alias("lo")))
    return last.filter((pl.col("n") > 1) & (pl.col("hi") > EVEN * pl.col("lo"))).height > 0


def _apart(rows: pl.DataFrame) -> bool:
    """Whether one line printed with no size and no rank comes at figures ``APART`` times apart or more
    (runs at another scale side by side: rules_measured._repeated_apart says it)."""
    plain = rows.filter(pl.col("bytes").is_null() & pl.col("rank").is_null())
    spread = plain.group_by("_shape").agg(pl.len().alias("n"), pl.col("busbw_gbs").max().alias("hi"),
                                          pl.col("busbw_gbs").min().alias("lo"))
    return spread.filter((pl.col("n") > 1) & (pl.col("lo") > 0) & (pl.col("hi") >= APART * pl.col("lo"))).height > 0


def _slow_sizes(rows: pl.DataFrame) -> bool:
    """Whether the sized figures say slow: under ``LOW_BUSBW`` at large sizes, or a bus bandwidth that falls
    by half past its peak and stays there (rules_nccl_tests._fall)."""
    sized = rows.filter(pl.col("bytes").is_not_null())
    if not sized.height:
        return False
    large = sized.filter(pl.col("bytes") >= LARGE)
    if large.height and 0 < large["busbw_gbs"].max() < LOW_BUSBW:
        return True
    return any(_fall(g.select("bytes", "busbw_gbs", "file", "line", "message")) is not None
               for _, g in sized.group_by("_shape") if g["bytes"].n_unique() > 2)
