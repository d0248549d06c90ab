"""Small stores built from rows, the way PyTorch's Flight Recorder tests build events with
``create_one_event``: each test says exactly the evidence it needs, nothing else."""

from __future__ import annotations

import polars as pl

from tracekit import schema
from tracekit.ingest import ingest
from tracekit.meanings import with_says
from tracekit.store import Store


def make_store(**tables: list[dict]) -> Store:
    """``make_store(events=[dict(kind="crash", ...)], collectives=[...])``: every other table empty."""
    out = {}
    for name, sch in schema.TABLES.items():
        rows = tables.get(name) or []
        out[name] = schema.conform(pl.DataFrame(rows, infer_schema_length=None), sch) if rows else schema.empty(sch)
    out["events"] = with_says(out["events"])  # as ingest.combine decodes them
    return Store(**out)


def fr_entry(rank: int, pg: str, seq: int, op: str = "all_reduce", sizes: str = "8", dtype: str = "Float",
             t: int | None = None, i: int = 0, state: str = "completed") -> dict:
    return dict(file=f"fr{rank}", rank=rank, source="fr", pg=pg, seq=seq, op=op, op_raw=f"nccl:{op}", sizes=sizes,
                dtype=dtype, start_ns=t if t is not None else seq * 10, record_id=i, state=state)


def fr_store(entries: dict[int, list[tuple]], members=None, extra_events: list[dict] = (), **tables) -> Store:
    """FR dumps of the ranks in ``entries`` ({rank: [(pg, seq, op, sizes, dtype, t), ...]}), each dump
    naming the group's members (default: the ranks that dumped)."""
    rows = [fr_entry(r, pg, seq, op, sizes, dtype, t, i)
            for r, es in entries.items() for i, (pg, seq, op, sizes, dtype, t) in enumerate(es)]
    pgs = sorted({e[0] for es in entries.values() for e in es} | {"0"})
    groups = [dict(file=f"fr{r}", rank=r, pg=pg, members=list(members or sorted(entries))) for r in entries for pg in pgs]
    dumps = [dict(file=f"fr{r}", rank=r, kind="fr_dump", message="") for r in entries]
    ranks = [dict(file=f"fr{r}", rank=r, source="fr") for r in entries]
    return make_store(collectives=rows, events=dumps + list(extra_events), groups=groups, ranks=ranks, **tables)


def one(pg, seq, op="all_reduce", sizes="8", dtype="Float", t=None):
    return (pg, seq, op, sizes, dtype, t if t is not None else seq * 10)


def text_store(tmp_path, text: str, name: str = "job.log") -> Store:
    """The store of one log file holding ``text`` (written under ``tmp_path`` as ``name``), ingested."""
    f = tmp_path / name
    f.write_text(text)
    return ingest([f])


def ranks_of(store: Store) -> list[int]:
    """The global ranks the store's identity table names, sorted."""
    return sorted(store.ranks["rank"].drop_nulls().unique().to_list())


def file_ranks(path) -> list[int]:
    """The global ranks tracekit counts in the file at ``path`` (ingested alone), sorted."""
    return ranks_of(ingest([path]))


def text_ranks(tmp_path, text: str, name: str = "job.log") -> list[int]:
    """The global ranks tracekit counts in one log file holding ``text``, sorted."""
    return ranks_of(text_store(tmp_path, text, name))


def worlds_of(store: Store) -> list[int]:
    """The world sizes the store's identity table names."""
    return store.ranks["world_size"].drop_nulls().unique().to_list()


def hosts_of(store: Store) -> list[str]:
    """The hosts the store's identity table names, sorted."""
    return sorted(store.ranks["host"].drop_nulls().unique().to_list())


def events_of(store: Store, kind: schema.EventKind) -> pl.DataFrame:
    """The events of one kind in ``store``, in line order."""
    return store.events.filter(pl.col("kind").cast(pl.Utf8) == kind).sort("line")
