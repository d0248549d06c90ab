"""Session 26 (issue 31): a measurement is a result however short, and a user's paces side by side.

Real inputs: samples/wild's dev excerpt dv17-034 (diffusers, a user's tqdm speeds of two runs), and result
lines as the tools print them (perftest's RESULT_FMT header and rows, src/perftest_parameters.h; nccl-tests'
columns; ethtool's ``Speed: %uMb/s``; vLLM benchmarks/benchmark_throughput.py's ``Throughput:`` line), the
perftest and OSU shapes as pasted in public READMEs and issue threads (a header without its MsgRate column).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factory import make_store
from tracekit import result_lines
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.rules_seen import paces_compared
from tracekit.verdict import Kind, decide

WILD = Path(__file__).parent.parent / "samples" / "wild"


def _decide(tmp_path: Path, text: str):
    f = tmp_path / "excerpt.txt"
    f.write_text(text)
    store = ingest([f])
    return decide(store), store


# --- result_lines: one line, one measurement ---

@pytest.mark.parametrize("line, gbs, ms", [
    ("- `BW average[Gb/sec] 97.29`", 97.29 / 8, None),  # perftest's column name copied into a summary
    ("busbw (GB/s): 45.1", 45.1, None),
    ("t_avg[usec]: 2.97", None, 2.97e-3),
    ("t_avg 2.97 usec", None, 2.97e-3),  # perftest's latency column named in prose
    ("psum over 8 devices: 2.31 ms (avg of 100 runs)", None, 2.31),  # JAX's collective
    ("all-reduce of 1 GiB over 8 TPU chips: 1.83 ms, 547 GB/s", 547.0, 1.83),
])
def test_a_single_result_line_is_a_measurement(line, gbs, ms):
    ev = result_lines.line_event(line, "a benchmark", False)
    assert ev is not None and ev["kind"] == "bandwidth" and ev["where"] == "benchmark"
    assert ev["busbw_gbs"] == (pytest.approx(gbs) if gbs else None)
    assert ev["duration_ms"] == (pytest.approx(ms) if ms else None)


@pytest.mark.parametrize("line", [
    "Epoch 1 loss 0.52 throughput (samples/s): 812",  # a training's progress line: the progress parsers'
    "NCCL INFO all-reduce latency 12 us",
    "ERROR: bandwidth (GB/s): 0.1",
])
def test_progress_nccl_and_error_lines_are_no_measurement(line):
    assert result_lines.line_event(line, "a benchmark", False) is None


@pytest.mark.parametrize("line, gbs", [
    ("\tSpeed: 100000Mb/s", 12.5),  # ethtool
    ("Nodes are connected with 200 Gbps InfiniBand (HDR).", 25.0),
    ("Rate: 100", 12.5),  # ibstat, as before
])
def test_a_link_rate_the_excerpt_states(line, gbs):
    ev = result_lines.line_event(line, "a benchmark", False)
    assert ev["where"] == "link_rate" and ev["busbw_gbs"] == pytest.approx(gbs)


# --- tables whose header names fewer columns than their rows hold ---

def test_perftest_rows_under_a_header_without_msgrate_read_in_gb_per_s(tmp_path):
    v, _ = _decide(tmp_path, " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]\n"
                             " 1048576    5000             92.62              92.62              0.011041\n")
    assert v.kind == Kind.HEALTHY
    assert "perftest" in v.summary and "11.58 GB/s at 1 MB" in v.summary  # 92.62 Gb/s, not MB/s


def test_nccl_tests_columns_without_count_or_units_read_in_its_units(tmp_path):
    v, _ = _decide(tmp_path, "#       size      time   algbw   busbw #wrong\n"
                             "     8388608     427.3   19.63   36.81      0\n"
                             "   536870912    5812.4  116.02  217.54      0\n")
    assert v.kind == Kind.HEALTHY
    assert "217.5 GB/s at 512 MB" in v.summary and "latency 427 us at 8 MB" in v.summary


def test_short_result_lines_alone_are_healthy_with_their_figures(tmp_path):
    v, store = _decide(tmp_path, "- `BW average[Gb/sec] 97.29`\n- `t_avg 2.97 usec`\n- `t_min 2.87 usec`\n")
    assert v.kind == Kind.HEALTHY and "12.16 GB/s" in v.summary
    assert int(store.files["unknown"].sum()) == 0


def test_an_iperf_result_far_below_the_ethtool_speed_is_slow(tmp_path):
    v, _ = _decide(tmp_path, "Settings for eth0:\n\tSpeed: 100000Mb/s\n"
                             "[  5]   0.00-10.00  sec  11.0 GBytes  9.41 Gbits/sec    0             sender\n"
                             "[  5]   0.00-10.04  sec  11.0 GBytes  9.41 Gbits/sec                  receiver\n")
    assert v.kind == Kind.SLOW_PROGRESS
    assert "9.41 Gb/s" in v.summary and "100 Gb/s" in v.summary and "Speed: 100000Mb/s" in v.summary


def test_perftest_far_below_a_stated_infiniband_rate_is_slow(tmp_path):
    v, _ = _decide(tmp_path, "Nodes are connected with 200 Gbps InfiniBand (HDR).\n"
                             " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
                             " 65536      5000             22.10              21.95              0.041865\n"
                             " 1048576    5000             23.10              22.95              0.002736\n"
                             + "-" * 87 + "\n")
    assert v.kind == Kind.SLOW_PROGRESS and "200 Gb/s" in v.summary and "22.9 Gb/s" in v.summary


def test_vllm_benchmark_throughput_summary_is_the_end_of_its_run(tmp_path):
    v, _ = _decide(tmp_path, "Throughput: 12.34 requests/s, 6318.08 tokens/s\n")
    assert v.kind == Kind.HEALTHY and "Throughput: 12.34 requests/s" in v.summary


def test_a_regex_of_these_readers_never_drops_the_file(tmp_path):
    # (s26: an inline flag in the middle of a pattern made a reader raise and the file read as 0 lines)
    _, store = _decide(tmp_path, "Speed: 25000Mb/s\nsome other line\n")
    assert int((store.files["lines"] - store.files["blank"]).sum()) == 2


# --- paces side by side: rules_seen.paces_compared ---

def _pace(line: int, message: str, where: str = "compared") -> dict:
    return dict(file="p.log", line=line, kind="progress", where=where, message=message)


def _compared(*events: dict):
    return paces_compared(Evidence.gather(make_store(events=list(events))))


def test_paces_compared_slow_by_the_factor_whatever_the_unit():
    v = _compared(_pace(2, "Multi-GPU average speed: 2.59 s/it"), _pace(5, "Single GPU average speed: 2.61 it/s"))
    assert v.kind == Kind.SLOW_PROGRESS
    assert "6.8x slower" in v.summary and "2.59 s/it" in v.summary and "383 ms per step" in v.summary


def test_paces_within_twice_each_other_are_not_slow():
    assert _compared(_pace(1, "1 node: 1.2 s/it"), _pace(2, "2 nodes: 1.5 s/it")) is None


def test_paces_of_different_measures_are_not_compared():
    assert _compared(_pace(1, "run A: 812 samples/s"), _pace(2, "run B: 120 tokens/s")) is None


def test_paces_compared_with_a_failure_logged_are_the_failure_rules():
    crash = dict(file="p.log", line=3, kind="crash", where="python", message="RuntimeError: boom")
    assert _compared(_pace(1, "A: 2.59 s/it"), _pace(2, "B: 2.61 it/s"), crash) is None


def test_dev_excerpt_of_a_users_two_tqdm_speeds_is_slow():
    f = next(WILD.glob("dv17-034-*.txt"))
    store = ingest([f])
    v = decide(store)
    assert v.kind == Kind.SLOW_PROGRESS
    assert "2.59 s/it" in v.summary and "2.61 it/s" in v.summary and "6.8x" in v.summary


def test_one_pace_line_alone_is_no_comparison(tmp_path):
    _, store = _decide(tmp_path, "Single GPU speed: 2.61 it/s\n")
    assert not store.events.filter(store.events["where"] == "compared").height


# --- JAX's compile stages, timed as each finishes: rules_seen.compile_times ---

JAX_STAGES = (  # as jax/_src/dispatch.py log_elapsed_time prints them under JAX_LOG_COMPILES=1 (glog header)
    "W0610 23:50:26.521261 dispatch.py:205] Finished jaxpr to MLIR module conversion jit(train_step) in {lower} sec\n"
    "W0610 23:50:44.162414 pxla.py:1234] Finished XLA compilation of jit(train_step) in {xla} sec\n")


def test_jax_compile_stages_of_seconds_are_healthy_so_far_naming_the_slowest(tmp_path):
    v, store = _decide(tmp_path, JAX_STAGES.format(lower="0.280440092", xla="10.1791505315"))
    assert v.kind == Kind.HEALTHY
    assert "XLA compilation of jit(train_step) took 10.18 s" in v.summary and "1 function(s)" in v.summary
    assert set(store.events.filter(store.events["kind"] == "phase_times")["where"]) == {"compile"}


def test_a_jax_compile_of_minutes_is_slow_with_its_seconds(tmp_path):
    v, _ = _decide(tmp_path, JAX_STAGES.format(lower="12.2", xla="1450.17"))
    assert v.kind == Kind.SLOW_PROGRESS and "took 1450 s" in v.summary and "lax.scan" in v.summary


def test_a_jax_compile_then_an_error_is_not_this_rules(tmp_path):
    v, _ = _decide(tmp_path, JAX_STAGES.format(lower="0.2", xla="10.1")
                   + "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
                     "allocate 17179869184 bytes.\n")
    assert v.kind != Kind.HEALTHY and v.rule != "compile_times"


# --- short results in a script's or a test's words ---

def test_a_collectives_time_in_seconds_is_a_measurement_saying_the_time(tmp_path):
    v, _ = _decide(tmp_path, "Time taken for allreduce: 12.3 s\n")
    assert v.kind == Kind.HEALTHY and "12.3 s" in v.summary and "Time taken for allreduce" in v.summary


@pytest.mark.parametrize("line", [
    "still waiting for allreduce after 600 s",
    "watchdog: all_reduce hung for 300 s",
])
def test_a_wait_in_seconds_is_no_measurement(line):
    assert result_lines.line_event(line, "a benchmark", False) is None


def test_each_rank_saying_its_test_passed_is_a_clean_end(tmp_path):
    v, _ = _decide(tmp_path, "[rank0]: all_reduce test PASSED\n[rank1]: all_reduce test PASSED\n")
    assert v.kind == Kind.HEALTHY and "ranks 0-1" in v.summary and "PASSED" in v.summary


def test_each_rank_printing_the_tensor_the_collective_gave_it_is_its_result(tmp_path):
    v, _ = _decide(tmp_path, "rank 0 tensor([2., 2.], device='cuda:0')\nrank 1 tensor([2., 2.], device='cuda:1')\n")
    assert v.kind == Kind.HEALTHY and "ranks 0-1 each printed its result" in v.summary


def test_a_loss_reported_again_and_again_with_no_counter_is_progress(tmp_path):
    v, _ = _decide(tmp_path, "2024-05-01 10:00:01,123 - INFO - [rank 0] loss: 2.3451\n"
                             "2024-05-01 10:00:11,456 - INFO - [rank 0] loss: 2.1032\n"
                             "2024-05-01 10:00:21,789 - INFO - [rank 0] loss: 1.9876\n")
    assert v.kind == Kind.HEALTHY and "3 loss reports, the loss going 2.3451 -> 1.9876" in v.summary


def test_a_loss_that_never_changes_is_no_report_of_progress(tmp_path):
    _, store = _decide(tmp_path, "[rank 0] loss: 2.3451\n[rank 0] loss: 2.3451\n[rank 0] loss: 2.3451\n")
    assert not store.events.filter(store.events["where"] == "loss_reports").height


def test_an_evaluators_run_complete_is_no_end_of_the_program(tmp_path):
    # (ignite's `Engine run complete. Time taken: ...` ends one evaluation: samples/wild dv19-015)
    _, store = _decide(tmp_path, "[2023-04-08 05:21:54.503][ INFO](ignite.engine.engine.SupervisedEvaluator) - "
                                 "Engine run complete. Time taken: 00:00:01.077\n")
    assert not store.events.filter(store.events["kind"] == "program_end").height


def test_a_trainings_timing_line_is_no_measurement():
    # DeepSpeed-Chat step 3's report (samples/wild dv14-032): a training's, not a benchmark's
    line = ("|E2E latency=6.48s |Gather latency=0.19s (2.87%) |Generate time=2.96s (45.67%) |Training "
            "time=1.90s (29.33%) |Others=1.62 (25.00%)|CurSamplesPerSec=2.47")
    assert result_lines.line_event(line, "a benchmark", False) is None
