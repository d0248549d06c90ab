"""What every source module and every consumer of collectives shares: running a small query over
them (streaming), and the clock offsets between hosts with their join. Apart from the package's
``__init__`` so the source modules import it without a circle."""

from __future__ import annotations

import polars as pl


def collect(lf: pl.LazyFrame) -> pl.DataFrame:
    """Run a query over the collectives whose answer is small. Streaming: a table on disk (a store
    scanned, tracekit.engines.scan) is read a piece at a time, never whole into memory."""
    return lf.collect(engine="streaming")


def clock_offsets(coll: pl.DataFrame) -> pl.DataFrame:
    """Per-host clock offset (ns) to subtract before comparing times across nodes.

    A collective cannot complete on one rank before every rank has entered it, so the ranks'
    completion (else enqueue) times of one ``(pg, seq)`` bound each other; the median, over all
    collectives two hosts share, of a host's time minus the collective's median is that host's
    offset. Hosts with nothing in common get 0.
    """
    t = coll.filter(pl.col("host").is_not_null() & pl.col("seq").is_not_null()).with_columns(
        pl.coalesce("end_ns", "start_ns").alias("_t")).filter(pl.col("_t").is_not_null())
    hosts = t["host"].unique().to_list()
    if len(hosts) < 2:
        return pl.DataFrame({"host": hosts, "offset_ns": [0] * len(hosts)},
                            schema={"host": pl.Utf8, "offset_ns": pl.Int64})
    per = t.group_by("host", "pg", "seq").agg(pl.col("_t").median())
    shared = per.with_columns(pl.col("_t").median().over("pg", "seq").alias("_m"),
                              pl.col("host").n_unique().over("pg", "seq").alias("_n")
                              ).filter(pl.col("_n") > 1)
    off = shared.group_by("host").agg(
        (pl.col("_t") - pl.col("_m")).median().cast(pl.Int64).alias("offset_ns"))
    return (pl.DataFrame({"host": hosts}).join(off, on="host", how="left")
            .with_columns(pl.col("offset_ns").fill_null(0)))


def on_one_clock(df: pl.DataFrame, times: dict[str, str],
                 reference: pl.DataFrame | None = None) -> pl.DataFrame:
    """``df`` with each column of ``times`` (``{"start_ns": "t"}``) less its host's clock offset,
    the offsets worked out from ``reference`` (``df`` itself unless given), written as the name given."""
    off = clock_offsets(df if reference is None else reference)
    return df.join(off, on="host", how="left").with_columns(
        (pl.col(c) - pl.col("offset_ns").fill_null(0)).alias(out) for c, out in times.items())
