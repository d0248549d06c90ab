"""A rank's error whose own words point at another rank's log for the faulty one (issue 31, fail31b).

Gloo's monitored barrier (PyTorch torch/csrc/distributed/c10d/ProcessGroupGloo.cpp, monitoredBarrier) raises
on every rank but 0 when rank 0's side of the barrier failed: ``Rank 1 successfully reached
monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please check rank 0 logs for
faulty rank.`` The rank that raised is one that got through: neither its crash nor, as such, rank 0's (rank
0, the barrier's root, raises when some rank never reached the barrier -- a rank elsewhere, a deadlock --
or it died). Read as the raising rank's own crash, the verdict named the survivor (the s29 merge: the blind
split labels such excerpts deadlock or undecided, never a crash of the rank named). UNDECIDED, saying
whose log decides.
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
    """UNDECIDED where the first failure's words send the reader to another rank's log for the faulty one
    (``FAULTY``): the rank that raised got through; that rank's log says who never arrived or why it failed."""
    m = re.search(FAULTY, first["message"][0] or "")
    if m is None:
        return None
    faulty = int(m.group("rank") or m.group("check"))
    if faulty in reporter:
        return None
    by = f"rank {reporter[0]}" if reporter else "a rank"
    return Verdict(Kind.UNDECIDED, f"{by} got through and raised because rank {faulty}'s side failed "
                   f"({msg(first, 0, 220)}): {by}'s error is the consequence, not its own failure; rank "
                   f"{faulty} (the barrier's root) raises when some rank never reached the barrier (a rank "
                   "elsewhere: a deadlock) or it died itself; to decide: rank "
                   f"{faulty}'s own log (it names the rank that failed to pass the barrier, or its own error)",
                   [faulty], lines(first, 1) + lines(ev.exits, 2))
