"""The verdict at scale: synthetic runs of R ranks x C collectives each (Flight Recorder rows on the
default group, every dump listing the world as the group's members), the last rank missing the
final collective. Each size's store is written to disk first (by parts, so the build fits too);
then, each in a fresh process so that its peak memory (max RSS) is its own:
  streaming  tracekit.store.scan: the collectives stay on disk, the verdict's group-bys stream them;
  in memory  tracekit.store.Store.read then the same verdict (the baseline; sizes up to --in-memory-up-to).
The table shows how time and memory grow with rows.

Usage: python benchmarks/verdict_scale.py [COLLECTIVES] [RANKS...] [--in-memory-up-to R]
       (default 10000; 64 256 1024 4096; in memory up to 4096 ranks)
"""

import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PART_RANKS = 256  # ranks per part written while building (2.56 M rows at 10,000 collectives)


def build(folder: Path, ranks: int, colls: int) -> None:
    """R ranks x C Flight Recorder all_reduces on the default group; the last rank misses the last one."""
    import tracekit  # noqa: F401 - before polars, as the CLI imports them
    import polars as pl

    from tracekit import schema
    from tracekit.store import Store

    parts = folder / "parts"
    parts.mkdir(parents=True)
    for first in range(0, ranks, PART_RANKS):
        n = min(PART_RANKS, ranks - first) * colls
        i = pl.int_range(n, eager=True)
        coll = pl.DataFrame({"rank": i // colls + first, "seq": i % colls + 1}).filter(
            ~((pl.col("rank") == ranks - 1) & (pl.col("seq") == colls)))
        coll = coll.with_columns(
            pl.format("_dump_{}", "rank").alias("file"), pl.lit("fr").alias("source"), pl.lit("0").alias("pg"),
            pl.lit("default_pg").alias("pg_desc"), pl.lit("all_reduce").alias("op"), pl.lit("nccl:all_reduce").alias("op_raw"),
            pl.lit("BFloat16").alias("dtype"), pl.lit("4096x1024").alias("sizes"), (pl.col("seq") - 1).alias("record_id"),
            (pl.lit(1_700_000_000_000_000_000) + pl.col("seq") * 1_000_000).alias("start_ns"),
            pl.lit("completed").alias("state"), pl.lit(ranks).alias("nranks"))
        schema.conform(coll, schema.COLLECTIVES).write_parquet(parts / f"{first}.parquet")
        del coll, i
    dumps = [f"_dump_{r}" for r in range(ranks)]
    world = pl.Series("members", [list(range(ranks))], dtype=pl.List(pl.Int64)).new_from_index(0, ranks)
    groups = pl.DataFrame({"file": dumps, "rank": list(range(ranks)), "pg": ["0"] * ranks}).with_columns(world)
    small = Store(
        files=schema.empty(schema.FILES),
        ranks=schema.conform(pl.DataFrame({"rank": list(range(ranks)), "file": dumps, "world_size": [ranks] * ranks,
                                           "source": ["fr"] * ranks}), schema.RANKS),
        comms=schema.empty(schema.COMMS), links=schema.empty(schema.LINKS),
        collectives=schema.empty(schema.COLLECTIVES),
        events=schema.conform(groups.select("file", "rank", pl.lit("fr_dump").alias("kind")), schema.EVENTS),
        groups=schema.conform(groups, schema.GROUPS))
    store = small.write(folder / "store")
    # the parts, merged into the store's one collectives file, streaming
    pl.scan_parquet(parts / "*.parquet").sink_parquet(store / "collectives.parquet")
    shutil.rmtree(parts)


def one(folder: Path, ranks: int, how: str) -> dict:
    import tracekit  # noqa: F401
    import polars as pl

    from tracekit.store import scan
    from tracekit.store import Store
    from tracekit.verdict import decide

    t = time.perf_counter()
    store = scan(folder) if how == "streaming" else Store.read(folder)
    v = decide(store)
    took = time.perf_counter() - t
    rows = store.collectives.lazy().select(pl.len()).collect().item()
    ok = v.kind.name == "DEADLOCK" and v.ranks == [ranks - 1]
    return {"rows": rows, "verdict_s": took, "ok": ok, "summary": v.summary[:80],
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def child(*args: str) -> dict | str:
    p = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if p.returncode:
        return f"failed: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    if sys.argv[1:2] == ["--build"]:
        t = time.perf_counter()
        build(Path(sys.argv[4]), int(sys.argv[2]), int(sys.argv[3]))
        print(json.dumps({"build_s": time.perf_counter() - t}))
        return
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(one(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4])))
        return
    args = sys.argv[1:]
    eager_up_to = 4096
    if "--in-memory-up-to" in args:
        k = args.index("--in-memory-up-to")
        eager_up_to = int(args[k + 1])
        del args[k:k + 2]
    colls = int(args[0]) if args else 10_000
    sizes = [int(x) for x in args[1:]] or [64, 256, 1024, 4096]
    print(f"{'ranks':>6} {'rows':>13} {'how':>10} {'verdict s':>10} {'ns per row':>11} {'peak MB':>9} "
          f"{'B per row':>9}  right?")
    prev = None
    for r in sizes:
        with tempfile.TemporaryDirectory(prefix="verdict-scale-") as tmp:
            built = child("--build", str(r), str(colls), tmp)
            if isinstance(built, str):
                print(f"{r:>6} build {built}")
                continue
            for how in ("streaming", "in memory") if r <= eager_up_to else ("streaming",):
                d = child("--one", str(Path(tmp, "store")), str(r), how)
                if isinstance(d, str):
                    print(f"{r:>6} {'':>13} {how:>10} {d}")
                    continue
                growth = ""
                if how == "streaming" and prev:
                    growth = (f"  x{d['verdict_s'] / prev['verdict_s']:.1f} time, x{d['max_rss_mb'] / prev['max_rss_mb']:.1f} "
                              f"memory for x{d['rows'] / prev['rows']:.1f} rows")
                print(f"{r:>6} {d['rows']:>13,} {how:>10} {d['verdict_s']:>10.2f} {d['verdict_s'] / d['rows'] * 1e9:>11.1f} "
                      f"{d['max_rss_mb']:>9.0f} {d['max_rss_mb'] * 2**20 / d['rows']:>9.1f}  "
                      f"{'yes' if d['ok'] else 'NO: ' + d['summary']}{growth}", flush=True)
                if how == "streaming":
                    prev = d


if __name__ == "__main__":
    from usage import answer_help

    answer_help(__doc__)
    main()
