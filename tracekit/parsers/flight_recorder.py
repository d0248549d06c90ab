"""PyTorch Flight Recorder dumps, pickle or JSON, NCCL or Gloo (FORMATS.md, "Flight Recorder").

A dump is one rank's ring buffer. Its rank comes from the dump itself where it says so (a ``rank``
key, or the one rank every process group of the dump shares), else from the trailing digits of
the file name (``<prefix><rank>``). Entries become ``collectives`` rows (``seq`` is
collective_seq_id, or p2p_seq_id for send/recv); ``pg_status`` and ``pg_config`` become events,
so the analysis can tell a rank that never enqueued a collective from one whose buffer wrapped.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import math
import pickle
import re

import polars as pl

from tracekit.parsers import Parsed


class InputError(ValueError):
    """A file that cannot be read as what it claims to be."""


class _SafeUnpickler(pickle.Unpickler):
    """Flight Recorder pickles hold plain dicts, lists, tuples and scalars; refuse anything else."""

    def find_class(self, module, name):
        raise InputError(f"refusing to unpickle {module}.{name} (not a Flight Recorder dump)")


def load(data: bytes) -> dict:
    if data[:64].lstrip()[:1] == b"{":
        obj = json.loads(data)
    else:
        obj = _SafeUnpickler(io.BytesIO(data)).load()
    if not isinstance(obj, dict) or "entries" not in obj:
        raise InputError("no 'entries' key: not a Flight Recorder dump")
    return obj


def looks_like(data: bytes) -> bool:
    if data[:1] == b"\x80":
        return b"entries" in data
    return data[:64].lstrip()[:1] == b"{" and b'"entries"' in data and (b'"pg_config"' in data or b'"pg_status"' in data)


# torch dtype names as FR writes them, and their sizes
DTYPE_BYTES = {"Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Long": 8, "Int": 4, "Short": 2, "Char": 1,
               "Byte": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1, "ComplexFloat": 8, "UInt32": 4, "UInt64": 8}

OP_ALIASES = {
    "allreduce": "all_reduce", "all_reduce": "all_reduce", "allreduce_coalesced": "all_reduce",
    "_all_gather_base": "all_gather", "all_gather": "all_gather", "allgather": "all_gather",
    "all_gather_into_tensor": "all_gather", "allgather_into_tensor_coalesced": "all_gather",
    "_reduce_scatter_base": "reduce_scatter", "reduce_scatter": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter", "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "broadcast": "broadcast", "reduce": "reduce", "all_to_all": "all_to_all", "alltoall": "all_to_all",
    "alltoall_base": "all_to_all", "all_to_allv": "all_to_all", "send": "send", "recv": "recv",
    "barrier": "barrier", "coalesced": "coalesced", "gather": "gather", "scatter": "scatter",
}


@functools.lru_cache(maxsize=4096)
def canonical_op(name: str) -> str:
    base = name.split(":", 1)[-1].split(" ", 1)[0].strip().lower()
    return OP_ALIASES.get(base, "other")


@functools.lru_cache(maxsize=1024)
def _ranks(text: str) -> frozenset:
    """The ranks of a pg_config entry, written as a Python list ("[0, 1, 2]"): JSON, mostly.
    Cached: every dump of a run repeats the same groups (at 1,024 ranks, parsing them was 40% of FR ingest)."""
    try:
        got = json.loads(text)
    except ValueError:
        got = ast.literal_eval(text)
    return frozenset(got or [])


def _rank_of(obj: dict, file: str) -> int | None:
    if isinstance(obj.get("rank"), int):
        return obj["rank"]
    common = None
    for cfg in (obj.get("pg_config") or {}).values():
        try:
            ranks = _ranks(str(cfg.get("ranks", "[]")))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if ranks:
            common = ranks if common is None else common & ranks
    if common and len(common) == 1:
        return next(iter(common))
    m = re.search(r"(\d+)(?:\.\w+)*$", file.rsplit("/", 1)[-1])
    return int(m.group(1)) if m else None


def parse(obj: dict, file: str) -> Parsed:
    rank = _rank_of(obj, file)
    entries = obj.get("entries") or []
    cols: dict[str, list] = {k: [] for k in (
        "record_id", "pg", "pg_desc", "seq", "op", "op_raw", "count", "dtype", "sizes", "start_ns",
        "end_ns", "state", "frames")}
    # (one bound append a column: this loop runs once per entry, 200 k times for 1,024 dumps)
    (add_record, add_pg, add_desc, add_seq, add_op, add_raw, add_count, add_dtype, add_sizes, add_start,
     add_end, add_state, add_frames) = (c.append for c in cols.values())
    pg_ids: dict[str, str] = {}
    for e in entries:
        get = e.get
        pg = get("process_group") or ("", "")
        name = str(get("profiling_name", ""))
        op = canonical_op(name)
        p2p = bool(get("is_p2p")) or op in ("send", "recv")
        sizes = get("input_sizes") or []
        add_record(get("record_id"))
        add_pg(str(pg[0]))
        add_desc(str(pg[1]) if len(pg) > 1 else None)
        add_seq(get("p2p_seq_id") if p2p else get("collective_seq_id"))
        add_op(op)
        add_raw(name)
        add_count(sum(math.prod(s) for s in sizes if isinstance(s, list)))
        add_dtype((get("input_dtypes") or [None])[0])
        add_sizes(";".join("x".join(map(str, s)) for s in sizes))
        add_start(get("time_discovered_started_ns") or get("time_created_ns"))
        add_end(get("time_discovered_completed_ns"))
        add_state(get("state"))
        frames = get("frames")
        add_frames(" <- ".join(f"{f.get('name')} ({f.get('filename')}:{f.get('line')})" for f in frames[:12])
                   if frames else "")
        if get("pg_id") is not None:
            pg_ids[str(e["pg_id"])] = str(pg[0])
    coll = pl.DataFrame(cols, schema_overrides={"record_id": pl.Int64, "seq": pl.Int64, "count": pl.Int64,
                                                "start_ns": pl.Int64, "end_ns": pl.Int64})
    coll = coll.with_columns(pl.lit(file).alias("file"), pl.lit(rank, pl.Int64).alias("rank"),
                             pl.lit("fr").alias("source"),
                             (pl.col("count").cast(pl.Int64) * pl.col("dtype").cast(pl.Utf8).replace_strict(
                                 DTYPE_BYTES, default=None, return_dtype=pl.Int64))
                             .alias("bytes"))
    # one row per process group the dump describes: members from pg_config (Gloo names the default
    # group ''), how far this rank got from pg_status (keyed by pg id: named through the entries)
    groups: dict[str, dict] = {}
    for name, cfg in (obj.get("pg_config") or {}).items():
        members = cfg.get("ranks")
        if isinstance(members, str):  # most versions write the list as its text
            members = sorted(_ranks(members))
        groups[str(name) or "0"] = {"pg_desc": cfg.get("desc"),
                                    "members": [int(x) for x in members] if isinstance(members, list) else None}
    for pg_id, st in (obj.get("pg_status") or {}).items():
        g = groups.setdefault(pg_ids.get(str(pg_id), f"id:{pg_id}"), {})
        g.update(pg_id=str(pg_id), last_enqueued=st.get("last_enqueued_collective"), last_completed=st.get("last_completed_collective"),
                 last_started=st.get("last_started_collective"))
    for pg_id, name in pg_ids.items():
        groups.setdefault(name, {}).setdefault("pg_id", pg_id)
    grp = pl.DataFrame([{"pg": k, **v} for k, v in groups.items()],
                       schema={"pg": pl.Utf8, "pg_id": pl.Utf8, "pg_desc": pl.Utf8, "members": pl.List(pl.Int64), "last_enqueued": pl.Int64,
                               "last_completed": pl.Int64, "last_started": pl.Int64}).with_columns(
        pl.lit(file).alias("file"), pl.lit(rank, pl.Int64).alias("rank"))
    events = pl.DataFrame({"kind": ["fr_dump"], "message": [f"{len(entries)} entries, FR version {obj.get('version')}"],
                           "file": [file], "rank": [rank]}, schema_overrides={"rank": pl.Int64})
    version = obj.get("nccl_version") or obj.get("comm_lib_version") or None
    ranks = pl.DataFrame({"file": [file], "rank": [rank], "nccl_version": [version or None], "source": ["fr"]},
                         schema_overrides={"rank": pl.Int64, "nccl_version": pl.Utf8})
    return Parsed("flight-recorder", {"collectives": coll, "events": events, "ranks": ranks, "groups": grp})
