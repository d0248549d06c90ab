"""What runtimes print when a run finished and how fast each step went, as data, read from their source
(issue 31, session 18: the vocabulary of the progress family taken from the printing code, not from
excerpts).

Each entry: a name, a pattern on the line's text (after ``parsers/text.py`` took the launcher prefix off;
the runtimes' own logger headers, ``[INFO:swift]``, ``... - root - INFO -``, stay on the line, so a pattern
is anchored on the message's own words, never on a header), what it means, and where the runtime prints it
(``owner/repo path:line`` of the snapshot read). Patterns are for polars (Rust regex): case is written out,
never an inline global flag, so ``parsers.any_of`` can join them.

``ENDS`` are a program's or a launcher's own word that the run finished cleanly: each is printed only on
the path where the work returned without an exception (the source line says why), so ``parsers/trainer.py``
reads them as ``program_end`` events. ``TIMES`` and ``RATES`` are the time per step and the throughput a
runtime's step line prints, which ``parsers/series.py`` adds to its own (``pace.py`` reads them).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Message:
    name: str
    pattern: str
    meaning: str
    source: str  # where the runtime prints it: owner/repo path:line


ENDS: tuple[Message, ...] = (
    Message("torchtitan_training_completed", r"(?:^|\W\s)Training completed\s*$",
            "torchtitan's trainer left its step loop (every step done, the last checkpoint saved) and slept "
            "2 s for the other ranks to finish: it is logged after the loop, not in an except",
            "pytorch/torchtitan torchtitan/trainer.py:1071 (`logger.info(\"Training completed\")`, after "
            "`Sleeping 2 seconds for other ranks to complete`, :1068); torchtitan/experiments/torchft/"
            "trainer.py:574 the same"),
    Message("elastic_local_group_succeeded",
            r"\bLocal worker group finished \((?:WorkerState\.)?SUCCEEDED\)",
            "torchelastic's agent: every worker of this node's group exited with 0, it now waits at the exit "
            "barrier for the other agents (`_exit_barrier`, called only from the SUCCEEDED branch)",
            "pytorch/pytorch torch/distributed/elastic/agent/server/api.py `_exit_barrier` (`Local worker group "
            "finished (%s). Waiting %s seconds for other agents to finish`; the newer `[%s] worker group "
            "successfully finished.` of `_invoke_run` is read by parsers/trainer.py already)"),
    Message("elastic_exit_barrier_done", r"\bDone waiting for other agents\. Elapsed: [\d.]+ seconds",
            "torchelastic's exit barrier passed: every node's agent reached it after its own workers "
            "succeeded; the whole job ended cleanly",
            "pytorch/pytorch torch/distributed/elastic/agent/server/api.py `_exit_barrier` (after "
            "`store_util.barrier` returns; a failed barrier logs `Error waiting on exit barrier` instead)"),
    Message("swift_main_ended", r"\[INFO:swift\] End time of running main: \d{4}-\d\d-\d\d",
            "ms-swift's pipeline `main` returned: `run()` (training, export, inference) ended without an "
            "exception",
            "modelscope/ms-swift swift/pipelines/base.py:53 (`logger.info(f'End time of running main: "
            "...')` after `result = self.run()`; swift/llm/base.py in 2.x-3.x the same)"),
    Message("swift_last_checkpoint", r"\[INFO:swift\] last_model_checkpoint: \S",
            "ms-swift's sft pipeline after `trainer.train()` returned: it names the checkpoint the run ended on",
            "modelscope/ms-swift swift/pipelines/train/sft.py:203 (`logger.info_if(f'last_model_checkpoint: "
            "{state.last_model_checkpoint}', ...)` in `_save_trainer_state`, after training)"),
    Message("fairseq_done_training", r"\bdone training in [\d.]+ seconds\b",
            "fairseq's train loop ran to its max epoch / max update (or its stop criterion) and returned",
            "facebookresearch/fairseq fairseq_cli/train.py:220 (`logger.info(\"done training in {:.1f} "
            "seconds\".format(train_meter.sum))`, after the epoch loop)"),
    Message("deepspeed_process_succeeded", r"\[launch\.py:\d+:main\] Process \d+ exits successfully\.",
            "DeepSpeed's per-node launcher: that worker process returned 0",
            "deepspeedai/DeepSpeed deepspeed/launcher/launch.py:367 (`logger.info(f\"Process {process.pid} "
            "exits successfully.\")`, where `process.poll() == 0`; a non-zero return logs `exits with return "
            "code = N`, :341)"),
    Message("hf_train_metrics", r"^\*{5} train metrics \*{5}\s*$",
            "HF Trainer's metrics block of a finished `trainer.train()` (the examples, LLaMA-Factory and "
            "ms-swift call `trainer.log_metrics(\"train\", train_result.metrics)` after it returns)",
            "huggingface/transformers src/transformers/trainer_pt_utils.py `log_metrics` (`print(f\"***** "
            "{split} metrics *****\")`, world process zero only); hiyouga/LLaMA-Factory src/llamafactory/train/sft/workflow.py "
            "(`trainer.log_metrics(\"train\", train_result.metrics)` after `trainer.train`)"),
    Message("espnet_finished", r"\bThe training was finished at \d+ epochs\b",
            "ESPnet's trainer ran every epoch to `max_epoch` (the `else` of its epoch loop: no early stop, no "
            "break on invalid gradients)",
            "espnet/espnet espnet2/train/trainer.py `Trainer.run` (`logging.info(f\"The training was finished at "
            "{trainer_options.max_epoch} epochs \")` in the epoch loop's `else`)"),
    Message("espnet_early_stopping", r"^\[Early stopping\] \S+ has not been improved \d+ epochs continuously\. "
            r"The training was stopped at \d+epoch",
            "ESPnet's reporter stopped the training on its early-stopping criterion: a normal end, chosen by the "
            "run's own options (`--patience`)",
            "espnet/espnet espnet2/train/reporter.py `Reporter.check_early_stopping` (`logger.info(f\"[Early "
            "stopping] {key1}.{key2} has not been improved {n} epochs continuously. The training was stopped at "
            "{epoch}epoch\")`); `This training was stopped at Nepoch` after invalid gradients is a warning, no end"),
    Message("lightning_early_stopping",
            r"\bMonitored metric \S+ did not improve in the last \d+ records\. Best score: \S+\. "
            r"Signaling Trainer to stop\.",
            "Lightning's EarlyStopping ran out of patience: the fit loop stops at the end of this epoch, by the "
            "run's own criterion (a NaN metric says `is not finite` instead, and is no clean end)",
            "Lightning-AI/pytorch-lightning src/lightning/pytorch/callbacks/early_stopping.py:283-284 "
            "(`Monitored metric {monitor} did not improve in the last {wait_count} records. Best score: "
            "{best_score:.3f}. Signaling Trainer to stop.`; `[rank: N] ` in front where every rank logs it)"),
    Message("lightning_time_limit", r"\bTime limit reached\. Elapsed time is .+\. Signaling Trainer to stop\.",
            "Lightning's Timer callback reached the run's `max_time`: the fit loop stops, as configured",
            "Lightning-AI/pytorch-lightning src/lightning/pytorch/callbacks/timer.py:205 (`rank_zero_info(f\"Time "
            "limit reached. Elapsed time is {elapsed}. Signaling Trainer to stop.\")`)"),
    Message("horovod_benchmark_total", r"^Total img/sec on \d+ \w+\(s\): [\d.]+ \+-[\d.]+",
            "Horovod's synthetic benchmark after its last timed iteration: the throughput of all workers "
            "together (rank 0 prints it; `Img/sec per GPU: mean +-conf` the line before)",
            "horovod/horovod examples/pytorch/pytorch_synthetic_benchmark.py:117 (`log('Total img/sec on %d "
            "%s(s): %.1f +-%.1f' % (hvd.size(), device, hvd.size() * img_sec_mean, hvd.size() * "
            "img_sec_conf))`, after the timed loop; tensorflow_synthetic_benchmark.py the same)"),
    # (results, s19)
    Message("ignite_run_finished", r"\bEngine run finished\. Time taken: \d+:\d+:[\d.]+",
            "pytorch-ignite's Engine ran every epoch asked (or was terminated by a handler, the run's own "
            "choice) and fired COMPLETED: its `run()` returns; an exception logs `Engine run is terminating due "
            "to exception` instead",
            "pytorch/ignite ignite/engine/engine.py:1169 (`self.logger.info(f\"Engine run finished. Time taken: "
            "...\")` after the epoch loop, inside the try whose except logs the exception, :1173; :1368 the same)"),
)

#: a runtime's own line for each step or iteration it completed, the count in group ``step``: read as ``step``
#: events (and never as an end, though their words are an end's: `Training finished iteration 3`)
STEPS: tuple[Message, ...] = (
    Message("ray_train_iteration",
            r"^Training finished iteration (?P<step>\d+) at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d "
            r"\(running for [\d:.]+\)",
            "Ray Train's result callback: the training function reported its result of iteration N "
            "(`train.report`); the run goes on (its end is `Training completed training after N iterations`, "
            "an end parsers/trainer.py reads)",
            "ray-project/ray python/ray/tune/experimental/output.py `AirResultProgressCallback.on_trial_result` "
            "(`f\"{self._addressing_tmpl.format(trial)} finished iteration {result[TRAINING_ITERATION]} at "
            "{curr_time} (running for {running_time}).\"`, `_addressing_tmpl = \"Training\"` for Ray Train; "
            "`on_trial_complete` prints `completed training after {finished_iter} iterations`)"),
    Message("espnet_batches", r"\b\d+epoch:train:\d+-(?P<step>\d+)batch: ",
            "ESPnet's sub-reporter every `log_interval` batches: the epoch, the batches it covers (counted from 1 "
            "in each epoch), then its `key=value` figures (`train_time=` the mean seconds of one iteration)",
            "espnet/espnet espnet2/train/reporter.py `SubReporter.log_message` (`f\"{self.epoch}epoch:{self.key}:"
            "{self.prev_count + 1}-{self.count}batch: \"`, then `{key2}={v:.3f}` joined with `, `)"),
    # (s23) timm's train loop every `log_interval` updates (the count starts again each epoch)
    Message("timm_train_update",
            r"(?:^|\s)Train: \d+ \[\s*(?P<step>\d+)/\d+ \(\s*\d+%\)\]\s+Loss: ",
            "timm's train.py `train_one_epoch` on rank 0 every `log_interval` updates and at the epoch's last: "
            "the epoch, the update of the epoch's updates, the loss, the time per update and the samples/s, "
            "the learning rate; the loop goes on",
            "huggingface/pytorch-image-models train.py:1417-1423 (`f'Train: {epoch} [{update_idx:>4d}/"
            "{updates_per_epoch} '`, `f'({100. * (update_idx + 1) / updates_per_epoch:>3.0f}%)]  '`, `f'Loss: "
            "{loss_now:#.3g} ({loss_avg:#.3g})  '`, `f'Time: {update_time_m.val:.3f}s, {... / "
            "update_time_m.val:>7.2f}/s  '`)"),
    # (s23) a trainer's terminal line every `print_freq` batches: the global step is the third counter
    Message("weathergen_train_batch",
            r"\b\d{3,} : \d{5,}/\d{5,} : (?P<step>\d{6,}) : loss = [-+\d.]+[eE][-+]\d+ \(lr=",
            "WeatherGenerator's trainer every `train_log_freq.terminal` batches on the root rank: the "
            "mini-epoch, the batch of the epoch's batches, the global step, the mean loss, the learning rate and the "
            "samples per second since its last line (`s/sec=`); the run goes on",
            "ecmwf/WeatherGenerator src/weathergen/train/trainer.py:907-915 (`_log_terminal`: "
            "`f\"{mini_epoch:03d} : {bidx:05d}/{len_dataset:05d} : \" + f\"{self.cf.istep:06d} : loss = "
            "{avg_loss.nanmean().item():.4E} \" + f\"(lr={...:.2E}, \"`, then `s/sec={(print_freq * "
            "batch_size_per_gpu) / dt:.3f})`)"),
    # (results, s19) an epoch's own summary, printed once the epoch is done: the epoch is the step
    Message("espnet_epoch_results", r"^(?:.*?\s)?(?P<step>\d+)epoch results: \[\w+\] \w+=",
            "ESPnet's reporter at the end of an epoch: that epoch's figures, `[train] ...` then `[valid] ...` "
            "(`iter_time=`, `loss=`); the next epoch follows unless the run ends",
            "espnet/espnet espnet2/train/reporter.py `Reporter.log_message` (`message += f\"{epoch}epoch results: "
            "\"` then `f\"[{key}] {_message}\"`, `key2=value` joined with `, `); espnet2/train/trainer.py logs it "
            "after each epoch's train and validate"),
    Message("ignite_epoch_complete", r"\bEpoch\[(?P<step>\d+)\] Complete\. Time taken: \d+:\d+:[\d.]+",
            "pytorch-ignite's Engine after an epoch's handlers ran (EPOCH_COMPLETED fired): that epoch is done, "
            "in the time it names (MONAI's SupervisedTrainer is an ignite Engine: the same line)",
            "pytorch/ignite ignite/engine/engine.py:1142-1143 (`self.logger.info(f\"Epoch[{self.state.epoch}] "
            "Complete. Time taken: {hours:02d}:{mins:02d}:{secs:06.3f}\")`, in the epoch loop; :1341 the same)"),
    # (s25) CLU's LoggingWriter (t5x, big_vision, scenic, Flax's examples: the metrics of a step as absl INFO)
    Message("clu_logging_writer", r"(?:^|\] )\[(?P<step>\d+)\](?: collection=\w+)? [\w/.\-]+=[-+\d.]",
            "CLU's LoggingWriter.write_scalars: the step, the writer's collection, then the step's scalars "
            "`key=value` sorted by key (t5x's `timing/seconds`, `timing/steps_per_second`: "
            "t5x/trainer.py); the run goes on",
            "google/CommonLoopUtils clu/metric_writers/logging_writer.py `write_scalars` (`logging.info("
            "\"[%d]%s %s\", step, self._collection_str, \", \".join(values))`, `_collection_str = "
            "f\" collection={collection}\"`)"),
    Message("monai_epoch_metrics", r"\bEpoch\[(?P<step>\d+)\] Metrics -- \w",
            "MONAI's StatsHandler at an epoch's end (EPOCH_COMPLETED): that epoch's metrics; an evaluator's "
            "handler prints the trainer's epoch it validated (`global_epoch_transform`), the same number",
            "Project-MONAI/MONAI monai/handlers/stats_handler.py:216 (`out_str = f\"Epoch[{current_epoch}] "
            "Metrics -- \"`, then `key_var_format` `{}: {:.4f} ` per metric) in `_default_epoch_print`"),
)

#: lines in an end's words that report one part of the run done, never its end (the end patterns of
#: parsers/trainer.py, `^Finished training\b`, would take them): read as no end
PARTS: tuple[Message, ...] = (
    Message("xla_epoch_finished", r"^Finished training epoch \d+\s*$",
            "torch_xla's training scripts at the end of each epoch; the next epoch follows",
            "pytorch/xla test/pjrt/test_train_hf_transformer.py:109 (`xm.master_print(\"Finished training "
            "epoch {}\".format(epoch))` inside the epoch loop)"),
)

#: a job's own check of every rank (or node) it measured, said by one process for all of them: none faulty,
#: none slower than the check's threshold. Read as ``program_end`` events (parsers/trainer.py) and, by
#: ``rules_bench.every_rank_ended``, as said for every rank seen; the meaning is what the summary says.
CHECKS: tuple[Message, ...] = (
    Message("dlrover_network_check", r"Fault nodes are: \[\]\s+and stragglers are: \[\]",
            "DLRover's master names no fault node and no straggler once its check ran on every node",
            "intelligent-machine-learning/dlrover dlrover/python/elastic_agent/torch/training.py:771 (the "
            "agent's `run` logs `Fault nodes are: {fault_nodes}  and stragglers are: {stragglers}` after the "
            "network-check round, as its own logger header names it)"),
    Message("flagscale_no_stragglers", r"(?:^|[^\w ] ?)No stragglers detected\.\s*$",
            "FlagScale's straggler detector compared every rank's section times at that step and found none "
            "1.5x slower than the fastest: every rank it measured reached that step at one pace",
            "flagos-ai/FlagScale flagscale/runner/straggler/report.py:61-70 (`StragglerReport.to_text`: `=== "
            "Straggler Report at Step {step} ===`, then `\\n✓ No stragglers detected.` where `straggler_ranks` "
            "is empty, `⚠️  Detected Stragglers: [...]` otherwise; `identify_stragglers(threshold=1.5)`, "
            ":110-118, fills it from the per-rank section times)"),
)

#: seconds per step a runtime's step line prints: (pattern, its factor to seconds, source)
TIMES: tuple[tuple[str, float, str], ...] = (
    (r"\bcompleted step: \d+, seconds: ([\d.]+)", 1.0,
     "AI-Hypercomputer/maxtext src/maxtext/common/metric_logger.py:181-182 (`completed step: {step}`, "
     "`seconds: {perf/step_time_seconds:.3f}`, joined with `, `)"),
    (r"\btrain_step_timing in s=([\d.]+)", 1.0,
     "NVIDIA/NeMo nemo/utils/exp_manager.py `TimingCallback._on_batch_end` (`pl_module.log(name + ' in s', "
     "self.timer[name], ..., prog_bar=(name == \"train_step_timing\"))`: Lightning's bar shows it as "
     "`train_step_timing in s=1.23`, the seconds of the last training step)"),
)
#: throughputs a runtime's step line prints: (pattern, source); group 1 the figure
RATES: tuple[tuple[str, str], ...] = (
    (r"\bTokens/s/device: (\d[\d,]*(?:\.\d+)?)",
     "AI-Hypercomputer/maxtext src/maxtext/common/metric_logger.py:197 (`Tokens/s/device: "
     "{perf/per_device_tokens_per_sec:.3f}`; `TFLOP/s/device:` before it, :196, is the model FLOPs)"),
    (r"\bIter #\d+: (\d[\d,]*(?:\.\d+)?) img/sec per \w+",
     "horovod/horovod examples/pytorch/pytorch_synthetic_benchmark.py:110 (`log('Iter #%d: %.1f img/sec per %s' "
     "% (x, img_sec, device))`; the TensorFlow and elastic variants the same, examples/tensorflow/"
     "tensorflow_synthetic_benchmark.py:105)"),
    (r"\(lr=[-+\d.]+[eE][-+]\d+, (?:gradient norm=[\d.]+, )?s/sec=(\d+(?:\.\d+)?)\)",
     "ecmwf/WeatherGenerator src/weathergen/train/trainer.py:915 (`s/sec={(print_freq * "
     "self.cf.batch_size_per_gpu) / dt:.3f})`: the samples per second of one GPU since the last line)"),
)
#: the units those rates name (parsers/series.py's ``RATE_UNIT`` takes them in, before its own)
RATE_UNITS = (r"Tokens/s/device", r"img/sec per \w+", r"\bs/sec\b")

#: (s26, issue 31) the stages of a JAX program's compile, each timed as it finishes: ``dispatch.log_elapsed_time``
#: logs them (at WARNING under ``JAX_LOG_COMPILES=1``, else DEBUG) with the function's name and its seconds;
#: group ``stage``, ``fun``, ``s``. parsers/trainer.py reads them as ``phase_times`` events ``where="compile"``
COMPILE_STAGES: tuple[Message, ...] = (
    Message("jax_trace", r"\bFinished (?P<stage>tracing \+ transforming) (?P<fun>\S+) for p?jit in (?P<s>[\d.]+) sec\b",
            "JAX traced a function to its jaxpr", "jax-ml/jax jax/_src/pjit.py (`log_elapsed_time(\"Finished "
            "tracing + transforming {fun_name} for pjit in {elapsed_time:.9f} sec\", ...)`)"),
    Message("jax_lower", r"\bFinished (?P<stage>jaxpr to MLIR module conversion) (?P<fun>\S+) in (?P<s>[\d.]+) sec\b",
            "JAX lowered a function to its MLIR module", "jax-ml/jax jax/_src/interpreters/pxla.py "
            "(`\"Finished jaxpr to MLIR module conversion {fun_name} in {elapsed_time:.9f} sec\"`)"),
    Message("xla_compile", r"\bFinished (?P<stage>XLA compilation) of (?P<fun>\S+) in (?P<s>[\d.]+) sec\b",
            "XLA compiled a function for the devices", "jax-ml/jax jax/_src/interpreters/pxla.py "
            "(`dispatch.log_elapsed_time(\"Finished XLA compilation of {fun_name} in {elapsed_time:.9f} "
            "sec\", ...)`)"),
)
