"""A communication benchmark's measured transfers (issue 31, session 24): the rows and result lines
parsers/result_tables.py reads from perftest, OSU, DeepSpeed's communication benchmark, CUDA's
bandwidthTest and p2pBandwidthLatencyTest, nvbandwidth, iperf, and scripts that time a transfer.

A benchmark prints a row only once it measured that size, so rows that advance are transfers completed.
Its figures against a link's rate the excerpt itself states (``ibstat``'s ``Rate: 100``, a NIC named
``100G``) decide slow; a table whose last row is the excerpt's last line past the small sizes, short of the
size the tool was asked (hccl_test's ``maxbytes is N``) or without the end line the tool prints once every
size is done (perftest, bandwidthTest, iperf), is cut (the next size hangs, or the paste ends); a script's
lines, which say neither, end where its output ends (session 25); otherwise healthy, with the figures: the tool, how many sizes, the
peak bandwidth and its size, the latency at the smallest size. nccl-tests is ``rules_nccl_tests``'s;
the figures of ranks (DeepEP's) without sizes are ``rules_results.benchmark_result``'s."""

from __future__ import annotations

import polars as pl

from tracekit import teardown
from tracekit.evidence import Evidence
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.nccl_tests_words import transport_logged
from tracekit.parsers import result_tables
from tracekit.rules_nccl_tests import BEGUN, LOW_BUSBW, _nodes, _op, _ranks_text, _size
from tracekit.rules_nccl_tests import LARGE as NCCL_LARGE

#: a collective's name in a row's op or its line (DeepSpeed's sections, a script's `allreduce 1GB: ...`)
COLLECTIVE = r"(?i)all_?reduce|all_?gather|reduce_?scatter|broadcast|all_?to_?all|alltoall"

#: a peak under this share of the link's stated rate is far below what the link gives (perftest and iperf
#: reach 90%+ of a healthy link's rate at large sizes; half is a link at a lower rate or a slow path)
FAR_BELOW = 0.5
#: the tools that print a line once every size is done (perftest's RESULT_LINE, src/perftest_parameters.h;
#: the CUDA samples' ``Result = PASS``; iperf's ``iperf Done.``): without it, their table stopped
ENDED_BY = ("perftest", "CUDA bandwidthTest", "iperf")
#: the smallest size at which a transfer's bandwidth reaches a link's rate (below it, latency rules)
LARGE = 2**20


def warnings(ev: Evidence, first: dict) -> tuple[pl.DataFrame, bool]:
    """The trouble and telling lines (parsers/salient.py; a file's last line is no sign), and whether one
    comes after ``first``, a benchmark's first result: one before it is a warning the run went past."""
    told = ev.kinds(EventKind.TELLING_LINE).filter(pl.col("where") != "last")
    # (s34) a socket closing after the last result (NCCL's proxy `[Service thread] Connection closed by localRank 0`
    # as the processes exit: teardown.TEARDOWN's words) is the program's exit, not a failure of what it measured
    # (samples/wild dv38-007: a torchrun all-reduce test's results, then its communicators' teardown)
    done = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "benchmark").sort("file", "line")
    if done.height and told.height:
        last = done.row(-1, named=True)
        told = told.filter(~(pl.col("message").str.contains(teardown.TEARDOWN) & (pl.col("file") == last["file"])
                             & (pl.col("line") > last["line"])))
    signs = [df.select("file", "line") for df in (ev.trouble, told)
             if df.height and {"file", "line"} <= set(df.columns)]
    signs = pl.concat(signs).unique() if signs else pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64})
    later = signs.filter((pl.col("file") != first["file"]) | (pl.col("line") > first["line"]))
    return signs, later.height > 0


#: (s30) one measurement printed again at a figure this many times lower or more: a run at another scale
APART = 2.0


