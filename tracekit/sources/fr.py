"""The Flight Recorder as a source of collectives: its dumps' pg_config names each group's members,
pg_status says how far each rank enqueued even where its ring buffer is empty, and a dump, even an
empty one, is a record of its rank. The home of FR's own matching checks (as torch's
``flight_recorder/components`` analyzer does them): ``checks`` runs them (tracekit/fr_checks.py) on
every group of a store's dumps, and says which windows the dumps show healthy."""

from __future__ import annotations

import polars as pl

from tracekit import fr_checks
from tracekit.fr_checks import HealthyWindow
from tracekit.outcome import EventKind, Finding
from tracekit.sources.common import collect
from tracekit.store import Store

NAME = "fr"
TIMED = True  # every entry has its enqueue time (time_created_ns)

_seen_members: tuple[object, pl.DataFrame] = (None, pl.DataFrame())


def members(store: Store, seen: pl.DataFrame) -> pl.DataFrame:
    """(pg, rank) membership from pg_config; without one, who appears (``seen``) and every dumped
    rank in the default group."""
    cfg = group_members(store)
    if cfg.height:
        return cfg.select("pg", pl.col("members").alias("rank")).explode("rank").unique()
    dumped = store.events.filter(pl.col("kind") == EventKind.FR_DUMP).select("rank").drop_nulls().unique()
    return pl.concat([seen, dumped.with_columns(pl.lit("0").alias("pg")).select("pg", "rank")],
                     how="vertical_relaxed").unique()


def recorded(store: Store, ranks: pl.Series) -> pl.Series:
    """The ranks with a collective here, and every rank that left a dump (an empty one too)."""
    dumped = store.events.filter(pl.col("kind") == EventKind.FR_DUMP)["rank"].drop_nulls()
    return pl.concat([ranks.cast(pl.Int64), dumped]).unique().sort()


def group_members(store: Store) -> pl.DataFrame:
    """Each group's member lists (FR pg_config) as ``pg, members``, each distinct list once: every
    rank's dump repeats the lists of its groups (16,384 dumps of the world's group: 268 M members,
    a list per group once deduplicated). Kept for the last store asked: align and the coverage both
    ask, and reading the lists is most of a 16,384-rank verdict."""
    global _seen_members
    groups, got = _seen_members  # (one read: another thread may set it meanwhile)
    if groups is store.groups:
        return got
    lists = collect(store.groups.lazy().filter(pl.col("members").list.len() > 0).select("pg", "members"))
    parts = []
    for pg in lists["pg"].unique(maintain_order=True):
        one = lists if lists["pg"].n_unique() == 1 else lists.filter(pl.col("pg").eq_missing(pg))
        parts.append(one.head(1) if _alike(one["members"]) else one.unique())
    got = pl.concat(parts) if parts else lists
    _seen_members = (store.groups, got)
    return got


def _alike(lists: pl.Series) -> bool:
    """Whether every list is the first one, compared in one polars call (16,384 lists of 16,384
    members: hashing them to deduplicate took 12 s, numpy's block compare 0.81 s, this 0.16 s)."""
    if lists.len() < 2:
        return True
    if lists.list.len().n_unique() != 1 or lists.explode().null_count():
        return False
    return bool((lists == lists.head(1)).all())


def frontier(store: Store, entries: pl.DataFrame) -> pl.DataFrame:
    """Each (rank, pg)'s frontier: the highest of its entries' (``entries``) and pg_status's."""
    return (pl.concat([entries, status_frontier(store)], how="vertical_relaxed")
            .group_by("rank", "pg").agg(pl.col("frontier").max()))


def status_frontier(store: Store) -> pl.DataFrame:
    """FR pg_status as (rank, pg, frontier). An empty dump cannot name its pg ids; its peers'
    entries tie each id to a group name, kept where the rank's own pg_config has that name."""
    groups = collect(store.groups.lazy().select("rank", "pg", "pg_id", "last_enqueued"))  # (not the members)
    st = groups.filter(pl.col("last_enqueued").is_not_null()).select(
        "rank", "pg", pl.col("last_enqueued").alias("frontier"))
    known = st.filter(~pl.col("pg").str.starts_with("id:"))
    unknown = st.filter(pl.col("pg").str.starts_with("id:"))
    if not unknown.height:
        return known
    # an id's name, from the dumps whose entries named it
    ids = (groups.filter(~pl.col("pg").str.starts_with("id:") & pl.col("pg_id").is_not_null())
           .select(pl.format("id:{}", "pg_id").alias("pg"), pl.col("pg").alias("name")).unique())
    named = groups.filter(~pl.col("pg").str.starts_with("id:")).select("rank", pl.col("pg").alias("name"))
    guess = (unknown.join(ids, on="pg").join(named, on=["rank", "name"], how="semi")
             .group_by("rank", "pg").agg(pl.col("name").unique(), pl.col("frontier").first())
             .filter(pl.col("name").list.len() == 1)
             .select("rank", pl.col("name").list.first().alias("pg"), "frontier"))
    return pl.concat([known, guess], how="vertical_relaxed")


_seen_checks: tuple[object, tuple[list[Finding], list[HealthyWindow]]] = (None, ([], []))


def checks(store: Store) -> tuple[list[Finding], list[HealthyWindow]]:
    """The analyzer's checks over every group of the store's dumps: the findings (type, size, dtype,
    state, coalesced groups, per-op shape, all_to_all totals, send/recv pairs), first of each kind per
    group, and the groups whose dumps show a healthy window. Kept for the last store asked (the
    verdict and the report both ask)."""
    global _seen_checks
    coll, got = _seen_checks
    if coll is store.collectives:
        return got
    got = fr_checks.check_store(store)
    _seen_checks = (store.collectives, got)
    return got
