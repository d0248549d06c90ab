"""tracekit never deletes or changes a file it did not write: every command that writes (ingest, verdict,
trace, plot, report, run, watch), pointed at
the inputs, at their parent and at the working folder, leaves every file it found there as it was."""

import hashlib
import os
import shutil
import sys

import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES, copy_sample
from tracekit.cli import main


def tree(root):
    """Hash of every file under ``root`` (tracekit's own outputs included, so callers compare
    only the files that were there before)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def work(tmp_path, monkeypatch):
    """tmp/work/logs (a real deadlock run) and an unrelated file beside it, cwd = tmp/work."""
    w = tmp_path / "work"
    copy_sample("gloo_2x2_deadlock", w / "logs")
    (w / "notes.txt").write_text("the user's own notes\n")
    monkeypatch.chdir(w)
    return w


def unchanged(before, root):
    after = tree(root)
    assert {k: after.get(k) for k in before} == before


def invoke(*args):
    return CliRunner().invoke(main, list(map(str, args)))


@pytest.mark.parametrize("out", ["logs", ".", "..", "logs/rank0.log"])
def test_ingest_out_pointing_at_user_files_is_refused_and_touches_nothing(work, out):
    before = tree(work.parent)
    r = invoke("ingest", "logs", "--out", out)
    assert r.exit_code == 2
    assert "not a tracekit store" in r.output or "not a folder" in r.output
    assert r.output.count("\n") == 1 and r.output.startswith("error: ")
    assert tree(work.parent) == before  # not even a temporary folder is left


def test_ingest_default_store_and_rewrite_leave_inputs(work):
    before = tree(work)
    for _ in range(2):  # the second run replaces the store it wrote the first time
        assert invoke("ingest", "logs").exit_code == 0
        unchanged(before, work)
    assert sorted(p.name for p in (work / "logs/.tracekit").iterdir())[-1] == "ranks.parquet"
    assert invoke("ingest", "logs", "--out", "store").exit_code == 0
    assert invoke("ingest", "logs", "--out", "store").exit_code == 0  # an existing store is ours to replace
    unchanged(before, work)


def test_a_folder_copied_with_its_store_is_read_from_its_logs_and_gets_its_own_store(work):
    """What README's first command leaves (``FOLDER/.tracekit``) travels with a copy of the folder:
    the copy's verdict comes from its own logs, and ingesting it replaces the copied store."""
    assert invoke("ingest", "logs").exit_code == 0
    shutil.copytree(work / "logs", work / "copy")
    assert (work / "copy/.tracekit/made_by.txt").exists()
    assert invoke("verdict", "copy").output.startswith("DEADLOCK")
    assert invoke("ingest", "copy").exit_code == 0
    made_by = (work / "copy/.tracekit/made_by.txt").read_text()
    assert f"input {(work / 'copy').resolve()}\n" in made_by and "logs" not in made_by


def test_a_store_folder_with_a_foreign_file_is_refused(work):
    assert invoke("ingest", "logs", "--out", "store").exit_code == 0
    (work / "store/keep.me").write_text("mine")
    r = invoke("ingest", "logs", "--out", "store")
    assert r.exit_code == 2 and "keep.me" in r.output
    assert (work / "store/keep.me").read_text() == "mine" and (work / "store/files.parquet").exists()


def test_merged_paths_say_so_and_write_no_store_unless_asked(work):
    for node, ranks in (("node0", "01"), ("node1", "23")):  # one run's two nodes, given as two paths
        (work / node).mkdir()
        for f in (work / "logs").iterdir():
            if f.is_file() and (f.stem.endswith(node) or "node" not in f.stem and f.stem[-1] in ranks):
                shutil.copy2(f, work / node / f.name)
    r = invoke("ingest", "node0", "node1")
    assert r.exit_code == 0 and "2 paths read as one run (merged)" in r.output
    assert "verdict   DEADLOCK" in r.output
    assert not (work / "node0/.tracekit").exists() and not (work / "node1/.tracekit").exists()
    assert invoke("ingest", "node0", "node1", "--out", "merged").exit_code == 0
    assert (work / "merged/made_by.txt").read_text().count("input ") == 2
    # the merged store is never taken for node0/ alone
    assert invoke("verdict", "node0").output.startswith("UNDECIDED")
    copy_sample("gloo_2x2_healthy", work / "other")  # another run: two runs, no store
    r = invoke("ingest", "logs", "other")
    assert r.exit_code == 0 and r.stdout.startswith("runs      2 in logs, other") and "merged" not in r.output
    assert not (work / "logs/.tracekit").exists() and not (work / "other/.tracekit").exists()


def test_verdict_watch_leave_everything(work):
    before = tree(work)
    assert invoke("verdict", "logs").exit_code == 0
    assert invoke("watch", "logs", "--once").exit_code == 0
    assert tree(work) == before


@pytest.mark.parametrize("where", ["logs", ".", ".."])
def test_trace_and_plot_into_the_inputs_only_add_their_own_files(work, where):
    before = tree(work.parent)
    assert invoke("trace", "logs", "-o", f"{where}/t.pftrace", "--json-out", f"{where}/t.json").exit_code == 0
    invoke("plot", "logs", "-o", where)
    unchanged(before, work.parent)


@pytest.mark.parametrize("where", ["logs", ".", ".."])
def test_report_into_the_inputs_only_adds_its_own_file(work, where):
    before = tree(work.parent)
    assert invoke("report", "logs", "-o", f"{where}/r.html").exit_code == 0
    assert invoke("report", "logs", "--markdown", "-o", f"{where}/r.md").exit_code == 0
    unchanged(before, work.parent)


def test_outputs_never_overwrite_an_input(work):
    before = tree(work)
    for args in (["trace", "logs", "-o", "logs/rank0.log"], ["trace", "logs", "--json-out", "logs/rank1.log"],
                 ["report", "logs", "-o", "logs/rank2.log"]):
        r = invoke(*args)
        assert r.exit_code == 2 and "input files" in r.output, r.output
    unchanged(before, work)


@pytest.mark.parametrize("args", [["trace", "logs", "-o", "/no/such/dir/x.pftrace"],
                                  ["trace", "logs", "--json-out", "/no/such/dir/x.json"],
                                  ["plot", "logs", "-o", "/proc/no/such"]])
def test_unwritable_output_is_one_line_exit_2(work, args):
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: ") and r.output.count("\n") == 1


def test_run_into_a_folder_of_logs_adds_files_and_changes_none(work):
    before = tree(work)
    r = invoke("run", "--quiet", "--out", "logs", "--", sys.executable, "-c", "print('hello from the job')")
    assert r.exit_code == 0
    unchanged(before, work)
    assert len(tree(work / "logs")) > len([k for k in before if k.startswith("logs/")])


def test_run_of_a_missing_command_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("run", "--", "/nonexistent/cmd", "--flag")
    assert r.exit_code == 127
    assert r.output == "error: /nonexistent/cmd: command not found (nothing was run, nothing written)\n"
    assert os.listdir(tmp_path) == []
