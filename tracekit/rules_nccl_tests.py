"""Rules over nccl-tests' result tables and the all-reduce benchmark's results (``parsers/nccl_tests.py``).

Each is ``rule(evidence) -> Verdict | None`` and sits in ``rules.RULES`` after the rules of failure
(a crash, a timeout, a transport error decide first) and before ``failed_without_cause``.

nccl-tests (its source, github:NVIDIA/nccl-tests ``src/common.cu``, prints a row only once every rank
finished that size's iterations): a table with wrong values is corrupt data; a bus bandwidth that falls by
half past some size, or stays low at large sizes, is slow; across nodes, one under what one 400 Gb/s NIC
carries is slow where NCCL names NICs that carry far more, and undecided, with what decides, where the log
names none; a table that stops short of the size asked with no end line has only begun below 1 MB
(healthy so far, once two sizes completed), and past it is cut (a hang at the next size, or the paste
ends); a table of small sizes only whose smallest size takes far longer than any link's latency is
undecided (latency, not bandwidth, is shown); otherwise healthy, with the figures.

Session 25: on one host, the GPU nccl-tests' header names gives what its path carries (link_rates: NVLink
by GPU model, PCIe by generation): a large-size busbw under a third of it is slow, naming both figures and
the path; at it, the healthy verdict says so, and a table cut past the large sizes at it is healthy so far;
a row begun after the last finished one (its size printed, its figures never) is a stop inside that size.
Session 32: the link a run states is the yardstick before the 10 GB/s floor of any GPU fabric: the path the GPUs'
names give (far below it: slow, said first; at a third of it or more: not slow), and a run NCCL logged over TCP
sockets only, whose Ethernet link the log does not rate: at what a socket carries healthy, far under 10 GbE slow.
Session 32b: a run NCCL logged over an RDMA fabric (IB, EFA) is measured against the lowest rate of the links it
crosses (fabric_rates: the fabric's 100 Gb/s, the GPU's own PCIe link), not the 10 GB/s floor.
Session 33: a NIC rate the log states (NCCL's ``speed=``, ibstat, ethtool: nic_rates) is that yardstick; an
all-to-all's or a send/recv's busbw across nodes is judged against one GPU's share of its node's NICs.
"""

from __future__ import annotations

import polars as pl

from tracekit import fabric_rates, link_rates, nic_rates
from tracekit.evidence import WRONG_VALUES, Evidence, lines
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.nccl_tests_words import _op, _ranks_text, _size, _span, _tables, _test, transport_logged
from tracekit.parsers import nccl_tests
# (LARGE: the smallest size at which busbw reaches the links' rate; below it, latency rules)
from tracekit.nccl_tests_partial import LARGE, _latency, _past_large, _stopped_inside, _under_min_bw


#: busbw (GB/s) at large sizes below which no GPU interconnect of a data centre runs (one 100 Gb/s NIC
#: carries ~12 GB/s, NVLink 10x that): below it, the links in use carry less than the fabric is built for
LOW_BUSBW = 10.0
#: the test binary of an op (``all_to_all`` -> ``alltoall_perf``)
BINARIES = {op: name for name, op in nccl_tests.OPS.items()}
#: a table cut below this size has only begun: its rows measure latency, not the links' bandwidth
BEGUN = 2**20
#: a bus bandwidth that falls below this share of its peak at a larger size: a slower path took over
FALL = 0.5
#: the bandwidth events of the benchmarks these rules read: nccl-tests' rows, the all-reduce benchmark's
#: result (parsers/nccl_tests.py)
BENCHES = ("nccl-tests", "all_reduce_bench")
def _fall(table: pl.DataFrame) -> dict | None:
    """The first size past the peak where busbw is below half of it, and stays there to the table's last
    size (a dip that recovers is noise), the peak a real figure."""
    peak = table.sort("busbw_gbs", descending=True).row(0, named=True)
    last = table.sort("bytes").row(-1, named=True)
    if peak["busbw_gbs"] < 1.0 or last["busbw_gbs"] >= FALL * peak["busbw_gbs"]:
        return None
    after = table.filter((pl.col("bytes") > peak["bytes"]) & (pl.col("busbw_gbs") < FALL * peak["busbw_gbs"]))
    if not after.height:
        return None
    rest = table.filter(pl.col("bytes") >= after["bytes"][0])["busbw_gbs"]
    return {"peak": peak, "at": after.row(0, named=True), "low": rest.min(), "high": rest.max(),
            "last": table["bytes"].max()}


