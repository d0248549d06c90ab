"""Ingest throughput on synthetic NCCL INFO logs with COLL lines, against per-line Python parsers.

Usage: python benchmarks/ingest_nccl.py [MB] [RANKS]   (default 200 MB, 64 ranks)
Prints, in one run on the same input:
  baselines  a per-line Python `re` loop that only matches COLL lines (the floor of any per-line
             Python parser), and one that builds the same rows as tracekit (a polars frame);
  tracekit   the NCCL parser on one big file, pinned to one core (C scanner, then polars for the
             rest), the same without the C scanner (polars alone), and `tracekit.ingest` end to end
             on one file per rank on every core (every text parser, rank resolution, schema).
The one-core rows run in one child process, pinned with sched_setaffinity before polars starts its
threads, so "per core" means one core, best of 3 runs there. The end-to-end ingest runs in 3 fresh
processes, twice in each: the first is what a command pays (fresh memory: page faults and
zeroing), the second reuses the memory the first one touched; the best of each is shown.
"""

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if "--one-core" in sys.argv:  # before polars starts its thread pool: every thread on one core
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import tracekit  # noqa: E402,F401 - before polars, as the CLI imports them (tracekit/__init__.py)
import polars as pl  # noqa: E402

from tracekit.ingest import ingest  # noqa: E402
from tracekit.parsers import nccl  # noqa: E402


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
ROW = re.compile(r"^([\w.\-]+):(\d+):\d+ \[(\d+)\] NCCL INFO (\w+): opCount ([0-9a-fA-F]+) sendbuff \S+ recvbuff \S+ "
                 r"count (\d+) datatype (\d+) op \d+ root -?\d+ comm (\S+)(?: \[nranks=(\d+)\])?")


def baseline_match(data: str) -> int:
    """Match each line, convert one field: what every per-line parser does at least."""
    rows = 0
    for line in data.split("\n"):
        m = PY.search(line)
        if m:
            rows += 1
            int(m.group(6), 16)
    return rows


def baseline_rows(data: str) -> int:
    """A plain per-line regex parser that builds the rows tracekit keeps (host, pid, dev, op, seq,
    count, dtype, comm, nranks) as a polars frame."""
    cols = [[] for _ in range(9)]
    for line in data.split("\n"):
        m = ROW.match(line)
        if m:
            host, pid, dev, op, seq, count, dtype, comm, nranks = m.groups()
            for c, v in zip(cols, (host, int(pid), int(dev), op, int(seq, 16), int(count), int(dtype), comm,
                                   int(nranks) if nranks else None)):
                c.append(v)
    names = ("host", "pid", "dev", "op", "seq", "count", "dtype", "comm", "nranks")
    return pl.DataFrame(dict(zip(names, cols))).height


def count_newlines(data: bytes) -> int:
    """Not a parser: one pass of memchr over the bytes, about the ceiling of any parser on this machine."""
    return data.count(b"\n")


def nccl_parser(data: bytes) -> int:
    lines, coll = nccl.read_many([("synthetic", data)])
    return nccl.parse(lines, coll).tables["collectives"].height


def nccl_parser_polars(data: bytes) -> int:
    saved, nccl._scan = nccl._scan, None
    try:
        return nccl_parser(data)
    finally:
        nccl._scan = saved


REPEAT = 3  # every figure is the best of this many runs (this machine's timings wander by 30%)


def timed(f, arg) -> tuple[float, int]:
    best = float("inf")
    for _ in range(REPEAT):
        t = time.perf_counter()
        n = f(arg)
        best = min(best, time.perf_counter() - t)
    return best, n


def one_core(path: str) -> None:
    """Child: the one-core rows, as `name seconds rows` lines."""
    data = Path(path).read_bytes()
    text = data.decode()
    for name, f, arg in (("baseline_match", baseline_match, text), ("baseline_rows", baseline_rows, text),
                         ("parser", nccl_parser, data), ("parser_polars", nccl_parser_polars, data),
                         ("newlines", count_newlines, data)):
        if name == "parser" and nccl._scan is None:
            continue
        s, n = timed(f, arg)
        print(name, s, n, flush=True)


