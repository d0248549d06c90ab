"""How much of the job the evidence covers: the world size, the ranks seen, from which sources each rank is
seen, and the processes that wrote lines no source ties to a rank (read by ``tracekit.evidence``)."""

from __future__ import annotations

import polars as pl

from tracekit import align
from tracekit.identity import BY_LOCAL_RANK
from tracekit.outcome import LAUNCHER_COMMAND, LOCAL_NUMBER, Coverage, EventKind
from tracekit.store import Store

#: how coverage names the sources a rank is seen from
SOURCE_WORDS = {"fr": "Flight Recorder", "nccl": "NCCL log", "kineto": "Kineto", "kineto-gpu": "Kineto",
                "tracekit": "stdout", "deepspeed": "stdout", "log": "stdout", "stacks": "stack dump",
                "torchrun": "torchrun's error block",
                "nccl-count": "NCCL COLL lines (numbered by count, not named)",
                "nccl-tests": "nccl-tests header", "launcher": "launcher prefix",
                "local-tag": "local-rank prefix",
                "fr-trace": "torchfrtrace report",
                "nccl-ras": "NCCL RAS report", "c10d": "c10d log",
                "deepspeed-launcher": LAUNCHER_COMMAND,
                BY_LOCAL_RANK: LOCAL_NUMBER}


def coverage(store: Store) -> Coverage:
    ranks, ev = store.ranks, store.events
    # the collectives (the big table, maybe scanned from disk) once: each rank's sources, the largest group
    coll = align.collect(store.collectives.lazy().group_by("rank", "source").agg(pl.col("nranks").max()))
    sizes = [ranks["world_size"].max(), store.comms["nranks"].max(), coll["nranks"].max(),
             align.group_members(store)["members"].list.max().max()]
    world = max((int(s) + (1 if i == 3 else 0) for i, s in enumerate(sizes) if s is not None), default=None)
    src = [coll.select("rank", pl.col("source").cast(pl.Utf8)),
           # (a rank reported missing is spoken of, not seen)
           ev.filter(pl.col("kind") != EventKind.RANK_MISSING)
           .select("rank", pl.when(pl.col("kind") == EventKind.STACK).then(pl.lit("stacks"))
                   .otherwise(pl.lit("log")).alias("source")),
           ranks.select("rank", pl.col("source").str.split(",")).explode("source")]
    per = (pl.concat([s.filter(pl.col("rank").is_not_null()) for s in src], how="vertical_relaxed")
           .with_columns(pl.col("source").replace(SOURCE_WORDS))
           .unique().group_by("rank").agg(pl.col("source").sort()).sort("rank"))
    sources = {r: s for r, s in per.iter_rows()}
    # processes that wrote lines and that no source ties to a rank: counted, never given a guessed rank
    procs = [t.filter(pl.col("rank").is_null() & pl.col("pid").is_not_null())
             .select("host", pl.col("pid").cast(pl.Int64)) for t in (ev, ranks)]
    named = ranks.filter(pl.col("rank").is_not_null() & pl.col("pid").is_not_null()).select(
        "host", pl.col("pid").cast(pl.Int64))
    unranked = pl.concat(procs).unique().join(named, on=["host", "pid"], how="anti", nulls_equal=True).height
    seen = sorted(sources)
    if world is not None and seen and max(seen) >= world:
        world = None  # the sizes logged are of a subgroup: the world's is not known
    return Coverage(world, seen, sources, unranked)