def nccl_test_result(ev: Evidence) -> Verdict | None:
    """nccl-tests' output decides itself: wrong values, a bus bandwidth that falls or stays low, a
    table cut short of the size asked, or a complete table of right values."""
    if [s for s in ev.failure_signs if not s.startswith(WRONG_VALUES)]:
        return None  # failed_without_cause says it (a failure of the test is said by the rules before)
    rows = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where").is_in(BENCHES))
    said = _ranks_text(ev)
    if not rows.height:
        passed = ev.kinds(EventKind.TEST_PASSED).sort("file", "line")
        if passed.height and not ev.failure_signs:
            # (nccl-tests sums the wrong values of every rank before it prints the line: src/common.cu,
            # `MPI_Allreduce(MPI_IN_PLACE, &errors[0], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)`)
            avg = ev.kinds(EventKind.TEST_AVG_BUSBW).sort("file", "line")
            figure = (f", avg bus bandwidth {avg['busbw_gbs'].drop_nulls().max():g} GB/s"
                      if avg["busbw_gbs"].drop_nulls().len() else "")
            return Verdict(Kind.HEALTHY, f"nccl-tests{' (' + said + ')' if said else ''} ended with its own "
                           f"check passed: Out of bounds values: 0 OK{figure} (the count of wrong values "
                           "summed over every rank); its result rows are not in the output, so how fast "
                           "each size went is not known", [], lines(passed, 1) + lines(avg, 1))
        if not said:
            return None
        asked = ev.kinds(EventKind.TEST_SIZES).sort("file", "line")
        return Verdict(Kind.UNDECIDED, f"nccl-tests started on {said} and printed no result row: it "
                       "stopped in its first collective (communicator init or the warm-up) or the output "
                       "ends there; the rest of its output, NCCL_DEBUG=INFO and a py-spy dump of a rank "
                       "decide it", [], lines(asked, 1))
    on = f" ({said})" if said else ""
    wrong = ev.kinds(EventKind.TEST_WRONG).sort("file", "line")
    if wrong.height:
        return _corrupt(wrong, on)
    if v := _under_min_bw(ev, on):
        return v
    tables = _tables(rows)
    for t in tables:
        if f := _fall(t):
            return _falls(f, t, on)
    ends = ev.kinds(EventKind.TEST_PASSED, EventKind.TEST_AVG_BUSBW).sort("file", "line")
    avg = ev.kinds(EventKind.TEST_AVG_BUSBW)["busbw_gbs"].drop_nulls()
    transport = transport_logged(ev)
    large = rows.filter(pl.col("bytes") >= LARGE)
    # (busbw 0 at large sizes: one rank, whose bus bandwidth factor is 0 (nccl-tests' src/all_reduce.cu
    # AllReduceGetBw: 2*(nranks-1)/nranks): nothing crosses a link, nothing is slow)
    alone = large.height > 0 and large["busbw_gbs"].max() == 0
    shared = one_gpu(ev)
    path = None if _nodes(ev)[0] or shared else link_rates.one_host_path(ev, transport)
    if large.height and path and (v := link_rates.far_below(path, large, f"{_test(large)}{on}")):
        return v  # (s32: before the floor of any fabric: the path's own rate says how far below it is)
    # (s32: the path the GPUs' names give is the yardstick where they name one: a PCIe path's figure at a third of
    # its rate or more is what it gives, not slow; a socket's yardstick is its NIC, _on_socket)
    fits = bool(large.height and path and path.low and large["busbw_gbs"].max() >= link_rates.FAR_BELOW * path.low)
    # (s32b: a run NCCL logged over an RDMA fabric (IB, EFA) is measured against the lowest rate of the links it
    # crosses, the GPU's own included (fabric_rates), not the floor of a fabric built for multi-node training)
    yard = fabric_rates.of(ev, transport, _nics(ev)) if large.height and not alone and not shared else None
    # (s33: no RDMA transport logged, but the NICs' rate stated (ethtool, ibstat) and the test across nodes: that rate)
    told = nic_rates.stated(ev, _nics(ev)) if large.height and not alone and not shared and _nodes(ev)[0] else None
    yard = yard or (fabric_rates.Yardstick(told.gbs, told.says) if told and "Socket" not in transport else None)
    # (s33: an all-to-all's or a send/recv's busbw across nodes is one GPU's share of its node's NICs, not the node's)
    hosts = ev.store.ranks.filter(pl.col("source").str.contains("nccl-tests"))["host"].drop_nulls().n_unique()
    share = nic_rates.per_gpu(large, _nodes(ev)[0], hosts, _ranks_in(ev), NODE_GPUS)
    if share > 1:
        yard = yard and fabric_rates.Yardstick(yard.gbs / share, f"{yard.says}; one GPU's share of it, 1/{share}")
        told = told and nic_rates.Stated(told.gbs / share, f"{told.says}; one GPU's share of it, 1/{share}")
    low = bool(large.height and not alone and not shared and not fits and large["busbw_gbs"].max() < LOW_BUSBW / share)
    if low:
        if yard:
            done = _reached_end(ev, rows, ends)
            return fabric_rates.judge(yard, large, ends, done, f"{_test(large)}{on} over {transport}")
        else:
            return _on_socket(large, ends, transport, on, told) or _low(large, avg, ends, transport, on)
    if (large.height and not shared and not (yard and low)
            and (v := _below_links(ev, large, ends, on, told, share))):
        return v
    if v := _stopped_inside(ev, rows, on):
        return v
    if rows["bytes"].max() < BEGUN and (v := _latency(ev, rows, on, _ranks_in(ev))):
        return v
    last = rows.sort("file", "line").tail(1).row(0, named=True)
    asked = ev.kinds(EventKind.TEST_SIZES).sort("file", "line")["bytes"].drop_nulls().tail(1)
    reached = rows["bytes"].max()
    ended = ends.filter(pl.col("line") > last["line"]).height > 0
    begun = reached < BEGUN and rows["bytes"].n_unique() > 1  # (sizes seen advancing, not one row alone)
    if asked.len() and reached < asked.max() and not ended and begun:
        op = _op(tables[-1]).strip()
        binary = f"{BINARIES.get(op, op)}_perf started and " if op else ""
        return Verdict(Kind.HEALTHY, f"nccl-tests{_op(tables[-1])}{on}: {binary}every size printed "
                       f"completed on every rank with no wrong value ({_span(rows)}; nccl-tests prints a row "
                       f"only then), and no error is logged; the output ends there, at {_size(reached)} of "
                       f"the {_size(asked.max())} asked, before the sizes that measure the links' bandwidth: "
                       "healthy so far; the rest of the output says whether the larger sizes complete and "
                       "how fast", [], [Cited(last["file"], last["line"], last["message"])])
    if asked.len() and reached < asked.max() and not ended and path and link_rates.near(path, large):
        # (rows past the large sizes at what the path gives: each completed on every rank, at full speed)
        return Verdict(Kind.HEALTHY, f"{_test(rows)}{on}: every size printed completed on every rank with no "
                       f"wrong value ({_span(rows)}; nccl-tests prints a row only then)"
                       f"{link_rates.gives(path, large)}; the output ends at {_size(reached)} of the "
                       f"{_size(asked.max())} asked, with no error: healthy so far; the rest of the output "
                       "says whether the last sizes complete", [],
                       [Cited(last["file"], last["line"], last["message"])])
    if asked.len() and reached < asked.max() and not ended and not path and _past_large(rows):
        # (s31) rows past the large sizes, each completed on every rank with no wrong value, none low and no fall
        # (checked above), on no path whose rate is known (one that is: the branch above, near it or not): the
        # rows present are healthy; the excerpt ends before the rest (a paste cut short
        # is what such an excerpt mostly is; a hang would show a begun row, _stopped_inside, or an error)
        return Verdict(Kind.HEALTHY, f"{_test(rows)}{on}: every size printed completed on every rank with no "
                       f"wrong value ({_span(rows)}; nccl-tests prints a row only then), busbw "
                       f"{last['busbw_gbs']:g} GB/s at {_size(reached)}, steady across the large sizes; the output "
                       f"ends there, at {_size(reached)} of the {_size(asked.max())} asked, with no error and no "
                       "size begun: healthy so far; the rest of the output says whether the last sizes complete",
                       [], [Cited(last["file"], last["line"], last["message"])])
    if asked.len() and reached < asked.max() and not ended:
        return Verdict(Kind.UNDECIDED, f"nccl-tests{_op(tables[-1])}{on}: the table stops at "
                       f"{_size(reached)} (busbw {last['busbw_gbs']:g} GB/s there) of the "
                       f"{_size(asked.max())} asked, with no error and no end line: the test hangs at the "
                       f"next size ({_size(reached * 2)}, if the step is 2x) or the output ends there; the "
                       "rest of the output or a py-spy dump of a rank decides it", [],
                       [Cited(last["file"], last["line"], last["message"])])
    top = rows.sort("busbw_gbs").tail(1).row(0, named=True)
    sizes = rows["bytes"].n_unique()
    figure = (f"avg bus bandwidth {avg.max():g} GB/s over {sizes} size(s)" if avg.len()
              else f"{sizes} size(s) completed")
    end = ("; Out of bounds values: 0 OK" if ev.kinds(EventKind.TEST_PASSED).height
           else "" if ended else "; the table goes on past the output")
    small = ("; busbw 0 at every large size: one rank, nothing crosses a link (nccl-tests' bus bandwidth "
             "factor is 0 for one rank), so the table measures the GPU alone" if alone else
             f"; every rank runs on one GPU ({shared}, as nccl-tests' rank lines name it): their collectives "
             "cross no link between GPUs, so the figures measure that GPU shared, not an interconnect; "
             "give each rank its own GPU to measure the links" if shared else
             f"; the sizes stop below {_size(BEGUN)}, where a table measures latency, not the links' "
             "bandwidth: healthy so far, not a measure of the links" if reached < BEGUN else "")
    return Verdict(Kind.HEALTHY, f"{_test(rows, op=False)}{on}: {figure} ({_size(rows['bytes'].min())} - "
                   f"{_size(reached)}, busbw up to {top['busbw_gbs']:g} GB/s at {_size(top['bytes'])}), "
                   f"no wrong value{end}"
                   + (f"; transport {transport}" if transport else "")
                   + (link_rates.gives(path, large) if path else "")
                   + ": every rank completed each size (nccl-tests prints a row only then)"
                   + small, [],
                   [Cited(top["file"], top["line"], top["message"])] + lines(ends, 2))


