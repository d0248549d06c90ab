"""Rules over the figures a program prints of its own pace, read as its code computes them: tf_cnn_benchmarks'
statistics of its step speeds (``uneven_speeds``), a trainer's phase timers reported once per step
(``timers_repeat``). Each is ``rule(evidence) -> Verdict | None``, in ``rules.RULES`` beside the pace
rules of ``rules_bench`` (after every rule of failure: each reads only runs with no failure sign).
"""

from __future__ import annotations

import polars as pl

from tracekit import pace
from tracekit.evidence import Evidence, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.rules_common import calm
from tracekit.wording import duration


#: tf_cnn_benchmarks' running figures (benchmark_cnn.py:932, `images/sec: %.1f +/- %.1f (jitter = %.1f)`): the
#: mean speed over the steps since the warm-up, the standard error of the per-step speeds, their spread
SPEED_STATS = r"images/sec: ([\d.]+) \+/- ([\d.]+) \(jitter = ([\d.]+)\)"


def uneven_speeds(ev: Evidence) -> Verdict | None:
    """tf_cnn_benchmarks' own statistics of its step speeds whose spread is as large as their mean: some
    steps ran at twice the mean or faster, so most ran far below what the job reaches: slow, not hung.

    benchmark_cnn.py:938-950 (tensorflow/benchmarks): ``speeds = batch_size / times`` over the step times
    since the warm-up (reset at `Done warm up`, :2394-2406), ``speed_uncertainty = np.std(speeds) /
    sqrt(len(speeds))``, printed at step N (N = len(speeds), :876-881). So the standard deviation of the
    step speeds is ``U * sqrt(N)``; where it is at least the mean M, the fastest step ran at 2 * U * sqrt(N)
    or more (positive speeds: max >= E[x^2]/E[x] >= 2 * std), twice the mean or more."""
    if not calm(ev):
        return None
    g = pl.col("message").str.extract_groups(SPEED_STATS).struct
    st = ev.steps.with_columns(g.field("1").cast(pl.Float64, strict=False).alias("mean"),
                               g.field("2").cast(pl.Float64, strict=False).alias("err"))
    st = st.filter(pl.col("mean").is_not_null() & (pl.col("step") > 1) & (pl.col("mean") > 0))
    if not st.height:
        return None
    last = st.filter(pl.col("step") == st["step"].max()).sort("file", "line")
    n, mean, err = last["step"][0], last["mean"].median(), last["err"].median()
    spread = err * n ** 0.5
    if spread < mean:
        return None
    r = last.row(0, named=True)
    many = f"every one of the {last.height} lines" if last.height > 1 else "the line"
    return Verdict(Kind.SLOW_PROGRESS, f"at step {n} the program's own speed is {mean:g} images/sec +/- {err:g} "
                   f"({many} at that step: `{r['message'].strip()}`): over {n} steps since the warm-up the "
                   f"step speeds spread by {spread:.1f} images/sec (the +/- is their standard error, "
                   f"std / sqrt({n})), as much as their mean, so the fastest steps ran at {2 * spread:.0f} "
                   "images/sec or more and most far slower: the job runs far below the pace it reaches; "
                   "slow, not hung, no error logged (a stall in the input pipeline or the interconnect "
                   f"between steps) ({ev.coverage.describe()})", [], lines(last, 2))


