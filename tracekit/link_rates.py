"""What a GPU's path gives a collective at large sizes: one small table, read against the GPU the excerpt
names (issue 31, session 25).

nccl-tests' header names each rank's GPU (``#  Rank  0 Group  0 Pid  19124 on 7773x device  0 [0000:85:00]
NVIDIA GeForce RTX 4090``; NVIDIA/nccl-tests src/common.cu prints ``prop.name`` there): parsers/nccl_tests.py
keeps the name as a ``bandwidth`` event ``where="device"``. On one host, the GPUs' own interconnect carries a
collective: NVLink on the SXM/HGX boards, PCIe otherwise; NCCL's transport (``via P2P/NVL``, ``via SHM``,
``via NET/Socket``) says where it took another path.

The all_reduce bus bandwidth (GB/s) at large sizes (256 MB and up) on one host, low to high:

- NVLink, from NVIDIA's published nccl-tests figures and NVLink rates (nccl-tests doc/PERFORMANCE.md: busbw
  compares with the hardware's peak; NVLink per GPU: V100 6 x 25 GB/s = 150 (2 GPUs of a DGX-1 share 1-2
  links: ~25-50), A100 12 x 25 = 300 (~230 busbw on 8), A800/H800 8 links = 200 (~150-180), H100/H200/H20
  18 x 25 = 450 (~360-480), B200 900 (~650-800));
- PCIe x16 per direction: Gen3 ~12, Gen4 ~25, Gen5 ~50 GB/s raw; all_reduce busbw through the host's root
  complex ~10 / ~20 / ~40 (GeForce and PCIe boards: V100-PCIE, T4 Gen3; A100-PCIE, A10, A40, L40(S),
  RTX 30xx/40xx Gen4; H100 PCIe Gen5).

A large-size figure under ``FAR_BELOW`` of the path's low end is far below what the path gives (slow); at or
above it, it is what the path gives. Across nodes the NICs carry it: rules_nccl_tests and rules_measured read
the NICs' rates the excerpt states.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from tracekit.evidence import Evidence
from tracekit.outcome import Cited, Kind, Verdict
from tracekit.schema import EventKind

#: a figure under this share of the path's low end is far below what the path gives
FAR_BELOW = 1 / 3
#: a figure at this share of the path's low end or above is what the path gives
NEAR = 0.7

#: (pattern over the GPU's name, path, low, high GB/s all_reduce busbw at large sizes on one host); the first
#: match wins, so a PCIe board is matched before its SXM sibling's family name
PATHS: tuple[tuple[str, str, float, float], ...] = (
    (r"(?i)\bPCI-?E\b|GeForce|\bRTX\b|TITAN|Quadro|\bL40S?\b|\bA40\b|\bA10G?\b|\bA30\b|\bL4\b|\bT4\b|\bA16\b|\bA2\b"
     r"|\bH100 NVL\b|\bV100S?-PCIE|\bP100-PCIE|\bP40\b", "PCIe", 0.0, 0.0),  # (generation: PCIE_GEN below)
    (r"(?i)\bB200\b|\bB300\b|\bGB200\b|\bGB300\b", "NVLink 5 (B200)", 650.0, 800.0),
    (r"(?i)\bH800\b|\bA800\b", "NVLink of 8 links (A800/H800, 200 GB/s per GPU)", 150.0, 180.0),
    (r"(?i)\bH100\b|\bH200\b|\bH20\b|\bGH200\b", "NVLink 4 (H100/H200, 450 GB/s per GPU)", 360.0, 480.0),
    (r"(?i)\bA100\b", "NVLink 3 (A100, 300 GB/s per GPU)", 200.0, 240.0),
    (r"(?i)\bV100\b", "NVLink 2 (V100; a pair of a DGX-1 shares 1-2 links)", 40.0, 130.0),
)
#: a PCIe board's generation from its name, and what all_reduce's busbw reaches through it
PCIE_GEN: tuple[tuple[str, str, float], ...] = (
    (r"(?i)\bH100\b|\bH200\b|\bRTX PRO 6000 Blackwell|\bRTX 50\d0\b|\bB\d00\b", "PCIe Gen5", 40.0),
    (r"(?i)\bA100\b|\bA40\b|\bA10G?\b|\bA30\b|\bL40S?\b|\bL4\b|\bA16\b|\bA2\b|\bRTX (?:30|40)\d0\b"
     r"|\bRTX A\d000\b|\bRTX \d000 Ada\b", "PCIe Gen4", 20.0),
    (r"(?i)\bV100|\bT4\b|\bP100|\bP40\b|\bTITAN|\bRTX 20\d0\b|GTX|Quadro", "PCIe Gen3", 10.0),
)
#: NCCL's transports that leave the GPUs' own links (a socket, shared host memory)
OFF_PATH = ("NET/Socket", "SHM", "NET/IB")


@dataclass(frozen=True)
class Path:
    """What carries a one-host collective and what it gives: ``low``-``high`` GB/s all_reduce busbw."""
    gpu: str
    name: str
    low: float
    high: float

    def says(self) -> str:
        """``NVLink 3 (A100, ...) between the NVIDIA A100-SXM4-80GB GPUs, ~200-240 GB/s busbw``"""
        span = f"~{self.low:g}-{self.high:g}" if self.high > self.low else f"~{self.low:g}"
        return f"{self.name} between the {self.gpu} GPUs, {span} GB/s all_reduce busbw at large sizes"


def path_of(gpu: str) -> Path | None:
    """The path and its figures for a GPU's name, None where the table has no such GPU."""
    for pattern, name, low, high in PATHS:
        if re.search(pattern, gpu):
            if name != "PCIe":
                return Path(gpu, name, low, high)
            for gen_pattern, gen, gbs in PCIE_GEN:
                if re.search(gen_pattern, gpu):
                    return Path(gpu, f"{gen} (no NVLink between these GPUs)", gbs, gbs)
            return None
    return None


