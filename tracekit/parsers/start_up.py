"""The start-up lines of runtimes no other parser decodes (``start_up_messages``, entries with
``decoded=False``: Ray's GCS client giving up on the head, HCCL's socket that no peer connected to), as
``stall`` events: a runtime's word that its start-up waited past its limit or gave up (read by
``rules_init.start_up_said``); a start-up begun (``Means.WAITING``: Paddle's ``init nccl context``;
``Means.JOINING``: WeNet's ``training on multiple gpus``) and a connect retried (s30, ``sm.RETRIES``: Paddle's
``server not ready, wait 3 sec to retry``, TCPStore's ``retrying (try=0, ...)``: start-up still under way) as a
``server_up`` milestone (read by ``undecided``
and ``rules_init.start_up_ends_the_log``). ``where`` is ``start-up <entry name>``; the rank an entry's ``rank``
group names (HCCL's ``rank[1]``) where no launcher's prefix gives one.

(s29) And a runtime's verbose trace of its set-up steps (``start_up_steps``: Open MPI's ``select: initializing btl
component openib``, mpirun's ``ACTIVATE JOB ... STATE PENDING DAEMON LAUNCH``) as ``server_up`` events whose
``where`` is ``set-up step begun <name>`` or ``set-up step returned <name>``, read by
``rules_set_up.set_up_step_unreturned``.

Its ``Format`` in ``formats.TEXT`` (``start-up``) fills ``events`` and names no file's kind.
"""

from __future__ import annotations

import polars as pl

from tracekit import start_up_messages as sm, start_up_steps as steps
from tracekit.parsers import Parsed
from tracekit.schema import EventKind


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("start-up")
    t = pl.col("text")
    got = lines.filter(t.str.contains(sm.UNDECODED))
    stepped = _steps(lines.filter(t.str.contains(steps.ANY)))
    if not got.height:
        return Parsed("start-up", {"events": stepped}, stepped.select("file", "line")) if stepped.height else (
            Parsed("start-up"))
    read = [sm.read(text) for text in got["text"]]
    names = [f"start-up {r[0].name}" if r else None for r in read]
    # (a wait begun is a start-up milestone, ``server_up`` with its phase; a timeout or a give-up a stall)
    # (s30: and a connect retried, ``sm.RETRIES``: start-up still under way, Paddle's `server not ready, wait 3 sec
    # to retry` then steps is a run that went on, not a stall)
    # (s31: and a wait that returned, ``Means.RETURNED``: a milestone past the wait)
    kinds = [EventKind.SERVER_UP if r and (r[0].means in sm.BEGUN or r[0].means in sm.RETRIES
                                           or r[0].means is sm.Means.RETURNED) else EventKind.STALL
             for r in read]
    named = [int(r[1]["rank"]) if r and r[1].get("rank") else None for r in read]
    rank = pl.col("launch_rank").cast(pl.Int64, strict=False) if "launch_rank" in got.columns else pl.lit(None)
    events = got.with_columns(pl.Series("_name", names, dtype=pl.Utf8),
                              pl.Series("_named", named, dtype=pl.Int64),
                              pl.Series("kind", [str(k) for k in kinds], dtype=pl.Utf8)).select(
        "file", "line", "kind", pl.coalesce(rank.cast(pl.Int64), pl.col("_named")).alias("rank"),
        t.str.strip_chars().alias("message"), pl.col("_name").alias("where"))
    events = pl.concat([events, stepped]) if stepped.height else events
    return Parsed("start-up", {"events": events}, events.select("file", "line").unique(maintain_order=True))


def _steps(got: pl.DataFrame) -> pl.DataFrame:
    """A runtime's set-up steps begun and returned (``start_up_steps``), as ``server_up`` events."""
    read = [steps.read(text) for text in got["text"]]
    where = [(steps.RETURNED if r[1] else steps.BEGUN) + r[0].name if r else None for r in read]
    rank = pl.col("launch_rank").cast(pl.Int64, strict=False) if "launch_rank" in got.columns else pl.lit(None)
    return got.with_columns(pl.Series("where", where, dtype=pl.Utf8)).filter(pl.col("where").is_not_null()).select(
        "file", "line", pl.lit(str(EventKind.SERVER_UP)).alias("kind"), rank.cast(pl.Int64).alias("rank"),
        pl.col("text").str.strip_chars().alias("message"), "where")
