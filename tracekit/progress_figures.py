"""What figure each progress line prints (split from pace.py in session 28): its throughput (a rate after
or before its unit: ``samples/sec: 875.6``, ``875.63 samples/sec``, ``3.2it/s``, SGLang's ``gen throughput
(token/s): 144.95``, vLLM's ``Avg generation throughput: 44.3 tokens/s``) or its time per step (Megatron's
``elapsed time per iteration (ms): 812.4``, tqdm's ``1.52s/it``, Keras' ``31ms/step``), with or without a
step number, as parsers/series.py's ``RATES`` and ``TIMES`` read them.

``ticks`` gives one row per progress line with a figure; ``cumulative`` tells a run's elapsed time (counting
up since the start) from a time per step; ``printed`` quotes the figure in the program's own words. pace.py
judges the pace from these rows.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.parsers import series, timings
from tracekit.schema import EventKind

# the figures a progress line prints: the first of ``RATES`` that matches gives its rate (group 1), its unit
# the first ``RATE_UNIT``; ``TIMES`` its seconds per step (parsers/series.py finds progress lines with them)
RATES, RATE_UNIT, TIMES = series.RATES, series.RATE_UNIT, series.TIMES

#: a step line that reports an evaluation or a checkpoint save (nanoGPT's `step 3000: train loss 4.04, val
#: loss 4.04` before `saving checkpoint to out`, train.py): the time up to it holds that phase, not training
#: steps, so it is never the slow step
PHASE = r"(?i)\bval(?:idation)?[ _]loss\b|\beval(?:uat\w*)?\b|\bcheckpoint\b|\bsav(?:ing|ed)\b"


def number(said: pl.Expr) -> pl.Expr:
    """``1,234.5`` -> 1234.5, ``14.2K`` -> 14200.0 (nanotron's ``tokens_per_sec: 14.2K``)."""
    scale = said.str.extract(r"([KMG])$", 1).replace_strict({"K": 1e3, "M": 1e6, "G": 1e9}, default=1.0,
                                                            return_dtype=pl.Float64)
    return said.str.replace_all(r"[,KMG]", "").cast(pl.Float64, strict=False) * scale


def first_figure(text: pl.Expr, patterns) -> pl.Expr:
    """The figure of the first of ``patterns`` (regex, factor) that matches, times its factor."""
    return pl.coalesce(*(number(text.str.extract(p, 1)) * f for p, f in patterns))


def as_printed(text: pl.Expr, patterns) -> pl.Expr:
    """The figure as the line prints it (``3.169 sec/step``, ``'train_speed(iter/s)': 0.011176``): the
    whole match of the first pattern that matches, so a verdict quotes the program's own words."""
    return pl.coalesce(*(text.str.extract(f"({p.removeprefix('(?i)')})", 1) if not p.startswith("(?i)")
                         else text.str.extract(f"(?i)({p.removeprefix('(?i)')})", 1) for p in patterns))


def ticks(events: pl.DataFrame, each_figure: bool = False) -> pl.DataFrame:
    """The progress lines (``step`` and ``progress`` events, with a step number or not) that carry a
    figure, in the order they were written: ``rate`` (and its ``unit``) or ``took`` (seconds per step),
    ``i`` the line's place among them. A step printed twice (by two loggers) counts once; with
    ``each_figure``, once per figure it carries."""
    st = events.filter(pl.col("kind").is_in([EventKind.STEP, EventKind.PROGRESS])).sort("file", "line")
    if "where" in st.columns:  # (s30: a timing line another parser reads as a step keeps that reading alone)
        timed = timings.is_timing()
        st = pl.concat([st.filter(~timed), st.filter(timed).join(st.filter(~timed), on=["file", "line"],
                                                                   how="anti")]).sort("file", "line")
    if not st.height:
        none = {"rate": pl.Float64, "unit": pl.Utf8, "took": pl.Float64, "took_said": pl.Utf8,
                "rate_said": pl.Utf8, "after_phase": pl.Boolean, "i": pl.UInt32}
        return st.with_columns(pl.lit(None, d).alias(c) for c, d in none.items())
    text = pl.col("message").fill_null("")
    st = st.with_columns(first_figure(text, [(p, 1.0) for p in RATES]).alias("rate"),
                         text.str.extract(RATE_UNIT, 1).alias("unit"),
                         pl.coalesce(first_figure(text, TIMES), pl.col("duration_ms") / 1e3).alias("took"),
                         pl.coalesce(as_printed(text, [p for p, _ in TIMES]),
                                     as_printed(text, timings.TIMED)).alias("took_said"),
                         as_printed(text, RATES).alias("rate_said"))
    st = st.filter(pl.col("rate").is_not_null() | pl.col("took").is_not_null())
    st = st.join(_phases_before(events, st), on=["file", "line"], how="left")
    # (``each_figure``: one step with two figures is two processes' or two runs' lines, WeatherGenerator's
    # 1-node and 2-node `... : 000040 : loss = ... s/sec=0.715)` and `... s/sec=0.350)`: each counts)
    numbered = (st.filter(pl.col("step").is_not_null())
                .unique(["rank", "step", *(["rate", "took"] if each_figure else [])], keep="first",
                        maintain_order=True))
    st = pl.concat([numbered, _one_key_per_block(st.filter(pl.col("step").is_null()))]).sort("file", "line")
    return st.with_row_index("i")


def _one_key_per_block(st: pl.DataFrame) -> pl.DataFrame:
    """(s31) A step's timing block, printed again and again (``forward time: 0.35s``, ``backward time:
    0.52s``, ``optimizer step time: 0.10s``, ``total step time: 0.97s``, once per step): its keys time the
    parts of one step, so read one after the other they are no pace (the part 0.10 s after the whole 0.97 s
    is no step twice as fast, samples/wild's healthy runs read as slow). Where a file's (a rank's) lines
    without a step number carry a time under two keys or more, each printed twice or more, only the key with
    the largest figure (the whole, not a part) is read as the step's time; a rate's lines stay as they are."""
    key = series.template(pl.col("message").fill_null(""))
    timed = pl.col("took").is_not_null() & pl.col("rate").is_null()
    st = st.with_columns(pl.when(timed).then(key).alias("_key"))
    keys = st.filter(pl.col("_key").is_not_null()).group_by("file", "rank", "_key").agg(
        pl.len().alias("_n"), pl.col("took").median().alias("_med"))
    keys = keys.filter(pl.col("_n") >= 2).filter(pl.len().over("file", "rank") >= 2)
    if not keys.height:
        return st.drop("_key")
    whole = keys.sort("_med", descending=True).unique(["file", "rank"], keep="first")
    # (the other keys of those files' blocks: their parts)
    parts = keys.join(whole.select("file", "rank", "_key"), on=["file", "rank", "_key"], how="anti",
                      nulls_equal=True)
    return st.join(parts.select("file", "rank", "_key"), on=["file", "rank", "_key"], how="anti",
                   nulls_equal=True).drop("_key")


def _phases_before(events: pl.DataFrame, ticks: pl.DataFrame) -> pl.DataFrame:
    """``after_phase`` of each progress line with a figure (``file``, ``line``): whether a line of an
    evaluation or a save (``PHASE``, not itself a progress line with a figure) was written in its file
    since the progress line before it. A loop's time per step runs from one report to the next, so it
    holds what ran between them: nanoGPT's train.py measures `dt = t1 - t0` once per iteration (train.py:318)
    and runs `estimate_loss()` (`step N: train loss .., val loss ..`, train.py:265) and the checkpoint save
    (`saving checkpoint to out`, train.py:285) inside that iteration, before its `iter N: loss .., time
    ..ms` line (train.py:327): that line's time is the evaluation's and the save's, not a training step's."""
    keys = ticks.select("file", "line").with_columns(pl.lit(True).alias("_tick"))
    ev = (events.select("file", "line", "message").join(keys, on=["file", "line"], how="left")
          .sort("file", "line"))
    phase = pl.col("message").fill_null("").str.contains(PHASE) & pl.col("_tick").is_null()
    ev = ev.with_columns(phase.cast(pl.Int32).cum_sum().over("file").alias("_n")).filter(pl.col("_tick"))
    before = pl.col("_n") - pl.col("_n").shift(1).over("file").fill_null(0)
    return ev.select("file", "line", (before > 0).alias("after_phase"))


def cumulative(f: pl.DataFrame) -> bool:
    """Times that count up since the start rather than per step (a run's elapsed seconds on each line):
    higher at every line, 4 lines or more, in proportion to the step number where the lines carry one
    (each time over its step within 1.25x of the others), else by an even amount each line (the largest
    rise at most twice the smallest). A time per step that creeps up is never that regular. (s31) Each rank
    counts its own: lines of several ranks interleaved (``[rank1]: iter 10/100 elapsed 5.2s`` then ``[rank0]:
    ... elapsed 5.1s``) rise within each rank, never across them."""
    if {"file", "line"} <= set(f.columns):  # (s32: a line read by two parsers is one reading, not a pause of 0 s)
        f = f.unique(["file", "line"], keep="first", maintain_order=True)
    v = f["took"]
    each = pl.col("took").diff().over("rank") if "rank" in f.columns else pl.col("took").diff()
    d = f.select(each).to_series().drop_nulls()
    if v.len() < 4 or d.len() < 2 or not (d > 0).all():
        return False
    steps = f["step"].cast(pl.Float64)
    if steps.null_count() == 0 and (steps > 0).all():
        per = v / steps
        return bool(per.max() <= 1.25 * per.min())
    return bool(d.max() <= 2 * d.min())


def printed(f: pl.DataFrame, what: str) -> str:
    """`` (as the program prints it: `3.169 sec/step`)``: the figure in its own words, or nothing."""
    said = f[f"{what}_said"].drop_nulls() if f"{what}_said" in f.columns else None
    if said is None or not said.len():
        return ""
    # (a `time` field's match starts at the figure or separator before the word: `6  time: 0.8466`)
    words = re.sub(r"^[^A-Za-z]*\s(?=\w*[ _]?time\b)", "", said[-1])
    return f" (as the program prints it: `{words.strip(' ,;|')}`)"
