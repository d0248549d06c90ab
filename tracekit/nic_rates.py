"""The rate of the NICs a cross-node collective's data crosses, where the log states it (session 33).

Read by ``fabric_rates.of`` and ``rules_nccl_tests`` before they fall back on a fabric's least rate (100 Gb/s per NIC
NCCL names) or on the 10 GB/s floor of any GPU fabric: a rate the log states is the yardstick itself. Two sources:

- NCCL's IB plugin (NCCL 2.19+, src/transport/net_ib.cc) states each device it uses, in Mb/s:
  ``NET/IB: [0] mlx5_0:uverbs0:1/RoCE provider=Mlx5 speed=100000 ...`` and, for the virtual devices it makes of
  them, ``NET/IB : Made virtual device [2] name=mlx5_0+mlx5_1 speed=200000 ndevs=2`` (parsers/nccl.py: ``links``
  rows ``what="nic_speed"``, ``iface`` the device, ``value`` Mb/s, ``channel`` the devices a virtual one merges).
  These are the devices NCCL uses (NCCL_IB_HCA applied): a node's rate is the sum of its distinct physical
  devices' (its virtual devices' where only they are said).
- A tool's word of a link (ibstat ``Rate: 200``, ibstatus ``rate: 100 Gb/sec (4X EDR)``, ethtool ``Speed:
  100000Mb/s``; parsers/result_tables.py: ``bandwidth`` events ``where="link_rate"``, GB/s): a host may list ports
  NCCL does not use, so the lowest stated rate stands for one NIC, times the NICs NCCL names (one where unnamed).

``per_gpu``: an all-to-all's, a send/recv's, a gather's or a scatter's busbw across nodes is one GPU's share of its
node's NICs (each GPU sends to its peers alone), where an all-reduce's rings run over every NIC of the node at once:
the yardstick of those tables is the node's rate over its GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.evidence import Evidence
from tracekit.outcome import EventKind

#: Mb/s in one GB/s
MBPS_PER_GBS = 8000.0


@dataclass(frozen=True)
class Stated:
    """A node's NIC rate (GB/s) the log states, and how it says it."""
    gbs: float
    says: str


def stated(ev: Evidence, nics: int = 0) -> Stated | None:
    """The NIC rate per node the log states (NCCL's own word first, then a tool's), else None. ``nics``: the NICs
    NCCL names (``NET/IB : Using [0]mlx5_0:1/IB ...``), 0 where unnamed."""
    return _nccl_said(ev) or _tool_said(ev, nics)


def _nccl_said(ev: Evidence) -> Stated | None:
    links = ev.store.links
    said = links.filter(pl.col("what") == "nic_speed") if links.height else links
    if not said.height:
        return None
    said = said.with_columns(pl.col("value").cast(pl.Float64, strict=False).alias("mbps")).filter(
        pl.col("mbps") > 0)
    phys = said.filter(pl.col("channel").is_null())
    use = phys if phys.height else said
    per = (use.unique(["host", "iface"]).group_by("host").agg(pl.col("mbps").sum(), pl.len().alias("n"),
                                                             pl.col("mbps").min().alias("one")))
    if not per.height:
        return None
    top = per.sort("mbps").row(-1, named=True)
    gbs = top["mbps"] / MBPS_PER_GBS
    each = top["one"] / 1000
    return Stated(gbs, f"{top['n']} NIC(s) NCCL states at {each:g} Gb/s each (`speed={top['one']:.0f}`), "
                       f"~{gbs:g} GB/s per node")


def _tool_said(ev: Evidence, nics: int) -> Stated | None:
    rates = ev.kinds(EventKind.BANDWIDTH).filter((pl.col("where") == "link_rate") & (pl.col("busbw_gbs") > 0))
    if not rates.height:
        return None
    low = rates.sort("busbw_gbs").row(0, named=True)
    n = max(nics, 1)
    gbs = low["busbw_gbs"] * n
    return Stated(gbs, f"the link's rate the log states (`{low['message'].strip()}`, ~{low['busbw_gbs']:g} GB/s)"
                       + (f" x {n} NICs NCCL names, ~{gbs:g} GB/s per node" if n > 1 else ""))


#: the collectives whose busbw across nodes is one GPU's share of its node's NICs: each GPU sends to its peers on
#: its own (nccl-tests' src/alltoall.cu, sendrecv.cu, gather.cu, scatter.cu: busbw = algbw x (n-1)/n or algbw),
#: where an all-reduce's rings and trees run over every NIC of the node at once
PER_PEER = ("all_to_all", "send", "gather", "scatter")


def per_gpu(large: pl.DataFrame, spans: bool, hosts: int, ranks: int, node_gpus: int) -> int:
    """The GPUs of a node whose NICs a cross-node table's busbw shares, where every large row (nccl-tests' rows at
    large sizes) is of a ``PER_PEER`` collective: its yardstick is the node's rate over this; else 1 (one host, or an
    all-reduce's rows). ``hosts``/``ranks``: what the header names (0 unsaid: ``node_gpus``, an HGX node's)."""
    if not spans or not large.height or not large["op"].is_in(PER_PEER).all():
        return 1
    return max(1, min(node_gpus, ranks // hosts)) if hosts > 1 and ranks else node_gpus
