"""The start-up lines of runtimes no other parser decodes (``start_up_messages``, entries with
``decoded=False``: Ray's GCS client giving up on the head, HCCL's socket that no peer connected to), as
``stall`` events: a runtime's word that its start-up waited past its limit or gave up. ``where`` is
``start-up <entry name>``; the rule that reads them is ``rules_init.start_up_said``.

Called from ``parsers/elastic.py`` (torchrun's agent, the other start-up parser), whose format fills
``events``; a ``Format`` line of its own in ``formats.TEXT`` is the place for it once the registry's owner
adds one.
"""

from __future__ import annotations

import polars as pl

from tracekit import start_up_messages as sm
from tracekit.parsers import Parsed
from tracekit.schema import EventKind


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height or not sm.UNDECODED:
        return Parsed("start-up")
    t = pl.col("text")
    got = lines.filter(t.str.contains(sm.UNDECODED))
    if not got.height:
        return Parsed("start-up")
    names = [sm.read(text) for text in got["text"]]
    rank = pl.col("launch_rank").cast(pl.Int64, strict=False) if "launch_rank" in got.columns else pl.lit(None)
    events = got.with_columns(pl.Series("_name", [f"start-up {m.name}" if m else None for m, _ in
                                                  (n or (None, None) for n in names)])).select(
        "file", "line", pl.lit(EventKind.STALL).alias("kind"), rank.cast(pl.Int64).alias("rank"),
        t.str.strip_chars().alias("message"), pl.col("_name").alias("where"))
    return Parsed("start-up", {"events": events}, got.select("file", "line"))
