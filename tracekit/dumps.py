"""Flight Recorder dumps decoded in worker processes on this machine, below ingest.

Text is parsed in ingest's own process (its C scanner and polars use every core already); a dump
is decoded by Python, one core each, so many of them go to worker processes, each file's result
as ``formats.classify`` makes it in this process (the store is the same, row for row).
"""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from tracekit import formats, schema
from tracekit.parsers import Parsed

# Worker processes start Python and import polars (0.3 s each here): worth it from this many dumps
# on (1,024 dumps of 2,000 entries decode in about 10 s on one core)
DUMPS_FOR_WORKERS = 64
PIECE = 64  # dumps a worker decodes and sends back at a time


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _decode(paths: list[str]) -> list[tuple[dict, list[Parsed]] | None]:
    """Each file's ``files`` row and parsed dump; None for a file that turned out to be text (the
    caller parses text with the rest of its batch)."""
    out = []
    for p in paths:
        row, got = formats.classify_safely(p, formats.read(p))
        out.append((row, got) if isinstance(got, list) else None)
    return out


def _merged(results: list[tuple[dict, list[Parsed]] | None]) -> list[tuple[dict, list[Parsed]] | None]:
    """A worker's results with their tables concatenated, each to the store's schema, and carried
    by the first file (as a batch of text files carries its tables): one frame per table to send
    back and to concatenate, not one per dump and table (4,096 small frames at 1,024 dumps)."""
    got = [r for r in results if r is not None]
    if len(got) < 2:
        return results
    frames: dict[str, list] = {}
    for _, parsed in got:
        for p in parsed:
            for name, df in p.tables.items():
                if df is not None:
                    frames.setdefault(name, []).append(df)
    tables = {name: schema.concat(dfs, schema.TABLES[name]) for name, dfs in frames.items()}
    first = got[0]
    return [None if r is None else (r[0], [Parsed("flight-recorder", tables)] if r is first else [])
            for r in results]


def _worker() -> None:
    """A worker process: file paths on stdin (NUL between them), their results pickled to stdout."""
    gc.disable()  # dumps hold no cycles, and this process ends with them (1 ms a dump of collections)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever else writes to stdout goes where stderr goes
    paths = [os.fsdecode(p) for p in sys.stdin.buffer.read().split(b"\0")]
    with out:  # a piece at a time: the caller unpickles one while this decodes the next
        for i in range(0, len(paths), PIECE):
            pickle.dump(_merged(_decode(paths[i:i + PIECE])), out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()


def decode_dumps(paths: list[str]) -> dict[str, tuple[dict, list[Parsed]]]:
    """Flight Recorder dumps decoded in worker processes, one per core, each file's result as this
    process would make it (so the store is the same, row for row). A file that is not a dump after
    all, or whose worker failed, is left out of the answer: the caller parses it itself.

    Workers are fresh interpreters (``python -c``), not multiprocessing's: its spawn re-runs the
    caller's main script, and fork would copy polars' thread pool without its threads. Results come
    back through pipes (a temporary file of 100 MB per 500 dumps took 3x the decoding on a slow disk)."""
    workers = min(cores(), max(1, len(paths) // (DUMPS_FOR_WORKERS // 2)))
    step = -(-len(paths) // workers)  # in order, one run of files each: the tables stay in file order
    chunks = [c for c in (paths[i:i + step] for i in range(0, len(paths), step)) if c]
    procs = []
    for chunk in chunks:
        p = subprocess.Popen([sys.executable, "-c", "from tracekit.dumps import _worker; _worker()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        p.stdin.write(b"\0".join(map(os.fsencode, chunk)))  # (any byte but NUL may be in a path)
        p.stdin.close()
        procs.append(p)

    def answer(p: subprocess.Popen) -> list:
        """The worker's results, piece by piece: of a worker that failed, the pieces it finished."""
        got = []
        with p.stdout:
            while True:
                try:
                    got += pickle.load(p.stdout)
                except Exception:  # noqa: BLE001 - the end of the pipe, or a piece cut short
                    break
        p.wait()
        return got

    out: dict[str, tuple[dict, list[Parsed]]] = {}
    with ThreadPoolExecutor(len(procs)) as pool:  # every pipe drained at once: none blocks its worker
        for chunk, got in zip(chunks, pool.map(answer, procs)):
            out.update((path, r) for path, r in zip(chunk, got) if r is not None)
    return out
