"""c10d's desync report (``TORCH_NCCL_DESYNC_DEBUG=1``; github:pytorch/pytorch
torch/csrc/distributed/c10d/TraceUtils.h ``retrieveDesyncReport``), printed by the rank whose collective timed
out after its watchdog line::

    [Rank 0] Desync debugging report:
         - [0] Timeout at collective: BROADCAST, #8
         - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:
           - [1] joined but didn't finish collective #7 (count from 1)
             [2, 3] finished collective #7, but didn't join collective #8 (count from 1)
         - Snapshot of ranks' latest states:
           #8 started ranks:
             [0, 1] started BROADCAST

or, where some ranks never wrote a trace to the store (``analyzeMissingRanks``): ``- To our best knowledge,
ranks [3] are the lagging ranks that caused this timeout. They never joined any collectives``.

c10d's monitored barrier (``dist.monitored_barrier``; torch/csrc/distributed/c10d/ProcessGroupGloo.cpp
``monitoredBarrier``) names the ranks that never reached it, on rank 0: ``[Rank 0]: Rank 1 failed to pass
monitoredBarrier in 2000 ms`` (then `` Original exception:`` and the transport's word: ``Connection closed by
peer`` where that rank exited, ``Timed out waiting 12000ms for recv`` where it is still elsewhere), or with
``wait_all_ranks=True`` ``[Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 120000 ms``.

c10d also names a rank that failed, as another rank found it: ProcessGroupNCCL's watchdog (torch 1.8-1.12)
``[Rank 2] Found key in store: NCCLABORTEDCOMM:20c3..., from rank: 0. This means that rank has aborted its NCCL
communicators previously and is not in a healthy state.``: a ``crash`` of the rank named (where ``c10d named``),
the reporter's own error after it its consequence. (A non-root rank's ``received errors while waiting for
send/recv from rank 0. Please check rank 0 logs for faulty rank.`` is not read so: rank 0 is the barrier's root,
which raised because another rank never reached it; the blind split's labels of such excerpts were deadlock and
undecided, s29 merge.)

Each rank the report says finished #N but never joined #N+1, and each rank that never joined any, is a
``rank_missing`` event of that collective (``seq``: the one it never joined; ``op``: the reporter's
``Timeout at collective`` when that is the collective, else the snapshot's ``started`` op at that number).
``ranksToString`` writes ``2, 3``. A rank that joined but did not finish is in the collective (a peer of it
is the missing one, or it died inside): no event. Every line of the report is claimed.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of
from tracekit.schema import EventKind

RANKS = r"\[(?P<ranks>\d+(?:, \d+)*)\]"
TIMEOUT_AT = r"^\s*-?\s*\[(?P<me>\d+)\] Timeout at collective: (?P<op>\w+), #(?P<seq>\d+)"
NOT_JOINED = r"^\s*-?\s*" + RANKS + r" finished collective #(?P<done>\d+), but didn't join collective #(?P<seq>\d+)"
NEVER = r"ranks " + RANKS + r" are the lagging ranks that caused this timeout"
STARTED = r"^\s*" + RANKS + r" (?P<state>started|finished) (?P<op>\w+)\s*$"
KNOWN = [r"Desync debugging report:?\s*$", r"^\s*-?\s*\[\d+(?:, \d+)*\] joined but didn't finish collective #\d+",
         r"^\s*-\s*To our best knowledge, the lagging/dead/mismatched ranks", r"^\s*They never joined any collectives",
         r"^\s*-\s*Snapshot of ranks' latest states:", r"^\s*#\d+ (?:started|finished) ranks:\s*$"]
CHEAP = "collective|lagging|Desync|Snapshot|ranks:|started|finished|monitoredBarrier|NCCLABORTEDCOMM"
#: c10d's word of another rank that failed (the docstring's two lines)
FAULTY = r"NCCLABORTEDCOMM:\w*, from rank: (\d+)"
NAMED = "c10d named"
BARRIER = r"\bRanks? (?P<ranks>\d+(?:, \d+)*) failed to pass monitoredBarrier in (?P<ms>\d+) ms"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("c10d-desync")
    t = pl.col("text")
    df = lines.filter(t.str.contains(CHEAP)).select("file", "line", "text")
    barrier = df.filter(t.str.contains(BARRIER)).select(
        "file", "line", pl.lit(EventKind.RANK_MISSING).alias("kind"),
        t.str.extract(BARRIER, 1).str.split(", ").alias("rank"), pl.lit("barrier").alias("op"),
        t.str.extract(BARRIER, 2).cast(pl.Int64).alias("timeout_ms"),
        pl.lit("c10d monitored barrier").alias("where")).explode("rank").with_columns(
        pl.col("rank").cast(pl.Int64)).with_columns(
        pl.format("c10d's monitored barrier: rank {} never reached it in {} ms", "rank", "timeout_ms")
        .alias("message"))
    faulty = df.filter(t.str.contains(FAULTY)).select(
        "file", "line", pl.lit(EventKind.CRASH).alias("kind"), t.str.extract(FAULTY, 1).cast(pl.Int64).alias("rank"),
        pl.lit(NAMED).alias("where"),
        pl.format("c10d: rank {} had aborted (its NCCLABORTEDCOMM key, found in the store by another rank): it failed "
                  "first", t.str.extract(FAULTY, 1)).alias("message"))
    barrier = pl.concat([barrier, faulty], how="diagonal_relaxed")
    mine = df.filter(t.str.contains(any_of(TIMEOUT_AT, NOT_JOINED, NEVER, STARTED, *KNOWN)))
    # (the report's own lines, not a snapshot's `[0, 1] started X` alone, which another program could print)
    if not mine.filter(t.str.contains(any_of(TIMEOUT_AT, NOT_JOINED, NEVER, *KNOWN[:3]))).height:
        if barrier.height:
            return Parsed("c10d-desync", {"events": barrier}, barrier.select("file", "line").unique())
        return Parsed("c10d-desync")
    # the reporter's own timed-out collective, and the snapshot's op of each collective number
    at = mine.filter(t.str.contains(TIMEOUT_AT)).select(
        "file", t.str.extract(TIMEOUT_AT, 3).cast(pl.Int64).alias("_at"), t.str.extract(TIMEOUT_AT, 2).alias("_op"))
    at = at.unique("file", keep="last")
    # the snapshot's `[0, 1] started BROADCAST`, under the `#8 started ranks:` head before it
    head = t.str.extract(r"^\s*#(\d+) started ranks:", 1).cast(pl.Int64)
    snap = (df.sort("file", "line").with_columns(pl.when(t.str.contains(r"^\s*#\d+ (?:started|finished) ranks:"))
                                                 .then(head).forward_fill().over("file").alias("seq"))
            .filter(t.str.contains(STARTED) & t.str.contains(r"\bstarted\b"))
            .select("file", "seq", t.str.extract(STARTED, 3).alias("_sop")).drop_nulls().unique(["file", "seq"]))
    lagged = mine.filter(t.str.contains(NOT_JOINED)).with_columns(
        t.str.extract(NOT_JOINED, 1).alias("_r"), t.str.extract(NOT_JOINED, 3).cast(pl.Int64).alias("seq"),
        pl.lit("finished the collective before it, never joined it").alias("_how"))
    never = mine.filter(t.str.contains(NEVER)).with_columns(t.str.extract(NEVER, 1).alias("_r"),
                                                            pl.lit(None, pl.Int64).alias("seq"),
                                                            pl.lit("never joined any collective").alias("_how"))
    gone = pl.concat([lagged, never]).join(at, on="file", how="left").with_columns(
        pl.coalesce("seq", "_at").alias("seq"))
    gone = gone.join(snap, on=["file", "seq"], how="left").with_columns(
        pl.when(pl.col("seq") == pl.col("_at")).then(pl.col("_op")).otherwise(pl.col("_sop"))
        .str.to_lowercase().alias("op"))
    events = gone.with_columns(pl.col("_r").str.split(", ").alias("rank")).explode("rank").select(
        "file", "line", pl.lit(EventKind.RANK_MISSING).alias("kind"), pl.col("rank").cast(pl.Int64), "seq", "op",
        pl.format("c10d's desync report: rank {} {} (#{})", "rank", "_how", "seq").alias("message"),
        pl.lit("c10d desync report").alias("where"))
    events = pl.concat([events, barrier], how="diagonal_relaxed")
    return Parsed("c10d-desync", {"events": events},
                  pl.concat([mine.select("file", "line"), barrier.select("file", "line")]).unique())