def gpu_named(ev: Evidence) -> str | None:
    """The one GPU model the excerpt's benchmark header names (every rank the same), else None."""
    said = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "device")["message"].drop_nulls().unique()
    return said[0] if said.len() == 1 else None


def one_host_path(ev: Evidence, transport: str) -> Path | None:
    """The path a one-host test's collectives take: the named GPU's own links, unless NCCL logged that its
    connections took another (``transport``: rules_nccl_tests.transport_logged)."""
    gpu = gpu_named(ev)
    if not gpu or any(t in transport for t in OFF_PATH):
        return None
    return path_of(gpu)


#: the collectives whose bus bandwidth nccl-tests scales to the links' rate alike (src/all_reduce.cu,
#: all_gather.cu, reduce_scatter.cu: busbw = algbw x (n-1)/n or 2(n-1)/n); all-to-all's and send/recv's
#: figures cross other paths (a PXN hop, one peer) and stay out
SCALED = ("all_reduce", "all_gather", "reduce_scatter")


def far_below(path: Path, large: pl.DataFrame, what: str) -> Verdict | None:
    """A one-host collective's peak busbw at large sizes under ``FAR_BELOW`` of what its path gives: slow,
    both figures and the path said. ``large``: nccl-tests' rows at large sizes; ``what``: the test's name."""
    rows = large.filter(pl.col("op").is_in(SCALED))
    if not rows.height or not path.low:
        return None
    top = rows.sort("busbw_gbs").row(-1, named=True)
    if top["busbw_gbs"] <= 0 or top["busbw_gbs"] >= FAR_BELOW * path.low:
        return None
    return Verdict(Kind.SLOW_PROGRESS, f"{what}: busbw at most {top['busbw_gbs']:g} GB/s at large sizes "
                   f"({top['bytes'] / 2**20:.0f} MB), under a third of what the path gives ({path.says()}), with "
                   "no wrong value: the collectives complete, slowly: check that NCCL uses the GPUs' own "
                   "links (NCCL_DEBUG=INFO: `via P2P/NVL` or `via P2P/CUMEM`, not `via SHM` or `NET`), "
                   "nvidia-smi topo -m, NCCL_P2P_DISABLE/NCCL_P2P_LEVEL unset, and the PCIe links' width "
                   "and generation (nvidia-smi -q: Link Width, Generation)", [],
                   [Cited(top["file"], top["line"], top["message"])])


def near(path: Path, large: pl.DataFrame) -> bool:
    """Whether the peak at large sizes is what the path gives (``NEAR`` of its low end or above)."""
    return bool(large.height and path.low and large["busbw_gbs"].max() >= NEAR * path.low)


def gives(path: Path, large: pl.DataFrame) -> str:
    """``; 25.95 GB/s at large sizes is what the path gives (PCIe Gen4 ...)`` where the peak at large
    sizes reaches ``FAR_BELOW`` of the path's low end, else empty."""
    if not large.height or not path.low:
        return ""
    top = large["busbw_gbs"].max()
    if top < FAR_BELOW * path.low:
        return ""
    if top >= NEAR * path.low:
        return f"; {top:g} GB/s busbw at large sizes is what the path gives ({path.says()})"
    return f"; {top:g} GB/s busbw at large sizes is under what the path gives but not far below it ({path.says()})"
