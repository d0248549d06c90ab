"""The progress rules: a run that still moves (slow between dumps, slow steps), a rank the others
wait for (straggler), a healthy run (positive evidence from every rank), a clean end on only some
ranks, and ``nothing``: what was seen when no rule fires."""

from __future__ import annotations

import math
from dataclasses import replace

import polars as pl

from tracekit import figures, pace, situation
from tracekit.evidence import Evidence, lines
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.parsers.series import _template
from tracekit.rules_common import late_text
from tracekit.rules_nccl_tests import _transport
from tracekit.wording import fmt_ranks


def slow_progress(ev: Evidence) -> Verdict | None:
    """FR dumps of one rank, taken at different times, whose frontier moved: slow, not hung."""
    m = ev.motion
    if not m.height:
        return None
    moved = (m.filter(pl.col("last") > pl.col("first"))
             .with_columns((pl.col("last") - pl.col("first")).alias("dseq")))
    if not moved.height:
        return None
    # one figure, one value: the rate and step time diff, the plots and the report show (figures.py)
    rate = figures.collective_rate(ev.store).value
    if rate is None:  # (fewer than figures.MIN_COLLECTIVES timed per rank: the dumps' own motion)
        rate = (moved["dseq"] / moved["dt"].clip(lower_bound=1e-9)).median()
    per_coll = (moved["bytes"] / moved["dseq"]).median()
    step = figures.step_median(ev.store)
    step_s = f"; steps took {step.value:.1f} s each" if step.value is not None else ""
    gbps = (moved["bytes"] / moved["dt"].clip(lower_bound=1e-9)).median() / 1e9
    # a figure that cannot be worked out (no sizes recorded) is left out, never printed as 0.0
    size = (f", {_bytes(per_coll)} per collective, {_bytes(gbps * 1e9)}/s through each rank"
            if per_coll and per_coll > 0 else "")
    late = late_text(ev)
    ranks = moved["rank"].sort().to_list()
    each = [f"rank {r['rank']}: seq {r['first']} -> {r['last']} over {r['dt']:.1f}s across {r['dumps']} dumps"
            for r in moved.sort("rank").iter_rows(named=True)]
    v = Verdict(Kind.SLOW_PROGRESS, (f"{late}; " if late else "") + "sequence numbers advanced between dumps "
                f"on {moved.height} rank(s): about {rate:.2f} collectives/s{size}{step_s}; "
                f"the run is slow, not hung" + (" (and it finished)" if ev.finished else ""),
                [ev.late["rank"]] if late else ranks, ([late] if late else []) + each[:6])
    if ev.missing:
        v.notes.append("the ranks' frontiers differ only by when each was dumped: " + (
            "every launcher exited with code 0" if ev.finished
            else "every rank advanced between its last two dumps"))
    return v


def _bytes(n: float) -> str:
    """``17.0 MB``, ``33 KB``, ``4 B``: a size in the unit that shows it."""
    for unit, k in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= k:
            return f"{n / k:.1f} {unit}" if n < 100 * k else f"{n / k:.0f} {unit}"
    return f"{n:.0f} B"


def straggler(ev: Evidence, min_collectives: int = 20, share: float = 0.6) -> Verdict | None:
    """One rank enters most collectives last (clock offsets per host removed), by a margin that
    matters. Needs enqueue times of every rank (Flight Recorder, Kineto)."""
    top = figures.latest_rank(ev.store)  # one figure, one value: the straggler plot draws the same
    if top is None or top["of"] < min_collectives:
        return None
    # some rank is last by chance in 1/R of them: ask for 3 standard deviations above that too
    # (with 2 ranks, one of them is last in 60% of 20 collectives half the time)
    chance = 1 / figures.lateness(ev.store)[0]["rank"].n_unique()
    need = max(share, chance + 3 * math.sqrt(chance * (1 - chance) / top["of"]))
    if top["times_last"] < need * top["of"]:
        return None
    # late by more than the noise in a quarter of them: a few hiccups of a busy CPU (4 of 24 by 6 ms, a
    # rank otherwise last by 0.1 ms) are not a rank that makes the others wait
    if top["times_late"] < max(3, top["of"] / 4):
        return None
    r, of, noise = top["rank"], top["of"], f"{figures.NOISE_MS:g} ms"
    return Verdict(Kind.STRAGGLER, f"rank {r} enters {top['times_last']} of {of} collectives last, "
                   f"{top['times_late']} of them more than {noise} after the median rank (a median "
                   f"{top['late_when_late_ms']:.1f} ms then; {top['late_ms']:.1f} ms over all {of}): the "
                   "others wait for it", [r],
                   [f"{top['source']}: rank {r} last in {top['times_last']}/{of} collectives, "
                    f"{top['times_late']} by more than {noise}"])


