"""The progress rules: a run that still moves (slow steps), a healthy run (positive evidence from every
rank), a clean end on only some ranks, and ``nothing``: what was seen when no rule fires. The rules over the collectives' own timing
(slow between Flight Recorder dumps, a straggler) are rules_straggler.py's."""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from tracekit import file_ranks, pace, rules_bench
from tracekit.evidence_progress import MIN_REPORTS
from tracekit.evidence import CLEAN_ENDS, Evidence, lines
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.parsers import timings
from tracekit.rules_common import calm, last_per_file
# (the rules over the collectives' own timing, split off in session 28; rules.py names them from here)
from tracekit.undecided import undecided_verdict


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
    if not ev.progressed or not calm(ev, every_rank_seen=True, nothing_looked_at=True):
        return None  # (ranks of a known world that left no record: what they logged is not known; a stack
        # dump beside the steps: someone looked for where it waits)
    # (a time per step printed as 0.00 is a pace too fast for its digits: no pace to say, as none)
    per_step, rate = ev.pace["per_step_s"] or None, ev.pace["rate"] or None
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
    """Progress reports with no step number and no time (HF Trainer's loss dicts) whose epoch goes up, or
    (s26) a loss reported again and again with no counter, and nothing but calm lines: healthy for what is
    seen; with no time on them the pace is not known."""
    ep = ev.epochs
    if ep.height < MIN_REPORTS:
        # (s26: a loss reported again and again, no counter: parsers/series.py; never beside timer lines, whose
        # pace the rules of pace decide: a time that counts up, tests/test_s20_ends_progress.py, is no pace)
        ep = ev.loss_reports if not ev.ticks.height else ev.loss_reports.clear()
    if (ev.steps.height or not ev.progressed or ev.trouble.height or ev.failure_signs or ev.stalls.height
            or ev.missing or ev.mismatches or ev.coverage.missing or ep.height < MIN_REPORTS):
        return None
    return Verdict(Kind.HEALTHY, f"{ev.progressed[0]} and no error, signal or stall is logged: the training "
                   "moves; this covers what is seen, and with no time on the reports their pace is not known "
                   f"({ev.coverage.describe()})", [], lines(ep.tail(2), 2))


def progress_then_start_up(ev: Evidence) -> Verdict | None:
    """Progress lines, then, after the last of them in the same file, a process's start-up (an NCCL
    communicator's init, a rank joining its group, a trainer's or server's start: ``Progress.
    started_after_progress``), and nothing failed: a process started after the steps seen (a second
    rank's log that holds only its start-up, or a restart), so the progress seen is not every process's:
    undecided, never healthy; that process's log after its start-up decides it."""
    late = ev.started_after_progress
    if (late is None or not (ev.progressed or ev.ticks.height) or ev.clean_end or ev.trouble.height
            or ev.failure_signs or ev.stalls.height):
        return None
    moved = "; ".join(ev.progressed[:2]) or f"{ev.ticks.height} progress line(s)"
    return Verdict(Kind.UNDECIDED, f"{moved}{own_figures(ev)}, then a process started after the last of "
                   f"them (`{late['message'][:120]}`, {late['file']}:{late['line']}): its own progress is not "
                   "seen (a rank whose log shows only its start-up, or a restart); that process's log after "
                   f"its start-up decides it ({ev.coverage.describe()})", [],
                   [Cited(late["file"], late["line"], late["message"])])


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


