"""PyTorch Flight Recorder dumps, pickle or JSON, NCCL or Gloo (docs/formats.md, "PyTorch", Flight Recorder).

A dump is one rank's ring buffer. Its rank comes from the dump itself where it says so (a ``rank``
key, or the one rank every process group of the dump shares), else from the trailing digits of
the file name (``<prefix><rank>``). Entries become ``collectives`` rows (``seq`` is
collective_seq_id, or p2p_seq_id for send/recv); ``pg_status`` and ``pg_config`` become events,
so the analysis can tell a rank that never enqueued a collective from one whose buffer wrapped.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import io
import json
import math
import pickle
import re

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind


class InputError(ValueError):
    """A file that cannot be read as what it claims to be."""


# What a dump legitimately holds: 2,000 entries (TORCH_FR_BUFFER_SIZE's usual value) of ~20 fields
# and their stack frames, and pg_config of up to 16k ranks: ~0.1 M references between containers,
# 1-10 MB. The limits leave 40x that; past them a file is not decoded (a crafted one would take
# memory and time without bound: a list shared 2^40 ways is 872 bytes of pickle).
MAX_DUMP_BYTES = 256 << 20
MAX_REFERENCES = 4_000_000  # references from containers to their items, counted once per path
MAX_DEPTH = 64  # containers within containers (a dump: 5)


class _SafeUnpickler(pickle.Unpickler):
    """Flight Recorder pickles hold plain dicts, lists, tuples and scalars; refuse anything else
    (every class, and with it every callable: os.system, eval, any reduce; persistent ids; extensions)."""

    def find_class(self, module, name):
        raise InputError(f"refusing to unpickle {module}.{name} (not a Flight Recorder dump)")

    def persistent_load(self, pid):
        raise InputError("refusing a persistent id (not a Flight Recorder dump)")


@contextlib.contextmanager
def _no_gc():
    """A dump is thousands of small dicts and lists: with the cyclic GC on, every few hundred new
    ones start a collection over the others (decoding and parsing 1,024 dumps of 2,000 entries:
    3-6x slower). Nothing in a dump refers to itself, so the GC has nothing to find in it."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _bounded(obj) -> None:
    """Refuse an object graph whose containers, walked as a tree (a shared list once per path to it,
    as every reader of the dump will walk it), hold more than MAX_REFERENCES items or nest deeper than
    MAX_DEPTH. Breadth first, a level at a time in C (``gc.get_referents``; ``gc.is_tracked`` keeps
    the containers: a dict of scalars is untracked and leads nowhere further); a level's size is
    summed before it is made, so a list shared a million ways is refused before it is expanded.
    A 2,000-entry dump with frames: ~5 ms, a fifth of its unpickling."""
    level, total, depth = [obj], 0, 0
    while level:
        total += sum(map(len, level))
        depth += 1
        if total > MAX_REFERENCES:
            raise InputError(f"more than {MAX_REFERENCES:,} items in its lists and dicts, counted as read "
                             "(a shared list once per reference): not a Flight Recorder dump")
        if depth > MAX_DEPTH:
            raise InputError(f"lists nested more than {MAX_DEPTH} deep: not a Flight Recorder dump")
        level = list(filter(gc.is_tracked, gc.get_referents(*level)))


@_no_gc()
def load(data: bytes) -> dict:
    """A dump (pickle, protocols 2-5, or JSON) decoded within the limits above; InputError otherwise."""
    if len(data) > MAX_DUMP_BYTES:
        raise InputError(f"{len(data) / (1 << 20):,.0f} MB: past {MAX_DUMP_BYTES >> 20} MB, "
                         "not a Flight Recorder dump")
    if data[:64].lstrip()[:1] == b"{":
        obj = json.loads(data)
    else:
        obj = _SafeUnpickler(io.BytesIO(data)).load()
    if not isinstance(obj, dict) or "entries" not in obj:
        raise InputError("no 'entries' key: not a Flight Recorder dump")
    _bounded(obj)
    return obj


def looks_like(data: bytes) -> bool:
    if data[:1] == b"\x80":
        return b"entries" in data
    return (data[:64].lstrip()[:1] == b"{" and b'"entries"' in data
            and (b'"pg_config"' in data or b'"pg_status"' in data))


# torch dtype names as FR writes them, and their sizes
DTYPE_BYTES = {"Float": 4, "BFloat16": 2, "Half": 2, "Double": 8, "Long": 8, "Int": 4, "Short": 2, "Char": 1,
               "Byte": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1, "ComplexFloat": 8, "UInt32": 4,
               "UInt64": 8}

