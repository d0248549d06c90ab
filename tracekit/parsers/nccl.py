"""NCCL_DEBUG=INFO logs, NCCL 2.2 to 2.31 and RCCL (docs/formats.md, "NCCL_DEBUG=INFO").

One pass extracts the ``host:pid:tid [dev] NCCL LEVEL msg`` prefix from every line; each message
shape (``nccl_shapes``) is then decoded on the subset of lines it can match. Two writers glued in one
line (``g183:161264:166015g183:161258:166018 [1] NCCL INFO ...``) resynchronise on the last prefix.
A line is understood when a decoder made a row of it or it is in the catalogue of harmless shapes;
an NCCL line whose message nothing decodes is counted unknown. Ranks: ``nccl_ranks``.

COLL lines, most of a big log, are read before the lines frame is built, by the C scanner
(``tracekit/_scan.c``, one pass over the bytes) where it was compiled; ``read`` hands ``parse``
those rows already typed and the other lines as text. Without the scanner every line goes the
polars way, which gives the same tables.
"""

from __future__ import annotations

import mmap
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import polars as pl

from tracekit.nccl_messages import message_name, reads_as
from tracekit.parsers import Parsed, text
from tracekit.parsers.nccl_ranks import (comm_table, counted, join_rank, launched, local_numbering,
                                         named_ranks, process_ranks, shared_comm)
from tracekit.parsers.nccl_shapes import (  # noqa: F401 - FAST_HEAD is read by ingest
    PREFIX, PREFIX_NO_PID, OFI_LINE, SHARP_LINE, SHARPD_LINE, FABRIC_LINE, MLX5_LINE, BARE_PLUGIN, BARE_NCCL,
    BARE_COLL, OTHER_SHAPES, FAILED_WORDS, GLUED, GLUED_CUT, VERSION, USING, NCCL_TUPLE, INIT, NNODES, COLL,
    CONN, RANK_NRANKS, PROXY_RANK, RING, TREES, BOOT, NET, IB_NONE, IB_USING, SOCK_USING, CONNECT_RETRY,
    IB_ERROR,
    FAST_HEAD, UNWIND, TIMINGS, OLD_BOOT, OLD_NET, OLD_IB, SETTING, BENIGN, BENIGN_ANY,
    KNOWN_INFO_ANY, COMM_RANK, LAST_ERROR_INLINE,
)
from tracekit.schema import EventKind

try:
    from tracekit import _scan
except ImportError:  # installed where no C compiler was found: polars reads every line
    _scan = None

# ncclDataType_t, by enum number: name and bytes per element.
DTYPES = {
    0: ("int8", 1), 1: ("uint8", 1), 2: ("int32", 4), 3: ("uint32", 4), 4: ("int64", 8),
    5: ("uint64", 8), 6: ("float16", 2), 7: ("float32", 4), 8: ("float64", 8), 9: ("bfloat16", 2),
    10: ("float8e4m3", 1), 11: ("float8e5m2", 1),
}
# by dtype number, then one slot for any other number or none
DTYPE_NAMES = pl.Series([DTYPES[i][0] if i in DTYPES else "unknown" for i in range(max(DTYPES) + 1)]
                        + ["unknown"])
DTYPE_SIZES = pl.Series([DTYPES[i][1] if i in DTYPES else None for i in range(max(DTYPES) + 1)] + [None],
                        dtype=pl.Int64)
OPS = {
    "AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
    "Broadcast": "broadcast", "Reduce": "reduce", "Send": "send", "Recv": "recv",
    "AllToAll": "all_to_all", "Gather": "gather", "Scatter": "scatter",
}


# COLL lines read apart from the lines frame: one row per line, joined on ``stream`` to the
# streams, one per (file, host, pid, comm) with the line and device of its first line and its
# number of lines. The C scanner makes both; so does ``_as_coll`` from the lines polars read.
COLL_ROWS = {"line": pl.Int64, "stream": pl.UInt32, "op": pl.UInt32, "seq": pl.Int64, "count": pl.Int64,
             "dtype": pl.UInt32, "nranks": pl.Int32}  # op: a code into Coll.ops; gathers take UInt32 as it is
STREAMS = {"stream": pl.Int64, "file": pl.Utf8, "host": pl.Utf8, "pid": pl.Int64, "comm": pl.Utf8,
           "line": pl.Int64, "dev": pl.Int64, "lines": pl.Int64}


OP_NAMES = {"op": pl.Int64, "op_raw": pl.Utf8}


@dataclass
class Coll:
    rows: pl.DataFrame
    streams: pl.DataFrame
    ops: pl.DataFrame  # OP_NAMES: the name NCCL prints for each op code

    def __add__(self, other: Coll) -> Coll:
        return Coll(*(pl.concat([a, b]) for a, b in ((self.rows, other.rows), (self.streams, other.streams),
                                                       (self.ops, other.ops))))


def scan_many(files: list[tuple[str, bytes | mmap.mmap]]) -> list[tuple] | None:
    """The C scanner's reading of each text file ``(name, bytes)`` (``_scan.scan``; on every core: it
    releases the GIL), or None where it was not built."""
    if _scan is None:
        return None
    with ThreadPoolExecutor(min(len(files), os.cpu_count() or 1) or 1) as pool:
        return list(pool.map(_scan.scan, [data for _, data in files]))