def progress_to_the_end(ev: Evidence) -> Verdict | None:
    """Steps that advance (or one progress line whose counter is past the run's start,
    ``rules_bench.WARM_UP``:
    that many steps completed) up to the last line each file holds, mid-loop (not a bar at 100%: a loop that
    ended and nothing after it is where a job stops), with the pace at the end as good as before (a time
    per step at most ``pace.STEADY`` times the lowest, a rate at least the highest over it), and nothing
    but calm lines: healthy for what is seen, said with how many of the world are seen and who left no
    record. A synchronous job's steps advance only while
    every rank joins their collectives; what the ranks not seen logged is not known, and the summary says
    so."""
    st = ev.steps
    # (one progress line whose counter is past the run's start says that many steps completed: DeepSpeed's
    # `timer.py ... 0/1248`, a bar at `795/77225`)
    past_start = st.height > 0 and st["step"].n_unique() == 1 and st["step"][0] > rules_bench.WARM_UP
    if (not (ev.progressed or past_start) or ev.clean_end or ev.pace["slow"] or ev.pace["falling"]
            or not calm(ev, init_done=True, nothing_looked_at=True)):
        return None
    # (a trainer's phase timers are the report of the step they follow, DeepSpeed's at the end of each step
    # it completes (rules_results.timers_repeat): not something after the step)
    last = last_per_file(ev.store.events.filter(pl.col("kind") != EventKind.PHASE_TIMES))
    ends_on_step = last["kind"].is_in([EventKind.STEP, EventKind.PROGRESS]) & last["step"].is_not_null()
    if not (ends_on_step & ~last.select(pace.at_loop_end()).to_series()).all():
        return None  # (a file that ends on something else, or on a loop at its end: where it stopped)
    t = ev.ticks
    took = t.filter(pl.col("took").is_not_null() & (pl.col("took") > 0))
    if pace.cumulative(took):
        took = took.clear()
    rate = t.filter(pl.col("rate").is_not_null() & (pl.col("rate") > 0))
    what, f = ("took", took) if took.height >= rate.height else ("rate", rate)
    if f.height == 0:
        return None  # (steps with no time or rate printed: no pace to call healthy; the other rules say it)
    if f.height >= 2:
        end, vals = f[what][-1], f[what]
        if (end > pace.STEADY * vals.min()) if what == "took" else (end * pace.STEADY < vals.max()):
            return None  # (slower at the end than before: the rules over the pace, or undecided)
    figure = own_figures(ev)
    moved = ev.progressed[:2] or [f"{st['step'][0]} steps completed (the program's own counter)"]
    st = st.sort("file", "line").tail(1).row(0, named=True)
    return Verdict(Kind.HEALTHY, f"{'; '.join(moved)} up to the last line seen (step {st['step']}, "
                   f"mid-loop){figure}, no error, signal or stall logged: the steps of a synchronous job "
                   f"advance only while every rank takes part; for what is seen: {ev.coverage.describe()}",
                   [], lines(ev.steps.sort("file", "line"), 2))


def clean_but_partial(ev: Evidence) -> Verdict | None:
    """A clean end or progress on the ranks seen, but not every rank seen (or the world size unknown).
    A clean end (exit 0, the training's or the program's own end, nccl-tests passed, the last step) with
    nothing else logged (no error, failure sign, stall, pending init, mismatch or stack dump) is healthy
    for what is seen, said with how many of the world are seen and who left no record: a rank reaches its
    end only while the ranks it shares collectives with take part (LABELS.md's healthy: every visible
    rank). Progress alone is ``progress_to_the_end``'s (steps up to the last line at a steady pace); here
    it stays undecided, as a clean end does where the pace fell or something was looked at."""
    good = ev.clean_end or ev.progressed
    if not good:
        return None
    if (ev.clean_end and _every_seen_rank_ended(ev) and not ev.pace["falling"]
            and calm(ev, init_done=True, nothing_looked_at=True)):
        return Verdict(Kind.HEALTHY, f"healthy for what is seen: {'; '.join(ev.clean_end[:2])}"
                       f"{own_figures(ev)}, and no error, signal or stall logged; {ev.coverage.describe()}; "
                       "the other ranks' logs would confirm it", [], [])
    if ev.pace["falling"]:
        text, file, line = ev.pace["falling"]
        return Verdict(Kind.UNDECIDED, f"{'; '.join(good[:2])}, but {text}: a stall between those steps or a "
                       f"slower phase; the step lines' timestamps or per-step times decide it "
                       f"({ev.coverage.describe()})", [], [Cited(file, line, text)])
    return Verdict(Kind.UNDECIDED, "what was seen ended cleanly or progressed "
                   f"({'; '.join((ev.clean_end + ev.progressed)[:2])}){own_figures(ev)}, but only "
                   f"{ev.coverage.describe()}: the other ranks' logs decide it", [], [])


