"""Session 29, health (issue 31): HEALTHY and SLOW from short excerpts of any program's own output, read by
shape. A loop's figures printed as a table under a header naming a counter column (parsers/figure_table.py:
nanotron's metrics CSV, ucx_perftest's rows, a Trainer's results table); a measured ``error 0.000`` is no
failure word and a comma field that is only a duration is a time per step (MXNet's measure.py); ROCm's
bandwidth matrices; a finish sentence that names its rank at its end (the DDP tutorial); communicators
destroyed on every rank seen (``Destroy COMPLETE``); a time whose running average holds is no slowdown.
Real inputs: the dev excerpts of samples/wild and small files under tests/data/s29_health/, each cited."""

from pathlib import Path

import polars as pl
import pytest

from tests.factory import make_store
from tracekit import rules_bench, rules_seen
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.parsers import figure_table, series
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"
DATA = Path(__file__).resolve().parent / "data" / "s29_health"


def decided(tmp_path: Path, text: str, name: str = "run.log"):
    p = tmp_path / name
    p.write_text(text)
    return decide(ingest([p]))


def table_events(text: str) -> pl.DataFrame:
    lines = text.splitlines()
    df = pl.DataFrame({"file": ["t.log"] * len(lines), "line": list(range(1, len(lines) + 1)), "text": lines})
    got = figure_table.parse(df)
    return got.tables["events"] if got.found else pl.DataFrame()


# ---- parsers/figure_table.py: a loop's figures as a table ---------------------------------------------------

def test_a_metrics_csv_under_its_header_is_steps_with_their_time():
    got = table_events("iteration,elapsed_time_per_iteration_ms,tokens_per_sec,lm_loss\n"
                       "1,48500.0,86500.0,11.2\n2,19800.0,212000.0,11.2\n3,18600.0,226000.0,9.83\n")
    assert got["step"].to_list() == [1, 2, 3] and set(got["where"]) == {"table"}
    assert got["duration_ms"].to_list() == [48500.0, 19800.0, 18600.0]
    assert got["message"][1].startswith("iteration: 2, elapsed_time_per_iteration_ms: 19800.0, tokens_per_sec:")


@pytest.mark.parametrize("text", [
    # no counter column: a table of figures, not a loop
    "size,time_ms,busbw\n1024,0.1,3.2\n2048,0.1,6.1\n",
    # a counter that falls: two runs, or a countdown
    "step  loss  time\n30  1.2  0.5\n20  1.1  0.5\n10  1.0  0.5\n",
    # one row: a snapshot, not two points of one loop
    "step,loss\n10,1.2\n",
    # words among the figures: a sentence, parsers/series.py's
    "Step\tImg/sec\ttotal_loss\n1\timages/sec: 231.2 +/- 0.0 (jitter = 0.0)\t7.771\n"
    "10\timages/sec: 230.8 +/- 0.3 (jitter = 0.9)\t7.845\n",
])
def test_what_is_no_loop_table(text):
    assert table_events(text).is_empty()


def test_a_model_cards_fractional_epoch_column_leaves_the_step_column_the_counter():
    # transformers' Trainer model card table (`| Training Loss | Epoch | Step | Validation Loss |`), `No log`
    # where no training loss was logged yet
    got = table_events("| Training Loss | Epoch | Step | Validation Loss |\n|:---:|:---:|:---:|:---:|\n"
                       "| No log | 1.0 | 63 | 0.6231 |\n| 0.5012 | 2.0 | 126 | 0.4812 |\n")
    assert got["step"].to_list() == [63, 126]


def test_nanotron_metrics_csv_real_one_slow_iteration_is_named():
    # samples/wild dv35-011: nanotron's benchmark CSV (lone `|` lines between rows), iteration 7 at 113 s
    v = decide(ingest([WILD / "dv35-011-nanotron-bench-tp4-pp4-one-slow-iteration.txt"]))
    assert v.kind == Kind.SLOW_PROGRESS and "step 7 took 113.0 s" in v.summary and "1 -> 12" in v.summary


