"""A benchmark's own result lines (progress, issue 31): the bandwidth or throughput it prints once it has
measured it. Every tool's result tables and timed-transfer lines are read by their shape in
parsers/result_tables.py (s24), called first here; the lines below are the rank-figured ones it leaves."""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, bw_checks, nccl_tests, rank_blocks, result_tables, test_reports
from tracekit.schema import EventKind

# Written from the code that prints them: DeepEP's tests (tests/test_low_latency.py: ``[rank 3] Dispatch
# bandwidth: 24.67 GB/s, avg_t=304.43 us | Combine bandwidth: 24.72 GB/s, avg_t=588.12 us``, ``[rank 0]
# Dispatch + combine bandwidth: 24.53 GB/s, avg_t=898.66 us, ...``; tests/test_intranode.py: ``[tuning] Best
# dispatch (FP8): SMs 24, NVL chunk 8, 152.31 GB/s (NVL), t: ...``), Mooncake's transfer_engine_bench
# (mooncake-transfer-engine/example/transfer_engine_bench.cpp: ``Test completed: duration 10.01, batch count
# 4895, throughput 0.26``, newer builds with ``GB/s`` after it), NVSHMEM's and UCX's perf tests, p2p and
# all-to-all scripts (``all_to_all bandwidth: 42.1 GB/s``). One ``bandwidth`` event per line, ``where=
# "benchmark"``, its first figure in GB/s in ``busbw_gbs`` (Gb/s and MB/s converted; a figure with no unit,
# Mooncake's older line, left in the message only), the rank a ``[rank N]`` in front names. Not a result: a
# line with an error word (a bench that reports a failure), NCCL's own lines (``bw 40.0/40.0`` of its
# topology search) and the tables parsers/nccl_tests.py reads (a file of result lines is of a kind of its
# own in the files table, ``benchmark``: no nccl-tests output).

RESULT_NUM = r"\d+(?:\.\d+)?"
#: (s34) a transfer's speed a script names so (a torchrun all-reduce test's ``param all-reduce speed: 2.42 GB/s``,
#: samples/wild dv38-007): a collective's or a transfer's speed, not a link's (``Speed: 100000Mb/s`` of ethtool)
SPEED = r"(?:all[-_ ]?reduce|all[-_ ]?gather|reduce[-_ ]?scatter|broadcast|all[-_ ]?to[-_ ]?all|transfer|copy|p2p|send|recv)\s+speed"
#: a figure named a bandwidth or a throughput, a unit of bytes (or bits) per second after it (s34: a word or
#: two between, ``communication bandwidth (estimated): 38.77 Gb/s``)
RESULT = (rf"(?i)\b(?:bandwidth|throughput|busbw|algbw|bw|{SPEED})\b[^\d|]{{0,16}}?({RESULT_NUM})\s*"
          r"(GB/s|GiB/s|GBps|Gb/s|Gbps|Gbit/s|MB/s|MiB/s|MBps)(?:[^\w/]|$)"
          rf"|(?i)\b({RESULT_NUM})\s*(GB/s|GiB/s|GBps|Gb/s|Gbps|Gbit/s)\s*"
          r"\((?:NVL|RDMA|IB|NET|PCIe|NVLink)\)")
#: a benchmark's end line with its throughput and no unit (Mooncake's transfer_engine_bench before it
#: printed one: GB/s, its calculateRate)
ENDED = (rf"(?i)^.{{0,80}}?\b(?:test|benchmark|bench) (?:completed|finished|done)\b.*\bthroughput:? "
         rf"({RESULT_NUM})\s*$")
#: not a result: an error word, NCCL's own lines
NOT_RESULT = r"(?i)\b(?:error|fail\w*|timed? ?out|exception|abort\w*|refused)\b|\bNCCL (?:INFO|WARN)\b"
#: the rank a line names in front (DeepEP's ``[rank 3]``, ``Rank 3:``)
RESULT_RANK = r"(?i)^\W{0,3}rank\s*[:=#]?\s*(\d+)\b"
#: GB/s in each unit
TO_GBS = {"gb/s": 1.0, "gib/s": 2**30 / 1e9, "gbps": 1.0, "mb/s": 1e-3, "mib/s": 2**20 / 1e9, "mbps": 1e-3}


def _per_gbs(u: pl.Expr) -> pl.Expr:
    """The factor to GB/s: ``Gb/s`` and ``Gbps`` are bits (lower-case b), ``GB/s`` and ``GBps`` bytes."""
    bits = u.str.contains(r"^Gb/s$|^Gbps$|^Gbit/s$")
    return (pl.when(bits).then(pl.lit(1 / 8))
            .otherwise(u.str.to_lowercase().replace_strict(TO_GBS, default=None, return_dtype=pl.Float64)))


