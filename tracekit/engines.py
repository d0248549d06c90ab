"""Ingest on a Ray cluster, above ``tracekit.ingest`` (worker processes on this machine: ``tracekit.dumps``).

``ingest.parse_files`` is a pure function of its files and ``ingest.combine`` makes the store from
its results however the files were split, so the Ray driver only decides where each batch of files
is parsed: one task per batch, the results combined here, with a ``skipped`` row for each entry the
driver's walk did not read (a FIFO, a link out of the folder), as ``ingest.ingest`` has them.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from tracekit import formats, schema
from tracekit.errors import StoreError
from tracekit.ingest import batches, combine, parse_files, resolve_ranks, total_size, walk
from tracekit.store import Store, scan  # noqa: F401 - scan re-exported: a store written here is read so

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


def _file_batches(paths: list, pieces: int | None, cpus: int) -> tuple[list[list[str]], list]:
    """The files under ``paths`` in batches for the tasks, and the ``files`` rows (with no tables) of
    what the walk did not read."""
    found = walk(paths)
    files = [f.path for f in found.files]
    skipped = [(formats.skipped_row(n), []) for n in found.notes]
    return batches(files, pieces or cpus, total_size(files)), skipped


def parse_on_ray(paths: list[str], address: str | None = None, tasks: int | None = None) -> Store:
    """The store of ``paths`` parsed on a Ray cluster: one task per batch of files (about equal in
    bytes; ``tasks`` batches, else one per CPU of the cluster), the results combined here.
    ``address``: a running cluster's (``ray://host:10001`` or ``host:6379``); None starts a local one
    for the duration. Every node must see the files under the same paths (a shared filesystem)."""
    def work(ray, cpus):
        parse = ray.remote(parse_files)
        files, skipped = _file_batches(paths, tasks, cpus)
        refs = [parse.remote(batch, workers=False) for batch in files]
        return [r for got in ray.get(refs) for r in got] + skipped

    return combine(_on_cluster(address, work))


def _parse_to_part(batch: list[str], part: str) -> list:
    """Ray task: parse a batch of files; their collectives (the bulk) go to the parquet file ``part``,
    the rest comes back."""
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
    coll = resolve_ranks({"ranks": ranks, "collectives": pl.read_parquet(raw)})["collectives"]
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
    ``collectives.parquet`` streaming. Read it with ``store.scan(folder)``: the verdict's group-bys stream
    it. The parts are written beside ``folder``, which every node must see (a shared filesystem)."""
    folder = Path(folder).resolve()
    parts = folder.parent / f".{folder.name}.parts-{os.getpid()}"
    parts.mkdir(parents=True)
    try:
        def work(ray, cpus):
            parse, resolve = ray.remote(_parse_to_part), ray.remote(_resolve_part)
            batches, skipped = _file_batches(paths, tasks, cpus)
            results = [r for got in ray.get([parse.remote(b, str(parts / f"raw-{i}.parquet"))
                                             for i, b in enumerate(batches)]) for r in got] + skipped
            ranks = schema.concat([p.tables.get("ranks") for _, ps in results for p in ps], schema.RANKS)
            ray.get([resolve.remote(ranks, str(parts / f"raw-{i}.parquet"), str(parts / f"part-{i}.parquet"))
                     for i in range(len(batches))])
            return results

        store = combine(_on_cluster(address, work))
        store.write(folder, inputs=paths)
        merged = parts / "collectives.parquet"
        # (by number: not part-10 before part-2)
        in_order = sorted(parts.glob("part-*.parquet"), key=lambda f: int(f.stem.split("-")[1]))
        pl.scan_parquet(in_order).sink_parquet(merged)
        os.replace(merged, folder / "collectives.parquet")
    finally:
        for f in parts.glob("*.parquet"):
            f.unlink()
        parts.rmdir()
    return folder
