"""Session 18 (issue 31): the progress family's vocabulary read from the runtimes' printing code
(``tracekit/progress_messages.py``). Each line below is built in the exact format the runtime's code prints
(the code's repo path:line by each); the run it ends is healthy on the runtime's own word, a step time it
prints is read as the pace, and a report of one part of the run in an end's words is no end."""

import pytest

from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

# one progress line of a loop that runs before each end line: the end alone decides it
ENDS = {
    # pytorch/torchtitan torchtitan/trainer.py:1068,1071 (`logger.info("Sleeping 2 seconds for other ranks to
    # complete")`, `logger.info("Training completed")`), its logger's `%(asctime)s - %(name)s - %(levelname)s -`
    "torchtitan": ["2025-01-10 10:00:00,120 - root - INFO - Sleeping 2 seconds for other ranks to complete",
                   "2025-01-10 10:00:02,123 - root - INFO - Training completed"],
    # pytorch/pytorch torch/distributed/elastic/agent/server/api.py `_exit_barrier`: `Local worker group
    # finished (%s). Waiting %s seconds for other agents to finish`, then `Done waiting for other agents.
    # Elapsed: %s seconds`
    "torchelastic_barrier": [
        "INFO:torch.distributed.elastic.agent.server.api:Local worker group finished (WorkerState.SUCCEEDED). "
        "Waiting 300 seconds for other agents to finish",
        "INFO:torch.distributed.elastic.agent.server.api:Done waiting for other agents. Elapsed: 0.0012 seconds"],
    # modelscope/ms-swift swift/pipelines/base.py:53 (`logger.info(f'End time of running main: ...')`)
    "swift_main": ["[INFO:swift] End time of running main: 2024-08-01 10:00:00.123456"],
    # modelscope/ms-swift swift/pipelines/train/sft.py:203 (`logger.info_if(f'last_model_checkpoint: ...')`)
    "swift_checkpoint": ["[INFO:swift] last_model_checkpoint: /output/v0-20240801-100000/checkpoint-100"],
    # facebookresearch/fairseq fairseq_cli/train.py:220 (`logger.info("done training in {:.1f} seconds")`),
    # fairseq's log format `%(asctime)s | %(levelname)s | %(name)s | %(message)s`
    "fairseq": ["2021-03-08 12:43:15 | INFO | fairseq_cli.train | done training in 798.6 seconds"],
    # deepspeedai/DeepSpeed deepspeed/launcher/launch.py:367 (`logger.info(f"Process {process.pid} exits
    # successfully.")`), DeepSpeed's logger `[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s]`
    "deepspeed_launch": ["[2024-01-01 10:00:00,123] [INFO] [launch.py:367:main] Process 12345 exits successfully.",
                         "[2024-01-01 10:00:00,125] [INFO] [launch.py:367:main] Process 12346 exits successfully."],
    # huggingface/transformers src/transformers/trainer_pt_utils.py `log_metrics` (`print(f"***** {split}
    # metrics *****")`, then `  {key: <{k_width}} = {value:>{v_width}}` a line)
    "hf_train_metrics": ["***** train metrics *****", "  epoch                    =        3.0",
                         "  train_loss               =     1.2345", "  train_runtime            = 0:10:00.12",
                         "  train_samples_per_second =     10.123"],
    # horovod/horovod examples/pytorch/pytorch_synthetic_benchmark.py:110,116,117 (`log('Iter #%d: %.1f img/sec
    # per %s')`, `log('Img/sec per %s: %.1f +-%.1f')`, `log('Total img/sec on %d %s(s): %.1f +-%.1f')`)
    "horovod_benchmark": ["Iter #9: 305.4 img/sec per GPU", "Img/sec per GPU: 305.2 +-2.1",
                          "Total img/sec on 8 GPU(s): 2441.6 +-16.8"],
    # espnet/espnet espnet2/train/trainer.py Trainer.run (`logging.info(f"The training was finished at
    # {max_epoch} epochs ")`, the epoch loop's else), ESPnet's log format `[host] %(asctime)s (%(module)s:%(lineno)d)
    # %(levelname)s: %(message)s`
    "espnet": ["[gpu01] 2023-01-01 10:00:00,123 (trainer:338) INFO: The training was finished at 50 epochs "],
    # Lightning-AI/pytorch-lightning src/lightning/pytorch/callbacks/early_stopping.py:283-284, timer.py:205
    "lightning_early_stopping": ["Monitored metric val_loss did not improve in the last 3 records. Best score: 0.412. "
                                 "Signaling Trainer to stop."],
    "lightning_time_limit": ["Time limit reached. Elapsed time is 2:00:00.123456. Signaling Trainer to stop."],
}