def failed_after_progress(ev: Evidence) -> pl.DataFrame:
    """The lines no parser decodes whose words say something failed (a crash, a transport's failure, a
    wait, an error; not one the program says it caught) after the last step, progress or end of a file
    that holds some (``rules_salient.telling``): that file's last word is a failure, whatever progress
    came before it."""
    from tracekit import rules_salient  # (rules_salient imports this module's neighbours; late, as a leaf)
    from tracekit.parsers import salient

    told = rules_salient.telling(ev)
    # (only in a file that holds the progress: another file's words, an NCCL log's loader probe beside a
    # trainer's log that ends cleanly, are not after it)
    moved = ev.kinds(*rules_salient.WENT_ON).select("file").unique()
    # (the classes of a telling line that say something failed; a warning is none: the program went on)
    failed = [salient.Telling.CRASH, salient.Telling.TRANSPORT, salient.Telling.WAIT, salient.Telling.ERROR]
    # (s28) NCCL's own INFO lines are never its failure: it reports one at WARN; the proxy's `[Service thread]
    # Connection closed by localRank 2` and `comm ... - Abort COMPLETE` are its teardown at exit (samples/wild
    # dv33-004: 16 ranks after `Training time 0:06:40`)
    return told.join(moved, on="file").filter(pl.col("where").cast(pl.Utf8).is_in(failed)
                                              & ~pl.col("message").str.contains(salient.CAUGHT)
                                              & ~pl.col("message").str.contains(r"\bNCCL INFO\b"))


def failure_after_progress(ev: Evidence, late: pl.DataFrame) -> Verdict:
    """UNDECIDED in place of HEALTHY where progress came first and a failure's words after the last of it
    (``failed_after_progress``): the progress says the run once moved, not that it still does; the line
    after it says it stopped, yet no decoded event says which rank or why."""
    from tracekit import rules_salient

    first = late.row(0, named=True)
    moved = "; ".join((ev.clean_end + ev.progressed)[:2]) or f"{ev.ticks.height} progress line(s)"
    return Verdict(Kind.UNDECIDED, f"{moved}, but after the last progress line {rules_salient.quote(first)}"
                   f"{f' ({late.height} such lines)' if late.height > 1 else ''}: the run did not go on "
                   "from there, and no decoded line says which rank failed or why; that process's own log "
                   f"after it decides it ({ev.coverage.describe()})", rules_salient.ranks_named(late),
                   lines(late, 4))


def _every_seen_rank_ended(ev: Evidence) -> bool:
    """Every rank seen has an end of its own (or every launcher exited 0): a rank seen that stops with no
    end line (``Rank 1: ==== Iteration 2/3 ====`` while rank 0 says ``End of workload.``) is where a job
    may hang, not a clean end."""
    if ev.finished or not ev.coverage.seen:
        return True
    ends = ev.kinds(*(kind for kind, _ in CLEAN_ENDS))  # (the kinds Evidence.clean_end reads)
    last = ev.steps.filter(pl.col("max_steps").is_not_null() & (pl.col("step") >= pl.col("max_steps")))
    done = set(ends["rank"].drop_nulls().to_list()) | set(last["rank"].drop_nulls().to_list())
    # (s28) an end that names no rank (the program's own `Training completed`, a launcher's exit 0) is the
    # end of the process or job whose file it is: it covers the ranks seen only in that file (a rank named in
    # a sentence, DeepSpeed's `OVERFLOW! Rank 3 Skipping step`); an end that names its rank covers that rank
    rankless = set(ends.filter(pl.col("rank").is_null())["file"].to_list())
    # (s31) so is a loop's last step at its stated total that names no rank (Megatron's `iteration 20/ 20`,
    # printed by one process for all): a synchronous step completes only once every rank took part in it
    # (never a rank whose own step lines stop short of it: `Rank 0: Iteration 9/10` is where rank 0 is)
    short = set(ev.steps["rank"].drop_nulls().to_list()) - done
    at_total = set(last.filter(pl.col("rank").is_null())["file"].to_list())
    done |= file_ranks.ranks_only_in(ev, rankless)
    done |= file_ranks.ranks_only_in(ev, at_total) - short
    destroyed = ev.store.comms.filter(pl.col("state") == "destroy_complete")
    done |= set(destroyed.select(pl.coalesce("global_rank", "rank"))[:, 0].drop_nulls().to_list())
    done |= ev.agent_finished  # (torchrun's agent said its worker group succeeded: evidence_progress)
    return set(ev.coverage.seen) <= done


