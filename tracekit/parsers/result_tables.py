"""Communication benchmarks' result tables and result lines, read by their shape (issue 31, session 24).

A benchmark prints a header naming its columns, with their units, then one row of numbers per size it
measured; or a single result line holding a figure in bytes (or bits) per second, or a latency. Each
tool words its header differently, but the shape is one: a column of the size (``#bytes``, ``# Size``,
``Size (Bytes)``, ``Transfer Size (Bytes)``, ``size(B)``), columns of a time (``t_avg[usec]``, ``Avg
Latency(us)``, ``Duration``) and of a bandwidth (``BW average[MB/sec]``, ``Bandwidth (MB/s)``,
``Throughput (Gbps)``, ``BusBW (Gbps)``, ``Bandwidth(GB/s)``), the unit in the header (``[MB/sec]``,
``(us)``) or in the cell (DeepSpeed's ``1.4 ms``, ``8.0 KB``). The printing code read for it:

- perftest (linux-rdma/perftest src/perftest_parameters.h: RESULT_FMT `` #bytes     #iterations    BW
  peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]``, RESULT_FMT_G with ``[Gb/sec]``, RESULT_FMT_LAT
  `` #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec] ...``, REPORT_FMT a row per size);
- OSU micro-benchmarks (c/util/osu_util_mpi.c: ``# Size      Bandwidth (MB/s)``, ``# Size       Avg
  Latency(us)``);
- DeepSpeed's communication benchmarks (benchmarks/communication/utils.py ``print_header``: ``----
  Performance of all_reduce on 8 devices ----``, ``Size (Bytes)  Description  Duration  Throughput
  (Gbps)  BusBW (Gbps)``; sizes and durations through ``convert_size`` / ``convert_duration``, 1024s);
- CUDA samples' bandwidthTest (``Transfer Size (Bytes)	Bandwidth(GB/s)``, ``Result = PASS``) and
  p2pBandwidthLatencyTest (``Unidirectional P2P=Enabled Bandwidth Matrix (GB/s)``, ``   D\\D     0
  1``, a row per GPU: its outputBandwidthMatrix), nvbandwidth (``memcpy CE CPU(row) -> GPU(column)
  bandwidth (GB/s)``, a matrix, ``SUM host_to_device_memcpy_ce 52.13``);
- iperf3 / iperf2 (esnet/iperf src/iperf_locale.c report_bw_format ``[%3d] %6.2f-%-6.2f sec  %ss  %ss/sec``
  and report_sum_bw_format with ``sender`` / ``receiver``; the rates in Kbits/Mbits/Gbits per second);
- HCCL Test (hccl_test, hicann/oam-tools src/hccl_test/common/src/hccl_opbase_rootinfo_base.cc
  print_execution_time: ``data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:``, rows
  ``%-17llu | %-14.2f | %-20.5f | success``; a row or rank line whose check ``failed`` is a ``test_wrong`` event
  ``where="tests_failed"``; ``the minbytes is 8192, maxbytes is 67108864, ...`` the size asked, ``test_sizes``);
- tables pasted with pipes (markdown's ``| op | size | time (ms) | busbw (GB/s) |``; parsers/piped.py), their
  size column anywhere and their columns of words (the op, the dtype) free;
- any script's line that times a transfer (``allreduce 1GB: 12.3 ms, 81 GB/s``, Open MPI's examples'
  ping-pong ``8 bytes took 6 usec ( 2.789 MB/sec)``).

Each row or line is one ``bandwidth`` event, ``where="benchmark"``: ``bytes`` the size, ``duration_ms``
the time, ``busbw_gbs`` the bandwidth in GB/s (a bus bandwidth where the tool prints one, else its average,
else its figure), ``rank``/``host`` where the line names them; its message starts with the tool's name.
A matrix row's figure is its largest bandwidth off the diagonal (the GPU's own memory is on it). A link's
rate the excerpt states (``ibstat``'s ``Rate: 100``, ``ibstatus``'s ``rate:  100 Gb/sec (4X EDR)``, a NIC
named ``100GbE``/``400G``) is a ``bandwidth`` event ``where="link_rate"``, its rate in ``busbw_gbs``.
nccl-tests' tables are parsers/nccl_tests.py's; headers, separators and rows are claimed, none unknown.
Tables are few and short: their lines are walked in Python once a header is found (most logs hold none).
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.parsers.piped import PIPE_RULE, PIPED_HEAD, depipe
from tracekit.parsers.result_matrix import MATRIX_TITLE, matrix
from tracekit.result_lines import (ASKED, FIGURE, IPERF, LABELLED, LINK, NCCL_SPEED, RATE, RESULT_FAIL, SIZE_B, TIME_MS,
                                    TIMED, line_event, rate_gbs)
from tracekit.schema import EventKind

#: a column separator: two spaces or more, or a tab (a header's names hold single spaces)
SEP = re.compile(r"\t+|\s{2,}")
#: a number and the unit after it, in a cell (``1.4 ms``, ``31.67 GB``, ``8501054668x4``)
CELL = re.compile(r"^(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)\s*([A-Za-zµμ/]*)$|^\d+x\d+$|^(?:Pass|N/?A|success|failed|NULL)$",
                  re.I)
#: what a column's name says it holds
SIZE_COL = re.compile(r"(?i)^#?\s*(?:size|bytes|#bytes|msg ?size|message ?size|transfer size|data_size)\b|^size\(B\)")
BW_COL = re.compile(rf"(?i)\b(?:bw|busbw|algbw|bandwidth|throughput|bitrate)\b|{RATE}")
TIME_COL = re.compile(r"(?i)lat(?:ency)?\b|\btime\b|duration|^t_\w+|\[usec\]|\((?:us|ms|usec)\)")
#: a table's header: the size column first, a bandwidth or time column after it
HEADER = re.compile(rf"(?i)^[#>\s]*(?:size|bytes|#bytes|msg ?size|transfer size|data_size)\b.*(?:\s{{2,}}|\t)"
                    rf".*(?:bw|bandwidth|throughput|lat|time|duration|t_\w+|{RATE})")
#: the tool a file's lines name (first match wins), from its own banner or command
TOOLS = (
    (r"\bib_(?:write|read|send|atomic)_(?:bw|lat)\b|RDMA_(?:Write|Read) (?:BW|Latency) Test"
     r"|Send (?:BW|Latency) "
     r"Test|#bytes\s+#iterations", "perftest"),
    (r"# OSU MPI|\bosu_\w+", "OSU micro-benchmarks"),
    (r"\bhccl_test\b|^data_size\(Bytes\):", "hccl_test"),
    (r"---- Performance of \w+ on \d+ devices", "DeepSpeed's communication benchmark"),
    (r"\bbandwidthTest\b|Transfer Size \(Bytes\)", "CUDA bandwidthTest"),
    (r"p2pBandwidthLatencyTest|P2P=(?:En|Dis)abled", "p2pBandwidthLatencyTest"),
    (r"\bnvbandwidth\b|memcpy (?:CE|SM)", "nvbandwidth"),
    (r"\bshmem_\w+|\bnvshmem", "NVSHMEM perftest"),
    (r"\bucx_perftest\b", "ucx_perftest"),
    (r"RocmBandwidthTest|\brocm[-_]bandwidth[-_]test\b|^\s*D/D(?:\s+\d+)+\s*$", "rocm-bandwidth-test"),
    (r"\biperf3?\b|\[ ID\] Interval", "iperf"),
    (r"^Comm\. Op\s+Message Size\s+Count|" + r"^\s{8,}\d+(?:\.\d+)?\s?[KMGT]?B(?:\s+\d+)(?:\s+[\d.]+){4}\s*$",
     "DeepSpeed's comms logger"),
    (r"_perf\b.*\s-[bef]\s|^# nccl-tests version|^#\s*Avg bus bandwidth|^#\s+Rank\s+\d+ Group", "nccl-tests"),
)
#: the tools' names, as a message starts with them
NAMED = r"^(?:" + "|".join(re.escape(name) for _, name in TOOLS) + r"): "
#: the tool's name a message starts with: a known tool's, or the script a command line ran
LABEL = r"^(" + "|".join(re.escape(name) for _, name in TOOLS) + r"|[\w\-]+\.py|\./[\w\-]+): "
#: DeepSpeed's section title: the op and the devices
DS_TITLE = r"---- Performance of (\w+) on (\d+) devices"
#: (s27) DeepSpeed's comms logger's summary (deepspeed/utils/comms_logging.py CommsLogger.log_all, printed by
#: ``deepspeed.comm.log_summary()``): a header ``Comm. Op  Message Size  Count  Total Latency(ms)  Avg
#: Latency(ms)  tput_avg (Gbps)  busbw_avg (Gbps)``, the op's name alone on a line, then a row per size,
#: indented 20 spaces, the size through convert_size (1024s, ``0B``, ``10.0 KB``): groups size, unit, count,
#: total ms, average ms, algorithm and bus bandwidth in Gb/s
DS_ROW = (r"^\s{8,}(\d+(?:\.\d+)?)\s?([KMGT]?B)\s+(\d+)\s+(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)"
          r"\s+(\d+(?:\.\d+)?)\s*$")
#: the op's name over its rows (the comms logger's record names: the torch.distributed calls it wraps)
DS_OP = (r"^(all_reduce|inference_all_reduce|all_gather(?:_into_tensor|_base)?|reduce_scatter(?:_tensor|_base)?"
         r"|broadcast|all_to_all(?:_single)?|barrier|isend|irecv|send|recv|reduce)"
         r"(?:\s*\|\s*\[Caller Func: \w+\])?\s*$")  # (with ``debug``: the op's caller after it)
#: bandwidthTest's section title over each table (``Host to Device Bandwidth, 1 Device(s)``): its direction
SECTION = (r"^\s*((?:Host|Device) to (?:Host|Device)) Bandwidth, \d+ Device"
           # nvbandwidth's testcase (src/testcases: ``Running host_to_device_memcpy_ce.``)
           r"|^\s*Running (\w+_(?:ce|sm))\.\s*$")
#: lines around a table that carry no figure: separators, perftest's and iperf's boilerplate, verdicts
AROUND = (r"^\s*[-=*]{5,}\s*$|^[#>\s]*-[ -]{8,}$|^\s*(?:- ){5,}-?\s*$|^\s*#?\s*\(B\)\s|^\s*#\s*$"
          r"|^\s*Result = PASS\s*$|^iperf Done\.|^\s*\[ ID\] Interval\b|^Connecting to host \S+, port \d+"
          r"|^\s*\[\s*\d+\] local \S+ port \d+ connected|^Reverse mode, remote host \S+ is sending"
          r"|^Server listening on \d+|^Accepted connection from"
          r"|^\s*(?:Host to Device|Device to Host|Device to Device) Bandwidth, \d+ Device"
          r"|^\s*(?:PINNED|PAGEABLE) Memory Transfers|^\s*D\\D(?:\s+\d+)+\s*$|^SUM \w+ [\d.]+\s*$|^# OSU MPI"
          r"|---- Performance of \w+ on|^#\s*Datatype: \w+|^#\s*Send Buffer on \w+|^\[CUDA Bandwidth Test\]"
          r"|^nvbandwidth Version:|^Built from Git version:|^CUDA (?:Runtime|Driver) Version(?: \(API\))?:"
          # (perftest's server side, before its client connects: src/perftest_communication.c `* Waiting for
          # client to connect... *` in its box of stars; what every pasted ib_write_bw server output starts with)
          r"|^\s*\*\s*Waiting for client to connect\.*\s*\*\s*$"
          r"|^\s*RocmBandwidthTest Version:|^\s*Launch Command is:|^\s*Device: \d+,\s"  # (rocm-bandwidth-test)
          r"|^\s*(?:Inter-)?Device (?:Access|Numa Distance)\s*$|^\s*D/D(?:\s+\d+)+\s*$"
          r"|^Driver Version: [\d.]+\s*$|^\s*Running \w+_(?:ce|sm)\.\s*$|^COEFFICIENT_OF_VARIATION \w+ [\d.]+"
          r"|^Running on\.\.\.$|^\s*Device \d+: .+|^\s*(?:Quick|Range|Shmoo) Mode\s*$|^NOTE: The CUDA Samples"
          # perftest's banner and settings (src/perftest_parameters.c ctx_print_test_info, print_report)
          r"|^\s*(?:local|remote) address: LID|^\s*GID: [\d:]+\s*$|^\s*(?:RDMA_(?:Write|Read)|Send|Atomic"
          r" \w+) (?:BW|Latency) Test\s*$|^\s*(?:Dual-port|Number of qps|Connection type|TX depth|RX depth|CQ"
          r" Moderation|Mtu|Link type|GID index|Max inline data|rdma_cm QPs|Data ex\. method|Outstand reads"
          r"|Using SRQ|PCIe relax order|ibv_wr\* API)\s*:")
#: a line that closes a benchmark's results once every size is done: perftest's RESULT_LINE after its rows
#: (src/perftest_parameters.h:191), the CUDA samples' ``Result = PASS``, iperf3's ``iperf Done.``
CLOSES = r"^\s*-{20,}\s*$"
ENDS = r"^\s*Result = PASS\s*$|^iperf Done\.\s*$"
def _unit(name: str) -> str:
    """The unit a column's name holds in brackets or parentheses (``BW average[MB/sec]`` -> ``MB/sec``)."""
    m = re.search(r"[\[(]([^\])]+)[\])]\s*$", name)
    return m.group(1) if m else (name if re.fullmatch(RATE, name.strip()) else "")


