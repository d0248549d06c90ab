"""Progress on the ranks seen (issue 31, session 23: the first call): where an expert decides from the
progress lines of some ranks. ``progress_on_ranks_seen``: a counter that advances on one process's own lines,
its last line mid-loop, nothing but calm lines, is HEALTHY for the job though not every rank is seen (in
synchronous training a step ends only when every rank's collectives of that step complete); ``pace_halved``:
two or three progress lines, each slower, the last at half the first's pace or worse, are SLOW_PROGRESS;
``one_step_seen`` (s24): one or two progress lines, each file ending on one mid-loop, every rank seen among
them, nothing but calm lines, are HEALTHY, said as a snapshot (a bar alone, FLOPS alone or a low MFU stay
undecided)."""

from __future__ import annotations

import polars as pl

from tracekit import pace, progress_messages
from tracekit.evidence import Evidence, lines
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.rules_common import calm, last_per_file
from tracekit.parsers import any_of, series, trainer, work_done
from tracekit.rules_progress import MFU_LOW, lowest_mfu, own_figures
from tracekit.wording import fmt_ranks

#: a line that says a part of the run ended (an epoch: ``progress_messages.PARTS``): the last of a file's
#: progress lines there is a loop at its end, where a job may stop as well as go on
PART_ENDED = any_of(*(m.pattern for m in progress_messages.PARTS))


def pace_halved(ev: Evidence) -> Verdict | None:
    """Two or three progress lines that print one figure (``pace.halved``: each slower than the one before,
    a time per step that doubled, a throughput that halved from the first to the last), nothing but calm
    lines: SLOW_PROGRESS, with both figures and both lines. Not hung (the later line was printed), progress
    at half the pace or less: a slower phase, or the same job on more GPUs pasted after it (no scaling)."""
    if ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.mismatches or ev.stacks.height:
        return None
    got = pace.halved(pace.ticks(ev.store.events, each_figure=True))
    if got is None:
        return None
    a, b = got["before"], got["after"]
    return Verdict(Kind.SLOW_PROGRESS, f"{got['text']} (`{a['message'][:100]}`, then "
                   f"`{b['message'][:100]}`): the program still progresses at half its pace or less, not "
                   "hung; a slower phase, or the same job on more GPUs or nodes going no faster (no error "
                   f"logged; {ev.coverage.describe()})", [],
                   [Cited(a["file"], a["line"], a["message"]), Cited(b["file"], b["line"], b["message"])])


#: iteration paces: a time per iteration or its inverse, one measure whatever the unit
ITER_UNITS = r"(?i)^(?:s/it|sec/it|it/s|s/step|sec/step|steps?/s|ms/step|ms/it)$"


def paces_compared(ev: Evidence) -> Verdict | None:
    """(s26, issue 31) Paces pasted side by side (parsers/series.py's ``where="compared"``: lines that hold
    only a pace, each after its label: ``Multi-GPU (2 A100s) average speed: 2.59 s/it``, ``Single GPU (1
    A100) average speed: 2.61 it/s``), of one measure (iterations per second whichever way it is written, or
    one throughput unit), the slowest ``pace.TREND`` times slower than the fastest or more, nothing but calm
    lines: SLOW_PROGRESS with both figures and the factor. The user's own comparison: the same program
    running at a fraction of its pace elsewhere, progressing, not hung."""
    got = ev.kinds(EventKind.PROGRESS).filter(pl.col("where") == "compared").sort("file", "line")
    if got.height < 2 or ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.stacks.height:
        return None
    figure = pl.col("message").str.extract_groups(series.PACE_ALONE)
    got = got.with_columns(figure.struct.field("v").cast(pl.Float64).alias("v"),
                           figure.struct.field("unit").str.to_lowercase().alias("unit"))
    per = pl.col("unit").str.contains(r"^(?:s|sec|ms)/")
    it = pl.col("unit").str.contains(ITER_UNITS)
    # (iterations per second: a time per iteration inverted, ms to s)
    speed = (pl.when(per).then(1 / (pl.col("v") * pl.when(pl.col("unit").str.starts_with("ms")).then(1e-3)
                                    .otherwise(1.0)))
             .otherwise(pl.col("v")))
    got = got.with_columns(speed.alias("speed"), pl.when(it).then(pl.lit("it/s")).otherwise("unit").alias("what"))
    got = got.filter(pl.col("speed") > 0)
    if got["what"].n_unique() != 1 or got.height < 2:
        return None  # (figures of different measures: nothing to compare)
    slow, fast = got.sort("speed").row(0, named=True), got.sort("speed").row(-1, named=True)
    factor = fast["speed"] / slow["speed"]
    if factor < pace.TREND:
        return None
    return Verdict(Kind.SLOW_PROGRESS, f"the excerpt compares the program's pace: `{slow['message'][:100]}` is "
                   f"{factor:.2g}x slower than `{fast['message'][:100]}` ({_pace(slow)} against "
                   f"{_pace(fast)}); it progresses, slowly, not hung: where more GPUs or nodes go slower per "
                   "step, their collectives (the interconnect) or the input pipeline hold each step; "
                   "NCCL_DEBUG=INFO names the transport (`via NET/Socket`, `via SHM` where P2P is off), a "
                   f"profile shows where the step goes (no error logged; {ev.coverage.describe()})", [],
                   [Cited(slow["file"], slow["line"], slow["message"]),
                    Cited(fast["file"], fast["line"], fast["message"])])


