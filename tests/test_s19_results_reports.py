"""Session 19 (issue 31): tests and benchmarks that report their own result (``parsers/test_reports.py``),
and epochs reported in forms not read before (``progress_messages``). Each line is built in the exact
format the runtime's code prints (the code's repo path:line by each): a test run whose own results say
every test passed is a clean end, one that says a test failed is never healthy and names it, a result
table's rows are measurements completed, an epoch's own summary line is a step."""

from pathlib import Path

from tracekit.ingest import ingest
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

# golang/go src/testing/testing.go `(*T).report` (`"--- %s: %s (%s)\n"`: PASS/FAIL, name, duration with
# `%.2fs`), `tRunner`'s chatty `=== RUN   %s`, `(*M).Run`'s `fmt.Println("PASS")` / `"FAIL"`;
# src/cmd/go/internal/test/test.go (`ok  \t%s\t%s`, `FAIL\t%s\t%s`)
GO_PASSED = ["=== RUN   TestAllReduceLargeCluster", "    nccl_test.go:88: 64 ranks up",
             "--- PASS: TestAllReduceLargeCluster (675.14s)", "PASS", "ok  \tgithub.com/acme/fabric/e2e\t675.231s"]
GO_FAILED = ["=== RUN   TestAllReduceLargeCluster", "    nccl_test.go:91: busbw 3.1 GB/s, want >= 40",
             "--- FAIL: TestAllReduceLargeCluster (675.14s)", "FAIL", "FAIL\tgithub.com/acme/fabric/e2e\t675.231s"]
# a second test started (`=== RUN`) whose result the output does not hold: the run is not seen to end
GO_UNFINISHED = ["=== RUN   TestInit", "--- PASS: TestInit (2.01s)", "=== RUN   TestAllReduceLargeCluster",
                 "    nccl_test.go:88: 64 ranks up"]
# python/cpython Lib/unittest/runner.py TextTestResult (verbose: description, ` ... `, then `ok` / `FAIL`),
# TextTestRunner.run (`Ran %d test%s in %.3fs`, then `FAILED (failures=1)`)
UNITTEST_FAILED = ["test_allgather (test_dist.TestNCCL.test_allgather) ... ok",
                   "test_allreduce (test_dist.TestNCCL.test_allreduce) ... FAIL", "",
                   "----------------------------------------------------------------------",
                   "Ran 2 tests in 41.896s", "", "FAILED (failures=1)"]
# linux-rdma/perftest src/perftest_parameters.h:191 (RESULT_LINE), :222 (REPORT_FMT ` %-7lu    %-10lu
# %-7.2lf            %-7.2lf\t\t     %-7.6lf`) under RESULT_FMT's header
IB_WRITE_BW = ["---------------------------------------------------------------------------------------",
               " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
               " 65536      5000             11758.02            11757.09\t\t     0.188113",
               " 131072     5000             11761.26            11760.92\t\t     0.094087",
               "---------------------------------------------------------------------------------------"]
# NVIDIA/nvshmem perftest/common/utils.cu:743-751 (`"%-10s  %-8s  %-8s  %-8s  %-8s  %-16s  %-12s  %-12s\n"`
# header, then `%-10lu  %-8lu  %-8s  %-8s  %-8s  %-16.6lf  %-12.3lf  %-12.3lf` a row per size)
NVSHMEM = ["#reduce_on_stream",
           "size(B)     count     type      redop     scope     latency(us)       algbw(GB/s)   busbw(GB/s)",
           "1024        256       int       sum       device    12.345678         0.083         0.145",
           "2048        512       int       sum       device    13.345678         0.153         0.268",
           "4096        1024      int       sum       device    14.101010         0.290         0.508"]
# pytorch/ignite ignite/engine/engine.py:1142-1143 (`Epoch[{epoch}] Complete. Time taken: {h:02d}:{m:02d}:
# {s:06.3f}`), :1169 (`Engine run finished. Time taken: ...`), with ignite's logger format
# (ignite/utils.py setup_logger: `%(asctime)s %(name)s %(levelname)s: %(message)s`)
IGNITE = ["2024-03-01 10:00:00,100 trainer INFO: Engine run resuming from iteration 0, epoch 20 until 23 epochs",
          "2024-03-01 10:01:10,223 trainer INFO: Epoch[21] Complete. Time taken: 00:01:10.123",
          "2024-03-01 10:02:20,446 trainer INFO: Epoch[22] Complete. Time taken: 00:01:10.223",
          "2024-03-01 10:03:30,470 trainer INFO: Epoch[23] Complete. Time taken: 00:01:10.023",
          "2024-03-01 10:03:30,471 trainer INFO: Engine run finished. Time taken: 00:03:30.371"]
