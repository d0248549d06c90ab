"""torch's word that a rank's NCCL communicator was aborted, read where no rule before it decided the excerpt.

c10d raises ``NCCL communicator was aborted on rank N.`` (torch/csrc/distributed/c10d/NCCLUtils.cpp
``NCCLComm::checkForNcclError``; torch 1.x ProcessGroupNCCL.cpp) when a work or a call on a communicator finds it
aborted: its own watchdog aborted it after a collective timed out or an NCCL error (the message then goes on
``Original reason for failure was: ...``, which the timeout and NCCL rules read first), or the program aborted it
(``destroy_process_group``, ``abort``, a shutdown after another error). Alone it is a consequence whose cause is
elsewhere: ``communicator_aborted`` says so, names the rank and what to collect (UNDECIDED), instead of the bare
"error lines no rule explains".
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.wording import who

#: c10d's text, with the rank it names (group ``rank``); the original reason, where torch gives it, follows
ABORTED = r"(?i)\bNCCL communicator was aborted on rank (?P<rank>\d+)\b"
REASON = r"(?i)Original reason for failure was:\s*(?P<reason>\S.*)$"


def communicator_aborted(ev: Evidence) -> Verdict | None:
    """UNDECIDED naming the rank whose communicator c10d found aborted, where no earlier rule explained the
    excerpt: the abort is the watchdog's after a timeout or an NCCL error, or the program's own (a destroy or a
    shutdown after another failure); the lines before it on every rank say which."""
    said = pl.col("message").fill_null("")
    ab = (ev.kinds(EventKind.WATCHDOG_ABORT, EventKind.EXCEPTION, EventKind.C10D_ERROR)
          .filter(said.str.contains(ABORTED)).unique(["file", "line"], maintain_order=True).sort("file", "line"))
    if not ab.height:
        return None
    named = ab.select(said.str.extract(ABORTED, 1).cast(pl.Int64, strict=False).alias("r"))["r"]
    ranks = sorted(set(named.drop_nulls().to_list()) | set(ab["rank"].drop_nulls().to_list()))
    reason = ab.select(said.str.extract(REASON, 1).alias("x"))["x"].drop_nulls()
    why = (f"; torch gives its original reason: \"{clip(reason[0], 160)}\"" if reason.len() else
           "; it gives no original reason")
    on = who(ranks) if ranks else "a rank"
    return Verdict(Kind.UNDECIDED, f"NCCL communicator was aborted on {on} ({ab.height} line(s), first "
                   f"\"{clip(' '.join(ab['message'][0].split()), 160)}\"){why}: c10d raises this when a call finds "
                   "the communicator already aborted, by its watchdog after a collective timed out or an NCCL "
                   "error, or by the program itself (destroy_process_group or a shutdown after another failure): "
                   "a consequence whose cause the excerpt does not show; collect the lines before the abort on "
                   "every rank (the first error or the watchdog's timeout, with its collective and SeqNum), "
                   "NCCL_DEBUG=INFO and TORCH_NCCL_TRACE_BUFFER_SIZE for the Flight Recorder dump",
                   ranks, lines(ab, 3))
