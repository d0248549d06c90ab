"""The start-up lines of runtimes no other parser decodes (``start_up_messages``, entries with
``decoded=False``: Ray's GCS client giving up on the head, HCCL's socket that no peer connected to), as
``stall`` events: a runtime's word that its start-up waited past its limit or gave up (read by
``rules_init.start_up_said``); a start-up begun (``Means.WAITING``: Paddle's ``init nccl context``;
``Means.JOINING``: WeNet's ``training on multiple gpus``) as a ``server_up`` milestone (read by ``undecided``
and ``rules_init.start_up_ends_the_log``). ``where`` is ``start-up <entry name>``.

Its ``Format`` in ``formats.TEXT`` (``start-up``) fills ``events`` and names no file's kind.
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
    read = [sm.read(text) for text in got["text"]]
    names = [f"start-up {r[0].name}" if r else None for r in read]
    # (a wait begun is a start-up milestone, ``server_up`` with its phase; a timeout or a give-up a stall)
    kinds = [EventKind.SERVER_UP if r and r[0].means in sm.BEGUN else EventKind.STALL for r in read]
    rank = pl.col("launch_rank").cast(pl.Int64, strict=False) if "launch_rank" in got.columns else pl.lit(None)
    events = got.with_columns(pl.Series("_name", names, dtype=pl.Utf8),
                              pl.Series("kind", [str(k) for k in kinds], dtype=pl.Utf8)).select(
        "file", "line", "kind", rank.cast(pl.Int64).alias("rank"), t.str.strip_chars().alias("message"),
        pl.col("_name").alias("where"))
    return Parsed("start-up", {"events": events}, got.select("file", "line"))