def straggler_by_wait(ev: Evidence) -> Verdict | None:
    """Without a clock shared by the ranks: one rank spends least time in most collectives, the others
    wait for it (each rank's own durations)."""
    late = late_text(ev)
    if not late or ev.failure_signs:
        return None
    return Verdict(Kind.STRAGGLER, late, [ev.late["rank"]], [late])


def slow_steps(ev: Evidence) -> Verdict | None:
    """Steps that still advance, one of them far slower than the others (their timestamps or their
    own per-step times), and no error: slow, not hung."""
    slow = ev.pace["slow"]
    if not slow or ev.trouble.height or ev.failure_signs:
        return None
    text, file, line = slow
    return Verdict(Kind.SLOW_PROGRESS, f"{text}: the run is slow, not hung (steps advanced "
                   f"{ev.steps['step'].min()} -> {ev.steps['step'].max()}, no error logged)",
                   [], [Cited(file, line, text)])


def steady_progress(ev: Evidence) -> Verdict | None:
    """Steps advance at a steady pace and nothing else is logged but calm lines: healthy, though only
    some ranks log steps (and no rank of a known world is known to have left no file). A synchronous
    job's steps advance only while every rank of it takes part in its collectives, so the ranks that
    do not log are moving too."""
    if (not ev.progressed or ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.missing
            or ev.mismatches or ev.coverage.missing or ev.stacks.height):
        return None  # (ranks of a known world that left no record: what they logged is not known; a stack
        # dump beside the steps: someone looked for where it waits)
    per_step, rate = ev.pace["per_step_s"], ev.pace["rate"]
    if ev.steps.height < 2 or ev.pace["slow"] or ev.pace["falling"] or (per_step is None and rate is None):
        return None  # a pace that cannot be measured might hide a stall between two step lines
    what = "took" if per_step else "rate"
    own = ev.ticks.filter(pl.col(what).is_not_null() & (pl.col(what) > 0))
    if what == "took" and pace.cumulative(own):
        own = own.clear()  # (seconds since the start on each line: no time per step)
    if own.height >= 2 and own[what].max() > pace.STEADY * own[what].min():
        return None  # (the lines' own figures differ by half or more: two runs, or a pace that moves)
    steady = (f" at a steady {per_step:.1f} s per step" if per_step
              else f" at a steady throughput ({rate:g})") + (pace.printed(own, what) if own.height else "")
    return Verdict(Kind.HEALTHY, f"{'; '.join(ev.progressed[:2])}" + steady
                   + " and no error, signal or stall is logged: the steps of a synchronous job advance only "
                   f"while every rank takes part ({ev.coverage.describe()})", [],
                   lines(ev.steps.sort("step"), 2))


def reports_advance(ev: Evidence) -> Verdict | None:
    """Progress reports with no step number and no time (HF Trainer's loss dicts) whose epoch goes up,
    and nothing but calm lines: healthy for what is seen; with no time on them the pace is not known."""
    ep = ev.epochs
    if (ev.steps.height or not ev.progressed or ev.trouble.height or ev.failure_signs or ev.stalls.height
            or ev.missing or ev.mismatches or ev.coverage.missing or ep.height < 3):
        return None
    return Verdict(Kind.HEALTHY, f"{ev.progressed[0]} and no error, signal or stall is logged: the training "
                   "moves; this covers what is seen, and with no time on the reports their pace is not known "
                   f"({ev.coverage.describe()})", [], lines(ep.tail(2), 2))


#: the fewest step lines at one stride that say a loop moves with no time on them
MIN_STRIDES = 4
#: a figure of time on a step line (``time(s): 307.7``, ``12.3s``, ``812 ms``, ``1.5 s/it``): where the
#: pace reads none from such lines, the lines carry a time it does not know how to read, and the loop's
#: pace is unknown, not absent (a time that creeps up would pass for a loop that moves)
TIME_SAID = (r"(?i)\b(?:time|elapsed|duration|latency|secs?|seconds)\b\W{0,4}\d"
             r"|\d\s*(?:ms|s|sec|secs|seconds|min|mins)\b|/it\b|\bit/s\b")


