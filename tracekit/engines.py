"""Where ingest's parsing runs: in this process, in worker processes on this machine, or on a Ray cluster.

``ingest.parse_files`` is a pure function of its files and ``ingest.combine`` makes the store from
its results however the files were split, so an engine only decides where each batch of files is
parsed. Text is parsed in this process (its C scanner and polars use every core already); Flight
Recorder dumps are decoded by Python, one core each, so many of them go to worker processes.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

from tracekit import schema
from tracekit.errors import StoreError
from tracekit.parsers import Parsed
from tracekit.store import Store

# Worker processes start Python and import polars (0.3 s each here): worth it from this many dumps
# on (1,024 dumps of 2,000 entries decode in about 10 s on one core)
DUMPS_FOR_WORKERS = 64


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _decode(paths: list[str]) -> list[tuple[dict, list[Parsed]] | None]:
    """Each file's ``files`` row and parsed dump; None for a file that turned out to be text (the
    caller parses text with the rest of its batch)."""
    from tracekit.ingest import _classify_safely, _read

    out = []
    for p in paths:
        row, got = _classify_safely(p, _read(p))
        out.append((row, got) if isinstance(got, list) else None)
    return out


def _worker() -> None:
    """A worker process: file paths on stdin (NUL between them), their results pickled into argv[1]."""
    paths = sys.stdin.buffer.read().decode().split("\0")
    Path(sys.argv[1]).write_bytes(pickle.dumps(_decode(paths), protocol=pickle.HIGHEST_PROTOCOL))


def decode_dumps(paths: list[str]) -> dict[str, tuple[dict, list[Parsed]]]:
    """Flight Recorder dumps decoded in worker processes, one per core, each file's result as this
    process would make it (so the store is the same, row for row). A file that is not a dump after
    all, or whose worker failed, is left out of the answer: the caller parses it itself.

    Workers are fresh interpreters (``python -c``), not multiprocessing's: its spawn re-runs the
    caller's main script, and fork would copy polars' thread pool without its threads."""
    workers = min(cores(), max(1, len(paths) // (DUMPS_FOR_WORKERS // 2)))
    chunks = [c for c in (paths[i::workers] for i in range(workers)) if c]
    out: dict[str, tuple[dict, list[Parsed]]] = {}
    with tempfile.TemporaryDirectory(prefix="tracekit-dumps-") as tmp:
        procs = []
        for i, chunk in enumerate(chunks):
            res = Path(tmp, f"{i}.pickle")
            p = subprocess.Popen([sys.executable, "-c", "from tracekit.engines import _worker; _worker()", str(res)],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            p.stdin.write("\0".join(chunk).encode())
            p.stdin.close()
            procs.append((p, res, chunk))
        for p, res, chunk in procs:
            if p.wait() != 0 or not res.exists():
                continue
            got = pickle.loads(res.read_bytes())
            out.update((path, r) for path, r in zip(chunk, got) if r is not None)
    return out


def parse_on_ray(paths: list[str], address: str | None = None, tasks: int | None = None) -> Store:
    """The store of ``paths`` parsed on a Ray cluster: one task per batch of files (about equal in
    bytes), the results combined here. ``address``: a running cluster's (``ray://host:10001`` or
    ``host:6379``); None starts a local one for the duration. Every node must see the files under
    the same paths (a shared filesystem)."""
    try:
        import ray
    except ImportError:
        raise StoreError("the ray engine needs Ray: pip install 'tracekit[ray]'") from None
    from tracekit.ingest import _batches, _size, combine, discover, parse_files

    files = [str(p) for p in discover(paths)]
    started = not ray.is_initialized()
    if started:
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise StoreError(f"ray: cannot reach a cluster at {address or 'a new local one'} ({e})") from None
    try:
        n = tasks or max(1, int(ray.cluster_resources().get("CPU", 1)))
        parse = ray.remote(parse_files)
        refs = [parse.remote(batch) for batch in _batches(files, n, _size(files))]
        results = [r for got in ray.get(refs) for r in got]
    finally:
        if started:
            ray.shutdown()
    return combine(results)


def scan(folder: str | Path) -> Store:
    """A store on disk whose collectives stay there: a LazyFrame over ``collectives.parquet``, the
    other tables (one row per rank, process, communicator or event) read. The verdict takes it as
    it takes a store in memory (``tracekit.verdict.decide``): its group-bys over the collectives run
    streaming, a piece of the file at a time, so memory holds the answers, not the table."""
    folder = Path(folder)
    tables: dict[str, pl.DataFrame | pl.LazyFrame] = {}
    for name, sch in schema.TABLES.items():
        path = folder / f"{name}.parquet"
        if not path.exists():
            raise StoreError(f"{path}: missing; re-run `tracekit ingest` on the logs")
        try:
            table = pl.scan_parquet(path) if name == "collectives" else pl.read_parquet(path)
            got = dict(table.collect_schema())
        except Exception as e:  # noqa: BLE001 - polars raises several kinds for a bad file
            raise StoreError(f"{path}: not a readable parquet file ({type(e).__name__}); re-run `tracekit ingest`") from None
        if got != sch:
            raise StoreError(f"{path}: columns differ from tracekit's schema; re-run `tracekit ingest`")
        tables[name] = table
    return Store(**tables)
