"""A benchmark's single result line, read by its shape (split from parsers/result_tables.py in session 26,
which reads the tables and calls ``line_event`` for every line outside them).

A tool or a script prints one line per measurement: iperf's interval (esnet/iperf src/iperf_locale.c
report_bw_format), a script's timed transfer (``allreduce 1GB: 12.3 ms, 81 GB/s``, Open MPI's examples'
ping-pong ``8 bytes took 6 usec ( 2.789 MB/sec)``), a figure named with its unit in brackets, as perftest
heads its columns (``BW average[Gb/sec] 97.29``, ``t_avg[usec]: 2.97``, linux-rdma/perftest
src/perftest_parameters.h RESULT_FMT) and users copy them into their summaries, a collective's time
(``all-reduce of 1 GiB over 8 TPU chips: 1.83 ms``; JAX's ``psum``), a link's rate (ibstat's ``Rate: 100``),
and the checks and sizes of hccl_test. Each is one event of parsers/result_tables.py's schema (``kind``,
``where``, ``message``, ``bytes``, ``duration_ms``, ``busbw_gbs``, ``rank``), or None.
"""

from __future__ import annotations

import re

from tracekit.schema import EventKind

#: a rate unit: a prefix, bytes or bits, per second (``MB/sec``, ``Gbps``, ``GBps``, ``Gbits/sec``, ``GiB/s``)
RATE = r"([KMGT])(i?)(Bytes|Byte|B|bits|bit|b)(?:/s|/sec|ps)"
#: time units in ms
TIME_MS = {"ns": 1e-6, "us": 1e-3, "usec": 1e-3, "µs": 1e-3, "μs": 1e-3, "ms": 1.0, "msec": 1.0, "s": 1e3,
           "sec": 1e3, "secs": 1e3, "seconds": 1e3}
#: size units in bytes (DeepSpeed's convert_size and iperf's transfers use 1024s)
SIZE_B = {"b": 1, "bytes": 1, "byte": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "kbytes": 2**10, "m": 2**20,
          "mb": 2**20, "mib": 2**20, "mbytes": 2**20, "g": 2**30, "gb": 2**30, "gib": 2**30, "gbytes": 2**30,
          "t": 2**40, "tb": 2**40, "tib": 2**40, "tbytes": 2**40}
#: iperf's interval line (esnet/iperf src/iperf_locale.c report_bw_format; iperf2's ``[  3]  0.0-10.0 sec``)
IPERF = (r"^\s*\[\s*(?:\d+|SUM)\]\s+([\d.]+)-\s*([\d.]+)\s+sec\s+([\d.]+)\s+([KMGT]?)Bytes\s+([\d.]+)\s+"
         r"([KMGT]?)bits/sec\b")
#: a line that times a transfer: a rate, with a size, a time or a bandwidth word beside it
FIGURE = r"\b(\d+(?:\.\d+)?)\s*([KMGT]i?(?:Bytes|B|bits|bit|b)(?:/s|/sec|ps))(?:[^\w/]|$)"
NEAR = (r"(?i)\b\d+(?:\.\d+)?\s*(?:bytes|[KMGT]i?B)\b|\b\d+(?:\.\d+)?\s*(?:us|usec|ms|msec|µs|μs)\b"
        r"|\b(?:bandwidth|throughput|busbw|algbw|bw|bitrate|achieved|average|avg|peak|measured|memcpy)\b")
#: the CUDA samples' own verdict that the test failed (Common/helper_string.h / the samples' ``printf("%s\n",
#: (bTestResult ? "Result = PASS" : "Result = FAIL"))``): the run's own word, read by
#: rules_results.tests_failed
RESULT_FAIL = (r"^\s*Result = FAIL\s*$"
               # hccl_test's rank whose check failed (hicann/oam-tools src/hccl_test/common/src/
               # hccl_opbase_rootinfo_base.cc print_execution_time: ``local rank_id %d, check result failed, ...``)
               r"|^\s*local rank_id \d+, check result failed\b")
