"""A collective's figures that a benchmark or a script printed itself, outside nccl-tests (session 31).

A user's all-reduce benchmark (stas00's and BigScience's all_reduce_bench.py, per rank or by rank 0 alone),
DeepSpeed's comms logger (``comm op: all_reduce | time (ms): 9.46 | msg size: 678.86 MB | algbw (Gbps): ...
| busbw (Gbps): ...``, deepspeed/utils/comms_logging.py, logged by rank 0 only) and a script's
``size=1.00 MB time=0.061 ms algbw=17.19 GB/s busbw=30.08 GB/s`` time a collective and print its figure once it
returned. A collective (all-reduce, all-gather, reduce-scatter, all-to-all, broadcast) returns on a rank only
once every rank of its group took part: one rank's figure says the collective completed on all of them, so
the ranks that printed nothing are no gap, unlike a training's step lines (rules_results.benchmark_result asks
every rank's record of figures that are no collective's).

HEALTHY where every figure is a collective's, the figures of the ranks that print agree (past the first
trial, which warms up), and nothing but calm lines are logged. Slow wants a yardstick
(a link rate stated, a bus bandwidth that falls by half across sizes, a collective under what any GPU
interconnect carries at large sizes): those are rules_measured's and rules_nccl_tests' and come first; this
rule leaves every such case, ranks that disagree and figures under what TCP gives to them and to
rules_results.
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.parsers.series import template
from tracekit.rules_common import calm
from tracekit.rules_measured import APART, COLLECTIVE, _tool, warnings
from tracekit.rules_nccl_tests import LARGE, LOW_BUSBW, _fall, _size
from tracekit.wording import fmt_ranks

#: a line that gives a collective's figure: the collective named, or a bus or algorithm bandwidth (a
#: collective's own measures: nccl-tests' doc/PERFORMANCE.md)
COLLECTIVE_SAID = COLLECTIVE + r"|(?i)\b(?:busbw|algbw|bus ?bandwidth|algo throughput)\b"
#: GB/s of bus bandwidth under which a collective crosses no GPU fabric: TCP sockets through the kernel reach a
#: few GB/s at best, 1 GB/s on a 10 GbE link
TCP_GBS = 1.0
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
    # (the bus bandwidth where the lines give one: the algorithm bandwidth beside it is the same figure scaled)
    bus = rows.filter(pl.col("message").str.contains(r"(?i)\bbusbw|bus ?bandwidth"))
    if _uneven(bus if bus.height else rows, rows["rank"].n_unique()) or _apart(rows) or _slow_sizes(rows):
        return None
    top = (bus if bus.height else rows).sort("busbw_gbs").row(-1, named=True)
    if top["busbw_gbs"] < TCP_GBS:
        # (under what TCP through the kernel gives: left to the rules after, undecided. A figure of no size
        # above it is the links' measure, healthy with no yardstick stated: dev dv46-007, 32 ranks on 4 Jean
        # Zay nodes at ~5 GB/s busbw each, is labelled healthy; sized figures: _slow_sizes)
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


def _uneven(rows: pl.DataFrame, ranks: int) -> bool:
    """Whether the ranks' figures of one line differ by ``EVEN`` or more (a rank that lags), past the first trial.
    A benchmark's trials run in step on every rank (each is a collective), and the first warms up on all of them:
    with more figures than ``ranks`` (the ranks that print any figure), the first ``ranks`` figures are that trial
    and are left out (by their order, not the rank given them: ranks printing at once put a block inside
    another's)."""
    ranked = rows.filter(pl.col("rank").is_not_null()).sort("file", "line")
    n = pl.lit(ranks)
    later = pl.when(pl.len().over("_shape") > n).then(pl.int_range(pl.len()).over("_shape") >= n).otherwise(True)
    each = (ranked.filter(later).group_by("_shape")
            .agg(pl.col("rank").n_unique().alias("n"), pl.col("busbw_gbs").max().alias("hi"),
                 pl.col("busbw_gbs").min().alias("lo")))
    return each.filter((pl.col("n") > 1) & (pl.col("hi") > EVEN * pl.col("lo"))).height > 0


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
