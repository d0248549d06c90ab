"""Text logs as one polars frame of lines, launcher prefixes taken off.

Every text parser works on the frame this module builds: ``file``, ``line`` (1-based, as an
editor counts), ``raw`` and ``text`` (the line without its launcher prefix, after the last
carriage return so a tqdm bar does not hide the message behind it), plus the rank or host a
launcher prefix names. The regex work runs in polars (Rust), never in a Python loop per line.
"""

from __future__ import annotations

import polars as pl

# Launcher prefixes (FORMATS.md): pdsh `host: `, torchrun `[rank3]:` / `[default3]:`,
# MPI `[1,3]<stdout>:`, Ray `(RayTrainWorker pid=615, ip=10.0.0.6) `, `trainer/0 [0]:`,
# `[80746] `, and a leading wall-clock timestamp.
PREFIX = (
    r"^(?:(?P<pdsh_host>(?:\d{1,3}\.){3}\d{1,3}|[A-Za-z][\w\-]*\d[\w.\-]*): )?"
    r"(?:\[rank(?P<rank_tag>\d+)\]:\s?|\[default(?P<local_tag>\d+)\]:\s?"
    r"|\[\d+,(?P<mpi_rank>\d+)\]<std(?:out|err)>:|\(\w+ pid=\d+(?:, ip=[\d.]+)?\) "
    r"|\w+/\d+ \[\d+\]:\s?|\[\d{3,}\] )?"
)
MAYBE_PREFIX = r"^(?:[\w.\-]+: |\[|\(|\w+/\d+ \[|\d{4}-\d\d-\d\d)"
TIMESTAMP = r"^\[?(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)\]?\s"


def lines_frame(file: str, text: str) -> pl.DataFrame:
    """Split ``text`` into the lines frame; one row per line, none dropped."""
    return lines_frames([raw(file, text)])


def raw(file: str, text: str | list[str], numbers=None) -> pl.DataFrame:
    """``file, line, raw``: the lines of ``text``, or the lines ``text`` already cut, numbered
    ``numbers`` (1-based; default 1, 2, ...)."""
    parts = text.split("\n") if isinstance(text, str) else text
    if isinstance(text, str) and parts and parts[-1] == "":
        parts.pop()
    df = pl.DataFrame({"raw": pl.Series("raw", parts, dtype=pl.Utf8)})
    df = df.with_row_index("line", offset=1) if numbers is None else df.with_columns(
        pl.Series("line", numbers, dtype=pl.Int64))
    return df.select(pl.col("line").cast(pl.Int64), "raw", pl.lit(file).alias("file"))


def lines_frames(raws: list[pl.DataFrame]) -> pl.DataFrame:
    """The lines of many files (frames of ``raw``) as one frame, so every regex runs once over all of them."""
    df = pl.concat(raws) if raws else raw("", "")
    cr = pl.col("raw").str.contains("\r", literal=True)
    # CRLF ends a line; any other carriage return (a tqdm bar) hides what came before it
    last = pl.col("raw").str.strip_suffix("\r").str.replace(r"^.*\r", "")
    df = df.with_columns(pl.when(cr).then(last).otherwise(pl.col("raw")).alias("text"))
    # Capture groups are slow: run them only on lines that can carry a prefix or a timestamp.
    maybe = pl.col("text").str.contains(MAYBE_PREFIX)
    tagged = df.filter(maybe).with_columns(pl.col("text").str.extract_groups(PREFIX).alias("_p")).unnest("_p")
    tagged = tagged.with_columns(pl.col("text").str.replace(PREFIX, "").alias("text"))
    tagged = tagged.with_columns(pl.col("text").str.extract(TIMESTAMP, 1).alias("ts"))
    df = pl.concat([df.filter(~maybe), tagged], how="diagonal").sort("file", "line", maintain_order=True) if tagged.height else df.with_columns(
        *[pl.lit(None, pl.Utf8).alias(c) for c in ("pdsh_host", "rank_tag", "local_tag", "mpi_rank", "ts")])
    return df.with_columns(
        pl.col("line").cast(pl.Int64),
        pl.col("rank_tag").cast(pl.Int64, strict=False),
        pl.col("local_tag").cast(pl.Int64, strict=False),
        pl.col("mpi_rank").cast(pl.Int64, strict=False),
        (pl.col("text").str.strip_chars() == "").alias("blank"),
    )


def claimed(df: pl.DataFrame, mask: pl.Expr) -> pl.DataFrame:
    """Lines a parser has understood, as ``(file, line)`` rows, for accounting."""
    return df.filter(mask).select("file", "line")