def results(df: pl.DataFrame) -> pl.DataFrame | None:
    """The result lines of ``df`` (``file``, ``line``, ``text``) as ``bandwidth`` events, else None."""
    t = pl.col("text")
    got = df.filter((t.str.contains(RESULT) | t.str.contains(ENDED)) & ~t.str.contains(NOT_RESULT))
    if not got.height:
        return None
    v = pl.coalesce(t.str.extract(RESULT, 1), t.str.extract(RESULT, 3)).cast(pl.Float64, strict=False)
    unit = pl.coalesce(t.str.extract(RESULT, 2), t.str.extract(RESULT, 4))
    return got.select("file", "line", pl.lit(EventKind.BANDWIDTH).alias("kind"),
                      t.str.strip_chars().alias("message"), pl.lit("benchmark").alias("where"),
                      pl.coalesce(*(c for c in ("rank_tag", "mpi_rank", "launch_rank") if c in df.columns),
                                  t.str.extract(RESULT_RANK, 1).cast(pl.Int64, strict=False)).alias("rank"),
                      (v * _per_gbs(unit)).alias("busbw_gbs"))


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("benchmark")
    t = pl.col("text")
    tag = [c for c in ("rank_tag", "mpi_rank", "launch_rank") if c in lines.columns]
    # (s19) tests and benchmarks that report their own result: parsers/test_reports.py
    reported, known = test_reports.events(lines.select("file", "line", "text", *tag))
    # (s31) a bandwidth check's own tally against its threshold (parsers/bw_checks.py): its verdict, claimed
    if (checked := bw_checks.events(lines.select("file", "line", "text"))) is not None:
        reported = pl.concat([f for f in (reported, checked) if f is not None], how="diagonal_relaxed")
        known = pl.concat([known, checked.select("file", "line")]).unique()
    # (s24) every tool's result tables and result lines by their shape: parsers/result_tables.py; the
    # tables test_reports reads too are read here once (its rows dropped where these claim the line)
    # (s31) a figure under a rank's own line (``3:``, `` busbw: 84.7480  Gbps``): that rank's (parsers/rank_blocks.py)
    blocks = lines.select("file", "line", "text", *tag).sort("file", "line")
    blocks = blocks.with_columns(rank_blocks.block_rank(blocks).alias("block_rank"))
    shaped = result_tables.read(blocks)
    known = pl.concat([known, rank_blocks.claimed(blocks)]).unique()
    # (the ranks those lines name, seen: each printed its own result)
    ranked = blocks.filter(pl.col("block_rank").is_not_null()).select(
        "file", pl.col("block_rank").alias("rank"), pl.lit("benchmark").alias("source")).unique(maintain_order=True)
    tables = {"ranks": ranked} if ranked.height else {}
    if shaped is not None:
        # (the lines nccl-tests' tables or the all-reduce benchmark claim stay theirs)
        theirs = nccl_tests.parse(lines.join(shaped.select("file").unique(), on="file", how="semi")).claimed
        shaped = shaped.join(theirs, on=["file", "line"], how="anti")
        if reported is not None:
            reported = reported.join(shaped.select("file", "line"), on=["file", "line"], how="anti")
        known = pl.concat([known, shaped.select("file", "line")]).unique()
        shaped = shaped.filter(pl.col("kind").is_not_null()).with_columns(pl.col("kind").cast(pl.Utf8))
        reported = pl.concat([f for f in (reported, shaped if shaped.height else None) if f is not None],
                             how="diagonal_relaxed") if (reported is not None or shaped.height) else None
    maybe = lines.filter(t.str.contains(RESULT) | t.str.contains(ENDED)).join(known, on=["file", "line"],
                                                                             how="anti")
    if not maybe.height:  # (most logs: no result line, and nccl-tests' tables are not read twice)
        return Parsed("benchmark", {"events": reported, **tables} if reported is not None else tables, known)
    # (the lines nccl-tests' tables or the all-reduce benchmark claim stay theirs)
    theirs = nccl_tests.parse(lines.join(maybe.select("file").unique(), on="file", how="semi")).claimed
    found = results(maybe.select("file", "line", "text", *tag).join(theirs, on=["file", "line"], how="anti"))
    found = pl.concat([f for f in (found, reported) if f is not None], how="diagonal_relaxed") if (
        found is not None or reported is not None) else None
    if found is None:
        return Parsed("benchmark", tables, known)
    return Parsed("benchmark", {"events": found, **tables}, pl.concat([found.select("file", "line"), known]).unique())