def _reached_end(ev: Evidence, rows: pl.DataFrame, ends: pl.DataFrame) -> bool:
    """(s32b) Whether the table reached its end: an end line after its last row, or the largest size asked."""
    last = rows.sort("file", "line").tail(1).row(0, named=True)
    asked = ev.kinds(EventKind.TEST_SIZES)["bytes"].drop_nulls()
    return ends.filter(pl.col("line") > last["line"]).height > 0 or bool(asked.len() and rows["bytes"].max() >= asked.max())


def one_gpu(ev: Evidence) -> str | None:
    """(s27) The one GPU every rank of the test runs on, where nccl-tests' rank lines name two ranks or more
    and one host and bus id for all (``#  Rank  1 Group  0 Pid 2994448 on lab device  0 [0000:02:00] ...``,
    src/common.cu; parsers/nccl_tests.py puts ``lab [0000:02:00]`` in the device event's ``comm``), else
    None: the ranks share that GPU, no link is crossed, and no figure says an interconnect is slow."""
    gpus = ev.kinds(EventKind.BANDWIDTH).filter(pl.col("where") == "device")["comm"]
    if gpus.len() < 2 or gpus.null_count() or not gpus.str.contains(r"\[").all() or gpus.n_unique() != 1:
        return None
    return gpus[0]


