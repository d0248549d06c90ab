"""What the input layer's checks cost: ``tracekit.inputs.read`` against plain reading, on NCCL logs.

Usage: python benchmarks/input_read.py [MB] [FILES]   (default 1024 MB in 8 files)
Writes FILES synthetic NCCL logs of MB together (COLL lines, ``benchmarks/ingest_nccl.synth``),
dates them a minute back (settled, so ingest maps them), and times, best of 5 runs each:
  mmap        ``mmap.mmap`` of each file (what ingest did before the input layer), touching nothing;
  read        ``open().read()`` of each file (a copy);
  inputs      ``inputs.text(inputs.read(f))`` of each file: the walk, the lease, the map, the NUL and
              long-line checks;
  inputs live the same with the files just written to (not settled: read, not mapped).
Then a NUL-free pass over every byte (``bytes.count`` of newlines: what any parser pays at least) to
set the checks' cost against a pass over the text.
"""

import mmap
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest_nccl import synth  # noqa: E402

from tracekit import inputs  # noqa: E402


def best(fn, n: int = 5) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    nfiles = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    with tempfile.TemporaryDirectory() as d:
        text = synth(mb // nfiles, 8).encode()
        paths = []
        for i in range(nfiles):
            p = Path(d, f"nccl.{i}.log")
            p.write_bytes(text)
            paths.append(str(p))
        del text
        total = sum(os.path.getsize(p) for p in paths)
        old = time.time() - 60
        for p in paths:
            os.utime(p, (old, old))

        def plain_map():
            for p in paths:
                with open(p, "rb") as f:
                    mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ).close()

        def plain_read():
            for p in paths:
                with open(p, "rb") as f:
                    f.read()

        def layer():
            kinds = set()
            for f in inputs.walk([d]).files:
                kinds.add(type(inputs.text(inputs.read(f)).data).__name__)
            return kinds

        def newlines():
            for p in paths:
                with open(p, "rb") as f:
                    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                    bytes(m[:1]).count(b"\n")  # touch
                    m.find(b"\x01")  # a full pass: memchr over every byte
                    m.close()

        print(f"{nfiles} files, {total / (1 << 20):.0f} MB, settled: inputs.read gives {layer()} (mmap: mapped under a lease)")
        rows = [("mmap", best(plain_map)), ("read", best(plain_read)), ("inputs", best(layer)),
                ("memchr pass", best(newlines))]
        for p in paths:
            os.utime(p)  # live now
        rows.append(("inputs live", best(layer)))
        for name, s in rows:
            print(f"  {name:<12} {s * 1000:8.1f} ms  {total / s / (1 << 30):6.2f} GB/s")


if __name__ == "__main__":
    from usage import answer_help

    answer_help(__doc__)
    main()
