"""Where ingest's parsing runs: in this process, in worker processes on this machine, or on a Ray cluster.

``ingest.parse_files`` is a pure function of its files and ``ingest.combine`` makes the store from
its results however the files were split, so an engine only decides where each batch of files is
parsed. Text is parsed in this process (its C scanner and polars use every core already); Flight
Recorder dumps are decoded by Python, one core each, so many of them go to worker processes.
"""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from tracekit import schema
from tracekit.errors import StoreError
from tracekit.parsers import Parsed
from tracekit.store import Store

# Worker processes start Python and import polars (0.3 s each here): worth it from this many dumps
# on (1,024 dumps of 2,000 entries decode in about 10 s on one core)
DUMPS_FOR_WORKERS = 64
PIECE = 64  # dumps a worker decodes and sends back at a time


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


def _merged(results: list[tuple[dict, list[Parsed]] | None]) -> list[tuple[dict, list[Parsed]] | None]:
    """A worker's results with their tables concatenated, each to the store's schema, and carried
    by the first file (as a batch of text files carries its tables): one frame per table to send
    back and to concatenate, not one per dump and table (4,096 small frames at 1,024 dumps)."""
    from tracekit import schema

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
    return [None if r is None else (r[0], [Parsed("flight-recorder", tables)] if r is first else []) for r in results]


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
        p = subprocess.Popen([sys.executable, "-c", "from tracekit.engines import _worker; _worker()"],
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


def _ray():
    try:
        import ray
    except ImportError:
        raise StoreError("the ray engine needs Ray: pip install 'tracekit[ray]'") from None
    return ray


def _on_cluster(address: str | None, work):
    """``work(ray, cpus)`` on a cluster: the one at ``address``, else (None) a local one started for it."""
    ray = _ray()
    started = not ray.is_initialized()
    if started:
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise StoreError(f"ray: cannot reach a cluster at {address or 'a new local one'} ({e})") from None
    try:
        return work(ray, max(1, int(ray.cluster_resources().get("CPU", 1))))
    finally:
        if started:
            ray.shutdown()


def _file_batches(paths: list, pieces: int | None, cpus: int) -> list[list[str]]:
    from tracekit.ingest import _batches, _size, discover

    files = [str(p) for p in discover(paths)]
    return _batches(files, pieces or cpus, _size(files))


def parse_on_ray(paths: list[str], address: str | None = None, tasks: int | None = None) -> Store:
    """The store of ``paths`` parsed on a Ray cluster: one task per batch of files (about equal in
    bytes; ``tasks`` batches, else one per CPU of the cluster), the results combined here.
    ``address``: a running cluster's (``ray://host:10001`` or ``host:6379``); None starts a local one
    for the duration. Every node must see the files under the same paths (a shared filesystem)."""
    from tracekit.ingest import combine, parse_files

    def work(ray, cpus):
        parse = ray.remote(parse_files)
        refs = [parse.remote(batch, workers=False) for batch in _file_batches(paths, tasks, cpus)]
        return [r for got in ray.get(refs) for r in got]

    return combine(_on_cluster(address, work))


def _parse_to_part(batch: list[str], part: str) -> list:
    """Ray task: parse a batch of files; their collectives (the bulk) go to the parquet file ``part``,
    the rest comes back."""
    from tracekit.ingest import parse_files

    results = parse_files(batch, workers=False)
    frames = []
    for _, parsed in results:
        for p in parsed:
            frames.append(p.tables.get("collectives"))
            p.tables["collectives"] = None
    schema.concat(frames, schema.COLLECTIVES).write_parquet(part)
    return results


def _resolve_part(ranks: pl.DataFrame, raw: str, part: str) -> int:
    """Ray task: the ranks of one part's collectives resolved as ``ingest.combine`` resolves them."""
    from tracekit.ingest import _resolve_ranks

    coll = _resolve_ranks({"ranks": ranks, "collectives": pl.read_parquet(raw)})["collectives"]
    coll = schema.conform(coll, schema.COLLECTIVES)
    coll.write_parquet(part)
    os.unlink(raw)
    return coll.height


def ingest_on_ray_to_disk(paths: list[str], folder: str | Path, address: str | None = None,
                          tasks: int | None = None) -> Path:
    """Past the driver's memory: the store of ``paths`` written into ``folder``, its collectives never
    all in one process. Tasks parse a batch each and write its collectives as a parquet part; this
    process gathers the rest (a row per rank, process, communicator or event) and every process's
    ranks; tasks then resolve each part's ranks; the parts are merged into the store's
    ``collectives.parquet`` streaming. Read it with ``scan(folder)``: the verdict's group-bys stream
    it. The parts are written beside ``folder``, which every node must see (a shared filesystem)."""
    from tracekit.ingest import combine

    folder = Path(folder).resolve()
    parts = folder.parent / f".{folder.name}.parts-{os.getpid()}"
    parts.mkdir(parents=True)
    try:
        def work(ray, cpus):
            parse, resolve = ray.remote(_parse_to_part), ray.remote(_resolve_part)
            batches = _file_batches(paths, tasks, cpus)
            results = [r for got in ray.get([parse.remote(b, str(parts / f"raw-{i}.parquet"))
                                             for i, b in enumerate(batches)]) for r in got]
            ranks = schema.concat([p.tables.get("ranks") for _, ps in results for p in ps], schema.RANKS)
            ray.get([resolve.remote(ranks, str(parts / f"raw-{i}.parquet"), str(parts / f"part-{i}.parquet"))
                     for i in range(len(batches))])
            return results

        store = combine(_on_cluster(address, work))
        store.write(folder, inputs=paths)
        merged = parts / "collectives.parquet"
        in_order = sorted(parts.glob("part-*.parquet"), key=lambda f: int(f.stem.split("-")[1]))  # (not part-10 before part-2)
        pl.scan_parquet(in_order).sink_parquet(merged)
        os.replace(merged, folder / "collectives.parquet")
    finally:
        for f in parts.glob("*.parquet"):
            f.unlink()
        parts.rmdir()
    return folder


#: the tables a scanned store leaves on disk: a row per collective, and a group's members per rank
#: (every one of 16,384 dumps lists the world: 268 M members)
LAZY = ("collectives", "groups")


def scan(folder: str | Path) -> Store:
    """A store on disk whose big tables stay there (``LAZY``: LazyFrames over their parquet files),
    the others (a row per rank, process, communicator or event) read. The verdict takes it as
    it takes a store in memory (``tracekit.verdict.decide``): its group-bys over the collectives run
    streaming, a piece of the file at a time, so memory holds the answers, not the table."""
    folder = Path(folder)
    tables: dict[str, pl.DataFrame | pl.LazyFrame] = {}
    for name, sch in schema.TABLES.items():
        path = folder / f"{name}.parquet"
        if not path.exists():
            raise StoreError(f"{path}: missing; re-run `tracekit ingest` on the logs")
        try:
            table = pl.scan_parquet(path) if name in LAZY else pl.read_parquet(path)
            got = dict(table.collect_schema())
        except Exception as e:  # noqa: BLE001 - polars raises several kinds for a bad file
            raise StoreError(f"{path}: not a readable parquet file ({type(e).__name__}); "
                             "re-run `tracekit ingest`") from None
        if got != sch:
            raise StoreError(f"{path}: columns differ from tracekit's schema; re-run `tracekit ingest`")
        tables[name] = table
    return Store(**tables)
