"""`tracekit watch` on a job folder that grows: real NCCL logs cut at half their length, then whole;
on finished, empty, init-stalled and deadlocked runs; and with the verdict `tracekit run` wrote."""

import shutil

from click.testing import CliRunner

from tests.conftest import SAMPLES, copy_sample
from tracekit import live, watch
from tracekit.cli import main
from tracekit.ingest import ingest
from tracekit.verdict import decide


def test_growing_logs_read_as_progress_then_stall(tmp_path):
    src = SAMPLES / "gpu_2x1_bench"
    for f in src.glob("nccl.*.log"):
        lines = f.read_text().splitlines(keepends=True)
        (tmp_path / f.name).write_text("".join(lines[: len(lines) // 2]))
    first = watch.snapshot(tmp_path)
    assert first.frontier and first.finished is None
    assert watch.describe(None, first).startswith("running: last write 0s ago")  # not "no progress for 0s"
    for f in src.glob("nccl.*.log"):
        shutil.copy(f, tmp_path / f.name)
    second = watch.snapshot(tmp_path)
    assert second.collectives > first.collectives
    second.at = first.at + 10  # ten seconds between the looks
    line = watch.describe(first, second)
    assert line.startswith("progressing: ") and "collectives/s" in line
    third = watch.snapshot(tmp_path)
    assert watch.describe(second, third).startswith("no write for ")


def test_finished_run_says_so():
    s = watch.snapshot(SAMPLES / "gpu_2x1_healthy")
    assert s.finished == "exit code 0"
    assert watch.describe(None, s).startswith("finished (exit code 0), step 6/6; verdict: HEALTHY: ")


def test_a_run_without_launch_records_gives_its_verdict_not_a_verdict_so_far():
    line = watch.describe(None, watch.snapshot(SAMPLES / "gloo_2x2_healthy"))
    assert line.startswith("no write for ") and "(step 5/5)" in line and "so far" not in line
    assert "; verdict: HEALTHY: " in line and "last step reached" in line


def test_an_init_stall_is_named_not_waited_for():
    line = watch.describe(None, watch.snapshot(SAMPLES / "gpu_2x1_initstall"))
    assert "verdict: INIT-STALL: " in line and "rank 1 logged no NCCL init" in line, line
    assert not line.startswith("waiting")


def test_an_empty_folder_is_waited_for(tmp_path):
    assert watch.describe(None, watch.snapshot(tmp_path)) == "waiting: nothing in the folder yet"


def test_the_verdict_tracekit_run_wrote_for_this_stall_is_shown(tmp_path):
    run = tmp_path / "run"
    copy_sample("gloo_2x2_deadlock", run)
    assert live.write(run, decide(ingest([run])), "stalled", 95.0, 2, run / "procs")
    line = watch.describe(None, watch.snapshot(run))
    assert line.startswith("stalled: no progress for ") and "ranks 0-2 at all_reduce #9; rank 3 at all_gather #8" in line
    assert "; verdict (tracekit run, 2 dump rounds): DEADLOCK: " in line and "rank 3 never issued it" in line


def test_cli_once_in_a_pipe():
    r = CliRunner().invoke(main, ["watch", "--once", str(SAMPLES / "gloo_2x2_deadlock")])
    assert r.exit_code == 0
    assert "ranks 0-2 at all_reduce #9; rank 3 at all_gather #8" in r.output and "verdict: DEADLOCK: " in r.output
