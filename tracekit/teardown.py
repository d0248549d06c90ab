"""A run that ended cleanly, then its teardown's noise (issue 31, teardown31).

A job whose ranks said their work ended (the program's end line, the HF Trainer's ``train_runtime``, DeepSpeed's
launcher ``Process 2486035 exits successfully``, torchelastic's ``worker group successfully finished``: the
``rules_after_end.END`` kinds) often prints failure words as its processes exit one by one:

- the TCPStore's clients after its host (rank 0's process or agent) exited first: ``TCPStore.cpp:125] [c10d]
  recvValue failed on SocketImpl(...): Connection reset by peer``, ``sendBytes failed ...: Broken pipe``, the
  heartbeat monitor's ``Failed to check the "should dump" flag on TCPStore, (maybe TCPStore server has shut
  down too early)`` (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, HeartbeatMonitor::runLoop);
- NCCL closing its sockets at destroy or abort: ``misc/socket.cc:64 -> 3`` unwinds, the proxy's ``[Service
  thread] Connection closed by localRank 1``, ``Connection closed by remote peer``;
- ``ProcessGroupNCCL`` destructor warnings and Python's ``Exception ignored in: <function ...__del__>``.

This module says, per file and rank, where the run's end is (``ends``) and which failure lines come after it
as its teardown (``noise``): a line after an end that covers its rank (an end of that rank, or one that names
no rank, in the same file) that is NCCL's unwind as it closes (``CLOSING``), or whose words are the store's,
the sockets' or the communicator's own teardown words (``TEARDOWN``: a transport's error or an NCCL warning
after an end is noise only by those words). A failure before the end, or of another kind (a
non-zero exit, a signal, a timeout, a CUDA error), is never noise. ``ended_then_torn_down`` is the verdict:
HEALTHY where every visible rank's end is shown and nothing but that noise is logged, UNDECIDED saying so
where only some ranks' ends are shown.
"""

from __future__ import annotations

import polars as pl

from tracekit import file_ranks, last_run
from tracekit.evidence import Evidence, clip, lines
from tracekit.ignored_exceptions import ignored
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.rules_after_end import END

#: the kind of NCCL's closing by its kind alone: an unwind after an end on its rank, the sockets of a process
#: that exits
CLOSING = (EventKind.NCCL_UNWIND,)
#: the kinds that are teardown only by their words (``TEARDOWN``): an exception or an abort after an end may be
#: a real failure of the end's own work (a checkpoint's write, an upload), and a transport's error or NCCL's
#: warning after an end one of the network's (an IB completion error after a phase's end line is the
#: transport's failure, not its close)
BY_WORDS = (EventKind.TRANSPORT_ERROR, EventKind.NCCL_WARN, EventKind.EXCEPTION, EventKind.CRASH,
            EventKind.C10D_ERROR, EventKind.WATCHDOG_ABORT, EventKind.WATCHDOG_STATUS, EventKind.STACK)
#: the store's and the communicators' own words as a process exits: the TCPStore client's (``recvValue
#: failed``, ``sendBytes failed``, ``failed to recv, got 0 bytes``), the heartbeat monitor's (``should dump``
#: flag, ``TCPStore server has shut down too early``), a socket's errno words, NCCL's socket and proxy closes,
#: the destructors' (``ProcessGroupNCCL`` destructor, ``destroy_process_group() was not called``, ``__del__``)
TEARDOWN = (r"(?i)recvValue failed|sendBytes failed|failed to recv, got 0 bytes|\"should dump\" flag"
            r"|TCPStore server has shut down|connection reset by peer|broken pipe|closed by (?:remote )?peer"
            r"|closed the connection|Connection closed by localRank|destructor|destroy_process_group"
            r"|__del__|Exception ignored in|HeartbeatMonitor|heartbeat monitor|misc/socket\.cc|TCPStore::check")


def ends(ev: Evidence) -> pl.DataFrame:
    """The run's end lines (``rules_after_end.END``): file, rank (null where the line names none: it covers
    the ranks of its file), the line of the first of each file and rank, and the last line's message. An end
    that a new run follows (``last_run``: the step count starts again after it) is that run's, not the job's."""
    done = last_run.job_ends(ev, ev.kinds(*END))
    if not done.height:
        return pl.DataFrame(schema={"file": pl.Utf8, "rank": pl.Int64, "_end": pl.Int64, "_said": pl.Utf8})
    return (done.sort("file", "line").group_by("file", "rank", maintain_order=True)
            .agg(pl.col("line").min().alias("_end"), pl.col("message").last().alias("_said")))


def _failures(ev: Evidence) -> pl.DataFrame:
    """Every line that is not calm (``Evidence.trouble``) and every C++ or Python frame (a heartbeat
    monitor's ``c10d::TCPStore::check`` frames under a teardown warning its parser drops), with the line of
    the end that covers it (its rank's own end or its file's rankless one, the earlier), null where none does."""
    frames = ev.kinds(EventKind.STACK).join(ev.trouble.select("file", "line"), on=["file", "line"], how="anti")
    bad = pl.concat([ev.trouble, frames], how="diagonal_relaxed")
    e = ends(ev)
    own = e.filter(pl.col("rank").is_not_null()).select("file", "rank", pl.col("_end").alias("_own"))
    whole = e.filter(pl.col("rank").is_null()).select("file", pl.col("_end").alias("_whole"))
    return (bad.join(own, on=["file", "rank"], how="left").join(whole, on="file", how="left")
            .with_columns(pl.min_horizontal("_own", "_whole").alias("_end")))