def _figure(x: float) -> str:
    """``0.847``, ``1.34``, ``1,786``: three significant digits, a figure of 1000 or more whole (never
    ``1.79e+03``, which no program prints)."""
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def own_figures(ev: Evidence) -> str:
    """``; its own figures: 0.847-1.31 s per step over 4 lines (as the program prints it: `time: 0.8466`)``:
    the pace the progress lines print (a time per step or a throughput), or nothing where none does."""
    for what in ("took", "rate"):
        f = ev.ticks.filter(pl.col(what).is_not_null() & (pl.col(what) > 0))
        if what == "took" and pace.cumulative(f):
            continue  # (seconds since the start on each line: no time per step)
        if f.height:
            lo, hi = f[what].min(), f[what].max()
            timed = timings.all_timing(f)
            unit = (("s each" if timed else "s per step") if what == "took"
                    else (f["unit"].drop_nulls().head(1).to_list() or [""])[0])
            # (s30: one figure where both print alike, `18 s`, never `18-18`)
            span = _figure(lo) if _figure(lo) == _figure(hi) else f"{_figure(lo)}-{_figure(hi)}"
            return (f"; its own figures: {span} {unit}".rstrip()
                    + f" over {f.height} line(s){pace.printed(f, what)}")
    return ""


#: the model FLOPs utilisation a trainer prints on its step line (torchtitan's `mfu: 10.46%`,
#: pytorch/torchtitan train.py `f"{color.magenta}mfu: {mfu:.2f}%"`; nanoGPT's `iter 100: loss 4.2345, time
#: 123.45ms, mfu 35.12%`, karpathy/nanoGPT train.py `f"... mfu {running_mfu*100:.2f}%"`): group 1, the percent
MFU = r"(?i)\bmfu\s*[:=]?\s*(\d+(?:\.\d+)?)\s*%"
#: an MFU under this percent is the program's own figure that the GPUs do a fraction of what a tuned run
#: gets from them (a tuned LLM run reaches about 35-55% of the dense peak: ``pace_unjudged``)
MFU_LOW = 20.0


def lowest_mfu(messages: pl.Series) -> float | None:
    """The lowest MFU (``MFU``) the lines print, in percent, else None."""
    mfu = messages.fill_null("").str.extract(MFU, 1).cast(pl.Float64, strict=False).drop_nulls()
    return mfu.min() if mfu.len() else None


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
    mfu = lowest_mfu(t["message"])
    if mfu is not None and mfu < MFU_LOW:  # (the program's own word of how much of the GPUs it uses)
        few += (f"; the program's own MFU is {mfu:g}%, under {MFU_LOW:g}% (a tuned run gets 35-55% of "
                "the GPUs' dense peak): the GPUs wait most of each step, on the interconnect, the data or a "
                "small batch")
    against = ("the GPUs' peak (dense bf16: A100 312, H100 989 TFLOPS; a tuned LLM run reaches about 35-55% "
               "of it)" if flops else "the same job's figures on one node or earlier in the run")
    said = undecided_verdict(ev)  # (what is seen and what to collect, as `nothing` says it)
    return replace(said, summary=f"the program's own pace: {figure}{at}; {few}, and nothing in the log says "
                   f"what the hardware gives: compare the throughput with {against} (far below it on several "
                   f"nodes points at the interconnect); {said.summary}",
                   evidence=[Cited(last["file"], last["line"], last["message"]), *said.evidence])


def nothing(ev: Evidence) -> Verdict:
    """No rule fired: the situation, what is missing to decide and what to collect
    (``undecided.undecided``), with the program's own pace figures in front where its lines print them
    (``pace_unjudged``)."""
    return pace_unjudged(ev) or undecided_verdict(ev)
