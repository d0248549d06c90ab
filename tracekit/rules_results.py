"""What a program says of its own results (progress, issue 31): a benchmark's result lines
(parsers/bench_results.py: DeepEP's dispatch and combine bandwidth, a transfer engine's
throughput, a p2p or all-to-all script's GB/s): the benchmark ran to its measurement, how its ranks'
figures compare, and what to compare the figure with; an inference server's start-up and answers; one
loop's progress bars at paces far apart; the figures a program prints of its own pace, read as its code
computes them: tf_cnn_benchmarks' statistics of its step speeds (``uneven_speeds``), a trainer's phase
timers reported once per step (``timers_repeat``), an epoch reported done with its validation
(``epoch_results``). nccl-tests' tables and the all-reduce benchmark are ``rules_nccl_tests``'s; the pace of
a training loop is ``rules_bench``'s and ``rules_progress``'s."""

from __future__ import annotations

import polars as pl

from tracekit import pace, rules_measured
from tracekit.evidence import Evidence, lines
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.parsers.series import template
from tracekit.rules_common import calm, last_per_file, step_phases
from tracekit.rules_nccl_tests import NIC_MIN_GBS, transport_logged
from tracekit.wording import duration, fmt_ranks

#: a figure the benchmark names as its traffic between nodes over RDMA (DeepEP's
#: tests/legacy/test_internode.py:258
#: `[tuning] SMs 24, NVL chunk 4, RDMA chunk 4: 1.22 GB/s (RDMA), 2.45 GB/s (NVL)`, and :264, :301, :311)
RDMA = r"([\d.]+)\s*GB/s \(RDMA\)"
#: the ranks' figures of one result line even: the largest at most this many times the smallest
EVEN = 1.5
#: what a benchmark's GB/s is compared with, where the log names no link's speed
LINKS = ("the links it crosses: NVLink (H100: ~450 GB/s each way), a 400 Gb/s InfiniBand/RoCE NIC "
         "(~48 GB/s), a 100 Gb/s NIC (~12 GB/s), TCP through the kernel (a few GB/s at best)")


