"""Rules over what a benchmark or a program says of itself: nccl-tests' result tables, a program's own
progress and end lines, its step times, throughput and phase timers.

Each is ``rule(evidence) -> Verdict | None`` and sits in ``rules.RULES`` after the rules of failure
(a crash, a timeout, a transport error decide first): these read runs with no failure sign.

nccl-tests (``parsers/nccl_tests.py``; its source, github:NVIDIA/nccl-tests ``src/common.cu``, prints a
row only once every rank finished that size's iterations): a table with wrong values is corrupt data; a
bus bandwidth that falls by half past some size, or stays low at large sizes, is slow; a table that
stops short of the size asked with no end line is cut (a hang at the next size, or the paste ends);
otherwise healthy, with the figures.
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence, lines
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.wording import fmt_ranks

#: busbw (GB/s) at large sizes below which no GPU interconnect of a data centre runs (one 100 Gb/s NIC
#: carries ~12 GB/s, NVLink 10x that): below it, the links in use carry less than the fabric is built for
LOW_BUSBW = 10.0
#: the smallest size at which busbw reaches the links' rate (below it, latency rules)
LARGE = 64 * 2**20
#: a bus bandwidth that falls below this share of its peak at a larger size: a slower path took over
FALL = 0.5


def _size(n: int | None) -> str:
    """``33554432`` -> ``32 MB``; ``8`` -> ``8 B`` (nccl-tests sizes are powers of two, said in 1024s)."""
    if n is None:
        return "?"
    for unit, k in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= k:
            v = n / k
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


def _tables(rows: pl.DataFrame) -> list[pl.DataFrame]:
    """The result tables: per file, a new one where the size stops growing or the op changes."""
    rows = rows.sort("file", "line").with_columns(
        ((pl.col("bytes") <= pl.col("bytes").shift(1).over("file")).fill_null(True)
         | (pl.col("op") != pl.col("op").shift(1).over("file")).fill_null(True)).cum_sum().alias("_table"))
    return [t for _, t in rows.group_by("_table", maintain_order=True)]


def _op(table: pl.DataFrame) -> str:
    """`` all_reduce`` (with its space), or empty where the output does not name the test."""
    op = table["op"][0]
    return f" {op}" if op and op != "unknown" else ""


def _fall(table: pl.DataFrame) -> dict | None:
    """The first size past the peak where busbw is below half of it (and the peak is a real figure)."""
    peak = table.sort("busbw_gbs", descending=True).row(0, named=True)
    if peak["busbw_gbs"] < 1.0:
        return None
    after = table.filter((pl.col("bytes") > peak["bytes"]) & (pl.col("busbw_gbs") < FALL * peak["busbw_gbs"]))
    if not after.height:
        return None
    rest = table.filter(pl.col("bytes") >= after["bytes"][0])["busbw_gbs"]
    return {"peak": peak, "at": after.row(0, named=True), "low": rest.min(), "high": rest.max(),
            "last": table["bytes"].max()}


def _transport(ev: Evidence) -> str:
    """The network or peer transport NCCL logged for this run's connections (``NET/IB``), else empty."""
    links = ev.store.links
    if not links.height or "transport_kind" not in links.columns:
        return ""
    kinds = links["transport_kind"].drop_nulls()
    return ", ".join(kinds.value_counts(sort=True)["transport_kind"].head(2).to_list()) if kinds.len() else ""


def _ranks_text(ev: Evidence) -> str:
    """``ranks 0-9 on host gn11``: the ranks and hosts nccl-tests' header names, or empty."""
    r = ev.store.ranks.filter(pl.col("source").str.contains("nccl-tests") & pl.col("rank").is_not_null())
    if not r.height:
        return ""
    hosts = r["host"].drop_nulls().unique().sort().to_list()
    n = r["rank"].n_unique()
    return (f"{'rank' if n == 1 else 'ranks'} {fmt_ranks(r['rank'].to_list())}"
            + (f" on {'host' if len(hosts) == 1 else 'hosts'} {', '.join(hosts[:4])}" if hosts else ""))