#: GB/s one NIC of a GPU cluster's fabric carries at the least (100 Gb/s: EDR, HDR100, 100 GbE RoCE), and
#: what one 400 Gb/s NIC carries (NDR): a node of one or two such NICs sits at or below it
NIC_MIN_GBS, ONE_NIC_GBS = 12.5, 50.0
#: the most GPUs one node's NVLink domain holds in an HGX/DGX board (more ranks span nodes)
NODE_GPUS = 8


def _nics(ev: Evidence) -> int:
    """How many NICs NCCL says it uses (``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB``), 0 if not said."""
    said = ev.store.links.filter(pl.col("what") == "ib_devices")["value"].drop_nulls()
    return max((len(v.split("[")) - 1 for v in said.to_list()), default=0)


def _nodes(ev: Evidence) -> tuple[bool, str]:
    """Whether the test spans nodes, and how the log shows it (hosts in nccl-tests' header, NCCL's nnodes,
    more ranks in one communicator than a node holds GPUs)."""
    r = ev.store.ranks.filter(pl.col("source").str.contains("nccl-tests"))
    hosts = r["host"].drop_nulls().n_unique()
    if hosts > 1:
        return True, f"{hosts} hosts"
    nnodes = ev.store.comms["nnodes"].drop_nulls().max()
    if nnodes and nnodes > 1:
        return True, f"{nnodes} nodes"
    nranks = _ranks_in(ev)
    if nranks > NODE_GPUS:
        return True, f"{nranks} ranks in one communicator, more than the {NODE_GPUS} GPUs a node holds"
    return False, ""


