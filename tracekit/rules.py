"""The verdict's rules, in the order of causation, each ``detect(evidence) -> Verdict | None``.

A mismatch makes ranks crash; a crashed rank explains the timeouts of the ranks that waited for it;
a communicator that never finished init explains everything after it; a transport error explains a
hang in the collective it broke; a rank behind its group is a deadlock; collectives that still
advance are slow progress. HEALTHY needs positive evidence (a clean end or progress, every rank
seen); a failure sign without a cause is UNDECIDED, with what to collect.

The rules live in one module per family (``rules_mismatch``, ``rules_failure``, ``rules_stall``,
``rules_progress``, ``rules_wait``, with the helpers they share in ``rules_common``); this module
holds their order, ``RULES``, and ``first``, which walks it. A new rule is a function in its
family's module and one line in ``RULES``, at its place in the order of causation.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from tracekit import (ended_first, exit_barrier, teardown, rules_apart, rules_bench, rules_busy, rules_bw_check, rules_collective,
                      rules_crash_words, rules_exit, rules_init, rules_measured, rules_nccl_tests, rules_places,
                      rules_progress, rules_raised, rules_results, rules_salient, rules_seen, rules_set_up)
from tracekit.evidence import BENIGN, Evidence, lines
from tracekit.outcome import Verdict
from tracekit.rules_common import msg
from tracekit.rules_failure import crashed_rank, cuda_failure, exited_without_cause, failed_without_cause
from tracekit.rules_rendezvous import init_connection_failed, rank_joined_twice, rendezvous_failed, store_barrier
from tracekit.rules_nccl_errors import (address_of_no_family, nccl_error_unexplained,
                                        nccl_failure, nccl_unwound, refused_call, transport_error)
from tracekit.rules_mismatch import (mismatch_aligned, mismatch_from_watchdog, mismatch_on_the_wire,
                                     mismatch_reported)
from tracekit.rules_progress import clean_but_partial, healthy, nothing, slow_steps, steady_progress
from tracekit.rules_straggler import slow_progress, straggler, straggler_by_wait
from tracekit.rules_stall import (deadlock, deadlock_from_stacks, deadlock_from_watchdog, deadlock_reported,
                                  init_stall, timed_out, waiting_on_silent_ranks, watchdog_stuck)
from tracekit.rules_stall import ended_while_others_wait, joined_then_nothing  # (failures, issue 31)
from tracekit.rules_stall import stopped_at_epoch_end  # (waits s27, issue 31)
from tracekit import rules_unnamed, user_stop
from tracekit import rules_loop_closed  # (health s32, issue 31)
from tracekit import dump_signal  # (stall33, issue 31)
from tracekit import rules_spread  # (pace34, issue 31)
from tracekit.comm_aborted import communicator_aborted  # (crash33b, issue 31)
from tracekit.rules_gone import aborted_unexplained, comms_aborted, peer_died_first, peer_gone
from tracekit.rules_wait import stalled_in_start_up, waiting_across_groups

RULES: list[Callable[[Evidence], Verdict | None]] = [
    mismatch_aligned,
    mismatch_reported,
    mismatch_from_watchdog,
    mismatch_on_the_wire,
    # results (s19): failure lines inside tests the runner then says passed (a test of failure handling):
    # before every failure rule, which would read the provoked failures as the run's
    rules_results.failures_inside_passed_tests,
    # teardown (s31, issue 31): the run said its work ended and every failure line after it is its teardown's
    # (the store's host gone first, NCCL's sockets closed at exit): before the rules that read them as failures
    teardown.ended_then_torn_down,
    cuda_failure,
    refused_call,  # (failures, issue 31)
    rules_set_up.bootstrap_failed,  # starts (s24, issue 31): NCCL's bootstrap failed: set-up never completed
    address_of_no_family,  # (failures, issue 31)
    peer_died_first,  # waits (s26, issue 31): a rank killed first, its peers' closed connections its consequence
    nccl_failure,
    waiting_across_groups,
    init_connection_failed,  # (failures, issue 31)
    rules_busy.timed_out_after_the_end,  # waits (s18): a timeout after the training's end; its abort is its own
    crashed_rank,
    rules_crash_words.crashed_by_words,  # salient (issue 31): a crash line no parser decodes, by its words
    rules_salient.coordinator_unreached,  # words (issue 31): a start-up that never reached its coordinator
    exit_barrier.failed_at_exit,  # starts (s31): the agent's exit barrier failed: past start-up, undecided
    store_barrier,
    rank_joined_twice,  # (failures, issue 31)
    rendezvous_failed,
    rules_init.start_up_unfinished,  # init (issue 31): a rank's own word of where start-up stopped waiting
    init_stall,
    transport_error,
    deadlock,
    deadlock_reported,
    deadlock_from_watchdog,
    rules_busy.busy_in_phase,  # waits (s18, issue 31): a rank in an evaluation or a save while the others wait
    rules_busy.absent_but_alive,  # waits (s18, issue 31): the one rank not in the collective, seen alive
    stalled_in_start_up,  # words (issue 31): a stack dump in start-up (store, rendezvous, init), no step
    deadlock_from_stacks,
    rules_apart.waits_on_named_rank,  # waits (s26, issue 31): a state dump's transfers waiting on a named rank
    rules_places.waits_on_busy_rank,  # fail31 (issue 31): ranks' own words: waiting in a collective, one elsewhere
    ended_while_others_wait,  # (failures, issue 31)
    slow_progress,
    waiting_on_silent_ranks,
    nccl_error_unexplained,
    nccl_unwound,  # (failures, issue 31): NCCL's unwind lines alone: where it failed, with which code
    rules_exit.launcher_could_not_reach,  # (failures, issue 31)
    user_stop.stopped_by_user,  # crash32b (issue 31): a user's Ctrl-C and its knock-on, no rank's crash
    rules_exit.killed_from_outside,
    rules_exit.cancelled_by_scheduler,  # (failures, issue 31)
    rules_exit.process_ended,
    rules_exit.agent_raised,  # (failures, issue 31)
    exited_without_cause,
    ended_first.died_before_timeout,  # stall32 (s32, issue 31): a rank ended before the others' timeout
    dump_signal.timeout_signalled,  # stall33 (s33, issue 31): c10d's dump signal of a timeout, its lines alone
    timed_out,
    straggler,
    straggler_by_wait,
    watchdog_stuck,
    peer_gone,
    aborted_unexplained,  # (failures, issue 31)
    communicator_aborted,  # crash33b (issue 31): torch's `NCCL communicator was aborted on rank N` alone
    comms_aborted,  # (failures, issue 31)
    rules_exit.workers_ended_unexplained,
    rules_raised.raised_unexplained,  # crashes (s18, issue 31): a traceback alone, a ChildFailedError cut
    rules_measured.nccl_tests_below_link,  # bench (s24): nccl-tests' busbw far below a link rate stated
    rules_nccl_tests.nccl_test_result,
    rules_bw_check.bandwidth_check,  # bench (s31): a bandwidth check's own tally against its threshold
    rules_measured.measured_results,  # bench (s24, issue 31): any tool's measured rows: sizes, peak, link rate
    rules_collective.collective_measured,  # bench (s31): a collective's own figures, printed by any rank
    rules_results.own_results,  # progress (issue 31): a benchmark's results, a server's start-up, answers
    rules_bench.step_gap,
    rules_bench.throughput_drop,
    rules_results.uneven_speeds,  # ends (s22): tf_cnn_benchmarks' step speeds spread as wide as their mean
    rules_bench.pace_trend,  # progress: a time per step that doubles, a throughput that halves
    rules_seen.pace_halved,  # progress (s23, issue 31): the same, on two or three progress lines only
    rules_seen.paces_compared,  # progress (s26, issue 31): a user's paces side by side, one 2x slower or more
    rules_seen.compile_times,  # progress (s26, issue 31): JAX's compile stages timed: slow past a minute
    rules_seen.serving_crawls,  # progress (s25, issue 31): a serving engine under 10 tokens/s in all
    rules_bench.pace_alternates,  # progress: a time per step that goes up and down at every line
    rules_bench.phase_dominates,
    rules_spread.input_spread,  # pace (s34): Megatron's (min, max) timers: the step waits on its input data
    rules_bench.every_rank_ended,
    rules_bench.program_stall,
    rules_progress.progress_then_start_up,  # ends (s20): a start-up after the last progress line: undecided
    stopped_at_epoch_end,  # waits (s27, issue 31): steady steps that end at an epoch's last step
    rules_bench.steady_own_pace,
    rules_bench.steady_ticks,  # progress: progress lines with no step number at a steady figure
    rules_unnamed.steady_unnamed,  # progress (s31): the same where a world size is logged and no rank named
    rules_seen.queue_drains,  # progress (s23, issue 31): a server's stat lines whose waiting queue drains
    rules_results.timers_repeat,  # ends (s22): a trainer's phase timers at a steady interval, no step line
    rules_progress.reports_advance,  # progress: loss reports whose epoch goes up, no step number, no time
    rules_progress.steps_advance,  # progress: steps at a regular stride with no time on them
    rules_bench.stacks_seen,
    joined_then_nothing,  # (failures, issue 31)
    rules_seen.torn_down,  # health (s29): every rank seen destroyed its communicators, no abort: healthy
    rules_salient.said_by_telling_lines,  # salient (issue 31): lines no parser decodes, by their words
    rules_salient.peer_closed,  # words (issue 31): a peer closed its connection: who ended first, undecided
    failed_without_cause,
    slow_steps,
    healthy,
    steady_progress,
    rules_progress.progress_to_the_end,  # progress (s17, issue 31): steps to the last line: healthy, partial
    # progress (s23, issue 31): steps that advance on the ranks seen, the others inferred from the synchronous
    # steps: healthy, before clean_but_partial says undecided over them
    rules_seen.progress_on_ranks_seen,
    rules_loop_closed.training_bar_closed,  # ends (s32, issue 31): a training bar at its total, last: healthy
    clean_but_partial,
    rules_results.epoch_results,  # ends (s22): an epoch and its validation reported done
    rules_seen.one_step_seen,  # ends (s24, issue 31): one or two progress lines up to the excerpt's end
]


def notes(ev: Evidence) -> list[str]:
    """What every verdict carries besides: lagging groups known only from pg_status, benign WARNs,
    a scheduler's cancel."""
    out = [f"also lagging, from pg_status only (no entry in any buffer): {f.message}"
           for f in ev.findings if f.kind.name in ("MISSING", "RANK_ABSENT") and not f.op][:5]
    for pattern, why in BENIGN.items():
        hit = ev.benign.filter(pl.col("message").str.contains(pattern))
        if hit.height:
            out.append(f"harmless: {lines(hit, 1)[0]} ({why})")
    if ev.cancelled.height:
        out.append("the scheduler ended the job (" + msg(ev.cancelled, 0, 120) + ")")
    return out


def first(ev: Evidence) -> tuple[str, Verdict]:
    """The first rule that fires, and its name."""
    for rule in RULES:
        v = rule(ev)
        if v is not None:
            return rule.__name__, v
    return "nothing", nothing(ev)
