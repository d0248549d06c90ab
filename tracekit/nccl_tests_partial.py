"""nccl-tests' tables that hold only part of a test (split out of rules_nccl_tests, session 31): a row begun and
never finished (a stop inside that size), a table of small sizes only (its latency, not the links' bandwidth), and
whether a table cut short holds sizes past the large ones (then its rows are judged as they are: the bandwidth
of the links was measured). rules_nccl_tests.nccl_test_result calls these after its checks of wrong values, low
and falling bus bandwidth. (s33) Also nccl-tests' own check of its average against NCCL_TESTS_MIN_BW (moved here
from rules_nccl_tests, which it kept over 400 lines).
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence
from tracekit.nccl_tests_words import _op, _size, _span, _test
from tracekit.outcome import Cited, EventKind, Kind, Verdict

#: the smallest size at which busbw reaches the links' rate (below it, latency rules)
LARGE = 64 * 2**20
#: microseconds a collective of a few bytes takes at the most over NVLink, InfiniBand or RoCE (a few to
#: tens of us; NCCL's own tuning models 1-10 us per hop): a table of small sizes only that takes several
#: times that says the links or the path are slow, but not how slow their bandwidth is
LATENCY_US = 100.0
#: the largest size whose time is latency alone (64 KB crosses a 12 GB/s link in 5 us)
LATENCY_BYTES = 64 * 2**10
#: a smallest size that takes this many times ``LATENCY_US`` or more is said, undecided (s31; slow before), past
#: the noise of the bound
#: (one just over it, 107 us on EFA, is within what a busy host adds)
SLOW_LATENCY = 1.5
#: the most ranks for which that holds (a tree's or a ring's latency grows with the ranks)
LATENCY_RANKS = 32

#: (s31) the large sizes a cut table must have completed to be judged by its rows: two sizes past ``LARGE``
PAST_LARGE = 2


def _past_large(rows: pl.DataFrame) -> bool:
    """Whether the rows hold ``PAST_LARGE`` sizes or more at ``LARGE`` and up, in one table: the bandwidth of
    the links is measured, not only their latency."""
    return rows.filter(pl.col("bytes") >= LARGE)["bytes"].n_unique() >= PAST_LARGE


def _stopped_inside(ev: Evidence, rows: pl.DataFrame, on: str) -> Verdict | None:
    """A row begun after the last finished one (its size printed, its figures never: parsers/nccl_tests.py
    BEGUN_ROW) with no end line after: the test stopped inside that size; never healthy."""
    last = rows.sort("file", "line").row(-1, named=True)
    begun = ev.kinds(EventKind.BANDWIDTH).filter(
        (pl.col("where") == "nccl-tests-begun") & (pl.col("file") == last["file"])
        & (pl.col("line") > last["line"]))
    if not begun.height:
        return None
    b = begun.sort("line").row(-1, named=True)
    ends = ev.kinds(EventKind.TEST_PASSED, EventKind.TEST_AVG_BUSBW).filter(
        (pl.col("file") == b["file"]) & (pl.col("line") > b["line"]))
    if ends.height:
        return None
    return Verdict(Kind.UNDECIDED, f"{_test(rows)}{on}: {rows['bytes'].n_unique()} size(s) completed "
                   f"({_span(rows)}, busbw {last['busbw_gbs']:g} GB/s at {_size(last['bytes'])}) with no wrong "
                   f"value, then the row of {_size(b['bytes'])} begins and never gets its figures (nccl-tests "
                   "prints a size before it runs it, its times after: src/util.cu writeBenchmarkLinePreamble): "
                   f"the test stopped inside the {_size(b['bytes'])} collective, a hang there, or the output ends "
                   "there; no error is logged: a py-spy dump of a rank, NCCL_DEBUG=INFO and the rest of the "
                   "output decide it", [], [Cited(last["file"], last["line"], last["message"]),
                                            Cited(b["file"], b["line"], b["message"])])


def _latency(ev: Evidence, rows: pl.DataFrame, on: str, world: int) -> Verdict | None:
    """A table of small sizes only (under ``BEGUN``: it measures latency, not bandwidth) whose smallest
    size (``LATENCY_BYTES`` or less) takes over ``LATENCY_US`` on ``world`` ranks (more than one): at
    ``SLOW_LATENCY`` times it or more undecided (s31: a latency alone states no link's rate), else healthy at these
    sizes, with the latency said."""
    if world == 1 or world > LATENCY_RANKS or rows["op"].is_in(["all_to_all", "send"]).any():
        return None  # (one rank crosses no link; an all-to-all's or a big world's latency grows with it)
    small = rows.sort("bytes", "line").row(0, named=True)
    us = (small["duration_ms"] or 0) * 1e3
    if us <= LATENCY_US or small["bytes"] > LATENCY_BYTES:
        return None  # (a smallest size of hundreds of KB: its time holds the transfer, not only latency)
    top = rows.sort("busbw_gbs").tail(1).row(0, named=True)
    cited = [Cited(small["file"], small["line"], small["message"]),
             Cited(top["file"], top["line"], top["message"])]
    if us >= SLOW_LATENCY * LATENCY_US:
        # (s31: undecided, not slow: a latency alone states no link's rate, and the table holds no size that
        # measures bandwidth. Dev: dv10-008 (EC2, 164 us at 64 B) labelled slow with undecided accepted;
        # dv35-003 (8 p3dn nodes over EFA in 2019, 631 us at 8 B) labelled healthy with undecided accepted)
        return Verdict(Kind.UNDECIDED, f"nccl-tests{_op(rows)}{on}: a {_size(small['bytes'])} collective "
                       f"takes {us:.0f} us latency, {us / LATENCY_US:.1f}x the {LATENCY_US:.0f} us one takes at the "
                       "most over NVLink, InfiniBand or RoCE, and the table goes up to "
                       f"{_size(rows['bytes'].max())} at {top['busbw_gbs']:g} GB/s busbw; no wrong value: the "
                       "collectives complete; the table holds only sizes that measure latency, not the links' "
                       "bandwidth: a slow path (TCP sockets, a proxy, many hops, an early EFA or libfabric "
                       "provider) or the fabric's own latency; the larger sizes (-e 8G) and NCCL_DEBUG=INFO (the "
                       "transport NCCL chose: `via NET/Socket`, `via NET/IB`) decide whether it is slow", [],
                       cited)
    # (under SLOW_LATENCY times the bound: every size completed with right values, a latency a socket
    # path or a PCIe hop gives; healthy at these sizes, the latency said for what it may mean)
    return Verdict(Kind.HEALTHY, f"nccl-tests{_op(rows)}{on}: every size printed completed on every rank with "
                   f"no wrong value up to {_size(rows['bytes'].max())} (busbw {top['busbw_gbs']:g} GB/s "
                   f"there): healthy at these sizes; a {_size(small['bytes'])} collective takes {us:.0f} us, "
                   f"a little over the {LATENCY_US:.0f} us one takes at the most over NVLink, InfiniBand or "
                   "RoCE (TCP sockets, a proxy or a PCIe hop give that); the table stops below the sizes that "
                   "measure the links' bandwidth: the larger sizes (-e 8G) and NCCL_DEBUG=INFO (the "
                   "transport NCCL chose: `via NET/IB`, `via NET/Socket`) say how fast the links are", [],
                   cited)


#: nccl-tests' own check of its average against the bandwidth the run asked for (NCCL_TESTS_MIN_BW):
#: NVIDIA/nccl-tests src/util.cu:778 `# Avg bus bandwidth    : %g FAILED` when under 0.9 of it (src/common.cu:1830,
#: and the test then exits with a failure, :1853)
MIN_BW_FAILED = r"^#\s*Avg bus bandwidth\s*:\s*\S+\s+FAILED\b"


def _under_min_bw(ev: Evidence, on: str) -> Verdict | None:
    """nccl-tests said its average bus bandwidth fell under the minimum the run set (NCCL_TESTS_MIN_BW):
    every size completed, slower than asked: slow progress, in the test's own words."""
    avg = ev.kinds(EventKind.TEST_AVG_BUSBW).filter(pl.col("message").str.contains(MIN_BW_FAILED))
    if not avg.height:
        return None
    a = avg.row(0, named=True)
    return Verdict(Kind.SLOW_PROGRESS, f"nccl-tests{on}: avg bus bandwidth {a['busbw_gbs']:g} GB/s, and the test's "
                   "own check says FAILED: under 90% of the minimum the run set (NCCL_TESTS_MIN_BW); every size "
                   "completed with no wrong value, slower than asked: the links or the transport NCCL chose "
                   "(NCCL_DEBUG=INFO names it) are slower than expected", [], [Cited(a["file"], a["line"],
                                                                                    a["message"])])
