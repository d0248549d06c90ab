"""The figures of speed of one run, each with where it came from or why it is missing: step time
(from the trainer's step lines), collectives per second, time in collectives, bandwidth by message
size, and how late each rank enters the collectives. One function per figure: ``tracekit diff`` puts
two runs' figures side by side (``diff.FIGURES``), the plots and the report draw them, and the
verdict's words quote them (tests/test_cli_figures.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit import sources
from tracekit.outcome import EventKind
from tracekit.store import Store


@dataclass
class Figure:
    """One measured figure of one run: a value with its unit and where it came from (``source``:
    fr, kineto, elapsed_s, ...; ``detail``: over what), or None and ``detail`` says what is missing."""

    value: float | None
    unit: str
    source: str
    detail: str
    text: str = ""  # the value as printed, when it says more than the number ("1.2 s of 4.5 s, 27%")

    def shown(self) -> str:
        if self.value is None:
            return "-"
        return (self.text or f"{_num(self.value)} {self.unit}".strip()) + f" ({self.source})"


def _num(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def size_text(n: int) -> str:
    for unit, f in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{n} B"


def world_size(s: Store) -> int | None:
    r = s.ranks
    world = r["world_size"].drop_nulls().max() if r.height else None
    return world or (r["rank"].drop_nulls().n_unique() if r.height else None) or None


STEP_SECONDS = [  # (source name, pattern of one step's seconds in a step line, cumulative mean?)
    ("elapsed_s", r"'elapsed_s': '?([\d.]+)", False),
    ("ms-swift train_speed(s/it)", r"'train_speed\(s/it\)': '?([\d.]+)", True),
]


def step_times(s: Store) -> tuple[pl.DataFrame, str]:
    """Seconds per optimizer step, in step order, from the lowest rank that logs them, and the
    source: a per-step time (``elapsed_s``), ms-swift's running mean ``train_speed(s/it)``
    (turned back into each step's time), else tqdm's rate."""
    steps = s.events.filter((pl.col("kind") == EventKind.STEP) & pl.col("step").is_not_null())
    for name, pattern, cumulative in STEP_SECONDS:
        x = pl.col("message").str.extract(pattern, 1).cast(pl.Float64, strict=False).alias("x")
        got = steps.with_columns(x).filter(pl.col("x").is_not_null())
        if got.height:
            break
    else:
        tqdm = pl.col("message").str.extract_groups(r"([\d.]+)\s*(it/s|s/it)\]").alias("g")
        progress = (pl.col("kind") == EventKind.PROGRESS) & (pl.col("step") > 0)
        rate = s.events.filter(progress).with_columns(tqdm)
        rate = rate.with_columns(pl.col("g").struct.field("1").cast(pl.Float64, strict=False).alias("v"),
                                 pl.col("g").struct.field("2").alias("u")).filter(pl.col("v") > 0)
        if not rate.height:
            return pl.DataFrame(schema={"step": pl.Int64, "seconds": pl.Float64}), ""
        seconds = pl.when(pl.col("u") == "s/it").then(pl.col("v")).otherwise(1 / pl.col("v"))
        got = rate.with_columns(seconds.alias("x"))
        name, cumulative = "tqdm rate", False
    first = got.sort("rank", "file", nulls_last=True)["file"][0]
    one = got.filter(pl.col("file") == first).unique("step", keep="last").sort("step")
    x = pl.col("x") * pl.col("step") if cumulative else pl.col("x")
    if cumulative:  # mean of the steps so far: each step's time is the difference of the totals
        x = x - (pl.col("x") * pl.col("step")).shift(1).fill_null(0)
    return one.select("step", x.alias("seconds")), name


def step_first(s: Store) -> Figure:
    t, src = step_times(s)
    if not t.height:
        return Figure(None, "s", "", "no step lines with a time")
    return Figure(t["seconds"][0], "s", src, f"step {t['step'][0]}")


def step_median(s: Store) -> Figure:
    t, src = step_times(s)
    if not t.height:
        return Figure(None, "s", "", "no step lines with a time")
    return Figure(t["seconds"].median(), "s", src, f"{t.height} step(s)")


def _per_collective(s: Store, need_end: bool) -> tuple[pl.DataFrame, str]:
    """Each collective of the best source with times, once per rank: for rates, enqueue times
    (Flight Recorder, Kineto); for durations, both ends (Kineto's GPU kernels, then Flight
    Recorder with completion times, then Kineto's CPU-side ops). Read through ``sources.best_lazy``:
    a scanned store's collectives stay on disk, and only the columns timed here are collected."""
    timed = pl.col("rank").is_not_null() & pl.col("start_ns").is_not_null()
    keep = pl.col("end_ns") > pl.col("start_ns") if need_end else pl.col("seq").is_not_null()
    sub, source = sources.best_lazy(s.collectives.lazy(), sources.DURATIONS if need_end else sources.RATES,
                                    timed & keep, ("rank", "pg", "seq", "start_ns", "end_ns"))
    return (sub.unique(["rank", "pg", "seq", "start_ns"], keep="last") if source else sub), source


MIN_COLLECTIVES = 5  # fewer than this per rank make no rate worth printing


def collective_rate(s: Store) -> Figure:
    c, source = _per_collective(s, need_end=False)
    if not c.height:
        return Figure(None, "/s", "", "no timed collective record (Flight Recorder or Kineto)")
    c = c.unique(["rank", "pg", "seq"])
    span = (pl.col("start_ns").max() - pl.col("start_ns").min()) / 1e9
    per = c.group_by("rank").agg(pl.len().alias("n"), span.alias("dt"))
    per = per.filter((pl.col("n") >= MIN_COLLECTIVES) & (pl.col("dt") > 0))
    if not per.height:
        return Figure(None, "/s", source, f"fewer than {MIN_COLLECTIVES} timed collectives per rank")
    rate = ((per["n"] - 1) / per["dt"]).median()
    return Figure(rate, "/s", source, f"median of {per.height} rank(s) over {per['dt'].median():.3g} s")


def time_in_collectives(s: Store) -> Figure:
    """Time each rank spent inside collectives: the union of their intervals (collectives on several
    streams overlap), against the span its record covers."""
    c, source = _per_collective(s, need_end=True)
    if not c.height:
        return Figure(None, "s", "", "no collective with both ends timed "
                      "(Kineto, or a Flight Recorder with timing)")
    c = c.sort("rank", "start_ns").with_columns(
        pl.col("end_ns").cum_max().shift(1).over("rank").alias("_reach"))
    apart = pl.col("start_ns") > pl.col("_reach").fill_null(0)  # a new run of overlapping intervals
    c = c.with_columns(apart.cum_sum().over("rank").alias("_run"))
    runs = c.group_by("rank", "_run").agg(pl.col("start_ns").min(), pl.col("end_ns").max())
    per = runs.group_by("rank").agg(((pl.col("end_ns") - pl.col("start_ns")).sum() / 1e9).alias("busy"),
                                    ((pl.col("end_ns").max() - pl.col("start_ns").min()) / 1e9).alias("span"))
    busy, span = per["busy"].median(), per["span"].median()
    share = f", {100 * busy / span:.0f}% of {_num(span)} s recorded" if span else ""
    return Figure(busy, "s", source, f"median of {per.height} rank(s)", f"{_num(busy)} s per rank{share}")


def bus_bandwidth(s: Store) -> Figure:
    bw = bandwidth(s).filter(pl.col("busbw_gbs").is_not_null())
    if not bw.height:
        one = world_size(s) == 1
        return Figure(None, "GB/s", "", "one rank: no traffic between ranks" if one
                      else "no bandwidth lines or timed collectives with sizes")
    big = bw.sort("size", "n").tail(1).row(0, named=True)
    return Figure(big["busbw_gbs"], "GB/s", big["source"], f"median of {big['n']}",
                  f"{big['busbw_gbs']:.3g} GB/s, {big['op']} {size_text(big['size'])}")


def bandwidth(s: Store) -> pl.DataFrame:
    """Bandwidth by op and power-of-two message size, from measurements (DeepSpeed's comms logger,
    nccl-tests) and Kineto's timed collectives (its GPU kernels where the trace has them: the order of
    ``sources.TRANSFERS``). Bus bandwidth is left empty where one rank has no peer to move bytes to."""
    ev = s.events.filter(pl.col("busbw_gbs").is_not_null() & pl.col("bytes").is_not_null()).select(
        pl.col("op").cast(pl.Utf8), "bytes", "duration_ms", "algbw_gbs", "busbw_gbs",
        pl.col("kind").cast(pl.Utf8).alias("source"))
    timed = s.collectives.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null()
                                 & (pl.col("end_ns") > pl.col("start_ns")) & pl.col("bytes").is_not_null())
    timed, _ = sources.best(timed, sources.TRANSFERS)
    if timed.height:
        n = pl.coalesce("nranks", pl.lit(world_size(s))).cast(pl.Float64)
        factor = (pl.when(n <= 1).then(None)
                  .when(pl.col("op") == "all_reduce").then(2 * (n - 1) / n)
                  .when(pl.col("op").is_in(["all_gather", "reduce_scatter", "all_to_all"])).then((n - 1) / n)
                  .otherwise(1.0))
        algbw = pl.col("bytes") / (pl.col("end_ns") - pl.col("start_ns"))  # bytes/ns = GB/s
        ms = (pl.col("end_ns") - pl.col("start_ns")) / 1e6
        ev = pl.concat([ev, timed.select(
            pl.col("op").cast(pl.Utf8), "bytes", ms.alias("duration_ms"), algbw.alias("algbw_gbs"),
            (algbw * factor).alias("busbw_gbs"), pl.col("source").cast(pl.Utf8))], how="vertical_relaxed")
    if not ev.height:
        return pl.DataFrame(schema={"op": pl.Utf8, "size": pl.Int64, "algbw_gbs": pl.Float64,
                                    "busbw_gbs": pl.Float64, "n": pl.UInt32, "source": pl.Utf8})
    bucket = (2 ** pl.col("bytes").cast(pl.Float64).log(2).round()).cast(pl.Int64)
    return (ev.filter(pl.col("bytes") > 0).with_columns(bucket.alias("size"))
            .group_by("op", "size").agg(pl.col("algbw_gbs").median(), pl.col("busbw_gbs").median(),
                                        pl.len().alias("n"), pl.col("source").unique().sort().str.join("+"))
            .sort("op", "size"))


def lateness(s: Store) -> tuple[pl.DataFrame, str]:
    """How late each rank enters each collective its whole group shares, on one clock (host clock
    offsets removed, ``sources.on_one_clock``): ``rank, pg, seq, t, late_ms`` (ms after the group's
    median rank entered it; 0 for the median rank) and ``last`` (it entered last); and the source."""
    known = pl.col("start_ns").is_not_null() & pl.col("rank").is_not_null() & pl.col("seq").is_not_null()
    c, source = sources.best_lazy(s.collectives.lazy(), sources.TIMED, known,
                                  ("rank", "pg", "seq", "host", "start_ns", "end_ns"))
    empty = pl.DataFrame(schema={"rank": pl.Int32, "pg": pl.Utf8, "seq": pl.Int64, "t": pl.Int64,
                                 "late_ms": pl.Float64, "last": pl.Boolean})
    if not source:
        return empty, ""
    c = sources.on_one_clock(c.unique(["rank", "pg", "seq"]), {"start_ns": "t"})
    n = c.group_by("pg", "seq").agg(pl.col("rank").n_unique().alias("n"))
    full = c.join(n.filter(pl.col("n") == n["n"].max()), on=["pg", "seq"], how="semi")
    if full["rank"].n_unique() < 2:
        return empty, source
    t, group = pl.col("t"), ("pg", "seq")
    return full.select("rank", "pg", "seq", "t", ((t - t.median().over(group)) / 1e6).alias("late_ms"),
                       (t == t.max().over(group)).alias("last")).sort("pg", "seq", "rank"), source


NOISE_MS = 5.0  # later than the median rank by less than this is scheduling noise on a busy CPU


def rank_lateness(late: pl.DataFrame) -> pl.DataFrame:
    """Per rank, from ``lateness``: ``late_ms`` (its median lateness over every shared collective),
    ``times_last`` (entered last), ``times_late`` (more than NOISE_MS after the median rank) and
    ``late_when_late_ms`` (its median lateness in those), ``of`` (the collectives shared); ``bursts`` (the
    rank's collectives that begin a burst: its first, and each that starts ``late_when_late_ms`` or more
    after its previous one) and ``late_spells`` (the late collectives that begin a burst or follow one
    that was on time: each a delay of its own).

    (s28) One delay of a busy CPU shifts every collective the rank then launches back to back: CI's healthy
    2-rank HF Trainer run (tests/test_run.py) had rank 1 ~13-18 ms late in 8 of 24 collectives, 4 at a time
    and 0.02-0.25 ms apart (DDP's gradient buckets of one step), two delays; a rank that makes the others
    wait is late again after each gap it had time to catch up in."""
    of = late.select("pg", "seq").unique().height
    over = pl.col("late_ms") > NOISE_MS
    typical = pl.when(over).then(pl.col("late_ms")).median().over("rank").fill_null(NOISE_MS)
    gap = (pl.col("t").diff().over("rank") / 1e6)
    new_burst = gap.is_null() | (gap >= typical)
    spell = over & (new_burst | ~over.shift(1).over("rank").fill_null(False))
    late = late.sort("rank", "t").with_columns(new_burst.alias("_burst"), spell.alias("_spell"))
    return late.group_by("rank").agg(
        pl.col("late_ms").median(), pl.col("last").sum().alias("times_last"), over.sum().alias("times_late"),
        pl.col("late_ms").filter(over).median().alias("late_when_late_ms"),
        pl.col("_burst").sum().alias("bursts"), pl.col("_spell").sum().alias("late_spells")).with_columns(
        pl.lit(of).alias("of")).sort("rank")


def latest_rank(s: Store) -> dict | None:
    """The rank that enters the shared collectives last most often, with ``rank_lateness``'s figures
    of it and the ``source``; None without two ranks on one clock."""
    late, source = lateness(s)
    if not late.height:
        return None
    per = rank_lateness(late).sort(["times_last", "rank"], descending=[True, False])
    return per.row(0, named=True) | {"source": source}
