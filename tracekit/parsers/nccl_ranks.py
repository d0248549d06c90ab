"""Which global rank each NCCL process is, from what NCCL's lines say (``nccl.parse`` decodes them), and
each communicator's rows with the global rank beside the rank inside it (``comm_table``)."""

from __future__ import annotations

import re

import polars as pl

from tracekit.parsers.nccl_shapes import NAMED_RANKS


# `ncclCommSplit comm 0x1f29eb60 rank 1 nranks 2 ... parent 0x12196970 splitCount 1 color 2130503744 key 1-
# Init START`: NCCL 2.23+ writes splitCount before color and no commId, an order INIT's optional fields miss
SPLIT = (r" parent (?P<s_parent>0x[0-9a-fA-F]+)(?: splitCount (?P<split_count>\d+))?"
         r"(?: color (?P<s_color>-?\d+))?(?: key (?P<s_key>-?\d+))?")


def launched(df: pl.DataFrame) -> pl.DataFrame:
    """``host, pid, rank``: the global rank a launcher's prefix (`[rank3]:`) puts on a process's lines."""
    if "launch_rank" not in df.columns:
        return pl.DataFrame(schema={"host": pl.Utf8, "pid": pl.Int64, "rank": pl.Int64})
    said = df.filter(pl.col("launch_rank").is_not_null() & pl.col("host").is_not_null())
    return said.group_by("host", "pid", maintain_order=True).agg(
        pl.col("launch_rank").mode().first().alias("rank"))


def named_ranks(lines: pl.DataFrame) -> pl.DataFrame:
    """``file, rank, world_size, source``: ranks NCCL's words name beside the writer's own (``NAMED_RANKS``:
    the rank at fault, two ranks on one GPU, a rank that checked in twice ``of 8 ranks``), wherever the
    line stands (an NCCL WARN, torch's ``Last error:``); no process is tied to them."""
    t = pl.col("text")
    any_ = "|".join(f"(?:{re.sub(r'[(][?]P<[a-z]+>', '(?:', p)})" for p in NAMED_RANKS)  # (names clash)
    hit = lines.filter(t.str.contains(any_)) if lines.height else lines
    out = []
    for p in NAMED_RANKS if hit.height else ():
        g = t.str.extract_groups(p).struct
        size = g.field("nranks") if "(?P<nranks>" in p else pl.lit(None, pl.Utf8)
        out += [hit.select("file", g.field(k).cast(pl.Int64, strict=False).alias("rank"),
                           size.cast(pl.Int64, strict=False).alias("world_size"))
            for k in "ab" if f"(?P<{k}>" in p]
    if not out:
        return pl.DataFrame(schema={"file": pl.Utf8, "rank": pl.Int64, "world_size": pl.Int64,
                                    "source": pl.Utf8})
    return (pl.concat(out).filter(pl.col("rank").is_not_null()).unique(["file", "rank"], maintain_order=True)
            .with_columns(pl.lit("nccl").alias("source")))


def process_ranks(init: pl.DataFrame, nnodes: pl.DataFrame, rank_nranks: pl.DataFrame, conn: pl.DataFrame,
                   trees: pl.DataFrame, proxy: pl.DataFrame, by_launcher: pl.DataFrame | None = None,
                   comm_rank: pl.DataFrame | None = None) -> pl.DataFrame:
    """Which global rank each process is: ``host, pid, dev, rank, world_size, cuda_dev``.

    A process's rank is the one it holds in its largest communicator (the world; a sub-group's rank
    is never larger than the global one, and NCCL's own line says how large each is); where no line
    gives a communicator's size, the largest rank its channel and tree lines show (a connection line
    is written by the rank that sends, a ``[receive]`` one by the rank that receives; a tree line
    ``a/b/c->R->p`` by R, a proxy thread's ``[Proxy Service R]`` for R, a line that names ``comm 0x.. rank R``
    and no size for R). (A ring's order ``Channel 00/02 : 0 1`` is written by rank 0 alone, graph/rings.cc
    ``if (rank == 0) dumpLine``, but names no rank on its line: it gives only the size, in ``nccl.parse``.)
    A process that drives several GPUs (nccl-tests ``-g 4``, one thread per GPU,
    TF/Horovod) holds one rank per device: its rows name ``dev`` and are matched on it; ``dev`` is
    null for a process of one rank. A launcher's prefix (``by_launcher``, from ``launched``) names a
    process of one rank outright: a job whose world communicator never started (NCCL inits lazily) shows
    only a sub-group's ranks, which are not global."""
    empty = pl.DataFrame(schema={"host": pl.Utf8, "pid": pl.Int64, "dev": pl.Int64, "rank": pl.Utf8,
                                 "line": pl.Int64})
    out = _from_comms(init, nnodes, rank_nranks, conn, trees, proxy,
                      empty if comm_rank is None else comm_rank)
    if by_launcher is None or not by_launcher.height:
        return out
    told = by_launcher.select("host", pl.col("pid").cast(pl.Int64), pl.col("rank").alias("_told"))
    several = out.filter(pl.col("dev").is_not_null()).select("host", "pid").unique()  # a rank per GPU: kept
    told = told.join(several, on=["host", "pid"], how="anti")
    one = out.filter(pl.col("dev").is_null()).join(told, on=["host", "pid"], how="full", coalesce=True)
    one = one.with_columns(pl.coalesce("_told", "rank").alias("rank")).drop("_told")
    return pl.concat([one.select(out.columns), out.filter(pl.col("dev").is_not_null())])


