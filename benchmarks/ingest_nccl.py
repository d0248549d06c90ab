"""Ingest throughput on synthetic NCCL INFO logs with COLL lines, against a per-line Python parser.

Usage: python benchmarks/ingest_nccl.py [MB] [RANKS]   (default 200 MB, 64 ranks)
Prints, in one run on the same input: a plain per-line Python `re` parser (the baseline), tracekit's
NCCL parser on one big file (one core), and `tracekit.ingest` end to end on one file per rank
(every text parser, rank resolution, schema; worker processes across the cores).
"""

import os
import re
import sys
import tempfile
import time
from pathlib import Path

from tracekit.ingest import ingest
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
    with tempfile.TemporaryDirectory() as tmp:
        by_rank: dict[str, list[str]] = {}
        for line in data.split("\n")[:-1]:
            by_rank.setdefault(line.split(" ", 1)[0], []).append(line)
        for i, ls in enumerate(by_rank.values()):
            Path(tmp, f"nccl.{i}.log").write_text("\n".join(ls) + "\n")
        t = time.perf_counter()
        store = ingest([tmp])
        t_all = time.perf_counter() - t
        assert store.collectives.height == n_base, (store.collectives.height, n_base)
    cores = os.cpu_count() or 1
    print(f"input      {size:.0f} MB, {ranks} ranks, {n_tk} COLL lines, {cores} cores")
    print(f"baseline   per-line Python re, 1 core:      {t_base:6.2f} s  {size / t_base:7.1f} MB/s")
    print(f"tracekit   nccl parser, one file, 1 core:   {t_tk:6.2f} s  {size / t_tk:7.1f} MB/s  ({t_base / t_tk:.1f}x)")
    print(f"tracekit   ingest, {len(by_rank)} files, {cores} cores:    {t_all:6.2f} s  {size / t_all:7.1f} MB/s  "
          f"({t_base / t_all:.1f}x, {size / t_all / cores:.0f} MB/s per core)")


if __name__ == "__main__":
    main()