def _node_gpus(ev: Evidence) -> int:
    """(s34) The most ranks nccl-tests' header puts on one host, where it names two hosts or more, else 0."""
    r = ev.store.ranks.filter(pl.col("source").str.contains("nccl-tests") & pl.col("host").is_not_null())
    if r["host"].n_unique() < 2:
        return 0
    return int(r.group_by("host").agg(pl.col("rank").n_unique())["rank"].max())


def _ranks_in(ev: Evidence) -> int:
    """The most ranks of one communicator (NCCL's ``nranks``) or of the world the log states (nccl-tests'
    header, the all-reduce benchmark's ``(5 trials, 16 ranks)``), 0 if unsaid."""
    said = [*ev.store.comms["nranks"].drop_nulls().to_list(),
            *ev.store.ranks["world_size"].drop_nulls().to_list()]
    return int(max(said, default=0))


def _below_links(ev: Evidence, large: pl.DataFrame, ends: pl.DataFrame, on: str,
                 told: nic_rates.Stated | None = None, share: int = 1) -> Verdict | None:
    """A test across nodes whose bus bandwidth at large sizes stays under what one 400 Gb/s NIC carries:
    slow where the NICs NCCL names carry far more (each at least 100 Gb/s); where the log names none, the
    figures and what decides (a node of one or two NICs is at its limit there, an HGX node of 8 is not)."""
    spans, how = _nodes(ev)
    top = large.sort("busbw_gbs").tail(1).row(0, named=True)
    if not spans or top["busbw_gbs"] >= ONE_NIC_GBS / share:
        return None
    lo = large["busbw_gbs"].min()
    held = (f"holds at {lo:g}-{top['busbw_gbs']:g} GB/s from {_size(large['bytes'].min())} to "
            f"{_size(large['bytes'].max())}" if large["bytes"].n_unique() > 1
            else f"is {top['busbw_gbs']:g} GB/s at {_size(top['bytes'])}")
    figure = f"the bus bandwidth {held} across nodes ({how}), with no wrong value"
    cited = [Cited(top["file"], top["line"], top["message"])] + lines(ends, 2)
    nics = _nics(ev)
    if told:  # (s33: the NICs' rate the log states: far under it slow, else what those NICs carry)
        if top["busbw_gbs"] < link_rates.FAR_BELOW * told.gbs:
            return Verdict(Kind.SLOW_PROGRESS, f"{_test(large)}{on}: {figure}: under a third of the NICs' rate the "
                           f"log states ({told.says}); the collectives complete, slowly: check GPUDirect RDMA "
                           "(`GDRDMA` in NCCL's channel lines), the NICs NCCL uses (NCCL_IB_HCA) and the transport",
                           [], cited)
        return None
    if nics and top["busbw_gbs"] < 0.5 * nics * NIC_MIN_GBS / share:
        return Verdict(Kind.SLOW_PROGRESS, f"{_test(large)}{on}: {figure}: far below what the {nics} "
                       f"NICs NCCL uses carry (at least {nics * NIC_MIN_GBS:g} GB/s, 100 Gb/s each); the "
                       "collectives complete, slowly: check each NIC's rate (ibstat), GPUDirect RDMA "
                       "(`GDRDMA` in NCCL's channel lines) and NCCL_IB_HCA", [], cited)
    if nics:
        return None
    # (s34: nodes the header shows holding fewer than 8 GPUs each (a 4-GPU node carries 1-2 NICs, Polaris 2 x 200
    # Gb/s) are at that rate, not an HGX node's 4-8 NICs: the healthy default below, with the figure, says so)
    if _ranks_in(ev) >= 2 * NODE_GPUS and not 0 < _node_gpus(ev) < NODE_GPUS:
        # (twice the GPUs one node holds or more: nodes of up to 8 GPUs each, such as a cluster for
        # multi-node training builds with 4-8 NICs of 200-400 Gb/s per node)
        return Verdict(Kind.SLOW_PROGRESS, f"{_test(large)}{on}: {figure}: under what one 400 Gb/s "
                       f"NIC carries ({ONE_NIC_GBS:g} GB/s), where a node of 8 GPUs built for multi-node "
                       f"training carries 4-8 such NICs ({4 * ONE_NIC_GBS:g}-{8 * ONE_NIC_GBS:g} GB/s of bus "
                       "bandwidth); the collectives complete, slowly: at the links' limit only on a node "
                       "with one or two NICs; check each NIC's rate (ibstat), the NICs NCCL uses "
                       "(NCCL_DEBUG=INFO: "
                       "`NET/IB : Using [0]mlx5_0:1/IB ...`), GPUDirect RDMA (`GDRDMA`) and the network "
                       "plugin", [], cited)
    # (s29: healthy, not undecided: every size completed with right values at a steady bus bandwidth, and nothing
    # in the log says the links carry more; slow wants that said (a NIC's rate, an 8-GPU node's NICs). Fresh dev
    # dv36-002 (540 Cray nodes, 17-19 GB/s) and dv39-012 (2 nodes of 4 GPUs, 34-36 GB/s): labelled healthy)
    per = _node_gpus(ev)
    per = f" (the header puts {per} ranks on a host: a node of {per} GPUs carries 1-2 NICs)" if 0 < per < NODE_GPUS else ""
    return Verdict(Kind.HEALTHY, f"{_test(large)}{on}: {figure}: every size completed on every rank, about what "
                   f"one 400 Gb/s NIC carries per node: healthy as far as the log shows (a node of one or two NICs "
                   f"is at its limit there){per}; the log names neither the NICs nor their speed: on an HGX node of "
                   "4-8 NICs it would be slow, which NCCL_DEBUG=INFO (`NET/IB : Using [0]mlx5_0:1/IB ...`) and "
                   "`ibstat` (Rate) tell", [], cited)


