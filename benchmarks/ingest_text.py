"""Ingest throughput on a text-heavy log: a training job's stdout (framework banners, settings, steps,
warnings), not NCCL's lines, where every text parser but NCCL's reads every line.

Usage: python benchmarks/ingest_text.py [MB] [FILE ...]
  (default 50 MB from the Megatron-DeepSpeed runs of /work/shared/corpus/bigscience/*.out, repeated)
Prints the best of 3 `tracekit.ingest` runs over one file per 1/8 of the text, the lines per second and the
share of lines left unknown.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import tracekit  # noqa: F401 - before polars, as the CLI imports them
from tracekit.ingest import ingest

CORPUS = Path("/work/shared/corpus/bigscience")


def main() -> None:
    mb = float(sys.argv[1]) if len(sys.argv) > 1 else 50
    sources = [Path(a) for a in sys.argv[2:]] or sorted(CORPUS.glob("*.out"))
    seed = "".join(p.read_text(errors="replace") for p in sources)
    text = seed * max(1, int(mb * 2**20 / max(len(seed), 1)))
    with tempfile.TemporaryDirectory() as d:
        part = len(text) // 8
        paths = []
        for i in range(8):
            cut = text[i * part:(i + 1) * part]
            p = Path(d, f"train.{i}.log")
            p.write_text(cut[cut.find("\n") + 1:] if i else cut)
            paths.append(p)
        times, store = [], None
        for _ in range(3):
            t = time.perf_counter()
            store = ingest(paths)
            times.append(time.perf_counter() - t)
        f = store.files
        lines = int((f["lines"] - f["blank"]).sum())
        unknown = int(f["unknown"].sum())
        size = sum(p.stat().st_size for p in paths) / 2**20
        best = min(times)
        print(f"{size:.1f} MB, {lines} non-blank lines in 8 files: best of 3 {best:.2f} s "
              f"({size / best:.1f} MB/s, {lines / best / 1e3:.0f} k lines/s); unknown {unknown} "
              f"({100 * unknown / lines:.1f}%)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from usage import answer_help

    answer_help(__doc__)
    main()
