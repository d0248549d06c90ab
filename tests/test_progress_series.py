"""A program's own progress lines found by their shape (parsers/series.py), on real lines of the trainers
and servers that print them, and the rules that decide on them (issue 31): a steady series is healthy for
what is seen, one whose step time goes up and down at every line is slow; retries, countdowns, error
repeats and progress bars are never progress."""

from __future__ import annotations

from tests.factory import make_store
from tracekit.parsers import series, text
from tracekit.verdict import Kind, decide


def parsed(lines: list[str]):
    events = series.parse(text.lines_frame("train.log", "\n".join(lines) + "\n")).tables.get("events")
    return events


# icefall (egs/librispeech/ASR/conformer_ctc/train.py: `Epoch {}, batch {}, ...`), rank 0 of 7
ICEFALL = ("2021-09-30 17:{m}:{s:02d},265 WARNING [train.py:546] (0/7) Epoch 1, batch {b}, batch avg ctc "
           "loss 0.4764, batch avg att loss 0.7291, batch avg loss 0.6533, total avg loss: 0.6533, "
           "batch size: 10")
# nanotron (src/nanotron/trainer.py train_step_logs): one line carries more fields than the others
NANOTRON = ("01/17/2024 13:47:27 [INFO|DP=0|PP=0|TP=0|ip-26-0-160-225]: iteration: {i} / 1000 | "
            "consumed_tokens: 634K | elapsed_time_per_iteration_ms: {ms} | tokens_per_sec: 14.2K | "
            "global_batch_size: 20 | lm_loss: 10.6 | lr: 1e-05{more}")
# tinygrad (examples/mlperf/model_train.py): the step number leads the line, right-aligned
TINYGRAD = "{i:5d} {t:.2f} s run, 11.8750 loss, 0.000000000002 LR, 1454.57 GB used, {g:10.2f} GFLOPS"
# GluonNLP (scripts/question_answering/run_squad.py)
GLUON = ("2020-07-11 00:{m}:18,464 - root - INFO - Epoch: 1, Batch: {b}/8164, Loss span/answer/total="
         "0.77/0.17/0.95, LR=0.00001868, grad_norm=21.5925. Time cost=90.67, Throughput={r} samples/s "
         "ETA=1.70h")
# CLIP4Clip (main_task_retrieval.py train_epoch)
CLIP4CLIP = ("02/09/2022 12:{m}:25 - INFO - Epoch: 1/30, Step: {i}/951, Lr: 0.000000000, Loss: 3.254531, "
             "Time/step: {t}")


