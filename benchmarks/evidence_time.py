"""The time of the evidence and the verdict on a run's store, and of its ingest: the samples named
(default: the largest run folders of samples/), and a store of many events (every event of those
samples repeated to --events rows), each timed as the best of --repeat runs.

Usage: python benchmarks/evidence_time.py [SAMPLE ...] [--events N] [--repeat R]
"""

import argparse
import time
from pathlib import Path

import tracekit  # noqa: F401 - before polars, as the CLI imports them
import polars as pl

from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.store import Store
from tracekit.verdict import decide

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
DEFAULT = ("gpu_nccl_alltoall", "gpu_2x1_divergence", "swift_2x2_wandb", "zero3_crash_2x2")


def best(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def evidence_and_verdict(store: Store) -> None:
    ev = Evidence.gather(store)
    for name in ("cuda", "consequences", "crashes", "nccl_errors", "rendezvous", "timeouts", "benign",
                 "transport", "reported_mismatch", "failure_signs"):
        getattr(ev, name)
    decide(store)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("samples", nargs="*", default=DEFAULT)
    ap.add_argument("--events", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    stores = []
    for name in a.samples:
        t_ingest = best(lambda: ingest([SAMPLES / name]), 2)
        store = ingest([SAMPLES / name])
        stores.append(store)
        t = best(lambda: evidence_and_verdict(store), a.repeat)
        print(f"{name:28s} {store.events.height:8,} events  ingest {t_ingest:6.3f} s  evidence+verdict {t:6.3f} s")
    # many events: every sample's events over and over, on one store's other tables
    ev = pl.concat([s.events for s in stores])
    big = ev.sample(a.events, with_replacement=True, seed=0).with_columns(pl.int_range(a.events).alias("line"))
    store = Store(**{**stores[0].tables(), "events": big})
    t = best(lambda: evidence_and_verdict(store), a.repeat)
    print(f"{'(events repeated)':28s} {big.height:8,} events  evidence+verdict {t:6.3f} s")
    if "says" in big.columns:  # decoded once, as the events enter the store
        from tracekit.meanings import with_says
        t = best(lambda: with_says(big.drop("says")), a.repeat)
        print(f"{'(events repeated)':28s} {big.height:8,} events  decoding the says column {t:6.3f} s")


if __name__ == "__main__":
    main()