def _role(name: str) -> str | None:
    if SIZE_COL.search(name):
        return "size"
    if BW_COL.search(name) and not re.search(r"(?i)msgrate|mpps|messages/s", name):
        return "bw"
    if TIME_COL.search(name):
        return "time"
    return None


def _pick(cols: list[tuple[int, str]], prefer: tuple[str, ...]) -> tuple[int, str] | None:
    """The column of ``cols`` whose name holds the first word of ``prefer`` that one holds, else the first."""
    for word in prefer:
        for i, name in cols:
            if re.search(word, name, re.I):
                return i, name
    return cols[0] if cols else None


def _cells(text: str, n: int, free: frozenset[int] = frozenset()) -> list[str] | None:
    """The ``n`` cells of a row (split on column gaps, else on every space), else None; the cells of
    columns in ``free`` (a piped table's columns of no figure: its op, its dtype) may hold any word."""
    body = re.sub(r"^[>\s]+", "", text).strip()
    for cells in (SEP.split(body), body.split()):
        if len(cells) == n and all(k in free and c.strip() or CELL.match(c.strip()) for k, c in enumerate(cells)):
            return [c.strip() for c in cells]
    # (s26) a header that names fewer columns than its rows hold: perftest's rows with their ``MsgRate[Mpps]``
    # under a header pasted without it, or two names one space apart read as one (``busbw #wrong``): the
    # rows' first ``n`` cells are the named columns, the one or two after them figures with no name
    cells = body.split()
    if not free and n >= 2 and n < len(cells) <= n + 2 and all(CELL.match(c) for c in cells):
        return cells[:n]
    return None


