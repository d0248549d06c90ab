"""The situation in every verdict (issue 31): where each seen rank is, grouped, and the ranks of the world
that are not seen."""

from __future__ import annotations

from tests.factory import make_store
from tracekit.verdict import decide


def test_a_programs_own_end_line_is_a_clean_end():
    from tracekit.evidence import Evidence
    end = [dict(file="r0.log", line=20, rank=0, kind="program_end", message="Rank 0: End of workload.")]
    ev = Evidence.gather(make_store(events=end))
    assert ev.clean_end == ["the program said it ended: r0.log:20: Rank 0: End of workload."]


def test_undecided_on_steps_quotes_the_last_step_line():
    # torchtitan's metrics line (torchtitan/components/metrics.py log: `step: 10  loss: ...  wps: ...  mfu: ...`)
    step = [dict(file="r0.log", line=5, rank=0, kind="step", step=10,
                 message="step: 10  loss:  1.5568  memory: 26.47GiB(33.47%)  wps: 1,786  mfu: 10.46%")]
    v = decide(make_store(events=step))
    assert v.kind.name == "UNDECIDED" and "steps up to 10 (the last: step: 10" in v.summary and "mfu: 10.46%" in v.summary