def _from_comms(init, nnodes, rank_nranks, conn, trees, proxy, comm_rank) -> pl.DataFrame:
    i64 = pl.Int64
    parts = [
        init.select("host", "pid", pl.col("cuda_dev").cast(i64, strict=False).alias("dev"), "rank", "nranks",
                    "line", (pl.col("parent").is_not_null() if "parent" in init.columns else pl.lit(False))
                    .alias("_split")),
        nnodes.select("host", "pid", "dev", "rank", "nranks", "line"),
        rank_nranks.select("host", "pid", "dev", "rank", "nranks", "line"),
        conn.select("host", "pid", "dev",
                    pl.when(pl.col("direction") == "receive").then("dst").otherwise("src").alias("rank"),
                    "nranks", "line"),
        trees.select("host", "pid", "dev", pl.col("value").str.extract(r"->(\d+)->", 1).alias("rank"),
                     pl.lit(None, pl.Utf8).alias("nranks"), "line"),
        proxy.select("host", "pid", "dev", "rank", pl.lit(None, pl.Utf8).alias("nranks"), "line"),
        comm_rank.select("host", "pid", "dev", "rank", pl.lit(None, pl.Utf8).alias("nranks"), "line")
        if comm_rank.height else comm_rank,
    ]
    parts = [p if "_split" in p.columns else p.with_columns(pl.lit(False).alias("_split")) for p in parts]
    claims = pl.concat([p.with_columns(pl.col("dev", "rank", "nranks").cast(i64, strict=False))
                        for p in parts if p.height],
                       how="vertical_relaxed") if any(p.height for p in parts) else None
    if claims is None or not claims.height:
        return pl.DataFrame(schema={"host": pl.Utf8, "pid": i64, "dev": i64, "rank": i64, "world_size": i64,
                                    "cuda_dev": i64})
    claims = claims.filter(pl.col("rank").is_not_null())
    top = pl.col("nranks").max().over("host", "pid")
    claims = claims.filter(top.is_null() | (pl.col("nranks") == top))
    # a process whose largest communicator is one ncclCommSplit made (`ncclCommSplit comm .. rank 1 nranks 2 ..
    # parent 0x..`, a sub-group of its parent: DeepSpeed's TP group, Megatron's) shows a group-local rank only,
    # no global one (dv13-064's TP pair: its label counts none)
    split_only = ((pl.col("_split") | pl.col("nranks").is_null()).all() & pl.col("_split").any()).over("host", "pid")
    claims = claims.filter(~split_only)
    per_dev = claims.sort("line").group_by("host", "pid", "dev", maintain_order=True).agg(
        pl.coalesce(pl.col("rank").filter(pl.col("nranks").is_not_null()).first(),
                    pl.col("rank").max()).alias("rank"),
        pl.col("nranks").max().alias("world_size"))
    several = per_dev.group_by("host", "pid").agg((pl.col("rank").n_unique() > 1).alias("_multi"))
    per_dev = per_dev.join(several, on=["host", "pid"])
    single = (per_dev.filter(~pl.col("_multi")).group_by("host", "pid", maintain_order=True)
              .agg(pl.col("rank").first(), pl.col("world_size").max(),
                   pl.col("dev").first().alias("cuda_dev"))
              .with_columns(pl.lit(None, i64).alias("dev")))
    multi = per_dev.filter(pl.col("_multi")).with_columns(pl.col("dev").alias("cuda_dev")).drop("_multi")
    return pl.concat([single.select(multi.columns), multi])