def _number(cell: str, units: dict[str, float], default: float | None) -> float | None:
    """A cell's figure: times the factor of its own unit (``units``, keyed in lower case; a rate unit read
    by ``rate_gbs``), else the column's ``default``."""
    m = CELL.match(cell)
    if not m or m.group(1) is None:
        return None
    unit = m.group(2) or ""
    factor = (units.get(unit.lower()) or rate_gbs(unit)) if unit else default
    return None if factor is None else float(m.group(1)) * factor


#: a script a command line runs (``torchrun ... ./megatron-allreduce.py``), the tool's name where no
#: known tool is named
#: (s31: the launcher's word then a space: ``python3.8/site-packages/torch/distributed/launch.py:178:
#: FutureWarning`` names an installed module's path, not the script run)
SCRIPT = (r"\b(?:python3?|torchrun|mpirun|mpiexec|srun|deepspeed|accelerate launch)\s.*?([\w\-]+\.py)\b"
          r"|\b(?:mpirun|mpiexec|srun)\b.*?\s(\./[\w\-]+)")


def _tool(texts: list[str]) -> str:
    joined = "\n".join(texts)
    for pattern, name in TOOLS:
        if re.search(pattern, joined, re.M):
            return name
    m = re.search(SCRIPT, joined)
    return (m.group(1) or m.group(2)) if m else "a benchmark"


