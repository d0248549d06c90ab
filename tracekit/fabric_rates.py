"""The yardstick of a bus bandwidth measured across an RDMA fabric NCCL names (``via NET/IB``, ``via NET/AWS
Libfabric`` of the aws-ofi-nccl plugin over EFA, ``NET/OFI``): the lowest of the links its data crosses.

Asked by ``rules_nccl_tests.nccl_test_result`` where a table's busbw at large sizes stays under the 10 GB/s floor
of any GPU fabric: that floor assumes a fabric built for multi-node training; a run that states its fabric has
its own. The log rarely states a NIC's rate (NCCL_DEBUG=INFO names the NICs, ``NET/IB : Using [0]mlx5_0:1/IB``,
and ``NET/OFI Selected Provider is efa``, without a speed), so the fabric's lowest rate stands for it: InfiniBand
EDR or a RoCE NIC of 100 Gb/s per NIC NCCL names, EFA of 100 Gb/s (the instance types of its first generations;
later ones carry more, so the yardstick is the least). The data also crosses each GPU's own link to the host:
a PCIe board's (link_rates.PCIE_GEN: a T4 is PCIe Gen3 x16, ~10 GB/s busbw) caps what the fabric can give it.
A busbw under a third of the lowest of these is far below it (slow); at a third or more it is what that path
gives: healthy where the table reached its end, undecided where it did not (a hang at the next size or a cut
paste: the rest of the output decides). (s33) Where the log states the NICs' rate (nic_rates: NCCL's ``speed=``, ibstat,
ethtool), that rate replaces the fabric's least one.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit import link_rates, nic_rates
from tracekit.evidence import Evidence, lines
from tracekit.outcome import Cited, Kind, Verdict

#: (transport NCCL logged, fabric, its lowest rate in GB/s per NIC): 100 Gb/s = 12.5 GB/s
FABRICS: tuple[tuple[str, str, float], ...] = (
    ("NET/AWS", "EFA (aws-ofi-nccl), 100 Gb/s at the least", 12.5),
    ("NET/OFI", "libfabric (aws-ofi-nccl), 100 Gb/s at the least", 12.5),
    ("NET/IB", "InfiniBand/RoCE, 100 Gb/s (EDR) at the least per NIC", 12.5),
)


@dataclass(frozen=True)
class Yardstick:
    """The lowest rate (GB/s) of the links a cross-node collective's data crosses, and what they are."""
    gbs: float
    says: str


def of(ev: Evidence, transport: str, nics: int) -> Yardstick | None:
    """The yardstick of a run whose connections NCCL logged over an RDMA fabric (``transport``: its kinds, as
    ``NET/AWS, SHM``; ``nics``: the NICs NCCL named, 0 where unnamed), else None (a socket, no transport)."""
    kinds = {k.strip() for k in transport.split(",") if k.strip()}
    if any("Socket" in k for k in kinds):
        return None
    fabric = next(((name, gbs) for t, name, gbs in FABRICS if any(k.startswith(t) for k in kinds)), None)
    if not fabric:
        return None
    name, gbs = fabric
    gbs, said = gbs * max(nics, 1), f"{name}{f', {nics} NICs' if nics > 1 else ''} (~{gbs * max(nics, 1):g} GB/s)"
    if told := nic_rates.stated(ev, nics):  # (s33: the rate the log states is the yardstick, not the least one)
        gbs, said = told.gbs, f"{name.split(',')[0]}: {told.says}"
    gpu = link_rates.gpu_named(ev)
    path = link_rates.path_of(gpu) if gpu else None
    if path and path.name.startswith("PCIe") and path.low and path.low < gbs:
        gbs, said = path.low, f"{said}, and each {gpu}'s own {path.name.split(' (')[0]} x16 link (~{path.low:g} GB/s)"
    return Yardstick(gbs, said)


def judge(yard: Yardstick, large: pl.DataFrame, ends: pl.DataFrame, ended: bool, what: str) -> Verdict | None:
    """Slow where the peak busbw at large sizes is under a third of the yardstick; at a third or more healthy
    where the table reached its end (``ended``), else undecided (a table that stops short never reads healthy)."""
    top = large.sort("busbw_gbs").tail(1).row(0, named=True)
    cited = [Cited(top["file"], top["line"], top["message"])] + lines(ends, 2)
    figure = f"busbw at most {top['busbw_gbs']:g} GB/s at {top['bytes'] / 2**20:.0f} MB, with no wrong value"
    if top["busbw_gbs"] < link_rates.FAR_BELOW * yard.gbs:
        return Verdict(Kind.SLOW_PROGRESS, f"{what}: {figure}: under a third of the lowest rate of the links it "
                       f"crosses ({yard.says}); the collectives complete, slowly: check each NIC's rate (ibstat, "
                       "fi_info -p efa), GPUDirect RDMA (`GDRDMA` in NCCL's channel lines) and the NICs NCCL uses",
                       [], cited)
    if not ended:
        return Verdict(Kind.UNDECIDED, f"{what}: {figure}, at a third or more of the lowest rate of the links it "
                       f"crosses ({yard.says}): not slow by that yardstick, but the table has no end line and does "
                       "not reach the largest size asked: the test hangs at the next size or the output ends there; "
                       "the rest of the output (`# Out of bounds values`, `# Avg bus bandwidth`) decides it", [],
                       cited)
    return Verdict(Kind.HEALTHY, f"{what}: {figure}: every size completed on every rank (nccl-tests prints a row "
                   f"only then), at a third or more of the lowest rate of the links it crosses ({yard.says}): "
                   "what that path gives, not slow; a faster fabric or NVLink-class GPUs would give more, which "
                   "the NICs' rate (ibstat, the instance type) tells", [], cited)
