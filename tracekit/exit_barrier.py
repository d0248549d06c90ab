"""torchelastic's exit barrier: the agent's wait, once its local workers have ended, for the other nodes' agents
(issue 31: a set-up verdict where the excerpt does not show start-up stopped is a contradiction).

What it reads: the agent's own lines (pytorch/pytorch torch/distributed/elastic/agent/server/api.py
SimpleElasticAgent._invoke_run and _exit_barrier: ``Local worker group finished (%s). Waiting %s seconds for other
agents to finish``, ``[%s] worker group successfully finished. Waiting %s seconds for other agents to finish.``,
``Done waiting for other agents. Elapsed: %s seconds``, ``Error waiting on exit barrier. Elapsed: %s seconds``
over the traceback of the store's get), and a traceback's ``_exit_barrier`` frame (``store_util.barrier`` ->
``synchronize`` -> ``get_all`` -> ``store.get``) where the excerpt cut the agent's line.

Why: the barrier runs on the same TCPStore as the rendezvous, so its failure ends in the store's words (``Socket
Timeout``, ``Connection reset by peer``, ``wait timeout``) that the start-up rules read as a rendezvous that never
completed. But the workers it waits after had been started, ran and ended: the job was past start-up. On dev the
exit barrier's failure is labelled undecided (dv10-004: whether another node still trained, had failed, or the
store's host went away first, the excerpt does not say), and its clean pass healthy (dv27-014, dv28-012).
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import EventKind, Kind, Verdict

#: the agent's lines of its exit barrier: entered (its workers' state said), passed, or failed
ENTERED = (r"Local worker group finished \((?:WorkerState\.)?(?P<state>\w+)\)\. Waiting \d+ seconds for other agents"
           r"|worker group successfully finished\. Waiting \d+ seconds for other agents")
PASSED = r"Done waiting for other agents\. Elapsed:"
FAILED = r"Error waiting on exit barrier\. Elapsed: (?P<elapsed>[\d.]+) seconds"
#: a traceback's frame of the barrier (as parsers/pyspy writes it, ``_exit_barrier (path:line)``, or bare)
FRAME = r"(?:^|<- )_exit_barrier\b"
ANY = f"{ENTERED}|{PASSED}|{FAILED}"


def lines_of(ev: Evidence) -> pl.DataFrame:
    """The exit barrier's lines (the agent's own, and the tracebacks whose frames hold ``_exit_barrier``), in file
    order: ``file``, ``line``, ``rank``, ``message``."""
    ev_ = ev.store.events
    said = ev_.filter(pl.col("message").fill_null("").str.contains(ANY))
    frames = ev.kinds(EventKind.STACK).filter(
        pl.concat_str(pl.col("frames").fill_null(""), pl.lit(" <- "), pl.col("where").fill_null(""))
        .str.contains(FRAME))
    cols = ["file", "line", "rank", "message"]
    return (pl.concat([said.select(cols), frames.select(cols)]).unique(["file", "line"], maintain_order=True)
            .sort("file", "line"))


def first_line(ev: Evidence) -> pl.DataFrame:
    """Per file, the first line of its exit barrier: ``file``, ``_x`` (its line)."""
    return lines_of(ev).group_by("file").agg(pl.col("line").min().alias("_x"))


def seen(ev: Evidence) -> bool:
    """Whether any file shows the exit barrier: its workers had started and ended, so the job was past start-up."""
    return lines_of(ev).height > 0


def after_it(ev: Evidence, df: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``df`` (``file``, ``line``) at or after the exit barrier's first line in their file."""
    return df.join(first_line(ev), on="file").filter(pl.col("line") >= pl.col("_x")).drop("_x")


def failed_at_exit(ev: Evidence) -> Verdict | None:
    """UNDECIDED where the agent said its exit barrier failed, or every store, rendezvous or exception line comes at
    or after the exit barrier in its file: the local workers had ended and their agent's wait for the other nodes'
    agents failed in the store; what the other nodes were doing, the excerpt does not say."""
    if not seen(ev):
        return None
    cols = ["file", "line", "rank", "message"]
    failed = pl.concat([ev.rendezvous.select(cols), ev.kinds(EventKind.EXCEPTION, EventKind.C10D_ERROR).select(cols),
                        ev.timeouts.select(cols)]).unique(["file", "line"], maintain_order=True)
    if failed.height and after_it(ev, failed).height < failed.height:
        return None  # (a failure before the barrier: the workers' own, which the other rules read)
    if not failed.height:
        failed = lines_of(ev).filter(pl.col("message").fill_null("").str.contains(FAILED))
        if not failed.height:
            return None  # (entered or passed only: the workers ended; the progress and end rules read them)
    said = lines_of(ev)
    text = " ".join(said["message"].fill_null("").to_list())
    state = re.search(ENTERED, text)
    elapsed = re.search(FAILED, text)
    first = failed.sort("file", "line").row(0, named=True)
    ranks = sorted(set(failed["rank"].drop_nulls().to_list()))
    return Verdict(Kind.UNDECIDED, "torchelastic's exit barrier failed: the agent's local workers had ended"
                   + (f" ({state['state']})" if state and state["state"] else "")
                   + " and it waited for the other nodes' agents to finish"
                   + (f" for {float(elapsed['elapsed']):.0f} s" if elapsed else "")
                   + f", then its store failed: \"{clip(' '.join((first['message'] or '').split()), 160)}\"; the job "
                   "had got past start-up (its workers ran), so this is no rendezvous that never completed: another "
                   "node's workers were still running or hung, had failed, or the store's host (node 0's agent) "
                   "ended first; collect every node's agent log (the state each worker group finished in) and "
                   "exit codes", ranks, lines(said, 2) + lines(failed, 2))