def noise(ev: Evidence) -> pl.DataFrame:
    """The failure lines that are the teardown of a run that ended: after the end that covers their rank, of
    a closing kind (``CLOSING``) or saying the teardown's words (``TEARDOWN``), or under Python's ``Exception
    ignored in`` header."""
    f = _failures(ev)
    if not f.height:
        return f
    after = f.filter(pl.col("_end").is_not_null() & (pl.col("line") > pl.col("_end")))
    words = pl.concat_str(pl.col("where").fill_null(""), pl.lit(" "), pl.col("message").fill_null(""))
    said = after.filter(pl.col("kind").is_in(list(CLOSING))
                        | (pl.col("kind").is_in(list(BY_WORDS)) & words.str.contains(TEARDOWN)))
    unraised = ignored(ev, after)
    return pl.concat([said, unraised], how="diagonal_relaxed").unique(["file", "line"], keep="first").sort(
        "file", "line")


def _ranks_ended(ev: Evidence) -> set[int]:
    """The ranks whose end is shown: a rank's own end line, or a rankless one in every file the rank is seen
    in; a communicator destroyed; torchelastic's agent's word that its worker group finished."""
    e = ends(ev)
    done = set(e["rank"].drop_nulls().to_list())
    rankless = set(e.filter(pl.col("rank").is_null())["file"].to_list())
    done |= file_ranks.ranks_only_in(ev, rankless)
    destroyed = ev.store.comms.filter(pl.col("state") == "destroy_complete")
    done |= set(destroyed.select(pl.coalesce("global_rank", "rank"))[:, 0].drop_nulls().to_list())
    return done | set(ev.agent_finished)


def _quiet_otherwise(ev: Evidence) -> bool:
    """Nothing but calm lines besides the failure lines: no stall, rank behind, pending init, mismatch,
    stack dump, non-zero exit, cancel or wrong value."""
    return not (ev.stalls.height or ev.missing or ev.pending.height or ev.mismatches or ev.stacks.height
                or ev.exits.height or ev.cancelled.height or ev.kinds(EventKind.TEST_WRONG).height)


def ended_then_torn_down(ev: Evidence) -> Verdict | None:
    """The run said its work ended and every failure line logged is its teardown (``noise``): HEALTHY where
    every rank seen shows its end (or every launcher exited 0), UNDECIDED naming the ranks whose end is not
    shown otherwise. A failure line that is not teardown, before the end or on a rank with no end, leaves
    the verdict to the failure rules."""
    torn = noise(ev)
    if not torn.height or not _quiet_otherwise(ev):
        return None
    if ev.trouble.join(torn.select("file", "line"), on=["file", "line"], how="anti").height:
        return None
    e = last_run.job_ends(ev, ev.kinds(*END)).sort("file", "line")
    if not e.height:
        return None
    first, last = e.row(0, named=True), e.row(-1, named=True)
    said = f"`{clip(first['message'], 100)}`" + (
        f" ... `{clip(last['message'], 100)}` ({e.height} end line(s))" if e.height > 1 else "")
    # (the line that says the most: a warning or an error in the teardown's words before an unwind or a frame)
    ranked = torn.with_columns(
        pl.when(pl.col("kind") == EventKind.STACK).then(pl.col("where")).otherwise(pl.col("message")).alias("_q"),
        (pl.col("kind").is_in([EventKind.STACK, EventKind.NCCL_UNWIND])
         | ~pl.col("message").fill_null("").str.contains(TEARDOWN)).alias("_weak")).sort("_weak", "file", "line")
    noise_said = (f"{torn.height} line(s) of failure after it are its teardown, the first `{clip(ranked['_q'][0], 140)}`"
                  " (the store's host or a peer exited first; each process's connections close as it exits)")
    cited = [Cited(first["file"], first["line"], first["message"])] + lines(ranked, 2) + (
        [Cited(last["file"], last["line"], last["message"])] if e.height > 1 else [])
    seen = set(ev.coverage.seen)
    left = sorted(seen - _ranks_ended(ev)) if not ev.finished else []
    if not left:
        return Verdict(Kind.HEALTHY, f"the run ended cleanly: it said its work ended ({said}) and {noise_said}; "
                       f"no failure before the end; {ev.coverage.describe()}", [], cited)
    return Verdict(Kind.UNDECIDED, f"the run said its work ended ({said}) and {noise_said}, but rank(s) "
                   f"{','.join(map(str, left))} show no end of their own: whether they ended is not in the lines; "
                   f"their own logs and the launchers' exit codes decide it ({ev.coverage.describe()})",
                   left, cited)