def test_a_counter_a_word_names_makes_steps_on_real_icefall_lines():
    ev = parsed([ICEFALL.format(m=34 + k // 2, s=5 + 40 * (k % 2), b=50 * k) for k in range(4)])
    assert ev["kind"].to_list() == ["step"] * 4 and ev["step"].to_list() == [0, 50, 100, 150]


def test_nanotron_lines_of_one_template_with_and_without_the_extra_fields():
    more = ["| cuda_memory_allocated: 21.1G |", "", ""]
    ms = (45, 41.2, 39.4)
    ev = parsed([NANOTRON.format(i=991 + k, ms=t, more=m) for k, (t, m) in enumerate(zip(ms, more))])
    assert ev["step"].to_list() == [991, 992, 993] and ev["duration_ms"].to_list() == [45.0, 41.2, 39.4]


def test_a_leading_step_number_and_its_seconds_on_tinygrad_lines():
    # (the real run's first lines: warm-up times, another width)
    first = ["    1 93.44 s run, 11.8750 loss, 0.000000000001 LR, 642.43 GB used,  19644.30 GFLOPS",
             "    2 101.78 s run, 11.8750 loss, 0.000000000001 LR, 1454.57 GB used,  17039.35 GFLOPS"]
    ev = parsed(first + [TINYGRAD.format(i=i, t=t, g=4e5) for i, t in ((3, 4.36), (4, 4.40), (5, 4.33))])
    assert ev["step"].to_list() == [1, 2, 3, 4, 5]
    assert ev["duration_ms"].to_list() == [93440.0, 101780.0, 4360.0, 4400.0, 4330.0]


def test_n_of_m_and_a_throughput_on_gluonnlp_lines():
    ev = parsed([GLUON.format(m=37 + k, b=3900 + 300 * k, r=52.9 + k) for k in range(3)])
    assert ev["step"].to_list() == [3900, 4200, 4500]


def test_nanogpt_and_modded_nanogpt_iterations_with_their_milliseconds():
    # nanoGPT (train.py: `iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms, mfu {mfu*100:.2f}%`)
    nano = [f"iter {i}: loss {4.2 - i * 0.01:.4f}, time {t}ms, mfu 35.12%"
            for i, t in ((100, 123.45), (110, 121.9), (120, 124.0), (130, 122.2))]
    ev = parsed(nano)
    assert ev["step"].to_list() == [100, 110, 120, 130] and ev["duration_ms"][0] == 123.45
    # modded-nanogpt (train_gpt.py: `step:{step}/{train_steps} ... train_time:{ms}ms step_avg:{ms}ms`)
    modded = [f"step:{i}/1750 val_loss:3.2810 train_time:{i * 123}ms step_avg:{t}ms"
              for i, t in ((125, 123.1), (250, 122.8), (375, 123.5))]
    ev = parsed(modded)
    assert ev["step"].to_list() == [125, 250, 375] and ev["duration_ms"].to_list()[0] == 123.1
    v = decide(make_store(events=steps(nano, [100, 110, 120, 130], [123.45, 121.9, 124.0, 122.2], rank=0)))
    assert v.kind == Kind.HEALTHY and "122 ms - 124 ms per step" in v.summary


def test_ranks_that_print_into_one_file_each_count_on_their_own():
    # (a program's own per-rank lines, interleaved as each rank gets there: rank 1 is behind rank 0)
    lines = [f"Rank {r}: iteration {i}, loss 0.5, time {t}ms"
             for r, i, t in ((0, 10, 50.1), (0, 20, 50.3), (1, 10, 50.2), (0, 30, 49.9), (1, 20, 50.0),
                             (1, 30, 50.4))]
    ev = parsed(lines)
    assert ev["rank"].to_list() == [0, 0, 1, 0, 1, 1] and ev["step"].to_list() == [10, 20, 10, 30, 20, 30]


def test_retries_countdowns_error_repeats_and_bars_are_not_progress():
    retries = [f"Retrying (Retry(total={4 - k}, connect=None)) after connection broken: /simple/torch/ "
               f"({k}/5)" for k in range(4)]
    waits = [f"[W socket.cpp:601] [c10d] The client socket has failed to connect; attempt {k} of 100"
             for k in range(4)]
    countdown = [f"Restarting workers in {s} seconds, step {s}" for s in (30, 20, 10)]
    errors = [f"step {k}: NCCL error: unhandled system error, 2.3 s" for k in range(4)]
    bars = [f"Downloading shards: {k * 25}%|####      | {k}/4 [00:0{k}<00:04, 1.2s/it]" for k in range(4)]
    bars += [f"Map (num_proc=8): {k * 20}%|##        | {k * 100}/500 [00:0{k}<00:08, 312.5 examples/s]"
             for k in range(1, 4)]
    bars += [f"Map (num_proc=1): {n} examples [00:00, {r} examples/s]"
             for n, r in ((800, 2296.35), (760, 1452.66), (40, 128.2))]
    falling = [f"iter {100 - k} remaining, eta {k} s, 3.1 it/s" for k in range(4)]
    for lines in (retries, waits, countdown, errors, bars, falling):
        assert parsed(lines) is None, lines[0]


def test_a_build_s_and_a_loader_s_n_of_m_are_not_steps():
    build = [f"[{k}/12] c++ -MMD -MF fused_adam_frontend.o.d -DTORCH_EXTENSION_NAME=fused_adam -DTORCH_API_"
             "INCLUDE_EXTENSION_H" for k in range(1, 6)]
    files = [f"Processing file {k}/100 of the dataset shard" for k in range(1, 6)]
    assert parsed(build) is None and parsed(files) is None


def test_rendezvous_rounds_that_rise_as_workers_restart_are_not_steps():
    # torch/distributed/elastic/rendezvous/dynamic_rendezvous.py
    rounds = [f"The node 'gpu-{k}_123_0' has joined round {k} of the 'default' rendezvous as rank 0 in a "
              "world of size 2." for k in range(1, 5)]
    assert parsed(rounds) is None


def test_one_repeated_line_without_a_counter_or_a_pace_is_not_progress():
    assert parsed([f"[2025-05-14 09:31:43] INFO: 127.0.0.1:{20504 + k} - \"POST /v1/completions\" 200 OK"
                   for k in range(5)]) is None


def steps(texts: list[str], numbers: list[int], took_ms=None, rank=None) -> list[dict]:
    return [dict(file="train.log", line=i + 1, kind="step", message=t, step=n, rank=rank, where="series",
                 duration_ms=took_ms[i] if took_ms else None) for i, (t, n) in enumerate(zip(texts, numbers))]


def test_a_steady_series_of_one_rank_is_healthy_with_its_coverage():
    took = (93.4, 101.8, 7.3, 4.3, 4.4, 4.3, 4.4)
    lines = [TINYGRAD.format(i=i, t=t, g=4e5) for i, t in enumerate(took, 1)]
    events = steps(lines, list(range(1, 8)), [t * 1e3 for t in took], rank=0)
    v = decide(make_store(events=events))
    assert v.kind == Kind.HEALTHY and v.rule == "steady_ticks"
    assert "rank 0's steps 1 -> 7 advanced at a steady" in v.summary
    assert "the other ranks joined each step" in v.summary and "world size not logged" in v.summary
    # ranks of a logged world that left no record: healthy for what is seen, saying who (s19, LABELS.md's
    # healthy: every visible rank; test_s19_healthy_for_what_is_seen)
    ranks = [dict(file="train.log", rank=0, world_size=8, source="torchrun")]
    v = decide(make_store(events=events, ranks=ranks))
    assert v.kind == Kind.HEALTHY and "1 of 8 ranks seen: ranks 1-7 left no record" in v.summary


def test_step_times_that_go_up_and_down_at_every_line_are_slow():
    took = (1466.6, 67.3, 48.2, 4.5, 44.2, 4.8, 43.9, 3.8, 45.7, 3.7)
    lines = [CLIP4CLIP.format(m=13 + i, i=i + 1, t=t) for i, t in enumerate(took)]
    v = decide(make_store(events=steps(lines, list(range(1, 11)))))
    assert v.kind == Kind.SLOW_PROGRESS and v.rule == "pace_alternates"
    assert "alternates between 44.2 s per step and 4.2 s per step" in v.summary


def test_steady_step_times_do_not_alternate():
    took = (4.5, 4.4, 4.6, 4.3, 4.5, 4.4)
    lines = [CLIP4CLIP.format(m=13 + i, i=i + 1, t=t) for i, t in enumerate(took)]
    assert decide(make_store(events=steps(lines, list(range(1, 7))))).kind == Kind.HEALTHY


def test_steps_at_one_stride_with_no_time_are_healthy_their_pace_unknown():
    lines = [f"Step {i} | loss:0.{9 - i % 9}1 lr:2e-05 gpu_resources:40627453440" for i in range(8)]
    v = decide(make_store(events=steps(lines, list(range(8)))))
    assert v.kind == Kind.HEALTHY and v.rule == "steps_advance" and "pace is not known" in v.summary


def test_steps_whose_timestamps_give_their_pace_are_said_with_it():
    lines = [f"Step {i} | loss:0.5 lr:2e-05" for i in range(6)]
    ev = [e | {"ts": f"2024-05-01 10:00:{10 * i:02d}"} for i, e in enumerate(steps(lines, list(range(6))))]
    v = decide(make_store(events=ev))
    assert v.kind == Kind.HEALTHY and v.rule == "steady_progress" and "10.0 s per step" in v.summary


def test_steps_with_no_time_and_a_gap_in_their_stride_are_not_called_healthy():
    nums = [0, 1, 2, 3, 9, 10]
    lines = [f"Step {i} | loss:0.5 lr:2e-05" for i in nums]
    assert decide(make_store(events=steps(lines, nums))).rule != "steps_advance"


def test_a_steady_series_beside_a_stack_dump_is_not_healthy():
    lines = [TINYGRAD.format(i=i, t=4.3, g=4e5) for i in range(1, 6)]
    ev = steps(lines, list(range(1, 6)), [4300.0] * 5, rank=0)
    ev.append(dict(file="pyspy.txt", line=1, kind="stack", rank=0, thread="MainThread", message="",
                   where="all_reduce (torch/distributed/distributed_c10d.py:2050)",
                   frames="all_reduce (torch/distributed/distributed_c10d.py:2050)"))
    assert decide(make_store(events=ev)).kind != Kind.HEALTHY


def test_a_steady_series_then_a_cut_traceback_is_not_healthy():
    lines = [TINYGRAD.format(i=i, t=4.3, g=4e5) for i in range(1, 6)]
    ev = steps(lines, list(range(1, 6)), [4300.0] * 5)
    ev.append(dict(file="train.log", line=7, kind="exception", message="RuntimeError: CUDA error: an illegal "
                   "memory access was encountered"))
    assert decide(make_store(events=ev)).kind != Kind.HEALTHY