def _pace(r: dict) -> str:
    if r["what"] != "it/s":
        return f"{r['speed']:g} {r['unit']}"
    s = 1 / r["speed"]
    return f"{s * 1e3:.0f} ms per step" if s < 1 else f"{s:.3g} s per step"


#: a compile stage this long or longer holds the run up: the program waits on JAX/XLA, not on its collectives
#: (JAX's guide to slow compilation, docs/debugging: a stage of seconds is the usual, minutes the trouble)
SLOW_COMPILE_S = 60.0


def compile_times(ev: Evidence) -> Verdict | None:
    """(s26, issue 31) A JAX program's compile stages timed as each finished (``progress_messages.COMPILE_STAGES``:
    ``Finished XLA compilation of jit(train_step) in 10.2 sec``), no step line, nothing but calm lines: one
    stage of ``SLOW_COMPILE_S`` or more is SLOW_PROGRESS (the run waits on the compiler), else HEALTHY so far,
    each with the slowest stage, its function and its seconds."""
    st = ev.kinds(EventKind.PHASE_TIMES).filter(pl.col("where") == "compile").sort("file", "line")
    if not st.height or ev.steps.height or ev.ticks.height:
        return None
    if ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.stacks.height or ev.pending.height:
        return None
    said = pl.concat([st.filter(pl.col("message").str.contains(m.pattern)).with_columns(
        pl.col("message").str.extract_groups(m.pattern).alias("_g")).unnest("_g")
        for m in progress_messages.COMPILE_STAGES], how="diagonal_relaxed")
    # (the trace names the function bare, the lowering and the compile as ``jit(name)``)
    said = said.with_columns(pl.col("s").cast(pl.Float64, strict=False),
                             pl.col("fun").str.replace(r"^p?jit\((.*)\)$", "$1").alias("_f")
                             ).filter(pl.col("s").is_not_null())
    if not said.height:
        return None
    top = said.sort("s").row(-1, named=True)
    funs = said["_f"].n_unique()
    again = said.filter(pl.col("stage") == "XLA compilation").group_by("fun").len().filter(pl.col("len") > 1)
    what = (f"JAX's own timers: {top['stage']} of {top['fun']} took {top['s']:.4g} s "
            f"(`{top['message'][:120]}`; {said.height} stage(s) of {funs} function(s))")
    what += (f"; {again['fun'][0]} compiled {again['len'][0]} times" if again.height else "")
    cited = [Cited(top["file"], top["line"], top["message"])]
    if top["s"] >= SLOW_COMPILE_S:
        return Verdict(Kind.SLOW_PROGRESS, f"{what}: the run waits on the compiler, not on its collectives, "
                       "slowly, not hung; check what makes the graph large (a Python loop unrolled: use "
                       "lax.scan), what recompiles it (shapes or static arguments that change), and the "
                       "persistent compilation cache (jax_compilation_cache_dir) across runs "
                       f"(no error logged; {ev.coverage.describe()})", [], cited)
    return Verdict(Kind.HEALTHY, f"{what}, each stage finished and no error, signal or stall is logged: "
                   "healthy so far; the steps after the compile are not in the excerpt "
                   f"({ev.coverage.describe()})", [], cited)


