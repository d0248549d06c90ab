"""A bandwidth check's own count of what passed and failed against the threshold it states (session 31).

A cluster's health check that runs NCCL's tests node by node or pair by pair ends with its own tally against a
threshold it prints: OCI's ncclscout (oci-hpc healthchecks, dev dv30-024) ``├── Good nodes (≥ 440.0 GB/s): 3``
and ``└── Bad nodes (< 440.0 GB/s or failed): 0``. Each such line is one ``bandwidth`` event
``where="bandwidth_check"``: ``busbw_gbs`` the threshold in GB/s, ``numel`` the count, ``op`` the side of it the
count is on (``at``: at or above it, ``under``: under it or failed). The line is the check's own verdict, not a
failure: claimed here, it is no telling line (parsers/salient.py reads ``failed`` in it otherwise).
"""

from __future__ import annotations

import polars as pl

from tracekit.schema import EventKind

#: the tally's line: a side's word (good, bad, passed, failed...), what it counts, the threshold in brackets with
#: its comparison and unit, a colon and the count
CHECK = (r"(?i)^[\W_]*(?P<what>good|healthy|pass(?:ed)?|ok|bad|unhealthy|fail(?:ed)?|slow)\b[\w\s]{0,20}?"
         r"\(\s*(?P<cmp>≥|>=|>|<=|<|under|below|above|at least)\s*(?P<v>\d+(?:\.\d+)?)\s*"
         r"(?P<u>GB/s|GBps|Gb/s|Gbps)[^)]{0,30}\)\s*:\s*(?P<n>\d+)\s*$")
#: the words and comparisons of the side under the threshold
UNDER = r"(?i)^(?:bad|unhealthy|fail(?:ed)?|slow|<=|<|under|below)$"


def events(lines: pl.DataFrame) -> pl.DataFrame | None:
    """The tally lines of ``lines`` (``file``, ``line``, ``text``) as events, else None."""
    t = pl.col("text")
    got = lines.filter(t.str.contains(CHECK))
    if not got.height:
        return None
    g = t.str.extract_groups(CHECK).struct
    bits = g.field("u").str.contains(r"^Gb/s$|^Gbps$")
    under = g.field("what").str.contains(UNDER) | g.field("cmp").str.contains(UNDER)
    return got.select("file", "line", pl.lit(EventKind.BANDWIDTH).alias("kind"), t.str.strip_chars().alias("message"),
                      pl.lit("bandwidth_check").alias("where"),
                      pl.when(under).then(pl.lit("under")).otherwise(pl.lit("at")).alias("op"),
                      g.field("n").cast(pl.Int64, strict=False).alias("numel"),
                      (g.field("v").cast(pl.Float64, strict=False) / pl.when(bits).then(8.0).otherwise(1.0))
                      .alias("busbw_gbs"))
