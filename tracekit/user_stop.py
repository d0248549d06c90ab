"""A user's own stop of the run: Python's ``KeyboardInterrupt`` (Ctrl-C, SIGINT) in a file (issue 31, crash32b).

Python raises ``KeyboardInterrupt`` in every process of a job whose user pressed Ctrl-C; each prints its
traceback, ending in the bare ``KeyboardInterrupt`` line (parsers/pyspy marks the frames above it as a stack
``(interrupted)``), and the processes' output interleaves. Whatever raises while the processes unwind is that
stop's knock-on, no rank's crash: an exception raised "During handling of the above exception" of it, a
launcher's signal handler that fails as it kills its workers (DeepSpeed's runner ``sigkill_handler`` raising
``NameError: free variable 'kill_cmd' referenced before assignment``: samples/wild dv50-005), a collective
aborted under it. Read as the first crash, they made a user's stop CRASHED_RANK.

What this reads: the first line in each file that says the stop (``KeyboardInterrupt`` as an error line, or a
traceback pyspy marks interrupted). A failure line at or after it, or within ``WITHIN`` lines above it (the
interleaved tracebacks of the stop, whose error lines may print before the first ``KeyboardInterrupt``), is
part of the stop. A failure well before it stays a failure: a rank that crashed, then a user who stopped the
others that hung.

``stopped_by_user`` decides by the evidence before the stop where the stop's knock-on is all the failure the
excerpt shows: steps that advanced up to it -> HEALTHY for what it shows (the run worked until its user ended
it); else UNDECIDED, saying the stop. A hang, a timeout, a transport's or NCCL's error decide before it.
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import Kind, Verdict
from tracekit.schema import EventKind

#: Python's word that the process was interrupted: the error line of its traceback (bare, or with a message,
#: after a logger's or a launcher's prefix, which parsers take off)
INTERRUPT = r"(?:^|[\s:\]])KeyboardInterrupt(?::|\s*$)"
#: parsers/pyspy's thread of a traceback a person interrupted
INTERRUPTED_STACK = r"\(interrupted\)"
#: how far above the stop's first line a failure may stand and still be the stop's (the processes' tracebacks
#: of one Ctrl-C interleave; one's error line may print before another's ``KeyboardInterrupt``)
WITHIN = 40
#: a failure that is a cause of its own, never a stop's knock-on when it prints before the stop: a rank that ran
#: out of memory, a CUDA or NCCL error, a signal, a segfault (the rank crashed, then its user stopped the others
#: that hung: the crash is the cause). Only other exceptions above the stop (a handler's NameError) are its own.
CAUSE = (r"(?i)out of memory|OutOfMemory|\bCUDA\b|\bNCCL\b|nccl\w*Error|illegal memory|\bECC\b|Segmentation|"
         r"SIGSEGV|SIGKILL|SIGABRT|core dumped|\bKilled\b")


def first_stop(ev: Evidence) -> pl.DataFrame:
    """``file, _stop``: the first line of each file that says a user interrupted the run."""
    e = ev.store.events
    said = e.filter(pl.col("message").fill_null("").str.contains(INTERRUPT)
                    | ((pl.col("kind") == EventKind.STACK)
                       & pl.col("thread").fill_null("").str.contains(INTERRUPTED_STACK)))
    return said.group_by("file").agg(pl.col("line").min().alias("_stop"))


def stopped(ev: Evidence, failures: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``failures`` that are a user's stop or its knock-on: a ``KeyboardInterrupt`` itself, or a
    failure line at or after the file's first stop line, or within ``WITHIN`` lines above it and not a cause of
    its own (``CAUSE``: an OOM, a CUDA or NCCL error, a signal stay the crash they are)."""
    if not failures.height:
        return failures
    stop = first_stop(ev)
    if not stop.height:
        return failures.clear()
    said = pl.col("message").fill_null("")
    return (failures.join(stop, on="file")
            .filter((pl.col("line") >= pl.col("_stop"))
                    | ((pl.col("line") >= pl.col("_stop") - WITHIN) & ~said.str.contains(CAUSE))
                    | said.str.contains(INTERRUPT))
            .drop("_stop"))


def without_stop(ev: Evidence, failures: pl.DataFrame) -> pl.DataFrame:
    """``failures`` less the user's stop and its knock-on (``stopped``)."""
    gone = stopped(ev, failures)
    if not gone.height:
        return failures
    return failures.join(gone.select("file", "line").unique(), on=["file", "line"], how="anti")


#: the fewest distinct steps before the stop that show the run advancing
STEPS = 3


def _other_failures(ev: Evidence) -> bool:
    """Whether the evidence holds a failure that is not the user's stop or its knock-on."""
    if user_stop_free(ev).height:
        return True
    transport = ev.transport.filter(pl.col("kind") != EventKind.CONNECT_RETRY)
    stalls = ev.stalls if not ev.finished else ev.stalls.head(0)
    return any(df.height for df in (ev.timeouts, without_stop(ev, ev.cuda), ev.nccl_errors, ev.rendezvous,
                                    transport, ev.reported_mismatch, stalls, ev.cancelled, ev.pending,
                                    without_stop(ev, ev.exits))) or bool(ev.mismatches)


def user_stop_free(ev: Evidence) -> pl.DataFrame:
    """The crashes that are not the user's stop nor its knock-on."""
    return without_stop(ev, ev.crashes)


def stopped_by_user(ev: Evidence) -> Verdict | None:
    """HEALTHY where the run's steps advanced up to a user's own stop (Ctrl-C: ``KeyboardInterrupt``) and every
    failure line is that stop's knock-on (an exception raised as the processes unwound, a launcher's kill of its
    workers after it); UNDECIDED, saying the stop, where no such progress precedes it. None where there is no
    stop, no knock-on of it to explain, or another failure (the other rules read it)."""
    stop = first_stop(ev)
    if not stop.height or _other_failures(ev):
        return None
    knock = stopped(ev, ev.crashes).filter(~pl.col("message").fill_null("").str.contains(INTERRUPT))
    sigs = ev.kinds(EventKind.SIGNAL).join(stop, on="file").filter(pl.col("line") >= pl.col("_stop"))
    if not knock.height and not sigs.height:
        return None
    at = stop.sort("_stop").row(0, named=True)
    before = ev.steps.join(stop, on="file").filter(pl.col("line") < pl.col("_stop"))
    steps = before["step"].drop_nulls().unique().sort()  # (ev.steps: the rows with a step number)
    after = "; ".join(filter(None, (
        f"what raised as the processes unwound ({clip(knock['message'][0], 120)})" if knock.height else "",
        f"the kill after it ({clip(sigs['message'][0], 120)})" if sigs.height else "")))
    said = (f"the run was stopped by its user: KeyboardInterrupt (Ctrl-C, SIGINT) at {at['file']}:{at['_stop']}; "
            f"{after} is that stop's knock-on, no rank's crash")
    cited = lines(knock, 2) + lines(sigs, 1)
    if steps.len() >= STEPS:
        return Verdict(Kind.HEALTHY, f"training advanced steadily (steps {steps[0]} -> {steps[-1]}, "
                       f"{steps.len()} steps logged) until {said}", [], lines(before.tail(1), 1) + cited)
    return Verdict(Kind.UNDECIDED, f"{said}; nothing before it shows a failure, nor steady progress: what the "
                   "run was doing when stopped (a wait, a slow step) the lines do not say; to decide: the log "
                   "from the start, and a stack dump (py-spy dump) before stopping it", [], cited)