def progress_on_ranks_seen(ev: Evidence) -> Verdict | None:
    """A counter that advances across one process's own lines (a step, batch, iteration or epoch
    number: two values or more in one file, of one rank or of one unnamed process), its last line
    mid-loop (not a bar at 100%, a step at its total or an epoch said finished: a loop that ended and
    nothing after it is where a job stops), nothing but calm lines, no pace that falls, and not every
    rank of the world seen (or the world size unknown): HEALTHY for the job, the ranks not seen
    inferred. In synchronous data-parallel training a step ends only when every rank's collectives of
    that step complete, so steps that advance on one rank are evidence that its whole group advances;
    the summary says which ranks were seen, how many steps, and that the others are inferred from the
    synchronous steps."""
    st = ev.steps
    if (ev.clean_end or ev.coverage.complete or not st.height or ev.pace["slow"] or ev.pace["falling"]
            or not calm(ev, init_done=True, nothing_looked_at=True)):
        return None
    own = (st.with_columns(pl.col("rank").fill_null(-1).alias("_who"))
           .group_by("file", "_who").agg(pl.col("step").n_unique().alias("n"),
                                         pl.col("step").min().alias("lo"), pl.col("step").max().alias("hi"),
                                         pl.len().alias("lines"))
           .filter(pl.col("n") > 1).sort("lines", descending=True))
    if not own.height:
        return None  # (one value per process: a snapshot, not progress; or values from different processes)
    # the last progress line of each file that holds steps: a loop at its end there is where a job stops
    last = last_per_file(ev.kinds(EventKind.STEP, EventKind.PROGRESS).join(own.select("file").unique(), on="file"))
    at_end = pace.at_loop_end() | pl.col("message").fill_null("").str.contains(PART_ENDED)
    if last.select(at_end).to_series().any():
        return None
    top = own.row(0, named=True)
    # (said of the loop its last step line is in, those lines of its total: a data-preparation bar before the
    # training, `400/400 examples`, is no step count of the run)
    mine = (st.with_columns(pl.col("rank").fill_null(-1).alias("_who"))
            .filter((pl.col("file") == top["file"]) & (pl.col("_who") == top["_who"])).sort("line"))
    loop = mine.filter(pl.col("max_steps").eq_missing(mine["max_steps"][-1]))
    # (s31) every rank whose own lines advance is named, not only the one with the most lines
    named = sorted(r for r in own["_who"].unique().to_list() if r >= 0)
    who = ("the program's lines (no rank named)" if top["_who"] < 0 else f"rank {top['_who']}'s lines"
           if len(named) < 2 else f"ranks {fmt_ranks(named)}'s lines each")
    return Verdict(Kind.HEALTHY, f"progress on the ranks seen: {who} advanced steps {loop['step'].min()} -> "
                   f"{loop['step'].max()} ({loop.height} step lines, the last of them mid-loop){own_figures(ev)}, "
                   "and no error, signal or stall is logged; in synchronous training a step ends only when every "
                   "rank's collectives of that step complete, so the ranks not seen are inferred to advance "
                   f"with them ({ev.coverage.describe()})", [], lines(st.sort("file", "line"), 2))


#: a serving engine's periodic stat line, its figures read where its code prints them: vLLM's
#: ``Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs,
#: Swapped: %d reqs, Pending: %d reqs, ...`` (vllm/engine/metrics.py LoggingStatLogger.log, the
#: ``logger.info("Avg prompt throughput: ...`` call) and V1's ``Engine 000: ... Running: %d reqs, Waiting:
#: %d reqs`` (vllm/v1/metrics/loggers.py); groups: prompt, generation, running, queued
SERVER_STATS = (r"Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s, "
                r"Running: (\d+) reqs,(?: Swapped: \d+ reqs,)? (?:Pending|Waiting): (\d+) reqs")