def rest_bytes(scanned: tuple) -> int:
    """How much text ``scan_many`` left to the polars parsers in one file (what their frames hold)."""
    return scanned[7]


def _ints(values) -> list[int]:
    """A few scanner values (one per stream) as Python ints."""
    return memoryview(values).cast("q").tolist()


def read_many(files: list[tuple[str, bytes | mmap.mmap]], scans: list[tuple] | None = None
              ) -> tuple[pl.DataFrame, Coll | None]:
    """The lines frame of text files ``(name, bytes)`` and, with the C scanner, their plain COLL
    lines apart, already parsed (``scans``: ``scan_many``'s reading of them, where already made);
    without it, every line and ``None``. The scanner's columns reach polars without a copy."""
    if _scan is None:
        return text.lines_frames([text.raw(f, str(data, "utf-8", "replace")) for f, data in files]), None
    scans = scans if scans is not None else scan_many(files)
    rest = {"line": [], "raw": [], "file": []}
    streams = {k: [] for k in STREAMS if k != "stream"}
    rows = {k: [] for k in COLL_ROWS}  # per column, a chunk per file on the scanner's memory (no copy)
    ops = []
    for (file, data), (_, cols, hosts, op_names, comms, numbers, spans, _) in zip(files, scans):
        rest["line"] += _ints(numbers)
        rest["raw"] += _scan.texts(data, spans)
        rest["file"] += [file] * len(numbers)
        # this file's stream and op codes, moved past the files before it
        cols["stream"].add(len(streams["file"]))
        cols["op"].add(len(ops))
        for k in COLL_ROWS:
            rows[k].append(pl.Series(cols[k]))
        n_streams = len(cols["stream_pid"])
        streams["file"] += [file] * n_streams
        streams["host"] += [hosts[h] for h in _ints(cols["stream_host"])]
        streams["comm"] += [comms[k] for k in _ints(cols["stream_comm"])]
        for k in ("pid", "line", "dev", "lines"):
            streams[k] += _ints(cols["stream_" + k])
        ops += op_names
    lines = text.lines_frames(
        [pl.DataFrame(rest, schema={"line": pl.Int64, "raw": pl.Utf8, "file": pl.Utf8})])
    if not streams["file"]:
        return lines, None
    streams = pl.DataFrame(streams, schema={k: t for k, t in STREAMS.items() if k != "stream"})
    op_names = pl.DataFrame({"op_raw": ops}, schema={"op_raw": pl.Utf8}).with_row_index("op")
    rows = pl.DataFrame([pl.concat(chunks, rechunk=False).alias(k) for k, chunks in rows.items()])
    return lines, Coll(rows,
                       streams.with_row_index("stream").with_columns(pl.col("stream").cast(pl.Int64))
                       .select(list(STREAMS)),
                       op_names.with_columns(pl.col("op").cast(pl.Int64)))


def _decode(df: pl.DataFrame, pattern: str, mask: pl.Expr | None = None) -> pl.DataFrame:
    """Rows of ``df`` (where ``mask``) whose message matches ``pattern``, groups as columns."""
    sub = df if mask is None else df.filter(mask)
    names = list(re.compile(pattern).groupindex)
    if not sub.height:
        return sub.with_columns([pl.lit(None, pl.Utf8).alias(n) for n in names])
    out = sub.with_columns(pl.col("msg").str.extract_groups(pattern).alias("_g")).unnest("_g")
    return out.filter(pl.any_horizontal(pl.col(n).is_not_null() for n in names))


def _keep(df: pl.DataFrame, mask: pl.Expr) -> pl.DataFrame:
    """``df.filter(mask)``, without copying the strings when every row is kept (the usual case)."""
    m = df.select(mask.fill_null(False)).to_series()
    return df if m.all() else df.filter(m)