OP_ALIASES = {
    "allreduce": "all_reduce", "all_reduce": "all_reduce", "allreduce_coalesced": "all_reduce",
    "_all_gather_base": "all_gather", "all_gather": "all_gather", "allgather": "all_gather",
    "all_gather_into_tensor": "all_gather", "allgather_into_tensor_coalesced": "all_gather",
    "_reduce_scatter_base": "reduce_scatter", "reduce_scatter": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter", "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "broadcast": "broadcast", "reduce": "reduce", "all_to_all": "all_to_all", "alltoall": "all_to_all",
    "alltoall_base": "all_to_all", "all_to_allv": "all_to_all", "send": "send", "recv": "recv",
    "barrier": "barrier", "coalesced": "coalesced", "gather": "gather", "scatter": "scatter",
    # the names the analyzer knows (torch/distributed/flight_recorder/components/types.py, COLLECTIVES):
    # out-of-place and single-tensor variants run the same NCCL op as the plain one
    "_broadcast_oop": "broadcast", "_reduce_oop": "reduce", "all_gather_into_tensor_coalesced": "all_gather",
    "all_gather_single": "all_gather", "all_gather_v": "all_gather",
    "reduce_scatter_single": "reduce_scatter", "reduce_scatter_v": "reduce_scatter",
    "all_to_all_single": "all_to_all", "all_to_all_v_single": "all_to_all",
    "all_reduce_barrier": "barrier",
    # the entries that end a coalesced group (ProcessGroupNCCL::endCoalescing): no tensors of their own
    "allgather_coalesced": "coalesced", "reduce_scatter_coalesced": "coalesced",
}

#: The end of a coalesced group: ``coalesced``, ``ALLGATHER_coalesced``, ``allreduce_coalesced``; not the
#: single ops ``all_gather_into_tensor_coalesced`` / ``reduce_scatter_tensor_coalesced``.
COALESCED_END = r"^\w+:(?:\w+_)?coalesced$"
#: ``nccl:send 0->1`` (this rank, group rank 0, sends to group rank 1), ``nccl:recv 1<-0``, ``gloo:recv 1<-?``
P2P_NAME = r"^\w+:(?:send (?P<s_src>\d+)->(?P<s_dst>\d+)|recv (?P<r_dst>\d+)<-(?P<r_src>\d+|\?))"


@functools.lru_cache(maxsize=4096)
def canonical_op(name: str) -> str:
    base = name.split(":", 1)[-1].split(" ", 1)[0].strip().lower()
    return OP_ALIASES.get(base, "other")


@functools.lru_cache(maxsize=1024)
def _ranks(text: str) -> frozenset:
    """The ranks of a pg_config entry, written as a Python list ("[0, 1, 2]"): JSON, mostly.
    Cached: every dump of a run repeats the same groups (at 1,024 ranks, parsing them was 40% of FR
    ingest)."""
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


_SIZES: dict[tuple | str, tuple[int, str]] = {}


def _size_of(sizes: list) -> tuple[int, str]:
    """An entry's ``input_sizes`` as (element count, ``"4096x1024;8"``), cached by the shapes: a run
    repeats a few shapes millions of times."""
    try:
        key = tuple(map(tuple, sizes))  # (a tuple of tuples: half the time of the list's repr)
    except TypeError:  # a malformed entry: a scalar among the shapes
        key = repr(sizes)
    got = _SIZES.get(key)
    if got is None:
        if len(_SIZES) > 65536:
            _SIZES.clear()
        got = _SIZES[key] = (sum(math.prod(s) for s in sizes if isinstance(s, list)),
                             ";".join("x".join(map(str, s)) for s in sizes))
    return got


def _sizes(column: list[list]) -> list[tuple[int, str]]:
    """``_size_of`` of each entry's sizes; an entry with the same shapes as the one before it (a loop
    of one op, the usual case) takes its answer without a lookup."""
    out, before, answer = [], None, None
    for sizes in column:
        if sizes != before:
            before, answer = sizes, _size_of(sizes)
        out.append(answer)
    return out


def _column(name: str, value, dtype: pl.DataType, n: int) -> pl.Series:
    """``value`` ``n`` times, made in polars (a list of n copies costs a Python object each)."""
    return (pl.Series(name, [value], dtype=dtype).new_from_index(0, n) if n
            else pl.Series(name, [], dtype=dtype))


