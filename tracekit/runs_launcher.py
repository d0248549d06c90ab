"""Runs and attempts by the launcher's word (``runs.split``'s first step): torchrun's run id and restart
count, from its agent's lines (``parsers/elastic.py``: ``Rendezvous complete ... restart_count=N``)
and from its ``--log-dir`` folders (``RUNID_xxxxxxxx/attempt_N/``). An agent log that holds several
attempts (the console output of a torchrun that restarted) is cut into one part per attempt, named
``FILE\x00N`` until the attempts are made (``real`` names the file again).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

Results = list[tuple[dict, list[Parsed]]]  # ingest.parse_files: each file's row and what parsers made
#: torchrun's log folder (torch/distributed/elastic/multiprocessing/api.py):
#: ``<log_dir>/<run_id>_<8 random>/attempt_<restart count>/<local rank>/stdout.log``
LOG_DIR = re.compile(r"(?:^|/)(?P<run>[^/]+?)(?:_[a-z0-9_]{8})?/attempt_(?P<k>\d+)/")
PART = "\x00"  # a launcher log's part, ``FILE\x00N`` (N its restart count), until the attempts are made
AGENT = (EventKind.ELASTIC_LAUNCH, EventKind.ELASTIC_RENDEZVOUS, EventKind.ELASTIC_REJOIN)
AGENT_CLOCK = "torchrun agent's clock"


def _agent(results: Results) -> pl.DataFrame:
    """``file, line, kind, message`` of torchrun's agent events: its launch, rendezvous and rejoins."""
    cols = {"file": pl.Utf8, "line": pl.Int64, "kind": pl.Utf8, "message": pl.Utf8}
    frames = [pl.DataFrame(schema=cols)]
    for _, parsed in results:
        for p in parsed:
            ev = p.tables.get("events")
            if ev is not None and ev.height and "kind" in ev.columns:
                frames.append(ev.filter(pl.col("kind").cast(pl.Utf8).is_in(AGENT))
                              .select(*[(pl.col(c) if c in ev.columns else pl.lit(None)).cast(t).alias(c)
                                        for c, t in cols.items()]))
    return pl.concat(frames).sort("file", "line")


def launcher_word(results: Results) -> tuple[dict[str, tuple[str | None, int]], pl.DataFrame]:
    """Each file's attempt (run id, restart count) where the launcher says: its agent's log names one
    restart count, or the file sits in torchrun's ``attempt_N/`` folder; and the parts ``file, lo, hi,
    id`` of agent logs that hold several attempts, each cut at the ``Rendezvous'ing worker group``
    line that starts it (the lines before the first rendezvous go to the first)."""
    from tracekit.parsers.elastic import fields

    said: dict[str, tuple[str | None, int]] = {}
    parts = []
    for (file,), ev in _agent(results).group_by("file"):
        launch = ev.filter(pl.col("kind") == EventKind.ELASTIC_LAUNCH)["message"].to_list()
        run_id = fields(launch[0]).get("run_id") if launch else None
        rdzv = [(line, int(k)) for line, m in ev.filter(pl.col("kind") == EventKind.ELASTIC_RENDEZVOUS)
                .select("line", "message").iter_rows() if (k := fields(m).get("restart_count", "")).isdigit()]
        rejoins = ev.filter(pl.col("kind") == EventKind.ELASTIC_REJOIN)["line"].to_list()
        if len({k for _, k in rdzv}) == 1:
            said[file] = (run_id, rdzv[0][1])
        elif len(rdzv) > 1:
            starts = [1] + [max((r for r in rejoins if before < r < line), default=line)
                            for (before, _), (line, _) in zip(rdzv, rdzv[1:])]
            ends = [s - 1 for s in starts[1:]] + [None]
            parts += [(file, lo, hi, f"{file}{PART}{k}", run_id, k)
                      for lo, hi, (_, k) in zip(starts, ends, rdzv)]
    for row, _ in results:
        if row["file"] not in said and (m := LOG_DIR.search(row["file"])):
            said[row["file"]] = (m["run"], int(m["k"]))
    cut = pl.DataFrame([p[:4] for p in parts], schema={"file": pl.Utf8, "lo": pl.Int64, "hi": pl.Int64,
                                                      "id": pl.Utf8}, orient="row")
    return said | {p[3]: (p[4], p[5]) for p in parts}, cut


def cut_parts(results: Results, parts: pl.DataFrame) -> Results:
    """``results`` with each agent log that holds several attempts cut into its parts (named
    ``FILE\x00N``): rows with a line go to the part that holds it, rows without one to every part."""
    if not parts.height:
        return results

    def cut(df: pl.DataFrame | None) -> pl.DataFrame | None:
        if df is None or not df.height or "file" not in df.columns:
            return df
        j = df.with_columns(pl.col("file").cast(pl.Utf8).alias("_f")).join(
            parts.rename({"file": "_f"}), on="_f", how="left")
        if "line" in df.columns:
            line = pl.col("line")
            inside = (line >= pl.col("lo")) & (pl.col("hi").is_null() | (line <= pl.col("hi")))
            j = j.filter(pl.col("id").is_null() | pl.col("line").is_null() | inside)
        return j.with_columns(pl.coalesce("id", "_f").cast(df.schema["file"]).alias("file")).drop(
            "_f", "lo", "hi", "id")

    ids = {f: g["id"].to_list() for (f,), g in parts.group_by("file")}
    out: Results = []
    for row, parsed in results:
        parsed = [Parsed(p.kind, {n: cut(df) for n, df in p.tables.items()}, cut(p.claimed)) for p in parsed]
        names = ids.get(row["file"], [row["file"]])
        out += [(row | {"file": names[0]}, parsed)] + [(row | {"file": n}, []) for n in names[1:]]
    return out


def agent_spans(results: Results) -> dict[str, tuple[int, int]]:
    """Per file (or part of an agent log): ns of its first and last torchrun agent line, read from
    glog's ``MMDD HH:MM:SS.ffffff`` in the year of the file's time."""
    frames = [pl.DataFrame(schema={"file": pl.Utf8, "ts": pl.Utf8})]
    for _, parsed in results:
        for p in parsed:
            ev = p.tables.get("events")
            if ev is not None and ev.height and "ts" in ev.columns and "where" in ev.columns:
                frames.append(ev.filter(pl.col("where") == "torchrun agent").select(
                    pl.col("file").cast(pl.Utf8), pl.col("ts").cast(pl.Utf8)).drop_nulls())
    spans = {}
    for (file,), g in pl.concat(frames).group_by("file"):
        path = Path(real(file))
        year = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).year if path.is_file() else 1970
        when = (pl.lit(str(year)) + pl.col("ts")).str.strptime(pl.Datetime("ns"), "%Y%m%d %H:%M:%S%.f",
                                                                strict=False)
        t = g.select(when.cast(pl.Int64).alias("t"))["t"].drop_nulls()
        if t.len():
            spans[file] = (int(t.min()), int(t.max()))
    return spans


def real(name: str) -> str:
    """The file a part of an agent log is of."""
    return name.split(PART, 1)[0]