def test_ucx_perftest_rows_under_their_ascii_header_real_are_healthy():
    # samples/wild dv34-006: ucx_perftest's `| Stage | # iterations | ...` header (the reader joins its rules
    # and rows into one line) and `[thread 0]  209  0.360 ...` rows
    v = decide(ingest([WILD / "dv34-006-ucx-perftest-gpu-gpu-half-bandwidth.txt"]))
    assert v.kind == Kind.HEALTHY and "209 -> 929" in v.summary


def test_a_trainer_results_table_real_is_healthy():
    # github.com/chrissimxx/whisper-small-kr-fine-tune README.md, "Training results" (Trainer's table)
    v = decide(ingest([DATA / "hf_model_card_whisper_small_kr.txt"]))
    assert v.kind == Kind.HEALTHY and "1000 -> 3000" in v.summary


# ---- parsers/series.py: a measured error, a comma field of a duration ---------------------------------------

def test_mxnet_measure_lines_real_with_error_zero_are_steady_steps():
    # samples/wild dv34-005: MXNet tools/bandwidth/measure.py `iter 1, 0.113931 sec, 2.264454 GB/sec per gpu,
    # error 0.000000` (an error figure of zero, no failure)
    v = decide(ingest([WILD / "dv34-005-mxnet-kvstore-bandwidth-low-per-gpu.txt"]))
    assert v.kind == Kind.HEALTHY and "steps 1 -> 5" in v.summary and "ms per step" in v.summary


def test_a_repeated_failure_line_is_still_no_progress(tmp_path):
    def frame(lines):
        return pl.DataFrame({"file": ["x"] * 4, "line": [1, 2, 3, 4], "text": lines, "ts": [None] * 4},
                            schema_overrides={"ts": pl.Utf8})

    assert not series.parse(frame([f"iter {i}, error: connection refused, retrying" for i in range(1, 5)])).found
    got = series.parse(frame([f"iter {i}, 0.11 sec, 2.3 GB/sec per gpu, error 0.000000" for i in range(1, 5)]))
    assert got.tables["events"]["step"].to_list() == [1, 2, 3, 4]


# ---- parsers/result_matrix.py: rocm-bandwidth-test -----------------------------------------------------------

def test_rocm_bandwidth_test_matrices_real_are_its_results():
    # github.com/lhl/strix-halo-testing README.md, rocm_bandwidth_test section: the access and NUMA matrices
    # hold no bandwidth; the copy matrices' largest off-diagonal figure is each device's
    store = ingest([DATA / "rocm_bandwidth_test_strix_halo.txt"])
    bw = store.events.filter(pl.col("kind") == EventKind.BANDWIDTH)
    assert sorted(bw["busbw_gbs"].to_list()) == [83.489, 83.489, 84.147, 84.364]
    v = decide(store)
    assert v.kind == Kind.HEALTHY and "rocm-bandwidth-test" in v.summary and "84.36 GB/s" in v.summary


# ---- parsers/work_done.py: a finish sentence naming its rank at its end ------------------------------------

def test_the_ddp_tutorials_finish_lines_are_each_ranks_end(tmp_path):
    # pytorch/tutorials intermediate_source/ddp_tutorial.rst: `print(f"Running basic DDP example on rank
    # {rank}.")` ... `cleanup()` then `print(f"Finished running basic DDP example on rank {rank}.")`
    v = decided(tmp_path, "Running basic DDP example on rank 0.\nRunning basic DDP example on rank 1.\n"
                          "Finished running basic DDP example on rank 0.\nFinished running basic DDP example on rank 1.\n")
    assert v.kind == Kind.HEALTHY and "ranks 0-1" in v.summary


def test_a_set_up_step_finished_on_a_rank_is_no_end(tmp_path):
    v = decided(tmp_path, "Finished loading weights on rank 0.\nFinished loading weights on rank 1.\n")
    assert v.kind != Kind.HEALTHY