def _split_prefix(lines: pl.DataFrame) -> pl.DataFrame:
    """``host pid tid dev src_loc level msg`` of every NCCL line; null host on the others.

    The regex with capture groups is slow, so it runs only where the plain shape
    ``host:pid:tid [dev] [file:line ]NCCL LEVEL msg`` does not hold (glued writers, odd prefixes);
    the plain lines are cut with literal finds and slices, which run at GB/s.
    """
    t = pl.col("text")
    # (before NCCL 2.3 lines read `host:pid:tid [dev] INFO msg`, without "NCCL")
    launcher = ["launch_rank"] if "launch_rank" in lines.columns else []  # a prefix's rank (nccl_ranks)
    lines = lines.select("file", "line", "text", "ts", *launcher)
    said = lines.select(t.str.contains(" NCCL ", literal=True) | t.str.contains(" INFO ", literal=True)
                        | t.str.contains(" WARN ", literal=True)).to_series()
    df = lines if said.all() else lines.filter(said)
    if not said.all():  # the other tools' shapes, looked for only on the lines left (few, in an NCCL log)
        rest = lines.filter(~said).filter(t.str.contains(OTHER_SHAPES))
        if rest.height:
            df = pl.concat([df, rest]).sort("file", "line")
    plain = df.select(t.str.contains(FAST_HEAD)).to_series()
    fast, slow = (df, df.clear()) if plain.all() else (df.filter(plain), df.filter(~plain))
    at = t.str.find(" NCCL ", literal=True)
    head = t.str.slice(0, at)
    rest = t.str.slice(at + 6)
    level = rest.str.slice(0, 5).str.strip_chars_end(" ")
    parts = head.str.split_exact(" ", 2)
    ids = parts.struct.field("field_0").str.split_exact(":", 2)
    fast = fast.with_columns(
        ids.struct.field("field_0").alias("host"), ids.struct.field("field_1").alias("pid"),
        ids.struct.field("field_2").alias("tid"),
        parts.struct.field("field_1").str.strip_chars("[]").alias("dev"),
        parts.struct.field("field_2").alias("src_loc"),
        level.alias("level"),
        rest.str.slice(level.str.len_bytes() + 1).alias("msg"),
    ).drop("text")
    slow = _split_slow(slow) if slow.height else slow.drop("text")
    out = pl.concat([fast, slow], how="diagonal_relaxed").sort("file", "line") if slow.height else fast
    # writers glued in one line (`... 8g183:161258:166018 [1] NCCL INFO ncclCommSplit ... rank 1 nranks 16 ...
    # 0x55cd375g183:161262:166017 [5] NCCL INFO ...`): each prefix starts a message of its own, a row each
    glued = (out.filter(pl.col("msg").str.contains(" NCCL ", literal=True))
             .filter(pl.col("msg").str.contains(GLUED)))
    if not glued.height:
        return out
    seg = glued.select("file", "line", *[c for c in ("ts", "launch_rank") if c in out.columns],
                       pl.col("msg").str.replace_all(GLUED_CUT, "${pre}\x00${p}")
                       .str.split("\x00").list.slice(1)
                       .alias("_seg")).explode("_seg")
    inner = seg.with_columns(pl.col("_seg").str.extract_groups(PREFIX).alias("_p")).drop("_seg").unnest("_p")
    first = glued.with_columns(
        pl.col("msg").str.replace(GLUED_CUT, "${pre}\x00").str.split("\x00").list.first())
    rest = out.join(glued.select("file", "line"), on=["file", "line"], how="anti")
    # a glued writer's host reads the characters glued before it (`8g183`, `0x55cd375g183`): the file's own
    # host that ends it, where the file's other lines name one
    hosts = (rest.filter(pl.col("host").is_not_null()).group_by("file")
             .agg(pl.col("host").unique().alias("_hosts")))
    inner = inner.join(hosts, on="file", how="left")
    inner = _own_host(inner)
    return pl.concat([rest, first.select(out.columns), inner.select(out.columns)],
                     how="diagonal_relaxed").sort("file", "line", maintain_order=True)


def _own_host(rows: pl.DataFrame) -> pl.DataFrame:
    """``host`` replaced by the one of ``_hosts`` (the file's hosts from its clean lines) that it ends
    with."""
    rows = rows.explode("_hosts").with_columns(
        (pl.col("host").str.ends_with(pl.col("_hosts")) & (pl.col("host") != pl.col("_hosts")))
        .fill_null(False).alias("_end"))
    rows = rows.sort("_end", descending=True).unique(["file", "line", "pid", "tid", "msg"], keep="first",
                                                     maintain_order=True)
    return rows.with_columns(
        pl.when("_end").then(pl.col("_hosts")).otherwise(pl.col("host")).alias("host")).drop("_hosts", "_end")


def _split_slow(slow: pl.DataFrame) -> pl.DataFrame:
    """The prefix of lines that are not of the plain shape: each shape tried on the lines the ones
    before it left (NCCL's own with pid:tid anywhere in the line, RCCL's without, aws-ofi-nccl's and
    SHARP's own formats); null host and level where none fits."""
    t = pl.col("text")
    done, rest = [], slow
    for shape in (PREFIX, PREFIX_NO_PID, OFI_LINE, SHARP_LINE, SHARPD_LINE, FABRIC_LINE, MLX5_LINE,
                  BARE_PLUGIN, BARE_NCCL, BARE_COLL):
        hit = rest.filter(t.str.contains(shape))
        if hit.height:
            done.append(hit.with_columns(t.str.extract_groups(shape).alias("_p")).unnest("_p"))
            rest = rest.filter(~t.str.contains(shape))
    out = pl.concat(done + [rest], how="diagonal_relaxed").drop("text")
    for c in ("host", "pid", "tid", "dev", "src_loc", "level", "msg"):
        if c not in out.columns:
            out = out.with_columns(pl.lit(None, pl.Utf8).alias(c))
    # SHARP's and libfabric's levels read as NCCL's; a line that kept no level is a WARN when it says
    # a failure
    level = pl.col("level").str.to_uppercase().replace({"ERROR": "WARN", "WARNING": "WARN", "DEBUG": "INFO"})
    fail = pl.when(pl.col("msg").str.contains(FAILED_WORDS)).then(pl.lit("WARN")).otherwise(pl.lit("INFO"))
    return out.with_columns(pl.when(pl.col("level").is_null() & pl.col("msg").is_not_null())
                            .then(fail).otherwise(level).alias("level"))