def local_numbering(proc_rank: pl.DataFrame, files: pl.DataFrame, launcher: pl.DataFrame) -> pl.DataFrame:
    """``proc_rank`` less the ranks of another numbering: where a file's launcher prefixes name global ranks
    (``launcher``: ``file, rank``) and the ranks NCCL gives its processes there without any communicator's
    size (a connection's, a tree's, a proxy's: ``world_size`` null) share none of them, those are a
    sub-communicator's (``[rank18]:`` beside ``Channel 00/1 : 1[2] -> 0[2]``) and are no global rank.
    ``files``: ``file, host, pid`` of the processes NCCL's lines show."""
    if not launcher.height or not proc_rank.height:
        return proc_rank
    sizeless = proc_rank.filter(pl.col("world_size").is_null() & pl.col("rank").is_not_null())
    per = files.join(sizeless.select("host", "pid", "rank"), on=["host", "pid"]).group_by("file").agg(
        pl.col("rank").unique().alias("_nccl"))
    told = launcher.group_by("file").agg(pl.col("rank").unique().alias("_told"))
    apart = per.join(told, on="file").filter(pl.col("_nccl").list.set_intersection("_told").list.len() == 0)
    if not apart.height:
        return proc_rank
    local = files.join(apart.select("file"), on="file").select("host", "pid").unique()
    drop = pl.struct("host", "pid").is_in(local.to_struct().implode()) & pl.col("world_size").is_null()
    return proc_rank.with_columns(pl.when(drop).then(None).otherwise(pl.col("rank")).alias("rank"))


def counted(streams: pl.DataFrame, proc_rank: pl.DataFrame) -> pl.DataFrame:
    """Ranks for the processes of a file whose only word is their COLL lines (``[nranks=2]``, no init line,
    no prefix), where a file shows as many processes (one GPU each: ``host, pid, dev``) of its largest
    communicator as that communicator has ranks: where the others are named, the one left holds the rank
    left (sure); where none is, they are its ranks 0..N-1 (the set is sure; which process holds which is
    not said, so they are numbered in the order the file shows its hosts, then by device). Rows in
    ``proc_rank``'s shape, ``_guess`` true where numbered by order. ``streams``:
    ``file, host, pid, dev, nranks`` with the line each starts at.
    Decided per file, so a store does not depend on how files were batched."""
    i64 = pl.Int64
    none = proc_rank.clear().with_columns(pl.lit(None, pl.Boolean).alias("_guess"))
    s = streams.filter(pl.col("host").is_not_null() & pl.col("nranks").is_not_null())
    if not s.height:
        return none
    s = s.filter(pl.col("nranks") == pl.col("nranks").max().over("file"))
    units = s.group_by("file", "host", "pid", "dev").agg(pl.col("line").min(), pl.col("nranks").first())
    named = proc_rank.filter(pl.col("rank").is_not_null() & pl.col("dev").is_null()).select(
        "host", pl.col("pid").cast(i64), pl.col("rank").alias("_r")).unique(["host", "pid"])
    units = units.with_columns(pl.col("pid").cast(i64)).join(named, on=["host", "pid"], how="left")
    per_file = units.group_by("file").agg(
        pl.len().alias("n"), pl.col("nranks").first().alias("size"),
        pl.col("_r").null_count().alias("unnamed"),
        pl.col("_r").drop_nulls().unique().alias("taken"))
    # (a communicator of one rank says nothing of the world: a sub-group of one is as likely)
    whole = (pl.col("n") == pl.col("size")) & (pl.col("size") > 1)
    fresh = per_file.filter(whole & (pl.col("unnamed") == pl.col("n"))).select("file")
    left = per_file.filter(whole & (pl.col("unnamed") == 1)
                           & (pl.col("taken").list.len() == pl.col("size") - 1)
                           & (pl.col("taken").list.max() < pl.col("size")))
    out = []
    if fresh.height:
        u = units.join(fresh, on="file").with_columns(pl.col("line").min().over("file", "host").alias("_h"))
        out.append(u.sort("file", "_h", "host", "dev", "pid").with_columns(
            pl.int_range(pl.len()).over("file").cast(i64).alias("rank"), pl.lit(True).alias("_guess")))
    if left.height:
        gap = left.select("file", pl.int_ranges(0, "size").list.set_difference("taken").list.first().cast(i64)
                          .alias("rank"))
        out.append(units.filter(pl.col("_r").is_null()).join(gap, on="file")
                   .with_columns(pl.lit(False).alias("_guess")))
    if not out:
        return none
    units = pl.concat([u.select("file", "host", "pid", "dev", "nranks", "rank", "_guess") for u in out])
    several = pl.col("pid").count().over("host", "pid") > 1  # a process of several GPUs: a row per GPU
    return units.select("host", "pid", pl.when(several).then(pl.col("dev")).alias("dev").cast(i64),
                        "rank", pl.col("nranks").cast(i64).alias("world_size"),
                        pl.col("dev").cast(i64).alias("cuda_dev"),
                        "_guess").select(*proc_rank.columns, "_guess")


