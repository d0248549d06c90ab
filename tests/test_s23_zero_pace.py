"""A pace that rounds to zero (a program's per-step time printed as `0.00 s/step` on a fast loop) is a pace
that cannot be measured: the verdict says what it can of the steps, and never fails on it."""

from __future__ import annotations

from tracekit.ingest import ingest
from tracekit.outcome import Kind
from tracekit.verdict import decide


def test_steps_whose_printed_time_rounds_to_zero_are_not_a_steady_pace(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("".join(f"[rank0]: step {i} | loss 1.{i:02d} | 0.00 s/step\n" for i in range(1, 6)))
    v = decide(ingest([p]))  # (raised TypeError: a steady "0.0 s per step" with no rate to print)
    assert v.kind in (Kind.HEALTHY, Kind.UNDECIDED)
    assert "0.0 s per step" not in v.summary