#: hccl_test's sizes asked, at its start (src/hccl_test/common/src/hccl_test_common.cc init_hcclComm: ``the
#: minbytes is %llu, maxbytes is %llu, iters is %d, warmup_iters is %d``): a ``test_sizes`` event
ASKED = r"^\s*the minbytes is \d+, maxbytes is (\d+), iters is \d+"
#: a line that times a collective or a transfer, with no rate (``all_reduce latency: 35.2 us``, ``allreduce
#: 1GB took 12.3 ms``): a collective's or a transfer's word, then its time
#: (s26) the collectives' names as users and JAX write them (``all-reduce``, ``all gather``, ``psum``,
#: ``ppermute``, XLA's ``collective-permute``) and perftest's latency columns named in a summary (``t_avg 2.97
#: usec``: src/perftest_parameters.h RESULT_FMT_LAT's ``t_min[usec]``, ``t_avg[usec]``)
TIMED = (r"(?i)\b(?:latency|all[_\- ]?reduce|all[_\- ]?gather|reduce[_\- ]?scatter|broadcast|all[_\- ]?to[_\- ]?all"
         r"|alltoall|sendrecv|send/recv|p2p|ping-?pong|round[- ]trip|psum|pmean|ppermute|collective[_\- ]permute"
         r"|t_(?:avg|min|max|typical))\b[^|;]{0,40}?\b\d+(?:\.\d+)?\s*(?:us|usec|ms|µs|μs|s|sec|secs|seconds)\b")
#: (s26) a figure named with its unit in brackets before it, as perftest heads its columns and users copy
#: them into a summary (``BW average[Gb/sec] 97.29``, ``busbw (GB/s): 45.1``, ``t_avg[usec]: 2.97``): group
#: ``unit`` and ``value``
#: (s27) with a suffix after the name (``busbw_avg (Gbps): 1495.6``, ``tput_avg (Gbps):``: DeepSpeed's
#: benchmarks and the all_reduce_bench scripts copied from them, e.g. llm-jp/scripts server/gpu/all_reduce_bench,
#: ``print('tput_avg (Gbps):', tput_avg.item(), 'busbw_avg (Gbps):', busbw_avg.item())``); a line that names
#: both gives its bus bandwidth (``BUSBW_LABELLED``)
_NAMED_FIGURE = (r"(?:_(?:avg|mean|min|max|peak))?\b[\w ]{0,12}?\s*"
                 r"[\[(](?P<unit>[KMGT]i?(?:Bytes|B|bits|bit|b)(?:/s|/sec|ps)|usec|us|ms|µs|μs)[\])]\s*[:=]?\s*"
                 r"(?P<value>\d+(?:\.\d+)?)\b")  # (the suffix, the unit in brackets, the figure)
LABELLED = r"(?i)\b(?:bw|busbw|algbw|bandwidth|throughput|tput|bitrate|lat(?:ency)?|t_\w+)" + _NAMED_FIGURE
BUSBW_LABELLED = r"(?i)\bbusbw" + _NAMED_FIGURE
#: not a measured transfer: a download's or a progress bar's rate, NCCL's own lines, an error
#: (a training's progress line, its step and loss, is the progress parsers' (parsers/series.py), no
#: transfer)
NOT_A_RESULT = (r"(?i)\b(?:eta|downloading|downloaded|fetching|uploading|pulling|error|fail\w*|timed? ?out"
                r"|wait\w*|hang\w*|hung|stuck|still|heartbeat|watchdog|training|\w*SamplesPerSec"
                r"|timing out|timeout|loss|epoch|lr)\b|\bstep\W{0,3}\d+|%\||\bit/s\b|━"
                r"|\bNCCL (?:INFO|WARN)\b"
                r"|\|\s*\d+/\d+ \[")
#: a link's rate the excerpt states: ibstat (infiniband-diags src/ibstat.c ``Rate: %d``), ibstatus
#: (``rate:	 100 Gb/sec (4X EDR)``), a NIC named by its speed (``ConnectX-6 ... 100GbE``, ``400G``)
#: (s26) ethtool's ``Speed: 100000Mb/s`` (ethtool.c dump_link_usettings ``fprintf(stdout, "%uMb/s", speed)``,
#: group 4, in Mb/s) and a link's rate said before its kind (``100 Gbps InfiniBand``, ``200Gb/s HDR``)
LINK = (r"^\s*Rate:\s*(\d+)\s*$|^\s*rate:\s*(\d+) Gb/sec\b|\b(?:ConnectX|Mellanox|NIC|HCA|RoCE|ethernet)"
        r"\b.*?\b(100|200|400|800)\s?G(?:bE|b/s)?\b|^\s*Speed:\s*(\d{4,7})\s*Mb/s\s*$"
        r"|\b(10|25|40|50|100|200|400|800)\s?(?:Gb/s|Gbps|Gbit/s|GbE)\s+(?i:InfiniBand|IB|RoCE|HDR|NDR|EDR"
        r"|ethernet|NICs?|HCAs?|network|links?|interconnect)\b")
