"""Tests and benchmarks that report their own result (issue 31, session 19): a test runner's verdict on
each test and on the run, and the rows of a benchmark's result table, read from the code that prints them.

A test runner prints a test's result only once that test returned, and its summary only once every test
did: a pass is a clean end of that test (a ``program_end`` event, ``where="tests_passed"``), a failure is
the run's own word that it did not work (a ``test_wrong`` event, ``where="tests_failed"``: a failure sign,
never a clean end). A test started whose result the excerpt does not hold (Go's ``=== RUN   TestB`` with
no ``--- PASS: TestB``, unittest's ``test_b (m.C) ...`` with no ``ok``) leaves the run unfinished: its
passes are then no end. A benchmark's table prints a row once that size was measured: each row is a
``bandwidth`` event (``where="benchmark"``, ``bytes`` the size, ``busbw_gbs`` its bandwidth in GB/s where
the table has one), read by ``rules_results.benchmark_result``.

``parsers/bench_results.py`` calls ``events`` (its format, ``benchmark``, is the one registered).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.parsers import any_of
from tracekit.schema import EventKind


@dataclass(frozen=True)
class Said:
    """One line a test runner prints: its pattern (group ``name`` the test or package), whether it says
    the test passed (True), failed (False) or started (None), and the code that prints it."""

    pattern: str
    passed: bool | None
    source: str


#: a test runner's own lines, from its printing code
RESULTS: tuple[Said, ...] = (
    Said(r"^\s*--- PASS: (?P<name>\S+) \([\d.]+s\)", True,
         "golang/go src/testing/testing.go `(*T).report` (`format := \"--- %s: %s (%s)\\n\"` with \"PASS\", "
         "\"FAIL\" or \"SKIP\", the test's name and its duration, printed once the test and its subtests "
         "returned)"),
    Said(r"^\s*--- FAIL: (?P<name>\S+) \([\d.]+s\)", False, "golang/go src/testing/testing.go `(*T).report`"),
    Said(r"^=== RUN\s+(?P<name>\S+)\s*$", None,
         "golang/go src/testing/testing.go `tRunner`'s chatty `=== RUN   %s` as a test starts (-v)"),
    Said(r"^ok\s+(?P<name>\S+)\s+(?:[\d.]+s|\(cached\))", True,
         "golang/go src/cmd/go/internal/test/test.go `runTestActor.Act` (`ok  \\t%s\\t%s` for a package "
         "whose "
         "test binary exited 0 with PASS)"),
    Said(r"^FAIL\s+(?P<name>\S+)\s+[\d.]+s\s*$|^FAIL\s*$", False,
         "golang/go src/cmd/go/internal/test/test.go (`FAIL\\t%s\\t%s` for a package whose tests failed); "
         "src/testing/testing.go `(*M).Run` (`fmt.Println(\"FAIL\")`)"),
    Said(r"^(?P<name>PASS)\s*$", True,
         "golang/go src/testing/testing.go `(*M).Run` (`fmt.Println(\"PASS\")` once "
         "every test of the binary passed)"),
    Said(r"^\s*(?P<name>test\w*) \([\w.]+\)(?: .*)? \.\.\. ok(?: \([\d.]+s\))?\s*$", True,
         "python/cpython Lib/unittest/runner.py `TextTestResult` (verbose: `getDescription(test)`, ` ... `, "
         "then "
         "`ok` from addSuccess, `FAIL` from addFailure, `ERROR` from addError)"),
    Said(r"^\s*(?P<name>test\w*) \([\w.]+\)(?: .*)? \.\.\. (?:FAIL|ERROR)(?: \([\d.]+s\))?\s*$", False,
         "python/cpython Lib/unittest/runner.py `TextTestResult.addFailure` / `addError`"),
    Said(r"^\s*(?P<name>test\w*) \([\w.]+\) \.\.\.(?: .*)?$", None,
         "python/cpython Lib/unittest/runner.py `TextTestResult.startTest` (the description and ` ... `, the "
         "result written on the same line when the test returns, after the test's own output where it printed "
         "some)"),
    # (a result on a line of its own, after the test's output: unittest-xml-reporting's `ok (0.125s)`)
    Said(r"^(?P<name>ok) \([\d.]+s\)\s*$", True,
         "xmlrunner/unittest-xml-reporting xmlrunner/result.py:251-252 (`'%s (%.3fs)' % (verbose_str, "
         "elapsed_time)` after the description, verbose_str `ok` :345, `FAIL` :360, `ERROR` :374; PyTorch's "
         "test suites run under it in CI)"),
    Said(r"^(?P<name>FAIL|ERROR) \([\d.]+s\)\s*$", False, "xmlrunner/unittest-xml-reporting "
         "xmlrunner/result.py:251-252, :360, :374"),
    Said(r"^(?P<name>FAILED) \((?:failures|errors|unexpected successes)=\d+", False,
         "python/cpython Lib/unittest/runner.py `TextTestRunner.run` (`self.stream.write(\"FAILED\")` then "
         "` (failures=N, errors=M)`)"),
    Said(r"^=+ (?P<name>(?:\d+ \w+, )*\d+ (?:failed|errors?)\b.*?) in [\d.]+s", False,
         "pytest-dev/pytest src/_pytest/terminal.py `summary_stats` (`N failed, M passed in 3.21s` between "
         "rules)"),
    Said(r"^FAILED (?P<name>\S+\.py::\S+)", False,
         "pytest-dev/pytest src/_pytest/terminal.py `short_test_summary` (`FAILED path::test - message`)"),
    Said(r"^(?P<name>\S+\.py::\S+) PASSED\b", True,
         "pytest-dev/pytest src/_pytest/terminal.py `pytest_runtest_logreport` (verbose: the node id, then "
         "the "
         "outcome word `PASSED` / `FAILED` / `ERROR`, then `[ NN%]`)"),
    Said(r"^(?P<name>\S+\.py::\S+) (?:FAILED|ERROR)\b", False,
         "pytest-dev/pytest src/_pytest/terminal.py `pytest_runtest_logreport`"),
    Said(r"^(?P<name>\S+\.py::\S+)\s*$", None,
         "pytest-dev/pytest src/_pytest/terminal.py `pytest_runtest_logstart` (verbose: the node id as the "
         "test "
         "starts, its outcome written after it when it returns)"),
    Said(r"^test (?P<name>\S+)(?: - \w+)?\s+\.\.\. ok(?: <[\d.]+s>)?\s*$|^test result: (?P<name2>ok)\. \d+ passed; 0 failed\b", True,
         "rust-lang/rust library/test/src/formatters/pretty.rs `write_test_name` (`test {name} ... `, `test "
         "{name} - {test_mode} ... `), `write_result` (`ok` / `FAILED` / `ignored`, ` <time>` with "
         "--report-time), `write_run_finish` (`test result: ok` or `FAILED`, then `. N passed; M failed; ...`)"),
    Said(r"^test (?P<name>\S+)(?: - \w+)?\s+\.\.\. FAILED\b|^test result: (?P<name2>FAILED)\. ", False,
         "rust-lang/rust library/test/src/formatters/pretty.rs"),
    Said(r"^\s*\d+/\d+ Test\s+#\d+: (?P<name>\S+) \.+\s+Passed\s+[\d.]+ sec"
         r"|^(?P<name2>100% tests passed), 0 tests failed out of \d+", True,
         "Kitware/CMake Source/CTest/cmCTestRunTest.cxx (`N/M Test #K: name ....   Passed    0.12 sec`; "
         "`***Failed`, `***Timeout`, `***Exception` otherwise) and cmCTestTestHandler.cxx (`100% tests passed, "
         "0 "
         "tests failed out of N`)"),
    Said(r"^\s*\d+/\d+ Test\s+#\d+: (?P<name>\S+) \.+\*{3}(?:Failed|Timeout|Exception)"
         r"|^(?P<name2>\d+% tests passed, [1-9]\d* tests? failed) out of \d+", False,
         "Kitware/CMake Source/CTest/cmCTestRunTest.cxx, cmCTestTestHandler.cxx"),
    Said(r"^\[\s+OK \] (?P<name>\S+) \(\d+ ms\)", True,
         "google/googletest googletest/src/gtest.cc `PrettyUnitTestResultPrinter::OnTestEnd` (`[       OK ] "
         "Suite.Test (N ms)`, `[  FAILED  ] ...` for a failed one)"),
    Said(r"^\[\s+FAILED\s+\] (?P<name>\S+)", False, "google/googletest googletest/src/gtest.cc "
         "`PrettyUnitTestResultPrinter::OnTestEnd`, `PrintFailedTests`"),
    Said(r"^\[\s+PASSED\s+\] (?P<name>\d+ tests?)\.", True,
         "google/googletest googletest/src/gtest.cc `PrettyUnitTestResultPrinter::OnTestIterationEnd` "
         "(`[  PASSED  ] N tests.`)"),
)


@dataclass(frozen=True)
class Table:
    """A benchmark's result table: its header's pattern, the pattern of one row (``size``, ``bw`` its
    bandwidth where it has one), the unit of ``bw`` in GB/s, and the code that prints it."""

    name: str
    header: str
    row: str
    to_gbs: float
    source: str


NUM = r"[\d.]+"
#: the tables, from their printing code
TABLES: tuple[Table, ...] = (
    Table("NVSHMEM perftest",
          r"^\s*size\(B\)\s+count\s+type\s+.*\blatency\(us\)\s+(?:\w+\(us\)\s+|repetitions\s+)*"
          r"algbw\(GB/s\)\s+busbw\(GB/s\)",
          rf"^\s*(?P<size>\d+)\s+\d+\s+[a-z]\w*\s+(?:[a-z]\w*\s+){{0,2}}{NUM}\s+"
          rf"(?:(?:{NUM}|NA)\s+){{0,4}}{NUM}\s+(?P<bw>{NUM})\s*$", 1.0,
          "NVIDIA/nvshmem perftest/common/utils.cu:743-751, :763-770, :822-829 (`size(B)  count  type  "
          "redop  "
          "[scope]  latency(us)  [min_lat(us)  max_lat(us)]  algbw(GB/s)  busbw(GB/s)`, then a row per size "
          "measured: `%-10lu  %-8lu  %-8s ... %-12.3lf`); later versions (print_host_collective_table_impl, "
          "print_device_collective_table_impl) add `stddev(us)` and `repetitions` columns with stats, and "
          "the host collectives (`reduction_on_stream`) always print `min_lat(us)  max_lat(us)`"),
    Table("perftest (ib_*_bw)", r"^\s*#bytes\s+#iterations\s+BW peak\[(?:MB|Gb)/sec\]\s+BW average",
          rf"^\s*(?P<size>\d+)\s+\d+\s+{NUM}\s+(?P<bw>{NUM})\s+{NUM}\s*$", 1e-3,
          "linux-rdma/perftest src/perftest_parameters.h:222 (REPORT_FMT ` %-7lu    %-10lu       %-7.2lf   "
          "         %-7.2lf\\t\\t     %-7.6lf`: bytes, iterations, BW peak, BW average, MsgRate, under "
          "RESULT_FMT "
          "` #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]`; Gb/sec with "
          "--report_gbits; RESULT_LINE `-----` closes the table, :191)"),
    Table("perftest (ib_*_lat)", r"^\s*#bytes\s+#iterations\s+t_min\[usec\]",
          rf"^\s*(?P<size>\d+)\s+\d+\s+(?:{NUM}\s+){{4,}}{NUM}\s*$", 0.0,
          "linux-rdma/perftest src/perftest_parameters.h:209, :243 (RESULT_FMT_LAT ` #bytes #iterations    "
          "t_min[usec] ...`, REPORT_FMT_LAT a row per size)"),
    Table("OSU micro-benchmarks (latency)", r"^#\s*Size\s+(?:Avg Latency\(us\)|Latency \(us\))",
          rf"^\s*(?P<size>\d+)\s+{NUM}(?:\s+{NUM})*(?:\s+Pass)?\s*$", 0.0,
          "johnpzh/osu-micro-benchmarks-7.4-ext (OMB 7.4) c/util/osu_util_mpi.c:398-402 (`%-*s%*s` of "
          "`# Size` "
          "and `Latency (us)`), :613 (`Avg Latency(us)` of the collectives); a row per size measured, `Pass` "
          "after it where validation is on"),
    Table("OSU micro-benchmarks", r"^#\s*Size\s+(?:Bandwidth \(MB/s\)|MB/s\b)",
          rf"^\s*(?P<size>\d+)\s+(?P<bw>{NUM})(?:\s+{NUM})*(?:\s+Pass)?\s*$", 1e-3,
          "johnpzh/osu-micro-benchmarks-7.4-ext (OMB 7.4) c/util/osu_util_mpi.c:398-399 (`# Size` and "
          "`Bandwidth (MB/s)`), :604, :607 (`MB/s` of osu_mbw_mr); a row per size measured"),
)


#: every table's header
HEADERS = any_of(*(tb.header for tb in TABLES))
#: what a line of a test runner or a table's header holds, cheaply
MARKS = (r"--- (?:PASS|FAIL)|^=== RUN|^ok\s|^FAIL|^PASS\s*$|\.\.\.|^FAILED|^=+ .*\d+ (?:failed|errors?)\b|"
         r"^\[\s+(?:OK|FAILED|PASSED)\s+\]|::|^test result: | Test\s+#\d+: |% tests passed|" + HEADERS)


def events(df: pl.DataFrame) -> tuple[pl.DataFrame | None, pl.DataFrame]:
    """The test results and table rows of ``df`` (``file``, ``line``, ``text``, a rank column where the
    lines frame has one) as events, and the lines they claim."""
    rank = pl.coalesce(*(pl.col(c) for c in ("rank_tag", "mpi_rank", "launch_rank") if c in df.columns),
                       pl.lit(None, pl.Int64)).alias("rank")
    t = pl.col("text")
    said = df.filter(t.str.contains(MARKS))  # (most logs hold none: the patterns run on these lines only)
    if not said.height:
        return None, pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64})
    tabled = df.join(said.filter(t.str.contains(HEADERS)).select("file").unique(), on="file", how="semi")
    out = [f for f in (_tests(said, rank), _tables(tabled, rank)) if f is not None]
    # (every runner's line is known, an end or not: a pass before a test left unfinished too)
    runner = said.filter(t.str.contains(any_of(*(s.pattern for s in RESULTS)))).select("file", "line")
    claimed = pl.concat([*(f.select("file", "line") for f in out), _headers(said), runner]).unique()
    return (pl.concat(out, how="diagonal_relaxed") if out else None), claimed


def _tests(df: pl.DataFrame, rank: pl.Expr) -> pl.DataFrame | None:
    t = pl.col("text")
    said = pl.coalesce(*(pl.when(t.str.contains(s.pattern)).then(pl.lit(i)) for i, s in enumerate(RESULTS)))
    got = df.with_columns(said.alias("_said")).filter(pl.col("_said").is_not_null())
    if not got.height:
        return None
    status = {i: s.passed for i, s in enumerate(RESULTS)}
    name = pl.coalesce(*(pl.when(pl.col("_said") == i).then(pl.coalesce(
        t.str.extract(s.pattern, 1), *([t.str.extract(s.pattern, 2)] if "(?P<name2>" in s.pattern else [])))
        for i, s in enumerate(RESULTS)))
    got = got.with_columns(name.alias("_name"), pl.col("_said").replace_strict(
        {i: (None if p is None else int(p)) for i, p in status.items()}, return_dtype=pl.Int64).alias("_ok"),
        pl.col("_said").replace_strict({i: p is None for i, p in status.items()},
                                       return_dtype=pl.Boolean).alias("_start")).sort("file", "line")
    # a test started whose result is not in the file after it: the run is unfinished there, its passes
    # no end
    # (finished: its own name's result after it, or a result line before the next test starts: a result
    # on a line of its own names no test, it closes the one in flight)
    done = got.filter(~pl.col("_start")).select("file", "_name", pl.col("line").alias("_done"))
    started = got.filter(pl.col("_start")).select("file", "line", "_name").join(
        done, on=["file", "_name"], how="left")
    named = started.group_by("file", "line").agg((pl.col("_done") > pl.col("line")).any().alias("_r"))
    nxt = pl.col("_start").cum_sum().over("file")
    closed = (got.with_columns(nxt.alias("_k")).group_by("file", "_k")
              .agg(pl.col("line").filter(pl.col("_start")).first().alias("line"),
                   (~pl.col("_start")).any().alias("_c")).filter(pl.col("line").is_not_null()))
    unfinished = (named.join(closed.select("file", "line", "_c"), on=["file", "line"], how="left")
                  .filter(~(pl.col("_r").fill_null(False) | pl.col("_c").fill_null(False)))
                  .select("file").unique())
    passed = got.filter(pl.col("_ok") == 1).join(unfinished, on="file", how="anti")
    failed = got.filter(pl.col("_ok") == 0)
    frames = []
    if passed.height:
        frames.append(passed.select("file", "line", rank, pl.lit(EventKind.PROGRAM_END).alias("kind"),
                                    t.str.strip_chars().alias("message"),
                                    pl.lit("tests_passed").alias("where")))
    if failed.height:
        frames.append(failed.select("file", "line", rank, pl.lit(EventKind.TEST_WRONG).alias("kind"),
                                    t.str.strip_chars().alias("message"),
                                    pl.lit("tests_failed").alias("where")))
    return pl.concat(frames, how="diagonal_relaxed") if frames else None


def _table_of(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with ``_table``: the index in ``TABLES`` of the header a line is under (the header's line
    and the table's rows, up to a line that is neither), else null."""
    t = pl.col("text")
    head = pl.coalesce(*(pl.when(t.str.contains(tb.header)).then(pl.lit(i)) for i, tb in enumerate(TABLES)))
    row = t.str.contains(any_of(*(tb.row for tb in TABLES)))
    d = df.sort("file", "line").with_columns(head.alias("_head"), row.alias("_row"))
    # a table runs from its header down its rows; a line that is neither a row nor blank ends it
    breaks = pl.col("_head").is_not_null() | (~pl.col("_row") & (t.str.strip_chars() != ""))
    d = d.with_columns(breaks.cum_sum().over("file").alias("_block"))
    return d.with_columns(pl.col("_head").first().over("file", "_block").alias("_table"))


