"""Runs and attempts told apart (tracekit/runs.py): real runs from samples/ put together as users'
folders hold them: attempts in subfolders, attempts side by side in one folder, a restart written by
`tracekit run` into the same folder, node folders of one run, a folder of unrelated samples."""

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES, copy_sample
from tracekit import runs
from tracekit.cli import main
from tracekit.ingest import discover, parse_files


def split(folder):
    return runs.split(parse_files([str(f) for f in discover([folder])]))


def invoke(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def side_by_side(dest: Path, **prefixed: str) -> Path:
    """The files of samples/NAME in one folder, each name under its prefix (``a_rank0.log``)."""
    dest.mkdir()
    for prefix, name in prefixed.items():
        for f in sorted((SAMPLES / name).iterdir()):
            if f.is_file():
                shutil.copy2(f, dest / f"{prefix}_{f.name}")
    return dest


def test_attempts_in_subfolders_are_two_runs_each_with_its_verdict_the_latest_first(tmp_path):
    copy_sample("gloo_2x2_healthy", tmp_path / "job/attempt1")  # (its Flight Recorder: 2026-12-02)
    copy_sample("gloo_2x2_deadlock", tmp_path / "job/attempt2")  # (2026-12-03)
    r = invoke("ingest", tmp_path / "job")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"runs      2 in {tmp_path / 'job'}, the latest first")
    assert lines[1].startswith("run 1     2026-12-03 16:16:42 - 16:16:46 UTC (flight recorder): "
                               "ranks 0-3 of 4")
    assert lines[1].endswith(f"14 file(s) in {tmp_path / 'job/attempt2'}")
    assert lines[3].endswith(f"18 file(s) in {tmp_path / 'job/attempt1'}")
    assert (lines[2].split()[0], lines[4].split()[0]) == ("DEADLOCK:", "HEALTHY:")
    assert "no store written for 2 runs" in r.stderr and not (tmp_path / "job/.tracekit").exists()
    assert "verdict   DEADLOCK" in r.stdout  # run 1 in full
    r = invoke("verdict", tmp_path / "job", "--run", "2")
    assert r.exit_code == 0 and r.output.startswith("HEALTHY: ")
    each = json.loads(invoke("verdict", tmp_path / "job", "--json").output)["runs"]
    assert [(e["run"], e["verdict"]["kind"], e["folder"]) for e in each] == [
        (1, "deadlock", str(tmp_path / "job/attempt2")), (2, "healthy", str(tmp_path / "job/attempt1"))]
    r = invoke("verdict", tmp_path / "job", "--run", "3")
    assert (r.exit_code, r.output) == (2, f"error: --run 3: {tmp_path / 'job'} holds 2 run(s); give 1 to 2\n")


def test_attempts_side_by_side_in_one_folder_are_told_apart_by_processes_and_names(tmp_path):
    found = split(side_by_side(tmp_path / "logs", a="gloo_2x2_deadlock", b="gloo_2x2_healthy"))
    assert [sorted({Path(f).name[:2] for f in a.files}) for a in found] == [["a_"], ["b_"]]
    assert [len(a.files) for a in found] == [14, 18]
    r = invoke("verdict", tmp_path / "logs")
    assert r.output.startswith(f"2 runs in {tmp_path / 'logs'}")
    assert "\nrun 1: 2026-12-03" in r.output and "\nrun 2: 2026-12-02" in r.output


def test_a_restart_into_the_same_folder_is_two_runs_and_node_folders_are_one(tmp_path):
    """`tracekit run` names its files by host and pid: a second launch into the same --out folder
    (a restart, a re-submitted job) has other pids; its launcher's pid is near its ranks' pids."""
    restart = tmp_path / "restart"
    copy_sample("zero3_slow_2x2", restart)
    for f in (SAMPLES / "zero3_slow_fixed_2x2").iterdir():
        shutil.copy2(f, restart / f.name)
    found = split(restart)
    pids = [sorted({n for f in a.files for n in Path(f).name.split(".") if n.isdigit() and len(n) > 2})
            for a in found]
    assert sorted(pids) == [["16077", "16078", "16086", "16087", "16088", "16089"],
                            ["17034", "17035", "17043", "17044", "17045", "17046"]]
    nodes = tmp_path / "nodes"
    for f in (SAMPLES / "zero3_slow_2x2").iterdir():
        (nodes / f.name.split(".")[1]).mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, nodes / f.name.split(".")[1] / f.name)
    (one,) = split(nodes)
    assert one.ranks == [0, 1, 2, 3] and one.folder() == str(nodes) and len(one.files) == 28


#: samples that hold several attempts on purpose (tests/test_runs_elastic.py)
ATTEMPTS = ("torchrun_restart_1x2",)
RUNS = sorted(d.name for d in SAMPLES.iterdir() if d.is_dir() and d.name not in ("wild", "repro", *ATTEMPTS))


@pytest.mark.parametrize("name", RUNS)
def test_every_sample_alone_is_one_run(name):
    (one,) = split(SAMPLES / name)
    assert one.folder() == str(SAMPLES / name)


def test_a_folder_of_unrelated_samples_is_many_runs_not_one_world(tmp_path):
    names = ["gloo_2x2_deadlock", "gloo_1x4_straggler", "gpu_2x1_healthy", "zero3_slow_2x2",
             "swift_2x2_wandb", "gpu_1x1_healthy"]
    for n in names:
        copy_sample(n, tmp_path / "samples" / n)
    found = split(tmp_path / "samples")
    assert sorted(Path(a.folder()).name for a in found) == sorted(names)
    assert {a.folder(): a.world_size for a in found}[str(tmp_path / "samples/gpu_1x1_healthy")] == 1
    r = invoke("ingest", tmp_path / "samples", "--no-store", "--json")
    s = json.loads(r.output)
    assert len(s["runs"]) == 6 and s["ranks"]["count"] <= 4


@pytest.mark.parametrize("name", ["gloo_2x2_deadlock", "zero3_slow_2x2", "gpu_2x1_bench"])
def test_one_run_opens_as_the_store_ingest_makes(name):
    from tracekit.ingest import ingest
    from tracekit.load import open_run

    opened = open_run([SAMPLES / name], no_store=True, reuse=False)
    assert len(opened.attempts) == 1
    for table, df in ingest([SAMPLES / name]).tables().items():
        assert opened.store.tables()[table].equals(df), table