def read(df: pl.DataFrame) -> pl.DataFrame | None:
    """The result rows and lines of ``df`` (``file``, ``line``, ``text``, a rank column where the lines
    frame has one) as events, and their claimed lines in the frame's ``claimed`` rows (``kind`` null)."""
    t = pl.col("text")
    cand = df.filter(t.str.contains(HEADER.pattern) | t.str.contains(MATRIX_TITLE.pattern)
                     | t.str.contains(IPERF) | t.str.contains(FIGURE) | t.str.contains(LINK)
                     | t.str.contains(NCCL_SPEED) | t.str.contains(AROUND) | t.str.contains(TIMED)
                     | t.str.contains(RESULT_FAIL) | t.str.contains(ENDS) | t.str.contains(ASKED)
                     | t.str.contains(PIPED_HEAD) | t.str.contains(DS_ROW) | t.str.contains(LABELLED))
    if not cand.height:
        return None
    files = df.join(cand.select("file").unique(), on="file", how="semi").sort("file", "line")
    out: list[dict] = []
    for _, g in files.group_by("file", maintain_order=True):
        out += _file(g)
    if not out:
        return None
    for r in out:  # (a size past what Int64 holds is no size a benchmark measured)
        if r.get("bytes") is not None and not 0 <= r["bytes"] < 2**62:
            r["bytes"] = None
    return pl.DataFrame(out, schema={"file": pl.Utf8, "line": pl.Int64, "kind": pl.Utf8, "message": pl.Utf8,
                                     "where": pl.Utf8, "rank": pl.Int64, "host": pl.Utf8, "bytes": pl.Int64,
                                     "duration_ms": pl.Float64, "busbw_gbs": pl.Float64, "op": pl.Utf8})


