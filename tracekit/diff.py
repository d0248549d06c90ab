"""``tracekit diff``: what differs between two runs of the same job, most telling first.

Each ``Difference`` names an area (layout, versions, network, transports, channels, sequence,
bandwidth, settings, packages), what A and B had, and how much it tends to explain a hang or a
slowdown (``weight``: a different transport or node layout explains more than a package patch
level). Areas where the two runs agree are listed in ``same``, so "no difference" is an answer
too, not a silence.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import polars as pl

from tracekit.store import Store


@dataclass
class Difference:
    area: str
    what: str
    a: str
    b: str
    weight: int

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Comparison:
    differences: list[Difference]
    same: list[str]
    bandwidth: pl.DataFrame  # op, size bucket, algbw / busbw of A and B

    def to_dict(self) -> dict:
        return {"differences": [d.to_dict() for d in self.differences], "same": self.same,
                "bandwidth": self.bandwidth.to_dicts()}


def _join(values) -> str:
    vals = sorted({str(v) for v in values if v is not None and v == v})
    return ", ".join(vals) if vals else "-"


def layout(s: Store) -> dict[str, str]:
    """World size, node count and ranks per node, from whichever source says it."""
    r = s.ranks
    world = r["world_size"].drop_nulls().max() if r.height else None
    hosts = r["host"].drop_nulls().n_unique() if r.height else 0
    nnodes = s.comms["nnodes"].drop_nulls().max() if s.comms.height else None
    nodes_by_node = r["node"].drop_nulls().n_unique() if r.height else 0
    nodes = nnodes or (nodes_by_node if nodes_by_node > 1 else None) or hosts or None
    ranks = r["rank"].drop_nulls().n_unique() if r.height else 0
    world = world or ranks or None
    per_node = f"{world // nodes}" if world and nodes and world % nodes == 0 else "?"
    return {"world size": str(world or "?"), "nodes": str(nodes or "?"), "ranks per node": per_node}


def _versions(s: Store) -> dict[str, str]:
    r = s.ranks
    return {k: _join(r[c].to_list()) for k, c in
            (("NCCL", "nccl_version"), ("torch", "torch_version"), ("DeepSpeed", "deepspeed_version"))}


def _network(s: Store) -> dict[str, str]:
    L = s.links
    w = pl.col("what")
    boot = L.filter(w == "bootstrap")
    return {
        "chosen network": _join(L.filter(w == "network")["value"].to_list()),
        "bootstrap interface": _join(boot["iface"].to_list()),
        "bootstrap address family": _join(boot["family"].to_list()),
        "IB devices": "none found" if L.filter(w == "ib_not_found").height and not L.filter(w == "ib_devices").height
        else _join(L.filter(w == "ib_devices")["value"].to_list()) if L.filter(w == "ib_devices").height else "-",
        "socket interfaces": _join(L.filter(w == "socket_devices")["iface"].to_list()),
    }


def transports(s: Store) -> pl.DataFrame:
    """Connections per transport kind, split into same-host and cross-host pairs."""
    c = s.links.filter(pl.col("what") == "connection")
    if not c.height:
        return pl.DataFrame(schema={"transport_kind": pl.Utf8, "connections": pl.UInt32})
    return c.group_by("transport_kind").agg(pl.len().alias("connections")).sort("transport_kind")


def _channels(s: Store) -> dict[str, str]:
    L = s.links
    conn = L.filter(pl.col("what") == "connection")
    rings = L.filter(pl.col("what") == "ring")
    return {"channels": str(conn["channel"].max() + 1) if conn.height else "-",
            "ring orders": _join(rings["value"].str.replace_all(r"\s+", " ").to_list()) if rings.height else "-"}


def sequence(s: Store) -> pl.DataFrame:
    """One rank's collective sequence on its largest group: (op, bytes or count, dtype) in order."""
    c = s.collectives
    if not c.height:
        return pl.DataFrame(schema={"i": pl.UInt32, "op": pl.Utf8, "size": pl.Int64, "dtype": pl.Utf8})
    for source in ("fr", "nccl", "kineto"):
        sub = c.filter(pl.col("source") == source)
        if sub.height:
            break
    rank = sub["rank"].drop_nulls().min()
    sub = sub.filter(pl.col("rank") == rank) if rank is not None else sub
    pg = sub.group_by("pg").len().sort("len", descending=True)["pg"][0]
    sub = sub.filter(pl.col("pg") == pg).sort("seq").unique("seq", keep="first", maintain_order=True)
    return sub.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("i"), "op",
                      pl.coalesce("bytes", "count").alias("size"), "dtype")


