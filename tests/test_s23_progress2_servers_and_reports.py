"""Session 23, second round (issue 31, the first call): progress lines no parser decided on.

A serving engine's stat lines whose waiting queue drains while requests run and tokens are generated on
every line are a server that serves (``rules_seen.queue_drains``): its throughput follows its load and need
not hold steady. Two HF Trainer loss reports whose epoch goes up are two points of one loop
(``evidence_progress.MIN_REPORTS``, ``rules_progress.reports_advance``)."""

from pathlib import Path

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


# vLLM's stat line as vllm/engine/metrics.py (LoggingStatLogger.log's logger.info) prints it:
# "Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs,
# Swapped: %d reqs, Pending: %d reqs, GPU KV cache usage: %.1f%%, CPU KV cache usage: %.1f%%."
def vllm_stats(rows) -> str:
    return "".join(
        f"INFO 12-05 19:25:{10 + 5 * i:02d} metrics.py:341] Avg prompt throughput: {p:.1f} tokens/s, Avg generation "
        f"throughput: {g:.1f} tokens/s, Running: {r} reqs, Swapped: 0 reqs, Pending: {q} reqs, GPU KV cache "
        f"usage: 98.7%, CPU KV cache usage: 0.0%.\n" for i, (p, g, r, q) in enumerate(rows))


def test_server_stat_lines_whose_queue_drains_are_healthy_and_not_where_it_stays(tmp_path):
    p = tmp_path / "serve.log"
    p.write_text(vllm_stats([(852.0, 101.0, 109, 187), (386.0, 421.7, 105, 183), (522.1, 263.1, 106, 176),
                             (281.4, 342.1, 107, 166)]))
    v = decide(ingest([p]))
    assert v.kind == Kind.HEALTHY and v.rule == "queue_drains"
    assert "drained from 187 to 166" in v.summary and "101-421.7 tokens/s" in v.summary
    # and a queue that stays as it was (no request seen to finish) or a line that generates nothing: not healthy
    same = tmp_path / "same.log"
    same.write_text(vllm_stats([(0.0, 2.4, 4, 0), (0.0, 5.4, 4, 0), (0.0, 9.6, 4, 0), (0.0, 4.2, 4, 0)]))
    assert decide(ingest([same])).kind != Kind.HEALTHY
    stopped = tmp_path / "stopped.log"
    stopped.write_text(vllm_stats([(852.0, 101.0, 109, 187), (386.0, 421.7, 105, 183), (0.0, 0.0, 105, 180)]))
    assert decide(ingest([stopped])).kind != Kind.HEALTHY


def test_dev_server_excerpts_healthy_where_the_queue_drains_and_not_where_it_is_slow():
    # vLLM on two 2080 Ti: 105-109 requests running, the pending queue 187 -> 165 (label: healthy first)
    v = decide(ingest([WILD / "dv14-040-vllm-2x2080ti-wsl2-tp2-benchmark-steady.txt"]))
    assert v.kind == Kind.HEALTHY and "drained from 187 to 165" in v.summary
    # vLLM-Ascend at 2-10 tokens/s, 4 requests, nothing waiting (label: slow-progress, undecided): never healthy
    v = decide(ingest([WILD / "dv14-039-vllm-ascend-minimax-ray-pp-slow-generation.txt"]))
    assert v.kind != Kind.HEALTHY


# HF Trainer's log dict (transformers/trainer_callback.py ProgressCallback.on_log writes `str(logs)`, the
# dict Trainer.log built with its `epoch`): `{'loss': 1.1, 'learning_rate': 2e-05, 'epoch': 0.08}`
def test_two_loss_reports_whose_epoch_goes_up_are_healthy(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("{'loss': 1.1, 'learning_rate': 2e-05, 'epoch': 0.08}\n"
                 "{'loss': 0.92, 'learning_rate': 2e-05, 'epoch': 0.16}\n")
    v = decide(ingest([p]))
    assert v.kind == Kind.HEALTHY and v.rule == "reports_advance"
    assert "2 progress reports as the epoch went 0.08 -> 0.16" in v.summary
    one = tmp_path / "one.log"
    one.write_text("{'loss': 1.1, 'learning_rate': 2e-05, 'epoch': 0.08}\n")
    assert decide(ingest([one])).kind != Kind.HEALTHY


# tf.keras 2's bar mid-epoch as Progbar.update (keras/utils/generic_utils.py, verbose=1, no terminal) writes it:
# "\n", `"%Nd/%d [" % (current, target)`, the bar, `] - ETA: %s`, then ` - name: %.4f` per metric
def keras_bar(i: int, per: int, eta: str) -> str:
    done = int(30 * i / per)
    bar = "=" * (done - 1) + ">" + "." * (30 - done)
    return f"{i:{len(str(per))}d}/{per} [{bar}] - ETA: {eta} - loss: 7.6713 - acc: 0.0073"


def test_keras_bars_mid_epoch_that_advance_are_steps_counted_over_the_epochs(tmp_path):
    p = tmp_path / "fit.log"
    p.write_text("\n".join(["Epoch 1/2", keras_bar(600, 625, "32s"),
                            "625/625 [==============================] - 7s 99ms/step - loss: 0.0863 - acc: 0.9",
                            "Epoch 2/2", keras_bar(100, 625, "6:32")]) + "\n")
    v = decide(ingest([p]))
    assert v.kind == Kind.HEALTHY and "steps 600 -> 725" in v.summary
    one = tmp_path / "one.log"  # one bar: a snapshot, no progress
    one.write_text("Epoch 1/90\n" + keras_bar(228, 625, "6:32") + "\n")
    assert decide(ingest([one])).kind != Kind.HEALTHY
    # Horovod's Keras ImageNet example, a bar then rank 16 missing (label: deadlock): the bar changes nothing
    v = decide(ingest([WILD / "dev-111-horovod-32rank-keras-rank16-missing.txt"]))
    assert v.kind == Kind.DEADLOCK and "rank 16" in v.summary
