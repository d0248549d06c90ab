"""How fast a program says it goes, from its own progress lines (the ``step`` and ``progress`` events of
``parsers/trainer.py`` and the parsers of other trainers and servers): each line's throughput (a rate
after or before its unit: ``samples/sec: 875.6``, ``875.63 samples/sec``, ``3.2it/s``, SGLang's ``gen
throughput (token/s): 144.95``, vLLM's ``Avg generation throughput: 44.3 tokens/s``) or its time per step
(Megatron's ``elapsed time per iteration (ms): 812.4``, tqdm's ``1.52s/it``, Keras' ``31ms/step``), with
or without a step number.

``ticks`` reads them (progress_figures.py: the figures of parsers/series.py's ``RATES`` and ``TIMES``, or
the time per step a line's ``duration_ms`` holds); ``trend`` says whether the figure doubles (a time) or halves (a rate) from the
first third of the lines to the last; ``steady`` whether it stays within ``STEADY`` of itself once the
warm-up lines are left out; ``alternates`` whether it goes up and down at every line (every other step
waits); ``holds`` whether a server's throughput stays within ``TREND`` of its median; ``stopped`` whether
the last line's rate is 0. Pure functions over a frame of events: the rules of ``rules_bench`` decide
with them.
"""

from __future__ import annotations

import polars as pl

from tracekit.progress_figures import (PHASE, RATE_UNIT, RATES, TIMES, cumulative, first_figure,  # noqa: F401
                                       printed, ticks)
from tracekit.parsers import timings
from tracekit.step_clock import one_bar, written_at
from tracekit.wording import duration

#: a figure that doubles (a time per step) or halves (a rate) between the first and the last third: slow
TREND = 2.0
#: steady: the largest figure at most this many times the smallest
STEADY = 1.5
#: a throughput that ends at its lowest falls where it ends below the earlier lines' lowest by this share
#: of its best or more (a last figure within the spread the earlier ones showed, 575.9 after 576.6, 614.5,
#: 583.2 tokens/s, is the noise of a steady pace; 186.6 after 195.8 three times is a fall)
FALLS = 0.03
#: the fewest lines with a figure that say a pace or a trend
MIN_TICKS = 3
def _loop_only(t: pl.DataFrame) -> pl.DataFrame:
    """The progress lines whose interval holds only the loop: a line after an evaluation or a save times
    that phase too (``_phases_before``), so it is never read as a slow step of the loop."""
    return t.filter(~pl.col("after_phase").fill_null(False))


def _figure(t: pl.DataFrame) -> tuple[str, pl.DataFrame] | None:
    """Which figure the lines carry most often (``took`` or ``rate``), and those lines; positive values
    (times that count up since the start are no time per step: ``cumulative``)."""
    took = t.filter(pl.col("took").is_not_null() & (pl.col("took") > 0))
    rate = t.filter(pl.col("rate").is_not_null() & (pl.col("rate") > 0))
    if cumulative(took) or timings.counting_up(took):  # (s30: a timer whose key says it counts up)
        took = took.clear()
    if max(took.height, rate.height) < MIN_TICKS:
        return None
    return ("took", took) if took.height >= rate.height else ("rate", rate)


def _said(what: str, v: float, unit: str | None, per: str = " per step") -> str:
    return f"{v * 1e3:.0f} ms{per}" if what == "took" and v < 1 else (
        f"{v:.1f} s{per}" if what == "took" else f"{v:g} {unit or ''}".rstrip())


def _timed(f: pl.DataFrame) -> bool:
    """Whether every line of ``f`` is a program's own timing line (parsers/timings.py): its figure is the
    time of what it timed, each time it printed it, not one of a step named."""
    return timings.all_timing(f)


def first_step() -> pl.Expr:
    """A progress line of the run's own first step (step 0 or 1, the lowest seen): compilation, the
    allocator and the connects make it slow, or it is timed before its asynchronous work waits and looks
    fast (MaxText's `completed step: 1, seconds: 0.631`, then 10.2 s per step: samples/wild dv25-006); it
    gives no pace to compare the others with."""
    step = pl.col("step")
    return (step.is_not_null() & (step <= 1) & (step == step.min())).fill_null(False)