def _corrupt(wrong: pl.DataFrame, on: str) -> Verdict:
    n, sizes = wrong["numel"].drop_nulls(), wrong["bytes"].drop_nulls()
    where = ""
    if sizes.len():
        where = f" at {_size(sizes.min())}"
        where += f" - {_size(sizes.max())}" if sizes.max() != sizes.min() else ""
    return Verdict(Kind.UNDECIDED, f"nccl-tests found wrong values{on}: #wrong up to {n.max()}{where} "
                   f"({wrong.height} result(s)): the collectives complete but their results are corrupted, a "
                   "data corruption, not a hang; find the path that corrupts by rerunning with "
                   "NCCL_P2P_DISABLE=1, NCCL_NET_GDR_LEVEL=LOC or NCCL_PROTO=Simple one at a time (PCIe "
                   "ACS / IOMMU settings, a faulty GPU or NIC)", [], lines(wrong, 4))


def _falls(f: dict, t: pl.DataFrame, on: str) -> Verdict:
    p, a = f["peak"], f["at"]
    rest = (f" and stays at {f['low']:g}-{f['high']:g} GB/s up to {_size(f['last'])}"
            if f["last"] > a["bytes"] else "")
    return Verdict(Kind.SLOW_PROGRESS, f"nccl-tests{_op(t)}{on}: the bus bandwidth falls from "
                   f"{p['busbw_gbs']:g} GB/s at {_size(p['bytes'])} to {a['busbw_gbs']:g} GB/s at "
                   f"{_size(a['bytes'])}{rest}, with no wrong value: a slower path takes over past "
                   f"{_size(p['bytes'])} (a protocol or algorithm switch, or a transport that carries less); "
                   "the collectives complete, slowly", [],
                   [Cited(p["file"], p["line"], p["message"]), Cited(a["file"], a["line"], a["message"])])


#: (s32) GB/s one TCP socket path over the slowest Ethernet of a GPU cluster carries (10 GbE, ~1.2 GB/s); a third of
#: it is far below that link
SOCKET_GBS = 1.25
FAR = 1 / 3


