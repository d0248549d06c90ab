"""Session 27 (issue 31): HEALTHY and SLOW from what a run printed as it went; no HEALTHY on a slow run.

Real inputs: samples/wild's dev excerpts dv24-010 (DeepSpeed's comms-logger summary), dv29-005 (llm-jp's
all_reduce_bench), dv26-004 (vLLM offline generation over four pods), dv28-002 (GPEN's tqdm bar with 19-minute
waits between 3 s steps), dv25-006 (MaxText's first step timed before its dispatch waits), dv28-012
(torchrun's agent: worker group succeeded); tests/data/s27_progress (sources in its SOURCES.md): DeepSpeed's
docs' comms-logger summary with ``debug``, the all_reduce_bench README's example output.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.factory import make_store
from tracekit import pace, result_lines
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.schema import EventKind
from tracekit.step_clock import elapsed
from tracekit.verdict import Kind, decide

WILD = Path(__file__).parent.parent / "samples" / "wild"
DATA = Path(__file__).parent / "data" / "s27_progress"


def _wild(prefix: str) -> Path:
    return next(WILD.glob(prefix + "*.txt"))


def _decide(tmp_path: Path, text: str):
    f = tmp_path / "excerpt.txt"
    f.write_text(text)
    store = ingest([f])
    return decide(store), store


# --- a measurement is a result, however short ---

@pytest.mark.parametrize("line, gbs", [
    # llm-jp/scripts all_reduce_bench (DeepSpeed's benchmark's print): the bus bandwidth, not the throughput
    ("tput_avg (Gbps): 1499.183349609375 busbw_avg (Gbps): 1495.6475830078125", 1495.6475830078125 / 8),
    ("busbw_avg (GB/s): 45.1", 45.1),
    ("tput_avg (Gbps): 80.0", 10.0),
])
def test_a_suffixed_labelled_figure_is_a_result(line, gbs):
    ev = result_lines.line_event(line, "a benchmark", False)
    assert ev is not None and ev["kind"] == EventKind.BANDWIDTH.value
    assert ev["busbw_gbs"] == pytest.approx(gbs)


def test_a_training_line_with_a_labelled_figure_is_no_result():
    assert result_lines.line_event("epoch 3 loss 0.2 throughput (samples/s): 81.2", "a benchmark", False) is None


def test_all_reduce_bench_lone_result_is_healthy_with_its_figure():
    v = decide(ingest([DATA / "llmjp_all_reduce_bench.txt"]))
    assert v.kind == Kind.HEALTHY
    assert "187 GB/s" in v.summary and "1 result line" in v.summary
    v = decide(ingest([_wild("dv29-005")]))
    assert v.kind == Kind.HEALTHY and "187 GB/s" in v.summary


def test_ds_comms_logger_summary_rows_are_results(tmp_path):
    store = ingest([DATA / "ds_comms_logger_summary_debug.txt"])
    bw = store.events.filter(pl.col("kind") == EventKind.BANDWIDTH)
    assert bw.height == 3
    assert sorted(bw["op"].to_list()) == ["broadcast", "broadcast", "reduce_scatter_tensor"]
    big = bw.filter(pl.col("op") == "reduce_scatter_tensor").row(0, named=True)
    assert big["busbw_gbs"] == pytest.approx(1136.01 / 8) and big["duration_ms"] == pytest.approx(13.94)
    assert big["bytes"] == int(678.86 * 2**20)
    assert store.files["unknown"].sum() == 0  # (the op titles with their caller are claimed)
    v = decide(store)
    assert v.kind == Kind.HEALTHY and "DeepSpeed's comms logger" in v.summary and "3 size(s)" in v.summary


def test_ds_comms_logger_rows_without_header_dev_excerpt():
    v = decide(ingest([_wild("dv24-010")]))
    assert v.kind == Kind.HEALTHY
    assert "7 size(s)" in v.summary and "(broadcast)" in v.summary


def test_ds_comms_logger_row_then_a_failure_is_not_healthy(tmp_path):
    v, _ = _decide(tmp_path, "all_reduce\n"
                   "                    1.0 GB              10                  2000.00             200.00              40.00               70.00\n"
                   "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1251, unhandled system error\n")
    assert v.kind != Kind.HEALTHY


# --- the work's own result: a generation's output ---

def test_vllm_generated_output_is_the_work_done():
    v = decide(ingest([_wild("dv26-004")]))
    assert v.kind == Kind.HEALTHY
    assert "Generated text" in v.summary and "last step 4" in v.summary


def test_a_bar_at_its_end_with_nothing_after_stays_undecided(tmp_path):
    v, _ = _decide(tmp_path, "Processed prompts: 100%|██████████| 4/4 [00:01<00:00,  3.23it/s, est. speed input:"
                   " 17.79 toks/s, output: 51.75 toks/s]\n")
    assert v.kind != Kind.HEALTHY


# --- no HEALTHY on a slow run: a tqdm bar's own clock ---

def test_tqdm_elapsed_clock():
    df = pl.DataFrame({"t": ["  4/40000 [19:27<12490:57:18, 1124.30s/it]", "10/10 [1:02:03<00:00, 1.2it/s]",
                             "Map: 800 examples [00:00, 2296.35 examples/s]", "no bar"]})
    assert df.select(elapsed(pl.col("t")))[:, 0].to_list() == [19 * 60 + 27, 3600 + 2 * 60 + 3, None, None]


def test_a_step_that_waited_inside_a_bar_is_slow():
    v = decide(ingest([_wild("dv28-002")]))
    assert v.kind == Kind.SLOW_PROGRESS
    assert "steps 8 -> 9 took 18 min 46 s" in v.summary and "375x" in v.summary


def _bar(n: int, secs: int) -> str:
    return f"loss: 0.5 :   0%|          | {n}/40000 [{secs // 60:02d}:{secs % 60:02d}<99:00:00, 3.00s/it]"


def test_a_steady_bar_is_not_slow(tmp_path):
    v, _ = _decide(tmp_path, "\n".join(_bar(n, 3 * n) for n in range(4, 12)) + "\n")
    assert v.kind != Kind.SLOW_PROGRESS


def test_a_waiting_step_in_a_synthetic_bar_is_slow(tmp_path):
    secs = [3 * n for n in range(4, 9)] + [24 + 1200 + 3 * k for k in range(1, 4)]
    v, _ = _decide(tmp_path, "\n".join(_bar(n, s) for n, s in zip(range(4, 12), secs)) + "\n")
    assert v.kind == Kind.SLOW_PROGRESS and "took 20 min" in v.summary


# --- the run's own first step gives no pace to compare with ---

def _ticks(steps, took):
    ev = [dict(file="a.log", line=i + 1, kind=EventKind.STEP.value, step=s, duration_ms=t * 1e3,
               message=f"completed step: {s}, seconds: {t}") for i, (s, t) in enumerate(zip(steps, took))]
    return pace.ticks(make_store(events=ev).events)


def test_first_step_left_out_of_halved_and_trend():
    assert pace.halved(_ticks([1, 2, 3], [0.631, 10.228, 10.344])) is None
    assert pace.trend(_ticks([1, 2, 3], [0.631, 10.228, 10.344])) is None
    # (past the run's first step, the same figures are a pace that fell)
    assert pace.halved(_ticks([11, 12, 13], [0.631, 10.228, 10.344])) is not None


def test_maxtext_first_step_then_steady_is_not_slow():
    v = decide(ingest([_wild("dv25-006")]))
    assert v.kind == Kind.HEALTHY and "steps 1 -> 3" in v.summary


# --- a torchrun agent's own end covers the ranks it ran ---

def test_worker_group_succeeded_ends_the_ranks_of_its_file():
    store = ingest([_wild("dv28-012")])
    assert Evidence(store).agent_finished == {3, 4, 5}
    v = decide(store)
    assert v.kind == Kind.HEALTHY and "worker group successfully finished" in v.summary


def test_a_rank_logging_after_the_agent_end_is_not_covered(tmp_path):
    text = ("[RANK 0] Epoch 1 | Batchsize: 32 | Steps: 8\n"
            "[2024-03-12 08:22:56,574] torch.distributed.elastic.agent.server.api: [INFO] [default] worker group "
            "successfully finished. Waiting 300 seconds for other agents to finish.\n"
            "[RANK 1] Epoch 1 | Batchsize: 32 | Steps: 8\n")
    f = tmp_path / "job.log"
    f.write_text(text)
    assert Evidence(ingest([f])).agent_finished == set()


# --- a figure far below what the path gives: no path when every rank shares one GPU ---

_NT = ("# nThread 1 nGpus 1 minBytes 1048576 maxBytes 134217728 step: 2(factor) warmup iters: 10 iters: 50\n"
       "#  Rank  0 Group  0 Pid 2994447 on        lab device  0 [{a}] NVIDIA GeForce RTX 5090\n"
       "#  Rank  1 Group  0 Pid 2994448 on        lab device  0 [{b}] NVIDIA GeForce RTX 5090\n"
       "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
       "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n"
       "    67108864      16777216     float     sum      -1  29341.4    2.29    2.29       0  29337.0    2.29    2.29       0\n"
       "   134217728      33554432     float     sum      -1  58479.5    2.30    2.30       0  58055.4    2.31    2.31       0\n"
       "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.57614\n")


def test_ranks_on_one_gpu_measure_no_link(tmp_path):
    v, _ = _decide(tmp_path, _NT.format(a="0000:02:00", b="0000:02:00"))
    assert v.kind == Kind.HEALTHY and "every rank runs on one GPU (lab [0000:02:00]" in v.summary
    # (two GPUs, each device 0 in its own container: a path, and 2.3 GB/s far under it)
    v, _ = _decide(tmp_path, _NT.format(a="0000:02:00", b="0000:81:00"))
    assert v.kind == Kind.SLOW_PROGRESS


def test_nccl_tests_two_ranks_one_rtx5090_dev_excerpt():
    v = decide(ingest([_wild("dv25-011")]))
    assert v.kind == Kind.HEALTHY and "1.57614 GB/s" in v.summary and "one GPU" in v.summary


def test_interleaved_bars_keep_their_own_clocks(tmp_path):
    # (two ranks' bars in one file, each at its own pace: no gap is read across them)
    lines = [f"0%| | {n}/6128{k} [00:{5 + n * (1 + 9 * k):02d}<95:22:15, 1.1it/s]" for n in range(1, 5) for k in (0, 1)]
    df = pl.DataFrame({"file": ["a"] * len(lines), "rank": [None] * len(lines), "t": lines})
    from tracekit.step_clock import one_bar
    assert not one_bar(df, pl.col("t"))
    assert one_bar(df.filter(pl.col("t").str.contains("/61280")), pl.col("t"))


def test_ranks_bars_interleaved_dev_excerpt_reads_no_per_step_from_clocks():
    v = decide(ingest([_wild("dv2-050")]))
    assert v.kind == Kind.HEALTHY and "0.5 s per step" not in v.summary