def steps_advance(ev: Evidence) -> Verdict | None:
    """Step lines with no time on them (torchtune's ``Step 3 | loss:0.91 ...``) that advance at one stride
    (every step, or every k-th) over ``MIN_STRIDES`` lines or more, and nothing but calm lines: the loop
    moves; healthy for what is seen, its pace not known (a line that took long cannot be told apart)."""
    if (ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.missing or ev.mismatches
            or ev.pending.height or ev.pace["slow"] or ev.pace["falling"] or ev.ticks.height
            or ev.stacks.height or ev.coverage.missing or ev.coverage.complete
            or ev.pace["per_step_s"] is not None or ev.pace["rate"] is not None):
        # (lines that print or stamp their pace: the rules over the pace decide them; every rank of the
        # world seen: `healthy` says it, with the last step reached)
        return None
    st = ev.steps.sort("file", "line").unique("step", keep="first", maintain_order=True)
    if st["message"].fill_null("").str.contains(TIME_SAID).any():
        return None  # (a time on the lines the pace could not read: it decides, not the stride)
    stride = st["step"].diff().drop_nulls()
    if stride.len() < MIN_STRIDES or stride.n_unique() != 1 or stride[0] <= 0:
        return None
    r = st["rank"].drop_nulls().unique().sort().to_list()
    whose = f"{'rank' if len(r) == 1 else 'ranks'} {','.join(map(str, r))}'s" if r else "the program's"
    every = "every step" if stride[0] == 1 else f"every {stride[0]}th step"
    return Verdict(Kind.HEALTHY, f"{whose} steps {st['step'][0]} -> {st['step'][-1]} advanced, {every} "
                   "logged, and no error, signal or stall is logged: the loop moves; in a synchronous job "
                   "the other ranks joined each step; the lines carry no time, so the pace is not known "
                   f"({ev.coverage.describe()})", [], lines(st.tail(2), 2))


def healthy(ev: Evidence) -> Verdict | None:
    """Positive evidence of a clean run: a clean end or progress (or Flight Recorder dumps that show
    every group healthy), every rank of the world seen."""
    windows = [w.message for w in ev.windows]
    good = ev.clean_end or ev.progressed or windows
    if not good or not ev.coverage.complete:
        return None
    what = "; ".join((ev.clean_end + ev.progressed + windows)[:3])
    return Verdict(Kind.HEALTHY,
                   f"every rank of {ev.coverage.world_size} seen, no failure logged, and {what}", [], [])


def clean_but_partial(ev: Evidence) -> Verdict | None:
    """A clean end or progress on the ranks seen, but not every rank seen (or the world size unknown)."""
    good = ev.clean_end or ev.progressed
    if not good:
        return None
    if ev.pace["falling"]:
        text, file, line = ev.pace["falling"]
        return Verdict(Kind.UNDECIDED, f"{'; '.join(good[:2])}, but {text}: a stall between those steps or a "
                       f"slower phase; the step lines' timestamps or per-step times decide it "
                       f"({ev.coverage.describe()})", [], [Cited(file, line, text)])
    return Verdict(Kind.UNDECIDED, "what was seen ended cleanly or progressed "
                   f"({'; '.join((ev.clean_end + ev.progressed)[:2])}), but only {ev.coverage.describe()}: "
                   "the other ranks' logs decide it", [], [])


