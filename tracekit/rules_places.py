"""DEADLOCK from the ranks' own words of where each is (``rank_places``): `Rank 0 is stuck at dist.barrier()`
and `Rank 1 is stuck in model.save_pretrained()`: ranks wait in a collective that another rank, busy
somewhere else, never issues (the label standard's deadlock), the fact being that rank and where it is.

Decided only where the words hold both sides: at least one rank said to wait (stuck, waiting, hangs,
blocked) in a collective (``rank_places.COLLECTIVE``) and at least one rank whose last place is no
collective, with no failure line (a crash, a transport's failure) that would explain the wait instead, and
no progress after the lines. Ranks all in one collective, or in different collectives, decide nothing here.
"""

from __future__ import annotations

import polars as pl

from tracekit import rank_places
from tracekit.evidence import Evidence, lines
from tracekit.outcome import Kind, Verdict
from tracekit.parsers.salient import Telling
from tracekit.rules_salient import telling
from tracekit.wording import who


def waits_on_busy_rank(ev: Evidence) -> Verdict | None:
    """Ranks said to wait in a collective while another rank is said to be elsewhere: DEADLOCK naming the
    rank elsewhere and its place, and the collective the others wait in."""
    told = telling(ev)
    if not told.height or told.filter(pl.col("where").is_in([Telling.CRASH, Telling.TRANSPORT])).height:
        return None
    at = rank_places.places(told.filter(pl.col("where") == Telling.WAIT))
    waiting = at.filter(pl.col("collective") & pl.col("state").str.contains(rank_places.WAITING))
    elsewhere = at.filter(~pl.col("collective"))
    if not waiting.height or not elsewhere.height:
        return None
    coll = waiting["place"].unique(maintain_order=True).to_list()
    busy = elsewhere.group_by("place", maintain_order=True).agg("rank")
    where = "; ".join(f"{who(r['rank'])} {'are' if len(r['rank']) > 1 else 'is'} in {r['place']}"
                      for r in busy.head(3).iter_rows(named=True))
    late, ranks, coll_said = elsewhere["rank"].to_list(), waiting["rank"].to_list(), " / ".join(coll[:2])
    summary = (f"{who(late)} never joined {coll_said}: {who(ranks)} {'wait' if len(ranks) > 1 else 'waits'} in "
               f"{coll_said} while {where} (as the ranks' own lines say): the waiting ranks block until "
               f"{who(late)} issues the same collective; that rank's stack (py-spy dump --pid) says why it does "
               "not get there (a branch on the rank, a save or an evaluation on one rank only)")
    rows = pl.concat([waiting, elsewhere]).sort("line")
    return Verdict(Kind.DEADLOCK, summary, ranks=sorted(late), evidence=lines(rows, 4))