def benchmark_result(ev: Evidence) -> Verdict | None:
    """A benchmark's result lines and nothing but calm lines. Printed by several ranks with even figures,
    or with the benchmark's own end line: it ran to its measurement on every rank seen, none lags:
    healthy, with the figures and what to compare them with (a figure alone says how fast, not whether
    that is slow). Figures of the ranks that differ by ``EVEN`` or more, one figure with no end line, or
    the figures of some ranks of a world whose other ranks left no record: undecided, with the figures."""
    rows = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "benchmark").sort("file", "line")
    if (not rows.height or not calm(ev, init_done=True)
            or rules_measured.warnings(ev, rows.row(0, named=True))[1]):
        return None  # (s24: a telling line after the first result, an error no parser decodes: not healthy)
    unseen = ev.coverage.missing and not ev.steps.height  # (steps beside it: the rules of the pace decide)
    if not unseen and not calm(ev, init_done=True, every_rank_seen=True):
        return None
    rows = rows.with_columns(template(pl.col("message")).alias("_shape"))
    ranks = rows["rank"].drop_nulls().unique().sort().to_list()
    figures = "; ".join(_figure(g) for _, g in rows.group_by("_shape", maintain_order=True))
    cited = [Cited(r["file"], r["line"], r["message"]) for r in rows.head(2).iter_rows(named=True)]
    link = transport_logged(ev)
    against = f"the transport NCCL logged ({link}) and " if link else ""
    compare = f"compare it with {against}{LINKS}"
    uneven = [g for _, g in rows.group_by("_shape", maintain_order=True)
              if g["rank"].n_unique() > 1 and g["busbw_gbs"].drop_nulls().len()
              and g["busbw_gbs"].max() > EVEN * g["busbw_gbs"].min()]
    who = f"on {'rank' if len(ranks) == 1 else 'ranks'} {fmt_ranks(ranks)}" if ranks else "as printed"
    rdma = rows["message"].str.extract(RDMA, 1).cast(pl.Float64, strict=False).drop_nulls()
    if rdma.len() and rdma.max() < NIC_MIN_GBS:
        best = rows.filter(rows["message"].str.extract(RDMA, 1).cast(pl.Float64, strict=False) == rdma.max())
        return Verdict(Kind.SLOW_PROGRESS, f"the benchmark's own results {who}: its RDMA bandwidth is at "
                       "most "
                       f"{rdma.max():g} GB/s over {rdma.len()} result line(s) ({figures}), under what one "
                       f"100 Gb/s NIC carries ({NIC_MIN_GBS:g} GB/s; a 400 Gb/s NIC ~48 GB/s): the traffic "
                       "between nodes crosses a link far slower than an RDMA fabric (a TCP fallback, a NIC "
                       "at a lower rate, GPUDirect RDMA off); no error: it completes, slowly; check each "
                       f"NIC's rate (ibstat) and the transport ({ev.coverage.describe()})", ranks,
                       [Cited(r["file"], r["line"], r["message"])
                        for r in best.head(1).iter_rows(named=True)])
    if unseen:
        return Verdict(Kind.UNDECIDED, f"the benchmark's own results {who}: {figures}; the other ranks of "
                       f"its world left no record ({ev.coverage.describe()}): their results say whether one "
                       f"lags; {compare}", [], cited)
    if uneven:
        low = uneven[0].drop_nulls("rank").sort("busbw_gbs").row(0, named=True)
        return Verdict(Kind.UNDECIDED, f"the benchmark's own results {who} differ by rank: {figures}; "
                       f"rank {low['rank']} the lowest ({low['busbw_gbs']:g} GB/s): a slower link or GPU on "
                       f"its side, or a rank that started late; {compare}", [low["rank"]],
                       [Cited(low["file"], low["line"], low["message"])])
    ended = rows["message"].str.contains(r"(?i)\b(?:completed|finished|done)\b").any()
    # (s19) a result table (parsers/test_reports.py) prints a row once that size was measured: sizes
    # that advance are measurements completed
    sizes = rows["bytes"].drop_nulls().n_unique() if "bytes" in rows.columns else 0
    ended = ended or sizes >= 2
    if len(ranks) < 2 and not ended:
        return Verdict(Kind.UNDECIDED, f"the benchmark's own result {who}: {figures}, and nothing in the log "
                       f"says what the hardware gives: {compare}; the rest of its output says whether it "
                       "ended", [], cited)
    how = (f"every rank seen ({fmt_ranks(ranks)}) printed its result, within {EVEN:g}x of each other (none "
           "lags)" if len(ranks) > 1 else f"its table printed {sizes} sizes ({rows['bytes'].min()} - "
           f"{rows['bytes'].max()} bytes), a row once each size was measured" if sizes >= 2
           else "it said it completed")
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


#: the order of an inference server's start-up phases (parsers/serving.py's ``events``)
PHASES = ("dist_init", "load_weights", "memory_pool", "cuda_graph", "ready")


def serving(ev: Evidence) -> Verdict | None:
    """An inference server's own lines (parsers/serving.py's ``events``) and nothing but calm lines:
    requests answered with a 2xx status or batches scheduled (it serves), its own word that it is ready, or a
    start-up past its distributed init on every rank seen (healthy so far, start-up only). A 5xx answer,
    an error, a crash after ``ready``: the rules of failure, or nothing, decide."""
    rows = ev.kinds(EventKind.SERVED, EventKind.SERVER_UP).sort("file", "line")
    if (not rows.height or not calm(ev, init_done=True, every_rank_seen=True)
            or (rows["where"] == "request_failed").any()):
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
    if t.height < 2 or not calm(ev):
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


