"""Progress on the ranks seen says the steps of the loop its last step line is in: a real ms-swift rank's
log (samples/swift_2x2_healthy) cut mid-training, as a pasted partial excerpt is, whose dataset preparation
bars (`400/400 [00:00<?, ? examples/s]`) come before the training's `4/6` bar: no step count of the run."""

from __future__ import annotations

from tests.conftest import SAMPLES
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide


def test_a_cut_rank_log_says_the_training_loops_steps_not_the_data_bars(tmp_path):
    log = next((SAMPLES / "swift_2x2_healthy").glob("rank0.*log")).read_bytes().decode().split("\n")
    cut = "\n".join(log[:530]) + "\n"
    assert "400/400" in cut and "4/6 [" in log[529]  # (the data bars, and a cut mid-loop)
    p = tmp_path / "rank0.log"
    p.write_bytes(cut.encode())
    v = decide(ingest([p]))
    assert v.kind == Kind.HEALTHY and "advanced steps 0 -> 4 (" in v.summary and "-> 400" not in v.summary
