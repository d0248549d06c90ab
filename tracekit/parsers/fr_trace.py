"""The text report of PyTorch's Flight Recorder analyzer (``torchfrtrace`` / ``fr_trace``), as users paste it.

The analyzer (torch/distributed/flight_recorder/components/utils.py, types.py) logs one block per
collective it could not match::

    Not all ranks joining collective, sequence number: 31117      (older: `collective 5 at entry 4`)
    internal record id: 31116
    group info: 0:default_pg
    collective: nccl:all_reduce
    missing ranks: {3, 4, 5, 6, 7}
    input sizes: [[1571911]] / output sizes: ... / world size: 8 / expected ranks: {0, ..., 7}
    collective state: scheduled
    error msg: Culprit rank 2; Error type: COLLECTIVE_TYPE_MISMATCH, ...     (`... has errors` blocks)
    collective stack trace:
     all_reduce at .../distributed_c10d.py:2707

A missing rank becomes a ``rank_missing`` event (rank, seq, op, pg), a culprit a ``collective_mismatch``
event; ``world size`` (or the expected ranks) is the world. No rank wrote these lines: the analyzer
did, so they name no rank of ``ranks``.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of
from tracekit.schema import EventKind

HEADER = (r"^\s*(?:Not all ranks joining collective"
          r"(?:[,:] sequence number: (?P<seq>\d+)| (?P<seq2>\d+) at entry \d+)"
          r"|Input/output mismatch in the collective sequence number: (?P<seq3>\d+)"
          r"|Collective sequence number: (?P<seq4>\d+) has errors)")
FIELD = (r"^\s*(?:internal record id|group info|collective|missing ranks|total (?:input|output) numel"
         r"|input sizes|output sizes|world size|expected ranks|collective state|error msg"
         r"|collective stack trace):")
GROUP = r"^\s*group info: (?P<pg>[^:\s]+):(?P<pg_desc>\S*)"
OP = r"^\s*collective: (?:\w+:)?(?P<op>\w+)"
# a set, or its ranks bare (`missing ranks: 0`)
MISSING = r"^\s*missing ranks: \{?(?P<ranks>\d[\d, ]*)\}?\s*$"
WORLD = r"^\s*(?:world size: (?P<n>\d+)|expected ranks: (?:(?P<count>\d+)\s*$|\{(?P<set>[\d, ]*)\}))"
CULPRIT = r"Culprit rank (?P<rank>\d+); (?P<what>Error type: [^,]+(?:, [^C][^,]*)?)"
FRAME = r"^\s*\S+ at \S+:\d+\s*$"
COMMAND = r"(?:torchfrtrace|fr_trace)\b"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("fr-trace")
    t = pl.col("text")
    df = lines.select("file", "line", "text").filter(t.str.contains(any_of(HEADER, FIELD, FRAME, COMMAND)))
    heads = df.filter(t.str.contains(HEADER))
    if not heads.height:
        return Parsed("fr-trace")
    head = t.str.extract_groups(HEADER).struct
    # every line takes the block of the header above it: its sequence number, group and collective
    df = df.with_columns(
        pl.when(t.str.contains(HEADER))
        .then(pl.coalesce(*(head.field(f) for f in ("seq", "seq2", "seq3", "seq4"))))
        .cast(pl.Int64, strict=False).alias("seq"),
        pl.when(t.str.contains(HEADER)).then(pl.col("line")).alias("_block"),
        t.str.extract(GROUP, 1).alias("pg"), t.str.extract(OP, 1).alias("op"),
    ).with_columns(pl.col("seq", "_block").forward_fill().over("file"))
    df = df.filter(pl.col("_block").is_not_null()).with_columns(
        pl.col("pg", "op").forward_fill().backward_fill().over("file", "_block"))
    missing = (df.filter(t.str.contains(MISSING))
               .with_columns(t.str.extract(MISSING, 1).str.split(",").alias("_r")).explode("_r")
               .with_columns(pl.col("_r").str.strip_chars().cast(pl.Int64, strict=False).alias("rank"))
               .filter(pl.col("rank").is_not_null())
               .with_columns(pl.lit(EventKind.RANK_MISSING).alias("kind"),
                             pl.format("rank {} never joined {} seq {} on pg {} ({})",
                                       "rank", "op", "seq", "pg", t.str.strip_chars())
                             .alias("message")))
    culprits = (df.filter(t.str.contains("Culprit rank", literal=True))
                .with_columns(t.str.extract_all(CULPRIT).alias("_c")).explode("_c")
                .with_columns(pl.col("_c").str.extract(CULPRIT, 1).cast(pl.Int64, strict=False).alias("rank"),
                              pl.lit(EventKind.COLLECTIVE_MISMATCH).alias("kind"),
                              pl.format("{} seq {} on pg {}: {}", "op", "seq", "pg", pl.col("_c"))
                              .alias("message")))
    events = pl.concat([missing, culprits], how="diagonal_relaxed").with_columns(
        pl.lit("flight recorder analyzer").alias("where")).drop("_r", "_c", "_block", "text", strict=False)
    w = t.str.extract_groups(WORLD).struct
    world = df.filter(t.str.contains(WORLD)).select(
        "file", pl.coalesce(w.field("n"), w.field("count"),
                            w.field("set").str.split(",").list.len().cast(pl.Utf8))
        .cast(pl.Int64, strict=False).alias("world_size"),
    ).drop_nulls().group_by("file").agg(pl.col("world_size").max()).with_columns(
        pl.lit("fr-trace").alias("source"))
    return Parsed("fr-trace", {"events": events, "ranks": world}, df.select("file", "line"))
