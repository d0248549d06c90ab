"""Healthy or slow from more templates' own figures, as a class (issue 31, session 16): every key that
names a throughput unit (torchtune's ``tokens_per_second_per_gpu:``, TensorFlow estimator's
``global_step/sec:``, HF Trainer's ``samples_per_second``), a throughput that ends a few percent below its
best (noise, not a fall), the figures a partial verdict quotes, and a progress bar at 100% that ends a loop,
not the program. Negatives with each."""

from __future__ import annotations

from pathlib import Path

from tests.factory import events_of as factory_events
from tests.factory import text_store
from tracekit import pace
from tracekit.parsers import series, text
from tracekit.schema import EventKind

STEP = EventKind.STEP
from tracekit.verdict import Kind, decide


def events_of(lines: list[str]):
    return series.parse(text.lines_frame("train.log", "\n".join(lines) + "\n")).tables.get("events")


# torchtune's StdoutLogger (torchtune/training/metric_logging.py: `Step {step} | ` then `name:value` of each
# metric, lora_finetune_distributed.py logs `tokens_per_second_per_gpu`)
TORCHTUNE = ("Step {s} | loss:2.2{s} lr:9e-05 tokens_per_second_per_gpu:{r} peak_memory_active:11.4 "
             "peak_memory_alloc:11.4 peak_memory_reserved:21.9")
# tensorflow/models' resnet README, its expected output (StepCounterHook's `global_step/sec`, the loss
# hook's `loss = .., step = ..` with no time on it)
RESNET = """INFO:tensorflow:loss = 2.62153, step = 1, precision = 0.0703125
INFO:tensorflow:global_step/sec: 1.53655
INFO:tensorflow:loss = 1.77221, step = 101, precision = 0.359375
INFO:tensorflow:global_step/sec: 1.55515
INFO:tensorflow:loss = 1.50121, step = 201, precision = 0.5625
INFO:tensorflow:global_step/sec: 1.55693
INFO:tensorflow:loss = 1.33547, step = 301, precision = 0.6015625
INFO:tensorflow:global_step/sec: {last}
INFO:tensorflow:loss = 1.25014, step = 401, precision = 0.640625
"""


def test_any_key_that_names_a_throughput_unit_gives_the_rate():
    said = {"tokens_per_second_per_gpu:576.6 peak_memory_active:11.4": (576.6, "tokens_per_second_per_gpu"),
            "INFO:tensorflow:global_step/sec: 1.13524": (1.13524, "global_step/sec"),
            "{'train_samples_per_second': 3.1, 'epoch': 1.0}": (3.1, "train_samples_per_second"),
            "step 4 steps_per_second=2.5": (2.5, "steps_per_second")}
    for line, (rate, unit) in said.items():
        t = pace.ticks(events_of([line] * 3))
        assert t["rate"].to_list() == [rate] * 3 and t["unit"][0] == unit, line
    # (a key with no throughput unit: memory, a learning rate, a loss per second of nothing)
    assert events_of(["Step 3 | loss:2.2 lr:9e-05 peak_memory_active:11.4"] * 3) is None


def test_torchtune_s_steady_tokens_per_second_is_healthy_and_quoted(tmp_path: Path):
    rates = ["576.6", "614.5", "583.2", "575.9"]
    v = decide(text_store(tmp_path, torchtune(tmp_path, rates)))
    assert v.kind == Kind.HEALTHY and "tokens_per_second_per_gpu" in v.summary
    # a rate that halves at the end is no steady pace
    rates[-1] = "250.0"
    v = decide(text_store(tmp_path, torchtune(tmp_path, rates)))
    assert v.kind != Kind.HEALTHY and "250" in v.summary


def torchtune(tmp_path: Path, rates: list[str]) -> str:
    return "\n".join(TORCHTUNE.format(s=s, r=r) for s, r in zip(range(29, 29 + len(rates)), rates))


def test_a_throughput_a_few_percent_below_its_best_is_not_falling(tmp_path: Path):
    steps = factory_events(text_store(tmp_path, torchtune(tmp_path, ["576", "614", "583", "570"])), STEP)
    assert pace.measure(steps)["falling"] is None
    steps = factory_events(text_store(tmp_path, torchtune(tmp_path, ["576", "614", "583", "500"])), STEP)
    assert "fell from 614 to 500" in pace.measure(steps)["falling"][0]


def test_tensorflow_estimator_s_steps_per_second_read_beside_its_step_lines(tmp_path: Path):
    ev = events_of(RESNET.format(last="1.55012").splitlines())
    assert ev is not None and ev["message"].str.contains("global_step/sec").sum() == 4
    v = decide(text_store(tmp_path, RESNET.format(last="0.51012")))
    assert v.kind != Kind.HEALTHY  # (a pace that falls to a third is never healthy)


