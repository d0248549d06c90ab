"""Cost of taking prefixes off text-heavy logs: the lines frame (``text.lines_frames``) and ``ingest``
end to end, on synthetic logs whose lines all carry a launcher prefix.

Usage: python benchmarks/ingest_prefixes.py [MB]   (default 100 MB per log)
Three logs of the same lines: under torchrun's `[rank3]:` (a known prefix), under a wrapper no list
knows (`job-3.cluster | node3 >>> `, learned per file), and bare. Each is timed best of 3 in this
process; run it with PYTHONPATH set to another checkout to compare the two.
"""

import sys
import tempfile
import time
from pathlib import Path

import tracekit  # noqa: F401 - before polars, as the CLI imports them
from tracekit.ingest import ingest
from tracekit.parsers import text

BODY = [
    "gpu{h}:{pid}:{pid} [{d}] NCCL INFO Channel 00/0 : {r}[{d}] -> {n}[{d}] via P2P/IPC",
    "gpu{h}:{pid}:{pid} [{d}] NCCL INFO comm 0x{r:x}0 rank {r} nranks 64 cudaDev {d} busId {d}000"
    " - Init COMPLETE",
    "{{'loss': 1.{i}, 'learning_rate': 2e-05, 'epoch': 0.{i}}}",
    "Traceback (most recent call last):",
    '  File "/opt/train.py", line {i}, in <module>',
    "    main()",
    "RuntimeError: something {i} went wrong",
    "step {i} done in 0.3 s",
]


def synth(mb: int, prefix: str) -> str:
    out, size, i = [], 0, 0
    while size < mb << 20:
        r = i % 64
        line = BODY[i % len(BODY)].format(h=r // 8, pid=1000 + r, d=r % 8, r=r, n=(r + 1) % 64, i=i)
        line = prefix.format(r=r, h=r // 8) + line
        out.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(out) + "\n"


def best(f, n=3) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory() as d:
        for name, prefix in [("bare", ""), ("torchrun [rank3]:", "[rank{r}]:"),
                             ("unknown wrapper", "job-{r}.cluster | node{h} >>> ")]:
            log = synth(mb, prefix)
            path = Path(d, "log.txt")
            path.write_text(log)
            frame = best(lambda: text.lines_frames([text.raw("x", log)]))
            end = best(lambda: ingest([path]))
            unknown = int(ingest([path]).files["unknown"].sum())
            print(f"{name:<18} {mb} MB: lines frame {frame:.2f} s, ingest {end:.2f} s, "
                  f"unknown lines {unknown}")


if __name__ == "__main__":
    from usage import answer_help

    answer_help(__doc__)
    main()
