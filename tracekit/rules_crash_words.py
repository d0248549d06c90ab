"""CRASHED_RANK from the words of a crash line no parser decodes (``parsers/salient.py``'s ``Telling.CRASH``),
at ``crashed_rank``'s place in ``rules.RULES``: a crash explains the others' waits and timeouts after it
(``crashed_by_words``, moved here from ``rules_salient``, which keeps the other families of telling lines).

What the words decide: a crash (``Segmentation fault``, ``Assertion ... failed``, ``Worker unexpectedly
exits``, ``Killed``), a process that cannot start (``undefined symbol: X``, ``can't open file 'x.py'``: what it
misses said), a launcher's line that a rank failed (``Container rank 0 status failed ... code 1``: the rank it
names), a runtime's own word that a process of the job failed (``runtime_failures``) -> CRASHED_RANK naming
the line and the rank, host or process. What they do not: a crash line after a timeout or a stall in its own
file, or after a runtime's own watchdog fired there (SGLang's scheduler's ``Watchdog timeout``: the kill it
sends is its consequence -> UNDECIDED saying the hang), after a transport's own failure or a coordinator never
reached in its file; a kill from outside of a job that waited; a tool the set-up missed before the program
started all the same.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit import align, runtime_failures, user_stop
from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import Kind, Verdict
from tracekit.parsers import salient
from tracekit.parsers.salient import Telling
from tracekit.rules_salient import hosts_named, named, quote, ranks_named, telling
from tracekit.schema import EventKind
from tracekit.wording import who


#: a kill from outside (a launcher or a scheduler ending a job that hung), not a cause of its own
KILLED = r"(?i)(?-i:\bKilled\b)|\bSIG(?:KILL|TERM)\b"
#: a process that cannot start: the loader's, the interpreter's or the shell's refusal, a failed import
NO_START = salient.either(salient.NO_START, salient.IMPORT_FAILED)
OOM = r"(?i)out of memory|\boom\b"


#: what a process that cannot start misses: a symbol, a script, a library, a command, a module
MISSING = (r"undefined symbol: (\S+)|can't open file '([^']+)'|(\S+\.so[.\d]*): cannot open shared object"
           r"|(\S+): command not found|\b(\S+): not found$|No module named '([^']+)'")


def _no_start_then_started(ev: Evidence, crash: pl.DataFrame) -> pl.DataFrame:
    """``crash`` without the lines of a process that cannot start after which its file shows the program
    started all the same (a collective, a communicator, a step later in the file): a tool the set-up
    script missed (``ibstat: command not found``, ``/bin/sh: 1: git: not found``), not the program."""
    no_start = crash.filter(pl.col("message").str.contains(NO_START))
    if not no_start.height:
        return crash
    s = ev.store
    last = pl.col("line").max().alias("_on")
    coll = align.collect(s.collectives.lazy().group_by("file").agg(last))
    went = pl.concat([coll, s.comms.group_by("file").agg(last), ev.steps.group_by("file").agg(last)])
    went = went.group_by("file").agg(pl.col("_on").max())
    later = no_start.join(went, on="file").filter(pl.col("line") < pl.col("_on")).select("file", "line")
    return crash.join(later, on=["file", "line"], how="anti")


def crashed_by_words(ev: Evidence) -> Verdict | None:
    """CRASHED_RANK from a crash line no parser decodes, at ``crashed_rank``'s place in the order of
    causation: a crash explains the waits and timeouts of the others after it. A crash line after a
    timeout in its own file (c10d's abort after a watchdog timeout: ``Aborted (core dumped)``) is that
    timeout's consequence, a kill from outside (``Killed``, SIGKILL, SIGTERM, not the OOM killer's)
    in a job that timed out or stalled is the job being ended, and against such waits a line that names
    no rank or process is no one's crash: none of them decides."""
    told = telling(ev)
    crash = _no_start_then_started(ev, told.filter(pl.col("where") == Telling.CRASH))
    crash = user_stop.without_stop(ev, crash)  # (a user's Ctrl-C and what raised as it unwound: no crash)
    if not crash.height:
        return None
    # (a crash after a transport's own failure in its file is that failure's consequence: UCX's ``Failed to
    # create ipc`` then its ``rndv.c:1872 Assertion ... failed``; said_by_telling_lines decides it)
    # (and after a start-up that never reached its coordinator: XLA's ``F... Check failed:
    # WaitForConnected`` then glog's ``*** Check failure stack trace``; coordinator_unreached says it)
    # (and after a transport error a parser decoded in its file, as crashed_rank reads it: Open MPI's
    # ``pml_ucx.c:296 Error: ucp_ep_create(proc=371) failed`` then UCX's ``Caught signal 11``)
    decoded = ev.transport.filter(pl.col("kind") != EventKind.CONNECT_RETRY).select("file", "line")
    failed = pl.concat([salient.hard_transport_lines(told).select("file", "line"), decoded,
                        told.filter(pl.col("message").str.contains(salient.COORDINATOR_UNREACHED))
                        .select("file", "line")])
    first_failed = failed.group_by("file").agg(pl.col("line").min().alias("_t"))
    crash = crash.join(first_failed, on="file", how="left").filter(
        pl.col("_t").is_null() | (pl.col("line") < pl.col("_t"))).drop("_t")
    # (a runtime's own watchdog that fired, SGLang's scheduler's, is a wait too: the kill it sends is its end)
    watchdog = told.filter(pl.col("message").str.contains(salient.RUNTIME_WATCHDOG)).select("file", "line")
    # (and connects that kept retrying: a process killed while it retried its connect was waiting, in set-up
    # or not: NCCL's `Call to connect returned Connection timed out, retrying` then `Killed`)
    retried = ev.transport.filter(pl.col("kind") == EventKind.CONNECT_RETRY).select("file", "line")
    waited = pl.concat([ev.timeouts.select("file", "line"), ev.stalls.select("file", "line"), watchdog, retried])
    if waited.height:
        first_wait = waited.group_by("file").agg(pl.col("line").min().alias("_w"))
        crash = crash.join(first_wait, on="file", how="left").filter(
            pl.col("_w").is_null() | (pl.col("line") < pl.col("_w"))).drop("_w")
        msg = pl.col("message")
        # (against decoded waits, only a line whose prefix names its rank or process: a note or README
        # beside the logs that says "SIGABRT" is no process's crash)
        crash = crash.filter((~msg.str.contains(KILLED) | msg.str.contains(OOM))
                             & (pl.col("rank").is_not_null() | pl.col("pid").is_not_null()
                                | msg.str.contains(salient.LAUNCHER_FAILED)))
    if not crash.height:
        return _runtime_watchdog_fired(ev, told) if watchdog.height else None
    first = crash.row(0, named=True)
    more = (f"; {crash.height - 1} more such line(s){hosts_named(crash)}" if crash.height > 1 else "")
    if re.search(NO_START, first["message"]):
        gone = re.search(MISSING, first["message"])
        what = ("a process could not start (the program, a library or a symbol it needs is missing"
                + (f": {next(g for g in gone.groups() if g)}" if gone else "") + ")")
    elif re.search(salient.MPI_INIT_FAILED, first["message"]):
        what = "a process could not start: its MPI library failed to initialise (MPI_Init, PMI)"
    elif re.search(salient.MPI_ABORTED, first["message"]):
        what = "an MPI call failed and MPI's error handler aborted the processes of its communicator"
    elif (failure := runtime_failures.failure_of(first["message"])) is not None:
        return _runtime_failed(ev, failure, crash)
    elif re.search(salient.LAUNCHER_FAILED, first["message"]):
        name = named(first["message"])
        what = (f"the launcher reported {name} failed (its own error is in that process's log)" if name else
                "the job was shut down after a process failed or ended first (its own error is not in the "
                "excerpt)")
    else:
        what = "a process crashed"
    return Verdict(Kind.CRASHED_RANK, f"{what}: {quote(first)}{more}; read from its words (no parser decodes "
                   "the line); the others' waits or errors after it are its consequence",
                   ranks_named(crash.head(1)), lines(crash, 4))


