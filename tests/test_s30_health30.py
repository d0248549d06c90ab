"""Session 30, health (issue 31): a working run's short program output read as positive evidence.

Covers:
- parsers/work_done.py: a rank's result named after its subject (``Result on rank 1: ...``, the form of a
  script's ``print(f"Result on rank {rank}: {t}")``), a tensor value under a launcher's rank tag (``[1] after
  allreduce: tensor(...)``), a collective said to have worked (``rank 0: allreduce success``): each rank's
  ``program_end`` of ``where="result"``, HEALTHY when every rank seen printed one; a value printed before the
  collective, a start line, or a failure anywhere is never it;
- parsers/trainer.py: JSON metric lines with quoted keys (``{"step": 10, "loss": 4.21}``) and the loss before
  the step (``{"loss": 3.87, "step": 20}``) are ``step`` events;
- parsers/work_done.py + rules_seen.py: a serving benchmark's ``Output token throughput (tok/s)`` under 10:
  SLOW_PROGRESS;
- rules_measured.py: one unsized measurement printed at bandwidths 2x apart or more is UNDECIDED, not HEALTHY;
- parsers/series.py: ``it`` as a counter word, a bracketed ``[N/M]`` counter on a loss line (never a build's
  ``[3/12] Building CXX object``), ``Images/sec:``, ``img/s`` and ``tokens/sec/gpu`` as rates.
Inputs: the dev excerpts samples/wild/dv33-001 (srun's ``N: broadcast result: tensor(...)``), dv33-011 and
dv26-008 (serving benchmarks), dv40-004 (DeepEP at two scales), a line of dv37-031 (gluoncv's total time), and
small texts in the formats named above, written to tmp files and read as a user would (``ingest`` then
``decide``).
"""

from pathlib import Path

import polars as pl
import pytest

from tests.factory import events_of, text_store
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide


def verdict_of(tmp_path: Path, text: str):
    return decide(text_store(tmp_path, text))


def ends_of(tmp_path: Path, text: str) -> pl.DataFrame:
    ev = events_of(text_store(tmp_path, text), EventKind.PROGRAM_END)
    return ev.sort("line") if ev.height else ev


def steps_of(tmp_path: Path, text: str) -> list[int]:
    ev = events_of(text_store(tmp_path, text), EventKind.STEP)
    return ev.sort("line")["step"].to_list() if ev.height else []


# ---- parsers/work_done.py: a rank's own result -------------------------------------------------------------

RESULT_ON_RANK = ("Result on rank 0: tensor([6.], device='cuda:0')\n"
                  "Result on rank 1: tensor([6.], device='cuda:1')\n"
                  "Result on rank 2: tensor([6.], device='cuda:2')\n")
TAGGED_AFTER = ("[0] before allreduce: tensor([1.], device='cuda:0')\n"
                "[1] before allreduce: tensor([2.], device='cuda:1')\n"
                "[0] after allreduce: tensor([3.], device='cuda:0')\n"
                "[1] after allreduce: tensor([3.], device='cuda:1')\n")


def test_a_result_named_on_its_rank_is_that_ranks_end(tmp_path):
    ends = ends_of(tmp_path, RESULT_ON_RANK)
    assert ends["rank"].to_list() == [0, 1, 2] and set(ends["where"]) == {"result"}
    v = verdict_of(tmp_path, RESULT_ON_RANK)
    assert v.kind == Kind.HEALTHY and "ranks 0-2 each printed its result" in v.summary


def test_a_tensor_after_the_collective_under_a_rank_tag_is_that_ranks_result(tmp_path):
    ends = ends_of(tmp_path, TAGGED_AFTER)
    assert ends["line"].to_list() == [3, 4] and ends["rank"].to_list() == [0, 1]
    assert verdict_of(tmp_path, TAGGED_AFTER).kind == Kind.HEALTHY