def _on_socket(large: pl.DataFrame, ends: pl.DataFrame, transport: str, on: str,
               told: nic_rates.Stated | None = None) -> Verdict | None:
    """(s32) A test whose connections NCCL logged over TCP sockets only (``via NET/Socket``): the yardstick is
    that socket's Ethernet link, whose rate the log does not state; a busbw at large sizes at a third of what
    10 GbE carries or more is what a socket gives (healthy, the figure and the path said), under it slow. None
    where the transport is not a socket alone (an IB or NVLink path is ``_low``'s)."""
    kinds = {k.strip() for k in transport.split(",") if k.strip()}
    if not kinds or any("Socket" not in k for k in kinds):
        return None
    top = large.sort("busbw_gbs").tail(1).row(0, named=True)
    cited = [Cited(top["file"], top["line"], top["message"])] + lines(ends, 2)
    figure = f"busbw at most {top['busbw_gbs']:g} GB/s at {_size(top['bytes'])} over {transport}, with no wrong value"
    # (s33: an Ethernet link the log rates below 10 GbE (ethtool's `Speed: 1000Mb/s`) is the yardstick itself)
    link = min(SOCKET_GBS, told.gbs) if told else SOCKET_GBS
    if told and link < SOCKET_GBS and top["busbw_gbs"] >= FAR * link:
        return Verdict(Kind.HEALTHY, f"nccl-tests{on}: {figure}: every rank completed each size (nccl-tests prints a "
                       f"row only then), at what the Ethernet link the log rates carries ({told.says}): that link is "
                       "the limit, not a fault", [], cited)
    if top["busbw_gbs"] < FAR * SOCKET_GBS:
        return Verdict(Kind.SLOW_PROGRESS, f"nccl-tests{on}: {figure}: under a third of what a TCP socket over "
                       f"10 GbE carries (~{SOCKET_GBS:g} GB/s); the collectives complete, slowly: check the "
                       "interface NCCL_SOCKET_IFNAME names and its rate (ethtool)", [], cited)
    return Verdict(Kind.HEALTHY, f"nccl-tests{on}: {figure}: every rank completed each size (nccl-tests prints a "
                   f"row only then), at what a TCP socket path over Ethernet carries (10 GbE ~{SOCKET_GBS:g} GB/s; "
                   "NCCL moves the data through the hosts' sockets, not GPUDirect); the log does not state the "
                   "NIC's rate, against which only a far lower figure is slow; an InfiniBand or RoCE fabric, where "
                   "the hosts have one, carries 10x more (NCCL_DEBUG=INFO: `NET/IB : Using ...`)", [], cited)


def _low(large: pl.DataFrame, avg: pl.Series, ends: pl.DataFrame, transport: str, on: str) -> Verdict:
    top = large.sort("busbw_gbs").tail(1).row(0, named=True)
    figure = (f"avg bus bandwidth {' and '.join(f'{a:g}' for a in avg.to_list()[:3])} GB/s, " if avg.len()
              else "") + f"at most {top['busbw_gbs']:g} GB/s at {_size(top['bytes'])}"
    cited = [Cited(top["file"], top["line"], top["message"])] + lines(ends, 2)
    if transport:
        return Verdict(Kind.SLOW_PROGRESS, f"nccl-tests{on}: {figure} over {transport}: far below what a GPU "
                       f"interconnect carries ({LOW_BUSBW:g} GB/s and up at large sizes); the collectives "
                       "complete, slowly", [], cited)
    # no transport logged: still under what the slowest GPU fabric carries (one 100 Gb/s NIC ~12 GB/s, PCIe
    # Gen3 x16 ~12 GB/s, NVLink 10x that), so the links in use (a TCP socket path, a slow NIC, a proxy) are
    # slower than the job's hardware is built for: slow, with the figure; which path NCCL_DEBUG=INFO says
    return Verdict(Kind.SLOW_PROGRESS, f"nccl-tests{on}: {figure}, with no wrong value: under the "
                   f"{LOW_BUSBW:g} GB/s that the slowest GPU interconnect carries at large sizes (one "
                   "100 Gb/s NIC or PCIe Gen3 ~12 GB/s, NVLink 10x that); the collectives complete, slowly; "
                   "the log does "
                   "not name the transport: NCCL_DEBUG=INFO (`via NET/Socket` for a TCP path, `via NET/IB`) "
                   "and the NICs' rate (ibstat) say which link limits it", [], cited)