# espnet/espnet espnet2/train/reporter.py Reporter.log_message (`f"{epoch}epoch results: "` then
# `f"[{key}] {key2}={v}, ..."`), ESPnet's log format `[host] %(asctime)s (%(module)s:%(lineno)d) %(levelname)s:`
ESPNET = ["[gpu01] 2023-01-01 10:00:00,123 (trainer:352) INFO: 1epoch results: [train] iter_time=0.171, "
          "loss=120.3, time=20 minutes and 3.5 seconds, [valid] loss=98.1",
          "[gpu01] 2023-01-01 10:20:00,123 (trainer:352) INFO: 2epoch results: [train] iter_time=0.170, "
          "loss=90.2, time=20 minutes and 1.1 seconds, [valid] loss=80.4"]


def _decide(tmp_path, name, lines):
    p = tmp_path / f"{name}.log"
    p.write_text("\n".join(lines) + "\n")
    store = ingest([p])
    return store, decide(store)


def test_go_tests_passed_is_a_clean_end_naming_the_test(tmp_path):
    _, v = _decide(tmp_path, "go_pass", GO_PASSED)
    assert v.kind == Kind.HEALTHY
    assert "TestAllReduceLargeCluster" in v.summary and "675.14s" in v.summary


def test_go_test_failed_is_never_healthy_and_names_it(tmp_path):
    _, v = _decide(tmp_path, "go_fail", GO_FAILED)
    assert v.kind == Kind.UNDECIDED
    assert "--- FAIL: TestAllReduceLargeCluster" in v.summary


def test_a_test_started_without_its_result_is_no_end(tmp_path):
    store, v = _decide(tmp_path, "go_cut", GO_UNFINISHED)
    ends = store.events.filter(store.events["kind"] == EventKind.PROGRAM_END)
    assert ends.height == 0
    assert v.kind != Kind.HEALTHY
    # the runner's lines are read (known): only the test's own output line is left unknown
    assert int(store.files["unknown"].sum()) == 1


def test_unittest_failure_is_named_and_not_healthy(tmp_path):
    _, v = _decide(tmp_path, "unittest_fail", UNITTEST_FAILED)
    assert v.kind == Kind.UNDECIDED
    assert "test_allreduce" in v.summary and "FAILED (failures=1)" in v.summary


def test_ib_write_bw_table_complete_is_healthy_with_its_figures(tmp_path):
    _, v = _decide(tmp_path, "ib_write_bw", IB_WRITE_BW)
    assert v.kind == Kind.HEALTHY
    assert "perftest" in v.summary and "11.76" in v.summary


def test_nvshmem_perftest_table_is_healthy_with_its_busbw(tmp_path):
    store, v = _decide(tmp_path, "nvshmem", NVSHMEM)
    rows = store.events.filter((store.events["kind"] == EventKind.BANDWIDTH)
                               & (store.events["where"] == "benchmark"))
    assert sorted(rows["bytes"].to_list()) == [1024, 2048, 4096]
    assert v.kind == Kind.HEALTHY
    assert "NVSHMEM perftest" in v.summary and "peak bandwidth 0.508 GB/s at 4 KB" in v.summary  # (s24: rules_measured)


def test_ignite_epochs_are_steps_and_its_run_end_a_clean_end(tmp_path):
    store, v = _decide(tmp_path, "ignite", IGNITE)
    steps = store.events.filter(store.events["kind"] == EventKind.STEP)
    assert sorted(steps["step"].to_list()) == [21, 22, 23]
    assert v.kind == Kind.HEALTHY and "Engine run finished" in v.summary


def test_espnet_epoch_results_are_steps(tmp_path):
    store, _ = _decide(tmp_path, "espnet", ESPNET)
    steps = store.events.filter(store.events["kind"] == EventKind.STEP)
    assert sorted(steps["step"].to_list()) == [1, 2]


# pytest-dev/pytest src/_pytest/terminal.py (verbose `pytest_runtest_logreport`: node id, outcome, `[ NN%]`;
# `summary_stats`: `N failed, M passed in S s` between `=` rules)
PYTEST_FAILED = ["tests/test_dist.py::test_allreduce PASSED                                  [ 50%]",
                 "tests/test_dist.py::test_allgather FAILED                                  [100%]",
                 "=========================== short test summary info ============================",
                 "FAILED tests/test_dist.py::test_allgather - RuntimeError: NCCL error",
                 "========================= 1 failed, 1 passed in 61.20s ========================="]