def _file(g: pl.DataFrame) -> list[dict]:
    """One file's result events and claimed lines (a claimed line with no figure: ``kind`` None)."""
    lines = g["line"].to_list()
    raw = [s or "" for s in g["text"].to_list()]
    texts = [depipe(s) for s in raw]
    # (s31: ``block_rank``, the rank line a figure's block sits under: parsers/rank_blocks.py)
    tags = [c for c in ("rank_tag", "mpi_rank", "launch_rank", "block_rank") if c in g.columns]
    ranks = g.select(pl.coalesce(*tags)).to_series().to_list() if tags else [None] * len(lines)
    tool = _tool(texts)
    op = None
    out: list[dict] = []
    taken: set[int] = set()
    i = 0
    while i < len(texts):
        s = texts[i]
        if m := re.search(DS_TITLE, s) or re.search(SECTION, s) or re.search(DS_OP, s):
            op = m.group(1) or m.group(2)
            if re.search(DS_OP, s) and tool == "DeepSpeed's comms logger":  # (the op's title: claimed)
                out.append(dict(file=g["file"][i], line=lines[i], kind=None, message=s.strip()))
                taken.add(i)
        if m := re.search(DS_ROW, s):
            size, unit, _count, _total, avg, _tput, busbw = m.groups()
            out.append(dict(file=g["file"][i], line=lines[i], rank=ranks[i], kind=EventKind.BANDWIDTH.value,
                            where="benchmark", message=f"{tool}: {op or 'op'} {s.strip()}",
                            bytes=int(float(size) * SIZE_B[unit.lower()]), duration_ms=float(avg),
                            busbw_gbs=float(busbw) / 8, op=op))
            taken.add(i)
            i += 1
            continue
        # (a header pasted with pipes may name its size column anywhere: ``| op | size | time | busbw |``)
        piped = s != raw[i] and len(SEP.split(s.strip())) >= 3
        if (HEADER.search(s) or piped) and not re.search(r"\bcount\s+type\b", s):
            rows, i2 = _table(texts, lines, ranks, i, tool, op, loose=piped)
            if rows:
                out += rows
                taken.update(range(i, i2))
                i = i2
                continue
        if MATRIX_TITLE.search(s):
            rows, i2 = matrix(texts, lines, i, tool, op)
            if rows:
                out += rows
                taken.update(range(i, i2))
                i = i2
                continue
        i += 1
    for k, s in enumerate(raw):
        if k in taken:
            continue
        if ev := line_event(s, tool, bool(re.match(NAMED, f"{tool}: "))):
            out.append({"file": g["file"][k], "line": lines[k], **ev,
                        "rank": ranks[k] if ranks[k] is not None else ev.get("rank")})
        elif re.search(ENDS, s):
            out.append(dict(file=g["file"][k], line=lines[k], kind=EventKind.PROGRAM_END.value,
                            where="benchmark_end", message=f"{tool}: {s.strip()}"))
        elif re.search(AROUND, s) and re.match(NAMED, f"{tool}: "):  # (a known tool's banner, not a script's)
            out.append(dict(file=g["file"][k], line=lines[k], kind=None, message=s.strip()))
    for r in out:
        r.setdefault("file", g["file"][0])
    if tool == "a benchmark" and not any(r.get("where") == "benchmark" for r in out):
        # (a link's rate is a benchmark's yardstick: in a log of no benchmark it is left to others)
        out = [r for r in out if r.get("where") != "link_rate"]
    return out