def test_a_value_before_the_collective_is_no_result(tmp_path):
    before = "".join(TAGGED_AFTER.splitlines(keepends=True)[:2])
    assert ends_of(tmp_path, before).height == 0
    assert verdict_of(tmp_path, before).kind == Kind.UNDECIDED


def test_a_collective_said_ok_on_every_rank_is_healthy(tmp_path):
    text = "rank 0: allreduce success\nrank 1: allreduce success\n"
    assert ends_of(tmp_path, text)["rank"].to_list() == [0, 1]
    v = verdict_of(tmp_path, text)
    assert v.kind == Kind.HEALTHY and "allreduce success" in v.summary


@pytest.mark.parametrize("text", [
    "rank 0: allreduce not ok\nrank 1: allreduce not ok\n",  # the script's own check failed
    "Running on rank 0\nRunning on rank 1\n",  # a start, not a result
    "rank 0 before barrier\nrank 1 before barrier\n",
])
def test_no_result_where_the_line_says_none(tmp_path, text):
    assert ends_of(tmp_path, text).height == 0
    assert verdict_of(tmp_path, text).kind != Kind.HEALTHY


def test_a_failure_anywhere_wins_over_the_results(tmp_path):
    text = RESULT_ON_RANK + "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error\n"
    assert verdict_of(tmp_path, text).kind != Kind.HEALTHY


def test_srun_tagged_broadcast_results_of_a_failing_job_stay_failing():
    # samples/wild/dv33-001: ranks print `N: broadcast result: tensor(...)`, rank 10 a different value after
    # its IB completion error, then a time limit: the disagreeing results are no data moved past the error
    wild = Path(__file__).resolve().parents[1] / "samples" / "wild"
    from tracekit.ingest import ingest
    v = decide(ingest([wild / "dv33-001-srun-16rank-ib-completion-error-12-timelimit.txt"]))
    assert v.kind == Kind.TRANSPORT_ERROR


# ---- parsers/trainer.py: JSON metric lines -----------------------------------------------------------------

def test_json_lines_with_quoted_keys_are_steps(tmp_path):
    text = ('{"step": 10, "loss": 4.21, "lr": 0.0001, "throughput": 1502.3}\n'
            '{"step": 20, "loss": 3.87, "lr": 0.0001, "throughput": 1510.1}\n')
    assert steps_of(tmp_path, text) == [10, 20]
    assert verdict_of(tmp_path, text).kind == Kind.HEALTHY


def test_the_loss_before_the_step_is_a_step(tmp_path):
    text = ('{"loss": 4.21, "lr": 0.0001, "step": 10}\n{"loss": 3.87, "lr": 0.0001, "step": 20}\n'
            '{"loss": 3.55, "lr": 0.0001, "step": 30}\n')
    assert steps_of(tmp_path, text) == [10, 20, 30]
    assert verdict_of(tmp_path, text).kind == Kind.HEALTHY


# ---- parsers/series.py: counters and rates by shape --------------------------------------------------------

@pytest.mark.parametrize("text", [
    "it: 10, loss: 2.3124, lr: 0.001\nit: 20, loss: 2.1012, lr: 0.001\nit: 30, loss: 2.0012, lr: 0.001\n",
    "[10/100] loss=2.3124 lr=0.001\n[20/100] loss=2.1012 lr=0.001\n[30/100] loss=2.0012 lr=0.001\n",
])
def test_a_short_counter_advances_as_steps(tmp_path, text):
    assert steps_of(tmp_path, text) == [10, 20, 30]
    assert verdict_of(tmp_path, text).kind == Kind.HEALTHY


def test_a_builds_bracketed_count_is_no_step(tmp_path):
    text = ("[1/3] Building CXX object src/CMakeFiles/x.dir/a.cpp.o\n[2/3] Building CXX object "
            "src/CMakeFiles/x.dir/b.cpp.o\n[3/3] Linking CXX shared library libx.so\n")
    assert steps_of(tmp_path, text) == []