def tests_failed(ev: Evidence) -> Verdict | None:
    """A test runner's own word that a test failed (parsers/test_reports.py: Go's ``--- FAIL: TestX``,
    unittest's ``FAILED (failures=1)``, pytest's ``1 failed``, gtest's ``[  FAILED  ]``): the run did not
    work, whatever else it says; which failure kind it is, the test's own output says (its assertion, a
    rank's error): undecided, with the test named, never healthy."""
    failed = ev.kinds(EventKind.TEST_WRONG).filter(pl.col("where") == "tests_failed").sort("file", "line")
    if not failed.height:
        return None
    passed = ev.kinds(EventKind.PROGRAM_END).filter(pl.col("where") == "tests_passed")
    also = f"; {passed.height} result line(s) say passed" if passed.height else ""
    named = "; ".join(f"`{m[:100]}`" for m in failed["message"].unique(maintain_order=True).head(3))
    return Verdict(Kind.UNDECIDED, f"the test run's own results say a test failed: {named} ({failed.height} "
                   f"failure line(s){also}): the run did not work; what failed inside it (an assertion, a "
                   f"rank's error, a timeout) is in that test's own output above its result line: collect it "
                   f"({ev.coverage.describe()})", [],
                   [Cited(r["file"], r["line"], r["message"]) for r in failed.head(2).iter_rows(named=True)])


def own_results(ev: Evidence) -> Verdict | None:
    """What a program says of its own results and pace: a benchmark's figures, an inference server's
    start-up and answers, one loop's progress bars at paces far apart, a test run's failed tests (one place
    in ``rules.RULES``)."""
    return tests_failed(ev) or benchmark_result(ev) or serving(ev) or paces_differ(ev)


def failures_inside_passed_tests(ev: Evidence) -> Verdict | None:
    """A test run whose failure lines all lie inside tests its runner says passed: each such line comes
    before a test's pass (Go's ``--- PASS``, unittest's ``ok``, ``ok (0.125s)``) with no failed result
    between (parsers/test_reports.py). A runner prints a test's result once the test returned and judged
    what it saw: the killed children, the errors and the aborts of a test of failure handling are what that
    test provokes and checks. Healthy, with the tests and the lines; a failed test, a test left unfinished
    (its passes are then no result, parsers/test_reports.py), a failure line after the last result: not
    this rule's."""
    results = ev.kinds(EventKind.PROGRAM_END, EventKind.TEST_WRONG).filter(
        pl.col("where").is_in(["tests_passed", "tests_failed"])).sort("file", "line")
    if not results.height or (results["where"] == "tests_failed").any():
        return None
    keys = ["file", "line"]
    signs = [df.select(keys) for df in (ev.trouble, ev.timeouts, ev.crashes, ev.cuda, ev.nccl_errors,
                                        ev.rendezvous, ev.exits, ev.stalls, ev.cancelled, ev.transport)
             if df.height and "file" in df.columns and "line" in df.columns]
    if not signs:
        return None  # (nothing failed: the end rules say it)
    bad = pl.concat([s.cast({"file": pl.Utf8, "line": pl.Int64}) for s in signs]).unique().sort(keys)
    closes = results.select("file", pl.col("line").alias("_r")).sort("file", "_r")
    # the first result after each failure line, in its file
    after = bad.join_asof(closes, left_on="line", right_on="_r", by="file", strategy="forward",
                          check_sortedness=False)  # (both sorted by file, then line)
    if after["_r"].null_count() or ev.pending.height:
        return None  # (a failure line after the last result: the run's own word does not cover it)
    passed = results.filter(pl.col("line").is_in(after["_r"].unique().implode()))
    said = "; ".join(f"`{m[:60]}`" for m in passed["message"].unique(maintain_order=True).head(3))
    first = ev.trouble.sort(keys).head(1) if ev.trouble.height else None
    what = f" (the first: `{first['message'][0][:120]}`)" if first is not None and "message" in first.columns \
        else ""
    return Verdict(Kind.HEALTHY, f"the test run's own results say each test passed ({results.height} "
                   f"result line(s), none failed: {said}); the {bad.height} failure line(s) logged{what} lie "
                   "inside tests that then passed: what a test of failure handling provokes and checks, not "
                   f"a failure of the run; no line after the last result says otherwise "
                   f"({ev.coverage.describe()})", [],
                   [Cited(r["file"], r["line"], r["message"]) for r in passed.head(2).iter_rows(named=True)])


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
    return Verdict(Kind.SLOW_PROGRESS, f"at step {n} the program's own speed is {mean:g} images/sec "
                   f"+/- {err:g} "
                   f"({many} at that step: `{r['message'].strip()}`): over {n} steps since the warm-up the "
                   f"step speeds spread by {spread:.1f} images/sec (the +/- is their standard error, "
                   f"std / sqrt({n})), as much as their mean, so the fastest steps ran at {2 * spread:.0f} "
                   "images/sec or more and most far slower: the job runs far below the pace it reaches; "
                   "slow, not hung, no error logged (a stall in the input pipeline or the interconnect "
                   f"between steps) ({ev.coverage.describe()})", [], lines(last, 2))