def queue_drains(ev: Evidence) -> Verdict | None:
    """A serving engine's stat lines (``SERVER_STATS``), 3 or more in one file, each with requests running
    and tokens generated, whose queue of waiting requests shrinks from the first line to the last, nothing
    but calm lines: HEALTHY. Its throughput follows its load (prompts admitted in one interval, none in the
    next) and need not hold steady; a queue that drains while requests run means requests finish and new
    ones are admitted. Not where the queue stays as it was (nothing shows a request finishing: a server at a
    few tokens/s may be the complaint) or a line generates nothing."""
    if not calm(ev, init_done=True, nothing_looked_at=True) or ev.pace["slow"] or ev.pace["falling"]:
        return None
    msgs = ev.kinds(EventKind.PROGRESS, EventKind.STEP)
    if not msgs.height:
        return _bench_crawls(ev)
    got = (msgs.with_columns(*(pl.col("message").str.extract(SERVER_STATS, i + 1).cast(pl.Float64, strict=False)
                               .alias(n) for i, n in enumerate(("prompt", "gen", "running", "queued"))))
           .drop_nulls("queued").sort("file", "line"))
    if not got.height:
        return None
    if not got.height:
        return _bench_crawls(ev)
    top = got.group_by("file").len().sort("len", descending=True).row(0, named=True)
    s = got.filter(pl.col("file") == top["file"])
    if (s.height < 3 or (s["gen"] <= 0).any() or (s["running"] <= 0).any()
            or not s["queued"][-1] < s["queued"][0]):
        return None
    a, b = s.row(0, named=True), s.row(-1, named=True)
    return Verdict(Kind.HEALTHY, f"the serving engine keeps serving: {s.height} stat lines, "
                   f"{s['running'].min():g}-{s['running'].max():g} requests running, generation throughput "
                   f"{s['gen'].min():g}-{s['gen'].max():g} tokens/s on every line, and the queue of waiting "
                   f"requests drained from {a['queued']:g} to {b['queued']:g}: requests finish and new ones are "
                   f"admitted, the throughput follows the load; no error, signal or stall is logged "
                   f"({ev.coverage.describe()})", [],
                   [Cited(a["file"], a["line"], a["message"]), Cited(b["file"], b["line"], b["message"])])


#: a progress bar that redraws in place (tqdm's `45%|####  | 228/500 [...]`, Keras' `228/625 [=====>....] -
#: ETA: 6:32`, its pasted tail `[00:40<7:58:13, 5.75s/it]`): the one bar a user pastes is where they saw it
#: stop as often as not, so a bar alone is no step seen done (``one_step_seen``)
BAR = any_of(trainer.TQDM, trainer.TQDM_TAIL, trainer.KERAS_BAR)


def one_step_seen(ev: Evidence) -> Verdict | None:
    """One or two progress lines of a loop (a step with its loss or its pace: ``parsers/series.py``'s lone
    lines, a trainer's step line), too few for a trend, each file ending on one of them mid-loop, every rank
    seen among them, and nothing but calm lines: HEALTHY, said with the step, the pace and the ranks, and that
    the excerpt ends there. What a reader of the excerpt calls healthy: the loop ran a step after start-up and
    nothing failed. Not where a file ends on something else (a start-up, a save, a line no parser reads), a
    loop at its total, a progress bar (``BAR``), a pace that is FLOPS alone (the hardware's peak decides it)
    or an MFU the program prints under ``MFU_LOW`` percent (its own word that the GPUs idle:
    ``pace_unjudged`` says it)."""
    if (ev.progressed or ev.clean_end or ev.pace["slow"] or ev.pace["falling"]
            or not calm(ev, init_done=True, nothing_looked_at=True)):
        return None
    st = pl.concat([ev.steps.select("file", "line", "rank", "step", "message"),
                    ev.ticks.select("file", "line", "rank", "step", "message")]).unique(["file", "line"])
    if not st.height or ev.ticks.height >= pace.MIN_TICKS:
        return None  # (none; or enough figures for a trend: the pace rules' call, left undecided by them)
    ends = ev.store.files.select("file", pl.col("last_line").alias("line"))
    if ends.join(st, on=["file", "line"], how="anti").height:
        return None  # (a file whose last line is no progress line: where it stopped is that line)
    last = ev.steps.join(ends, on=["file", "line"], how="semi")
    if last.height and last.select(pace.at_loop_end()).to_series().any():
        return None  # (a loop at its total: where a job may stop as well as go on)
    whose = st["rank"].drop_nulls().unique().sort().to_list()
    if set(ev.coverage.seen) - set(whose) and (whose or len(ev.coverage.seen) > 1):
        return None  # (a rank seen that printed no progress: its own state is not known)
    text = st["message"].fill_null("")
    if text.str.contains(BAR).any():
        return None
    mfu = lowest_mfu(text)
    t = ev.ticks.tail(1)
    flops_only = t.height and "flops" in (t["unit"][0] or "").lower()
    if (mfu is not None and mfu < MFU_LOW) or flops_only:
        return None
    top = st.sort("file", "line").tail(1).row(0, named=True)
    on = f"rank{'s' if len(whose) > 1 else ''} {','.join(map(str, whose))}" if whose else "the program"
    said = f"{st.height} progress line(s), the last `{top['message'][:140]}`"
    what = (f"{on} reached step {top['step']} ({said}){own_figures(ev)}" if top["step"] is not None
            else f"{on} printed its progress ({said}){own_figures(ev)}")
    why = ("a synchronous job's step ends only when every rank joins its collectives"
           if top["step"] is not None else "it was doing its work when the excerpt was taken")
    return Verdict(Kind.HEALTHY, f"{what}, and no error, warning of a stall or timeout is logged; the excerpt "
                   f"ends there, mid-loop: {why}; one or two lines are a snapshot, not a trend (a slowdown "
                   f"after them is not seen) ({ev.coverage.describe()})", [],
                   [Cited(top["file"], top["line"], top["message"])])


