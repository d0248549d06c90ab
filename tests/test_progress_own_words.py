"""Healthy or slow from what a program says of itself (issue 31, session 15): the pace of more progress
templates (torch_xla's ``Rate=``, RETURNN's ``sec/step``, ms-swift's ``train_speed(iter/s)``, tqdm's bars),
a test runner's end, nccl-tests rows pasted as a diff, a benchmark's result lines (DeepEP, Mooncake), an
inference server's start-up and answers (SGLang, uvicorn), two progress bars of one loop. Each family's
lines are written from the code that prints them; negatives with each."""

from __future__ import annotations

from pathlib import Path

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide


def verdict_of(tmp_path: Path, lines: list[str], name: str = "job.log"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return decide(ingest([p]))


# torch_xla's test/test_train_mp_mnist.py (train_loop_fn: `'| Training Device={} Epoch={} Step={} Loss={:.5f}
# Rate={:.2f} GlobalRate={:.2f} Time={}'`), every ordinal every log_steps steps
XLA = ("| Training Device=xla:0/{o} Epoch=1 Step={s} Loss=0.0{s:04d} Rate={r:.2f} GlobalRate=301.12 "
       "Time=10:02:{s:02d}")


def test_torch_xla_ordinals_at_a_steady_rate_are_healthy_and_the_rate_is_quoted(tmp_path):
    lines = [XLA.format(o=o, s=s, r=612.4 + o) for s in (0, 20, 40, 60) for o in range(4)]
    v = verdict_of(tmp_path, lines)
    assert v.kind == Kind.HEALTHY, v.summary
    assert "Rate=61" in v.summary


def test_torch_xla_rate_that_falls_to_a_third_is_not_healthy(tmp_path):
    lines = [XLA.format(o=0, s=s, r=r) for s, r in ((0, 610.0), (20, 600.0), (40, 300.0), (60, 200.0),
                                                    (80, 190.0), (100, 180.0))]
    assert verdict_of(tmp_path, lines).kind != Kind.HEALTHY


# RETURNN's torch engine (returnn/torch/engine.py, _print_process: `ep 3 train, step 12, ce 2.1, ..., 0.612
# sec/step`), one line per process and step
RETURNN = "ep 3 train, step {s}, ce 2.{s}, fer 0.5, mem_usage:cuda:{d} 5.1GB, {t:.3f} sec/step"


def test_returnn_steps_at_a_steady_sec_per_step_are_healthy_saying_the_figure(tmp_path):
    lines = [RETURNN.format(s=s, d=d, t=0.61 + d / 100) for s in range(5) for d in range(2)]
    v = verdict_of(tmp_path, lines)
    assert v.kind == Kind.HEALTHY, v.summary
    assert "sec/step" in v.summary


def test_returnn_time_per_step_that_grows_fourfold_is_slow(tmp_path):
    lines = [RETURNN.format(s=s, d=0, t=t) for s, t in enumerate((0.6, 0.6, 0.7, 1.5, 2.4, 2.6, 2.7))]
    assert verdict_of(tmp_path, lines).kind == Kind.SLOW_PROGRESS


# ms-swift's trainer log (swift/trainers/mixin.py: the logs dict printed per logging step)
SWIFT = ("{{'loss': 0.2{s}, 'grad_norm': 0.7, 'learning_rate': 8.6e-07, 'memory(GiB)': 40.1, "
         "'train_speed(iter/s)': {v}, 'epoch': 0.3, 'global_step/max_steps': '{s}/300', "
         "'percentage': '10.0%', 'elapsed_time': '1h 2m 3s', 'remaining_time': '2h 5m 1s'}}")


def test_ms_swift_steps_at_a_steady_train_speed_are_healthy_saying_it(tmp_path):
    v = verdict_of(tmp_path, [SWIFT.format(s=s, v=v) for s, v in ((30, 0.0521), (31, 0.0523))])
    assert v.kind == Kind.HEALTHY, v.summary
    assert "train_speed(iter/s)" in v.summary


def test_ms_swift_train_speed_that_differs_by_half_is_not_called_steady(tmp_path):
    v = verdict_of(tmp_path, [SWIFT.format(s=s, v=v) for s, v in ((30, 0.0521), (31, 0.0201))])
    assert v.kind != Kind.HEALTHY


# unittest's TextTestRunner (unittest/runner.py: `Ran %d test%s in %.3fs`, then `OK` or `FAILED (...)`)
def test_a_unittest_run_that_says_ok_is_healthy(tmp_path):
    lines = ["test_allreduce (test_dist.TestDist) ... ok", "-" * 70, "Ran 3 tests in 12.514s", "", "OK"]
    v = verdict_of(tmp_path, lines)
    assert v.kind == Kind.HEALTHY, v.summary
    assert "Ran 3 tests" in v.summary


def test_a_unittest_run_that_failed_is_not_healthy(tmp_path):
    lines = ["-" * 70, "Ran 3 tests in 12.514s", "", "FAILED (failures=1)"]
    assert verdict_of(tmp_path, lines).kind != Kind.HEALTHY


def test_an_ok_with_no_test_run_before_it_is_no_end(tmp_path):
    assert verdict_of(tmp_path, ["loading shards", "OK"]).kind != Kind.HEALTHY


def test_a_pytest_summary_with_nothing_failed_is_healthy_and_one_with_a_failure_is_not(tmp_path):
    ok = verdict_of(tmp_path, ["=" * 20 + " 4 passed, 1 warning in 31.20s " + "=" * 20], "a.log")
    assert ok.kind == Kind.HEALTHY, ok.summary
    bad = verdict_of(tmp_path, ["=" * 20 + " 1 failed, 3 passed in 31.20s " + "=" * 20], "b.log")
    assert bad.kind != Kind.HEALTHY


# nccl-tests' rows (src/common.cu) as a README's diff adds them: every line behind the diff's `+`
ROW = ("+  {b:>11}  {c:>11}     float     sum      -1  {t:>7.1f}  {a:6.2f}  {bb:6.2f}  {w}  {t:>7.1f}  "
       "{a:6.2f}  {bb:6.2f}  {w}")


def _rows(wrong: str = "0") -> list[str]:
    out = []
    for k in range(22, 32):
        b = 2**k
        t = 40 + b / 45e3
        a = b / t / 1e3
        out.append(ROW.format(b=b, c=b // 4, t=t, a=a, bb=a * 1.875, w=wrong))
    return out


def test_nccl_tests_rows_pasted_as_a_diff_are_read(tmp_path):
    v = verdict_of(tmp_path, _rows())
    assert v.kind == Kind.HEALTHY, v.summary
    assert "nccl-tests" in v.summary


def test_nccl_tests_rows_pasted_as_a_diff_with_wrong_values_are_not_healthy(tmp_path):
    assert verdict_of(tmp_path, _rows(wrong="3")).kind != Kind.HEALTHY


# DeepEP's tests/test_low_latency.py (`[rank {rank}] Dispatch bandwidth: {..:.2f} GB/s, avg_t={..:.2f} us |
# Combine bandwidth: ...`), every rank once
DEEPEP = ("[rank {r}] Dispatch bandwidth: {d:.2f} GB/s, avg_t={t:.2f} us | Combine bandwidth: {c:.2f} GB/s, "
          "avg_t={t2:.2f} us")


def test_deepep_ranks_with_even_bandwidth_are_healthy_with_the_figures(tmp_path):
    lines = [DEEPEP.format(r=r, d=41.2 + r / 10, t=180.0, c=40.1, t2=350.0) for r in range(4)]
    v = verdict_of(tmp_path, lines)
    assert v.kind == Kind.HEALTHY, v.summary
    assert "GB/s" in v.summary and "41.2" in v.summary


def test_deepep_rank_far_below_the_others_is_named_and_not_healthy(tmp_path):
    lines = [DEEPEP.format(r=r, d=41.2 if r != 2 else 9.8, t=180.0, c=40.1, t2=350.0) for r in range(4)]
    v = verdict_of(tmp_path, lines)
    assert v.kind != Kind.HEALTHY
    assert "rank 2" in v.summary


def test_a_benchmark_that_reports_an_error_is_not_healthy(tmp_path):
    lines = [DEEPEP.format(r=r, d=41.2, t=180.0, c=40.1, t2=350.0) for r in range(2)]
    lines.append("RuntimeError: DeepEP error: timeout (dispatch CPU)")
    assert verdict_of(tmp_path, lines).kind != Kind.HEALTHY


# Mooncake's transfer_engine_bench (transfer_engine_bench.cpp: `Test completed: duration ..., batch count ...,
# throughput ...`), through glog
MOONCAKE = "I0601 10:00:{s:02d}.000000 4242 transfer_engine_bench.cpp:296] {m}"


def test_mooncake_bench_that_completed_is_healthy_saying_its_throughput(tmp_path):
    lines = [MOONCAKE.format(s=1, m=f"Worker {w} stopped!") for w in range(3)]
    end = "Test completed: duration 10.00, batch count 15234, throughput 12.34 GB/s"
    lines.append(MOONCAKE.format(s=2, m=end))
    v = verdict_of(tmp_path, lines)
    assert v.kind == Kind.HEALTHY, v.summary
    assert "12.34" in v.summary


def test_mooncake_bench_with_failed_transfers_is_not_healthy(tmp_path):
    lines = [MOONCAKE.format(s=1, m="Worker 0 stopped!"),
             "E0601 10:00:01.500000 4243 transfer_engine_bench.cpp:170] Transfer failed for batch 3",
             MOONCAKE.format(s=2, m="Test completed: duration 10.00, batch count 12, throughput 0.01 GB/s")]
    assert verdict_of(tmp_path, lines).kind != Kind.HEALTHY


# SGLang (managers/scheduler_metrics_mixin.py's prefill line; uvicorn's access log)
PREFILL = ("[2025-06-01 10:00:0{s}] Prefill batch. #new-seq: 1, #new-token: 12, #cached-token: 4000, token "
           "usage: 0.1{s}, #running-req: {s}, #queue-req: 0")
ACCESS = '[2025-06-01 10:00:0{s}] INFO:     127.0.0.1:4{s}000 - "POST /v1/chat/completions HTTP/1.1" {code}'


def test_an_sglang_server_answering_requests_is_healthy(tmp_path):
    lines = [x for s in range(4) for x in (PREFILL.format(s=s), ACCESS.format(s=s, code="200 OK"))]
    v = verdict_of(tmp_path, lines)
    assert v.kind == Kind.HEALTHY, v.summary
    assert "4 request(s)" in v.summary


def test_a_server_answering_500_is_not_healthy(tmp_path):
    lines = [ACCESS.format(s=0, code="200 OK"), ACCESS.format(s=1, code="500 Internal Server Error")]
    assert verdict_of(tmp_path, lines).kind != Kind.HEALTHY


def test_a_server_that_was_ready_then_crashed_is_not_healthy(tmp_path):
    # (a real paste's shape: sglang's test of a scheduler crash after the ready line)
    lines = ["[2026-05-06 19:11:22] The server is fired up and ready to roll!",
             "[2026-05-06 19:11:47 TP0] Prefill batch, #new-seq: 1, #new-token: 256, #cached-token: 0, token "
             "usage: 0.01, #running-req: 0, #queue-req: 0",
             "[2026-05-06 19:12:07] Subprocess scheduler_3 (pid=22856) crashed with exit code -9",
             "Traceback (most recent call last):", "RuntimeError: CUDA error: an illegal memory access was "
             "encountered"]
    assert verdict_of(tmp_path, lines).kind != Kind.HEALTHY


def test_sglang_start_up_past_distributed_init_on_every_rank_is_healthy_so_far(tmp_path):
    lines = [f"[2025-06-01 10:00:01 TP{r}] Init torch distributed ends. mem usage=1.20 GB" for r in range(4)]
    lines += [f"[2025-06-01 10:00:02 TP{r}] Load weight begin. avail mem=70.1 GB" for r in range(4)]
    v = verdict_of(tmp_path, lines)
    assert v.kind == Kind.HEALTHY, v.summary
    assert "start-up" in v.summary


def test_sglang_start_up_where_one_rank_never_went_on_is_not_healthy(tmp_path):
    lines = [f"[2025-06-01 10:00:01 TP{r}] Init torch distributed ends. mem usage=1.20 GB" for r in range(4)]
    lines += [f"[2025-06-01 10:00:02 TP{r}] Load weight begin. avail mem=70.1 GB" for r in range(3)]
    assert verdict_of(tmp_path, lines).kind != Kind.HEALTHY


# tqdm's meter (tqdm/std.py format_meter: `[{elapsed}<{remaining}, {rate_fmt}{postfix}]`), pasted alone
def test_two_progress_bars_of_one_loop_far_apart_in_pace_are_slow(tmp_path):
    lines = ["With 2 GPUs:", "[01:40<7:50:00,  5.66s/it, loss=0.2]", "", "With 1 GPU:",
             "[00:20<42:00,  1.98it/s, loss=0.3]"]
    v = verdict_of(tmp_path, lines)
    assert v.kind == Kind.SLOW_PROGRESS, v.summary
    assert "5.66 s/it" in v.summary


def test_two_progress_bars_at_one_pace_are_not_slow(tmp_path):
    lines = ["[01:40<42:00,  1.90it/s, loss=0.2]", "[00:20<43:20,  1.98it/s, loss=0.3]"]
    assert verdict_of(tmp_path, lines).kind != Kind.SLOW_PROGRESS


def test_two_progress_bars_of_different_loops_are_not_compared(tmp_path):
    lines = ["[01:40<00:10,  5.66s/it]", "[00:20<42:00,  1.98it/s]"]
    assert verdict_of(tmp_path, lines).kind != Kind.SLOW_PROGRESS


def test_one_bar_slow_at_its_start_then_fast_is_not_two_runs(tmp_path):
    lines = ["  1%|          | 10/1000 [00:52<1:25:48,  5.20s/it]",
             " 50%|#####     | 500/1000 [05:00<04:20,  1.92it/s]",
             " 90%|######### | 900/1000 [08:30<00:52,  1.92it/s]"]
    assert verdict_of(tmp_path, lines).kind != Kind.SLOW_PROGRESS


# tinygrad's examples (`{i:5d} {t:.2f} s run, {loss:.4f} loss, ...`): the first steps hold the JIT's compiling
def test_steps_slow_only_while_the_jit_compiles_are_not_slow(tmp_path):
    times = (93.4, 101.8, 7.3, 4.32, 4.36, 4.32, 4.34, 4.35, 4.36, 4.4)
    lines = [f"{i:5d} {t:.2f} s run, 11.8750 loss, 0.000000000001 LR, 1454.57 GB used, 398512.24 GFLOPS"
             for i, t in enumerate(times, 1)]
    assert verdict_of(tmp_path, lines).kind == Kind.HEALTHY


def test_a_server_answering_only_its_metrics_probes_is_not_said_to_serve(tmp_path):
    # (a Ray actor's SGLang engine while the trainer hangs: liveness and metrics probes still get 200)
    lines = [f'(SGLangEngine pid=17467) [2026-03-24 06:37:0{s}] INFO:     172.17.0.11:4{s}646 - "GET '
             '/metrics HTTP/1.1" 200 OK' for s in range(4)]
    lines.insert(0, "(MegatronTrainRayActor pid=19450) [2026-03-24 06:36:50] timer.py:24 - Timer actor_train "
                    "start")
    assert verdict_of(tmp_path, lines).kind != Kind.HEALTHY


# tqdm bars of four ranks interleaved as a run starts (tqdm's it/s: an average since the bar began)
def test_bars_of_ranks_starting_up_are_not_a_slow_step(tmp_path):
    lines = ["0%| | 1/61289 [00:05<95:22:15, 5.60s/it]", "0%| | 1/61601 [00:05<88:22:49, 5.17s/it]",
             "0%| | 2/61289 [00:06<15:05:38, 1.13it/s]", "0%| | 2/61601 [00:05<13:54:11, 1.23it/s]",
             "0%| | 3/61289 [00:07<11:16:09, 1.51it/s]", "0%| | 4/61289 [00:07<1:51:54, 9.13it/s]",
             "0%| | 6/61289 [00:07<1:42:52, 9.93it/s]", "0%| | 7/61289 [00:07<1:40:52, 10.1it/s]"]
    assert verdict_of(tmp_path, lines).kind != Kind.SLOW_PROGRESS