def _run(tmp_path, name: str, lines: list[str]):
    p = tmp_path / f"{name}.log"
    p.write_text("\n".join(lines) + "\n")
    store = ingest([p])
    return store, decide(store)


@pytest.mark.parametrize("name", sorted(ENDS))
def test_a_runtimes_own_end_line_says_the_run_finished(tmp_path, name):
    store, v = _run(tmp_path, name, ENDS[name])
    ends = store.events.filter(store.events["kind"] == EventKind.PROGRAM_END)
    assert ends.height >= 1, name
    assert v.kind == Kind.HEALTHY and "ended cleanly" in v.summary, (name, v.summary)


def _maxtext(step: int, seconds: float) -> str:
    # AI-Hypercomputer/maxtext src/maxtext/common/metric_logger.py:181-207 (`completed step: {step}`,
    # `seconds: {step_time:.3f}`, `TFLOP/s/device: {:.3f}`, `Tokens/s/device: {:.3f}`, `total_weights: {}`,
    # `loss: {:.3f}`, ... joined with `, `)
    return (f"completed step: {step}, seconds: {seconds:.3f}, TFLOP/s/device: 257.929, "
            f"Tokens/s/device: 36653.244, total_weights: 196608, loss: {10 - step / 10:.3f}, lm_loss: 0.000, "
            "perplexity: 1.000")


def test_maxtexts_step_time_is_the_pace_and_steps_to_the_last_line_at_it_are_healthy(tmp_path):
    store, v = _run(tmp_path, "maxtext", [_maxtext(s, 1.34 + 0.001 * (s % 2)) for s in range(1, 7)])
    ticks = Evidence.gather(store).ticks
    assert ticks["took"].to_list() == pytest.approx([1.341, 1.34, 1.341, 1.34, 1.341, 1.34])
    assert ticks["rate"].to_list() == pytest.approx([36653.244] * 6)
    assert v.kind == Kind.HEALTHY and "1.3 s per step" in v.summary and "seconds: 1.34" in v.summary


def test_maxtexts_step_time_that_doubles_is_slow_progress(tmp_path):
    times = [1.34, 1.35, 1.34, 1.36, 2.9, 3.1, 3.0, 3.2, 3.1]
    _, v = _run(tmp_path, "maxtext", [_maxtext(s, t) for s, t in enumerate(times, 1)])
    assert v.kind == Kind.SLOW_PROGRESS, v.summary


def test_a_report_of_one_iteration_in_an_ends_words_is_a_step_not_the_end(tmp_path):
    # ray-project/ray python/ray/tune/experimental/output.py AirResultProgressCallback.on_trial_result
    # (`f"{self._addressing_tmpl.format(trial)} finished iteration {N} at {curr_time} (running for {t})."`,
    # `_addressing_tmpl = "Training"` for Ray Train)
    lines = [f"Training finished iteration {i} at 2024-01-01 10:00:0{i} (running for 00:00:0{i}.12)."
             for i in (1, 2, 3)]
    store, v = _run(tmp_path, "ray", lines)
    ev = store.events
    assert ev.filter(ev["kind"] == EventKind.PROGRAM_END).height == 0
    assert ev.filter(ev["kind"] == EventKind.STEP)["step"].to_list() == [1, 2, 3]
    assert "ended cleanly" not in v.summary


def test_torch_xlas_epoch_end_is_no_end_of_the_run(tmp_path):
    # pytorch/xla test/pjrt/test_train_hf_transformer.py:109 (`xm.master_print("Finished training epoch
    # {}".format(epoch))` inside the epoch loop)
    store, v = _run(tmp_path, "xla", ["Finished training epoch 1", "Finished training epoch 2"])
    ev = store.events
    assert ev.filter(ev["kind"] == EventKind.PROGRAM_END).height == 0
    assert v.kind != Kind.HEALTHY


def test_horovods_img_per_sec_is_the_pace(tmp_path):
    # horovod/horovod examples/pytorch/pytorch_synthetic_benchmark.py:110 (`log('Iter #%d: %.1f img/sec per %s'
    # % (x, img_sec, device))`)
    store, v = _run(tmp_path, "horovod", [f"Iter #{i}: {305 + i % 2:.1f} img/sec per GPU" for i in range(6)])
    ticks = Evidence.gather(store).ticks
    assert ticks["rate"].to_list() == pytest.approx([305.0, 306.0] * 3)
    assert ticks["unit"][0] == "img/sec per GPU"
    assert v.kind == Kind.HEALTHY and "img/sec per GPU" in v.summary