def _table(texts: list[str], lines: list[int], ranks: list, at: int, tool: str,
           op: str | None, loose: bool = False) -> tuple[list[dict], int]:
    """The rows under the header at ``at``, and the index past the table (a line that is neither a row,
    a blank, a separator nor a note the tool prints inside it ends it)."""
    cols = [c.strip().rstrip(":") for c in SEP.split(re.sub(r"^[#>\s]+", "", texts[at]).strip()) if c.strip()]
    named = [(k, c, _role(c)) for k, c in enumerate(cols)]
    size = _pick([(k, c) for k, c, r in named if r == "size"], ())
    bw = _pick([(k, c) for k, c, r in named if r == "bw"], (r"busbw", r"aver|avg", r"algbw", r"."))
    time = _pick([(k, c) for k, c, r in named if r == "time"], (r"avg|aver|typical", r"."))
    if size is None or (bw is None and time is None):
        return [], at
    free = frozenset(k for k, _, r in named if r is None) if loose else frozenset()
    bw_unit = rate_gbs(_unit(bw[1])) if bw else None
    time_unit = _unit(time[1]).lower() if time else ""
    if bw and bw_unit is None and re.search(r"(?i)\b(?:algbw|busbw)\b", bw[1]):
        # (s26) nccl-tests' column names with no unit (a table of its columns retyped, or mscclpp-test's): its
        # units, microseconds and GB/s (nccl-tests src/common.cu's header ``(us)  (GB/s)  (GB/s)``)
        bw_unit, time_unit = 1.0, time_unit or "us"
    rows: list[dict] = []
    k = at + 1
    while k < len(texts):
        s = texts[k]
        cells = _cells(s, len(cols), free)
        if cells is None:
            if (re.search(CLOSES, s) or re.search(ENDS, s)) and any(r["kind"] for r in rows):
                # (perftest prints RESULT_LINE once every size is done: the table's, and the test's, end)
                rows.append(dict(line=lines[k], kind=EventKind.PROGRAM_END.value, where="benchmark_end",
                                 message=f"{tool}: {s.strip()}"))
                k += 1
                break
            if re.search(SECTION, s) or re.search(DS_TITLE, s) or HEADER.search(s):
                break  # (the next table's title or header)
            if re.search(RESULT_FAIL, s):  # (hccl_test's rank whose check failed, between the root's rows)
                rows.append(dict(line=lines[k], kind=EventKind.TEST_WRONG.value, where="tests_failed",
                                 message=s.strip()))
                k += 1
                continue
            if (not s.strip() or re.search(AROUND, s) or PIPE_RULE.match(s)
                    or re.search(r"(?i)conflicting cpu freq|warning", s)):
                # (perftest's note inside its table: src/perftest_parameters.c check_cpu_freq; claimed)
                rows.append(dict(line=lines[k], kind=None, message=s.strip()))
                k += 1
                continue
            break
        nbytes = _number(cells[size[0]], SIZE_B, SIZE_B.get(_unit(size[1]).lower(), 1))
        gbs = _number(cells[bw[0]], {}, bw_unit) if bw else None
        ms = _number(cells[time[0]], TIME_MS, TIME_MS.get(time_unit, 1.0)) if time else None
        rows.append(dict(line=lines[k], rank=ranks[k], kind=EventKind.BANDWIDTH.value, where="benchmark",
                         message=f"{tool}: {s.strip()}", bytes=int(nbytes) if nbytes is not None else None,
                         busbw_gbs=gbs, duration_ms=ms, op=op))
        if any(c.lower() == "failed" for c in cells):
            # (a row whose own check says failed, hccl_test's ``| failed``: wrong values, never healthy)
            rows.append(dict(line=lines[k], rank=ranks[k], kind=EventKind.TEST_WRONG.value, where="tests_failed",
                             message=f"{tool}: {s.strip()}"))
        k += 1
    if not any(r["kind"] for r in rows):
        return [], at
    return [dict(line=lines[at], kind=None, message=texts[at].strip())] + rows, k