def all_cores(folder: str) -> None:
    """Child: ``ingest`` of the rank files on every core, twice, as `seconds rows` each: the first in
    its process, as a command's is, then a second, which reuses the memory the first one touched."""
    for _ in range(2):
        t = time.perf_counter()
        n = ingest([folder]).collectives.height
        print(time.perf_counter() - t, n)


def main():
    if "--one-core" in sys.argv:
        return one_core(sys.argv[-1])
    if "--all-cores" in sys.argv:
        return all_cores(sys.argv[-1])
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    mb = int(args[0]) if args else 200
    ranks = int(args[1]) if len(args) > 1 else 64
    data = synth(mb, ranks)
    size = len(data) / 2**20
    cores = len(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as tmp:
        whole = Path(tmp, "whole.log")
        whole.write_text(data)
        child = subprocess.run([sys.executable, __file__, "--one-core", str(whole)], capture_output=True, text=True,
                               check=True).stdout.split("\n")
        one = {w[0]: (float(w[1]), int(w[2])) for w in (line.split() for line in child) if w}
        assert one["newlines"][1] == one["baseline_match"][1] + ranks, "the synthetic input changed shape"
        one["newlines"] = (one["newlines"][0], one["baseline_match"][1])
        by_rank: dict[str, list[str]] = {}
        for line in data.split("\n")[:-1]:
            by_rank.setdefault(line.split(" ", 1)[0], []).append(line)
        folder = Path(tmp, "ranks")
        folder.mkdir()
        settled = time.time() - 60  # the logs of a run that has stopped writing (live ones are read, not mapped)
        for i, ls in enumerate(by_rank.values()):
            Path(folder, f"nccl.{i}.log").write_text("\n".join(ls) + "\n")
            os.utime(Path(folder, f"nccl.{i}.log"), (settled, settled))
        n_files = len(by_rank)
        del data, by_rank
        # each in a fresh process, as the CLI runs (this one holds the input and the heap it left)
        runs = [subprocess.run([sys.executable, __file__, "--all-cores", str(folder)], capture_output=True, text=True,
                               check=True).stdout.split() for _ in range(REPEAT)]
        t_all, n_all = min((float(r[0]), int(r[1])) for r in runs)  # first in a process
        t_again = min(float(r[2]) for r in runs)  # second in the same process
    n = one["baseline_match"][1]
    assert all(rows == n for _, rows in one.values()) and n_all == n, (one, n_all)
    base = one["baseline_match"][0]
    scanner = "C scanner" if nccl._scan is not None else "C scanner NOT BUILT"
    print(f"input      {size:.0f} MB, {ranks} ranks, {n} COLL lines, {cores} cores")
    rows = [
        ("baseline", "per-line Python re, match only", "baseline_match", 1),
        ("baseline", "per-line Python re, rows -> frame", "baseline_rows", 1),
        ("tracekit", f"NCCL parser, one file ({scanner})", "parser", 1),
        ("tracekit", "NCCL parser, one file, polars only", "parser_polars", 1),
        ("ceiling", "bytes.count(b'\\n') over the input", "newlines", 1),
    ]
    for who, what, key, used in rows:
        if key in one:
            s = one[key][0]
            print(f"{who:10} {what + ', 1 core:':45} {s:6.2f} s {size / s:7.1f} MB/s  ({base / s:4.1f}x)")
    for what, t in ((f"ingest, {n_files} files, {cores} cores:", t_all), ("same, a second time in that process:", t_again)):
        print(f"{'tracekit':10} {what:45} {t:6.2f} s {size / t:7.1f} MB/s  ({base / t:4.1f}x, {size / t / cores:.0f} MB/s per core)")


if __name__ == "__main__":
    from usage import answer_help

    answer_help(__doc__)
    main()