def _decode_coll(df: pl.DataFrame) -> pl.DataFrame:
    """COLL lines: the fixed field order cut with literal finds; the regex only for the rest."""
    sub = _keep(df, pl.col("msg").str.contains(": opCount ", literal=True))
    m = pl.col("msg")

    def between(a: str, b: str | None) -> pl.Expr:
        i = m.str.find(a, literal=True) + len(a)
        if b is None:
            return m.str.slice(i).str.split_exact(" ", 1).struct.field("field_0")
        return m.str.slice(i, m.str.find(b, literal=True) - i)

    nranks = (m.str.slice(m.str.find("[nranks=", literal=True) + 8).str.split_exact("]", 1)
              .struct.field("field_0"))
    fast = sub.with_columns(
        m.str.slice(0, m.str.find(": opCount ", literal=True)).alias("op"),
        between(": opCount ", " sendbuff ").alias("opcount"),
        between(" count ", " datatype ").alias("count"),
        between(" datatype ", " op ").alias("dtype"),
        between(" root ", " comm ").alias("root"),
        between(" comm ", None).alias("comm"),
        nranks.alias("nranks"),
    )
    ok = (pl.col("count").str.contains(r"^\d+$") & pl.col("dtype").str.contains(r"^\d+$")
          & pl.col("op").str.contains(r"^\w+$") & pl.col("opcount").str.contains(r"^[0-9a-fA-F]+$")
          & pl.col("comm").is_not_null())
    good = _keep(fast, ok)
    if good.height != sub.height:
        rest = _decode(sub.join(good.select("file", "line"), on=["file", "line"], how="anti"), COLL)
        good = pl.concat([good, rest], how="diagonal_relaxed").sort("file", "line")
    return good.with_columns(
        pl.col("opcount").str.to_integer(base=16, strict=False).alias("seq"),
        pl.col("count", "dtype", "nranks").cast(pl.Int64, strict=False),  # past int64: unknown, not an error
    )


def _as_coll(decoded: pl.DataFrame, after: Coll | None) -> Coll:
    """COLL lines polars decoded, as a ``Coll`` whose codes follow those of ``after``."""
    keys = ["file", "host", "pid", "comm"]
    streams = decoded.group_by(keys, maintain_order=True).agg(pl.col("line", "dev").first(),
                                                              pl.len().alias("lines"))
    streams = streams.with_row_index("stream", offset=after.streams.height if after else 0).with_columns(
        pl.col("stream", "lines").cast(pl.Int64))
    ops = decoded.select(pl.col("op").alias("op_raw")).unique(maintain_order=True).with_row_index(
        "op", offset=after.ops.height if after else 0).with_columns(pl.col("op").cast(pl.Int64))
    rows = (decoded.join(streams.select(*keys, "stream"), on=keys, how="left", nulls_equal=True,
                         maintain_order="left")
            .rename({"op": "op_raw"})
            .join(ops, on="op_raw", how="left", nulls_equal=True, maintain_order="left"))
    # (a dtype past uint32: unknown)
    rows = rows.select(pl.col(c).cast(t, strict=False) for c, t in COLL_ROWS.items())
    return Coll(rows, streams.select(list(STREAMS)), ops.select(list(OP_NAMES)))


def _transport_kind() -> pl.Expr:
    t = pl.col("transport")
    seg = t.str.split("/")
    return (
        pl.when(t.str.starts_with("NET/")).then(pl.lit("NET/") + seg.list.get(1, null_on_oob=True))
        .when(t.str.starts_with("P2P/")).then(pl.lit("P2P/") + seg.list.get(1, null_on_oob=True))
        .otherwise(seg.list.get(0))
    )


def _family(addr: str = "addr") -> pl.Expr:
    return pl.when(pl.col(addr).str.contains(":")).then(pl.lit("IPv6")).otherwise(pl.lit("IPv4"))


def _by_code(values: pl.Series, code: str, span: dict) -> pl.Expr:
    """``values[code]`` on every row (stream, op and dtype codes index small tables; ``span``: the
    least and greatest code, by name); a lone value where every row has the same (one process
    group, one op, one dtype), which polars keeps as a scalar, not a column of copies."""
    lo, hi = span[code]
    if lo is not None and lo == hi:
        return pl.lit(values[lo], values.dtype)
    if values.len() and values.null_count() == 0 and (values == values[0]).all():
        return pl.lit(values[0], values.dtype)
    return pl.lit(values).gather(pl.col(code))


#: a WARN a terminal or a paste wrapped after its words (`NET/Socket : peer A<p> message truncated :`), and
#: the next line that holds the rest (`receiving 1048576 bytes instead of 65536`): one message
WRAPPED = {r"message truncated ?:?\s*$": r"^\s*receiving \d+ bytes instead of \d+"}


