"""Session 28, progress: a busy CPU's delay is not a straggler (figures.rank_lateness's bursts and late
spells), and a program's output that shows work done (its own per-step lines and results, of any shape)
is read as such."""

from __future__ import annotations

from pathlib import Path

from tests.factory import make_store
from tracekit.outcome import Kind
from tracekit.verdict import decide

DATA = Path(__file__).parent / "data" / "s28_progress"


def _bursts(n_bursts: int, per_burst: int, late_bursts: set[int], late_ms: float, gap_ms: float = 30.0):
    """2 ranks, ``n_bursts`` bursts of ``per_burst`` all_reduces launched 0.1 ms apart (DDP's gradient
    buckets of one step), bursts ``gap_ms`` apart; rank 1 enters every one last, by 0.1 ms, and by
    ``late_ms`` in the bursts ``late_bursts``; both ranks finished training."""
    rows, seq = [], 0
    for b in range(n_bursts):
        for k in range(per_burst):
            seq += 1
            t0 = int(b * gap_ms * 1e6 + k * 1e5)
            lag = late_ms if b in late_bursts else 0.1
            for rank in (0, 1):
                rows.append({"file": f"kineto_rank{rank}.json", "source": "kineto", "host": "a", "rank": rank,
                             "pg": "0", "seq": seq, "op": "all_reduce", "op_raw": "gloo:all_reduce",
                             "state": "completed", "start_ns": t0 + (int(lag * 1e6) if rank == 1 else 0)})
    ends = [{"file": f"rank{r}.log", "line": 9, "rank": r, "kind": "train_end", "message": "{'train_runtime': 1.0}"}
            for r in (0, 1)]
    return make_store(collectives=rows, events=ends,
                      ranks=[{"file": f"rank{r}.log", "rank": r, "world_size": 2} for r in (0, 1)])


def test_one_delay_carried_through_a_burst_of_collectives_is_no_straggler():
    """tests/test_run.py's real 2-rank gloo HF Trainer run on a busy CPU: rank 1 last in most collectives,
    ~13 ms late in 8 of 24, four at a time in two bursts launched back to back: two delays, not a rank the
    others wait for."""
    v = decide(_bursts(6, 4, {2, 5}, 13.0))
    assert v.kind == Kind.HEALTHY, v.summary


def test_a_rank_late_after_each_gap_is_a_straggler_though_its_collectives_come_in_bursts():
    """The same bursts, rank 1 late by 13 ms in every one of them: it is late again after each gap it had
    time to catch up in."""
    v = decide(_bursts(6, 4, set(range(6)), 13.0))
    assert v.kind == Kind.STRAGGLER and v.ranks == [1]
    assert "24 of them more than 5 ms" in v.summary and "6 separate delays of 6 bursts" in v.summary
