"""Session 30, health30b: a program's own timing lines printed again and again read as the ticks of its
progress (parsers/timings.py, pace.py, series.py), and the UNDECIDED summary after Init COMPLETE saying how
many lines follow (undecided.py).

Covered: a benchmark's repeated ``inference time:`` lines at a steady figure are HEALTHY with the figure and
the count of lines; the same line printed once is a measurement (no HEALTHY); a per-run time that grows 2x or
more is SLOW_PROGRESS from what to what; a timer that counts up (``taken N seconds``) is no pace; a phase
timed once per process (``Time to load fused_adam op``, pycocotools' ``DONE (t=..s)``) is no series; a
template each rank prints once is each rank's measurement; a step line whose time only timings.py reads
keeps it; a failure after the timing lines wins; after Init COMPLETE the lines that follow are counted.
"""

from __future__ import annotations

import polars as pl

from tests.factory import text_store
from tracekit.outcome import Kind
from tracekit.parsers import series, timings
from tracekit.verdict import decide

#: samples/wild dv37-004 (DeepSpeed-Inference 0.12.6 latency benchmark of Llama-2-7b, three runs), trimmed
RUN = """[2024-01-29 01:42:28,477] [INFO] [real_accelerator.py:161:get_accelerator] Setting ds_accelerator to cuda (auto detect)
Namespace(model='meta-llama/Llama-2-7b-hf', T=100, B=1, P={p})
[2024-01-29 01:43:12,202] [INFO] [logging.py:96:log_dist] [Rank -1] DeepSpeed info: version=0.12.6, git-hash=unknown, git-branch=unknown
Time to load transformer_inference op: 0.23725199699401855 seconds
Length :{p}, inference time:{t}
------------------------------------------------------
Free memory : 30.365051 (GigaBytes)
Setting maximum total tokens (input + output) to 1024
WorkSpace: 0x7f9d40000000
------------------------------------------------------
"""
BENCH = (RUN.format(p=32, t="0.020939748287200927") + RUN.format(p=64, t="0.021544628143310547")
         + RUN.format(p=128, t="0.022522497177124023"))


def _frame(texts: list[str], ranks: list[int | None] | None = None) -> pl.DataFrame:
    n = len(texts)
    return pl.DataFrame({"file": ["job.log"] * n, "line": list(range(1, n + 1)), "text": texts,
                         "ts": [None] * n, "rank": ranks or [None] * n},
                        schema={"file": pl.Utf8, "line": pl.Int64, "text": pl.Utf8, "ts": pl.Utf8, "rank": pl.Int64})


def test_a_benchmarks_repeated_inference_time_is_a_steady_pace(tmp_path):
    v = decide(text_store(tmp_path, BENCH))
    assert v.kind == Kind.HEALTHY, v.summary
    assert "21 ms - 23 ms" in v.summary and "3 of its own timing lines" in v.summary
    assert "`time:0.022522497177124023`" in v.summary  # (the figure in the program's own words)


def test_one_timing_line_is_a_measurement_not_progress(tmp_path):
    v = decide(text_store(tmp_path, RUN.format(p=32, t="0.020939748287200927")))
    assert v.kind != Kind.HEALTHY, v.summary


def test_a_time_per_run_that_grows_is_slow_progress(tmp_path):
    # pipedream's runtime prints `print("Epoch %d: %.3f seconds" % (epoch, time.time() - epoch_start_time))`
    # (samples/wild dv15-035: `Epoch 0: 6843.771 seconds`)
    text = "".join(f"Epoch {e}: {t} seconds\n" for e, t in enumerate([6843.771, 6901.204, 7112.5, 14650.9,
                                                                          15980.33, 16210.7]))
    v = decide(text_store(tmp_path, text))
    assert v.kind == Kind.SLOW_PROGRESS, v.summary
    assert "grew 2.3x, from 6901.2 s per step to 16210.7 s per step" in v.summary  # (the warm-up epoch left out)


def test_a_timer_that_counts_up_is_no_pace():
    # samples/wild dv14-012: a script's seconds since its start at every 1000th step
    texts = ["finish 885000, taken 20619.887254806003 seconds", "finish 886000, taken 20642.44063494797 seconds",
             "finish 887000, taken 20667.420082670986 seconds", "finish 888000, taken 20688.093257904984 seconds"]
    from tracekit.progress_figures import ticks
    from tracekit import pace
    ev = timings.parse(_frame(texts)).rename({"text": "message"})
    assert ev.height == 4 and timings.counting_up(ticks(ev))
    assert pace.trend(ticks(ev)) is None and pace.steady(ticks(ev)) is None
    three = timings.parse(_frame(["time: 100.2 s", "time: 210.7 s", "time: 330.1 s"])).rename({"text": "message"})
    assert three.height == 3 and timings.counting_up(ticks(three)) and pace.trend(ticks(three)) is None


