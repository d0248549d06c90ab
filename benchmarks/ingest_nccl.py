"""Ingest throughput on synthetic NCCL INFO logs with COLL lines, against a per-line Python parser.

Usage: python benchmarks/ingest_nccl.py [MB] [RANKS]   (default 200 MB, 64 ranks)
Prints MB/s of tracekit's vectorised parser and of a plain `re` loop over the same text, in one run.
"""

import re
import sys
import time

from tracekit.parsers import nccl, text


def synth(mb: int, ranks: int) -> str:
    lines = []
    for r in range(ranks):
        lines.append(f"node{r // 8}:{1000 + r}:{2000 + r} [{r % 8}] NCCL INFO comm 0x{r:x}0 rank {r} nranks {ranks} "
                     f"cudaDev {r % 8} busId {r % 8}000 commId 0xfeed - Init COMPLETE")
    one = ("node{n}:{pid}:{tid} [{d}] NCCL INFO AllReduce: opCount {op:x} sendbuff 0x7f00 recvbuff 0x7f10 "
           "count 2097152 datatype 9 op 0 root 0 comm 0x{r:x}0 [nranks={R}] stream 0x55")
    body, size, op = [], 0, 0
    while size < mb << 20:
        for r in range(ranks):
            s = one.format(n=r // 8, pid=1000 + r, tid=2000 + r, d=r % 8, op=op, r=r, R=ranks)
            body.append(s)
            size += len(s) + 1
        op += 1
    return "\n".join(lines + body) + "\n"


PY = re.compile(r"(\S+):(\d+):(\d+) \[(\d+)\] NCCL INFO (\w+): opCount ([0-9a-f]+) .* count (\d+) datatype (\d+) .* comm (0x[0-9a-f]+)")


def baseline(data: str) -> int:
    rows = 0
    for line in data.split("\n"):
        m = PY.search(line)
        if m:
            rows += 1
            int(m.group(6), 16)
    return rows


def main():
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    data = synth(mb, ranks)
    size = len(data) / 2**20
    t = time.perf_counter()
    n_base = baseline(data)
    t_base = time.perf_counter() - t
    t = time.perf_counter()
    p = nccl.parse(text.lines_frame("synthetic", data))
    t_tk = time.perf_counter() - t
    n_tk = p.tables["collectives"].height
    assert n_tk == n_base, (n_tk, n_base)
    print(f"input      {size:.0f} MB, {ranks} ranks, {n_tk} COLL lines")
    print(f"baseline   per-line Python re: {t_base:6.2f} s  {size / t_base:7.1f} MB/s")
    print(f"tracekit   polars expressions: {t_tk:6.2f} s  {size / t_tk:7.1f} MB/s  ({t_base / t_tk:.1f}x)")


if __name__ == "__main__":
    main()