def _repeated_apart(bw: pl.DataFrame, tool: str) -> Verdict | None:
    """(s30) The same measurement with no size (one line's template, its numbers masked) printed two times or
    more at bandwidths ``APART`` times apart or more: runs at another scale or setting side by side, one far
    slower (samples/wild dv40-004: DeepEP's ``Best combine ...: 44.37 GB/s (RDMA)`` on 2 nodes, ``12.53 GB/s``
    on 4). UNDECIDED, never HEALTHY over it: which run is the larger scale, said beside the lines, decides a
    slow-down; the figures say it moved."""
    rows = bw.filter(pl.col("bytes").is_null()).with_columns(
        pl.col("message").str.replace_all(r"\d+(?:\.\d+)?", "#").alias("_tmpl"))
    spread = (rows.group_by("_tmpl").agg(pl.len().alias("n"), pl.col("busbw_gbs").max().alias("hi"),
                                         pl.col("busbw_gbs").min().alias("lo"))
              .filter((pl.col("n") >= 2) & (pl.col("lo") > 0) & (pl.col("hi") >= APART * pl.col("lo"))))
    if not spread.height:
        return None
    worst = spread.with_columns((pl.col("hi") / pl.col("lo")).alias("x")).sort("x").row(-1, named=True)
    one = rows.filter(pl.col("_tmpl") == worst["_tmpl"]).sort("busbw_gbs")
    lo, hi = one.row(0, named=True), one.row(-1, named=True)
    return Verdict(Kind.UNDECIDED, f"{tool} printed the same measurement {worst['n']} times at bandwidths "
                   f"{worst['x']:.2g}x apart: {_gbs(lo['busbw_gbs'])} (`{lo['message'][:90]}`) against "
                   f"{_gbs(hi['busbw_gbs'])}; runs at another scale or setting side by side, one far slower, "
                   "no error: where the slower is the run on more nodes, the inter-node link (RDMA) holds it; "
                   "which run is which (nodes, GPUs, NICs) decides slow or healthy", [],
                   [Cited(lo["file"], lo["line"], lo["message"]),
                    Cited(hi["file"], hi["line"], hi["message"])])


def _tool(rows: pl.DataFrame) -> str:
    """The tool the rows' messages name (``perftest: 65536 ...`` -> ``perftest``), else ``the benchmark``."""
    named = rows["message"].str.extract(result_tables.LABEL, 1).drop_nulls()
    return named.mode().sort()[0] if named.len() else "the benchmark"


def _gbs(v: float) -> str:
    return f"{v:.4g} GB/s"


