"""Which global rank each NCCL process is, from what NCCL's lines say (``nccl.parse`` decodes them)."""

from __future__ import annotations

import polars as pl


def process_ranks(init: pl.DataFrame, nnodes: pl.DataFrame, rank_nranks: pl.DataFrame, conn: pl.DataFrame,
                   trees: pl.DataFrame, proxy: pl.DataFrame) -> pl.DataFrame:
    """Which global rank each process is: ``host, pid, dev, rank, world_size, cuda_dev``.

    A process's rank is the one it holds in its largest communicator (the world; a sub-group's rank
    is never larger than the global one, and NCCL's own line says how large each is); where no line
    gives a communicator's size, the largest rank its channel and tree lines show (a connection line
    is written by the rank that sends, a ``[receive]`` one by the rank that receives; a tree line
    ``a/b/c->R->p`` by R, a proxy thread's ``[Proxy Service R]`` for R). A process that drives several GPUs (nccl-tests ``-g 4``, one thread per GPU,
    TF/Horovod) holds one rank per device: its rows name ``dev`` and are matched on it; ``dev`` is
    null for a process of one rank."""
    i64 = pl.Int64
    parts = [
        init.select("host", "pid", pl.col("cuda_dev").cast(i64, strict=False).alias("dev"), "rank", "nranks", "line"),
        nnodes.select("host", "pid", "dev", "rank", "nranks", "line"),
        rank_nranks.select("host", "pid", "dev", "rank", "nranks", "line"),
        conn.select("host", "pid", "dev", pl.when(pl.col("direction") == "receive").then("dst").otherwise("src").alias("rank"),
                    "nranks", "line"),
        trees.select("host", "pid", "dev", pl.col("value").str.extract(r"->(\d+)->", 1).alias("rank"),
                     pl.lit(None, pl.Utf8).alias("nranks"), "line"),
        proxy.select("host", "pid", "dev", "rank", pl.lit(None, pl.Utf8).alias("nranks"), "line"),
    ]
    claims = pl.concat([p.with_columns(pl.col("dev", "rank", "nranks").cast(i64, strict=False)) for p in parts if p.height],
                       how="vertical_relaxed") if any(p.height for p in parts) else None
    if claims is None or not claims.height:
        return pl.DataFrame(schema={"host": pl.Utf8, "pid": i64, "dev": i64, "rank": i64, "world_size": i64, "cuda_dev": i64})
    claims = claims.filter(pl.col("rank").is_not_null())
    top = pl.col("nranks").max().over("host", "pid")
    claims = claims.filter(top.is_null() | (pl.col("nranks") == top))
    per_dev = claims.sort("line").group_by("host", "pid", "dev", maintain_order=True).agg(
        pl.coalesce(pl.col("rank").filter(pl.col("nranks").is_not_null()).first(), pl.col("rank").max()).alias("rank"),
        pl.col("nranks").max().alias("world_size"))
    several = per_dev.group_by("host", "pid").agg((pl.col("rank").n_unique() > 1).alias("_multi"))
    per_dev = per_dev.join(several, on=["host", "pid"])
    single = (per_dev.filter(~pl.col("_multi")).group_by("host", "pid", maintain_order=True)
              .agg(pl.col("rank").first(), pl.col("world_size").max(), pl.col("dev").first().alias("cuda_dev"))
              .with_columns(pl.lit(None, i64).alias("dev")))
    multi = per_dev.filter(pl.col("_multi")).with_columns(pl.col("dev").alias("cuda_dev")).drop("_multi")
    return pl.concat([single.select(multi.columns), multi])


def join_rank(frame: pl.DataFrame, proc_rank: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (host, pid, dev) with the rank of the process, or of its device where it drives several."""
    one = proc_rank.filter(pl.col("dev").is_null()).select("host", "pid", pl.col("rank").alias("_r1"))
    per_dev = proc_rank.filter(pl.col("dev").is_not_null()).select("host", "pid", "dev", pl.col("rank").alias("_r2"))
    out = frame.join(one, on=["host", "pid"], how="left", maintain_order="left")
    if per_dev.height:
        out = out.join(per_dev, on=["host", "pid", "dev"], how="left", maintain_order="left")
    else:
        out = out.with_columns(pl.lit(None, pl.Int64).alias("_r2"))
    return out.with_columns(pl.coalesce("_r1", "_r2").alias("rank")).drop("_r1", "_r2")