def pace_unjudged(ev: Evidence) -> Verdict | None:
    """Progress lines that print the program's own pace (a throughput, the TFLOPS each GPU does, a time per
    step) and nothing else decides: too few of them for a trend, or figures neither steady nor trending.
    Undecided, with the figures and what they are compared with (the GPUs' peak, the same job's own
    figures on one node), never healthy: a figure alone says how fast, not whether that is slow."""
    t = ev.ticks
    if not t.height or ev.trouble.height or ev.failure_signs or ev.stalls.height:
        return None
    last = t.tail(1).row(0, named=True)
    figure = (f"{last['rate']:g} {last['unit'] or ''}".rstrip() if last["rate"] is not None
              else f"{last['took']:g} s per step")
    at = f" at step {last['step']}" if last.get("step") is not None else ""
    few = (f"{t.height} progress line(s), too few to show a trend" if t.height < pace.MIN_TICKS
           else f"{t.height} progress lines whose figures are neither steady nor a trend")
    flops = "flops" in (last["unit"] or "").lower()
    against = ("the GPUs' peak (dense bf16: A100 312, H100 989 TFLOPS; a tuned LLM run reaches about 35-55% "
               "of it)" if flops else "the same job's figures on one node or earlier in the run")
    said = situation.undecided_verdict(ev)  # (what is seen and what to collect, as `nothing` says it)
    return replace(said, summary=f"the program's own pace: {figure}{at}; {few}, and nothing in the log says "
                   f"what the hardware gives: compare the throughput with {against} (far below it on several "
                   f"nodes points at the interconnect); {said.summary}",
                   evidence=[Cited(last["file"], last["line"], last["message"]), *said.evidence])


# --- (progress, issue 31) What a program says of its own results: a benchmark's result lines
# (parsers/nccl_tests.py's ``_results``: DeepEP's dispatch and combine bandwidth, a transfer engine's
# throughput, a p2p or all-to-all script's GB/s): the benchmark ran to
# its measurement, how its ranks' figures compare, and what to compare the figure with. nccl-tests' tables
# and the all-reduce benchmark are ``rules_nccl_tests``'s.

#: the ranks' figures of one result line even: the largest at most this many times the smallest
EVEN = 1.5
#: what a benchmark's GB/s is compared with, where the log names no link's speed
LINKS = ("the links it crosses: NVLink (H100: ~450 GB/s each way), a 400 Gb/s InfiniBand/RoCE NIC "
         "(~48 GB/s), a 100 Gb/s NIC (~12 GB/s), TCP through the kernel (a few GB/s at best)")


def _calm(ev: Evidence) -> bool:
    """No error, signal, stall, pending init or rank left behind, and no rank of a known world unseen."""
    return not (ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.pending.height or ev.missing
                or ev.coverage.missing)


def benchmark_result(ev: Evidence) -> Verdict | None:
    """A benchmark's result lines and nothing but calm lines. Printed by several ranks with even figures,
    or with the benchmark's own end line: it ran to its measurement on every rank seen, none lags:
    healthy, with the figures and what to compare them with (a figure alone says how fast, not whether
    that is slow). Figures of the ranks that differ by ``EVEN`` or more, or one figure with no end line:
    undecided, with the figures."""
    rows = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "benchmark").sort("file", "line")
    if not rows.height or not _calm(ev):
        return None
    rows = rows.with_columns(_template(pl.col("message")).alias("_shape"))
    ranks = rows["rank"].drop_nulls().unique().sort().to_list()
    figures = "; ".join(_figure(g) for _, g in rows.group_by("_shape", maintain_order=True))
    cited = [Cited(r["file"], r["line"], r["message"]) for r in rows.head(2).iter_rows(named=True)]
    link = _transport(ev)
    against = f"the transport NCCL logged ({link}) and " if link else ""
    compare = f"compare it with {against}{LINKS}"
    uneven = [g for _, g in rows.group_by("_shape", maintain_order=True)
              if g["rank"].n_unique() > 1 and g["busbw_gbs"].drop_nulls().len()
              and g["busbw_gbs"].max() > EVEN * g["busbw_gbs"].min()]
    who = f"on {'rank' if len(ranks) == 1 else 'ranks'} {fmt_ranks(ranks)}" if ranks else "as printed"
    if uneven:
        low = uneven[0].drop_nulls("rank").sort("busbw_gbs").row(0, named=True)
        return Verdict(Kind.UNDECIDED, f"the benchmark's own results {who} differ by rank: {figures}; "
                       f"rank {low['rank']} the lowest ({low['busbw_gbs']:g} GB/s): a slower link or GPU on "
                       f"its side, or a rank that started late; {compare}", [low["rank"]],
                       [Cited(low["file"], low["line"], low["message"])])
    ended = rows["message"].str.contains(r"(?i)\b(?:completed|finished|done)\b").any()
    if len(ranks) < 2 and not ended:
        return Verdict(Kind.UNDECIDED, f"the benchmark's own result {who}: {figures}, and nothing in the log "
                       f"says what the hardware gives: {compare}; the rest of its output says whether it "
                       "ended", [], cited)
    how = (f"every rank seen ({fmt_ranks(ranks)}) printed its result, within {EVEN:g}x of each other (none "
           "lags)" if len(ranks) > 1 else "it said it completed")
    return Verdict(Kind.HEALTHY, f"the benchmark ran to its measurement and {how}: {figures}; no error, "
                   f"signal or stall is logged; whether that is fast enough is the benchmark's question: "
                   f"{compare} ({ev.coverage.describe()})", [], cited)


