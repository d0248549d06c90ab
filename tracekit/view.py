"""What a renderer is given: a run analysed once, so the renderers (``reports/report.py``,
``reports/timeline.py`` and the trace writers after it) read a model and never the Store.

- ``RunView``: the verdict, the coverage in words (which ranks left which kinds of file), and each
  rank's situation (``situation.situation``) with the ranks in one place as one row.
- ``CollectivesView``: the collectives a timeline draws, on one axis: the best timed source
  (Flight Recorder, else Kineto) on one clock (``sources.on_one_clock``), else the sequence number.
- ``ChartData``: what the charts draw (each rank's timed collectives, the main group, the groups by
  what they are, the waits, the dumps' newest entries, the last collective per rank and group,
  bus bandwidth), for ``reports/plots.py``.

Each is built by its ``build`` from a store and its verdict; a renderer takes the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from tracekit import figures, sources
from tracekit import situation as rank_state
from tracekit.outcome import Situation, Verdict
from tracekit.store import Store
from tracekit.wording import fmt_ranks


def coverage(store: Store, verdict: Verdict) -> list[str]:
    """Which ranks the record covers (the verdict's own coverage: who left no file), from which kinds
    of file, and the files tied to no rank."""
    files = store.files.select("file", "kind")
    tables = [store.collectives, store.events, store.comms, store.links]
    direct = pl.concat([store.ranks.select("rank", "file")] + [t.select("rank", "file") for t in tables],
                       how="vertical_relaxed")
    # a rank's own log names no rank on most lines: its host and pid tie it to the rank
    processes = pl.concat([t.select("file", "host", "pid") for t in tables], how="vertical_relaxed")
    by_pid = (processes.drop_nulls().unique()
              .join(store.ranks.select("host", "pid", "rank").drop_nulls().unique(), on=["host", "pid"])
              .select("rank", "file"))
    per = (pl.concat([direct, by_pid], how="vertical_relaxed").drop_nulls().unique()
           .join(files, on="file", how="left"))
    kinds = per.group_by("rank").agg(pl.col("kind").drop_nulls().unique().sort().str.join(", ")).sort("rank")
    out = [f"{verdict.coverage['text']}; {store.files.height} file(s) read, "
           f"{store.files['error'].is_not_null().sum()} unreadable"]
    by_kind: dict[str, list[int]] = {}
    for r, k in kinds.iter_rows():
        by_kind.setdefault(k or "no file of a known kind", []).append(r)
    out += [f"rank{'s' if len(rs) > 1 else ''} {fmt_ranks(rs)}: {k}" for k, rs in by_kind.items()]
    unattributed = store.files.join(per.select("file").unique(), on="file", how="anti")
    if unattributed.height:
        out.append(f"{unattributed.height} file(s) hold no row tied to a rank (launcher logs, a rank's log "
                   "with nothing rank-specific in it): " + ", ".join(
                       f"{k} x{n}" for k, n in unattributed.group_by("kind").len().sort("kind").iter_rows()))
    return out


def places(sit: Situation) -> pl.DataFrame:
    """Ranks with the same last collective, state and main thread as one row (a 1,024-rank hang is
    a few rows: the ranks that wait, and the ones that do not)."""
    return (rank_state.table(sit).group_by("pg", "op", "seq", "state", "where", "named", maintain_order=True)
            .agg(pl.col("rank").sort(), pl.col("t_s").min())
            .sort("named", pl.col("rank").list.first(), descending=[True, False]))


@dataclass
class RunView:
    """One run as the report shows it."""

    name: str
    path: str
    verdict: Verdict
    coverage: list[str]
    situation: Situation
    places: pl.DataFrame  # ranks, last collective, state, main thread (ranks in one place share a row)

    @classmethod
    def build(cls, store: Store, verdict: Verdict, name: str = "", path: str = "") -> RunView:
        sit = rank_state.situation(store, verdict)
        return cls(name, path, verdict, coverage(store, verdict), sit, places(sit))


@dataclass
class CollectivesView:
    """The collectives a timeline draws, one row per (rank, process group, sequence number, start):
    ``start_ns`` and ``end_ns`` on one clock where ``axis`` is "time"; where it is "sequence" (no
    timed source: NCCL COLL lines only), ``start_ns`` is the sequence number in milliseconds and
    ``end_ns`` is null. ``hosts``: each rank's host."""

    collectives: pl.DataFrame
    axis: str
    hosts: dict[int, str] = field(default_factory=dict)

    @classmethod
    def build(cls, store: Store) -> CollectivesView:
        coll = store.collectives.filter(pl.col("rank").is_not_null())
        sub, source = sources.best(coll, sources.TIMED, pl.col("start_ns").is_not_null())
        if source:
            coll, axis = sources.on_one_clock(sub, {"start_ns": "start_ns", "end_ns": "end_ns"}), "time"
        else:
            by_seq = ((pl.col("seq") * 1_000_000).alias("start_ns"), pl.lit(None, pl.Int64).alias("end_ns"))
            coll, axis = coll.filter(pl.col("seq").is_not_null()).with_columns(*by_seq), "sequence"
        coll = (coll.unique(["rank", "pg", "seq", "start_ns"], maintain_order=True)
                .sort("rank", "pg", "start_ns"))
        hosts = dict(store.ranks.select("rank", "host").drop_nulls("rank").unique("rank").iter_rows())
        return cls(coll, axis, hosts)


@dataclass
class ChartData:
    """What the charts of ``reports/plots.py`` draw, worked out from the store once.

    ``timed``/``source``: each rank's collectives of the best timed source, ``t`` on one clock
    (``situation.timed``); ``main_pg``: the verdict's group, else the busiest; ``labels``: each group
    by what it is; ``ranks``: the situation table; ``waits``: how long a rank is known to have waited
    in its last collective; ``stall_note``: tracekit run's own record of the stall; ``dump_ends``: each
    Flight Recorder dump's newest entry per rank on the main group (``rank, file, seq, t``);
    ``last``: each rank's last collective per group (``rank, pg, seq, op, behind``); ``lateness``:
    how late each rank enters each shared collective (``figures.lateness``); ``bandwidth``:
    ``figures.bandwidth``; ``world_size``: ``figures.world_size``."""

    verdict: Verdict | None
    timed: pl.DataFrame
    source: str
    main_pg: str | None
    labels: dict[str, str]
    ranks: pl.DataFrame
    waits: dict[int, tuple[float, str]]
    stall_note: str | None
    dump_ends: pl.DataFrame
    last: pl.DataFrame
    lateness: pl.DataFrame
    bandwidth: pl.DataFrame
    world_size: int | None

    @classmethod
    def build(cls, store: Store, verdict: Verdict | None) -> ChartData:
        tm, source = rank_state.timed(store)
        pg = rank_state.main_group(tm, verdict) if tm.height else None
        coll = store.collectives.filter(pl.col("rank").is_not_null() & pl.col("seq").is_not_null()
                                        & ~pl.col("op").is_in(["send", "recv"]))
        last = (coll.sort("seq").group_by("rank", "pg")
                .agg(pl.col("seq").last(), pl.col("op").cast(pl.Utf8).last())
                .with_columns((pl.col("seq").max().over("pg") - pl.col("seq")).alias("behind")))
        return cls(verdict, tm, source, pg, rank_state.group_labels(store),
                   rank_state.table(rank_state.situation(store, verdict)), rank_state.waits(store),
                   rank_state.stall_note(store), _dump_ends(store, pg), last, figures.lateness(store)[0],
                   figures.bandwidth(store),
                   figures.world_size(store))


def _dump_ends(store: Store, pg: str | None) -> pl.DataFrame:
    """Each Flight Recorder dump's newest entry per rank on group ``pg``, on one clock (``t``): the
    points a slow run is seen to move through."""
    none = pl.DataFrame(schema={"rank": pl.Int64, "file": pl.Utf8, "seq": pl.Int64, "t": pl.Int64})
    if pg is None:
        return none
    fr = store.collectives.filter((pl.col("source") == "fr") & (pl.col("pg") == pg)
                                  & pl.col("rank").is_not_null())
    ends = (fr.sort("seq").group_by("rank", "file").agg(pl.col("seq").last(), pl.col("start_ns").last())
            .drop_nulls())
    if ends.height < 2:
        return none
    ends = ends.join(fr.select("rank", "host").unique("rank"), on="rank")
    return sources.on_one_clock(ends, {"start_ns": "t"}, fr)
