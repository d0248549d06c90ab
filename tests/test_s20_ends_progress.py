"""Session 20 (issue 31, "say what the evidence shows"), branch ends: what a program's own output says of
every rank, and what keeps a run that progressed from being called healthy.

- A process's start-up (an NCCL communicator's init, a rank joining, a trainer's or a server's start) after
  the last progress line of its file is a process whose own progress is not seen (a second rank's log that
  holds only its start-up, or a restart): ``rules_progress.progress_then_start_up`` leaves it undecided,
  never healthy.
- A job's own check of every rank it measured (DLRover's network check, FlagScale's straggler report:
  ``progress_messages.CHECKS``) is said for every rank seen: healthy, with the check's meaning.
"""

from pathlib import Path

from tests.factory import make_store
from tracekit import rules_progress
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


def steady_steps(n: int = 6) -> list[dict]:
    return [dict(kind="step", file="train.log", line=i + 1, step=10 * (i + 1),
                 message=f"step {10 * (i + 1)}, loss: 0.5, speed: 0.9 step/s") for i in range(n)]


def test_a_start_up_after_the_last_step_of_its_file_is_undecided_and_names_the_start_up():
    late = dict(kind="server_up", file="train.log", line=20,
                message="I0626 19:00:11.132736 39752 nccl_context.cc:74] init nccl context nranks: 2 local rank: 1")
    v = rules_progress.progress_then_start_up(Evidence.gather(make_store(events=steady_steps() + [late])))
    assert v is not None and v.kind == Kind.UNDECIDED
    assert "then a process started after the last of them" in v.summary and "train.log:20" in v.summary


def test_a_start_up_before_the_steps_or_in_another_file_is_no_late_start():
    early = dict(kind="server_up", file="train.log", line=0, message="init nccl context nranks: 2 local rank: 0")
    other = dict(early, file="workerlog.1", line=30)
    ev = Evidence.gather(make_store(events=steady_steps() + [early, other]))
    assert rules_progress.progress_then_start_up(ev) is None


def test_an_nccl_init_after_the_steps_is_a_late_start_too():
    comm = dict(file="train.log", line=50, comm="0x1", rank=1, nranks=2, state="init_complete")
    ev = Evidence.gather(make_store(events=steady_steps(), comms=[comm]))
    v = rules_progress.progress_then_start_up(ev)
    assert v is not None and "NCCL communicator init" in v.summary


def test_paddle_steady_steps_then_rank_1s_own_log_with_only_its_start_up_is_not_healthy():
    """dv17-038: rank 0's steps 4430-4500 at ~0.9 step/s, then workerlog.1 holds only rank 1's `init nccl
    context nranks: 2 local rank: 1` (Paddle's NCCLParallelContext::Init, tracekit/start_up_messages.py) and
    its model loading: rank 1's own progress is not seen (the label: undecided only)."""
    v = decide(ingest([WILD / "dv17-038-paddlenlp-2gpu-eval-then-silent.txt"]))
    assert v.kind == Kind.UNDECIDED, v.summary
    assert "init nccl context nranks: 2 local rank: 1" in v.summary


def test_flagscale_straggler_report_with_no_straggler_is_healthy_with_its_meaning():
    """torch-043: `=== Straggler Report at Step 10 ===`, `✓ No stragglers detected.` (flagos-ai/FlagScale
    flagscale/runner/straggler/report.py:61-70, StragglerReport.to_text)."""
    v = decide(ingest([WILD / "torch-043-flagscale-straggler-report-none-default0.txt"]))
    assert v.kind == Kind.HEALTHY, v.summary
    assert "FlagScale's straggler detector" in v.summary and "No stragglers detected." in v.summary


def test_a_straggler_report_is_a_clean_check_only_where_it_names_no_straggler(tmp_path):
    """Both branches of report.py's to_text (:64-70): `✓ No stragglers detected.`, or `⚠️  Detected
    Stragglers: [3]` and the ranks."""
    f = tmp_path / "job.log"
    f.write_text("=== Straggler Report at Step 10 ===\n\n✓ No stragglers detected.\n")
    assert decide(ingest([f])).kind == Kind.HEALTHY
    f.write_text("=== Straggler Report at Step 10 ===\n\n⚠️  Detected Stragglers: [3]\n  - Rank 3 (rank-3)\n")
    assert decide(ingest([f])).kind != Kind.HEALTHY


def test_a_script_timer_that_repeats_at_one_value_is_a_steady_pace(tmp_path):
    """A line that holds only a duration, as Python's `print(time.time() - t0, " s")` writes it (print's
    separator, then the literal's own space: `88.0555248260498  s`), printed between loss lines: the
    script's own time per interval (parsers/series.py BARE_TIME); steady, and nothing failed: healthy."""
    f = tmp_path / "train.log"
    f.write_text("".join(f"{88.0 + d}  s\nloss  {2.0 - i / 10}\n------------\n"
                         for i, d in enumerate((0.0555, 0.0301, 0.0766, 0.0417))))
    v = decide(ingest([f]))
    assert v.kind == Kind.HEALTHY and "88.0" in v.summary, v.summary
    # the same print of the time since the start (`print(time.time() - start, " s")` with no reset): it
    # rises by one interval each line, no time per interval (pace.cumulative)
    f.write_text("".join(f"{88.05 * (i + 1)}  s\nloss  {2.0 - i / 10}\n" for i in range(5)))
    assert decide(ingest([f])).kind != Kind.HEALTHY


def test_bert_mirroredstrategy_88_s_per_100_steps_is_steady():
    """dv15-029: the script prints `88.0555248260498  s` and the loss every 100 steps, at ~88 s each time
    (the label accepts healthy and slow-progress; the fact: 88 s)."""
    v = decide(ingest([WILD / "dv15-029-bert-mirroredstrategy-4xv100-88s-per-100-steps.txt"]))
    assert v.kind == Kind.HEALTHY and "88.0" in v.summary, v.summary