def _collectives(entries: list[dict], file: str, rank: int | None) -> pl.DataFrame:
    """One row per entry, the store's columns only (an entry's stack frames are not kept). Column by
    column, a comprehension each: for 1,024 dumps of 2,000 entries, one loop appending to 13 lists
    took 2x as long."""
    gets = [e.get for e in entries]
    pgs = [g("process_group") or ("", "") for g in gets]
    raw = [str(g("profiling_name", "")) for g in gets]
    ops = [canonical_op(n) for n in raw]
    p2p = [bool(g("is_p2p")) or op in ("send", "recv") for g, op in zip(gets, ops)]
    shapes = _sizes([g("input_sizes") or [] for g in gets])
    outs = _sizes([g("output_sizes") or [] for g in gets])
    in_types = [g("input_dtypes") or [] for g in gets]
    dtypes = [t[0] if isinstance(t, list) and t else None for t in in_types]
    counts = [s[0] for s in shapes]
    n = len(entries)
    i64, s = pl.Int64, pl.Utf8
    return pl.DataFrame([
        _column("file", file, s, n), _column("rank", rank, i64, n), _column("source", "fr", s, n),
        pl.Series("record_id", [g("record_id") for g in gets], i64),
        pl.Series("pg", [str(p[0]) for p in pgs], s),
        pl.Series("pg_desc", [str(p[1]) if len(p) > 1 else None for p in pgs], s),
        pl.Series("seq", [g("p2p_seq_id") if p else g("collective_seq_id") for g, p in zip(gets, p2p)], i64),
        pl.Series("op", ops, s), pl.Series("op_raw", raw, s), pl.Series("count", counts, i64),
        pl.Series("dtype", dtypes, s),
        pl.Series("bytes", [c * DTYPE_BYTES[d] if isinstance(d, str) and d in DTYPE_BYTES else None
                            for c, d in zip(counts, dtypes)], i64),
        pl.Series("sizes", [s[1] for s in shapes], s),
        pl.Series("start_ns", [g("time_discovered_started_ns") or g("time_created_ns") for g in gets], i64),
        pl.Series("end_ns", [g("time_discovered_completed_ns") for g in gets], i64),
        pl.Series("state", [g("state") for g in gets], s),
        pl.Series("out_sizes", [o[1] for o in outs], s), pl.Series("out_count", [o[0] for o in outs], i64),
        pl.Series("dtypes", [_dtypes(t) for t in in_types], s),
        pl.Series("out_dtypes", [_dtypes(g("output_dtypes")) for g in gets], s),
    ]).with_columns(*_p2p_peers(), pl.col("op_raw").str.contains(COALESCED_END).alias("coalesced_end"))


def _dtypes(names) -> str | None:
    """An entry's dtypes as ``"Float;Half"``; None where the entry gives none (an empty list too)."""
    if isinstance(names, str):  # (some writers give one name, not a list)
        return names or None
    return ";".join(map(str, names)) if isinstance(names, list) and names else None


def _p2p_peers() -> list[pl.Expr]:
    """``p2p_src`` / ``p2p_dst``: the group ranks a send or recv names (null for ``?``, any source)."""
    got = pl.col("op_raw").str.extract_groups(P2P_NAME)
    return [pl.coalesce(got.struct.field("s_src"), got.struct.field("r_src")).cast(pl.Int32, strict=False)
            .alias("p2p_src"),
            pl.coalesce(got.struct.field("s_dst"), got.struct.field("r_dst")).cast(pl.Int32, strict=False)
            .alias("p2p_dst")]


@_no_gc()
def parse(obj: dict, file: str) -> Parsed:
    rank = _rank_of(obj, file)
    entries = obj.get("entries") or []
    coll = _collectives(entries, file, rank)
    # each pg id's group name, from the last entry that gives both
    # (a dict of them first: 2,000 entries, few ids)
    last = dict(zip([e.get("pg_id") for e in entries], coll["pg"].to_list()))
    pg_ids = {str(i): pg for i, pg in last.items() if i is not None}
    # one row per process group the dump describes: members from pg_config (Gloo names the default
    # group ''), how far this rank got from pg_status (keyed by pg id: named through the entries)
    groups: dict[str, dict] = {}
    for name, cfg in (obj.get("pg_config") or {}).items():
        members = cfg.get("ranks")
        if isinstance(members, str):  # most versions write the list as its text
            members = sorted(_ranks(members))
        groups[str(name) or "0"] = {"pg_desc": cfg.get("desc"),
                                    "members": ([int(x) for x in members] if isinstance(members, list)
                                                else None)}
    for pg_id, st in (obj.get("pg_status") or {}).items():
        g = groups.setdefault(pg_ids.get(str(pg_id), f"id:{pg_id}"), {})
        g.update(pg_id=str(pg_id), last_enqueued=st.get("last_enqueued_collective"),
                 last_completed=st.get("last_completed_collective"),
                 last_started=st.get("last_started_collective"))
    for pg_id, name in pg_ids.items():
        groups.setdefault(name, {}).setdefault("pg_id", pg_id)
    grp = pl.DataFrame([{"pg": k, **v, "file": file, "rank": rank} for k, v in groups.items()],
                       schema={"pg": pl.Utf8, "pg_id": pl.Utf8, "pg_desc": pl.Utf8,
                               "members": pl.List(pl.Int64), "last_enqueued": pl.Int64,
                               "last_completed": pl.Int64, "last_started": pl.Int64, "file": pl.Utf8,
                               "rank": pl.Int64})
    events = pl.DataFrame({"kind": [EventKind.FR_DUMP.value],
                           "message": [f"{len(entries)} entries, FR version {obj.get('version')}"],
                           "file": [file], "rank": [rank]}, schema_overrides={"rank": pl.Int64})
    version = obj.get("nccl_version") or obj.get("comm_lib_version") or None
    ranks = pl.DataFrame({"file": [file], "rank": [rank], "nccl_version": [version or None],
                          "source": ["fr"]},
                         schema_overrides={"rank": pl.Int64, "nccl_version": pl.Utf8})
    return Parsed("flight-recorder", {"collectives": coll, "events": events, "ranks": ranks, "groups": grp})