def _figure(g: pl.DataFrame) -> str:
    """``Dispatch bandwidth 24.3-24.67 GB/s over 4 ranks``: one result line's figures (its words up to
    the figure, the span, the ranks), or the line itself where the figure has no unit."""
    v = g["busbw_gbs"].drop_nulls()
    head = g["message"][0]
    if not v.len():
        return f"`{head[-80:]}`"
    name = head.split(":")[0][-40:] if ":" in head[:60] else "the figure"
    span = f"{v.min():g}" if v.min() == v.max() else f"{v.min():g}-{v.max():g}"
    n = g["rank"].n_unique() if g["rank"].drop_nulls().len() else 0
    return f"{name.strip()} {span} GB/s" + (f" over {n} ranks" if n > 1 else "")


#: the order of an inference server's start-up phases (parsers/trainer.py's ``_serving``)
PHASES = ("dist_init", "load_weights", "memory_pool", "cuda_graph", "ready")


def serving(ev: Evidence) -> Verdict | None:
    """An inference server's own lines (parsers/trainer.py's ``_serving``) and nothing but calm lines:
    requests answered with a 2xx status or batches scheduled (it serves), its own word that it is ready, or a
    start-up past its distributed init on every rank seen (healthy so far, start-up only). A 5xx answer,
    an error, a crash after ``ready``: the rules of failure, or nothing, decide."""
    rows = ev.kinds(EventKind.SERVED, EventKind.SERVER_UP).sort("file", "line")
    if not rows.height or not _calm(ev) or (rows["where"] == "request_failed").any():
        return None
    covers = f"this covers what is seen ({ev.coverage.describe()})"
    served = rows.filter((pl.col("kind") == EventKind.SERVED) & (pl.col("where") != "probe"))
    if served.height:
        asked = served.filter(pl.col("where") == "request").height
        batches = served.filter(pl.col("where") == "batch")
        said = [f"{asked} request(s) answered with a 2xx status"] if asked else []
        if batches.height:
            said.append(f"{batches.height} batch(es) scheduled (the last: {_tail(batches['message'][-1])})")
        return Verdict(Kind.HEALTHY, f"the server serves: {'; '.join(said)}, and no error, signal or stall "
                       f"is logged; {covers}", [], [Cited(r["file"], r["line"], r["message"])
                                                   for r in served.tail(2).iter_rows(named=True)])
    ready = rows.filter(pl.col("where") == "ready")
    if ready.height:
        r = ready.row(-1, named=True)
        return Verdict(Kind.HEALTHY, f"the server said it is ready ({_tail(r['message'])}) and no error, "
                       f"signal or stall is logged: it started; {covers}", [],
                       [Cited(r["file"], r["line"], r["message"])])
    tp = pl.col("message").str.extract(r"\b(?:TP|PP|DP)(\d+)\b", 1)
    rows = rows.with_columns(tp.alias("_who"), pl.col("where").replace_strict(
        {p: i for i, p in enumerate(PHASES)}, default=None, return_dtype=pl.Int64).alias("_phase"))
    inited = rows.filter(pl.col("where") == "dist_init")["_who"].unique()
    after = rows.filter(pl.col("_phase") > 0)
    if not inited.len() or not after.height or set(inited.to_list()) - set(after["_who"].to_list()):
        return None  # (every process that finished its init went on to the next phase)
    last = after.row(-1, named=True)
    n = inited.drop_nulls().len()
    each = f"every one of its {n} ranks seen" if n > 1 else "the process seen"
    return Verdict(Kind.HEALTHY, f"the server's start-up is past its distributed init on {each} (its "
                   f"process groups exist) and went on ({_tail(last['message'])}), and no error, signal or "
                   "stall is logged: healthy so far; this covers start-up only, the rest of its log says "
                   f"whether it serves ({ev.coverage.describe()})", [],
                   [Cited(last["file"], last["line"], last["message"])])


