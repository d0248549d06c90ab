"""NCCL's INFO log as a source of collectives: COLL lines give each communicator's opCount (no
times), Init lines tie a communicator (commId) to the ranks in it. The home of NCCL's
per-communicator opCount alignment."""

from __future__ import annotations

import polars as pl

from tracekit.schema import SEQ_FROM_OPCOUNT
from tracekit.store import Store

NAME = "nccl"
TIMED = False  # a COLL line has no time of its own



def calls(coll: pl.LazyFrame) -> pl.LazyFrame:
    """The COLL lines as aligned collectives: numbered as torch numbers them (seq = opCount + 1) and
    sized by their element count (a COLL line has a count, not FR's shape), so that a rank that
    all_reduces 8448 floats where the others send 8449 differs at that seq."""
    return coll.with_columns(pl.col("seq") + SEQ_FROM_OPCOUNT,
                             pl.coalesce("sizes", pl.col("count").cast(pl.Utf8)).alias("sizes"))


def members(store: Store, seen: pl.DataFrame) -> pl.DataFrame:
    """(communicator, rank) from the Init lines, each process's global rank where its log names one."""
    return (store.comms.filter(pl.col("comm_id").is_not_null())
            .join(store.ranks.select("host", "pid", pl.col("rank").alias("grank")), on=["host", "pid"],
                  how="left")
            .select(pl.col("comm_id").alias("pg"),
                    pl.coalesce("grank", "rank").alias("rank")).drop_nulls().unique())


def recorded(store: Store, ranks: pl.Series) -> pl.Series:
    """The ranks with a COLL line."""
    return ranks.unique().sort()


def frontier(store: Store, entries: pl.DataFrame) -> pl.DataFrame:
    """Each (rank, communicator)'s frontier: its last opCount."""
    return entries