def timers_repeat(ev: Evidence) -> Verdict | None:
    """A trainer's phase timers (``time (ms) | compute_norm: 3.01 | ... | basic_step: 19.60``) and no step
    line: each report follows a step of the loop it times, so reports that repeat at a steady interval
    (their timestamps) with steady figures, up to the last line of their file, are steps that advance at a
    steady pace; nothing but calm lines: healthy for what is seen.

    DeepSpeed's FP16_Optimizer.step (deepspeed/runtime/fp16/fused_optimizer.py) ends every optimizer step
    it completes with ``self.log_timers(STEP_TIMERS)`` (compute_norm, overflow_check, unscale_and_clip,
    basic_step, update_fp16; an overflow's skipped step logs only the first two), which prints one
    ``rank=0 time (ms) | name: ms | ...`` line through SynchronizedWallClockTimer.log
    (deepspeed/utils/timer.py) when wall_clock_breakdown is on."""
    ph = ev.kinds(EventKind.PHASE_TIMES).sort("file", "line")
    if (ph.height < pace.MIN_TICKS or ev.steps.height or ev.ticks.height
            or not calm(ev, init_done=True, every_rank_seen=True, nothing_looked_at=True)):
        return None
    last = (ev.store.events.sort("file", "line").group_by("file", maintain_order=True).last()
            .join(ph.select("file").unique(), on="file"))
    if not (last["kind"] == EventKind.PHASE_TIMES).all():
        return None  # (a file whose last line is not its last timer report: what came after decides)
    text = pl.concat_str(pl.col("ts").fill_null(""), pl.lit(" "), pl.col("message").fill_null(""))
    at = (text.str.extract(r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)", 1)
          .str.replace(",", ".").str.replace("T", " ").str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False))
    one = ph.filter(pl.col("file") == ph["file"][0]).with_columns(at.alias("at"))
    gaps = one["at"].diff().dt.total_seconds().drop_nulls()
    if (gaps.len() < pace.MIN_TICKS - 1 or gaps.null_count() or gaps.min() <= 0
            or gaps.max() > pace.STEADY * gaps.min()):
        return None
    pairs = one.select(pl.col("message").str.extract_all(r"([\w\-]+): ([\d.]+)").alias("_p")).explode("_p")
    each = pairs.select(pl.col("_p").str.extract(r"^([\w\-]+):", 1).alias("phase"),
                        pl.col("_p").str.extract(r": ([\d.]+)$", 1).cast(pl.Float64, strict=False).alias("ms"))
    each = each.filter(pl.col("ms").is_not_null()).group_by("phase", maintain_order=True).agg(
        pl.col("ms").min().alias("lo"), pl.col("ms").max().alias("hi"))
    # (a phase under a millisecond, or within 1 ms of itself, is steady whatever its ratio)
    moving = each.filter((pl.col("hi") > pace.STEADY * pl.col("lo")) & (pl.col("hi") - pl.col("lo") > 1))
    if not each.height or moving.height:
        return None
    top = each.sort("hi").tail(1).row(0, named=True)
    who = one["rank"].drop_nulls().unique().to_list()
    whose = f"rank {who[0]}'s" if len(who) == 1 else "the program's"
    spread = (f" ({duration(gaps.min())}-{duration(gaps.max())})"
              if duration(gaps.min()) != duration(gaps.max()) else "")
    return Verdict(Kind.HEALTHY, f"{whose} phase timers were reported {one.height} times, every "
                   f"{duration(gaps.median())}{spread}, with steady "
                   f"figures ({top['phase']} {top['lo']:g}-{top['hi']:g} ms), up to the last line: each report "
                   "follows a step of the loop it times (DeepSpeed's optimizer logs its timers at the end of "
                   "every step it completes), so the steps advance at a steady pace, and no error, signal or "
                   f"stall is logged; this covers what is seen ({ev.coverage.describe()})", [], lines(one, 2))


#: a trainer's report that a whole epoch and its validation completed, as data: (pattern, source, meaning)
EPOCH_DONE = (
    (r"\b(?P<epoch>\d+)epoch results: \[train\] .*\[valid\] ",
     "espnet/espnet espnet2/train/trainer.py (`run`: train_one_epoch, then validate_one_epoch, then rank 0's "
     "`logging.info(reporter.log_message())`); espnet2/train/reporter.py `log_message` (`{epoch}epoch "
     "results: ` then `[train] ...`, `, [valid] ...`)",
     "the epoch's training and its validation completed; in a distributed run every training step "
     "all-reduces the workers' stop flag and their stats (`torch.distributed.all_reduce(iterator_stop)`, "
     "`recursive_average`), so every rank took part in each"),
)


def epoch_results(ev: Evidence) -> Verdict | None:
    """A trainer's own report that an epoch's training and its validation both completed (``EPOCH_DONE``),
    and nothing but calm lines, where no other rule decides: the ranks took part in every step of that epoch
    (the report aggregates them) and in its validation; healthy for what is seen, however few lines."""
    if not calm(ev, init_done=True, every_rank_seen=True, nothing_looked_at=True):
        return None
    msg = pl.col("message").fill_null("")
    for pattern, _source, meaning in EPOCH_DONE:
        done = ev.store.events.filter(msg.str.contains(pattern)).sort("file", "line")
        if not done.height:
            continue
        last = done.row(-1, named=True)
        epoch = done["message"].str.extract(pattern, 1)[-1]
        return Verdict(Kind.HEALTHY, f"the program reports epoch {epoch} done with its validation "
                       f"(`{last['message'][:160].strip()}`): {meaning}; no error, signal or stall is logged; "
                       f"this covers what is seen ({ev.coverage.describe()})", [], lines(done.tail(2), 2))
    return None