# ---- rules_seen.torn_down: communicators destroyed on every rank seen --------------------------------------

# NCCL's src/init.cc: `comm %p rank %d nranks %d cudaDev %d busId %lx - Init COMPLETE` / `- Destroy COMPLETE`;
# src/proxy.cc: `[Service thread] Connection closed by localRank %d` as each local rank tears down
INIT = "gpu1:{pid}:{tid} [{r}] NCCL INFO comm 0x55d0c3a{r} rank {r} nranks 2 cudaDev {r} busId {r}000 - Init COMPLETE"
END = "gpu1:{pid}:{pid} [{r}] NCCL INFO comm 0x55d0c3a{r} rank {r} nranks 2 cudaDev {r} busId {r}000 - {how} COMPLETE"
CLOSED = "gpu1:{pid}:{tid} [{r}] NCCL INFO [Service thread] Connection closed by localRank {r}"


def teardown(how=("Destroy", "Destroy")) -> str:
    out = [INIT.format(pid=2231 + r, tid=2290 + r, r=r) for r in (0, 1)]
    out += [CLOSED.format(pid=2231 + r, tid=2300 + r, r=r) for r in (0, 1)]
    out += [END.format(pid=2231 + r, r=r, how=h) for r, h in zip((0, 1), how) if h]
    return "\n".join(out) + "\n"


def test_every_rank_destroying_its_communicator_is_healthy(tmp_path):
    v = decided(tmp_path, teardown())
    assert v.kind == Kind.HEALTHY and v.rule == "torn_down" and "rank(s) 0,1 destroyed" in v.summary


@pytest.mark.parametrize("how", [("Destroy", "Abort"), ("Destroy", None)])
def test_an_abort_or_a_rank_not_torn_down_is_not(tmp_path, how):
    v = decided(tmp_path, teardown(how))
    assert v.rule != "torn_down" and v.kind != Kind.HEALTHY


def test_torn_down_wants_a_destroy():
    store = make_store(events=[dict(file="a", line=1, kind="step", step=3, message="step 3")])
    assert rules_seen.torn_down(Evidence.gather(store)) is None


# ---- rules_bench.pace_trend: a running average that holds -----------------------------------------------------

def test_a_time_whose_running_average_holds_is_no_slowdown_real():
    # samples/wild dv27-010: deepspeech.pytorch's AverageMeter `Time 0.407 (1.204)` ... `Time 0.931 (1.190)`:
    # length-sorted batches, the run's average pace flat
    v = decide(ingest([WILD / "dv27-010-deepspeech-epoch-batch-time-rising.txt"]))
    assert v.kind == Kind.HEALTHY and v.rule != "pace_trend"


def test_a_running_average_that_rises_with_the_time_is_still_slow(tmp_path):
    lines = [f"Epoch: [1][{i}/500]\tTime {0.4 * (1 + i / 4):.3f} ({0.4 * (1 + i / 8):.3f})\tLoss 3.2"
             for i in range(1, 13)]
    v = decided(tmp_path, "\n".join(lines) + "\n")
    assert v.kind == Kind.SLOW_PROGRESS
    assert rules_bench._average_holds(pl.DataFrame({"message": ["Time 0.4 (1.2)", "Time 0.9 (1.19)"]}))


def test_perftest_server_side_real_waiting_banner_is_its_own_output():
    # github.com/OguzPastirmaci/kubernetes-oci-azure-interconnect README.md: ib_write_bw's server side, its
    # `* Waiting for client to connect... *` box (perftest src/perftest_communication.c) before the results
    v = decide(ingest([DATA / "perftest_server_oci_azure.txt"]))
    assert v.kind == Kind.HEALTHY and v.rule == "measured_results" and "perftest" in v.summary