def first_divergence(a: pl.DataFrame, b: pl.DataFrame) -> tuple[int, str, str] | None:
    """Index and the two calls where the sequences first differ (None when one is a prefix of the other)."""
    n = min(a.height, b.height)
    if not n:
        return None
    j = a.head(n).join(b.head(n), on="i", suffix="_b")
    diff = j.filter((pl.col("op") != pl.col("op_b")) | (pl.col("size") != pl.col("size_b")).fill_null(False)
                    | (pl.col("dtype") != pl.col("dtype_b")).fill_null(False))
    if not diff.height:
        return None
    r = diff.row(0, named=True)
    return r["i"], f"{r['op']} {r['size']} {r['dtype']}", f"{r['op_b']} {r['size_b']} {r['dtype_b']}"


def bandwidth(s: Store) -> pl.DataFrame:
    """Bus bandwidth by op and power-of-two message size, from measurements and timed collectives."""
    ev = s.events.filter(pl.col("busbw_gbs").is_not_null() & pl.col("bytes").is_not_null()).select(
        "op", "bytes", "duration_ms", "algbw_gbs", "busbw_gbs")
    timed = s.collectives.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null()
                                 & (pl.col("end_ns") > pl.col("start_ns")) & pl.col("bytes").is_not_null())
    if timed.height:
        n = pl.col("nranks").fill_null(2).cast(pl.Float64)
        factor = (pl.when(pl.col("op") == "all_reduce").then(2 * (n - 1) / n)
                  .when(pl.col("op").is_in(["all_gather", "reduce_scatter", "all_to_all"])).then((n - 1) / n)
                  .otherwise(1.0))
        algbw = pl.col("bytes") / (pl.col("end_ns") - pl.col("start_ns"))  # bytes/ns = GB/s
        ev = pl.concat([ev, timed.select(
            "op", "bytes", ((pl.col("end_ns") - pl.col("start_ns")) / 1e6).alias("duration_ms"),
            algbw.alias("algbw_gbs"), (algbw * factor).alias("busbw_gbs"))], how="vertical_relaxed")
    if not ev.height:
        return pl.DataFrame(schema={"op": pl.Utf8, "size": pl.Int64, "algbw_gbs": pl.Float64, "busbw_gbs": pl.Float64, "n": pl.UInt32})
    return (ev.with_columns((2 ** pl.col("bytes").cast(pl.Float64).log(2).round()).cast(pl.Int64).alias("size"))
            .group_by("op", "size").agg(pl.col("algbw_gbs").median(), pl.col("busbw_gbs").median(), pl.len().alias("n"))
            .sort("op", "size"))


def _settings(s: Store, kind: str) -> dict[str, str]:
    kv = s.events.filter(pl.col("kind") == kind)["message"].drop_nulls()
    out = {}
    for m in kv.to_list():
        k, sep, v = m.partition("==" if kind == "package" else "=")
        out.setdefault(k, set()).add(v)
    return {k: ", ".join(sorted(v)) for k, v in out.items()}


def _size(n: int) -> str:
    for unit, f in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{n} B"


