"""Flight Recorder analysis: tracekit against torchfrtrace (the analyzer that ships with torch),
the same dumps, in one run: the 16-rank NVRx dumps of the corpus and synthetic dumps of N ranks.

Usage: python benchmarks/fr_analysis.py [RANKS] [ENTRIES]   (default 1024 ranks x 2000 entries)
Both are timed as the commands a user runs (`tracekit verdict DIR`, `torchfrtrace DIR -p PREFIX`),
best of three, so both pay their Python start-up; tracekit's in-process time is printed too, and
the bound that start-up sets: torchfrtrace's time over that of `python -c "import polars"`.
"""

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "nvrx_fr"


def synth(folder: Path, ranks: int, entries: int) -> None:
    """One dump per rank: an all_reduce every entry on the default group; the last rank misses the last one."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg = {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(ranks)))}}
    for r in range(ranks):
        n = entries - (r == ranks - 1)
        es = [{"record_id": i, "pg_id": 0, "process_group": ("0", "default_pg"), "thread_name": "python3",
               "thread_id": "1", "collective_seq_id": i + 1, "p2p_seq_id": 0, "op_id": i + 1,
               "profiling_name": "nccl:all_reduce", "time_created_ns": 1_700_000_000_000_000_000 + i * 1_000_000,
               "input_sizes": [[4096, 1024]], "input_dtypes": ["BFloat16"], "output_sizes": [[4096, 1024]],
               "output_dtypes": ["BFloat16"], "state": "completed" if i < n - 1 else "started",
               "time_discovered_started_ns": None, "time_discovered_completed_ns": None, "retired": i < n - 1,
               "timeout_ms": 600000, "is_p2p": False, "frames": []} for i in range(n)]
        dump = {"version": "2.9", "pg_config": cfg, "nccl_version": "2.27.3",
                "pg_status": {"0": {"last_enqueued_collective": n, "last_started_collective": n,
                                    "last_completed_collective": n - 1}}, "entries": es}
        (folder / f"_dump_{r}").write_bytes(pickle.dumps(dump))


def timed(cmd: list[str]) -> tuple[float, str]:
    best, out = float("inf"), ""
    for _ in range(3):
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        best = min(best, time.perf_counter() - t)
        out = (p.stdout + p.stderr).strip().splitlines()
    return best, next((line for line in out if line.strip() and "tabulate" not in line), "")[:110]


def compare(name: str, folder: Path) -> None:
    from tracekit.ingest import ingest
    from tracekit.verdict import decide

    t = time.perf_counter()
    v = decide(ingest([folder]))
    inproc = time.perf_counter() - t
    tk, tk_line = timed([sys.executable, "-m", "tracekit.cli", "verdict", str(folder)])
    frt = shutil.which("torchfrtrace")
    ft, ft_line = timed([frt, str(folder), "-p", "_dump_", "--allow-incomplete-ranks"]) if frt else (float("nan"), "")
    print(f"{name}")
    print(f"  tracekit verdict     {tk:7.2f} s (in process {inproc:.2f} s)  {v.kind.name}: {v.summary[:90]}")
    print(f"  torchfrtrace         {ft:7.2f} s  {ft_line}")
    print(f"  ratio                {ft / tk:7.1f}x  (torchfrtrace time / tracekit time)")
    print(f"  bound                {ft / FLOOR:7.1f}x  (torchfrtrace time / {FLOOR:.2f} s, Python + polars starting and "
          "doing nothing: no command in Python does better)")


FLOOR = 0.0  # seconds: the start of a Python process that imports polars, best of three (main sets it)


def main():
    global FLOOR
    FLOOR = timed([sys.executable, "-c", "import polars"])[0]
    ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    entries = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    if CORPUS.is_dir():
        compare("nvrx_fr/gpu_error_1st (16 ranks, real dumps)", CORPUS / "gpu_error_1st")
    with tempfile.TemporaryDirectory() as tmp:
        synth(Path(tmp), ranks, entries)
        size = sum(f.stat().st_size for f in Path(tmp).iterdir()) / 2**20
        compare(f"synthetic: {ranks} ranks x {entries} entries ({size:.0f} MB of dumps), rank {ranks - 1} misses the last",
                Path(tmp))


if __name__ == "__main__":
    from usage import answer_help

    answer_help(__doc__)
    os.environ.setdefault("POLARS_MAX_THREADS", str(os.cpu_count()))
    main()
