"""Worker processes that exited 0 after the program's own end, with teardown noise between (issue 31, s31).

What it reads: the program's word that its work ended (Megatron's ``[after training is done]``, a
trainer's end line, the last step of a loop at its stated total ``iteration 20/ 20``), then the
launcher's word that worker processes returned 0 (DeepSpeed's ``[launch.py:367:main] Process 1314973
exits successfully.``, printed only where ``process.poll() == 0``; torchelastic's ``worker group
successfully finished``). Between them a multi-node job's teardown prints lines with error words: NCCL's
``misc/socket.cc:64 -> 3`` and ``Abort COMPLETE`` as communicators close, the heartbeat monitor's
``TCPStore.cpp:125] [c10d] recvValue failed ... Connection reset by peer`` and ``Failed to check the
"should dump" flag on TCPStore, (maybe TCPStore server has shut down too early)`` once rank 0's store
is gone. A process that returns 0 did not fail: those lines are the order in which the processes went
away, not a failure. HEALTHY, naming the end, the exits and the noise; never where any line says a
process failed (a non-zero exit, a signal, a crash, a CUDA error, a timeout) or where the noise starts
before the program's end (then it may be what stopped the work).
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.progress_messages import ENDS

#: a launcher's word that a worker process it started returned 0 (progress_messages: DeepSpeed's per-process
#: line); torchelastic's agent's is a ``clean_exit`` event of its own (``where == "torchrun agent"``)
EXITED_OK = next(m.pattern for m in ENDS if m.name == "deepspeed_process_succeeded")

#: the trouble a clean teardown prints after the work ended: transports and stores closed under a process
#: still polling them, NCCL's unwind of the calls that failed on the closed sockets, its WARNs about them;
#: any other kind (a signal, a non-zero exit, a crash, a timeout) says a process failed
TEARDOWN = (EventKind.TRANSPORT_ERROR, EventKind.C10D_ERROR, EventKind.NCCL_WARN, EventKind.NCCL_UNWIND,
            EventKind.CONNECT_RETRY)


def _exits_ok(ev: Evidence) -> pl.DataFrame:
    """The launcher's lines that a worker process (or a node's worker group) returned 0, in log order."""
    said = ev.kinds(EventKind.PROGRAM_END).filter(pl.col("message").fill_null("").str.contains(EXITED_OK))
    agent = ev.kinds(EventKind.CLEAN_EXIT).filter(pl.col("where") == "torchrun agent")
    return pl.concat([said, agent], how="diagonal_relaxed").sort("file", "line")


def _work_ended(ev: Evidence, exits: pl.DataFrame) -> pl.DataFrame:
    """The program's own end lines (not the launcher's exit words) and the steps at their stated total,
    in log order."""
    ends = ev.kinds(EventKind.PROGRAM_END, EventKind.TRAIN_END).join(
        exits.select("file", "line"), on=["file", "line"], how="anti")
    last = ev.kinds(EventKind.STEP).filter(pl.col("max_steps").is_not_null()
                                           & (pl.col("step") >= pl.col("max_steps")))
    return pl.concat([ends, last], how="diagonal_relaxed").sort("file", "line")


def exited_ok_after_end(ev: Evidence) -> Verdict | None:
    """HEALTHY where the program said its work ended, the launcher then said its worker processes
    returned 0, and every line with an error word came after the work's end and is teardown
    (``TEARDOWN``): the processes went away one after another, none failed."""
    if ev.failure_signs or ev.stalls.height or ev.missing or ev.mismatches or ev.pending.height:
        return None
    exits = _exits_ok(ev)
    if not exits.height:
        return None
    ended = _work_ended(ev, exits)
    if not ended.height:
        return None
    first_end = ended.group_by("file").agg(pl.col("line").min().alias("_end"))
    if exits.join(first_end, on="file", how="anti").height or exits.join(first_end, on="file").filter(
            pl.col("line") < pl.col("_end")).height:
        return None  # (an exit word in a file with no end before it: a process that ended early)
    noise = ev.trouble
    if noise.height:
        after = noise.join(first_end, on="file", how="left")
        if not noise["kind"].is_in(list(TEARDOWN)).all() or after.filter(
                pl.col("_end").is_null() | (pl.col("line") < pl.col("_end"))).height:
            return None  # (a failure's kind, or error words before the work ended: they may have ended it)
    own = ended.filter(pl.col("kind") != EventKind.STEP)  # (the program's end line says it best; else the step)
    end = (own if own.height else ended).row(-1, named=True)
    ranks = ev.coverage.seen
    # (the store's or the transport's own words say more than NCCL's unwind codes: quoted first)
    told = noise.sort(pl.col("kind") == EventKind.NCCL_UNWIND, "file", "line")
    said_noise = (f"; the {noise.height} line(s) with error words between are its teardown (first: "
                  f"`{clip(told['message'][0], 110)}`): a process that returns 0 did "
                  "not fail, the lines say in which order the processes went away" if noise.height else "")
    return Verdict(Kind.HEALTHY, f"the program's work ended (`{clip(end['message'], 100)}`), then the launcher "
                   f"said {exits.height} worker process(es) returned 0 (`{clip(exits['message'][-1], 100)}`)"
                   f"{said_noise}; no signal, non-zero exit, crash or timeout logged: completed cleanly "
                   f"({ev.coverage.describe() if ranks else 'no rank named'})", [],
                   [Cited(end["file"], end["line"], clip(end["message"]))] + lines(exits.tail(2), 2))
