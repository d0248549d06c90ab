"""nccl-tests stdout (``all_reduce_perf -b 8 -e 8G ...``): one ``bandwidth`` event per message size.

Rows read ``size count type redop root time algbw busbw #wrong`` (out-of-place, then in-place);
the op comes from the binary's name (``all_reduce_perf`` -> all_reduce) where the file names it.
Times are microseconds and bandwidths GB/s, as nccl-tests prints them.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed

ROW = (r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<dtype>\w+)\s+(?P<redop>\w+)\s+(?P<root>-?\d+)\s+"
       r"(?P<us>[\d.]+)\s+(?P<algbw>[\d.]+)\s+(?P<busbw>[\d.]+)\s+(?:\d+|N/A)\b")
BINARY = r"(?P<op>all_reduce|all_gather|reduce_scatter|broadcast|reduce|alltoall|sendrecv|gather|scatter|hypercube)_perf"
HEADER = r"^#?\s*(?:size\s+count\s+type|\(B\)\s+\(elements\)|out-of-place|Avg bus bandwidth|Out of bounds|nThread \d+ nGpus|Using devices|Rank\s+\d+ Group\s+\d+ Pid)"
OPS = {"alltoall": "all_to_all", "sendrecv": "send"}


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("nccl-tests")
    t = pl.col("text")
    df = lines.select("file", "line", "text").with_columns(
        t.str.extract(BINARY, 1).forward_fill().over("file").alias("op"))
    rows = df.filter(t.str.contains(ROW))
    if not rows.height:
        return Parsed("nccl-tests")
    g = pl.col("_g").struct
    events = rows.with_columns(t.str.extract_groups(ROW).alias("_g")).with_columns(
        pl.lit("bandwidth").alias("kind"), t.alias("message"),
        pl.col("op").fill_null("unknown").replace(OPS),
        g.field("size").cast(pl.Int64, strict=False).alias("bytes"),
        (g.field("us").cast(pl.Float64) / 1000).alias("duration_ms"),
        g.field("algbw").cast(pl.Float64).alias("algbw_gbs"),
        g.field("busbw").cast(pl.Float64).alias("busbw_gbs"),
        pl.lit("nccl-tests").alias("where"),
    ).drop("_g")
    used = df.filter(t.str.contains(ROW) | t.str.contains(HEADER) | t.str.contains(BINARY)).select("file", "line")
    return Parsed("nccl-tests", {"events": events}, used)
