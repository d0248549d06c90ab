"""A benchmark's result printed by each rank as a block: a line that names the rank alone, then the
figures one per indented line (session 31).

The all-reduce benchmark of BigScience's and stas00's early all_reduce_bench.py (the copy in
bigscience-workshop/bigscience experiments/bandwidth, read in /work/shared/corpus/bigscience) times one
``dist.all_reduce`` per trial on every rank and prints, through a lock, ``f"{id}:\\n"``, `` duration: 0.7080
sec``, `` algo throughput: 90397847806.5952 bps, 90.3978 Gbps``, `` busbw: 84.7480  Gbps`` (its rank first,
then the figures, each on its own line), after ``ignore me 447779`` (the script reads one element of the
result to wait for the collective: its own words say to ignore it). The figures' lines are result lines
(parsers/result_tables.py reads their rates); this module gives each the rank of the block it sits in, as a
``block_rank`` column, and claims the rank's line and the ``ignore me`` line, which carry no figure.

Ranks print at once: a block of one rank may begin inside another's (``3:``, `` duration: ...``, ``6:``,
`` duration: ...``, `` algo throughput: ...``); a figure is given the rank of the nearest rank line above it,
as printed, so a figure may be given its neighbour's rank; the figures of one trial are even across ranks.
"""

from __future__ import annotations

import polars as pl

#: the line that opens a rank's block: its rank alone, then a colon
RANK_HEAD = r"^\s*(\d{1,5}):\s*$"
#: a figure's line inside a block: indented, a name, a colon, a number
FIGURE_LINE = r"^\s+(?:duration|algo throughput|algbw|busbw|throughput|bandwidth|time)\s*:\s*\d"
#: the line the script prints to wait for the collective's result (``ignore me 447779``)
IGNORE_ME = r"^\s*ignore me -?\d+(?:\.\d+)?\s*$"
#: the most lines between a rank's line and a figure of its block (a block holds three figures; ranks
#: printing at once put a few lines of others between)
REACH = 8


def block_rank(lines: pl.DataFrame) -> pl.Expr:
    """The rank of the block a figure's line sits in (``RANK_HEAD`` at most ``REACH`` lines above it, in a
    file that holds figure lines), else null; an expression over ``file``, ``line``, ``text``."""
    t = pl.col("text")
    head = t.str.extract(RANK_HEAD, 1).cast(pl.Int64, strict=False)
    at = pl.when(head.is_not_null()).then(pl.col("line"))
    near = (pl.col("line") - at.forward_fill().over("file")) <= REACH
    return pl.when(t.str.contains(FIGURE_LINE) & near).then(head.forward_fill().over("file"))


def claimed(lines: pl.DataFrame) -> pl.DataFrame:
    """The rank lines and ``ignore me`` lines of files whose figures sit in rank blocks (``file``, ``line``):
    they carry no figure, and are the benchmark's own."""
    t = pl.col("text")
    ranked = lines.sort("file", "line").with_columns(block_rank(lines).alias("_b"))
    files = ranked.filter(pl.col("_b").is_not_null()).select("file").unique()
    return (lines.join(files, on="file", how="semi")
            .filter(t.str.contains(RANK_HEAD) | t.str.contains(IGNORE_ME)).select("file", "line"))
