"""Session 24 (issue 31, the first call): one or two progress lines of a program tracekit has no parser for,
and nothing failing, are what a reader calls healthy.

``parsers/series.py`` reads a loop's line printed once (``LONE_COUNTER``: a counter word and its number, with
the loss, a pace or the loop's total beside it) as one ``step`` event; ``rules_seen.one_step_seen`` calls one
or two such lines HEALTHY where each file ends on one of them mid-loop, every rank seen printed one and
nothing else is logged but calm lines, and says the step, the pace and the ranks. A bar alone, a file that
ends on something else, FLOPS alone or an MFU the program prints under 20% stay UNDECIDED. The lines are
built in the exact format the programs print (each cited where it is defined)."""

from pathlib import Path

from tests.factory import make_store, text_store
from tracekit import rules_seen
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"

# icefall: k2-fsa/icefall egs/librispeech/ASR/*/train.py (`logging.info(f"Epoch {params.cur_epoch}, " f"batch
# {batch_idx}, loss[{loss_info}], " f"tot_loss[{tot_loss}], batch size: {batch_size}, " f"lr: {cur_lr:.2e}, ")`)
ICEFALL = ("2024-05-17 01:48:24,230 INFO [train.py:1034] (0/8) Epoch 1, batch {n}, loss[loss=1.621, "
           "simple_loss=1.207, over 49372.00 frames. ], tot_loss[loss=3.721, over 2196903.96 frames. ], "
           "batch size: 138, lr: 2.48e-02, ")
# torchtitan: pytorch/torchtitan train.py (`f"{color.cyan}step: {train_state.step:2}  " f"{color.green}loss:
# {global_avg_loss:7.4f}  " ... f"{color.blue}wps: {round(wps):,}  " f"{color.magenta}mfu: {mfu:.2f}%"`)
TITAN = ("[rank0]:2024-11-27 14:29:40,378 - root - INFO - step: {n}  loss:  1.5568  memory: 26.47GiB(33.47%)  "
         "wps: 1,786  mfu: {mfu}%")


def _one(tmp_path, text: str, name: str = "job.log"):
    store = text_store(tmp_path, text, name=name)
    return store, decide(store)


def test_a_loop_line_printed_once_is_one_step_and_healthy_with_its_step_and_rank(tmp_path):
    store, v = _one(tmp_path, ICEFALL.format(n=50) + "\n")
    steps = store.events.filter(store.events["kind"] == "step")
    assert steps["step"].to_list() == [50] and steps["rank"].to_list() == [0]
    assert v.kind == Kind.HEALTHY and v.rule == "one_step_seen"
    assert "rank 0 reached step 50" in v.summary and "the excerpt ends there" in v.summary


def test_a_line_with_no_loss_pace_or_total_is_no_step(tmp_path):
    # a one-off duration (vLLM's `Loading weights took 26.91 seconds`), a start-up line that names a step,
    # and an epoch with no total are no step seen done
    for line in ("Loading weights took 26.91 seconds", "Training starts at step 1",
                 "Epoch 1, validation: done"):
        store, v = _one(tmp_path, line + "\n")
        assert store.events.filter(store.events["kind"] == "step").height == 0, line
        assert v.kind != Kind.HEALTHY, line


def test_a_counter_with_its_total_is_a_step_and_its_end_is_a_loop_at_its_total(tmp_path):
    store, v = _one(tmp_path, "[epoch 3/10] step 120/1000 lr=0.0001\n")
    st = store.events.filter(store.events["kind"] == "step")
    assert st["step"].to_list() == [120] and st["max_steps"].to_list() == [1000]
    assert v.kind == Kind.HEALTHY and "step 120" in v.summary
    # the loop at its total is the run's last step, a clean end: the end rules say it, not this one
    _, v = _one(tmp_path, "[epoch 10/10] step 1000/1000 lr=0.0001\n", name="end.log")
    assert v.rule == "every_rank_ended"


def test_a_step_line_then_an_error_or_a_start_up_stays_undecided(tmp_path):
    after_error = ICEFALL.format(n=50) + "\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert _one(tmp_path, after_error)[1].kind != Kind.HEALTHY
    # the file's last line is no progress line: where it stopped is that line
    after_save = ICEFALL.format(n=50) + "\nSaving checkpoint to exp/epoch-1.pt\n"
    assert _one(tmp_path, after_save, name="save.log")[1].kind != Kind.HEALTHY


