"""A program's own figures of its pace (issue 31): a throughput or a time per step that holds steady is
healthy for what is seen, one that halves or doubles is slow; lines with or without a step number."""

from __future__ import annotations

from tests.factory import make_store
from tracekit import pace
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide


def progress(texts: list[str], kind: str = "progress", steps=None, rank=None) -> list[dict]:
    return [dict(file="serve.log", line=i + 1, kind=kind, message=t, rank=rank,
                 step=steps[i] if steps else None) for i, t in enumerate(texts)]


# SGLang's scheduler (python/sglang/srt/managers/scheduler_metrics_mixin.py log_decode_stats)
SGLANG = ("[2026-04-08 14:05:{s:02d} TP0] Decode batch, #running-req: 5, #token: 20800, token usage: 0.29, "
          "cuda graph: True, gen throughput (token/s): {r}, #queue-req: 0")
# vLLM's engine (vllm/engine/metrics.py LoggingStatLogger)
VLLM = ("INFO 05-02 10:11:{s:02d} metrics.py:351] Avg prompt throughput: 0.0 tokens/s, Avg generation "
        "throughput: {r} tokens/s, Running: 8 reqs, Swapped: 0 reqs, Pending: 0 reqs")
# Megatron-LM (megatron/training/training.py training_log)
MEGATRON = (" iteration {i:8d}/  500000 | consumed samples: {c} | elapsed time per iteration (ms): {ms} | "
            "learning rate: 1.5E-04 | lm loss: 7.1E+00 |")


def test_sglang_decode_batches_at_a_steady_throughput_are_healthy():
    rates = (144.95, 140.27, 136.39, 139.89, 144.10, 157.64, 153.78, 157.11)
    v = decide(make_store(events=progress([SGLANG.format(s=21 + i, r=r) for i, r in enumerate(rates)])))
    assert v.kind == Kind.HEALTHY and v.rule == "steady_ticks"
    assert "136.39-157.64 token/s over 8 progress lines" in v.summary and "covers what is seen" in v.summary


def test_a_throughput_that_halves_is_slow():
    rates = (44.3, 45.1, 43.8, 40.2, 30.5, 21.0, 19.9, 20.4)
    v = decide(make_store(events=progress([VLLM.format(s=i * 5, r=r) for i, r in enumerate(rates)])))
    assert v.kind == Kind.SLOW_PROGRESS and v.rule == "pace_trend"
    assert "the throughput fell to" in v.summary and "tokens/s" in v.summary


def test_iteration_times_that_double_are_slow():
    ms = (950.1, 812.0, 820.4, 815.3, 1300.8, 1650.2, 1702.9, 1760.3)
    lines = [MEGATRON.format(i=10 * (k + 1), c=80 * (k + 1), ms=m) for k, m in enumerate(ms)]
    v = decide(make_store(events=progress(lines, "step", steps=[10 * (k + 1) for k in range(8)], rank=0)))
    assert v.kind == Kind.SLOW_PROGRESS and "the time per step grew 2.1x, from 816 ms per step" in v.summary


def test_a_steady_megatron_run_is_not_slow():
    ms = (950.1, 812.0, 820.4, 815.3, 830.8, 805.2, 822.9, 818.3)
    lines = [MEGATRON.format(i=10 * (k + 1), c=80 * (k + 1), ms=m) for k, m in enumerate(ms)]
    v = decide(make_store(events=progress(lines, "step", steps=[10 * (k + 1) for k in range(8)], rank=0)))
    assert v.kind == Kind.HEALTHY


def test_a_server_throughput_that_varies_with_its_load_but_holds_is_healthy():
    rates = (1055.3, 1226.3, 734.9, 589.8, 1242.7)
    v = decide(make_store(events=progress([VLLM.format(s=i * 10, r=r) for i, r in enumerate(rates)])))
    assert v.kind == Kind.HEALTHY and "589.8-1242.7 tokens/s over 5 progress lines" in v.summary
    assert "each within 2x of the median 1055.3" in v.summary


def test_a_server_whose_throughput_ends_at_zero_is_not_healthy():
    rates = (1055.3, 1226.3, 1100.9, 1180.8, 0.0)
    v = decide(make_store(events=progress([VLLM.format(s=i * 10, r=r) for i, r in enumerate(rates)])))
    assert v.kind != Kind.HEALTHY


def test_a_server_throughput_that_swings_past_2x_is_not_called_healthy():
    rates = (1055.3, 1226.3, 334.9, 289.8, 1242.7)
    v = decide(make_store(events=progress([VLLM.format(s=i * 10, r=r) for i, r in enumerate(rates)])))
    assert v.kind != Kind.HEALTHY


def test_an_error_among_the_progress_lines_is_never_healthy():
    rates = (144.95, 140.27, 136.39, 139.89)
    ev = progress([SGLANG.format(s=21 + i, r=r) for i, r in enumerate(rates)])
    ev.append(dict(file="serve.log", line=9, kind="exception", message="RuntimeError: NCCL error: unhandled system error"))
    assert decide(make_store(events=ev)).kind != Kind.HEALTHY


def test_ticks_read_a_rate_before_or_after_its_unit_and_a_time_per_step():
    t = pace.ticks(make_store(events=progress([
        "Epoch[0] Batch [50]\tSpeed: 875.63 samples/sec", "samples/sec: 1,204.5 | loss 2.1",
        " 35%|###5      | 35/100 [00:53<01:39,  1.52s/it]", "3.21it/s", "250/250 [====] - 8s 31ms/step"])).events)
    assert t["rate"].to_list()[:2] == [875.63, 1204.5] and t["took"].to_list()[2] == 1.52
    assert t["rate"].to_list()[3] == 3.21 and abs(t["took"].to_list()[4] - 0.031) < 1e-9


# HF Trainer's log line (transformers/trainer.py Trainer.log: `{'loss': ..., 'learning_rate': ..., 'epoch': ...}`)
def loss_dicts(epochs, losses) -> list[str]:
    return [f"{{'loss': {l}, 'learning_rate': 2e-05, 'epoch': {e}}}" for e, l in zip(epochs, losses)]


def test_loss_dicts_whose_epoch_goes_up_are_healthy_for_what_is_seen(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("\n".join(loss_dicts((0.08, 0.09, 0.1, 0.11), (1.10, 0.21, 1.09, 0.15))) + "\n")
    v = decide(ingest([p]))
    assert v.kind == Kind.HEALTHY and v.rule == "reports_advance"
    assert "4 progress reports as the epoch went 0.08 -> 0.11" in v.summary and "covers what is seen" in v.summary


def test_loss_dicts_then_an_error_are_not_healthy(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("\n".join(loss_dicts((0.08, 0.09, 0.1, 0.11), (1.10, 0.21, 1.09, 0.15))
                           + ["RuntimeError: NCCL communicator was aborted on rank 1."]) + "\n")
    assert decide(ingest([p])).kind != Kind.HEALTHY


def test_one_epoch_said_over_and_over_is_no_progress(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("\n".join(loss_dicts((0.1, 0.1, 0.1, 0.1), (1.10, 1.10, 1.10, 1.10))) + "\n")
    assert decide(ingest([p])).rule != "reports_advance"
