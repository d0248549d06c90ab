"""Session 17 (issue 31, "say what the evidence shows"): steps that advance (or one progress line whose
counter is past the run's start) up to the last line each file holds, mid-loop, at a pace that is as good at the end as before, with nothing but calm lines, are healthy
for what is seen (``rules_progress.progress_to_the_end``), said with how many of the world are seen; a
loop that ended (a bar at 100%) or a pace that ends slower stays undecided. A step line that reports an
evaluation or a save is never the slow step (``pace.PHASE``); a throughput of 0 throughout never falls."""

from pathlib import Path

import pytest

from tests.factory import make_store
from tracekit import pace, rules_progress
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


def steps(times: list[float], last: str | None = None) -> list[dict]:
    out = [dict(kind="step", file="train.log", line=i + 1, step=10 * (i + 1),
                message=f"iter {10 * (i + 1)}: loss 2.0, time {t * 1e3:.2f}ms") for i, t in enumerate(times)]
    if last:
        out.append(dict(kind="progress", file="train.log", line=len(times) + 1, step=10 * len(times),
                        message=last))
    return out


def test_steps_to_the_last_line_at_a_pace_that_holds_are_healthy_for_what_is_seen():
    v = rules_progress.progress_to_the_end(Evidence.gather(make_store(events=steps([14.0, 4.6, 4.5, 4.5]))))
    assert v.kind == Kind.HEALTHY and "up to the last line seen (step 40, mid-loop)" in v.summary
    assert "for what is seen: no rank identified" in v.summary


def test_one_progress_line_past_the_start_says_its_steps_completed_and_one_at_the_start_does_not():
    one = [dict(kind="step", file="t.log", line=1, step=1248, message="[timer.py:207:stop] 0/1248, "
                "RunningAvgSamplesPerSec=14.45, CurrSamplesPerSec=9.85")]
    v = rules_progress.progress_to_the_end(Evidence.gather(make_store(events=one)))
    assert v.kind == Kind.HEALTHY and "1248 steps completed" in v.summary
    start = [dict(one[0], step=9, message="step: 9  loss: 1.55  wps: 1,786  mfu: 10.46%")]
    assert rules_progress.progress_to_the_end(Evidence.gather(make_store(events=start))) is None


def test_a_loop_at_its_end_or_a_pace_that_ends_slower_is_not():
    ended = steps([14.0, 4.6, 4.5], last="Evaluating: 100%|█████| 2/2 [00:19<00:00,  9.58s/it]")
    assert rules_progress.progress_to_the_end(Evidence.gather(make_store(events=ended))) is None
    slower = steps([4.5, 4.6, 4.5, 9.0])
    assert rules_progress.progress_to_the_end(Evidence.gather(make_store(events=slower))) is None


def test_an_evaluation_step_line_is_never_the_slow_step():
    ev = make_store(events=[dict(kind="step", file="t.log", line=i, step=s, ts=f"2023-03-22 09:{m}",
                                 message=msg) for i, (s, m, msg) in enumerate([
        (10, "30:00", "iter 10: loss 4.0"), (20, "30:11", "iter 20: loss 4.0"), (30, "30:22", "iter 30: loss 4.0"),
        (40, "30:33", "iter 40: loss 4.0"), (50, "31:10", "step 50: train loss 4.03, val loss 4.04"),
        (60, "31:21", "iter 60: loss 4.0")])]).events
    assert pace.measure(ev.filter(ev["step"].is_not_null()))["slow"] is None


def test_a_throughput_of_zero_throughout_never_falls():
    ev = make_store(events=[dict(kind="progress", file="t.log", line=i, step=48 + i,
                                 message=f"| epoch 001: | {48 + i}/11265 [02:2{i}<9:05:31,  2.9{i}s/it, wps=0, ups=0.0")
                            for i in range(5)]).events
    assert pace.measure(ev)["falling"] is None


@pytest.mark.parametrize("name, fact", [
    ("dev-048-tf-training-steps-before-nccl-abort.txt", "steps advanced 0 -> 100 up to the last line seen"),
    ("dv2-050-ds-bert-4rank-store-barrier-keys-tqdm.txt", "for what is seen: 4 rank(s) seen (0-3)"),
    ("dv6-027-superclass-openclip-8v100-webdataset-warnings.txt", "`Batch (t): 4.507`"),
    ("dv17-027-nanogpt-v100-fp16-loss-nan-after-ckpt-steady-iters.txt", "steps advanced 2920 -> 3060"),
    ("dev-050-fairseq-8gpu-tqdm-3s-per-it.txt", "steady 2.92-3.06 s/it"),
    ("dv16-041-nemo-launcher-epoch0-progress-41s-per-it.txt", "795 steps completed (the program's own counter)"),
    ("dv4-028-deepspeed-rank0-steps-1248-samplespersec.txt", "1248 steps completed"),
])
def test_real_runs_that_progress_to_the_end_are_healthy(name, fact):
    v = decide(ingest([WILD / name]))
    assert v.kind == Kind.HEALTHY and fact in v.summary, v.summary


STOPPED = ("dv16-004-ms-swift-grpo-colocate-stuck-after-step56-rollout.txt",  # rollout bars at 100% after it
           "dv4-030-accelerate-fsdp-6gpu-epoch-done-then-hang.txt",  # every loop at its end, then nothing
           "llm-044-llamafactory-internvl-progress-then-rank5-timeout.txt")  # a watchdog line cut short
# (s23: dv3-020, 1 of 7 ranks seen, was pinned UNDECIDED here; its label's first call is healthy, which
# rules_progress.progress_on_ranks_seen now gives: tests/test_s23_progress_ranks_seen.py)


def test_the_rule_tells_runs_that_go_on_from_runs_that_stop_or_miss_known_ranks():
    assert decide(ingest([WILD / "dev-048-tf-training-steps-before-nccl-abort.txt"])).kind == Kind.HEALTHY
    for name in STOPPED:
        assert decide(ingest([WILD / name])).kind == Kind.UNDECIDED, name


def test_a_slow_stretch_from_the_start_then_the_pace_to_the_end_is_warm_up_not_slow():
    """MXNet's Speedometer at 15 samples/sec for 700 batches, then 513 to the end (dv17-007): the run warmed up."""
    stamps = ["11:11:28", "11:12:20", "11:13:12", "11:14:05", "11:14:58", "11:15:52", "11:16:45", "11:16:51",
              "11:16:52", "11:16:54", "11:16:55", "11:16:57", "11:16:58"]
    ev = make_store(events=[dict(kind="step", file="t.log", line=i, step=100 * (i + 1), ts=f"2016-10-18 {t}",
                                 message=f"Epoch[0] Batch [{100 * (i + 1)}]") for i, t in enumerate(stamps)]).events
    assert pace.measure(ev)["slow"] is None
    v = decide(ingest([WILD / "dv17-007-mxnet-gpu0-speed-jumps-15-to-513-samples.txt"]))
    assert v.kind == Kind.HEALTHY and "512.82-513.86 samples/sec" in v.summary