def _runtime_watchdog_fired(ev: Evidence, told: pl.DataFrame) -> Verdict:
    """UNDECIDED where a runtime's own watchdog fired (``salient.RUNTIME_WATCHDOG``: SGLang's scheduler, whose
    forward batch made no progress past its limit) and the kill after it is its consequence: the processes
    hung in a batch; which one stopped first, and in what, the lines do not say."""
    fired = told.filter(pl.col("message").str.contains(salient.RUNTIME_WATCHDOG))
    r = ranks_named(fired)
    limit = re.search(r"watchdog_timeout=(\d+)", fired["message"][0])
    return Verdict(Kind.UNDECIDED, f"the runtime's own watchdog fired on {who(r) if r else 'a process'} "
                   f"({fired.height} line(s), first: {quote(fired.row(0, named=True))}): a forward batch made no "
                   f"progress for {limit[1] + ' s' if limit else 'its limit'} and the server killed itself "
                   "after it (SGLang's scheduler sends SIGQUIT to its parent, which reports a child that "
                   "failed): the processes hung, the kill is the consequence; no line says which rank stopped "
                   "first or in what; to decide: py-spy dump of every scheduler process while it hangs, and "
                   "NCCL_DEBUG=INFO (a collective one rank never joined, or a kernel that never returns)",
                   r, lines(fired, 4))


def raised_where(ev: Evidence, file: str) -> str:
    """``; it raised in init_device (vllm/v1/worker/gpu_worker.py:113)``: the innermost frame of a Python
    traceback in ``file`` (``parsers/pyspy``'s ``stack`` of a traceback, cut before its error line or pasted
    alone), or nothing."""
    st = ev.kinds(EventKind.STACK).filter((pl.col("file") == file) & pl.col("where").is_not_null()
                                          & pl.col("thread").str.contains("traceback|raised"))
    return f"; it raised in {clip(st.sort('line')['where'][0], 160)}" if st.height else ""


def _runtime_failed(ev: Evidence, failure: runtime_failures.Failure, crash: pl.DataFrame) -> Verdict:
    """CRASHED_RANK from a runtime's own word that a process of the job failed, could not start, or was lost
    with its node (``runtime_failures``): its meaning, the line, and where the process raised."""
    first = crash.row(0, named=True)
    more = f"; {crash.height - 1} more such line(s){hosts_named(crash)}" if crash.height > 1 else ""
    return Verdict(Kind.CRASHED_RANK, f"{failure.says}: {quote(first, 300)}"
                   f"{raised_where(ev, first['file'])}{more}; read from the runtime's own words "
                   f"({failure.means}); the others' waits or errors after it are its consequence",
                   ranks_named(crash.head(1)), lines(crash, 4))