def _tables(df: pl.DataFrame, rank: pl.Expr) -> pl.DataFrame | None:
    t = pl.col("text")
    if not _headers(df).height:
        return None
    d = _table_of(df)
    mine = pl.coalesce(*(pl.when(pl.col("_table") == i).then(t.str.contains(tb.row))
                         for i, tb in enumerate(TABLES)))
    rows = d.filter(pl.col("_table").is_not_null() & mine.fill_null(False))
    if not rows.height:
        return None
    size = pl.coalesce(*(t.str.extract(tb.row, 1) for tb in TABLES)).cast(pl.Int64, strict=False)
    bw = pl.coalesce(*(pl.when(pl.col("_table") == i).then(
        t.str.extract(tb.row, 2).cast(pl.Float64, strict=False) * tb.to_gbs)
        for i, tb in enumerate(TABLES) if "(?P<bw>" in tb.row), pl.lit(None, pl.Float64))
    name = pl.col("_table").replace_strict({i: tb.name for i, tb in enumerate(TABLES)}, return_dtype=pl.Utf8)
    return rows.select("file", "line", rank, pl.lit(EventKind.BANDWIDTH).alias("kind"),
                       pl.format("{}: {}", name, t.str.strip_chars()).alias("message"),
                       pl.lit("benchmark").alias("where"), size.alias("bytes"), bw.alias("busbw_gbs"))


def _headers(df: pl.DataFrame) -> pl.DataFrame:
    """The tables' header lines (known, no event of their own)."""
    return df.filter(pl.col("text").str.contains(HEADERS)).select("file", "line")
