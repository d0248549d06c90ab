"""A rank's error whose own words name another rank as the one that failed (issue 31, fail31b).

Gloo's monitored barrier (PyTorch torch/csrc/distributed/c10d/ProcessGroupGloo.cpp, monitoredBarrier) raises
on every rank but 0, when rank 0's side of the barrier failed: ``Rank 1 successfully reached
monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please check rank 0 logs for
faulty rank.`` The rank that raised is the one that got through; the failure is rank 0's (it died, or it
found another rank missing and said so in its own log). Read as the raising rank's own crash, the verdict
named the survivor. Here the rank the words name is the failing one, the reporter's error its consequence.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.evidence import Evidence, lines
from tracekit.outcome import Kind, Verdict
from tracekit.rules_common import msg

#: the words that name the faulty rank (the reporter's own rank is the `Rank N` in front)
FAULTY = (r"received errors while waiting for send/recv from rank (?P<rank>\d+)"
          r"|[Pp]lease check rank (?P<check>\d+) logs for faulty rank")


def names_faulty_rank(ev: Evidence, first: pl.DataFrame, reporter: list[int]) -> Verdict | None:
    """CRASHED_RANK of the rank the first failure's words name as faulty (``FAULTY``), not of the rank that
    raised it."""
    m = re.search(FAULTY, first["message"][0] or "")
    if m is None:
        return None
    faulty = int(m.group("rank") or m.group("check"))
    if faulty in reporter:
        return None
    by = f"rank {reporter[0]}" if reporter else "a rank"
    return Verdict(Kind.CRASHED_RANK, f"rank {faulty} failed first: {by} raised because of it "
                   f"({msg(first, 0, 220)}): the barrier's side on rank {faulty} failed (that rank exited or "
                   f"was killed, or it found another rank missing: rank {faulty}'s own log says which); {by}'s "
                   "error is the consequence", [faulty], lines(first, 1) + lines(ev.exits, 2))
