"""A benchmark's matrix of figures per pair of GPUs (CUDA samples' p2pBandwidthLatencyTest: ``Unidirectional
P2P=Enabled Bandwidth Matrix (GB/s)``, ``   D\\D     0      1``, a row per GPU from its outputBandwidthMatrix;
nvbandwidth's ``memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)``; s29: rocm-bandwidth-test's
``Unidirectional copy peak bandwidth GB/s``, ``D/D  0  1``, a row per device, blank lines between, as
github.com/lhl/strix-halo-testing's README pastes it), read for parsers/result_tables.py:
one ``bandwidth`` event per row, its largest figure off the diagonal (the GPU's own memory is on it)."""

from __future__ import annotations

import re

from tracekit.schema import EventKind

#: a matrix's title (p2pBandwidthLatencyTest, nvbandwidth) and its column header (``D\D 0 1``, ``0 1``)
MATRIX_TITLE = re.compile(r"(?i)(?:(?:bandwidth|latency)\b.*\((GB/s|us)\)|\bbandwidth (GB/s))\s*$")
MATRIX_HEAD = re.compile(r"^\s*(?:D\\D|D/D|GPU|src\\dst)?(?:\s+\d+){1,64}\s*$")
#: the tools whose matrix holds each device's own memory on its diagonal (no link crossed)
OWN_DIAGONAL = ("p2pBandwidthLatencyTest", "rocm-bandwidth-test")
MATRIX_ROW = re.compile(r"^\s*(\d+)((?:\s+(?:-?\d+(?:\.\d+)?|N/A))+)\s*$")


def matrix(texts: list[str], lines: list[int], at: int, tool: str,
           op: str | None) -> tuple[list[dict], int]:
    """A matrix under its title at ``at``: one event per row, its largest figure off the diagonal."""
    title = MATRIX_TITLE.search(texts[at])
    unit = title.group(1) or title.group(2)
    k = _next(texts, at + 1)
    if k >= len(texts) or not MATRIX_HEAD.match(texts[k]):
        return [], at
    out = [dict(line=lines[at], kind=None, message=texts[at].strip()),
           dict(line=lines[k], kind=None, message=texts[k].strip())]
    k = _next(texts, k + 1)
    while k < len(texts) and (m := MATRIX_ROW.match(texts[k])):
        src = int(m.group(1))
        vals = [(j, float(v)) for j, v in enumerate(m.group(2).split()) if v != "N/A"]
        # (p2pBandwidthLatencyTest's diagonal is a GPU's own memory; nvbandwidth marks it N/A, and its rows
        # may be a CPU's, whose column 0 is a GPU)
        off = [v for j, v in vals if j != src or tool not in OWN_DIAGONAL] or [v for _, v in vals]
        figure = dict(busbw_gbs=max(off)) if unit == "GB/s" else dict(duration_ms=max(off) * 1e-3)
        out.append(dict(line=lines[k], kind=EventKind.BANDWIDTH.value, where="benchmark",
                        message=f"{tool}: {texts[at].strip()}: GPU {src}: {m.group(2).strip()}", op=op,
                        **figure))
        k = _next(texts, k + 1)
    return (out, k) if len(out) > 2 else ([], at)


def _next(texts: list[str], k: int) -> int:
    """The first line from ``k`` that is not blank (rocm-bandwidth-test prints a blank line after each row)."""
    while k < len(texts) and not texts[k].strip():
        k += 1
    return k
