"""Session 23 (issue 31, the first call): progress on the ranks seen decides where an expert decides.

A counter that advances across one process's own lines, its last line mid-loop, nothing but calm lines:
HEALTHY though not every rank is seen (``rules_seen.progress_on_ranks_seen``): in synchronous training a
step ends only when every rank's collectives of that step complete, so the ranks not seen are inferred to
advance. A loop at its end (a bar at 100%, nothing after it) or one value per process stays undecided.
Two progress lines whose later figure is half the earlier or worse are slow progress (``pace.halved``,
``rules_seen.pace_halved``); WeatherGenerator's terminal line is read as a step with its samples/s."""

from pathlib import Path

from tests.factory import make_store
from tracekit import rules_seen
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


def _decide(name: str):
    return decide(ingest([WILD / name]))


def icefall(rank: int, world: int, batches: list[int], last: str | None = None) -> list[dict]:
    """icefall's train.py line (`Epoch 1, batch 50, loss[...]`), prefixed `(rank/world)` by its logger."""
    out = [dict(kind="step", file="train.log", line=i + 1, step=b, rank=rank,
                message=f"({rank}/{world}) Epoch 1, batch {b}, loss[loss=0.62, over 4937.00 frames. ]")
           for i, b in enumerate(batches)]
    if last:
        out.append(dict(kind="progress", file="train.log", line=len(batches) + 1, step=batches[-1],
                        max_steps=batches[-1], rank=rank, message=last))
    return out


def test_steps_of_one_rank_that_advance_mid_loop_are_healthy_the_others_inferred():
    v = rules_seen.progress_on_ranks_seen(Evidence.gather(make_store(events=icefall(0, 7, [0, 50, 100]))))
    assert v is not None and v.kind == Kind.HEALTHY
    assert "rank 0's lines advanced steps 0 -> 100" in v.summary and "inferred" in v.summary


def test_one_value_per_process_is_a_snapshot_and_a_loop_at_its_end_is_where_a_job_stops():
    snap = rules_seen.progress_on_ranks_seen(Evidence.gather(make_store(events=icefall(0, 7, [50]))))
    assert snap is None
    ended = icefall(0, 7, [0, 50], last="Epoch 54: 100%|██████████| 2950/2950 [1:03:38<00:00, 1.29s/it]")
    assert rules_seen.progress_on_ranks_seen(Evidence.gather(make_store(events=ended))) is None


def test_dev_excerpts_of_progress_on_some_ranks_are_healthy_and_ended_loops_are_not():
    # icefall rank 0 of 7, batches 0 -> 100 (label: healthy first); SkyPilot's two nodes, epochs 0 -> 10
    for name in ("dv3-020-icefall-ddp-rank0-of-7-steady-batches.txt",
                 "dv5-023-skypilot-spot-2node-ddp-progress.txt",
                 "dv19-015-monailabel-multigpu-ignite-epochs-healthy.txt"):
        v = _decide(name)
        assert v.kind == Kind.HEALTHY, name
        assert "progress on the ranks seen" in v.summary or name.startswith("dv19"), name
    # and where the loop ended (a bar at 100%, nothing after it) or a failure follows: undecided, as labelled
    for name in ("dev-075-lightning-mt5-epoch54-end.txt",
                 "dv4-030-accelerate-fsdp-6gpu-epoch-done-then-hang.txt",
                 "dv16-004-ms-swift-grpo-colocate-stuck-after-step56-rollout.txt",
                 "llm-044-llamafactory-internvl-progress-then-rank5-timeout.txt"):
        assert _decide(name).kind == Kind.UNDECIDED, name


def test_two_progress_lines_the_later_at_half_the_throughput_are_slow_progress():
    # PaddleOCR tools/program.py's line (`..., ips: 589.95118 samples/s`), 1 GPU then 8 GPUs
    v = _decide("dv15-028-paddleocr-rec-1-2-4-8-gpu-ips-drops-to-191.txt")
    assert v.kind == Kind.SLOW_PROGRESS and "589.951" in v.summary and "191.796" in v.summary
    # a warm-up (the earlier slower) says nothing
    warm = [dict(kind="step", file="t.log", line=i + 1, step=s, message=f"step {s}, loss 2.0, 12.0 samples/s")
            for i, s in enumerate((1, 2))]
    warm[0]["message"] = "step 1, loss 2.0, 3.0 samples/s"
    assert rules_seen.pace_halved(Evidence.gather(make_store(events=warm))) is None
    # two bars at their end (vLLM's `Processed prompts: 100%| 1/1 [..., 5.91it/s]`, then 1.02it/s):
    # two loops
    assert _decide("dv2-015-unsloth-grpo-vllm-prompts-done-pg-not-destroyed.txt").kind != Kind.SLOW_PROGRESS


def test_weathergenerator_terminal_lines_of_one_step_on_two_runs_are_read_and_compared(tmp_path):
    # ecmwf/WeatherGenerator src/weathergen/train/trainer.py:907-915 (`_log_terminal`): mini-epoch, batch/len,
    # istep, loss, lr, then `s/sec=` the samples per second since the last line
    text = ("000 : 00040/01024 : 000040 : loss = 9.0760E-01 (lr=1.34E-05, s/sec=0.715)\n"
            "000 : 00040/00512 : 000040 : loss = 8.9370E-01 (lr=1.86E-05, s/sec=0.350)\n")
    f = tmp_path / "weather.log"
    f.write_text(text)
    store = ingest([f])
    steps = store.events.filter(store.events["kind"] == "step")
    assert steps["step"].to_list() == [40, 40]
    v = decide(store)
    assert v.kind == Kind.SLOW_PROGRESS and "0.715" in v.summary and "0.35" in v.summary
