"""Trace writing rate: a synthetic run of R ranks x C Flight Recorder collectives (the store of
benchmarks/verdict_scale.py) through the timeline model into a Perfetto protobuf trace, in trace
events per second (a slice is a BEGIN and an END event; flows ride on the BEGIN), against the
Chrome JSON writer of the same timeline (json.dumps of plain dicts: the baseline).

Usage: python benchmarks/perfetto_write.py [RANKS] [COLLECTIVES]   (default 64 x 2000)
"""

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from verdict_scale import build  # noqa: E402

from tracekit.reports import chrome_json, perfetto, timeline  # noqa: E402
from tracekit.store import Store  # noqa: E402
from tracekit.verdict import decide  # noqa: E402
from tracekit.view import CollectivesView  # noqa: E402


def synthetic_store(ranks: int, colls: int) -> Store:
    """verdict_scale's synthetic run, built on disk and read back whole."""
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp), ranks, colls)
        return Store.read(Path(tmp) / "store")


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def main():
    ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    colls = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    store = synthetic_store(ranks, colls)
    v = decide(store)
    tl, t_model = timed(lambda: timeline.render(CollectivesView.build(store), v))
    events = 2 * len(tl.slices) + len(tl.instants) + len(tl.processes) + len(tl.tracks)
    with tempfile.TemporaryDirectory() as tmp:
        pf, t_pf = timed(lambda: perfetto.write(tl, Path(tmp) / "run.pftrace"))
        js, t_js = timed(lambda: chrome_json.write(tl, Path(tmp) / "run.json"))
        pf_mb, js_mb = pf.stat().st_size / 1e6, js.stat().st_size / 1e6
    print(f"{ranks} ranks x {colls} collectives: {len(tl.slices):,} slices, "
          f"{sum(1 for s in tl.slices if s.flow):,} in flows, {events:,} trace events")
    print(f"timeline model (store -> slices)   {t_model:7.2f} s  {len(tl.slices) / t_model:12,.0f} slices/s")
    print(f"perfetto protobuf (tracekit)       {t_pf:7.2f} s  {events / t_pf:12,.0f} events/s  {pf_mb:7.1f} MB")
    print(f"chrome JSON (baseline)             {t_js:7.2f} s  {events / t_js:12,.0f} events/s  {js_mb:7.1f} MB")
    print(f"end to end, store -> .pftrace      {t_model + t_pf:7.2f} s  {events / (t_model + t_pf):12,.0f} events/s")


if __name__ == "__main__":
    from usage import answer_help

    answer_help(__doc__)
    main()
