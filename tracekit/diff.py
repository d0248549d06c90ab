"""``tracekit diff``: why run A is slower than run B, or hung where B was not.

A ``Comparison`` answers in the order a person asks: both verdicts; then the figures of speed
(``FIGURES``: step time, collectives per second, time in collectives, bus bandwidth), each with
where it came from or why it is missing; then what differs in how the runs were set up
(``Difference``: layout, transports, network, sequence, DeepSpeed's configuration block, versions,
channels, settings, arguments, packages), most telling first by ``weight``. Areas where the runs
agree are listed in ``same``, so "no difference" is an answer too, not a silence.

This module compares; it writes nothing. ``compare`` gives a ``Comparison`` (verdicts as
``outcome.Verdict``, figures as ``figures.Figure``), which the renderers take: the terminal's
``reports/diff.py``, the JSON of ``Comparison.to_dict``, and the report's HTML and markdown
(``reports/report.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import polars as pl

from tracekit import sources, traffic, verdict
from tracekit.figures import (Figure, bandwidth, bus_bandwidth, collective_rate, step_first, step_median,
                              time_in_collectives, world_size)
from tracekit.outcome import EventKind, Verdict
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
class Row:
    """A figure of both runs: A / B is printed as a ratio where both have one."""

    what: str
    a: Figure
    b: Figure

    def ratio(self) -> float | None:
        if self.a.value is None or self.b.value is None or not self.b.value:
            return None
        return self.a.value / self.b.value

    def to_dict(self) -> dict:
        return {"what": self.what, "a": asdict(self.a), "b": asdict(self.b),
                "a_over_b": self.ratio()}


@dataclass
class Comparison:
    """Two runs compared: what every renderer of ``tracekit diff`` (and the report's comparison)
    takes. ``to_dict`` is the JSON of ``tracekit diff --json``."""

    verdicts: dict[str, Verdict]  # "a", "b"
    figures: list[Row]
    differences: list[Difference]
    same: list[str]
    bandwidth: pl.DataFrame  # op, size (bucket), algbw_gbs, busbw_gbs, n, source; of B with suffix _b
    names: dict[str, str] = field(default_factory=lambda: {"a": "A", "b": "B"})

    def to_dict(self) -> dict:
        return {"names": self.names, "verdicts": {k: v.to_dict() for k, v in self.verdicts.items()},
                "figures": [r.to_dict() for r in self.figures],
                "differences": [d.to_dict() for d in self.differences], "same": self.same,
                "bandwidth": self.bandwidth.to_dicts()}


def run_name(path: str | Path) -> str:
    """A short name for a run: its folder's name (the folder above a ``.tracekit`` store)."""
    p = Path(path).resolve()
    if p.name == ".tracekit":
        p = p.parent
    return p.name or str(path)


def _join(values) -> str:
    vals = sorted({str(v) for v in values if v is not None and v == v})
    return ", ".join(vals) if vals else "-"


#: The figures of speed, in the order diff prints them. Issue 20's "collective traffic per step"
#: (bytes each rank moves per step, from NCCL COLL lines) goes right after time in collectives.
FIGURES: list[tuple[str, Callable[[Store], Figure]]] = [
    ("step time, first step", step_first),
    ("step time, median", step_median),
    ("collectives per second", collective_rate),
    ("time in collectives", time_in_collectives),
    ("collective traffic per step", traffic.per_step),
    ("collective traffic per micro-step", traffic.per_micro_step),
    ("bus bandwidth", bus_bandwidth),
]


# --- how the runs were set up -----------------------------------------------------------------

def layout(s: Store) -> dict[str, str]:
    """World size, node count and ranks per node, from whichever source says it."""
    r = s.ranks
    hosts = r["host"].drop_nulls().n_unique() if r.height else 0
    nnodes = s.comms["nnodes"].drop_nulls().max() if s.comms.height else None
    nodes_by_node = r["node"].drop_nulls().n_unique() if r.height else 0
    nodes = nnodes or (nodes_by_node if nodes_by_node > 1 else None) or hosts or None
    world = world_size(s)
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
    ib = L.filter(w == "ib_devices")
    return {
        "chosen network": _join(L.filter(w == "network")["value"].to_list()),
        "bootstrap interface": _join(boot["iface"].to_list()),
        "bootstrap address family": _join(boot["family"].to_list()),
        "IB devices": ("none found" if L.filter(w == "ib_not_found").height and not ib.height
                       else _join(ib["value"].to_list()) if ib.height else "-"),
        "socket interfaces": _join(L.filter(w == "socket_devices")["iface"].to_list()),
    }


def transports(s: Store) -> pl.DataFrame:
    """Connections per transport kind."""
    c = s.links.filter(pl.col("what") == "connection")
    if not c.height:
        return pl.DataFrame(schema={"transport_kind": pl.Utf8, "connections": pl.UInt32})
    return c.group_by("transport_kind").agg(pl.len().alias("connections")).sort("transport_kind")


def _channels(s: Store) -> dict[str, str]:
    L = s.links
    conn = L.filter(pl.col("what") == "connection")
    rings = L.filter(pl.col("what") == "ring")
    orders = rings["value"].str.replace_all(r"\s+", " ").to_list()
    return {"channels": str(conn["channel"].max() + 1) if conn.height else "-",
            "ring orders": _join(orders) if rings.height else "-"}


def sequence(s: Store) -> pl.DataFrame:
    """One rank's collective sequence on its largest group: (op, bytes or count, dtype) in order."""
    c = s.collectives
    if not c.height:
        return pl.DataFrame(schema={"i": pl.UInt32, "op": pl.Utf8, "size": pl.Int64, "dtype": pl.Utf8})
    sub, _ = sources.best(c)
    rank = sub["rank"].drop_nulls().min()
    sub = sub.filter(pl.col("rank") == rank) if rank is not None else sub
    pg = sub.group_by("pg").len().sort("len", descending=True)["pg"][0]
    sub = sub.filter(pl.col("pg") == pg).sort("seq").unique("seq", keep="first", maintain_order=True)
    return sub.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("i"), "op",
                      pl.coalesce("bytes", "count").alias("size"), "dtype")