#: NCCL's own word of an IB/RoCE port's speed, in Mb/s (src/transport/net_ib.cc ncclIbInitDevices:
#: ``INFO(NCCL_NET,
#: "NET/IB: [%d] %s:%s:%d/%s provider=%s speed=%d context=%p pciPath=%s ar=%d", ...)``, the speed from
#: ncclIbSpeed: the port's lane speed times its width, 100000 for 4X EDR)
NCCL_SPEED = r"\bNET/IB\s?: \[\d+\] \S+.*?\bspeed=(\d{4,7})\b"


def rate_gbs(unit: str) -> float | None:
    """GB/s in one ``unit`` (``MB/sec`` -> 1e-3, ``Gbps`` -> 0.125, ``GiB/s`` -> 1.07), else None."""
    m = re.fullmatch(RATE, unit.strip())
    if not m:
        return None
    prefix, binary, what = m.groups()
    scale = (1024 if binary else 1000) ** ("KMGT".index(prefix) + 1) / 1e9
    return scale / 8 if what.startswith("b") else scale



def line_event(s: str, tool: str, named: bool) -> dict | None:
    """A single result line's event (iperf's interval, a script's timed transfer, a link's rate), else None;
    ``named``: ``tool`` is a known tool's name (its message starts with it)."""
    if re.search(RESULT_FAIL, s):
        return dict(kind=EventKind.TEST_WRONG.value, where="tests_failed", message=s.strip())
    if m := re.search(ASKED, s):
        return dict(kind=EventKind.TEST_SIZES.value, where="benchmark", message=f"{tool}: {s.strip()}",
                    bytes=int(m.group(1)))
    if m := re.search(IPERF, s):
        start, end, _moved, _mu, rate, ru = m.groups()
        gbs = float(rate) * (rate_gbs(f"{ru or 'K'}bits/sec") if ru else 1e-9 / 8)
        # (the transfer is what the interval moved, not a message size: left in the message)
        return dict(kind=EventKind.BANDWIDTH.value, where="benchmark", message=f"iperf: {s.strip()}",
                    duration_ms=(float(end) - float(start)) * 1e3, busbw_gbs=gbs)
    if m := re.search(LINK, s):
        v = float(next(x for x in m.groups() if x)) / (1000 if m.group(4) else 1)  # (ethtool's Mb/s)
        return dict(kind=EventKind.BANDWIDTH.value, where="link_rate", message=s.strip(),
                    busbw_gbs=v / 8)
    if m := re.search(NCCL_SPEED, s):
        return dict(kind=EventKind.BANDWIDTH.value, where="link_rate", message=s.strip(),
                    busbw_gbs=float(m.group(1)) / 8000)
    if (m := re.search(BUSBW_LABELLED, s) or re.search(LABELLED, s)) and not re.search(NOT_A_RESULT, s):
        value, unit = float(m.group("value")), m.group("unit")
        gbs = rate_gbs(unit)
        return dict(kind=EventKind.BANDWIDTH.value, where="benchmark",
                    message=f"{tool}: {s.strip()}" if named else s.strip(),
                    busbw_gbs=value * gbs if gbs else None,
                    duration_ms=None if gbs else value * TIME_MS[unit.lower()])
    rated = re.search(FIGURE, s) and re.search(NEAR, re.sub(FIGURE, "", s))
    if (rated or re.search(TIMED, s)) and not re.search(NOT_A_RESULT, s):
        # (a bus bandwidth where the line gives one, else its first rate)
        m = re.search(r"(?i)\bbusbw\W{0,3}" + FIGURE[2:], s) or re.search(FIGURE, s)
        size = re.search(r"(?i)\b(\d+(?:\.\d+)?)\s*(bytes|[KMGT]i?B)\b", re.sub(FIGURE, "", s))
        plain = re.search(r"(?i)\b(?:size|bytes|nbytes|msg_size)\s*[=:]?\s*(\d+)\b", s)
        took = re.search(r"(?i)\b(\d+(?:\.\d+)?)\s*(us|usec|ms|msec|µs|μs|s|sec|secs|seconds)\b", s)
        rank = re.search(r"(?i)\brank\s*[:=#]?\s*(\d+)\b", s)
        nbytes = (int(float(size.group(1)) * SIZE_B[size.group(2).lower()]) if size
                  else int(plain.group(1)) if plain else None)
        return dict(kind=EventKind.BANDWIDTH.value, where="benchmark",
                    message=(f"{tool}: {s.strip()}" if named
                             or (re.match(r"\./|[\w\-]+\.py$", tool) and not rank) else s.strip()),
                    busbw_gbs=float(m.group(1)) * rate_gbs(m.group(2)) if rated and m else None, bytes=nbytes,
                    duration_ms=float(took.group(1)) * TIME_MS[took.group(2).lower()] if took else None,
                    rank=int(rank.group(1)) if rank else None)
    return None