def measured_results(ev: Evidence) -> Verdict | None:
    """A benchmark's measured rows (a size on each, or a named tool's, or a rank-less line with a rate or a
    time) and nothing but calm lines, or lines of trouble that all come before its first row (a warning at
    start-up the measurements then went past): healthy with its figures, slow against a link rate the
    excerpt states, undecided where a table past the small sizes is the excerpt's last line."""
    bench = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "benchmark")
    sized = pl.col("bytes").is_not_null() | pl.col("message").str.contains(result_tables.NAMED)
    rows = bench.filter(sized | (pl.col("rank").is_null() & (pl.col("busbw_gbs").is_not_null()
                                                            | pl.col("duration_ms").is_not_null())))
    if (not rows.height or ev.failure_signs or ev.stalls.height or ev.pending.height
            or bench.filter(~sized & pl.col("rank").is_not_null()).height):
        return None  # (ranks' figures with no size, DeepEP's: rules_results.benchmark_result compares them)
    if ev.steps.height or ev.ticks.height:
        return None  # (a rate line inside a training's or a server's progress: the rules of its pace decide)
    rows = rows.sort("file", "line")
    signs, later = warnings(ev, rows.row(0, named=True))
    if later or (signs.height and rows.height < 2):
        return None  # (a failure line before a single result may lie inside the measurement it sums up)
    tool = _tool(rows)
    links = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "link_rate").sort("file", "line")
    bw = rows.filter(pl.col("busbw_gbs").is_not_null())
    sizes = rows["bytes"].drop_nulls()
    n = sizes.n_unique() if sizes.len() else rows.height
    span = _size(sizes.min()) if sizes.len() and sizes.min() == sizes.max() else \
        f"{_size(sizes.min())} - {_size(sizes.max())}" if sizes.len() else ""
    what = f"{n} size(s) ({span})" if sizes.len() else f"{n} result line(s)"
    peak = bw.sort("busbw_gbs").row(-1, named=True) if bw.height else None
    at = f" at {_size(peak['bytes'])}" if peak and peak["bytes"] is not None else ""
    at += f" ({peak['op'].replace('_', ' ')})" if peak and peak["op"] else ""
    figure = f"peak bandwidth {_gbs(peak['busbw_gbs'])}{at}" if peak else "no bandwidth column"
    # (iperf's summary: the receiver's average over the whole test is its result)
    summary = bw.filter(pl.col("message").str.contains(r"\breceiver\s*$"))
    if summary.height:
        peak = summary.sort("busbw_gbs").row(-1, named=True)
        figure = (f"the receiver's average {_gbs(peak['busbw_gbs'])} ({peak['busbw_gbs'] * 8:.3g} Gb/s) over "
                  f"{peak['duration_ms'] / 1e3:g} s")
    timed = rows.filter(pl.col("duration_ms").is_not_null()).sort("bytes", "line", nulls_last=True)
    if timed.height and sizes.len():
        small = timed.row(0, named=True)
        us = small["duration_ms"] * 1e3
        figure += f", latency {us:.3g} us at {_size(small['bytes'])}" if us < 1e4 else \
            f", {small['duration_ms']:.4g} ms at {_size(small['bytes'])}"
    elif timed.height and not peak:
        # (s26) a time with no size and no rate (`Time taken for allreduce: 12.3 s`): the time, as it says it
        t = timed.row(0, named=True)
        figure = f"{t['duration_ms'] / 1e3:.4g} s" if t["duration_ms"] >= 1e3 else f"{t['duration_ms']:.4g} ms"
        figure = f"no bandwidth column, {figure} (`{t['message'][:100]}`)"
    cited = [Cited(peak["file"], peak["line"], peak["message"])] if peak else []
    cited.append(Cited(rows[-1, "file"], rows[-1, "line"], rows[-1, "message"]))
    if links.height and peak and (v := _below_link(links, bw, tool, what, figure)):
        return v
    if v := _collective_low(bw, tool, what, figure):
        return v
    if v := _repeated_apart(bw, tool):
        return v
    last = rows.row(-1, named=True)
    after = ev.store.events.filter((pl.col("file") == last["file"]) & (pl.col("line") > last["line"]))
    reached = sizes.max() if sizes.len() else None
    # (the tool's own largest size asked, hccl_test's ``maxbytes is N``: a table that reached it is whole)
    asked = ev.kinds(EventKind.TEST_SIZES).filter(pl.col("where") == "benchmark")["bytes"].drop_nulls()
    whole = asked.len() > 0 and reached is not None and reached >= asked.max()
    # (a stop is known only where the tool says how far it goes: the size asked, or an end line it prints
    # once every size is done; a script's lines end where its output ends, a stop no one can see)
    ends = asked.len() > 0 or tool in ENDED_BY
    if not after.height and reached is not None and reached >= BEGUN and rows.height > 1 and not whole and ends:
        return Verdict(Kind.UNDECIDED, f"{tool}'s results stop at {_size(reached)} ({what}; {figure}) with "
                       "nothing after the last row, no error and no end line: the next size hangs or the "
                       "output ends there; the rest of its output decides it", [], cited)
    sofar = (f"; its sizes stop below {_size(BEGUN)}, where a transfer measures latency, not the link's "
             "bandwidth: healthy so far" if reached is not None and reached < BEGUN else "")
    said = (f"; the {signs.height} warning or error line(s) before its first result did not stop it: "
            f"{rows.height} results were measured after them" if signs.height else "")
    rowed = " (a row is printed once that size was measured)" if sizes.len() else ""
    rowed += f", up to the {_size(asked.max())} it was asked" if whole else ""
    rowed += ("; it prints no end line, and says no largest size: its output ends at its last result"
              if not after.height and not ends and rows.height > 1 and reached is not None and reached >= BEGUN
              else "")
    # (s34) the transport NCCL logged for the run's connections, the link the figure is to be compared with
    over = transport_logged(ev)
    over = f"NCCL's connections go over {over}; " if over else ""
    return Verdict(Kind.HEALTHY, f"{tool} printed its results with no error: {what}, {figure}{rowed}{sofar}"
                   f"{said}; whether that is fast enough is the "
                   f"link's question: compare it with the rate of the link it crosses ({over}ibstat's Rate, the "
                   f"NIC's speed) ({ev.coverage.describe()})", [], cited)


def _collective_low(bw: pl.DataFrame, tool: str, what: str, figure: str) -> Verdict | None:
    """A collective's bandwidth at large sizes (``NCCL_LARGE`` and up) under ``LOW_BUSBW``: under what the
    slowest GPU interconnect carries there (one 100 Gb/s NIC or PCIe Gen3 ~12 GB/s, NVLink 10x that),
    as rules_nccl_tests says of nccl-tests' tables."""
    coll = bw.filter((pl.col("op").fill_null("").str.contains(COLLECTIVE)
                      | pl.col("message").str.contains(COLLECTIVE)) & (pl.col("bytes") >= NCCL_LARGE))
    if not coll.height or coll["busbw_gbs"].max() >= LOW_BUSBW or coll["busbw_gbs"].max() <= 0:
        return None
    top = coll.sort("busbw_gbs").row(-1, named=True)
    return Verdict(Kind.SLOW_PROGRESS, f"{tool}: a collective at large sizes reaches at most "
                   f"{_gbs(top['busbw_gbs'])} at {_size(top['bytes'])} ({what}; {figure}), under the "
                   f"{LOW_BUSBW:g} GB/s the slowest GPU interconnect carries there (one 100 Gb/s NIC or PCIe "
                   "Gen3 ~12 GB/s, NVLink 10x that); no error: the collectives complete, slowly; "
                   "NCCL_DEBUG=INFO names the transport (`via NET/Socket` for a TCP path), ibstat the NICs' "
                   "rate", [], [Cited(top["file"], top["line"], top["message"])])


