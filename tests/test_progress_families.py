"""Slow or healthy from a run's own figures (issue 31, session 14), on the real formats of each family:
the time field of any progress template and a time that creeps up; benchmark tables and results against
what the links carry; the end of a benchmark or a check. Negatives with each."""

from __future__ import annotations

from pathlib import Path

from tests.factory import make_store
from tracekit import pace
from tracekit.ingest import ingest
from tracekit.parsers import nccl_tests, series, text
from tracekit.verdict import Kind, decide


def verdict_of(tmp_path: Path, lines: list[str], name: str = "train.log"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return decide(ingest([p]))


def events_of(lines: list[str]):
    return series.parse(text.lines_frame("train.log", "\n".join(lines) + "\n")).tables.get("events")


# mmcv's TextLoggerHook (mmcv/runner/hooks/logger/text.py: `Epoch [1][100/5005]\tlr: ..., eta: ..., time:
# ..., data_time: ..., memory: ..., loss: ...`): `time` is the seconds per iteration, `data_time` the loader's
MMCV = ("2021-03-02 10:{m:02d}:00,123 - mmcls - INFO - Epoch [1][{i}/5005]\tlr: 1.000e-01, eta: 2 days, "
        "11:55:36, time: {t}, data_time: {d}, memory: 9400, loss: 6.8")
# MMF/Pythia's report (mmf/trainers/core/training_loop.py, v0.1: `iter: ... time(s): 307.7 s`): the seconds
# of the last 100 iterations
MMF = ("iter: {i} train_loss: 3.6883  train_score: 0.2910  avg_train_score: 0.1358 val_score: 0.2867 "
       "val_loss: 3.3840 time(s): {t} s")


def test_the_pace_reads_the_time_field_of_mmcv_lines_and_not_the_data_time(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("\n".join(MMCV.format(m=k, i=100 * (k + 1), t=0.47 + k / 100, d=0.025) for k in range(4)))
    ticks = pace.ticks(ingest([p]).events)
    assert ticks["took"].round(3).to_list() == [0.47, 0.48, 0.49, 0.5]


def test_series_reads_the_time_field_of_mmf_lines():
    ev = events_of([MMF.format(i=100 * (k + 1), t=t) for k, t in enumerate((307.7, 268.5, 282.1))])
    assert ev["step"].to_list() == [100, 200, 300]
    assert ev["duration_ms"].to_list() == [307700.0, 268500.0, 282100.0]


def test_a_time_named_by_another_word_is_no_time_per_step():
    lines = [f"step {k} | elapsed time: {60 * k} s | total time: {60 * k} s | loss 1.2" for k in range(1, 5)]
    ev = events_of(lines)
    assert ev is None or ev["duration_ms"].null_count() == ev.height


def test_an_iteration_time_that_creeps_up_is_slow_and_names_its_figures(tmp_path):
    times = (307.7, 268.5, 282.1, 299.6, 285.3, 329.9, 356.2, 324.3, 335.9)
    lines = ["BEGIN TRAINING..."] + [MMF.format(i=100 * (k + 1), t=t) for k, t in enumerate(times)]
    v = verdict_of(tmp_path, lines)
    assert v.kind == Kind.SLOW_PROGRESS and v.rule == "pace_trend"
    assert "grew 1.2x, from 275.3 s per step to 330.1 s per step over steps 200-900" in v.summary
    assert "third after third" in v.summary


def test_a_steady_iteration_time_with_one_spike_is_not_a_creep(tmp_path):
    times = (6.43, 0.48, 0.47, 0.49, 0.48, 2.9, 0.47, 0.48, 0.49, 0.47)
    v = verdict_of(tmp_path, [MMCV.format(m=k, i=100 * (k + 1), t=t, d=0.03) for k, t in enumerate(times)])
    assert v.kind != Kind.SLOW_PROGRESS or "grew" not in v.summary


def test_times_that_count_up_with_the_step_are_cumulative_not_slow():
    ticks = pace.ticks(make_store(events=[
        dict(file="t.log", line=k, kind="step", step=100 * k, message=f"step {100 * k} time: {61.0 * k:.1f}")
        for k in range(1, 8)]).events)
    assert pace.cumulative(ticks.filter(ticks["took"].is_not_null()))
    assert pace.trend(ticks) is None


def test_step_lines_with_a_time_the_pace_cannot_read_are_never_healthy_by_their_stride():
    # (a time in minutes the reading does not know: the stride alone would say HEALTHY)
    lines = [f"Step {100 * k} | loss: 0.9{k} | took 3.{k} min" for k in range(1, 7)]
    events = [dict(file="t.log", line=k, kind="step", step=100 * k, message=m)
              for k, m in enumerate(lines, 1)]
    v = decide(make_store(events=events))
    assert v.rule != "steps_advance"


# nccl-tests' result rows (src/common.cu), an older build's table with the error column (NCCL 2.9-era)
OLD_ROW = ("{size:>12} {count:>12}     float     sum    {us:6.1f}    0.00    0.00  2e-07    {us:6.1f}    "
           "0.00    0.00  2e-07")


def test_a_table_of_small_sizes_that_takes_hundreds_of_us_is_undecided_with_its_latency(tmp_path):
    # (s17, issue 31: 1.5x the latency bound or more is said; s31: undecided, not slow: a latency states no
    # link's rate; s19: just over it, healthy at these sizes)
    rows = [OLD_ROW.format(size=2**k, count=2**k // 4, us=160.0 + 3 * k) for k in range(6, 18)]
    v = verdict_of(tmp_path, rows, "tests.log")
    assert v.kind == Kind.UNDECIDED and v.rule == "nccl_test_result"
    assert "a 64 B collective takes 178 us latency, 1.8x" in v.summary and "goes up to 128 KB" in v.summary
    rows = [OLD_ROW.format(size=2**k, count=2**k // 4, us=105.0 + k) for k in range(6, 18)]
    v = verdict_of(tmp_path, rows, "tests2.log")
    assert v.kind == Kind.HEALTHY and "a 64 B collective takes 111 us" in v.summary


def test_a_table_of_small_sizes_at_usual_latency_is_healthy_so_far(tmp_path):
    rows = [OLD_ROW.format(size=2**k, count=2**k // 4, us=35.0 + k) for k in range(3, 12)]
    v = verdict_of(tmp_path, rows, "tests.log")
    assert v.kind == Kind.HEALTHY and v.rule == "nccl_test_result"


# stas00's all_reduce_bench.py as a real GKE a3 run printed it through torchrun's --tee prefix (a paste in a
# public repository's notes): 16 ranks, busbw 84 GB/s (GPUDirect-TCPX)
A3 = ["[gke-a3-cluster-a3-cluster-node-pool-2dccbe7f-j25n:0]:The average bandwidth of all_reduce with a "
      "4.0GB payload (5 trials, 16 ranks):",
      "[gke-a3-cluster-a3-cluster-node-pool-2dccbe7f-j25n:0]: algbw: 44.947 GBps (359.6 Gbps)",
      "[gke-a3-cluster-a3-cluster-node-pool-2dccbe7f-j25n:0]: busbw: 84.275 GBps (674.2 Gbps)"]


def test_the_all_reduce_benchmark_result_is_read_as_bandwidth():
    parsed = nccl_tests.parse(text.lines_frame("bench.log", "\n".join(A3) + "\n"))
    e = parsed.tables["events"].row(0, named=True)
    assert (e["kind"], e["bytes"], e["busbw_gbs"]) == ("bandwidth", 4_000_000_000, 84.275)
    assert e["algbw_gbs"] == 44.947
    assert parsed.tables["ranks"]["world_size"].to_list() == [16] and parsed.claimed.height == 3


def test_the_all_reduce_benchmark_across_8_gpu_nodes_under_one_nic_is_slow(tmp_path):
    slow = [ln.replace("44.947", "10.119").replace("84.275", "18.973") for ln in A3]
    v = verdict_of(tmp_path, slow, "bench.log")
    assert v.kind == Kind.SLOW_PROGRESS and "18.973 GB/s" in v.summary
    assert "all_reduce_bench.py" in v.summary and "400 Gb/s" in v.summary
    assert verdict_of(tmp_path, A3, "bench2.log").kind == Kind.HEALTHY


def test_the_end_of_a_benchmark_is_a_clean_end(tmp_path):
    # ROCm's micro_benchmarking_pytorch.py
    lines = ["INFO: running forward and backward for warmup.", "INFO: running the benchmark..",
             "OK: finished running benchmark..", "--------------------SUMMARY--------------------------",
             "Microbenchmark for network : alexnet", "Num devices: 2", "Time per mini-batch : 0.0285"]
    v = verdict_of(tmp_path, lines)
    assert v.kind == Kind.HEALTHY and "OK: finished running benchmark" in v.summary
    assert verdict_of(tmp_path, lines[:2], "started.log").kind != Kind.HEALTHY


# InternLM's metrics line (internlm/train/training_internlm.py record_current_batch_training_metrics)
INTERNLM = ("INFO train.py:317 in record_current_batch_training_metrics -- tflops={f},step={s},loss=7.5025,"
            "tgs (tokens/gpu/second)={g},lr=2.2e-06,loss_scale=65536.0,grad_norm=20.6,micro_num=4,"
            "num_consumed_tokens=2621440,fwd_bwd_time=6.15")


def test_a_pace_figure_alone_is_undecided_and_names_its_figure(tmp_path):
    v = verdict_of(tmp_path, [INTERNLM.format(f=93.48098385143103, s=9, g=2104.89)])
    assert v.kind == Kind.UNDECIDED and v.rule == "nothing"
    assert "93.481 tflops at step 9" in v.summary and "GPUs' peak" in v.summary


def test_tflops_per_gpu_lines_that_hold_are_steady_and_ones_that_halve_are_slow(tmp_path):
    figures = (180.2, 181.0, 179.5, 180.7, 181.3)
    steady = [INTERNLM.format(f=f, s=s, g=2100) for s, f in enumerate(figures, 10)]
    assert verdict_of(tmp_path, steady).kind == Kind.HEALTHY
    halved = [INTERNLM.format(f=f, s=s, g=2100) for s, f in enumerate((180.2, 181.0, 120.5, 90.7, 88.3), 10)]
    v = verdict_of(tmp_path, halved, "halved.log")
    assert v.kind == Kind.SLOW_PROGRESS and "tflops" in v.summary


# the figure each trainer's progress line prints, from the code that prints it: (line, rate, took in s)
TEMPLATES = [
    # timm's train.py: `Time: {rate_avg}s, {rate}/s`
    ("Train: 1 [ 100/1251 ( 8%)]  Loss: 6.9 (6.9)  Time: 0.321s,  797.34/s  (0.330s,  775.01/s)  LR: 1.0e-03",
     797.34, 0.321),
    # MMEngine's LogProcessor (mmengine/runner/log_processor.py): `time: ...  data_time: ...`
    ("Epoch(train)  [1][  50/7330]  lr: 1.0e-04  eta: 1 day, 5:00:00  time: 0.5123  data_time: 0.0123  "
     "memory: 5000  loss: 1.2", None, 0.5123),
    # Detectron2's CommonMetricPrinter (detectron2/utils/events.py)
    ("[07/21 12:00:00 d2.utils.events]:  eta: 1 day, 2:03:04  iter: 19  total_loss: 2.1  time: 0.4567  "
     "data_time: 0.0234  lr: 0.0001  max_mem: 5000M", None, 0.4567),
    # PaddleNLP's examples: `speed: %.2f step/s`
    ("global step 100, epoch: 0, batch: 99, loss: 2.3, speed: 1.23 step/s", 1.23, None),
    # DeepSpeed's ThroughputTimer: the last interval's rate, not the running average
    ("epoch=0/micro_step=40/global_step=10, RunningAvgSamplesPerSec=25.0, CurrSamplesPerSec=24.8, "
     "MemAllocated=31.36GB", 24.8, None),
    # PyTorch's examples/word_language_model/main.py: `| ms/batch {:5.2f} |`
    ("| epoch   1 |   200/ 2983 batches | lr 5.00 | ms/batch 45.21 | loss  7.12 | ppl  1234.5", None,
     0.04521),
    ("Step 100/1000 | Loss 2.31 | 1.52 s/step | 2345 tok/s", 2345.0, 1.52),
    # a cumulative time is none of these
    ("Iteration 100, loss = 2.1, elapsed time = 120.5 s", None, None),
]


def test_the_pace_reads_the_figure_of_each_trainer_s_template():
    events = [dict(file="t.log", line=i, kind="step", step=i, message=m)
              for i, (m, _, _) in enumerate(TEMPLATES)]
    t = pace.ticks(make_store(events=events).events)
    got = {r["line"]: (r["rate"], r["took"] and round(r["took"], 5)) for r in t.iter_rows(named=True)}
    assert [got.get(i, (None, None)) for i in range(len(TEMPLATES))] == [(r, s) for _, r, s in TEMPLATES]


def test_a_server_s_throughput_that_eases_with_its_load_is_no_creep():
    # vLLM's engine (vllm/engine/metrics.py): no step number; 20% lower third after third, never halved
    said = ("INFO 05-02 10:11:{s:02d} metrics.py:351] Avg prompt throughput: 0.0 tokens/s, Avg generation "
            "throughput: {r} tokens/s, Running: 8 reqs, Swapped: 0 reqs, Pending: 0 reqs")
    rates = (50.1, 49.8, 50.3, 45.2, 44.9, 45.5, 40.1, 39.8, 40.3)
    events = [dict(file="s.log", line=i, kind="progress", message=said.format(s=i, r=r))
              for i, r in enumerate(rates)]
    t = pace.ticks(make_store(events=events).events)
    assert pace.trend(t) is None
    numbered = t.with_columns(t["i"].cast(t.schema["step"]).alias("step") * 10)
    assert "third after third" in pace.trend(numbered)["text"]


# DLRover's elastic agent (dlrover/python/elastic_agent/torch/training.py) after its network check
DLROVER = ["[2023-11-08 08:39:20,052] [INFO] [training.py:249:next_rendezvous] The node worker-0 has joined "
           "round 0 of the network-check rendezvous as rank 0 in a world of size 2.",
           "[2023-11-08 08:39:38,096] [INFO] [training.py:758:run] Network check time of round 0 is 12.299 "
           "and succeed is True.",
           "[2023-11-08 08:39:38,102] [INFO] [training.py:771:run] Fault nodes are: {faults}  and stragglers "
           "are: []."]


def test_a_network_check_that_names_no_fault_node_is_healthy_and_one_that_names_one_is_not(tmp_path):
    v = verdict_of(tmp_path, [ln.format(faults="[]") for ln in DLROVER], "ok.log")
    assert v.kind == Kind.HEALTHY and "no fault node and no straggler" in v.summary
    v = verdict_of(tmp_path, [ln.format(faults="[1]") for ln in DLROVER], "fault.log")
    assert v.kind != Kind.HEALTHY