def trend(t: pl.DataFrame) -> dict | None:
    """The figure of the first third of the lines against the last third (medians; the first line, the
    warm-up, left out where there are enough): a time per step that grows ``TREND`` times or a rate that
    falls to ``1/TREND``. ``text``, and the ``file``/``line``/``message`` of the last line."""
    got = _figure(_loop_only(t))
    if got is None:
        return None
    what, f = got
    if f.height > 4 or (f.height >= 3 and f.select(first_step()).to_series()[0]):
        # the first reported interval holds the warm-up (compilation, allocator, connects); (s27) the run's
        # own first step is it however few lines follow, slow or fast: MaxText's `completed step: 1, seconds:
        # 0.631` is timed before its async dispatch waits, then 10.2 s per step (samples/wild dv25-006)
        f = f.slice(1)
    k = max(1, f.height // 3)
    col = pl.col(what)
    first, last = f.head(k).select(col.median()).item(), f.tail(k).select(col.median()).item()
    # (a creep only on a loop's numbered lines: a server's throughput follows its load)
    loop = f["step"].null_count() == 0
    # (s33: a doubling within what the earlier lines' spikes already showed is noise; a creep has its own test)
    grew = what == "took" and ((last >= TREND * first and not _within_noise(f[what], k, True))
                               or (loop and _creeps(f[what], k)))
    fell = what == "rate" and ((last <= first / TREND and not _within_noise(f[what], k, False))
                               or (loop and _creeps(-f[what], k)))
    if not (grew or fell):
        return None
    unit = f["unit"].drop_nulls()[0] if what == "rate" and f["unit"].drop_nulls().len() else None
    noun = (("the time the program prints" if _timed(f) else "the time per step") if what == "took"
            else "the throughput")
    per = "" if _timed(f) else " per step"
    verb = f"grew {last / first:.2g}x" if grew else f"fell to {last / first:.0%}"
    end = f.tail(1).row(0, named=True)
    steps = f["step"].drop_nulls()
    over = (f"over steps {steps.min()}-{steps.max()} ({f.height} progress lines)" if steps.n_unique() > 1
            else f"over {f.height} progress lines")
    creep = ((", higher" if grew else ", lower") + " third after third"
             if min(last / first, first / last) > 1 / TREND else "")
    return {"text": f"{noun} {verb}, from {_said(what, first, unit, per)} to {_said(what, last, unit, per)} "
                    f"{over}{creep}",
            "file": end["file"], "line": end["line"], "message": end["message"]}


#: (s33) an earlier line within this share of the last one's figure is a spike as large as it
SPIKE = 1.1


def _within_noise(v: pl.Series, k: int, grew: bool) -> bool:
    """(s33) Whether the last third is one line (three to five lines compared) and an earlier line (past the warm-up)
    was already as slow (a time per step within ``SPIKE`` of it or higher, a rate as low) and the pace came back
    after it (a later line before the last back by ``TREND``): the run's pace spikes that much by itself (an
    evaluation, a save, a data stall no phase line marks), so one slow last line is one more spike, not a slowdown.
    A pace that fell and stayed down (180, 120, 90, 88 tflops) has no spike it came back from: that is the trend.
    With more lines the thirds' medians pass over a spike already."""
    last, before = v.tail(k).median(), v.head(v.len() - k).to_list()
    if k != 1 or len(before) < 2:
        return False
    for i, x in enumerate(before):
        slow = x * SPIKE >= last if grew else x <= last * SPIKE
        back = any((y * TREND <= last) if grew else (y >= last * TREND) for y in before[i + 1:])
        if slow and back:
            return True
    return False


#: a progress bar at its end (``100%|``): that loop ended there
LOOP_END = r"\b100%\s*\|"


def at_loop_end() -> pl.Expr:
    """A progress line at its loop's end: a bar at 100% (``LOOP_END``) or a step at the loop's last
    (``step >= max_steps``, ``15/15``): that loop ended there, where a job may stop as well as go on."""
    at_total = pl.col("max_steps").is_not_null() & pl.col("step").is_not_null() & (
        pl.col("step") >= pl.col("max_steps"))
    return pl.col("message").fill_null("").str.contains(LOOP_END) | at_total


def halved(t: pl.DataFrame) -> dict | None:
    """Two or three progress lines of the loop that carry one figure (a time per step, or a throughput in
    one unit; not a bar at its end), too few for ``trend`` to take a third of them: each worse than the
    one before and the last ``TREND`` times worse than the first (a time per step doubled, a throughput
    halved). The earlier slow one is a warm-up and says nothing; a later one half as fast is a run (or the
    same job on more GPUs, pasted after it) that goes at half the pace. ``text``, ``before`` and ``after`` (each ``file``,
    ``line``, ``message``); None otherwise."""
    # (a bar at its end times its whole loop, vLLM's `Processed prompts: 100%| 1/1 [..., 5.91it/s]` one
    # batch of prompts: two such bars are two loops, not one loop's pace)
    t = _loop_only(t).filter(~at_loop_end())
    t = t.filter(~first_step())  # (the run's own first step: no pace to compare with, slow or fast)
    took = t.filter(pl.col("took").is_not_null() & (pl.col("took") > 0))
    rate = t.filter(pl.col("rate").is_not_null() & (pl.col("rate") > 0))
    what, f = ("took", took) if took.height >= rate.height else ("rate", rate)
    if not 2 <= f.height <= MIN_TICKS or (what == "rate" and f["unit"].n_unique() != 1):
        return None  # (more lines: ``trend``; figures in two units: not one measure)
    v = f[what] if what == "took" else -f[what]
    if (v.diff().drop_nulls() < 0).any():
        return None  # (a line better than the one before: not a pace that falls)
    a, b = f.row(0, named=True), f.row(-1, named=True)
    worse = b["took"] >= TREND * a["took"] if what == "took" else b["rate"] * TREND <= a["rate"]
    if not worse:
        return None
    unit = a["unit"] if what == "rate" else None
    noun = "the time per step grew" if what == "took" else "the throughput fell"
    ratio = b[what] / a[what]
    how = f"{ratio:.2g}x" if what == "took" else f"to {ratio:.0%}"
    keep = ("file", "line", "message")
    return {"text": f"{noun} {how}, from {_said(what, a[what], unit)} to {_said(what, b[what], unit)} "
                    f"over the {f.height} progress lines the program printed, each slower than the one "
                    "before",
            "before": {k: a[k] for k in keep}, "after": {k: b[k] for k in keep}}


#: a time per step that creeps up (a rate that creeps down) by this much from the first third to the
#: last, with the middle third between them and every line of the last third above the first third
CREEP = 1.15
#: the fewest lines (after the warm-up) that show a creep: two in each third
MIN_CREEP = 6


def _creeps(v: pl.Series, k: int) -> bool:
    """A figure (a time; a rate negated) that rises third after third: the last third's median ``CREEP``
    times the first's or more, the middle third's median between them, and every figure of the last
    third above every figure of the first (a one-off spike moves neither a median nor that)."""
    if v.len() < MIN_CREEP:
        return False
    head, mid, tail = v.head(k), v.slice(k, v.len() - 2 * k), v.tail(k)
    a, b, c = head.median(), mid.median(), tail.median()
    up = c - a >= (CREEP - 1) * abs(a)
    return bool(up and a <= b <= c and tail.min() > head.max())


def _settled(f: pl.DataFrame, what: str) -> pl.DataFrame:
    """The lines after the warm-up: the leading ones whose figure is off the median of the rest by more
    than ``STEADY`` (slower: compilation, the allocator, the first connects) are left out."""
    while f.height > MIN_TICKS:
        head, med = f[what][0], f[what].slice(1).median()
        if not med or (head <= STEADY * med if what == "took" else head >= med / STEADY):
            break
        f = f.slice(1)
    return f


def steady(t: pl.DataFrame) -> dict | None:
    """A figure within ``STEADY`` of itself over ``MIN_TICKS`` lines or more (the warm-up left out):
    ``text`` (``136.39-157.64 token/s over 8 progress lines``) and ``n``."""
    got = _figure(t)
    if got is None:
        return None
    what, f = got
    f = _settled(f, what)
    if f.height < MIN_TICKS:
        return None
    lo, hi = f[what].min(), f[what].max()
    if hi > STEADY * lo:
        return None
    unit = f["unit"].drop_nulls()[0] if what == "rate" and f["unit"].drop_nulls().len() else None
    per = "" if _timed(f) else " per step"
    span = (f"{_said(what, lo, unit, per)}" if lo == hi else
            f"{lo:g}-{hi:g} {unit or ''}".rstrip() if what == "rate" else
            f"{_said(what, lo, None, '')} - {_said(what, hi, None, per)}")
    if _timed(f):  # (s30: a figure the program times and prints again and again, no step named)
        return {"text": f"a steady {span} on each of {f.height} of its own timing lines{printed(f, what)}",
                "n": f.height}
    return {"text": f"a steady {span} over {f.height} progress lines{printed(f, what)}", "n": f.height}


def holds(t: pl.DataFrame) -> dict | None:
    """A server's throughput (progress lines with no step number) that varies with its load but holds:
    every figure within ``TREND`` of the median, falling to neither half nor zero, over ``MIN_TICKS`` lines
    or more: ``text`` (``589.8-1242.7 tokens/s over 5 progress lines, each within 2x of the median``)."""
    got = _figure(t.filter(pl.col("step").is_null()))
    if got is None or got[0] != "rate" or stopped(t) or trend(t) or alternates(t):
        return None
    f = got[1]
    med, lo, hi = f["rate"].median(), f["rate"].min(), f["rate"].max()
    if lo < med / TREND or hi > med * TREND:
        return None
    unit = f["unit"].drop_nulls()[0] if f["unit"].drop_nulls().len() else ""
    return {"text": f"{lo:g}-{hi:g} {unit} over {f.height} progress lines, each within {TREND:g}x of the "
                    f"median {med:g} (a server's throughput follows its load)".replace("  ", " ")}


def stopped(t: pl.DataFrame) -> bool:
    """The last progress line prints a rate of 0 (vLLM's ``Avg generation throughput: 0.0 tokens/s`` with
    requests running): the work stopped there, whatever the lines before say."""
    last = t.tail(1)
    return bool(last.height and last["rate"][0] is not None and last["rate"][0] == 0)


def alternates(t: pl.DataFrame) -> dict | None:
    """A time per step (or a rate) that goes up and down at every line, the slow lines ``TREND`` times
    the fast ones or more, over 4 lines or more after the warm-up: every other step waits for something
    (its data, a save, a peer). ``text``, and the ``file``/``line``/``message`` of the slowest line."""
    got = _figure(_loop_only(t))
    if got is None:
        return None
    what, f = got
    f = _settled(f, what)
    d = f[what].diff().drop_nulls()
    if d.len() < 3 or not (d.sign() * d.sign().shift(1)).drop_nulls().eq(-1).all():
        return None
    # (s28) and by a margin at every step of the swing, not only in the medians: MaxText's `seconds: 12.444`,
    # `0.002`, `11.715`, `11.645` (an async step timed before it waits, samples/wild dv31-014) swings once
    pairs = pl.DataFrame({"a": f[what].abs(), "b": f[what].abs().shift(1)}).drop_nulls()
    swing = pairs.select(pl.max_horizontal("a", "b") / pl.min_horizontal("a", "b").clip(lower_bound=1e-12))
    if swing.to_series().min() < TREND ** 0.5:
        return None
    up = d[0] > 0  # the second line is the slow (took) or fast (rate) one
    a, b = f[what].gather_every(2), f[what].gather_every(2, offset=1)
    hi, lo = (b, a) if up else (a, b)
    if hi.median() < TREND * lo.median():
        return None
    worst = f.sort(what).row(-1 if what == "took" else 0, named=True)
    unit = f["unit"].drop_nulls()[0] if what == "rate" and f["unit"].drop_nulls().len() else None
    noun = (("the time the program prints" if _timed(f) else "the time per step") if what == "took"
            else "the throughput")
    per = "" if _timed(f) else " per step"
    return {"text": f"{noun} alternates between {_said(what, hi.median(), unit)} and "
                    f"{_said(what, lo.median(), unit)} from one progress line to the next over {f.height} "
                    "lines", "file": worst["file"], "line": worst["line"], "message": worst["message"]}


#: a throughput after its unit (`samples/sec: 875.6`, `tps 12`), group 1 the figure; the unit per second, never a
#: count (`total number of samples: 7691` is none, s29)
RATE_AFTER_UNIT = r"(?:(?:images|samples|tokens)/s(?:ec)?|\btps):?\s*([\d][\d,.]*)"

def measure(steps: pl.DataFrame) -> dict:
    """How fast the steps went, from what the step lines say: their timestamps, their own
    per-step times (``elapsed time per iteration (ms)``, ``s/it``), a throughput figure. ``slow``:
    the evidence of a step that took far longer than the others; ``falling``: a throughput that
    ends at its lowest; ``per_step_s``: the median seconds per step where known; ``rate``: the median
    throughput figure where the lines print one."""
    st = steps.sort("file", "line")
    out: dict = {"slow": None, "falling": None, "per_step_s": None, "rate": None}
    if st.height < 2:
        return out
    text = pl.concat_str(pl.col("ts").fill_null(""), pl.lit(" "), pl.col("message").fill_null(""))
    st = st.with_columns(
        written_at(text, one_bar(st, text)).alias("at"),  # (a timestamp, else a tqdm bar's elapsed clock: step_clock.py)
        pl.coalesce(text.str.extract(r"elapsed time per iteration \(ms\): ([\d.]+)", 1)
                    .cast(pl.Float64, strict=False) / 1e3,
                    text.str.extract(r"'elapsed_s': ([\d.]+)", 1).cast(pl.Float64, strict=False),
                    text.str.extract(r"([\d.]+)\s*s/it\b", 1).cast(pl.Float64, strict=False),
                    first_figure(text, TIMES)).alias("took"),  # (then any time per step a line prints)
        # tqdm's it/s (below one step a second it prints s/it: the same figure, inverted): a smoothed
        # average since the bar began, a pace and never one slow step
        (1 / text.str.extract(r"([\d.]+)\s*it/s\b", 1).cast(pl.Float64, strict=False)).alias("_inverted"),
        # a throughput after its unit (`samples/sec: 875.6`) or before it (`875.63 samples/sec`,
        # `3.2it/s`)
        pl.coalesce(text.str.extract(RATE_AFTER_UNIT, 1),
                    text.str.extract(r"(\d[\d,]*(?:\.\d+)?)\s*(?:images|samples|tokens|it)/s(?:ec)?\b",
                                     1))
        .str.replace_all(",", "").cast(pl.Float64, strict=False)
        .fill_null(first_figure(text, [(p, 1.0) for p in RATES])).alias("rate"))  # (then any rate RATES reads)
    # the first step carries the warm-up (compilation, allocator, NCCL connects): never the slow one
    one = st.unique("step", keep="first", maintain_order=True).sort("step")
    first_step = one["step"].min()
    timed = one.filter(pl.col("at").is_not_null())
    if timed.height >= 3:
        gaps = timed.with_columns((pl.col("at").diff().dt.total_seconds() / pl.col("step").diff()).alias("s"),
                                  pl.col("step").shift().alias("from")).filter(
            pl.col("s").is_not_null() & (pl.col("s") >= 0) & (pl.col("from") > first_step)
            & ~pl.col("message").fill_null("").str.contains(PHASE))  # (an evaluation's or a save's time)
        med = gaps["s"].median()
        out["per_step_s"] = med
        worst = gaps.sort("s").tail(1).row(0, named=True) if gaps.height else None
        # (slow from the first gap on, then at the pace to the end: the run's warm-up, a data cache filling,
        # cuDNN's autotuner (MXNet's `Speed: 15.69 samples/sec` for 700 batches, then 513), not a slow run)
        slow = (gaps["s"] > 3 * med) if med else None
        leading = bool(slow is not None and slow.len() and slow[0] and not slow.all()
                       and not slow.slice(int(slow.arg_min())).any())
        if worst and med and gaps.height >= 2 and worst["s"] > 3 * med and not leading:
            took = duration(worst["s"] * (worst["step"] - worst["from"]))
            out["slow"] = (f"steps {worst['from']} -> {worst['step']} took {took}"
                           f", {worst['s'] / med:.0f}x the median pace of {duration(med)} per step",
                           worst["file"], worst["line"])
    # (the first step seen is the warm-up only where it is the run's first: a bar at 12/345 is past it)
    # (and the leading steps still off the pace after it: a compiler's, tinygrad's JIT); with only two
    # lines, both give the pace (too few to call one of them slow)
    took = _settled(one.filter(pl.col("took").is_not_null() & (pl.col("step") > first_step)
                               & ~pl.col("message").fill_null("").str.contains(PHASE)), "took")
    if took.height < 2:  # (two lines that print their pace, one as s/it and one as it/s: both give it)
        both = one.with_columns(pl.coalesce("took", "_inverted")).filter(pl.col("took").is_not_null())
        took = both if both.height == 2 else took
    if took.height >= 2:
        med = took["took"].median()
        out["per_step_s"] = out["per_step_s"] or med
        worst = took.sort("took").tail(1).row(0, named=True)
        if not out["slow"] and took.height >= 3 and worst["took"] > 3 * med:
            out["slow"] = (f"step {worst['step']} took {duration(worst['took'])}, "
                           f"{worst['took'] / med:.0f}x the median "
                           f"{duration(med)}", worst["file"], worst["line"])
    rate = st.filter(pl.col("rate").is_not_null())
    if rate.height >= 2:
        out["rate"] = rate["rate"].median()
    # (s29) a time per step the lines print that holds steady is the pace itself: a throughput a few percent
    # lower at the end beside it is no fall (samples/wild llm-038: TFLOP/s 239.8 -> 228.4 at 5.4-5.7 s per step)
    steady_took = took.height >= 2 and took["took"].max() <= STEADY * took["took"].min()
    if rate.height >= 3 and not steady_took:
        last, top = rate["rate"][-1], rate["rate"].max()
        low = rate["rate"].head(rate.height - 1).min()  # (the earlier lines' lowest)
        if top > 0 and last <= rate["rate"].min() and low - last >= FALLS * top:  # (0 to 0 is no fall)
            r = rate.tail(1).row(0, named=True)
            out["falling"] = (f"the throughput fell from {top:g} to {last:g} at step {r['step']}",
                              r["file"], r["line"])
    return out
