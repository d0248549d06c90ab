"""Session 28, progress: a busy CPU's delay is not a straggler (figures.rank_lateness's bursts and late
spells), and a program's output that shows work done (its own per-step lines and results, of any shape)
is read as such."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tests.factory import make_store
from tracekit.outcome import Kind
from tracekit.verdict import decide

DATA = Path(__file__).parent / "data" / "s28_progress"


def _bursts(n_bursts: int, per_burst: int, late_bursts: set[int], late_ms: float, gap_ms: float = 30.0):
    """2 ranks, ``n_bursts`` bursts of ``per_burst`` all_reduces launched 0.1 ms apart (DDP's gradient
    buckets of one step), bursts ``gap_ms`` apart; rank 1 enters every one last, by 0.1 ms, and by
    ``late_ms`` in the bursts ``late_bursts``; both ranks finished training."""
    rows, seq = [], 0
    for b in range(n_bursts):
        for k in range(per_burst):
            seq += 1
            t0 = int(b * gap_ms * 1e6 + k * 1e5)
            lag = late_ms if b in late_bursts else 0.1
            for rank in (0, 1):
                rows.append({"file": f"kineto_rank{rank}.json", "source": "kineto", "host": "a", "rank": rank,
                             "pg": "0", "seq": seq, "op": "all_reduce", "op_raw": "gloo:all_reduce",
                             "state": "completed", "start_ns": t0 + (int(lag * 1e6) if rank == 1 else 0)})
    ends = [{"file": f"rank{r}.log", "line": 9, "rank": r, "kind": "train_end", "message": "{'train_runtime': 1.0}"}
            for r in (0, 1)]
    return make_store(collectives=rows, events=ends,
                      ranks=[{"file": f"rank{r}.log", "rank": r, "world_size": 2} for r in (0, 1)])


def test_one_delay_carried_through_a_burst_of_collectives_is_no_straggler():
    """tests/test_run.py's real 2-rank gloo HF Trainer run on a busy CPU: rank 1 last in most collectives,
    ~13 ms late in 8 of 24, four at a time in two bursts launched back to back: two delays, not a rank the
    others wait for."""
    v = decide(_bursts(6, 4, {2, 5}, 13.0))
    assert v.kind == Kind.HEALTHY, v.summary


def test_a_rank_late_after_each_gap_is_a_straggler_though_its_collectives_come_in_bursts():
    """The same bursts, rank 1 late by 13 ms in every one of them: it is late again after each gap it had
    time to catch up in."""
    v = decide(_bursts(6, 4, set(range(6)), 13.0))
    assert v.kind == Kind.STRAGGLER and v.ranks == [1]
    assert "24 of them more than 5 ms" in v.summary and "6 separate delays of 6 bursts" in v.summary


def _decide_text(tmp_path, text: str, name: str = "run.log"):
    from tracekit.ingest import ingest

    f = tmp_path / name
    f.write_text(text)
    return decide(ingest([f]))


def _decide_file(path: Path):
    from tracekit.ingest import ingest

    return decide(ingest([path]))


def test_a_serving_benchmarks_result_block_is_its_results():
    """vLLM's `vllm bench serve` (vllm benchmarks/serve.py, SGLang's bench_serving.py the same banner) prints
    its figures under `==== Serving Benchmark Result ====` once every request came back: the work done
    (github.com/kyuz0/amd-strix-halo-vllm-toolboxes/issues/53)."""
    v = _decide_file(DATA / "kyuz0-amd-strix-halo-vllm-toolboxes-53-serving-result.txt")
    assert v.kind == Kind.HEALTHY, v.summary
    assert "printed its results" in v.summary and "Serving Benchmark Result" in v.summary


def test_an_evaluations_results_table_is_its_results():
    """lm-evaluation-harness prints its results table (lm_eval/utils.py make_table) once the evaluation ran:
    with its Version column (github.com/facebookresearch/SpinQuant/issues/6) and without it (lmms-eval,
    github.com/EvolvingLMMs-Lab/lmms-eval/pull/1188)."""
    for name in ("facebookresearch-SpinQuant-6-lm-eval-table.txt",
                 "EvolvingLMMs-Lab-lmms-eval-1188-table-no-version.txt"):
        v = _decide_file(DATA / name)
        assert v.kind == Kind.HEALTHY and "Tasks" in v.summary, (name, v.summary)


def test_a_table_header_with_no_row_after_it_is_no_result(tmp_path):
    """A header alone (the output cut before the rows, or the evaluation never finished) says nothing done."""
    v = _decide_text(tmp_path, "|    Tasks    |Version|Filter|n-shot| Metric |Value |   |Stderr|\n")
    assert v.kind != Kind.HEALTHY


def test_the_works_time_once_done_is_positive_evidence(tmp_path):
    """What scripts print once the work is done, in any words: the time it took, or that it was done in
    so long (a generation's `Generated 256 tokens in 3.2s (80.0 tok/s)`)."""
    for line in ("Time taken: 12.3 s", "Elapsed time: 123.45 seconds", "Benchmark duration (s): 19.53",
                 "Generated 256 tokens in 3.2s (80.0 tok/s)", "Training finished in 12 min",
                 "2024-05-01 10:00:00,000 - INFO - Total execution time: 0:12:34"):
        v = _decide_text(tmp_path, line + "\n")
        assert v.kind == Kind.HEALTHY and line.split(" - ")[-1] in v.summary, (line, v.summary)


def test_a_side_tasks_or_a_parts_time_is_not_the_work_done(tmp_path):
    """A profiler's dump, a set-up's load and an epoch's end are timed too: none of them is the work done."""
    for line in ("Finished dumping profiler traces in 0.22 seconds", "Loaded model weights in 9.1 s",
                 "Epoch 1 completed in 123.4s", "Elapsed time for rendezvous: 12 s"):
        v = _decide_text(tmp_path, line + "\n")
        assert v.kind != Kind.HEALTHY, (line, v.summary)


def test_a_time_taken_then_a_traceback_is_not_healthy(tmp_path):
    v = _decide_text(tmp_path, "Time taken: 12.3 s\nTraceback (most recent call last):\n  File \"x.py\", line 3, "
                     "in <module>\n    main()\nRuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled "
                     "system error\n")
    assert v.kind != Kind.HEALTHY, v.summary


def test_a_checkpoint_saved_is_the_work_saved_and_one_announced_is_not(tmp_path):
    """transformers' Trainer (`Model weights saved in {output_dir}`, trainer.py _save) writes it once the
    save is done; mmengine's `Checkpoints will be saved to ...` announces one, before any step."""
    v = _decide_text(tmp_path, "Saving model checkpoint to ./out/checkpoint-500\nConfiguration saved in "
                     "./out/checkpoint-500/config.json\nModel weights saved in ./out/checkpoint-500/model.safetensors\n")
    assert v.kind == Kind.HEALTHY and "saved its work" in v.summary, v.summary
    v = _decide_text(tmp_path, "2024/05/07 11:16:50 - mmengine - INFO - Checkpoints will be saved to /work_dirs/x.\n")
    assert v.kind != Kind.HEALTHY, v.summary


def test_a_save_on_an_epoch_line_leaves_the_epochs_to_say_the_progress():
    """pytorch/examples ddp-tutorial-series multinode.py prints `Epoch {epoch} | Training snapshot saved at
    {path}` between its epoch lines: the verdict says the epochs advanced, on the ranks that logged them
    (samples/wild dv28-011, a dev excerpt)."""
    v = _decide_file(Path(__file__).parents[1] / "samples" / "wild"
                     / "dv28-011-ddp-k8s-etcd-rendezvous-complete-epochs-progress.txt")
    assert v.kind == Kind.HEALTHY and "advanced steps" in v.summary, v.summary


def test_a_rate_in_words_is_a_pace(tmp_path):
    """llama.cpp's `(9.72 ms per token, 102.88 tokens per second)` and a script's `tokens per second: N`:
    steady, healthy; halving line after line, slow."""
    steady = "".join(f"tokens per second: {v}\n" for v in (3456.7, 3460.1, 3458.9))
    v = _decide_text(tmp_path, steady)
    assert v.kind == Kind.HEALTHY and "tokens per second" in v.summary, v.summary
    falling = "".join(f"step {i}: {r} tokens per second\n" for i, r in enumerate((102.5, 51.2, 40.1, 30.1, 20.1,
                                                                                  10.1), 1))
    v = _decide_text(tmp_path, falling)
    assert v.kind == Kind.SLOW_PROGRESS and "fell to" in v.summary, v.summary


def test_a_generation_then_torchs_exit_time_warning_is_that_ranks_exit():
    """An unsloth GRPO run (samples/wild dv2-015): vLLM's `Processed prompts: 100%` twice, then rank 0's
    exit-time warning that its process group was not destroyed: rank 0 reached its exit. The bar alone stays
    undecided (tests/test_s27_progress.py: a bar at its end is where a job may stop)."""
    v = _decide_file(Path(__file__).parents[1] / "samples" / "wild"
                     / "dv2-015-unsloth-grpo-vllm-prompts-done-pg-not-destroyed.txt")
    assert v.kind == Kind.HEALTHY and v.ranks == [] and "exit-time warning" in v.summary, v.summary


WILD = Path(__file__).parents[1] / "samples" / "wild"


def test_a_set_up_steps_bar_is_no_pace_of_the_loop():
    """picotron's example log (samples/wild dv30-020): HF datasets' `Generating train split: 100%|...|
    2119719/2119719 [..., 356503.03 examples/s]` before three training steps at 199 -> 10.61K Tokens/s read as a
    throughput that fell to 0%; the set-up's bars are no steps, and `10.61K` keeps its K."""
    v = _decide_file(WILD / "dv30-020-picotron-1node-dp2tp2pp2-first-3-steps.txt")
    assert v.kind == Kind.HEALTHY and "10,610 Tokens/s" in v.summary and "examples/s" not in v.summary, v.summary


def test_set_up_bars_make_no_progress_events(tmp_path):
    from tracekit.ingest import ingest

    f = tmp_path / "run.log"
    f.write_text("Loading checkpoint shards: 100%|██████████| 4/4 [00:05<00:00,  1.25s/it]\n"
                 "Map: 100%|██████████| 669/669 [00:00<00:00, 3076.21 examples/s]\n"
                 "Downloading data: 100%|██████████| 249M/249M [00:15<00:00, 16.5MB/s]\n"
                 " 12%|█▏        | 120/1000 [02:00<14:40,  1.00s/it]\n")
    ev = ingest([f]).events.filter(pl.col("kind").is_in(["progress", "step"]))
    assert ev["line"].to_list() == [4]  # (the training loop's bar alone)


def test_a_launchers_finished_with_0_is_a_clean_end():
    """ezpz's launcher (samples/wild dv30-014, saforem2/ezpz docs/recipes.md): `Execution finished with 0.`
    after ranks 0-7 each said they were ready."""
    v = _decide_file(WILD / "dv30-014-ezpz-recipe-fsdp-polaris-8gpu-exit0.txt")
    assert v.kind == Kind.HEALTHY and "Execution finished with 0." in v.summary, v.summary


def test_one_async_step_timed_before_it_waits_is_no_alternation():
    """maxtest's log (samples/wild dv31-014): `seconds: 12.444`, `0.002`, `11.715`, `11.645`, then
    `EXIT_CODE=0`: one swing, not every other step waiting."""
    v = _decide_file(WILD / "dv31-014-maxtest-job-steps-exit-code-0.txt")
    assert v.kind == Kind.HEALTHY, v.summary


def test_a_time_per_step_that_swings_at_every_line_still_alternates(tmp_path):
    """nanoGPT's `iter N: loss L, time T ms, mfu M%` (karpathy/nanoGPT train.py) swinging 3:1 at every line
    alternates (``pace.alternates``); the same lines with one swing (a step timed at 2 ms among 3 s ones,
    then steady) do not."""
    from tracekit import pace
    from tracekit.ingest import ingest

    def alternates(times):
        f = tmp_path / "train.log"
        f.write_text("".join(f"iter {i}: loss 4.{i}, time {t:.2f}ms, mfu 30.00%\n" for i, t in enumerate(times, 1)))
        return pace.alternates(pace.ticks(ingest([f]).events))

    got = alternates((3000, 1000, 3100, 1000, 3000, 1100, 3200, 1000))
    assert got is not None and "alternates between" in got["text"], got
    assert alternates((1353, 12444, 2, 11715, 11645, 11700)) is None


def test_torchs_exit_time_warning_is_each_ranks_exit():
    """Megatron-Bridge (samples/wild dv32-001): iteration 10/10, the evaluations, then each of ranks 0-7
    prints `destroy_process_group() was not called before program exit` as it exits."""
    v = _decide_file(WILD / "dv32-001-megatron-bridge-llama1b-clean-end.txt")
    assert v.kind == Kind.HEALTHY and "ranks 0-7" in v.summary and "exit-time warning" in v.summary, v.summary


def test_the_exit_time_warning_after_a_traceback_is_no_clean_end(tmp_path):
    v = _decide_text(tmp_path, "Traceback (most recent call last):\n  File \"t.py\", line 5, in <module>\n    train()\n"
                     "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
                     "[rank0]:[W1006 03:29:26.926188014 ProcessGroupNCCL.cpp:1505] Warning: WARNING: "
                     "destroy_process_group() was not called before program exit, which can leak resources.\n")
    assert v.kind != Kind.HEALTHY, v.summary


def test_nccls_teardown_info_after_the_last_step_is_no_failure():
    """scdino on 4 nodes (samples/wild dv33-004): `Training time 0:06:40`, then every rank's NCCL proxy
    `[Service thread] Connection closed by localRank N` and `Abort COMPLETE`: NCCL's INFO at teardown."""
    v = _decide_file(WILD / "dv33-004-scdino-4node-g5-socket-fallback-3-epochs-clean-end.txt")
    assert v.kind == Kind.HEALTHY, v.summary


def test_an_end_that_names_no_rank_covers_the_ranks_its_file_names(tmp_path):
    """The program's own end (HF Trainer's `train_runtime` dict, printed by the main process with no rank)
    ends the job whose file it is: ranks named only in that file's sentences (the DDP tutorial's
    `Running basic DDP example on rank N.`) ended with it. Before, ranks found in prose turned such a
    clean end into 'only some ranks ended' (three blind verdicts went HEALTHY -> UNDECIDED at the merge)."""
    from tracekit.ingest import ingest

    log = tmp_path / "job.log"
    log.write_text("Running basic DDP example on rank 0.\nRunning basic DDP example on rank 1.\nepoch 0 done\n"
                   "{'train_runtime': 100.5, 'train_samples_per_second': 3.2, 'train_loss': 1.7, 'epoch': 1.0}\n")
    v = decide(ingest([log]))
    assert v.kind == Kind.HEALTHY and "2 rank(s) seen (0-1)" in v.summary, v.summary
    # an end that names its rank covers that rank only: rank 1 seen with no end of its own stays undecided
    log.write_text("[rank0]: step 1 loss 2.0\n[rank1]: step 1 loss 2.0\n"
                   "[rank0]: {'train_runtime': 100.5, 'train_samples_per_second': 3.2, 'train_loss': 1.7, 'epoch': 1.0}\n")
    assert decide(ingest([log])).kind != Kind.HEALTHY