# mmengine's LoggerHook (mmengine/runner/log_processor.py: `Epoch(train)  [62][1750/2693]  base_lr: ...
# eta: ...  time: 1.2069  data_time: 0.0319  memory: ...`): `time` is the seconds per iteration
MMENGINE = ("2024/01/23 10:{m:02d}:04 - mmengine - INFO - Epoch(train)  [3][{i}/2693]  base_lr: 2.0000e-03 "
            "lr: 8.1200e-04  eta: 1 day, 2:09:41  time: {t}  data_time: 0.0319  memory: 14225  loss: 2036.3")


def test_a_partial_verdict_quotes_the_program_s_own_time_field(tmp_path: Path):
    times = ("1.2069", "0.9690", "1.3134", "0.8466")
    lines = [MMENGINE.format(m=i, i=50 * (i + 1), t=t) for i, t in enumerate(times)]
    v = decide(text_store(tmp_path, "\n".join(lines)))
    # (s17: steps to the last line, the last time the lowest: healthy for what is seen, with its own figures)
    assert v.kind == Kind.HEALTHY and "0.847-1.31 s per step" in v.summary and "`time: 0.8466`" in v.summary


# tqdm's bars (tqdm/std.py format_meter: `{desc}: {percentage}%|{bar}| {n}/{total} [{elapsed}<{remaining},
# {rate}]`) at 100%: a loop ended (HF datasets' Map, an epoch), the program did not say it ended
BARS = """Map: 100%|###################| 669/669 [00:00<00:00, 3076.21 examples/s]
Training: 100%|###################| 15/15 [07:57<00:00, 31.82s/it]
Training: 100%|###################| 15/15 [07:56<00:00, 31.85s/it]
Evaluating: 100%|###################| 2/2 [00:19<00:00,  9.58s/it]
Epoch: 0, Average Training Loss: 4.85, Average Evaluation Loss: 2.55
"""


def test_a_bar_at_100_percent_ends_a_loop_not_the_program(tmp_path: Path):
    v = decide(text_store(tmp_path, BARS))
    assert v.kind != Kind.HEALTHY
    assert "last step reached" not in v.summary, v.summary
    # a trainer's step line at its last step does end the training (Megatron's `iteration N/ N |`)
    mega = "\n".join(f" iteration {i}/ 4 | consumed samples: {i * 8} | elapsed time per iteration (ms): "
                     f"812.{i} |" for i in range(1, 5))
    assert decide(text_store(tmp_path, mega, "mega.log")).kind == Kind.HEALTHY


# DeepEP's tests/test_low_latency.py (`[rank {rank}] Dispatch bandwidth: {..:.2f} GB/s, avg_t=... us |
# Combine bandwidth: ...`); nccl-tests' all_reduce_perf header and one row of its table
DEEPEP = ("[rank {r}] Dispatch bandwidth: 41.2{r} GB/s, avg_t=180.00 us | Combine bandwidth: 40.10 GB/s, "
          "avg_t=350.0 us")
NCCL_TESTS = """# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20
#  Rank  0 Group  0 Pid  12345 on     node01 device  0 [0x07] NVIDIA H100 80GB HBM3
#       size    count   type  redop   root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
           8        2  float    sum     -1  12.01   0.00   0.00      0  11.90   0.00   0.00      0
"""


def test_a_file_of_benchmark_results_is_of_its_own_kind_not_nccl_tests(tmp_path: Path):
    store = text_store(tmp_path, "\n".join(DEEPEP.format(r=r) for r in range(4)), "deepep.log")
    assert store.files["kind"].to_list() == ["benchmark"]
    assert factory_events(store, EventKind.BANDWIDTH)["where"].to_list() == ["benchmark"] * 4
    tests = text_store(tmp_path, NCCL_TESTS, "nccl.log")
    assert tests.files["kind"].to_list() == ["nccl-tests"]
    assert "benchmark" not in factory_events(tests, EventKind.BANDWIDTH)["where"].to_list()


# DeepEP's tests/test_internode.py tuning sweep (`[tuning] SMs {..}, NVL chunk {..}, RDMA chunk {..}: {..:.2f}
# GB/s (RDMA), {..:.2f} GB/s (NVL)`) beside NVSHMEM's bootstrap trace (bootstrap_uid.cpp: `rank 2 nranks 4`)
TUNING = "[tuning] SMs 24, NVL chunk 4, RDMA chunk {c}: {r:.2f} GB/s (RDMA), {n:.2f} GB/s (NVL)"
BOOTSTRAP = ("/workspace/nvshmem/src/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_uid_barrier:575: "
             "rank 2 nranks 4 tag 2 - DONE")


def test_one_rank_s_benchmark_figures_of_a_bigger_world_are_quoted_undecided(tmp_path: Path):
    lines = [TUNING.format(c=c, r=c / 10, n=c / 5) for c in (4, 8, 12, 16)] + [BOOTSTRAP]
    v = decide(text_store(tmp_path, "\n".join(lines)))
    # (s17: RDMA at 1.6 GB/s at most, under one 100 Gb/s NIC's 12.5 GB/s: slow, whoever else is unseen)
    assert v.kind == Kind.SLOW_PROGRESS and "0.4-1.6 GB/s" in v.summary, v.summary
    assert "left no record" in v.summary  # (ranks 0, 1 and 3 of the 4 NVSHMEM names)