def test_espnets_batch_reports_are_steps_with_their_train_time(tmp_path):
    # espnet/espnet espnet2/train/reporter.py SubReporter.log_message (`f"{epoch}epoch:{key}:{prev_count + 1}-
    # {count}batch: "`, then `{key2}={v:.3f}` joined with `, `; `train_time` registered per iteration by
    # espnet2/train/trainer.py train_one_epoch)
    lines = [f"[gpu01] 2023-01-01 10:0{i}:00,123 (trainer:732) INFO: 3epoch:train:{100 * i + 1}-{100 * (i + 1)}batch: "
             f"iter_time=1.234e-04, forward_time=0.123, loss_ctc=50.{i}, loss=45.{i}, backward_time=0.200, "
             f"optim_step_time=0.030, optim0_lr0=1.000e-04, train_time=0.5{i % 2}0" for i in range(5)]
    store, v = _run(tmp_path, "espnet", lines)
    ev = Evidence.gather(store)
    assert ev.steps["step"].to_list() == [100, 200, 300, 400, 500]
    assert ev.ticks["took"].to_list() == pytest.approx([0.5, 0.51, 0.5, 0.51, 0.5])
    assert v.kind == Kind.HEALTHY and "train_time=0.5" in v.summary


@pytest.mark.parametrize("said", [
    # pytorch/pytorch torch/distributed/elastic/agent/server/api.py `_exit_barrier`, entered only from the
    # SUCCEEDED branch of `_invoke_run`
    "Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish",
    "Done waiting for other agents. Elapsed: 0.0012 seconds"])
def test_torchelastics_exit_barrier_speaks_for_the_ranks_of_its_group(said):
    from tests.factory import make_store
    from tracekit import rules_bench
    store = make_store(
        ranks=[dict(file="r0.log", rank=0, world_size=4)],
        events=[dict(kind="step", file="r0.log", line=1, rank=0, step=100, message="step 100 loss 2.0"),
                dict(kind="program_end", file="r0.log", line=7, rank=0, message=said)])
    v = rules_bench.every_rank_ended(Evidence.gather(store))
    assert v is not None and v.kind == Kind.HEALTHY and said in v.summary
    assert "1 of 4 ranks seen" in v.summary


def test_nemos_step_timing_in_its_bar_is_the_pace_and_a_doubling_is_slow(tmp_path):
    # NVIDIA/NeMo nemo/utils/exp_manager.py TimingCallback._on_batch_end (`pl_module.log(name + ' in s', ...,
    # prog_bar=(name == "train_step_timing"))`): Lightning's bar carries `train_step_timing in s=<seconds>`
    times = [1.21, 1.22, 1.2, 1.23, 2.6, 2.7, 2.65, 2.8, 2.75]
    lines = [f"Epoch 0: :   {i}%|▏ | {i}/1000 [00:{10 + i}<10:00, reduced_train_loss=7.1{i}, global_step={i - 1}.000, "
             f"consumed_samples={1024 * i}.0, train_step_timing in s={t}]" for i, t in enumerate(times, 1)]
    store, v = _run(tmp_path, "nemo", lines)
    assert Evidence.gather(store).ticks["took"].to_list() == pytest.approx(times)
    assert v.kind == Kind.SLOW_PROGRESS, v.summary


CORPUS = __import__("pathlib").Path("/work/shared/corpus/nccltests_a3mega_16ranks_2nodes_allreduce.txt")


@pytest.mark.skipif(not CORPUS.exists(), reason="the shared corpus is not on this machine")
def test_nccl_tests_own_min_bandwidth_check_that_failed_is_slow_progress(tmp_path):
    # NVIDIA/nccl-tests src/util.cu:778 (`PRINT("# %-20s : %g %s\n", "Avg bus bandwidth", bw[0], check_avg_bw ==
    # -1 ? "" : (bw[0] < check_avg_bw*(0.9) ? "FAILED" : "OK"))`, check_avg_bw from NCCL_TESTS_MIN_BW,
    # src/common.cu:1830): the corpus run's own footer as the code prints it with NCCL_TESTS_MIN_BW=100 set
    text = CORPUS.read_text().replace("# Avg bus bandwidth    : 70.742 ", "# Avg bus bandwidth    : 70.742 FAILED")
    assert "70.742 FAILED" in text
    p = tmp_path / "all_reduce_perf.txt"
    p.write_text(text)
    v = decide(ingest([p]))
    assert v.kind == Kind.SLOW_PROGRESS and "70.742 GB/s" in v.summary and "NCCL_TESTS_MIN_BW" in v.summary
    # (the same footer unchecked, as the corpus holds it, stays what it was: healthy)
    assert decide(ingest([CORPUS])).kind == Kind.HEALTHY
