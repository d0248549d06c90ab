"""Attempts told apart by the launcher's word: torchrun's agent lines (parsers/elastic.py) and its log
folder, on a real restart (samples/torchrun_restart_1x2: torch 2.13, gloo, 2 ranks, --max-restarts 1,
rank 1 raising on the first attempt; made by samples/repro/torchrun_restart.py)."""

import json
import os

import polars as pl
from click.testing import CliRunner

from tests.conftest import SAMPLES, copy_sample
from tracekit import runs, schema
from tracekit.cli import main
from tracekit.ingest import discover, parse_files
from tracekit.parsers import elastic, text

SAMPLE = SAMPLES / "torchrun_restart_1x2"


def invoke(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def agent_events(path):
    lines = text.lines_frames([text.raw(str(path), path.read_text())])
    return elastic.parse(lines)


def test_the_agent_lines_become_events_with_run_id_and_restart_count():
    parsed = agent_events(SAMPLE / "launcher.log")
    ev = schema.conform(parsed.tables["events"], schema.EVENTS).sort("line")
    kinds = ev["kind"].cast(pl.Utf8).to_list()
    assert kinds == ["elastic_launch", "elastic_rejoin", "elastic_rendezvous", "elastic_failed", "elastic_stop",
                     "elastic_rejoin", "elastic_rendezvous", "clean_exit"]
    launch = elastic.fields(ev["message"][0])
    assert launch["run_id"] == "job42" and launch["max_restarts"] == "1" and launch["nproc_per_node"] == "2"
    rdzv = [elastic.fields(m) for m in ev.filter(pl.col("kind") == "elastic_rendezvous")["message"]]
    assert [r["restart_count"] for r in rdzv] == ["0", "1"]
    assert rdzv[1]["global_ranks"] == "[0,1]" and rdzv[1]["global_world_sizes"] == "[2,2]"
    failed = ev.filter(pl.col("kind") == "elastic_failed")
    assert failed["message"][0] == "[default] Worker group FAILED. 1/1 attempts left; will restart worker group"
    assert elastic.fields(failed["frames"][0])["attempts_left"] == "1"
    assert parsed.tables["ranks"]["world_size"].to_list() == [2]
    # the lines of both blocks are claimed: their heads and their values
    claimed = set(parsed.claimed["line"])
    raw = (SAMPLE / "launcher.log").read_text().splitlines()
    for n, line in enumerate(raw, 1):
        if "restart_count=" in line or "run_id " in line or "Worker group FAILED" in line:
            assert n in claimed, line


def test_a_restart_is_two_attempts_told_apart_by_restart_count_the_latest_first(tmp_path):
    folder = copy_sample("torchrun_restart_1x2", tmp_path / "job")
    found = runs.split(parse_files([str(f) for f in discover([folder])]))
    assert [a.launch for a in found] == [("job42", 1), ("job42", 0)]
    latest, first = found
    assert all("attempt_1" in f for f in latest.files if "/logs/" in f)
    assert all("attempt_0" in f for f in first.files if "/logs/" in f)
    assert str(folder / "launcher.log") in latest.files and str(folder / "launcher.log") in first.files
    assert latest.world_size == first.world_size == 2
    # each attempt's span by the agent's own clock (glog's month, day and time), not the files' times
    assert latest.timed_by == first.timed_by == "torchrun agent's clock"
    assert first.span().endswith("-12-04 17:09:09 - 17:09:13 (torchrun agent's clock)")
    assert latest.span().endswith("-12-04 17:09:13 - 17:09:18 (torchrun agent's clock)")
    # the agent's log is cut where the second attempt starts: its FAILED line is the first attempt's
    r = invoke("ingest", folder, "--no-store", "--json")
    s = json.loads(r.output)
    assert [(x["run"], x["restart_count"], x["verdict"]["kind"]) for x in s["runs"]] == [
        (1, 1, "healthy"), (2, 0, "crashed-rank")]


def test_the_launcher_word_outranks_file_times(tmp_path):
    """A clone or a copy sets file times anyhow: the first attempt's files newest still reads restart 1
    as the latest."""
    folder = copy_sample("torchrun_restart_1x2", tmp_path / "job")
    for f in (folder / "logs").rglob("attempt_0/*/*.log"):
        os.utime(f, (2_000_000_000, 2_000_000_000))
    found = runs.split(parse_files([str(f) for f in discover([folder])]))
    assert [a.launch[1] for a in found] == [1, 0]


def test_the_agent_log_alone_is_cut_into_its_attempts(tmp_path):
    """The console output of torchrun alone (no --log-dir): one file, two attempts."""
    log = tmp_path / "console.log"
    log.write_text((SAMPLE / "launcher.log").read_text())
    r = invoke("ingest", log, "--no-store")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("runs      2 in ")
    assert "run 1     torchrun run job42 restart 1: " in r.output
    assert "run 2     torchrun run job42 restart 0: " in r.output
    v = invoke("verdict", log, "--run", "2", "--json")
    assert json.loads(v.output)["kind"] == "crashed-rank"
    v = invoke("verdict", log, "--run", "1", "--json")
    assert json.loads(v.output)["kind"] != "crashed-rank"


def test_diff_compares_two_attempts_of_one_folder(tmp_path):
    folder = copy_sample("torchrun_restart_1x2", tmp_path / "job")
    r = invoke("diff", folder)
    assert r.exit_code == 0, r.output
    head = r.output.splitlines()
    assert head[0] == f"A = run 2 ({folder})" and head[1] == f"B = run 1 ({folder})"
    assert "A CRASHED-RANK" in r.output and "B HEALTHY" in r.output
    again = invoke("diff", folder, "--run", "1", "--run", "2", "--json")
    assert again.exit_code == 0, again.output
    r = invoke("diff", folder, "--run", "1")
    assert r.exit_code == 2 and r.output.startswith(f"error: {folder}: one path: give --run twice")
    r = invoke("diff", folder, "--run", "3", "--run", "1")
    assert r.exit_code == 2 and "holds 2 run(s)" in r.output
    r = invoke("diff", SAMPLES / "gloo_2x2_deadlock")
    assert (r.exit_code, r.output) == (2, f"error: {SAMPLES / 'gloo_2x2_deadlock'}: holds one run; give a second run "
                                          "to compare it with\n")