def first_divergence(a: pl.DataFrame, b: pl.DataFrame) -> tuple[int, str, str] | None:
    """Index and the two calls where the sequences first differ (None when one is a prefix of the
    other)."""
    n = min(a.height, b.height)
    if not n:
        return None
    j = a.head(n).join(b.head(n), on="i", suffix="_b")
    differs = [(pl.col(c) != pl.col(f"{c}_b")).fill_null(False) for c in ("size", "dtype")]
    diff = j.filter((pl.col("op") != pl.col("op_b")) | differs[0] | differs[1])
    if not diff.height:
        return None
    r = diff.row(0, named=True)
    return r["i"], f"{r['op']} {r['size']} {r['dtype']}", f"{r['op_b']} {r['size_b']} {r['dtype_b']}"


def _settings(s: Store, kind: EventKind) -> dict[str, str]:
    kv = s.events.filter(pl.col("kind") == kind)["message"].drop_nulls()
    out = {}
    for m in kv.to_list():
        k, sep, v = m.partition("==" if kind == EventKind.PACKAGE else "=")
        out.setdefault(k, set()).add(v)
    return {k: ", ".join(sorted(v)) for k, v in out.items()}


def _setup(a: Store, b: Store) -> tuple[list[Difference], list[str]]:
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
    kinds_a = dict(transports(a).iter_rows())
    kinds_b = dict(transports(b).iter_rows())
    cmp("transports", {"transports": _join(kinds_a) if kinds_a else "-"},
        {"transports": _join(kinds_b) if kinds_b else "-"}, 95)
    for k in sorted(set(kinds_a) | set(kinds_b)):
        if kinds_a.get(k) != kinds_b.get(k) and (kinds_a and kinds_b):
            diffs.append(Difference("transports", f"{k} connections", str(kinds_a.get(k, 0)),
                                    str(kinds_b.get(k, 0)), 60))
    cmp("network", _network(a), _network(b), 90)
    sa, sb = sequence(a), sequence(b)
    d = first_divergence(sa, sb)
    if d:
        diffs.append(Difference("sequence", f"collective #{d[0]} of the main group (first difference)",
                                d[1], d[2], 85))
    elif sa.height and sb.height:
        same.append(f"sequence: the first {min(sa.height, sb.height)} collectives of the main group")
        if sa.height != sb.height:
            diffs.append(Difference("sequence", "collectives seen on the main group", str(sa.height),
                                    str(sb.height), 30))
    # DeepSpeed's configuration block (parsers/deepspeed_config.py): ZeRO stage, offload, buckets, batch
    cmp("deepspeed", _settings(a, EventKind.DEEPSPEED_CONFIG), _settings(b, EventKind.DEEPSPEED_CONFIG), 80)
    cmp("versions", _versions(a), _versions(b), 70)
    cmp("channels", _channels(a), _channels(b), 50)
    env_a, env_b = _settings(a, EventKind.SETTING), _settings(b, EventKind.SETTING)
    skip = ("TRACEKIT_", "NCCL_DEBUG_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "MASTER_PORT")
    cmp("settings", {k: v for k, v in env_a.items() if not k.startswith(skip)},
        {k: v for k, v in env_b.items() if not k.startswith(skip)}, 65)
    # the training framework's own arguments (ms-swift prints them all); paths made per run are noise
    own = ("output_dir", "logging_dir", "run_name", "local_rank", "hub_model_id", "ckpt_dir")
    cmp("arguments", {k: v for k, v in _settings(a, EventKind.TRAIN_ARG).items() if k not in own},
        {k: v for k, v in _settings(b, EventKind.TRAIN_ARG).items() if k not in own}, 62)
    cmp("packages", _settings(a, EventKind.PACKAGE), _settings(b, EventKind.PACKAGE), 40)
    diffs.sort(key=lambda x: -x.weight)
    return diffs, same


def compare(a: Store, b: Store, verdict_a: Verdict | None = None, verdict_b: Verdict | None = None,
            names: tuple[str, str] = ("A", "B")) -> Comparison:
    """Verdicts (``verdict.decide`` unless given), figures of speed, then the setup differences."""
    va = verdict_a or verdict.decide(a)
    vb = verdict_b or verdict.decide(b)
    figures = [Row(what, f(a), f(b)) for what, f in FIGURES]
    diffs, same = _setup(a, b)
    bw = (bandwidth(a).join(bandwidth(b), on=["op", "size"], how="full", suffix="_b", coalesce=True)
          .sort("op", "size"))
    return Comparison({"a": va, "b": vb}, figures, diffs, same, bw, {"a": names[0], "b": names[1]})