# rust-lang/rust library/test/src/formatters/pretty.rs (`test {name} ... ok`, `test result: ok. N passed; 0
# failed; ...`)
RUST_PASSED = ["running 2 tests", "test collectives::allreduce_two_ranks ... ok",
               "test collectives::broadcast_two_ranks ... ok", "",
               "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 5.01s"]
# Kitware/CMake Source/CTest/cmCTestRunTest.cxx (`N/M Test #K: name ....   Passed    S sec`, `***Failed`),
# cmCTestTestHandler.cxx (`NN% tests passed, F tests failed out of N`)
CTEST_FAILED = ["    Start 1: nccl_unit", "1/2 Test #1: nccl_unit ........................   Passed    0.12 sec",
                "    Start 2: nccl_e2e", "2/2 Test #2: nccl_e2e .........................***Failed    3.40 sec", "",
                "50% tests passed, 1 tests failed out of 2"]
# Project-MONAI/MONAI monai/handlers/stats_handler.py:216 (`Epoch[{current_epoch}] Metrics -- ` then
# `{}: {:.4f} ` per metric), with ignite's engine.py:1142-1143 epoch line before it
MONAI = ["2024-03-01 10:01:10,223 - INFO - Epoch[21] Complete. Time taken: 00:01:10.123",
         "2024-03-01 10:01:12,001 - INFO - Epoch[21] Metrics -- val_mean_dice: 0.9012 ",
         "2024-03-01 10:02:22,446 - INFO - Epoch[22] Metrics -- val_mean_dice: 0.9034 "]


def test_pytest_failure_names_the_test_and_is_not_healthy(tmp_path):
    _, v = _decide(tmp_path, "pytest_fail", PYTEST_FAILED)
    assert v.kind == Kind.UNDECIDED
    # the runner's own lines, read as its results: the failed test and the run's count
    assert "test_allgather FAILED" in v.summary and "1 failed, 1 passed" in v.summary


def test_rust_test_result_ok_is_a_clean_end(tmp_path):
    _, v = _decide(tmp_path, "rust_ok", RUST_PASSED)
    assert v.kind == Kind.HEALTHY and "allreduce_two_ranks ... ok" in v.summary


def test_ctest_failure_is_named(tmp_path):
    _, v = _decide(tmp_path, "ctest_fail", CTEST_FAILED)
    assert v.kind == Kind.UNDECIDED and "nccl_e2e" in v.summary
    assert "1 tests failed out of 2" in v.summary


def test_monai_epoch_metrics_are_steps(tmp_path):
    store, _ = _decide(tmp_path, "monai", MONAI)
    steps = store.events.filter(store.events["kind"] == EventKind.STEP)
    assert sorted(set(steps["step"].to_list())) == [21, 22]
    assert steps.filter(steps["message"].str.contains("Metrics")).height == 2


# johnpzh/osu-micro-benchmarks-7.4-ext (OMB 7.4) c/util/osu_util_mpi.c:398-399 (`"%-*s%*s"` of `# Size`, 10 wide,
# and `Bandwidth (MB/s)`, FIELD_WIDTH 20 wide), a row `%-*d%*.*f` per size; the benchmark's HEADER before it
# (c/util/osu_util.h `"# " BENCHMARK " v" PACKAGE_VERSION`)
OSU_BW = ["# OSU MPI Bandwidth Test v7.4", "# Size      Bandwidth (MB/s)",
          "1                       2.93", "2                       5.93", "4                      11.87"]


def test_osu_bandwidth_table_is_healthy_with_its_figures(tmp_path):
    store, v = _decide(tmp_path, "osu_bw", OSU_BW)
    rows = store.events.filter(store.events["kind"] == EventKind.BANDWIDTH)
    assert sorted(rows["bytes"].to_list()) == [1, 2, 4]
    assert v.kind == Kind.HEALTHY and "OSU micro-benchmarks" in v.summary


WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


def test_failures_inside_tests_that_passed_are_no_failure_of_the_run():
    # dev excerpt: ROCm CI of torchelastic's own tests; a child `failed (exitcode: 138)` and forced SIGKILLs
    # inside StartProcessesListTest tests that each report `ok (0.12s)` (xmlrunner/result.py:251-252)
    v = decide(ingest([WILD / "dv16-021-pytorch-rocm-ci-elastic-tests-forced-kill-ok.txt"]))
    assert v.kind == Kind.HEALTHY
    assert "ok (0.125s)" in v.summary and "exitcode: 138" in v.summary
    # dev excerpt: the first test reports `ok (14.044s)`, the next one prints `Caught exception:` and a
    # traceback and no result: its failure is not inside a passed test
    v = decide(ingest([WILD / "dv16-013-pytorch-ci-rank2-found-aborted-comm-from-rank0.txt"]))
    assert v.kind != Kind.HEALTHY
