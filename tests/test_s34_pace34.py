"""Session 34 (pace34): slow or healthy from the figures a run prints.

Covers: parsers/minmax_timers.py (Megatron's ``(min, max) time across ranks (ms):`` report, megatron/core/timers.py
``_get_global_min_max_time_string``: one ``phase_times`` event ``where="across_ranks"`` per timer, a user's ``<---``
mark and a launcher's host prefix allowed); rules_spread.input_spread: an iteration whose input phases
(batch-generator, broadcast-data) take a large, uneven share of the step is slow (real lines of dev dv38-011),
a report with even input phases, or only set-up timers (dev dv48-007's lines), decides nothing; the full verdict
of such a report.
"""

from __future__ import annotations

import polars as pl

from tests.factory import text_store
from tracekit.evidence import Evidence
from tracekit.outcome import EventKind, Kind
from tracekit.rules_spread import input_spread
from tracekit.verdict import decide

#: Megatron's per-iteration timers across ranks, as posted (samples/wild dv38-011, the user's `<---` marks kept)
UL2 = """\
    forward-backward ...............................: (5164.84, 5177.15)
    forward-compute ................................: (2584.92, 2735.66)
    backward-compute ...............................: (2423.13, 2586.40)
    batch-generator ................................: (408.98, 817.78)  <---
    data-iterator ..................................: (3.90, 43.10)
    broadcast-data .................................: (395.41, 776.42)  <---
    layernorm-grads-all-reduce .....................: (0.02, 0.03)
    embedding-grads-all-reduce .....................: (0.03, 0.04)
    grads-all-reduce ...............................: (193.33, 193.63)
    optimizer-copy-to-main-grad ....................: (10.61, 10.67)
    optimizer ......................................: (72.92, 73.13)
"""

#: the same report with the input phases even and small (the data keeps up)
EVEN = (UL2.replace("(408.98, 817.78)  <---", "(40.98, 41.78)")
        .replace("(395.41, 776.42)  <---", "(39.41, 40.42)"))

#: set-up timers only, behind a launcher's host prefix (samples/wild dv48-007)
SET_UP = """\
192.168.205.202:     model-and-optimizer-setup ......................: (36461.26, 36543.67)
192.168.205.202:     train/valid/test-data-iterators-setup ..........: (172.25, 437.43)
"""


def _timers(store) -> pl.DataFrame:
    return store.events.filter((pl.col("kind") == EventKind.PHASE_TIMES) & (pl.col("where") == "across_ranks"))


def test_minmax_rows_become_events(tmp_path):
    ev = _timers(text_store(tmp_path, "(min, max) time across ranks (ms):\n" + UL2))
    assert ev.height == 11
    row = ev.filter(pl.col("message").str.starts_with("batch-generator")).row(0, named=True)
    assert row["message"] == "batch-generator: (408.98, 817.78)" and row["duration_ms"] == 817.78
    assert _timers(text_store(tmp_path, SET_UP, "setup.log"))["message"].to_list() == [
        "model-and-optimizer-setup: (36461.26, 36543.67)", "train/valid/test-data-iterators-setup: (172.25, 437.43)"]


def test_uneven_input_phases_are_slow(tmp_path):
    v = input_spread(Evidence.gather(text_store(tmp_path, UL2)))
    assert v is not None and v.kind == Kind.SLOW_PROGRESS
    assert "batch-generator 408.98-817.78 ms (2.0x" in v.summary and "broadcast-data 395.41-776.42" in v.summary
    assert "grads-all-reduce is even across ranks (193.33-193.63 ms)" in v.summary


def test_even_input_or_set_up_timers_decide_nothing(tmp_path):
    assert input_spread(Evidence.gather(text_store(tmp_path, EVEN))) is None
    assert input_spread(Evidence.gather(text_store(tmp_path, SET_UP, "setup.log"))) is None


def test_verdict_of_the_report(tmp_path):
    v = decide(text_store(tmp_path, UL2))
    assert v.kind == Kind.SLOW_PROGRESS and "batch-generator" in v.summary
    assert decide(text_store(tmp_path, EVEN, "even.log")).kind != Kind.SLOW_PROGRESS