def nccl_test_result(ev: Evidence) -> Verdict | None:
    """nccl-tests' output decides itself: wrong values, a bus bandwidth that falls or stays low, a
    table cut short of the size asked, or a complete table of right values."""
    rows = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "nccl-tests")
    said = _ranks_text(ev)
    if not rows.height:
        if not said:
            return None
        asked = ev.kinds(EventKind.TEST_SIZES).sort("file", "line")
        return Verdict(Kind.UNDECIDED, f"nccl-tests started on {said} and printed no result row: it stopped in its "
                       "first collective (communicator init or the warm-up) or the output ends there; the rest of "
                       "its output, NCCL_DEBUG=INFO and a py-spy dump of a rank decide it", [], lines(asked, 1))
    wrong = ev.kinds(EventKind.TEST_WRONG).sort("file", "line")
    ends = ev.kinds(EventKind.TEST_PASSED, EventKind.TEST_AVG_BUSBW).sort("file", "line")
    avg = ev.kinds(EventKind.TEST_AVG_BUSBW)["busbw_gbs"].drop_nulls()
    on = f" ({said})" if said else ""
    if wrong.height:
        n = wrong["numel"].drop_nulls()
        sizes = wrong["bytes"].drop_nulls()
        where = (f" at {_size(sizes.min())}" + (f" - {_size(sizes.max())}" if sizes.max() != sizes.min() else "")
                 if sizes.len() else "")
        return Verdict(Kind.UNDECIDED, f"nccl-tests found wrong values{on}: #wrong up to {n.max()}{where} "
                       f"({wrong.height} result(s)): the collectives complete but their results are corrupted, "
                       "a data corruption, not a hang; find the path that corrupts by rerunning with "
                       "NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1, NCCL_NET_GDR_LEVEL=LOC or NCCL_PROTO=Simple one "
                       "at a time (PCIe ACS / IOMMU settings, a faulty GPU or NIC)", [], lines(wrong, 4))
    tables = _tables(rows)
    for t in tables:
        f = _fall(t)
        if f:
            p, a = f["peak"], f["at"]
            rest = (f" and stays at {f['low']:g}-{f['high']:g} GB/s up to {_size(f['last'])}"
                    if f["last"] > a["bytes"] else "")
            return Verdict(Kind.SLOW_PROGRESS, f"nccl-tests{_op(t)}{on}: the bus bandwidth falls from "
                           f"{p['busbw_gbs']:g} GB/s at {_size(p['bytes'])} to {a['busbw_gbs']:g} GB/s at "
                           f"{_size(a['bytes'])}{rest}, with no wrong value: a slower path takes over past "
                           f"{_size(p['bytes'])} (a protocol or algorithm switch, or a transport that carries less); "
                           "the collectives complete, slowly", [],
                           [Cited(p["file"], p["line"], p["message"]), Cited(a["file"], a["line"], a["message"])])
    transport = _transport(ev)
    large = rows.filter(pl.col("bytes") >= LARGE)
    if large.height and large["busbw_gbs"].max() < LOW_BUSBW:
        top = large.sort("busbw_gbs").tail(1).row(0, named=True)
        figure = (f"avg bus bandwidth {' and '.join(f'{a:g}' for a in avg.to_list()[:3])} GB/s, " if avg.len()
                  else "") + f"at most {top['busbw_gbs']:g} GB/s at {_size(top['bytes'])}"
        cited = [Cited(top["file"], top["line"], top["message"])] + lines(ends, 2)
        if transport:
            return Verdict(Kind.SLOW_PROGRESS, f"nccl-tests{on}: {figure} over {transport}: far below what a GPU "
                           f"interconnect carries ({LOW_BUSBW:g} GB/s and up at large sizes); the collectives "
                           "complete, slowly", [], cited)
        return Verdict(Kind.UNDECIDED, f"nccl-tests{on}: {figure}, with no wrong value: low for InfiniBand or NVLink "
                       f"({LOW_BUSBW:g} GB/s and up at large sizes), but the log does not say which transport carried "
                       "it: NCCL_DEBUG=INFO (`via NET/IB` or `via NET/Socket`) and the NICs' speed decide whether it "
                       "is the links' limit", [], cited)
    last = rows.sort("file", "line").tail(1).row(0, named=True)
    asked = ev.kinds(EventKind.TEST_SIZES)["bytes"].drop_nulls()
    reached = rows["bytes"].max()
    ended = ends.filter(pl.col("line") > last["line"]).height > 0
    if asked.len() and reached < asked.max() and not ended:
        nxt = reached * 2
        return Verdict(Kind.UNDECIDED, f"nccl-tests{_op(tables[-1])}{on}: the table stops at {_size(reached)} "
                       f"(busbw {last['busbw_gbs']:g} GB/s there) of the {_size(asked.max())} asked, with no error and "
                       f"no end line: the test hangs at the next size ({_size(nxt)}, if the step is 2x) or the output "
                       "ends there; the rest of the output or a py-spy dump of a rank decides it", [],
                       [Cited(last["file"], last["line"], last["message"])])
    top = rows.sort("busbw_gbs").tail(1).row(0, named=True)
    sizes = rows["bytes"].n_unique()
    figure = (f"avg bus bandwidth {avg.max():g} GB/s over {sizes} size(s)" if avg.len()
              else f"{sizes} size(s) completed")
    end = ("; Out of bounds values: 0 OK" if ev.kinds(EventKind.TEST_PASSED).height
           else "" if ended else "; the table goes on past the output")
    return Verdict(Kind.HEALTHY, f"nccl-tests{on}: {figure} ({_size(rows['bytes'].min())} - {_size(reached)}, busbw up "
                   f"to {top['busbw_gbs']:g} GB/s at {_size(top['bytes'])}), no wrong value{end}"
                   + (f"; transport {transport}" if transport else "")
                   + ": every rank completed each size (nccl-tests prints a row only then)", [],
                   [Cited(top["file"], top["line"], top["message"])] + lines(ends, 2))
