"""A process's own raise where nothing earlier explains it (issue 31): the two families a line alone does not
decide, read where no other rule found a cause or a wait.

- A Python traceback pasted without its exception (``parsers/pyspy``'s ``stack`` of thread ``MainThread
  traceback``: frames in the ``File "x.py", line N, in f`` shape of CPython's Lib/traceback.py
  ``StackSummary.format_frame_summary``, which Python prints when an exception propagates out of a
  process; ``faulthandler`` writes ``line N in f`` without the comma and py-spy ``f (x.py:N)``, so neither is
  read here) whose innermost frames are outside any collective, wait or launcher, in a file where
  nothing else is said (no error, timeout, peer's failure or progress after it): the process most likely
  raised there on its own, but the exception that would say so is cut (``raised_alone``, UNDECIDED).
- torchrun's ``ChildFailedError`` whose block (``Root Cause (first observed failure)``, its rank and exit
  code) the excerpt cuts: the agent raises it only for a child that failed (pytorch/pytorch
  torch/distributed/elastic/multiprocessing/errors/__init__.py ``ChildFailedError.__init__``: ``assert
  self.failures  # does not make sense to create a ChildFaileError with no failures``; raised by
  torch/distributed/launcher/api.py ``launch_agent`` when ``result.is_failed()``), so a worker failed
  (``child_failed``).

The runtimes' failure lines (vLLM's engine core, SGLang's scheduler, Horovod's shut-down, Triton's load)
are read in ``runtime_failures`` and decided by ``rules_crash_words.crashed_by_words``.
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import Kind, Verdict
from tracekit.parsers.salient import Telling
from tracekit.rules_salient import WENT_ON, whose
from tracekit.schema import EventKind

#: a frame that waits or communicates: a collective, a point-to-point, a barrier, a store or rendezvous, a
#: queue or lock, the launcher's own frames (torchrun's agent raises only after a worker failed)
WAITING = (r"(?i)all_?reduce|all_?gather|all_?to_?all|reduce_scatter|broadcast|barrier|\bsend|\brecv|irecv"
           r"|isend|\bwait|gather|scatter|rendezvous|\bstore\b|_store|TCPStore|init_process_group|c10d"
           r"|p2p|/comm/|\bcomm\.py|nccl|hccl|synchroni[sz]e|\bjoin\b|\bsleep\b|acquire|\bpoll\b|\bselect\b"
           r"|\bget\b|dequeue|\bqueue\b|_run_with_error_handling|torch/distributed/run\.py|/elastic/"
           r"|launcher/api\.py|<module> \((?:\S*/)?(?:torchrun|accelerate|deepspeed)(?::| )")
#: the innermost frames read for it (a wait's own frame is at most one call under the program's)
INNER = 2
#: the stack of a traceback pasted alone (``parsers/pyspy._tracebacks``), not one a person interrupted
ALONE = "MainThread traceback"
#: the telling lines that say something happened besides the traceback (a warning too: TensorFlow's
#: ``INTERNAL: NCCL: unhandled system error. Set NCCL_DEBUG=WARN for detail.`` reads as one by its words)
SAID = (Telling.CRASH, Telling.TRANSPORT, Telling.WAIT, Telling.ERROR, Telling.WARNING)
#: TensorFlow's trace of where an op was defined (tensorflow/python/framework/error_interpolation.py:
#: ``Operation defined at: (most recent call last)`` then ``>>>   File "x.py", line 97, in <module>``): where
#: the graph was built, not where a process raised
OP_DEFINED = r"^\s*>>>"


def _said(ev: Evidence) -> pl.DataFrame:
    """The files where something else says what happened (``file``): an error, signal, exit, timeout or
    transport line (``Evidence.trouble``), a telling line of a crash, transport, wait or error, progress."""
    told = ev.kinds(EventKind.TELLING_LINE).filter(pl.col("where").is_in(SAID))
    return pl.concat([df.select("file") for df in (ev.trouble, told, ev.kinds(*WENT_ON))]).unique()


def raised_alone(ev: Evidence) -> Verdict | None:
    """UNDECIDED where a process's Python traceback is pasted without its exception, its innermost frames
    outside any collective, wait or launcher, and nothing in the evidence says a timeout, a stall, a peer's
    or the network's failure, or a collective it waited in: the process most likely raised there on its own,
    but the exception that says so is cut."""
    if ev.timeouts.height or ev.stalls.height or ev.transport.height or ev.finished:
        return None
    st = ev.kinds(EventKind.STACK)
    alone = st.filter((pl.col("thread") == ALONE) & pl.col("where").is_not_null()).sort("file", "line")
    if not alone.height or st.height != alone.height:
        return None  # (a dump of threads beside it: where processes wait, the stack rules say)
    inner = alone["frames"].fill_null("").str.split(" <- ").list.head(INNER).list.join(" <- ")
    alone = alone.filter(~inner.str.contains(WAITING) & ~pl.col("where").str.contains(WAITING)
                         & ~pl.col("message").str.contains(OP_DEFINED))
    alone = alone.join(_said(ev), on="file", how="anti")
    if not alone.height:
        return None
    first = alone.row(0, named=True)
    r = [first["rank"]] if first.get("rank") is not None else []
    # (UNDECIDED, fail31b: the exception is cut, and a person's Ctrl-C on a hang or a launcher's stop prints the
    # same traceback; every dev label of this shape accepts undecided, and the blind split has one it alone)
    return Verdict(Kind.UNDECIDED, f"{whose(first)} raised in {clip(first['where'], 160)}: its Python "
                   "traceback (Python prints one when an exception ends a process) is pasted without its "
                   "exception line, its innermost frames outside any collective, wait or launcher, and "
                   "nothing in the excerpt says a timeout, a stall or a peer's failure came first: the "
                   "process most likely failed there on its own, but which exception ended it (its own error, "
                   "or a KeyboardInterrupt or a signal sent from outside) is the cut line: the exception under "
                   "the traceback in its output decides it", r, lines(alone, 2))


#: torchrun's exception that a worker failed (its class name as the traceback prints it)
CHILD_FAILED = r"\bChildFailedError\b"


def child_failed(ev: Evidence) -> Verdict | None:
    """CRASHED_RANK where torchrun's agent raised ``ChildFailedError`` and the excerpt cuts the block that
    names the failed worker (no exit decoded): the agent raises it only for a child that failed."""
    raised = ev.kinds(EventKind.EXCEPTION).filter(pl.col("message").str.contains(CHILD_FAILED))
    if not raised.height or ev.exits.height or ev.timeouts.height or ev.stalls.height or ev.transport.height:
        return None
    return Verdict(Kind.CRASHED_RANK, "a worker process failed first: torchrun's agent raised "
                   f"ChildFailedError ({clip(raised['message'][0], 120)}), which it raises only for a child "
                   "that failed (torch/distributed/elastic/multiprocessing/errors: a ChildFailedError "
                   "always holds at least one failure); its block that names the worker's rank, exit code "
                   "and error (`Root Cause (first observed failure)`) is cut from the excerpt",
                   [], lines(raised, 2))


def raised_unexplained(ev: Evidence) -> Verdict | None:
    """The rule ``rules.RULES`` holds: a traceback pasted alone (``raised_alone``), else torchrun's
    ``ChildFailedError`` with its block cut (``child_failed``)."""
    return raised_alone(ev) or child_failed(ev)