def _below_link(links: pl.DataFrame, bw: pl.DataFrame, tool: str, what: str, figure: str) -> Verdict | None:
    """The peak at large sizes (or a single figure) under ``FAR_BELOW`` of the slowest link stated."""
    big = bw.filter(pl.col("bytes").is_null() | (pl.col("bytes") >= LARGE))
    if not big.height:
        return None
    link = links.sort("busbw_gbs").row(0, named=True)
    top = big.sort("busbw_gbs").row(-1, named=True)
    if top["busbw_gbs"] >= FAR_BELOW * link["busbw_gbs"]:
        return None
    return Verdict(Kind.SLOW_PROGRESS, f"{tool} measured at most {_gbs(top['busbw_gbs'])} "
                   f"({top['busbw_gbs'] * 8:.3g} Gb/s) at large sizes ({what}; {figure}), far below the "
                   f"{link['busbw_gbs'] * 8:g} Gb/s ({_gbs(link['busbw_gbs'])}) the link is stated to give "
                   f"(`{link['message'][:80]}`): the transfers complete, slowly: a link trained at a lower "
                   "rate, a path through the kernel (TCP) or the wrong NIC; check ibstat's Rate and state on "
                   "both ends, the GID/NIC the test binds, PCIe width", [],
                   [Cited(top["file"], top["line"], top["message"]),
                    Cited(link["file"], link["line"], link["message"])])


#: a bus bandwidth across nodes under this share of ONE link's stated rate is far below it (a node of one NIC
#: reaches ~90% of its rate in busbw at large sizes; a node of several NICs more than the rate)
FAR_BELOW_LINK = 0.5


def nccl_tests_below_link(ev: Evidence) -> Verdict | None:
    """A test across nodes whose bus bandwidth (its ``# Avg bus bandwidth``, else its peak at large sizes)
    is under ``FAR_BELOW_LINK`` of the slowest link rate the excerpt itself states (ibstat's ``Rate:``,
    NCCL's ``NET/IB: ... speed=``; parsers/result_tables.py): slow, with both figures."""
    links = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "link_rate").sort("busbw_gbs")
    rows = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "nccl-tests")
    if not links.height or not rows.height or ev.failure_signs or ev.kinds(EventKind.TEST_WRONG).height:
        return None  # (wrong values, a failure: nccl_test_result and the failure rules say them first)
    spans, how = _nodes(ev)
    if not spans:
        return None
    said_on = _ranks_text(ev)
    on = f" ({said_on})" if said_on else ""
    link = links.row(0, named=True)
    avg = ev.kinds(EventKind.TEST_AVG_BUSBW).filter(pl.col("busbw_gbs").is_not_null()).sort("file", "line")
    large = rows.filter(pl.col("bytes") >= NCCL_LARGE)
    if avg.height:
        said = avg.row(-1, named=True)
        figure, gbs = f"avg bus bandwidth {said['busbw_gbs']:g} GB/s", said["busbw_gbs"]
    elif large.height:
        said = large.sort("busbw_gbs").row(-1, named=True)
        figure, gbs = f"busbw at most {said['busbw_gbs']:g} GB/s at {_size(said['bytes'])}", said["busbw_gbs"]
    else:
        return None
    if gbs >= FAR_BELOW_LINK * link["busbw_gbs"]:
        return None
    return Verdict(Kind.SLOW_PROGRESS, f"nccl-tests{_op(rows)}{on}: {figure} across nodes ({how}), far below "
                   f"the {link['busbw_gbs'] * 8:g} Gb/s ({link['busbw_gbs']:g} GB/s) one link is stated to "
                   "give "
                   f"(`{link['message'][:80]}`), with no wrong value: the collectives complete, slowly: the "
                   "traffic takes a slower path than that link (NET/Socket, a NIC at a lower rate, GPUDirect "
                   "RDMA off); NCCL_DEBUG=INFO names the transport, ibstat the rate of each port", [],
                   [Cited(said["file"], said["line"], said["message"]),
                    Cited(link["file"], link["line"], link["message"])])