def test_two_timer_reports_apart_with_steady_figures_are_healthy(tmp_path):
    # DeepSpeed's SynchronizedWallClockTimer.log (deepspeed/utils/timer.py) through log_dist: `[Rank 0] time
    # (ms) | optimizer_allgather: 12.31 | ...` at the end of each step it completes; two reports are two steps
    head = "[2024-01-01 00:00:{s},000] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | "
    text = (head.format(s=10) + "optimizer_allgather: 12.31 | optimizer_gradients: 3.12 | optimizer_step: 20.12\n"
            + head.format(s=20) + "optimizer_allgather: 12.11 | optimizer_gradients: 3.02 | optimizer_step: 21.12\n")
    v = decided(tmp_path, text)
    assert v.kind == Kind.HEALTHY and v.rule == "timers_repeat" and "reported 2 times, every 10.0 s" in v.summary
    one = decided(tmp_path, head.format(s=10) + "optimizer_step: 20.12\n", "one.log")
    assert one.kind != Kind.HEALTHY


@pytest.mark.parametrize("name", ["dv39-007-megatron-deepspeed-gpt3-gaudi2-evals-run-stop.txt",
                                  "dv39-014-tf-tpu-maskrcnn-evals-run-stop-success.txt"])
def test_mlperf_run_stop_with_success_real_is_the_end(name):
    # MLPerf's logger (mlcommons/logging mlperf_logging/mllog): `:::MLLOG {... "key": "run_stop", ...
    # "metadata": {..., "status": "success"}}`, as samples/wild dv39-007 (Gaudi2 GPT-3) and dv39-014 (TPU
    # Mask R-CNN) hold it
    v = decide(ingest([WILD / name]))
    assert v.kind == Kind.HEALTHY and "run_stop" in v.summary


def test_mlperf_run_stop_aborted_is_no_end(tmp_path):
    line = (':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "INTERVAL_END", "key": "run_stop", '
            '"value": null, "metadata": {"file": "train.py", "lineno": 9, "status": "aborted"}}\n')
    assert decided(tmp_path, line).kind != Kind.HEALTHY


def test_a_count_of_samples_is_no_throughput_real():
    # samples/wild dv37-013: Megatron-DeepSpeed's `total number of samples: 776406` ... `7691` (a count per
    # report) read as a throughput that fell to 1%; its `elapsed time per iteration (ms)` is the pace, steady
    v = decide(ingest([WILD / "dv37-013-bigscience-meg-ds-zero3-52b-64gpu-3-iterations.txt"]))
    assert v.kind == Kind.HEALTHY and "elapsed time per iteration" in v.summary


def test_paddles_ips_is_its_rate_not_its_batch(tmp_path):
    # PaddleOCR tools/program.py: `..., avg_samples: 32.0, ips: 61.5 samples/s, ...`
    head = "[2022/08/01 10:00:0{s}] ppocr INFO: epoch: [1/500], global_step: {g}, lr: 0.000100, loss: 1.2, "
    text = "".join(head.format(s=s, g=g) + f"avg_samples: 32.0, ips: {ips} samples/s\n"
                   for s, g, ips in ((0, 10, 61.5), (5, 20, 62.7)))
    v = decided(tmp_path, text)
    assert v.kind == Kind.HEALTHY and "ips: 62.7" in v.summary


@pytest.mark.parametrize("name, fact", [("dv36-002-allreduce-perf-540-nodes-clean.txt", "17.37-18.73 GB/s"),
                                        ("dv39-012-nccltests-8rank-sirius-allreduce-36gbps-ok.txt", "34.47-35.97 GB/s")])
def test_nccl_tests_across_nodes_at_one_nics_rate_with_no_nic_named_real_is_healthy(name, fact):
    # samples/wild dv36-002 (540 Cray nodes) and dv39-012 (2 nodes of 4 GPUs): every size right, busbw steady,
    # no NIC or rate in the log: healthy with the figure and what would make it slow
    v = decide(ingest([WILD / name]))
    assert v.kind == Kind.HEALTHY and fact in v.summary and "names neither the NICs" in v.summary
