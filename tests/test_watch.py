"""`tracekit watch` on a job folder that grows: real NCCL logs cut at half their length, then whole."""

import shutil

from click.testing import CliRunner

from tests.conftest import SAMPLES
from tracekit import watch
from tracekit.cli import main


def test_growing_logs_read_as_progress_then_stall(tmp_path):
    src = SAMPLES / "gpu_2x1_bench"
    for f in src.glob("nccl.*.log"):
        lines = f.read_text().splitlines(keepends=True)
        (tmp_path / f.name).write_text("".join(lines[: len(lines) // 2]))
    first = watch.snapshot(tmp_path)
    assert first.frontier and first.finished is None
    for f in src.glob("nccl.*.log"):
        shutil.copy(f, tmp_path / f.name)
    second = watch.snapshot(tmp_path)
    assert second.collectives > first.collectives
    second.at = first.at + 10  # ten seconds between the looks
    line = watch.describe(first, second)
    assert line.startswith("progressing: ") and "collectives/s" in line
    third = watch.snapshot(tmp_path)
    assert watch.describe(second, third).startswith("no progress for ")


def test_finished_run_says_so():
    s = watch.snapshot(SAMPLES / "gpu_2x1_healthy")
    assert s.finished == "exit code 0"
    assert watch.describe(None, s).startswith("finished (exit code 0)")


def test_cli_once_in_a_pipe(tmp_path):
    r = CliRunner().invoke(main, ["watch", "--once", str(SAMPLES / "gloo_2x2_deadlock")])
    assert r.exit_code == 0
    assert "ranks 0-2 at all_reduce #9; ranks 3 at all_gather #8" in r.output and "deadlock" in r.output
