"""Rules over what a program says of itself: its own progress and end lines, its step times, throughput
and phase timers (nccl-tests' tables are ``rules_nccl_tests``'s).

Each is ``rule(evidence) -> Verdict | None`` and sits in ``rules.RULES`` after the rules of failure
(a crash, a timeout, a transport error decide first) and before ``failed_without_cause``: each reads
only runs with no failure sign.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit import pace, pace_moves, progress_messages, tick_bandwidth
from tracekit.parsers import any_of, timings
from tracekit.evidence import C10D_FRAME, Evidence, lines
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.rules_common import step_phases
from tracekit.wording import duration, fmt_ranks

#: a gap between step lines this many times the others' (and at least GAP_S seconds) is a stop, not noise
GAP_X, GAP_S = 5.0, 60.0
#: a first logged step at or below this is the run's start: the gap after it holds the warm-up
WARM_UP = 10
#: a running average (tf_cnn_benchmarks' `images/sec: 195.8 +/- 0.5`) that drops this share after holding
#: steady hides steps far slower than the rest; a rate per interval must halve
MEAN_DROP, RATE_DROP = 0.03, 0.5
#: a rate per interval that is lower at every report (4 or more) and this much lower in all: slower and slower
DECLINE = 0.08
#: a phase of one iteration this many times forward + backward (and over a second) is where the time goes
PHASE_X = 5.0
#: an end said for a whole group of workers by the agent that ran them
#: a check's result said for every node of the job (DLRover's master after its network check)
#: (DLRover's master after its network check, FlagScale's straggler report: progress_messages.CHECKS)
JOB_CHECKED = any_of(*(m.pattern for m in progress_messages.CHECKS))
# (s18) torchelastic's `_exit_barrier` (torch/distributed/elastic/agent/server/api.py), entered only from the
# SUCCEEDED branch: `Local worker group finished (SUCCEEDED)` and, once every agent reached it, `Done waiting
# for other agents` (tracekit/progress_messages.py)
GROUP_END = (r"torchelastic: worker .*SUCCEEDED|worker group successfully finished|Local worker group finished "
             r"\((?:WorkerState\.)?SUCCEEDED\)|Done waiting for other agents\. Elapsed|" + JOB_CHECKED)


def _calm(ev: Evidence) -> bool:
    return not (ev.trouble.height or ev.failure_signs or ev.stalls.height)



def step_gap(ev: Evidence) -> Verdict | None:
    """The time between two step lines (their timestamps) far longer than between the others, and
    the steps went on after: the run stopped that long and resumed, slow, not hung."""
    if not _calm(ev):
        return None
    text = pl.concat_str(pl.col("ts").fill_null(""), pl.lit(" "), pl.col("message").fill_null(""))
    at = (text.str.extract(r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})", 1).str.replace("T", " ")
          .str.to_datetime("%Y-%m-%d %H:%M:%S", strict=False))
    st = ev.steps.sort("file", "line").with_columns(at.alias("at")).filter(pl.col("at").is_not_null())
    one = st.unique("step", keep="first", maintain_order=True).sort("step")
    gaps = one.with_columns(pl.col("at").diff().dt.total_seconds().alias("s"),
                            pl.col("step").shift().alias("from"), pl.col("step").diff().alias("n"))
    # the steps right after the run's start carry its warm-up (compilation, allocator, first connects);
    # a log that starts mid-run has no warm-up in it
    start = one.height and one["step"].min() <= WARM_UP
    warm = pl.col("from") == one["step"].min() if start else pl.lit(False)
    gaps = gaps.filter(pl.col("s").is_not_null() & (pl.col("n") > 0) & ~warm)
    gaps = gaps.with_columns((pl.col("s") / pl.col("n")).alias("per"))
    if gaps.height < 3:
        return None
    worst = gaps.sort("per").tail(1).row(0, named=True)
    usual = gaps.filter(pl.col("line") != worst["line"])["per"].median()
    if not usual or worst["per"] < GAP_X * usual or worst["s"] < GAP_S:
        return None
    said = (f"steps {worst['from']} -> {worst['step']} took {duration(worst['s'])}, "
            f"{worst['per'] / usual:.0f}x "
            f"the pace of the other step lines ({duration(usual * worst['n'])} for as many steps)")
    stop = duration(worst["s"] - usual * worst["n"])
    return Verdict(Kind.SLOW_PROGRESS, f"{said}: the run stopped for about {stop} between those lines and "
                   f"went on; slow, not hung (steps {one['step'].min()} -> {one['step'].max()}, no error "
                   "logged); a stack dump of every rank during such a gap (py-spy dump) says where it "
                   "waits", [], [Cited(worst["file"], worst["line"], worst["message"])])


def throughput_drop(ev: Evidence) -> Verdict | None:
    """A throughput the steps print that falls: a running average (``images/sec: 195.8 +/- 0.5``) that
    drops after holding steady, or a rate per interval that halves: slow steps, the run goes on."""
    if not _calm(ev):
        return None
    msg = pl.col("message")
    rate = pl.coalesce(msg.str.extract(pace.RATE_AFTER_UNIT, 1),
                       msg.str.extract(r"([\d][\d,.]*) (?:samples|images|tokens?)/s(?:ec)?\b", 1))
    rate = rate.str.replace_all(",", "").cast(pl.Float64, strict=False)
    st = ev.steps.with_columns(rate.alias("rate"), msg.str.contains(r"/sec: [\d.]+ \+/- ").alias("mean"))
    per = st.filter(pl.col("rate").is_not_null()).group_by("step").agg(
        pl.col("rate").median(), pl.col("mean").all(), pl.col("file").first(), pl.col("line").min(),
        pl.col("message").first()).sort("step")
    if per.height < 3:
        return None
    last, before = per.row(-1, named=True), per.head(per.height - 1)
    held = before["rate"].tail(2)
    if last["mean"]:
        if not (held.max() <= 1.01 * held.min() and last["rate"] < (1 - MEAN_DROP) * held.min()):
            return None
        how = (f"a running average over the run: to fall {1 - last['rate'] / held.min():.0%} after "
               f"holding steady, the steps since {before['step'][-1]} ran far slower than the others (a stop "
               "of seconds to minutes)")
    elif last["rate"] < RATE_DROP * before["rate"].median():
        how = f"under {RATE_DROP:.0%} of the median {before['rate'].median():g} before"
    else:
        # a rate that falls report after report (4 or more), by DECLINE in all: each step slower
        r = per["rate"]
        if per.height < 4 or (r.diff().drop_nulls() > 0).any() or r[-1] > (1 - DECLINE) * r[0]:
            return None
        held = r.head(1)
        how = (f"{1 - r[-1] / r[0]:.0%} over steps {per['step'][0]} -> {per['step'][-1]}, lower at every "
               "report")
    return Verdict(Kind.SLOW_PROGRESS, f"the throughput fell from {held[-1]:g} to {last['rate']:g} at step "
                   f"{last['step']} ({how}); the steps go on: slow, not hung, no error logged", [],
                   [Cited(last["file"], last["line"], last["message"])])


def phase_dominates(ev: Evidence) -> Verdict | None:
    """A trainer's timers (``time (ms) | forward: ... | backward: ... | optimizer: ...``) where one phase
    takes many times forward and backward together: each iteration waits there."""
    ph = step_phases(ev)
    if not ph.height or not _calm(ev):
        return None
    pairs = ph.with_columns(pl.col("message").str.extract_all(r"[\w\- ]+: [\d.]+").alias("_p")).explode("_p")
    ms = pl.col("_p").str.extract(r": ([\d.]+)$", 1).cast(pl.Float64, strict=False)
    phase = pl.col("_p").str.extract(r"^\s*([\w\- ]+?):", 1)
    pairs = pairs.with_columns(phase.alias("phase"), ms.alias("ms"))
    per = pairs.group_by("phase").agg(pl.col("ms").median(), pl.col("file").first(), pl.col("line").first(),
                                      pl.col("message").first())
    compute = per.filter(pl.col("phase").str.contains(r"^(?:forward|backward)"))["ms"].sum()
    top = per.filter(~pl.col("phase").str.contains(r"^(?:forward|backward)")).sort("ms").tail(1)
    if not compute or not top.height:
        return None
    t = top.row(0, named=True)
    if t["ms"] < PHASE_X * compute or t["ms"] < 1000:
        return None
    return Verdict(Kind.SLOW_PROGRESS, f"each iteration spends {t['ms'] / 1e3:.1f} s in {t['phase']} against "
                   f"{compute / 1e3:.1f} s in forward and backward ({t['ms'] / compute:.0f}x): that phase is "
                   "where the time goes (with ZeRO the optimizer step holds the gradients' reduce and the "
                   "parameters' gather: a slow interconnect shows there); the run advances, slowly", [],
                   [Cited(t["file"], t["line"], t["message"])])


def every_rank_ended(ev: Evidence) -> Verdict | None:
    """Every rank seen says it ended (its own end line, a worker SUCCEEDED, its communicators destroyed),
    no rank of a known world is unseen, and nothing failed: healthy."""
    if not _calm(ev) or ev.pending.height or ev.pace["slow"] or ev.pace["falling"]:
        return None  # (a slow step: slow_steps says it)
    # a trainer's step line at its last step ends the training; a progress bar at 100% (tqdm's `Map: 100%|...|
    # 669/669`, an epoch's `Training: 100%`) ends one loop of the program, not the program
    last = ev.steps.filter((pl.col("kind") == EventKind.STEP) & pl.col("max_steps").is_not_null()
                           & (pl.col("step") >= pl.col("max_steps")))
    cols = ("file", "line", "rank", "message", "where")
    ends = pl.concat([ev.kinds(EventKind.PROGRAM_END, EventKind.CLEAN_EXIT).select(cols),
                      last.select(cols)]).sort("file", "line")
    if not ends.height:
        return None
    # torchelastic's agent says SUCCEEDED of a worker (or "worker group successfully finished") only once
    # every worker of its group ended with 0 (torch/distributed/elastic/agent/server/api.py)
    group = ends["message"].str.contains(GROUP_END)
    if ev.coverage.missing and not group.all():
        return None
    ended = set(ends["rank"].drop_nulls().to_list())
    destroyed = ev.store.comms.filter(pl.col("state") == "destroy_complete")
    ended |= set(destroyed.select(pl.coalesce("global_rank", "rank"))["global_rank"].drop_nulls().to_list())
    seen = set(ev.coverage.seen)
    checked = ends["message"].str.contains(JOB_CHECKED)
    if checked.any():
        ended |= seen  # (the master speaks for every node of the job, the ranks seen among them)
    if seen - ended or (not seen and ends["rank"].drop_nulls().len()):
        return None
    # (s25) a result printed over the run, or by each rank (parsers/work_done.py): the work done, said so
    results = ends["where"].is_in(["result", "saved"]).all()
    saved = (ends["where"] == "saved").all()  # (s28: a checkpoint or snapshot written: parsers/work_done.py)
    one = len(ended) == 1  # ("rank 3 ended cleanly", "ranks 0-1 each ended cleanly")
    who_ended = (f"{'rank' if one else 'ranks'} {fmt_ranks(sorted(ended))}{'' if one else ' each'} "
                 f"{'printed its result' if results else 'ended cleanly'}" if ended
                 else "the program saved its work" if saved
                 else "the program printed its results over the run" if results
                 else "the program said it ended cleanly")
    if (ends["where"] == "exited").any():  # (s28: parsers/work_done.py EXITED)
        who_ended += (" (torch's exit-time warning that the process group was not destroyed: the process reached "
                      "its program's exit)")
    if (ends["where"] == "terminated").any():  # (s32: parsers/work_done.py TERMINATED)
        who_ended += (" (c10d's warning printed as a process terminates: the processes reached their exit; the "
                      "unwaited collective it names is advice about async collectives, not a hang)")
    if checked.any():
        said_by = ends.filter(checked)["message"][0]
        check = next(m for m in progress_messages.CHECKS if re.search(m.pattern, said_by))
        who_ended = (f"{who_ended} ({check.meaning})" if ended else
                     f"the job's own check of every rank it measured passed ({check.meaning})")
    elif group.any():
        who_ended += " (torchelastic's agent says so only once every worker of its group exited with 0)"
    # (a run's own summary, unittest's `Ran 3 tests in 12.514s: OK`, says more than one test's `... ok`)
    said = ends.sort(pl.col("where").fill_null("") == "tests_passed", "file", "line", maintain_order=True)
    return Verdict(Kind.HEALTHY, f"{who_ended} ({said['message'][0]}"
                   + (f"; {destroyed.height} communicator(s) destroyed" if destroyed.height else "")
                   + f") and no error, signal or stall is logged ({ev.coverage.describe()})", [],
                   lines(ends, 4))


def program_stall(ev: Evidence) -> Verdict | None:
    """The program's own watchdog names the ranks that made no progress and the step each stopped at:
    at one step, none is behind (the hang is inside that step); at different steps, the ranks at the
    lowest step hold the others."""
    st = ev.kinds(EventKind.STALL).filter((pl.col("where") == "program") & pl.col("rank").is_not_null())
    if not st.height or ev.crashes.height or ev.cuda.height or ev.transport.height:
        return None
    per = st.group_by("rank").agg(pl.col("step").max(), pl.col("message").first()).sort("rank")
    ranks = per["rank"].to_list()
    secs = st["message"].str.extract(r"(?i)\bfor (\d+)\s*s", 1).cast(pl.Int64, strict=False).max()
    long = f" for {secs} s" if secs else ""
    steps = per["step"].drop_nulls().unique().sort()
    if steps.len() > 1:
        low = per.filter(pl.col("step") == steps[0])["rank"].to_list()
        high = per.filter(pl.col("step") > steps[0])["rank"].to_list()
        return Verdict(Kind.DEADLOCK, f"{_who(low)} made no progress past step {steps[0]}{long} while "
                       f"{_who(high)} got to step {steps[-1]} (the program's own watchdog): {_who(low)} "
                       "stopped first and the others wait for it in the next step's collectives", low,
                       lines(st, 6))
    at = f" past step {steps[0]}" if steps.len() else ""
    return Verdict(Kind.UNDECIDED, f"{_who(ranks)} made no progress{at}{long} (the program's own watchdog): "
                   "every rank that reports stops at the same step and none is behind, so the hang is inside "
                   "that step; which collective each rank waits in a stack dump of every rank (py-spy dump "
                   "--native) or NCCL's RAS report (ncclras) says", [], lines(st, 6))


def _who(ranks: list[int]) -> str:
    return f"{'rank' if len(set(ranks)) == 1 else 'ranks'} {fmt_ranks(ranks)}"


#: a program's own figure of its pace per step line: seconds per N steps (TensorFlow's `(1.941 sec)`), it/s
#: or s/it (tqdm), ms/step (Keras), a throughput (samples/s, images/sec, token/s)
OWN_PACE = (r"\((?P<sec>[\d.]+) sec\)|(?P<its>[\d.]+)\s*it/s\b|(?P<sit>[\d.]+)\s*s/it\b|(?P<ms>[\d.]+)ms/step"
            r"|(?P<rate>[\d.]+) (?:samples|images|tokens?)/s(?:ec)?\b")
#: steady: the largest of the figures at most this many times the smallest
STEADY = 1.5


def steady_own_pace(ev: Evidence) -> Verdict | None:
    """Steps that advance at a pace the program prints itself (its seconds per interval, it/s, ms/step,
    a throughput), steady, and nothing but calm lines: healthy, as steady_progress says of a pace read
    from timestamps."""
    if (not ev.progressed or not _calm(ev) or ev.missing or ev.mismatches or ev.coverage.missing
            or ev.pace["slow"] or ev.pace["falling"]):
        return None
    g = pl.col("message").str.extract_groups(OWN_PACE).struct
    per = ev.steps.sort("file", "line").unique("step", keep="first", maintain_order=True).with_columns(
        pl.coalesce(*(g.field(f).cast(pl.Float64, strict=False) for f in ("sec", "its", "sit", "ms", "rate")))
        .alias("pace")).filter(pl.col("pace").is_not_null() & (pl.col("pace") > 0))
    if per.height < 3 or per["pace"].max() > STEADY * per["pace"].min():
        return None
    said = per["message"][0]
    units = (("s per step line", " sec)"), ("it/s", "it/s"), ("s/it", "s/it"), ("ms/step", "ms/step"))
    unit = next((u for u, w in units if w in said), None)
    span = f"{per['pace'].min():g}-{per['pace'].max():g}"
    figure = f"{span} {unit}" if unit else f"throughput of {span}"
    return Verdict(Kind.HEALTHY, f"{'; '.join(ev.progressed[:1])} at a steady {figure} (the program's own "
                   "figures) and no error, signal or stall is logged: the steps of a synchronous job advance "
                   f"only while every rank takes part ({ev.coverage.describe()})", [], lines(per, 2))


#: what a stack's frames say the thread does, first match wins (searched over every frame, innermost first)
PLACES = (
    (r"save_checkpoint|_save_checkpoint|torch/serialization\.py|safetensors|save_pretrained|checkpoint\.save"
     r"|dcp\.save|distributed/checkpoint", "saving a checkpoint"),
    (r"\bbarrier\b|monitored_barrier|store_based_barrier", "a barrier"),
    (C10D_FRAME, "a collective"),
    (r"(?i)dataloader|data_loader|data/iterators|_next_data|next_batch|\bqueue\.py|multiprocessing/queues",
     "its data loader, outside any collective"),
    (r"(?i)\bwandb\b|tensorboard|mlflow", "a logger (wandb, tensorboard or mlflow), outside any collective"),
    (r"(?i)inductor|torch/_dynamo|triton/compiler",
     "compiling (torch.compile, Triton), outside any collective"),
    (r"cudaStreamSynchronize|cudaDeviceSynchronize|\.synchronize \(|\bitem \(|\.cpu \(",
     "waiting on the GPU, outside any collective"),
)


#: an installed package's path, said from the package on
#: (``(/opt/.../site-packages/torch/x.py`` -> ``(torch/x.py``)
INSTALLED = r"\([^()]*?(?:site|dist)-packages/"


def place() -> pl.Expr:
    """What a stack event says its thread does (``PLACES``), with the innermost frame that says so
    (``saving a checkpoint: save_checkpoint (lightning/pytorch/trainer/trainer.py:1384)``), else
    ``outside any collective``."""
    text = pl.coalesce("frames", "where", pl.lit(""))
    each = text.str.split(" <- ")
    return pl.coalesce(*(pl.when(text.str.contains(p)).then(pl.format(
        "{}: {}", pl.lit(w), each.list.eval(pl.element().filter(pl.element().str.contains(p))).list.first()))
        for p, w in PLACES), pl.lit("outside any collective")).str.replace_all(INSTALLED, "(")


def pace_trend(ev: Evidence) -> Verdict | None:
    """The program's own figure of its pace, from the first third of its progress lines to the last: a
    time per step that doubles (Megatron's ``elapsed time per iteration``, ``s/it``) or a throughput that
    halves (``samples/sec``, ``token/s``), and no error: slow, not hung (``pace.trend``)."""
    if not _calm(ev):
        return None
    tr = pace.trend(ev.ticks)
    if tr is None or _average_holds(ev.ticks) or pace_moves.moves_back(ev.ticks):
        return None
    return Verdict(Kind.SLOW_PROGRESS, f"{tr['text']} (the program's own figures) and no error, signal or "
                   "stall is logged: the run goes on, slower and slower; slow, not hung "
                   f"({ev.coverage.describe()})", [], [Cited(tr["file"], tr["line"], tr["message"])])


#: (s29) a time printed with its running average after it, PyTorch's examples' AverageMeter (pytorch/examples
#: imagenet/main.py ``AverageMeter.__str__``: ``'{name} {val:.3f} ({avg:.3f})'``, ``Time 0.470 (1.206)``, copied
#: into deepspeech.pytorch, MoCo, DeiT and most research code): group 1 the average since the meter's start
RUNNING_AVERAGE = r"(?i)\b(?:batch[_ ])?time\s*:?\s*\d+(?:\.\d+)?\s*\((\d+(?:\.\d+)?)\)"


def _average_holds(ticks: pl.DataFrame) -> bool:
    """Whether the lines print their time's running average (``RUNNING_AVERAGE``) and it did not rise from the
    first line to the last: the interval's figure moved (length-sorted batches, a phase of the epoch), the run's
    own pace did not slow (samples/wild dv27-010: `Time 0.407 (1.204)` ... `Time 0.931 (1.190)`)."""
    avg = ticks["message"].fill_null("").str.extract(RUNNING_AVERAGE, 1).cast(pl.Float64, strict=False).drop_nulls()
    return avg.len() >= 2 and avg[-1] <= avg[0] * 1.1


def steady_ticks(ev: Evidence) -> Verdict | None:
    """Progress lines (a trainer's with their step, a server's ``Decode batch ... gen throughput
    (token/s)``, vLLM's ``Avg generation throughput``) whose own figure holds steady once warmed up, and
    nothing but calm lines: healthy for what is seen. Only some ranks may log them: the steps of a
    synchronous job advance only while every rank joins their collectives, so that is said with the
    coverage; where the world size is logged and ranks of it left no record, it is left undecided."""
    if (not _calm(ev) or ev.missing or ev.mismatches or ev.pending.height or ev.pace["slow"]
            or ev.pace["falling"] or ev.stacks.height or ev.coverage.missing):
        return None  # (a stack dump beside the steps: someone looked for where it waits; ranks of a known
        # world that left no record: what they logged is not known, tests/test_partial_evidence.py)
    if ev.coverage.complete and ev.clean_end:
        return None  # (every rank seen and a clean end: `healthy` says it, with the end)
    st = None if pace.stopped(ev.ticks) else pace.steady(ev.ticks) or pace.holds(ev.ticks)
    if st is None:
        return None
    steps = ev.steps
    moved = (f"{_whose(steps)} steps {steps['step'].min()} -> {steps['step'].max()} advanced at "
             if steps.height and steps["step"].n_unique() > 1
             else "the program's own progress lines hold at ")
    joined = ("; in a synchronous job the other ranks joined each step" if steps.height else "")
    bw = tick_bandwidth.said(ev.ticks)  # (s32: a transfer benchmark's own figure, the one compared with the link)
    bw = (f"; the bandwidth each line measures holds at {bw}: steady, slow only against the rate of the link it "
          "crosses, which the log does not state" if bw else "")
    return Verdict(Kind.HEALTHY, f"{moved}{st['text']} and no error, signal or stall is logged"
                   f"{joined}{bw}; this covers what is seen ({ev.coverage.describe()})", [], lines(ev.ticks, 2))


def _whose(steps: pl.DataFrame) -> str:
    """``rank 0's`` (the ranks whose step lines these are), or ``the program's``."""
    r = steps["rank"].drop_nulls().unique().sort().to_list()
    return f"{'rank' if len(r) == 1 else 'ranks'} {fmt_ranks(r)}'s" if r else "the program's"


def pace_alternates(ev: Evidence) -> Verdict | None:
    """The program's own time per step (or rate) that goes up and down at every line, the slow lines
    twice the fast ones or more: every other step waits (its data, a save, a peer); slow, not hung
    (``pace.alternates``)."""
    if not _calm(ev):
        return None
    # (a program's own timing lines time work of any size: their ups and downs are no pace of steps)
    alt = pace.alternates(timings.without(ev.ticks))
    if alt is None:
        return None
    return Verdict(Kind.SLOW_PROGRESS, f"{alt['text']} (the program's own figures) and no error, signal or "
                   "stall is logged: every other step waits for something (its input data, a save, a slower "
                   "peer); the run goes on, slowly; a py-spy dump during a slow step says where it waits "
                   f"({ev.coverage.describe()})", [], [Cited(alt["file"], alt["line"], alt["message"])])


def stacks_seen(ev: Evidence) -> Verdict | None:
    """Stack dumps and nothing that decides: say where each dumped process is, what it does there (a
    checkpoint save, a barrier, a collective, its data loader)
    and, where every one is in the same place,
    that place (where some wait in a collective and others are elsewhere, deadlock_from_stacks said it)."""
    st = ev.stacks
    if not st.height or not _calm(ev) or ev.progressed or ev.clean_end:
        return None
    st = st.unique(["rank", "pid", "tid", "where"], maintain_order=True)
    name = pl.coalesce(pl.format("rank {}", "rank"), pl.format("pid {}", "pid"), pl.col("thread"))
    st = st.with_columns(name.alias("_who"), place().alias("_does"),
                         pl.col("where").str.replace(INSTALLED, "("))
    said = st.head(4)
    each = "; ".join(f"{r['_who']} is in {r['where']} ({r['_does'].removesuffix(': ' + str(r['where']))})"
                     for r in said.iter_rows(named=True))
    places = st["_does"].str.extract(r"^([^:]+)", 1).unique().to_list()
    ranks = st["rank"].drop_nulls().unique().sort().to_list()
    if len(places) == 1 and st.height > 1:
        each = f"every one of the {st.height} is in {places[0]}: " + each
    hold = ("which rank holds the others only every rank's stack says: a stack dump of every rank (py-spy "
            "dump, or `tracekit run`) names the rank outside the collective the others wait in")
    if places == ["saving a checkpoint"] or places == ["a barrier"]:
        hold = ("a rank that never reaches the same call (or one still writing) holds the others there: the "
                "stacks of the ranks not shown, and whether the save is collective on every rank, decide it")
    return Verdict(Kind.UNDECIDED, f"{st.height} stack dump(s) and nothing else that decides: {each}; {hold}",
                   ranks, lines(said.with_columns(pl.format("{} in {}", "_who", "where").alias("message")),
                                4))