#: (s25) a generation throughput under this many tokens/s summed over every running request: below what one
#: decode stream of an LLM gets from one GPU (decoding reads every weight once per token: a 7B model in bf16
#: on an A100, 14 GB at 2 TB/s, runs at about 100 tokens/s; a 70B one over 8 GPUs at 20-40)
CRAWL = 10.0


def serving_crawls(ev: Evidence) -> Verdict | None:
    """A serving engine's stat lines (``SERVER_STATS``), 3 or more in one file, every one with requests
    running and a generation throughput above 0 but under ``CRAWL`` tokens/s, nothing but calm lines:
    SLOW_PROGRESS. Not hung (every interval generated tokens), but the whole engine generates fewer tokens a
    second than a single decode stream gets from one GPU: the engine waits on something between its steps
    (pipeline stages across nodes, a socket transport, host offload)."""
    if not calm(ev, init_done=True, nothing_looked_at=True):
        return None
    msgs = ev.kinds(EventKind.PROGRESS, EventKind.STEP)
    if not msgs.height:
        return _bench_crawls(ev)
    said = pl.col("message").str.extract
    got = (msgs.with_columns(*(said(SERVER_STATS, i + 1).cast(pl.Float64, strict=False).alias(n)
                               for i, n in enumerate(("prompt", "gen", "running", "queued"))))
           .drop_nulls("gen").sort("file", "line"))
    if not got.height:
        return _bench_crawls(ev)
    top = got.group_by("file").len().sort("len", descending=True).row(0, named=True)
    s = got.filter(pl.col("file") == top["file"])
    if s.height < 3 or (s["running"] <= 0).any() or (s["gen"] <= 0).any() or (s["gen"] >= CRAWL).any():
        return None
    a, b = s.row(0, named=True), s.row(-1, named=True)
    def span(c: str) -> str:
        return f"{s[c].min():g}" if s[c].min() == s[c].max() else f"{s[c].min():g}-{s[c].max():g}"

    return Verdict(Kind.SLOW_PROGRESS, f"the serving engine generates only {span('gen')} tokens/s with "
                   f"{span('running')} requests running, on each of its "
                   f"{s.height} stat lines: under {CRAWL:g} tokens/s in all, less than one decode stream "
                   "gets from one GPU; not hung (every interval generated tokens), but the engine waits "
                   "between its steps (pipeline stages across nodes, a socket transport, host offload): "
                   "compare with one node's "
                   f"throughput (no error logged; {ev.coverage.describe()})", [],
                   [Cited(a["file"], a["line"], a["message"]), Cited(b["file"], b["line"], b["message"])])


