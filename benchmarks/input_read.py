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

python benchmarks/input_read.py --memory [SAMPLE]   (default samples/gloo_2x2_deadlock)
The hostile cases of issue 30 that cost memory, each added to a copy of SAMPLE and ingested
(``tracekit ingest --no-store``) in a fresh process: its peak resident set (ru_maxrss), its time.
  warnings 64 MB   64 MB of c10d warning lines in a rank's extra log (parsed in ingest.PIECE_BYTES pieces)
  warnings .gz     0.9 MB of gzip holding 256 MB of them (inflated up to inputs.Limits.gzip_bytes)
  line 64 MB       one line of 64 MB (cut at 1 MB)
"""

import gzip
import mmap
import os
import shutil
import subprocess
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


WARNING = b"[rank0]:[W1203 16:16:47.123456 ProcessGroupGloo.cpp:123] some warning text\n"
CASES = {
    "warnings 64 MB": ("rank0.extra.log", lambda f: f.write(WARNING * ((64 << 20) // len(WARNING)))),
    "warnings .gz": ("rank0.extra.log.gz", None),
    "line 64 MB": ("rank0.big.log", lambda f: f.write(b"first line\n" + b"a" * (64 << 20) + b"\nlast\n")),
}


def memory(sample: Path) -> None:
    """Each case of CASES in a fresh ``tracekit ingest``: peak resident MB and seconds."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    for name, (file, write) in CASES.items():
        with tempfile.TemporaryDirectory() as d:
            run = Path(d, "run")
            shutil.copytree(sample, run, ignore=shutil.ignore_patterns(".tracekit"))
            if write is None:
                with gzip.open(run / file, "wb", compresslevel=9) as f:
                    for _ in range(256):
                        f.write(WARNING * ((1 << 20) // len(WARNING)))
            else:
                with open(run / file, "wb") as f:
                    write(f)
            size = (run / file).stat().st_size
            t = time.perf_counter()
            p = subprocess.Popen([sys.executable, "-m", "tracekit.cli", "ingest", str(run), "--no-store"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            _, status, usage = os.wait4(p.pid, 0)
            took = time.perf_counter() - t
            print(f"  {name:<16} {size / (1 << 20):7.1f} MB file  {usage.ru_maxrss / 1024:7.0f} MB resident  "
                  f"{took:6.1f} s  exit {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    from usage import answer_help

    answer_help(__doc__)
    if "--memory" in sys.argv:
        args = [a for a in sys.argv[1:] if a != "--memory"]
        root = Path(__file__).resolve().parent.parent
        memory(Path(args[0]) if args else root / "samples" / "gloo_2x2_deadlock")
    else:
        main()