def _join_wrapped(warn: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """WARNs cut where a line wrapped, with the next line's rest joined on (only the rest their words
    expect, ``WRAPPED``)."""
    cut = "|".join(f"(?:{head})" for head in WRAPPED)
    if not warn.filter(pl.col("msg").str.contains(cut)).height:
        return warn
    rest = "|".join(f"(?:{tail})" for tail in WRAPPED.values())
    after = lines.select("file", (pl.col("line") - 1).cast(warn.schema["line"]).alias("line"),
                         pl.col("text").alias("_rest"))
    joined = pl.col("msg").str.contains(cut) & pl.col("_rest").str.contains(rest).fill_null(False)
    return (warn.join(after, on=["file", "line"], how="left")
            .with_columns(pl.when(joined).then(pl.concat_str(pl.col("msg").str.strip_chars_end(), pl.lit(" "),
                                                              pl.col("_rest").str.strip_chars()))
                          .otherwise(pl.col("msg")).alias("msg")).drop("_rest"))


#: (s33) a NIC's rate NCCL's IB plugin states (Mb/s; src/transport/net_ib.cc, NCCL 2.19+): each physical device
#: (``NET/IB: [0] mlx5_0:uverbs0:1/RoCE provider=Mlx5 speed=100000 context=0x.. pciPath=.. ar=0``) and each virtual
#: one it makes of them (``NET/IB : Made virtual device [2] name=mlx5_0+mlx5_1 speed=200000 ndevs=2``)
NIC_SPEED = (r"^NET/IB ?: ?(?:\[\d+\] ?(?P<nic>[\w.\-]+)[:\s]\S*|Made virtual device \[\d+\] name=(?P<vnic>\S+))"
             r".*?\sspeed=(?P<mbps>\d+)(?:.*?\sndevs=(?P<ndevs>\d+))?")


def parse(lines: pl.DataFrame, scanned: Coll | None = None) -> Parsed:
    """``lines``: the lines frame; ``scanned``: the COLL lines ``read_many`` took apart."""
    pre = _split_prefix(lines)
    found = pre.filter(pl.col("level").is_not_null()).select("file", "line")
    version_lines = lines.filter(pl.col("text").str.contains("CCL version ", literal=True)
                                 | pl.col("text").str.contains("is using nccl==", literal=True)).join(
        found, on=["file", "line"], how="anti")
    # `torch.cuda.nccl.version()` and the tuple it gives, on its line or the next: torch's word on its NCCL
    asked = pl.col("text").str.contains("nccl.version()", literal=True)
    tup = pl.col("text").str.extract_groups(NCCL_TUPLE).struct
    near = lines.select((asked | asked.shift(1).over("file")).fill_null(False)).to_series()
    told = lines.filter(near).filter(pl.col("text").str.contains(NCCL_TUPLE)) if near.any() else lines.clear()
    if told.height:
        version_lines = pl.concat([version_lines, told.with_columns(
            pl.format("torch is using nccl=={}.{}.{}", tup.field("a"), tup.field("b"), tup.field("c"))
            .alias("text"))],
            how="diagonal_relaxed")
        version_lines = pl.concat([version_lines,
                                   lines.filter(asked).join(told.select("file"), on="file", how="semi")],
                                  how="diagonal_relaxed"
                                  ).unique(["file", "line"], keep="last", maintain_order=True)
    df = _keep(pre, pl.col("level").is_not_null()).with_columns(
        pl.col("pid").cast(pl.Int64, strict=False), pl.col("dev").cast(pl.Int64, strict=False)
    )
    if not df.height and not version_lines.height and scanned is None:
        return Parsed("nccl")

    key = ["file", "line", "host", "pid"]
    versions = df.filter(pl.col("msg").str.starts_with("NCCL version")).with_columns(
        pl.col("msg").str.extract(VERSION, 1).alias("nccl_version")
    )
    init = _decode(df, INIT, pl.col("msg").str.contains(r"comm 0x[0-9a-fA-F]+ rank \d+ nranks"))
    nnodes = _decode(df, NNODES, pl.col("msg").str.contains("nNodes"))
    coll_lines = _decode_coll(df)
    coll = _as_coll(coll_lines, scanned)
    # the messages that are not COLL lines (most of a big log is): the catalogues are matched on these alone
    talk = _keep(df, ~pl.col("msg").str.contains(": opCount ", literal=True))
    mixed = scanned is not None and coll.rows.height > 0  # rows of both kinds: put back in line order
    coll = scanned + coll if scanned is not None else coll
    conn = _decode(df, CONN, pl.col("msg").str.contains(" via "))
    ring = _decode(df, RING, pl.col("msg").str.starts_with("Channel ") & ~pl.col("msg").str.contains(" via "))
    trees = _decode(df, TREES, pl.col("msg").str.starts_with("Trees "))
    boot = _decode(df, BOOT, pl.col("msg").str.starts_with("Bootstrap"))
    net = _decode(df, NET, pl.col("msg").str.starts_with("Using network"))
    ib_none = df.filter(pl.col("msg").str.contains(IB_NONE))
    ib_err = df.filter(pl.col("msg").str.contains(IB_ERROR))
    # "NET/IB : Using [RO]; OOB ..." with no [n]device lists no device (the IB plugin then fails)
    ib_using = _decode(df, IB_USING, pl.col("msg").str.contains(r"^NET/IB ?: Using.*\[\d+\]"))
    sock = _decode(df, SOCK_USING, pl.col("msg").str.contains(r"^NET/Socket ?: Using \["))
    timings = _decode(df, TIMINGS, pl.col("msg").str.contains(" timings ", literal=True))
    old_boot = _decode(df, OLD_BOOT, pl.col("msg").str.starts_with("NET : Using interface"))
    old_net = _decode(df, OLD_NET, pl.col("msg").str.starts_with("Using internal Network"))
    old_ib = _decode(df, OLD_IB, pl.col("msg").str.contains(r"^NET/IB ?: \["))
    nic_speed = _decode(df, NIC_SPEED, pl.col("msg").str.contains(" speed=", literal=True))
    settings = _decode(df, SETTING, pl.col("msg").str.contains(" set ", literal=True))
    benign = talk.filter(pl.col("msg").str.contains(BENIGN_ANY))
    unwind = df.filter(pl.col("msg").str.contains(UNWIND))
    destroyed = init.filter(pl.col("state") == "Destroy COMPLETE")

    said_size = df.filter(pl.col("msg").str.contains(" nranks ", literal=True)
                          | pl.col("msg").str.contains(" nRanks ", literal=True))
    rank_nranks = _decode(said_size.join(init.select("file", "line"), on=["file", "line"], how="anti"),
                          RANK_NRANKS)
    proxy = _decode(df, PROXY_RANK, pl.col("msg").str.starts_with("[Proxy "))
    comm_rank = _decode(df.filter(pl.col("msg").str.contains(COMM_RANK)
                                  & ~pl.col("msg").str.contains(r" n[Rr]anks \d")),
                        COMM_RANK)
    proc_rank = process_ranks(init, nnodes, rank_nranks, conn, trees, proxy, launched(df), comm_rank)
    told = (lines.filter(pl.col("launch_rank").is_not_null())
            .select("file", pl.col("launch_rank").cast(pl.Int64).alias("rank"))
            if "launch_rank" in lines.columns else pl.DataFrame(schema={"file": pl.Utf8, "rank": pl.Int64}))
    proc_rank = local_numbering(proc_rank, df.select("file", "host", "pid").unique(), told)

    def with_rank(frame: pl.DataFrame) -> pl.DataFrame:
        if "rank" in frame.columns:
            return frame
        if not frame.height:  # most kinds of line are absent from most logs: no join for them
            return frame.with_columns(pl.lit(None, pl.Int64).alias("rank"))
        return join_rank(frame, proc_rank)

    sized = coll.streams.join(coll.rows.group_by("stream").agg(pl.col("nranks").max().cast(pl.Int64)),
                              on="stream",
                              how="left")
    numbered = counted(sized, proc_rank)
    proc_rank = pl.concat([proc_rank.join(numbered.select("host", "pid"), on=["host", "pid"], how="anti"),
                           numbered.drop("_guess")])
    numbered = numbered.filter("_guess")  # (the others hold the one rank left: as sure as a named one)
    comms = comm_table(init, nnodes, proc_rank, key)  # rank in the communicator, and the global rank
    # a stream's process group: its communicator's key, the same on every member (a split's too, which
    # has no commId of its own), else the communicator's pointer
    comm_ids = comms.filter(pl.col("comm_key").is_not_null()).group_by(["host", "pid", "comm"]).agg(
        pl.col("comm_key").first().alias("comm_id"))
    comm_ids = pl.concat([comm_ids, shared_comm(sized, numbered)])

    links = pl.concat([
        with_rank(conn).with_columns(
            pl.lit("connection").alias("what"), pl.col("channel", "src", "dst").cast(pl.Int64, strict=False),
            _transport_kind().alias("transport_kind"), pl.col("transport").str.contains("GDR").alias("gdr"),
        ).select(*key, "rank", "what", "channel", "src", "dst", "direction", "transport", "transport_kind",
                 "gdr"),
        with_rank(ring).with_columns(pl.lit("ring").alias("what"),
                                     pl.col("channel").cast(pl.Int64, strict=False))
        .select(*key, "rank", "what", "channel", "value"),
        with_rank(trees).with_columns(pl.lit("trees").alias("what")).select(*key, "rank", "what", "value"),
        with_rank(boot).with_columns(pl.lit("bootstrap").alias("what"), _family().alias("family"))
        .select(*key, "rank", "what", "iface", "addr", "family"),
        with_rank(net).with_columns(pl.lit("network").alias("what")).select(*key, "rank", "what", "value"),
        with_rank(ib_none).with_columns(pl.lit("ib_not_found").alias("what"),
                                        pl.lit("No device found").alias("value"))
        .select(*key, "rank", "what", "value"),
        with_rank(ib_using).with_columns(pl.lit("ib_devices").alias("what"), _family().alias("family"))
        .select(*key, "rank", "what", "value", "iface", "addr", "family"),
        with_rank(sock).with_columns(pl.lit("socket_devices").alias("what"), _family().alias("family"))
        .select(*key, "rank", "what", "value", "iface", "addr", "family"),
        with_rank(old_boot).with_columns(pl.lit("bootstrap").alias("what"), _family().alias("family"))
        .select(*key, "rank", "what", "iface", "addr", "family"),
        with_rank(old_net).with_columns(pl.lit("network").alias("what"))
        .select(*key, "rank", "what", "value"),
        with_rank(timings).with_columns(pl.lit("bootstrap_s").alias("what"),
                                        pl.coalesce("boot", "total").alias("value"))
        .select(*key, "rank", "what", "value"),
        with_rank(old_ib).with_columns(pl.lit("ib_devices").alias("what"))
        .select(*key, "rank", "what", "value"),
        # (s33) each NIC's rate as NCCL states it (Mb/s): ``iface`` the device, ``value`` its speed, ``channel`` the
        # physical devices a virtual one merges (null for a physical device's own line); read by nic_rates.py
        with_rank(nic_speed).with_columns(pl.lit("nic_speed").alias("what"),
                                          pl.coalesce("nic", "vnic").alias("iface"), pl.col("mbps").alias("value"),
                                          pl.col("ndevs").cast(pl.Int64, strict=False).alias("channel"))
        .select(*key, "rank", "what", "iface", "value", "channel"),
    ], how="diagonal_relaxed")

    # rank and process group of each stream (host, pid, comm): found on the few streams, joined on one
    # integer
    by_stream = with_rank(coll.streams).join(comm_ids, on=["host", "pid", "comm"], how="left").select(
        "stream", "file", "host", pl.col("pid", "rank").cast(pl.Int32, strict=False), "comm",
        pl.coalesce("comm_id", "comm").alias("pg"))
    # op codes are dense (0..n-1, in Coll.ops order), dtype numbers small: names by gather, not joins
    ops = coll.ops.sort("op")
    op_raw, op = ops["op_raw"], ops["op_raw"].replace_strict(OPS, default="other", return_dtype=pl.Utf8)
    unknown = len(DTYPE_NAMES) - 1
    dtype_slot = (pl.when(pl.col("dtype") < unknown).then(pl.col("dtype"))
                  .otherwise(pl.lit(unknown, pl.UInt32)))
    # streams are dense (0..n-1), so their columns come by gather too
    by_stream = by_stream.sort("stream")
    rows = coll.rows.with_columns(dtype_slot.alias("_dtype"))
    span = rows.select([pl.concat_list(pl.col(c).min(), pl.col(c).max()).alias(c)
                        for c in ("stream", "op", "_dtype")]
                       ).row(0, named=True)
    collectives = (
        rows.select(
            "line", *[_by_code(by_stream[c], "stream", span).alias(c)
                      for c in ("file", "host", "pid", "rank", "pg", "comm")],
            pl.lit("nccl").alias("source"), "nranks", "seq",
            _by_code(op, "op", span).alias("op"),
            _by_code(op_raw, "op", span).alias("op_raw"),
            "count",
            _by_code(DTYPE_NAMES, "_dtype", span).alias("dtype"),
            (pl.col("count") * _by_code(DTYPE_SIZES, "_dtype", span)).alias("bytes"),
            # NCCL logs a zero-count call but does not count it: it shares the next call's opCount
            pl.when(pl.col("count") == 0).then(pl.lit("no-op")).otherwise(pl.lit("enqueued")).alias("state"),
        ).select(*key, "source", "rank", "pg", "comm", "nranks", "seq", "op", "op_raw", "count", "dtype",
                 "bytes", "state")
    )
    if mixed:
        collectives = collectives.sort("file", "line", maintain_order=True)

    warn = _join_wrapped(df.filter(pl.col("level") != "INFO"), lines)
    warn = warn.filter(~pl.col("msg").str.contains(BENIGN_ANY))
    retry = df.filter(pl.col("msg").str.contains(CONNECT_RETRY))
    reason = pl.lit(None, pl.Utf8)
    for pattern, why in reversed(BENIGN.items()):
        reason = pl.when(pl.col("msg").str.contains(pattern)).then(pl.lit(why)).otherwise(reason)
    # NCCL's last error quoted inline (a pasted exception that lost its line breaks): its meaning, as a WARN's
    inline = lines.filter(pl.col("text").str.contains("Last error: ", literal=True))
    inline = (inline.filter(pl.col("text").str.contains(LAST_ERROR_INLINE))
              .join(found, on=["file", "line"], how="anti"))
    inline = inline.select("file", "line", pl.col("text").str.extract(LAST_ERROR_INLINE, 1).alias("msg"),
                           pl.lit("NCCL's last error").alias("where"),
                           *([pl.col("launch_rank").alias("rank")]
                             if "launch_rank" in inline.columns else []))
    events = pl.concat([
        inline.with_columns(pl.when(pl.col("msg").str.contains(IB_ERROR))
                            .then(pl.lit(EventKind.TRANSPORT_ERROR))
                            .when(reads_as("MISMATCH", "msg")).then(pl.lit(EventKind.COLLECTIVE_MISMATCH))
                            .otherwise(pl.lit(EventKind.NCCL_WARN)).alias("kind")),
        # NCCL's word that the ranks' sizes differ (`message truncated`) reports a mismatch, not the network
        warn.with_columns(pl.when(reads_as("MISMATCH", "msg")).then(pl.lit(EventKind.COLLECTIVE_MISMATCH))
                          .otherwise(pl.lit(EventKind.NCCL_WARN)).alias("kind"),
                          pl.col("src_loc").alias("where")),
        benign.with_columns(pl.lit(EventKind.BENIGN_WARN).alias("kind"), reason.alias("where")),
        retry.with_columns(pl.lit(EventKind.CONNECT_RETRY).alias("kind")),
        ib_err.with_columns(pl.lit(EventKind.TRANSPORT_ERROR).alias("kind")),
        unwind.with_columns(pl.lit(EventKind.NCCL_UNWIND).alias("kind")),
        settings.with_columns(pl.lit(EventKind.SETTING).alias("kind"),
                              pl.format("{}={}", "key", "value").alias("msg"),
                              pl.lit("nccl").alias("where")),
        destroyed.with_columns(pl.lit(EventKind.COMM_DESTROYED).alias("kind")),
    ], how="diagonal_relaxed")
    if events.height:
        events = with_rank(events).with_columns(pl.col("msg").alias("message"),
                                                message_name("msg").alias("message_id"))
        events = events.unique(["file", "line", "kind"], maintain_order=True)
    using = version_lines.filter(pl.col("text").str.contains(USING))
    if using.height:  # a version printed outside NCCL's banner: the version, and who printed it
        g = pl.col("text").str.extract_groups(USING).struct
        events = pl.concat([events, using.select(
            "file", "line", pl.lit(EventKind.VERSION).alias("kind"), g.field("version").alias("message"),
            g.field("where").alias("where"), pl.col("launch_rank").alias("rank"))], how="diagonal_relaxed")

    seen = _keep(df.select("file", "line", "host", "pid", "dev"), pl.col("host").is_not_null())
    if scanned is not None:
        seen = pl.concat([seen, scanned.streams.select(seen.columns)]).sort("file", "line")
    ranks = (
        seen.group_by(["file", "host", "pid"], maintain_order=True).agg(pl.col("dev").first().alias("_dev"))
        # a process of several GPUs: a row per GPU
        .join(proc_rank.drop("dev"), on=["host", "pid"], how="left")
        .with_columns(pl.coalesce("cuda_dev", "_dev").alias("cuda_dev")).drop("_dev")
        # a ring's order (`Channel 00/02 : 0 1 2 3`) lists every rank of its communicator: the world where no
        # line gave the size
        .join(ring.group_by("host", "pid").agg(pl.col("value").str.strip_chars().str.split(" ").list.eval(
            pl.element().filter(pl.element() != "")).list.len().max().cast(pl.Int64).alias("_ring")),
            on=["host", "pid"], how="left")
        .with_columns(pl.coalesce("world_size", "_ring").alias("world_size")).drop("_ring")
        .join(versions.group_by(["host", "pid"]).agg(pl.col("nccl_version").first()),
              on=["host", "pid"], how="left")
        .join(nnodes.group_by(["host", "pid"]).agg(pl.col("local_rank").first().cast(pl.Int64, strict=False)),
              on=["host", "pid"], how="left")
        # a rank numbered by counting a communicator's processes, not named by any line, says so
        .with_columns(pl.when(pl.struct("host", "pid")
                              .is_in(numbered.select("host", "pid").to_struct().implode()))
                      .then(pl.lit("nccl-count")).otherwise(pl.lit("nccl")).alias("source"))
    )
    if version_lines.height:
        # a bare "NCCL version" line belongs to the processes of its own file
        bare = (version_lines.select("file", pl.col("text").str.extract(VERSION, 1).alias("_v")).drop_nulls()
                .group_by("file", maintain_order=True).first())
        ranks = pl.concat([
            ranks.join(bare, on="file", how="left")
            .with_columns(pl.coalesce("nccl_version", "_v").alias("nccl_version")).drop("_v"),
            bare.join(ranks.select("file"), on="file", how="anti").select(
                "file", pl.col("_v").alias("nccl_version"), pl.lit("nccl").alias("source")),
        ], how="diagonal_relaxed")
    # ranks NCCL's words name, in a file where no process has a rank already (a file of one rank's, where
    # `Duplicate GPU detected : rank 1 and rank 0` names a peer too, keeps its own: ingest ties its
    # lines to it)
    ranked = pl.concat([ranks.filter(pl.col("rank").is_not_null()).select("file"),
                        told.select("file")]).unique()
    ranks = pl.concat([ranks, named_ranks(lines).join(ranked, on="file", how="anti")], how="diagonal_relaxed")
    # (the lines of ``scanned`` are counted by whoever read them apart; its streams' first lines here
    # name its files)
    # a line counts as understood when a decoder made a row of it or it is a known harmless shape;
    # an NCCL line whose message nothing here decodes is unknown
    decoded = [f.select("file", "line") for f in (
        versions, init, nnodes, conn, ring, trees, boot, net, ib_none, ib_err, ib_using, sock, old_boot,
        old_net, old_ib, nic_speed, settings, benign, unwind, retry, warn, rank_nranks, proxy, timings, comm_rank)]
    decoded.append(coll_lines.select("file", "line"))
    decoded.append(talk.filter(pl.col("msg").str.contains(KNOWN_INFO_ANY)).select("file", "line"))
    claimed = pl.concat(decoded + [version_lines.select("file", "line")]
                        + ([scanned.streams.select("file", "line")] if scanned is not None else []))
    return Parsed("nccl", {
        "comms": comms, "links": links, "collectives": collectives, "events": events, "ranks": ranks,
    }, claimed)