def _bench_crawls(ev: Evidence) -> Verdict | None:
    """(s30) A serving benchmark's result (parsers/work_done.py ``SERVED_RATE``: ``Output token throughput
    (tok/s): 9.34`` under its results banner) under ``CRAWL`` tokens/s over all its requests: SLOW_PROGRESS,
    with its time per output token where it prints one. The requests completed (the benchmark ran to its
    summary), but the server generated fewer tokens a second in all than one decode stream gets from one
    GPU."""
    ends = ev.kinds(EventKind.PROGRAM_END)
    rate = pl.col("message").str.extract(work_done.SERVED_RATE, 1).cast(pl.Float64, strict=False)
    got = ends.with_columns(rate.alias("rate")).drop_nulls("rate").sort("file", "line")
    if not got.height or (got["rate"] >= CRAWL).any() or (got["rate"] <= 0).any():
        return None
    r = got.row(0, named=True)
    return Verdict(Kind.SLOW_PROGRESS, f"the serving benchmark completed its requests at only {r['rate']:g} "
                   f"output tokens/s in all (`{r['message'].strip()[:80]}`{_tpot(ev)}): under {CRAWL:g} "
                   "tokens/s, less than one decode stream gets from one GPU; not hung, slow: tensor-parallel "
                   "collectives over PCIe or a socket, host offload, or kernels unfit for the GPU; compare "
                   "with the model's figures on one GPU of the same kind (no error logged; "
                   f"{ev.coverage.describe()})", [],
                   [Cited(r["file"], r["line"], r["message"])])


def _tpot(ev: Evidence) -> str:
    """``, Mean TPOT 353.32 ms``: the benchmark's mean time per output token, where its line was read."""
    m = ev.kinds(EventKind.PROGRAM_END)["message"].str.extract(work_done.SERVED_TPOT, 1).drop_nulls()
    return f", Mean TPOT {m[0]} ms" if m.len() else ""


#: (s29) NCCL's proxy's word that a local rank closed its connection to it: at a communicator's teardown every
#: process says it (src/proxy.cc ``proxyService``: `[Service thread] Connection closed by localRank %d`)
CLOSED_AT_TEARDOWN = r"\bNCCL INFO\b.*\bConnection closed by localRank \d+"


def torn_down(ev: Evidence) -> Verdict | None:
    """(s29) Every rank seen destroyed its communicators (``ncclCommDestroy``'s ``comm 0x.. rank R nranks N
    ... - Destroy COMPLETE``, src/init.cc; never ``Abort COMPLETE``, the error path's ``ncclCommAbort``), and
    nothing but calm lines, the proxy's ``Connection closed by localRank`` lines of that teardown aside:
    HEALTHY. A program destroys its communicators (``destroy_process_group()``) once its collectives are done,
    at its end; a rank that waits in a collective never reaches it."""
    comms = ev.store.comms
    done = comms.filter(pl.col("state") == "destroy_complete")
    if not done.height or comms.filter(pl.col("state") == "abort_complete").height:
        return None
    told = ev.kinds(EventKind.TELLING_LINE)
    told = told.filter(~pl.col("message").fill_null("").str.contains(CLOSED_AT_TEARDOWN)) if told.height else told
    if not calm(ev, init_done=True, nothing_looked_at=True) or told.filter(pl.col("where") != "last").height:
        return None
    ranks = set(done.select(pl.coalesce("global_rank", "rank"))[:, 0].drop_nulls().to_list())
    if not ranks or not set(ev.coverage.seen) <= ranks:
        return None  # (a rank seen that did not tear down: where it stopped is not said)
    first = done.sort("file", "line").row(0, named=True)
    shown = ",".join(map(str, sorted(ranks)))
    return Verdict(Kind.HEALTHY, f"rank(s) {shown} destroyed their NCCL communicators ({done.height} `Destroy "
                   "COMPLETE` line(s), ncclCommDestroy at the program's end, no abort) and no error, signal or "
                   "stall is logged: the collectives before it completed, and a rank that waits in one never "
                   f"reaches its teardown ({ev.coverage.describe()})", [],
                   [Cited(first["file"], first["line"], "Destroy COMPLETE")] if first["line"] is not None else [])