def test_a_phase_timed_once_per_process_is_no_series():
    # samples/wild dev-017 (DeepSpeed, each rank's op load), dv37-031 (pycocotools' COCOeval), dv25-004
    texts = ["Time to load fused_adam op: 0.6900720596313477 seconds",
             "Time to load fused_adam op: 0.7032687664031982 seconds",
             "Time to load fused_adam op: 0.7032113075256348 seconds",
             "[1,0]<stdout>:DONE (t=0.73s)", "[1,0]<stdout>:DONE (t=3.49s).", "[1,0]<stdout>:DONE (t=4.06s)",
             "[2024-04-02 01:59:41][INFO][trainer:769] - Startup time: 18.5185",
             "[2024-04-02 01:59:41][INFO][trainer:769] - Startup time: 18.4102",
             "[2024-04-02 01:59:41][INFO][trainer:769] - Startup time: 18.2374"]
    assert timings.parse(_frame(texts)).height == 0


def test_a_template_each_rank_prints_once_is_each_ranks_measurement():
    # FlagScale's straggler report (samples/wild torch-043): one figure per rank
    texts = ["    Rank 0: 9.98ms", "    Rank 1: 10.12ms", "    Rank 2: 9.46ms"]
    assert timings.parse(_frame(texts, [0, 1, 2])).height == 0
    assert timings.parse(_frame(texts * 1)).height == 3  # (no rank known: one program's lines)


def test_a_step_line_whose_time_only_timings_reads_keeps_it():
    texts = [f"iteration {i} took {t}s" for i, t in enumerate([1.1, 1.2, 1.1, 1.2], start=10)]
    got = series.parse(_frame(texts)).tables["events"]
    assert got["step"].to_list() == [10, 11, 12, 13]
    assert got["duration_ms"].to_list() == [1100.0, 1200.0, 1100.0, 1200.0]


def test_a_failure_after_the_timing_lines_wins(tmp_path):
    text = BENCH + ("Traceback (most recent call last):\n  File \"bench.py\", line 88, in <module>\n"
                    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    v = decide(text_store(tmp_path, text))
    assert v.kind not in (Kind.HEALTHY, Kind.SLOW_PROGRESS), v.summary


def test_after_init_complete_the_lines_that_follow_are_counted(tmp_path):
    # samples/wild dv5-027 (nccl-tests over aws-ofi-nccl, 2 nodes): Init COMPLETE, the results header, then a
    # line that is no collective, step or error
    text = ("ip-172-31-13-103:9738:9797 [0] NCCL INFO comm 0x7faad8000dc0 rank 0 nranks 1 cudaDev 0 busId 101c0"
            " - Init COMPLETE\n"
            "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw\n"
            "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
            "ip-172-31-13-103:9738:9738 [0] NCCL INFO Launch mode Parallel\n")
    v = decide(text_store(tmp_path, text))
    assert v.kind == Kind.UNDECIDED and "2 line(s) follow it" in v.summary, v.summary  # (to the header's last)
    v = decide(text_store(tmp_path, text.splitlines(keepends=True)[0], name="b.log"))
    assert "(Init COMPLETE, 1 of 1) and logged nothing after:" in v.summary, v.summary


def test_a_timing_that_grows_with_no_step_named_says_the_time_it_prints():
    # DeepSpeed-Chat's step-3 line (samples/wild dv33-005: `|E2E latency=3.74s |Gather latency=0.00s (0.00%)
    # |Generate time=2.74s (73.26%) |Training time=0.78s (20.83%) |Others=0.22 (5.91%)|`), the first figure read
    from tracekit import pace
    from tracekit.progress_figures import ticks
    texts = [f"|E2E latency={e}s |Gather latency=0.00s (0.00%) |Generate time={g}s (73.26%) |Training time=0.78s"
             for e, g in [(3.74, 2.74), (3.82, 2.82), (3.87, 2.78), (7.9, 6.9), (8.4, 7.4), (9.1, 8.1)]]
    ev = timings.parse(_frame(texts)).rename({"text": "message"})
    assert ev["duration_ms"].to_list()[:2] == [3740.0, 3820.0]
    tr = pace.trend(ticks(ev))
    assert tr is not None
    assert tr["text"].startswith("the time the program prints grew 2.4x, from 3.8 s to 9.1 s over 5")
