"""Session 25, progress: a program's own word that its work is done, in general words
(parsers/work_done.py), CLU's metric lines (progress_messages.STEPS), and a serving engine that generates
under 10 tokens/s in all (rules_seen.serving_crawls). Factory tests for the rule, parser and verdict tests
on real lines (tests/data/s25_progress/, each file says where it was posted; samples/wild dev excerpts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factory import events_of, make_store, text_store
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.rules_seen import serving_crawls
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

DATA = Path(__file__).parent / "data" / "s25_progress"
WILD = Path(__file__).parent.parent / "samples" / "wild"


def _wild(prefix: str) -> Path:
    return next(WILD.glob(f"{prefix}-*.txt"))


# --- parsers/work_done.py: the sentence, the summary, the rank's result ---

@pytest.mark.parametrize("line", [
    "2024-01-01 10:00:00,000 - root - INFO - Training finished successfully",
    "[2024-01-01 10:00:00,000] [INFO] [train.py:120:main] Training finished",
    "I0123 10:00:00.000000 140 train.py:120] Finished training after 1000 steps",
    "Benchmark completed",
    "All ranks done",
])
def test_a_finish_sentence_after_any_logger_header_is_the_programs_end(tmp_path, line):
    s = text_store(tmp_path, line + "\n")
    ends = events_of(s, EventKind.PROGRAM_END)
    assert ends.height == 1 and ends["where"][0] == "program"
    v = decide(s)
    assert v.kind == Kind.HEALTHY and line.split("] ")[-1].split(" - ")[-1] in v.summary


@pytest.mark.parametrize("line", [
    "Finished loading weights in 12.3 s",  # a set-up step's end
    "Training finished with errors",
    "Epoch 3 finished",  # a part of the work
    "Download completed",
    "Rank 0: init done",
    # ("Done!" after a download: tests/test_s31_health31.py; after progress lines it is the program's end, s31)
    "Job completed with exit code 1",
])
def test_a_set_up_step_a_part_or_a_failure_is_no_end(tmp_path, line):
    s = text_store(tmp_path, "step 1\n" + line + "\n")
    assert not events_of(s, EventKind.PROGRAM_END).height


def test_each_rank_that_says_it_finished_ended_and_the_verdict_names_them(tmp_path):
    s = text_store(tmp_path, "[rank0]: Rank 0 finished, time taken: 12.3 s\n"
                             "[rank1]: Rank 1 finished, time taken: 12.4 s\n")
    assert sorted(events_of(s, EventKind.PROGRAM_END)["rank"].to_list()) == [0, 1]
    v = decide(s)
    assert v.kind == Kind.HEALTHY and "ranks 0-1 each ended cleanly" in v.summary


def test_a_ranks_measured_result_is_its_result_and_a_rank_not_seen_ending_is_no_end(tmp_path):
    both = ("Rank 0: average time per iteration 12.3 ms, throughput 812.3 samples/s\n"
            "Rank 1: average time per iteration 12.4 ms, throughput 810.3 samples/s\n")
    v = decide(text_store(tmp_path, both))
    assert v.kind == Kind.HEALTHY and "ranks 0-1 each printed its result" in v.summary
    assert "12.3 ms" in v.summary
    # (rank 1 seen in a line of its own that is no result: its end is not known)
    one = decide(text_store(tmp_path, both.splitlines()[0] + "\nRank 1: entering all_reduce\n", "b.log"))
    assert one.kind != Kind.HEALTHY


def test_a_value_printed_before_its_collective_is_no_result(tmp_path):
    s = text_store(tmp_path, "rank 0 before all_reduce: tensor([1.])\n"
                             "rank 1 before all_reduce: tensor([1.])\n")
    assert not events_of(s, EventKind.PROGRAM_END).height
    assert decide(s).kind != Kind.HEALTHY


def test_mpi_hello_world_from_every_rank_of_the_world_is_healthy():
    s = ingest([DATA / "mpi_hello_8ranks.txt"])
    ends = events_of(s, EventKind.PROGRAM_END)
    assert sorted(ends["rank"].to_list()) == list(range(8)) and set(ends["where"]) == {"result"}
    v = decide(s)
    assert v.kind == Kind.HEALTHY and "ranks 0-7 each printed its result" in v.summary


def test_an_evaluations_summary_after_the_last_epoch_is_the_programs_result():
    v = decide(ingest([DATA / "mnist_test_summary.txt"]))
    assert v.kind == Kind.HEALTHY
    assert "printed its results" in v.summary and "Accuracy: 9934/10000" in v.summary


def test_an_average_printed_every_interval_is_no_summary():
    # (vLLM's `Avg prompt throughput: ...` every 10 s: the series' lines, its pace read as such)
    s = ingest([_wild("dv20-018")])
    assert not events_of(s, EventKind.PROGRAM_END).height
    v = decide(s)
    assert v.kind == Kind.HEALTHY and "tokens/s" in v.summary


def test_a_failure_after_a_finish_sentence_is_never_healthy(tmp_path):
    v = decide(text_store(tmp_path, "Rank 0: training finished\n"
                                    "Traceback (most recent call last):\n"
                                    "RuntimeError: NCCL error: unhandled system error\n"))
    assert v.kind != Kind.HEALTHY


# --- CLU's LoggingWriter (t5x and the JAX trainers built on CLU) ---

def test_clu_metric_lines_are_steps_with_their_rate(tmp_path):
    s = text_store(tmp_path, (
        "I0401 12:10:00.000000 140 logging_writer.py:48] [1000] collection=train accuracy=0.512, loss=3.22, "
        "timing/seconds=530.1, timing/steps_per_second=1.886\n"
        "I0401 12:20:00.000000 140 logging_writer.py:48] [2000] collection=train accuracy=0.542, loss=3.02, "
        "timing/seconds=529.1, timing/steps_per_second=1.890\n"))
    assert events_of(s, EventKind.STEP)["step"].to_list() == [1000, 2000]
    v = decide(s)
    assert v.kind == Kind.HEALTHY and "1000 -> 2000" in v.summary and "steps_per_second=1.890" in v.summary


# --- rules_seen.serving_crawls ---

def _stats(gen: list[float], running: int = 4) -> list[dict]:
    return [dict(file="s.log", line=i + 1, kind="progress", where="series",
                 message=f"Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: {g} "
                         f"tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: 82.7%")
            for i, g in enumerate(gen)]


def test_an_engine_under_ten_tokens_a_second_in_all_is_slow_with_its_figures():
    v = serving_crawls(Evidence.gather(make_store(events=_stats([2.4, 5.4, 7.0, 9.6]))))
    assert v.kind == Kind.SLOW_PROGRESS
    assert "2.4-9.6 tokens/s with 4 requests running" in v.summary and "4 stat lines" in v.summary


@pytest.mark.parametrize("gen,running", [([2.4, 5.4, 12.0], 4),  # one interval at a decode stream's pace
                                         ([2.4, 5.4], 4),  # too few lines
                                         ([0.0, 0.0, 0.0], 4),  # nothing generated: a stall, not slow
                                         ([2.4, 5.4, 7.0], 0)])  # nothing running: idle
def test_an_engine_not_slow_on_every_line_is_not_this_rules(gen, running):
    assert serving_crawls(Evidence.gather(make_store(events=_stats(gen, running)))) is None


def test_vllm_ascend_over_ray_pipeline_stages_at_two_to_ten_tokens_a_second_is_slow():
    v = decide(ingest([_wild("dv14-039")]))
    assert v.kind == Kind.SLOW_PROGRESS and v.rule == "serving_crawls"
    assert "2.4-9.6 tokens/s" in v.summary


def test_an_engine_at_hundreds_of_tokens_a_second_stays_healthy():
    assert decide(ingest([_wild("dv14-040")])).kind == Kind.HEALTHY


@pytest.mark.parametrize("last,ends", [("Process finished with exit code 0", True),
                                       ("Process finished with exit code 1", False),
                                       ("Model loading finished successfully", False)])
def test_an_ide_console_or_a_process_that_ended_well_is_an_end(tmp_path, last, ends):
    s = text_store(tmp_path, "epoch 1 loss 0.5\n" + last + "\n")
    assert bool(events_of(s, EventKind.PROGRAM_END).height) is ends


# --- parsers/series.py: Pax's counter, a step printed once by each rank, a decimal is no counter ---

def test_paxs_step_i_lines_are_steps(tmp_path):
    s = text_store(tmp_path, "I0501 10:00:00.123456 140 programs.py:710] step_i: 100, training loss: 2.345\n"
                             "I0501 10:00:52.123456 140 programs.py:710] step_i: 200, training loss: 2.145\n")
    assert events_of(s, EventKind.STEP)["step"].to_list() == [100, 200]
    assert decide(s).kind == Kind.HEALTHY


def test_one_step_printed_once_by_each_rank_is_each_ranks_step(tmp_path):
    s = text_store(tmp_path, "[rank0]: step 10 time 0.512s\n[rank1]: step 10 time 0.514s\n")
    steps = events_of(s, EventKind.STEP)
    assert steps["step"].to_list() == [10, 10] and sorted(steps["rank"].to_list()) == [0, 1]
    v = decide(s)
    assert v.kind == Kind.HEALTHY and "ranks 0,1 reached step 10" in v.summary


def test_a_time_per_iteration_in_ms_is_no_counter_and_no_second(tmp_path):
    s = text_store(tmp_path, "Time per iteration: 45.3 ms\n")
    assert not events_of(s, EventKind.STEP).height
    assert "45.3 s per step" not in decide(s).summary


def test_a_report_of_every_ranks_figure_printed_by_one_process_is_no_result_of_theirs():
    # (FlagScale's straggler report on rank 0, `[default0]:    Rank 1: 10.12ms`: rank 0's table of the others)
    s = ingest([_wild("torch-043")])
    results = events_of(s, EventKind.PROGRAM_END).filter(events_of(s, EventKind.PROGRAM_END)["where"] == "result")
    assert set(results["rank"].to_list()) <= {0}