def shared_comm(streams: pl.DataFrame, numbered: pl.DataFrame) -> pl.DataFrame:
    """``host, pid, comm, comm_id``: one process group for the communicator whose processes ``counted``
    numbered, where each of them has one stream of its size (its pointer differs in every process, and
    no init line gives its commId): ``nranks=N communicator``."""
    out = pl.DataFrame(schema={"host": pl.Utf8, "pid": pl.Int64, "comm": pl.Utf8, "comm_id": pl.Utf8})
    if not numbered.height:
        return out
    s = streams.filter(pl.col("nranks") == pl.col("nranks").max().over("file")).join(
        numbered.select("host", "pid").unique(), on=["host", "pid"], how="semi")
    if s.group_by("host", "pid", "dev").len()["len"].max() != 1:
        return out  # (two streams of that size in one process: which pairs with which is not said)
    return s.select("host", pl.col("pid").cast(pl.Int64), "comm",
                    pl.format("nranks={} communicator", "nranks").alias("comm_id")).select(out.columns)


def join_rank(frame: pl.DataFrame, proc_rank: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (host, pid, dev) with the rank of the process, or of its device where it drives several."""
    one = proc_rank.filter(pl.col("dev").is_null()).select("host", "pid", pl.col("rank").alias("_r1"))
    per_dev = proc_rank.filter(pl.col("dev").is_not_null()).select("host", "pid", "dev",
                               pl.col("rank").alias("_r2"))
    out = frame.join(one, on=["host", "pid"], how="left", maintain_order="left")
    if per_dev.height:
        out = out.join(per_dev, on=["host", "pid", "dev"], how="left", maintain_order="left")
    else:
        out = out.with_columns(pl.lit(None, pl.Int64).alias("_r2"))
    return out.with_columns(pl.coalesce("_r1", "_r2").alias("rank")).drop("_r1", "_r2")


def comm_table(init: pl.DataFrame, nnodes: pl.DataFrame, proc_rank: pl.DataFrame, cols: list[str]
               ) -> pl.DataFrame:
    """The COMMS rows: each communicator's init, destroy and topology lines, with ``rank`` the rank inside
    the communicator and ``global_rank`` the process's own; ``comm_key`` ties one communicator's rows
    across processes: its commId, or for a split that has none (NCCL 2.23+) its parent's key, split
    count and color (``<parent key>/split <n> color <c>``), the same on every member."""
    split = pl.col("msg").str.extract_groups(SPLIT).struct
    i64 = pl.Int64
    inits = init.with_columns(
        pl.col("state").str.replace(" ", "_").str.to_lowercase(),
        pl.coalesce("parent", split.field("s_parent")).alias("parent"),
        pl.coalesce(pl.col("color"), split.field("s_color")).cast(i64, strict=False).alias("color"),
        pl.coalesce(pl.col("key"), split.field("s_key")).cast(i64, strict=False).alias("key"),
        split.field("split_count").cast(i64, strict=False).alias("split_count"),
        pl.col("rank", "nranks", "cuda_dev").cast(i64, strict=False),
    ).select(*cols, "dev", "comm", "comm_id", "rank", "nranks", "cuda_dev", "bus_id", "parent", "color",
             "key", "split_count", "api", "state")
    topo = nnodes.with_columns(pl.col("rank", "nranks", "nnodes").cast(i64, strict=False),
                               pl.lit("topology").alias("state"))
    topo = topo.select(*cols, "dev", "comm", "rank", "nranks", "nnodes", "state")
    comms = pl.concat([inits, topo], how="diagonal_relaxed")
    if not comms.height:
        return comms.with_columns(pl.lit(None, i64).alias("global_rank"),
                                  pl.lit(None, pl.Utf8).alias("comm_key"))
    comms = join_rank(comms.rename({"rank": "_in_comm"}), proc_rank)
    comms = comms.rename({"rank": "global_rank", "_in_comm": "rank"})
    keys = _comm_keys(comms)
    return comms.join(keys, on=["host", "pid", "comm"], how="left", maintain_order="left").drop("dev")


def _comm_keys(comms: pl.DataFrame) -> pl.DataFrame:
    """``host, pid, comm, comm_key`` per communicator of a process (see ``comm_table``)."""
    first = [pl.col(c).drop_nulls().first() for c in ("comm_id", "parent", "split_count", "color")]
    per = comms.group_by("host", "pid", "comm", maintain_order=True).agg(*first).with_columns(
        pl.col("comm_id").alias("comm_key"))
    for _ in range(4):  # a split of a split ...: each pass resolves one more level
        parents = per.select("host", "pid", pl.col("comm").alias("parent"), pl.col("comm_key").alias("_pk"))
        per = per.join(parents, on=["host", "pid", "parent"], how="left", maintain_order="left").with_columns(
            pl.coalesce("comm_key", pl.format("{}/split {} color {}", "_pk", "split_count", "color"))
            .alias("comm_key")).drop("_pk")
    return per.select("host", "pid", "comm", "comm_key")