#: (s29) the fewest timer reports that say the loop moves: two points of one loop (each report the end of a step
#: it completed), timestamped apart, with the same figures (a short excerpt holds two; three for a trend)
MIN_REPORTS = 2


def timers_repeat(ev: Evidence) -> Verdict | None:
    """A trainer's phase timers (``time (ms) | compute_norm: 3.01 | ... | basic_step: 19.60``) and no step
    line: each report follows a step of the loop it times, so reports that repeat at a steady interval
    (their timestamps) with steady figures, up to the last line of their file, are steps that advance at a
    steady pace; nothing but calm lines: healthy for what is seen.

    DeepSpeed's FP16_Optimizer.step (deepspeed/runtime/fp16/fused_optimizer.py:303 at v0.10.0, :351 now)
    ends every optimizer step it completes with ``self.log_timers(STEP_TIMERS)`` (compute_norm,
    overflow_check, unscale_and_clip, basic_step, update_fp16; an overflow's skipped step logs only the first
    two), which prints one ``rank=0 time (ms) | name: ms | ...`` line through SynchronizedWallClockTimer.log
    (deepspeed/utils/timer.py:134) when wall_clock_breakdown is on."""
    ph = step_phases(ev)
    if (ph.height < MIN_REPORTS or ev.steps.height or ev.ticks.height
            or not calm(ev, init_done=True, every_rank_seen=True, nothing_looked_at=True)):
        return None
    last = last_per_file(ev.store.events).join(ph.select("file").unique(), on="file")
    if not (last["kind"] == EventKind.PHASE_TIMES).all():
        return None  # (a file whose last line is not its last timer report: what came after decides)
    text = pl.concat_str(pl.col("ts").fill_null(""), pl.lit(" "), pl.col("message").fill_null(""))
    at = (text.str.extract(r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)", 1)
          .str.replace(",", ".").str.replace("T", " ").str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False))
    one = ph.filter(pl.col("file") == ph["file"][0]).with_columns(at.alias("at"))
    gaps = one["at"].diff().dt.total_seconds().drop_nulls()
    if (gaps.len() < MIN_REPORTS - 1 or gaps.null_count() or gaps.min() <= 0
            or gaps.max() > pace.STEADY * gaps.min()):
        return None
    pairs = one.select(pl.col("message").str.extract_all(r"([\w\-]+): ([\d.]+)").alias("_p")).explode("_p")
    each = pairs.select(pl.col("_p").str.extract(r"^([\w\-]+):", 1).alias("phase"),
                        pl.col("_p").str.extract(r": ([\d.]+)$", 1).cast(pl.Float64, strict=False)
                        .alias("ms"))
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
                   f"figures ({top['phase']} {top['lo']:g}-{top['hi']:g} ms), up to the last line: each "
                   "report "
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
    (the report aggregates them) and in its validation; healthy for what is seen, however few lines. A rank
    of the world that left no line is no reason to doubt it: the report is of the epoch every rank
    completed (ESPnet's ``[host:0/3]`` names rank 0 of 3, and only rank 0 prints it)."""
    if not calm(ev, init_done=True, nothing_looked_at=True):
        return None
    msg = pl.col("message").fill_null("")
    for pattern, _source, meaning in EPOCH_DONE:
        done = ev.store.events.filter(msg.str.contains(pattern)).sort("file", "line")
        if not done.height:
            continue
        last = done.row(-1, named=True)
        epoch = done["message"].str.extract(pattern, 1)[-1]
        return Verdict(Kind.HEALTHY, f"the program reports epoch {epoch} done with its validation "
                       f"(`{last['message'][:160].strip()}`): {meaning}; no error, signal or stall is "
                       "logged; "
                       f"this covers what is seen ({ev.coverage.describe()})", [], lines(done.tail(2), 2))
    return None