def compare(a: Store, b: Store) -> Comparison:
    diffs: list[Difference] = []
    same: list[str] = []

    def cmp(area: str, da: dict, db: dict, weight: int) -> None:
        for k in dict.fromkeys(list(da) + list(db)):
            va, vb = da.get(k, "-"), db.get(k, "-")
            if va == vb:
                if va != "-":
                    same.append(f"{area}: {k} {va}")
            elif va != "-" or vb != "-":
                diffs.append(Difference(area, k, va, vb, weight))

    cmp("layout", layout(a), layout(b), 100)
    ta, tb = transports(a), transports(b)
    kinds_a = {r["transport_kind"]: r["connections"] for r in ta.iter_rows(named=True)}
    kinds_b = {r["transport_kind"]: r["connections"] for r in tb.iter_rows(named=True)}
    cmp("transports", {"transports": _join(kinds_a) if kinds_a else "-"}, {"transports": _join(kinds_b) if kinds_b else "-"}, 95)
    for k in sorted(set(kinds_a) | set(kinds_b)):
        if kinds_a.get(k) != kinds_b.get(k) and (kinds_a and kinds_b):
            diffs.append(Difference("transports", f"{k} connections", str(kinds_a.get(k, 0)), str(kinds_b.get(k, 0)), 60))
    cmp("network", _network(a), _network(b), 90)
    sa, sb = sequence(a), sequence(b)
    d = first_divergence(sa, sb)
    if d:
        diffs.append(Difference("sequence", f"collective #{d[0]} of the main group (first difference)", d[1], d[2], 85))
    elif sa.height and sb.height:
        same.append(f"sequence: the first {min(sa.height, sb.height)} collectives of the main group")
        if sa.height != sb.height:
            diffs.append(Difference("sequence", "collectives seen on the main group", str(sa.height), str(sb.height), 30))
    cmp("versions", _versions(a), _versions(b), 70)
    cmp("channels", _channels(a), _channels(b), 50)
    bw_a, bw_b = bandwidth(a), bandwidth(b)
    bw = bw_a.join(bw_b, on=["op", "size"], how="full", suffix="_b", coalesce=True).sort("op", "size")
    both = bw.filter(pl.col("busbw_gbs").is_not_null() & pl.col("busbw_gbs_b").is_not_null())
    if both.height:
        big = both.sort("size").tail(1).row(0, named=True)
        ratio = big["busbw_gbs_b"] / big["busbw_gbs"] if big["busbw_gbs"] else math.inf
        if not 0.8 <= ratio <= 1.25:
            diffs.append(Difference("bandwidth", f"{big['op']} bus bandwidth at {_size(big['size'])}",
                                    f"{big['busbw_gbs']:.2f} GB/s", f"{big['busbw_gbs_b']:.2f} GB/s ({ratio:.2g}x)", 80))
        else:
            same.append(f"bandwidth: {big['op']} at {_size(big['size'])} within 25%")
    env_a, env_b = _settings(a, "setting"), _settings(b, "setting")
    skip = ("TRACEKIT_", "NCCL_DEBUG_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "MASTER_PORT")
    cmp("settings", {k: v for k, v in env_a.items() if not k.startswith(skip)},
        {k: v for k, v in env_b.items() if not k.startswith(skip)}, 65)
    # the training framework's own arguments (ms-swift prints them all); paths made per run are noise
    own = ("output_dir", "logging_dir", "run_name", "local_rank", "hub_model_id", "ckpt_dir")
    cmp("arguments", {k: v for k, v in _settings(a, "train_arg").items() if k not in own},
        {k: v for k, v in _settings(b, "train_arg").items() if k not in own}, 62)
    cmp("packages", _settings(a, "package"), _settings(b, "package"), 40)
    diffs.sort(key=lambda x: -x.weight)
    return Comparison(diffs, same, bw)


def _short(v: str, n: int = 60) -> str:
    return v if len(v) <= n else v[: n - 3] + "..."


def render(c: Comparison, name_a: str = "A", name_b: str = "B") -> str:
    lines = [f"A = {name_a}", f"B = {name_b}", ""]
    if not c.differences:
        lines.append("no differences found in what both runs logged")
    width = max((len(f"{d.area}: {d.what}") for d in c.differences), default=0)
    for d in c.differences:
        lines.append(f"{(d.area + ': ' + d.what):<{width}}  A {_short(d.a)}  |  B {_short(d.b)}")
    if c.bandwidth.height:
        lines += ["", "bus bandwidth (GB/s) by message size:", f"  {'op':<14}{'size':>10}{'A':>10}{'B':>10}"]
        for r in c.bandwidth.iter_rows(named=True):
            fa = "-" if r["busbw_gbs"] is None else f"{r['busbw_gbs']:.2f}"
            fb = "-" if r["busbw_gbs_b"] is None else f"{r['busbw_gbs_b']:.2f}"
            lines.append(f"  {r['op']:<14}{_size(r['size']):>10}{fa:>10}{fb:>10}")
    if c.same:
        lines += ["", "same in both: " + "; ".join(c.same[:12]) + (f"; ... {len(c.same) - 12} more" if len(c.same) > 12 else "")]
    return "\n".join(lines)