def _tail(message: str, n: int = 100) -> str:
    """A line's text after its logger header (``[2025-05-14 09:31:43 TP0] ``), clipped."""
    body = message.split("] ", 1)[-1] if message.startswith("[") else message
    return body.strip()[:n]


#: tqdm's time fields: elapsed<remaining (``00:40<7:58:13``), and a bar's ``n/total`` before them
TQDM_TIMES = r"(?:(\d+)/(\d+) )?\[(?:(\d+):)?(\d\d):(\d\d)<(?:(\d+):)?(\d\d):(\d\d),"
#: two progress bars count the same loop when their totals are within this share of each other
SAME_TOTAL = 0.1


def paces_differ(ev: Evidence) -> Verdict | None:
    """Progress bars (tqdm's) of one loop, run more than once (the elapsed time starts again: a user's
    comparison of two setups, a job restarted), at paces ``pace.TREND`` times apart or more, and nothing
    but calm lines: the same work runs far slower in one run: slow, not hung. The same loop: the same
    total of steps (a bar's ``n/total``, or elapsed + remaining over the pace), within ``SAME_TOTAL``."""
    t = ev.ticks
    if t.height < 2 or ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.missing:
        return None
    g = [pl.col("message").str.extract(TQDM_TIMES, i).cast(pl.Float64, strict=False) for i in range(1, 9)]
    sec = pl.coalesce("took", pl.when(pl.col("unit") == "it/s").then(1 / pl.col("rate")))
    left = g[5].fill_null(0) * 3600 + g[6] * 60 + g[7]
    spent = g[2].fill_null(0) * 3600 + g[3] * 60 + g[4]
    bars = t.with_columns(sec.alias("_s"), spent.alias("_spent")).with_columns(
        pl.coalesce(g[1], (pl.col("_spent") + left) / pl.col("_s")).alias("_total")).filter(
        pl.col("_s").is_not_null() & (pl.col("_s") > 0) & pl.col("_total").is_not_null()).sort("file", "line")
    if bars.height < 2 or bars["_total"].max() > (1 + SAME_TOTAL) * bars["_total"].min():
        return None
    runs = bars.with_columns((pl.col("_spent").diff().fill_null(0) < 0).cum_sum().alias("_run"))
    each = runs.group_by("_run", maintain_order=True).agg(pl.all().last(), pl.col("_s").median().alias("_m"))
    if each.height < 2:
        return None  # (one bar whose pace moved: the rules over the pace trend say it)
    slow, fast = each.sort("_m").row(-1, named=True), each.sort("_m").row(0, named=True)
    if slow["_m"] < pace.TREND * fast["_m"]:
        return None
    return Verdict(Kind.SLOW_PROGRESS, f"one loop of about {bars['_total'].median():.0f} steps runs at "
                   f"{_pace(slow)} in one progress bar and {_pace(fast)} in another (its elapsed time starts "
                   f"again): {slow['_m'] / fast['_m']:.0f}x slower there, and no error, signal or stall is "
                   "logged: slow, not hung (where the slow bar is the multi-GPU run, each step waits on its "
                   "gradient all-reduce: the link between the GPUs, P2P/NVLink or PCIe, decides it; "
                   "NCCL_DEBUG=INFO names the transport)", [],
                   [Cited(r["file"], r["line"], r["message"]) for r in (slow, fast)])


def _pace(r: dict) -> str:
    """``5.75 s/it``, or ``1.96 it/s (0.51 s/it)``: a bar's pace as it prints it, in seconds per step."""
    return f"{r['took']:g} s/it" if r["took"] is not None else f"{r['rate']:g} it/s ({r['_s']:.2f} s/it)"


def own_results(ev: Evidence) -> Verdict | None:
    """What a program says of its own results and pace: a benchmark's figures, an inference server's
    start-up and answers, one loop's progress bars at paces far apart (one place in ``rules.RULES``)."""
    return benchmark_result(ev) or serving(ev) or paces_differ(ev)


def nothing(ev: Evidence) -> Verdict:
    """No rule fired: the situation, what is missing to decide and what to collect
    (``situation.undecided``), with the program's own pace figures in front where its lines print them
    (``pace_unjudged``)."""
    return pace_unjudged(ev) or situation.undecided_verdict(ev)