@pytest.mark.parametrize("line", ["Images/sec: {}", "speed: {} img/s", "MFU: 45.2%  tokens/sec/gpu: {}"])
def test_rates_in_other_units_are_a_steady_pace(tmp_path, line):
    text = "".join(line.format(v) + "\n" for v in ("1520.4", "1518.9", "1521.3"))
    v = verdict_of(tmp_path, text)
    assert v.kind == Kind.HEALTHY and "1518.9-1521.3" in v.summary


# ---- parsers/work_done.py (continued): results after init, disagreeing values, a total time --------------

INIT = ("node1:1234:1290 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
        "node1:1235:1291 [1] NCCL INFO comm 0x55d1 rank 1 nranks 2 cudaDev 1 busId 2000 - Init COMPLETE\n")


def test_a_collectives_result_after_every_ranks_init_is_healthy(tmp_path):
    v = verdict_of(tmp_path, INIT + "all_reduce result: 2.0\nall_reduce result: 2.0\n")
    assert v.kind == Kind.HEALTHY and "all_reduce result: 2.0" in v.summary


def test_different_values_of_one_allreduce_are_no_result(tmp_path):
    # after an all-reduce every rank holds the same value: rank 1's other value is corrupted data
    text = ("rank 0: allreduce result: tensor([3.], device='cuda:0')\n"
            "rank 1: allreduce result: tensor([-218.0041], device='cuda:1')\n")
    assert ends_of(tmp_path, text).height == 0
    assert verdict_of(tmp_path, text).kind != Kind.HEALTHY


def test_a_total_time_each_rank_prints_at_its_end_is_its_end(tmp_path):
    # gluoncv's Mask R-CNN under mpirun (samples/wild/dv37-031's line, one per rank)
    text = ("[1,0]<stderr>:INFO:root:Total Training with validation: 1543.1355950832367 secs\n"
            "[1,1]<stderr>:INFO:root:Total Training with validation: 1526.1625354290009 secs\n")
    ends = ends_of(tmp_path, text)
    assert ends["rank"].to_list() == [0, 1]
    assert verdict_of(tmp_path, text).kind == Kind.HEALTHY


# ---- rules_seen.serving_crawls: a serving benchmark's result under 10 output tokens/s ----------------------

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


def test_a_serving_benchmark_under_ten_tokens_a_second_is_slow():
    # samples/wild/dv33-011: vLLM's serving benchmark over 10 requests, 9.34 output tok/s, mean TPOT 353 ms
    from tracekit.ingest import ingest
    v = decide(ingest([WILD / "dv33-011-vllm-gfx906-mi50-tp2-serving-bench-tpot-350ms.txt"]))
    assert v.kind == Kind.SLOW_PROGRESS and "9.34" in v.summary and "353.32" in v.summary


def test_a_serving_benchmark_at_speed_stays_healthy():
    # samples/wild/dv26-008: SGLang's benchmark, 1592.01 output tok/s
    from tracekit.ingest import ingest
    v = decide(ingest([WILD / "dv26-008-sglang-bench-serving-10req-result.txt"]))
    assert v.kind == Kind.HEALTHY


# ---- rules_measured: one measurement printed at figures far apart -----------------------------------------

def test_one_measurement_far_apart_at_two_scales_is_no_healthy(tmp_path):
    # samples/wild/dv40-004: DeepEP's tuning results on 2 nodes, then on 4 nodes at a third of the bandwidth
    from tracekit.ingest import ingest
    v = decide(ingest([WILD / "dv40-004-deepep-4node-rdma-bw-drop.txt"]))
    assert v.kind == Kind.UNDECIDED and "12.53 GB/s" in v.summary and "3.5x apart" in v.summary


def test_the_same_measurements_at_one_scale_stay_healthy(tmp_path):
    two_nodes = (WILD / "dv40-004-deepep-4node-rdma-bw-drop.txt").read_text().splitlines()[:4]
    v = verdict_of(tmp_path, "\n".join(two_nodes) + "\n")
    assert v.kind == Kind.HEALTHY and "44.37 GB/s" in v.summary
