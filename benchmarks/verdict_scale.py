"""The verdict at scale: synthetic runs of R ranks x C collectives each (Flight Recorder rows on the
default group), the last rank missing the final collective. Each size runs in its own process so
its peak memory (max RSS) is its own; the table shows how time and memory grow with ranks.

Usage: python benchmarks/verdict_scale.py [COLLECTIVES] [RANKS...]   (default 10000; 64 256 1024 4096)
"""

import json
import resource
import subprocess
import sys
import time


def synthetic_store(ranks: int, colls: int):
    """R ranks x C Flight Recorder all_reduces on the default group; the last rank misses the last one."""
    import tracekit  # noqa: F401 - before polars, as the CLI imports them (tracekit/__init__.py: huge pages)
    import polars as pl

    from tracekit import schema
    from tracekit.store import Store

    n = ranks * colls
    rank = pl.int_range(n, eager=True) // colls
    seq = pl.int_range(n, eager=True) % colls + 1
    coll = pl.DataFrame({"rank": rank, "seq": seq}).filter(~((pl.col("rank") == ranks - 1) & (pl.col("seq") == colls)))
    coll = coll.with_columns(
        pl.format("_dump_{}", "rank").alias("file"), pl.lit("fr").alias("source"), pl.lit("0").alias("pg"),
        pl.lit("default_pg").alias("pg_desc"), pl.lit("all_reduce").alias("op"), pl.lit("nccl:all_reduce").alias("op_raw"),
        pl.lit("BFloat16").alias("dtype"), pl.lit("4096x1024").alias("sizes"), (pl.col("seq") - 1).alias("record_id"),
        (pl.lit(1_700_000_000_000_000_000) + pl.col("seq") * 1_000_000).alias("start_ns"),
        pl.lit("completed").alias("state"), pl.lit(ranks).alias("nranks"))
    ranks_df = pl.DataFrame({"rank": list(range(ranks)), "file": [f"_dump_{r}" for r in range(ranks)],
                             "world_size": [ranks] * ranks, "source": ["fr"] * ranks})
    groups = pl.DataFrame({"file": [f"_dump_{r}" for r in range(ranks)], "rank": list(range(ranks)),
                           "pg": ["0"] * ranks, "members": [list(range(ranks))] * ranks})
    dumps = groups.select("file", "rank", pl.lit("fr_dump").alias("kind"))
    return Store(
        files=schema.empty(schema.FILES), ranks=schema.conform(ranks_df, schema.RANKS),
        comms=schema.empty(schema.COMMS), links=schema.empty(schema.LINKS),
        collectives=schema.conform(coll, schema.COLLECTIVES), events=schema.conform(dumps, schema.EVENTS),
        groups=schema.conform(groups, schema.GROUPS))


def one(ranks: int, colls: int) -> dict:
    from tracekit.verdict import decide

    t = time.perf_counter()
    store = synthetic_store(ranks, colls)
    coll = store.collectives
    built = time.perf_counter() - t
    t = time.perf_counter()
    v = decide(store)
    took = time.perf_counter() - t
    ok = v.kind.name == "DEADLOCK" and v.ranks == [ranks - 1]
    return {"ranks": ranks, "rows": coll.height, "build_s": built, "verdict_s": took, "ok": ok,
            "summary": v.summary[:80], "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(one(int(sys.argv[2]), int(sys.argv[3]))))
        return
    colls = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    sizes = [int(x) for x in sys.argv[2:]] or [64, 256, 1024, 4096]
    print(f"{'ranks':>6} {'rows':>12} {'verdict s':>10} {'s per 1M rows':>14} {'peak MB':>9}  right?")
    prev = None
    for r in sizes:
        p = subprocess.run([sys.executable, __file__, "--one", str(r), str(colls)], capture_output=True, text=True)
        if p.returncode:
            print(f"{r:>6} failed: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}")
            continue
        d = json.loads(p.stdout.strip().splitlines()[-1])
        growth = f"  x{d['verdict_s'] / prev['verdict_s']:.1f} time for x{r / prev['ranks']:.0f} ranks" if prev else ""
        print(f"{r:>6} {d['rows']:>12,} {d['verdict_s']:>10.2f} {d['verdict_s'] / d['rows'] * 1e6:>14.3f} "
              f"{d['max_rss_mb']:>9.0f}  {'yes' if d['ok'] else 'NO: ' + d['summary']}{growth}")
        prev = d


if __name__ == "__main__":
    from usage import answer_help

    answer_help(__doc__)
    main()
