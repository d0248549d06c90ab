"""Session 22 (issue 31), branch ends: what a program's own pace figures say, read as its code means them.

- A loop's time per step runs from one report to the next, so a report after an evaluation or a save
  holds that phase (nanoGPT's train.py: `estimate_loss()` and the checkpoint save run inside the
  iteration whose `iter N: ... time ...ms` line follows, train.py:263-327): never a slow training step
  (``pace._phases_before``).
- tf_cnn_benchmarks' `images/sec: M +/- U (jitter = J)` (benchmark_cnn.py:929-950): U is the standard
  error of the per-step speeds since the warm-up; at step N their spread is U * sqrt(N); as wide as the
  mean, the fastest steps ran at twice the mean or more: slow (``rules_bench.uneven_speeds``).
"""

from __future__ import annotations

from pathlib import Path

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


def _verdict(path: Path):
    return decide(ingest([path]))


def test_nanogpt_eval_and_save_iterations_are_not_a_slow_step():
    # nanoGPT under torchrun, eval_interval=2 (label: healthy): every other `iter` line takes ~20 s because
    # its iteration ran the evaluation (`step N: train loss .., val loss ..`) and `saving checkpoint to out`
    v = _verdict(WILD / "dv19-003-nanogpt-ddp4-iter-progress-eval.txt")
    assert v.kind is Kind.HEALTHY, v.summary
    assert "steps advanced 0 -> 9" in v.summary


def test_tf_cnn_benchmarks_speeds_as_spread_as_their_mean_are_slow():
    # ResNet-50 under an MPIJob, 16 workers at step 10: `images/sec: 4.9 +/- 2.7 (jitter = 2.2)`
    # (label: slow-progress only); the spread 2.7 * sqrt(10) = 8.5 is above the mean 4.9
    v = _verdict(WILD / "dv21-011-mpijob-tf-cnn-resnet50-2x8gpu-4-img-per-sec.txt")
    assert v.kind is Kind.SLOW_PROGRESS, v.summary
    assert "images/sec" in v.summary and "4.9" in v.summary


def test_deepspeed_optimizer_timers_at_a_steady_interval_are_steady_steps():
    # DeepSpeed's FP16_Optimizer.step ends each completed step with `self.log_timers(STEP_TIMERS)`
    # (deepspeed/runtime/fp16/fused_optimizer.py), printed by SynchronizedWallClockTimer.log as
    # `rank=0 time (ms) | compute_norm: 2.99 | ...` (deepspeed/utils/timer.py) through log_dist: six reports
    # 13.1 s apart with the same figures (label: healthy only)
    v = _verdict(WILD / "dv20-019-deepspeed-optimizer-step-timers-steady.txt")
    assert v.kind is Kind.HEALTHY, v.summary
    assert "6 times, every 13.0 s" in v.summary and "basic_step" in v.summary


def test_deepspeed_timer_line_with_its_rank_is_read_as_phase_times(tmp_path):
    # the line as log_dist prints it (deepspeed/utils/logging.py: `[Rank 0] ` before the message) with
    # timer.py's `rank={dist.get_rank()} time (ms)` head: the parser reads it as the program's phase timers
    from tracekit.ingest import ingest as read
    from tracekit.schema import EventKind

    log = tmp_path / "rank0.log"
    log.write_text("[2023-08-14 16:00:12,964] [INFO] [logging.py:96:log_dist] [Rank 0] rank=0 time (ms) | "
                   "compute_norm: 2.99 | overflow_check: 8.91 | unscale_and_clip: 5.07 | basic_step: 19.65 | "
                   "update_fp16: 4.56\n")
    ev = read([log]).events
    assert ev.filter(ev["kind"] == EventKind.PHASE_TIMES).height == 1


def test_nvshmem_host_collective_table_with_min_and_max_latency_is_read():
    # NVSHMEM perftest's host collectives (perftest/common/utils.cu, print_host_collective_table_impl:
    # `size(B)  count  type  redop  latency(us)  min_lat(us)  max_lat(us)  algbw(GB/s)  busbw(GB/s)`, a row
    # per size measured): reduction_on_stream 8 B - 512 B, every size completed (label: healthy only)
    v = _verdict(WILD / "dv20-041-nvshmem-reduction-on-stream-perftest.txt")
    assert v.kind is Kind.HEALTHY, v.summary
    assert "7 size(s) (8 B - 512 B)" in v.summary and "NVSHMEM perftest" in v.summary


def test_espnet_epoch_results_with_validation_are_healthy():
    # ESPnet's trainer logs `{epoch}epoch results: [train] ..., [valid] ...` (espnet2/train/reporter.py
    # log_message) on rank 0 once train_one_epoch and validate_one_epoch both returned (espnet2/train/
    # trainer.py): epoch 1 of a 3-GPU run, 59 min of training and 1 min of validation (label: healthy first)
    v = _verdict(WILD / "dv19-016-espnet-3gpu-epoch-results-scaling.txt")
    assert v.kind is Kind.HEALTHY, v.summary
    assert "epoch 1 done with its validation" in v.summary


def test_phase_timers_after_the_last_step_are_that_steps_report_not_something_after_it(tmp_path):
    # dv13-043's own lines: a tqdm bar at step 12 of 345, then DeepSpeed's timer lines (log_dist's `[Rank 0]
    # rank=0 time (ms) | forward: ..`, printed at the end of each step it completes): the run is mid-loop at
    # its last line, as without the timers
    src = (WILD / "dv13-043-accelerate-deepspeed-flops-profile-timers-with-tqdm.txt").read_text().splitlines()
    bar = next(ln for ln in src if "%|" in ln).split("[2023")[0]
    timers = [ln for ln in src if "rank=0 time (ms)" in ln and "%|" not in ln]
    log = tmp_path / "ds.log"
    log.write_text("\n".join([bar, *timers]) + "\n")
    v = decide(ingest([log]))
    assert v.kind == Kind.HEALTHY and v.rule == "progress_to_the_end"
    assert "12 steps completed" in v.summary
