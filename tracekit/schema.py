"""The declared schema of every table tracekit writes.

Each parser returns frames of exactly these columns (``conform`` fills the ones a source lacks
with nulls), so the store, the analysis and the tests all speak one vocabulary.
"""

from __future__ import annotations

import polars as pl

Str, I64, F64, Bool = pl.Utf8, pl.Int64, pl.Float64, pl.Boolean

#: Canonical collective names; every source's op name is mapped onto one of these.
OPS = [
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all",
    "send", "recv", "barrier", "coalesced", "gather", "scatter", "other",
]

FILES = {
    "file": Str, "kind": Str, "size_bytes": I64, "lines": I64, "parsed": I64,
    "blank": I64, "unknown": I64, "error": Str,
}

RANKS = {
    "file": Str, "host": Str, "pid": I64, "rank": I64, "local_rank": I64, "cuda_dev": I64,
    "node": I64, "world_size": I64, "nccl_version": Str, "torch_version": Str,
    "deepspeed_version": Str, "source": Str,
}

COMMS = {
    "file": Str, "line": I64, "host": Str, "pid": I64, "comm": Str, "comm_id": Str,
    "rank": I64, "nranks": I64, "nnodes": I64, "cuda_dev": I64, "bus_id": Str,
    "parent": Str, "color": I64, "key": I64, "api": Str, "state": Str,
}

LINKS = {
    "file": Str, "line": I64, "host": Str, "pid": I64, "rank": I64, "what": Str,
    "channel": I64, "src": I64, "dst": I64, "direction": Str, "transport": Str,
    "transport_kind": Str, "gdr": Bool, "iface": Str, "addr": Str, "family": Str, "value": Str,
}

COLLECTIVES = {
    "file": Str, "line": I64, "source": Str, "host": Str, "pid": I64, "rank": I64,
    "pg": Str, "pg_desc": Str, "comm": Str, "nranks": I64, "seq": I64, "op": Str, "op_raw": Str,
    "count": I64, "dtype": Str, "bytes": I64, "sizes": Str, "start_ns": I64, "end_ns": I64,
    "state": Str, "record_id": I64,
}

EVENTS = {
    "file": Str, "line": I64, "host": Str, "pid": I64, "rank": I64, "kind": Str, "ts": Str,
    "message": Str, "seq": I64, "op": Str, "numel": I64, "timeout_ms": I64, "pg": Str,
    "last_enqueued": I64, "last_completed": I64, "exit_code": I64, "step": I64, "loss": F64,
    "thread": Str, "where": Str, "frames": Str,
    # bandwidth measurements (DeepSpeed comms logger, nccl-tests): message bytes, time, GB/s
    "bytes": I64, "duration_ms": F64, "algbw_gbs": F64, "busbw_gbs": F64,
}

TABLES = {
    "files": FILES, "ranks": RANKS, "comms": COMMS, "links": LINKS,
    "collectives": COLLECTIVES, "events": EVENTS,
}


def empty(schema: dict) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def conform(df: pl.DataFrame | pl.LazyFrame, schema: dict) -> pl.DataFrame:
    """Select exactly the schema's columns, in order, cast, with missing ones as nulls."""
    lf = df.lazy()
    have = set(lf.collect_schema().names())
    return lf.select(
        [
            (pl.col(name) if name in have else pl.lit(None)).cast(dtype).alias(name)
            for name, dtype in schema.items()
        ]
    ).collect()


def concat(frames: list[pl.DataFrame], schema: dict) -> pl.DataFrame:
    """The frames as one, conformed to ``schema``. Frames of one shape (one per file, from one
    parser: 1,024 of them for 1,024 FR dumps) are concatenated first and conformed once."""
    shapes: dict[tuple, list[pl.DataFrame]] = {}
    for f in frames:
        if f is not None and f.height:
            shapes.setdefault(tuple(f.schema.items()), []).append(f)
    parts = [conform(pl.concat(group), schema) for group in shapes.values()]
    return pl.concat(parts) if parts else empty(schema)