def test_a_low_mfu_is_the_programs_own_word_and_keeps_one_line_undecided(tmp_path):
    _, low = _one(tmp_path, TITAN.format(n=10, mfu="10.46") + "\n")
    assert low.kind == Kind.UNDECIDED and "MFU is 10.46%, under 20%" in low.summary
    _, fine = _one(tmp_path, TITAN.format(n=10, mfu="41.20") + "\n", name="fine.log")
    assert fine.kind == Kind.HEALTHY and "step 10" in fine.summary and "1,786 wps" in fine.summary


def test_one_step_seen_needs_every_rank_seen_among_the_progress_lines():
    line = "(0/2) Epoch 1, batch 50, loss[loss=0.62, over 4937.00 frames. ]"
    ev = [dict(kind="step", file="r0.log", line=1, step=50, rank=0, message=line)]
    files = [dict(file="r0.log", last_line=1)]
    v = rules_seen.one_step_seen(Evidence.gather(make_store(events=ev, files=files)))
    assert v is not None and v.kind == Kind.HEALTHY and "rank 0 reached step 50" in v.summary
    # rank 1's log holds only its start-up: its own state is not known
    other = [dict(kind="train_start", file="r1.log", line=1, rank=1, message="training starts")]
    files2 = files + [dict(file="r1.log", last_line=1)]
    assert rules_seen.one_step_seen(Evidence.gather(make_store(events=ev + other, files=files2))) is None
    # three progress lines with a pace are enough for a trend: the pace rules' call, not this one's
    paced = [dict(kind="step", file="r0.log", line=i + 1, step=10 * (i + 1), rank=0,
                  message=f"step {10 * (i + 1)} loss 0.5 time 0.{i + 3}s") for i in range(3)]
    one = [dict(file="r0.log", last_line=3)]
    assert rules_seen.one_step_seen(Evidence.gather(make_store(events=paced, files=one))) is None


def test_real_excerpts_one_progress_line_decides_where_an_expert_decides():
    # icefall's rank 0 of 8, one training line after its validation (label healthy)
    v = decide(ingest([WILD / "dv20-031-icefall-rank0-of-8-epoch1-progress.txt"]))
    assert v.kind == Kind.HEALTHY and "rank 0 reached step 50" in v.summary and "1 of 8 ranks seen" in v.summary
    # MaxText's step line alone (label healthy): the step and its time per step said
    v = decide(ingest([WILD / "dv17-016-maxtext-moe-step9-tokens-per-device.txt"]))
    assert v.kind == Kind.HEALTHY and "step 9" in v.summary and "1.34 s per step" in v.summary
    # torchtitan at 10% MFU on 32 H100s (label slow-progress): undecided, the MFU said
    v = decide(ingest([WILD / "dv4-015-torchtitan-srun-32xh100-mfu-10pct.txt"]))
    assert v.kind == Kind.UNDECIDED and "MFU is 10.46%" in v.summary
    # InternLM's TFLOPS alone (label slow-progress): the hardware's peak decides it
    v = decide(ingest([WILD / "dv10-050-internlm-93-tflops-pcie.txt"]))
    assert v.kind == Kind.UNDECIDED and "93.481 tflops" in v.summary
    # DeepSpeed's checkpoint saved then nothing (label undecided): no step seen
    v = decide(ingest([WILD / "dv22-007-onebit-ds-rank0-ckpt5000-saved-then-silent.txt"]))
    assert v.kind == Kind.UNDECIDED


# vLLM's stat line: vllm/engine/metrics.py LoggingStatLogger.log (`"Avg prompt throughput: %.1f tokens/s, "
# "Avg generation throughput: %.1f tokens/s, " "Running: %d reqs, Swapped: %d reqs, " "Pending: %d reqs, ..."`)
VLLM = ("INFO 05-12 10:01:02 metrics.py:351] Avg prompt throughput: 120.3 tokens/s, Avg generation throughput: "
        "{gen} tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 1.2%, "
        "CPU KV cache usage: 0.0%.")


def test_a_servers_stat_line_with_tokens_generated_is_progress_and_one_with_none_is_not(tmp_path):
    store, v = _one(tmp_path, VLLM.format(gen="38.5", running=4) + "\n")
    assert store.events.filter(store.events["kind"] == "progress").height == 1
    assert v.kind == Kind.HEALTHY and "38.5 tokens/s" in v.summary and "printed its progress" in v.summary
    # requests running and nothing generated: a stall, never progress
    store, v = _one(tmp_path, VLLM.format(gen="0.0", running=4) + "\n", name="stall.log")
    assert store.events.filter(store.events["kind"] == "progress").height == 0 and v.kind != Kind.HEALTHY
