"""Every command's edges, as a user meets them: exact output and exit codes on real samples."""

import ast
import gzip
import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tests.conftest import ROOT, SAMPLES, copy_sample
from tracekit import serve
from tracekit.cli import main


def invoke(*args):
    return CliRunner().invoke(main, list(map(str, args)), prog_name="tracekit")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """A Perfetto trace and a Chrome JSON trace of the deadlock sample, as `tracekit trace` writes them."""
    d = tmp_path_factory.mktemp("traces")
    r = invoke("trace", SAMPLES / "gloo_2x2_deadlock", "-o", d / "run.pftrace", "--json-out", d / "run.json")
    assert r.exit_code == 0, r.output
    return d


def test_open_a_busy_port_is_one_line_and_no_link(traces):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        r = invoke("open", traces / "run.pftrace", "--port", port, "--timeout", 5)
    assert r.exit_code == 2
    assert r.stdout == ""  # no link that leads nowhere
    assert r.stderr == (f"error: 127.0.0.1:{port}: cannot serve there: Address already in use "
                        "(another program holds the port: stop it, or give --port)\n")


@pytest.mark.parametrize("name", ["rank0.log", "fr_rank0.pkl", "stacks_rank3.txt"])
def test_open_refuses_a_file_that_is_not_a_trace(name):
    f = SAMPLES / "gloo_2x2_deadlock" / name
    r = invoke("open", f, "--port", free_port(), "--timeout", 5)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (f"error: {f}: not a trace (neither a Perfetto protobuf nor Chrome trace-event JSON); "
                        "make one with: tracekit trace RUN -o run.pftrace\n")


def test_open_missing_file_and_folder(tmp_path):
    r = invoke("open", tmp_path / "nope.pftrace")
    assert (r.exit_code, r.output) == (2, f"error: {tmp_path / 'nope.pftrace'}: no such file or folder\n")
    r = invoke("open", tmp_path)
    assert (r.exit_code, r.output) == (2, f"error: {tmp_path}: is a folder; name a file\n")


def test_trace_kind_of_real_files(traces):
    assert serve.trace_kind(traces / "run.pftrace") == "perfetto"
    assert serve.trace_kind(traces / "run.json") == "chrome-json"
    assert serve.trace_kind(SAMPLES / "gloo_2x2_healthy" / "kineto_rank0.json") == "chrome-json"  # a Kineto trace
    for f in (SAMPLES / "gloo_2x2_deadlock").iterdir():  # logs, stacks and Flight Recorder pickles
        assert f.is_dir() or serve.trace_kind(f) is None, f  # (a .tracekit store where README's command ran)


@pytest.mark.parametrize("name", ["run.pftrace", "run.json"])
def test_open_serves_a_trace_once(traces, name):
    port = free_port()
    got = {}

    def fetch():
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/{name}", timeout=5) as resp:
                    got["body"] = resp.read()
                return
            except OSError:
                time.sleep(0.05)

    t = threading.Thread(target=fetch)
    t.start()
    r = invoke("open", traces / name, "--port", port, "--timeout", 30)
    t.join()
    assert r.exit_code == 0, r.output
    assert r.stdout == f"open https://ui.perfetto.dev/#!/?url=http://127.0.0.1:{port}/{name}\n"
    assert got["body"] == (traces / name).read_bytes()


@pytest.mark.parametrize("args, line", [
    (["ingest"], "error: Missing argument 'PATHS...' (see: tracekit ingest --help)"),
    (["ingest", "--bogus", "x"], "error: No such option '--bogus'. Did you mean '--out'? (see: tracekit ingest --help)"),
    (["bogus"], "error: No such command 'bogus' (see: tracekit --help)"),
    (["watch", "/no/such/run"], "error: /no/such/run: no such file or folder"),
    (["watch", SAMPLES / "gloo_2x2_deadlock" / "rank0.log"],
     f"error: {SAMPLES / 'gloo_2x2_deadlock' / 'rank0.log'}: is a file; name a folder"),
    (["doctor", "--script", SAMPLES], f"error: {SAMPLES}: is a folder; name a file"),
])
def test_usage_errors_are_one_error_line(args, line):
    """click's own usage errors read like tracekit's: one `error: ...` line, exit 2, no `Error:`."""
    r = invoke(*args)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", line + "\n")


@pytest.fixture
def cut_gz(tmp_path):
    """The deadlock sample's first launcher log, gzipped and cut at two thirds (as a copy killed mid-way leaves it)."""
    z = gzip.compress((SAMPLES / "gloo_2x2_deadlock" / "torchrun_node0.log").read_bytes())
    return z[: len(z) * 2 // 3]


def test_a_truncated_gz_alone_is_read_with_a_note_then_summarised(tmp_path, cut_gz):
    f = tmp_path / "torchrun_node0.log.gz"
    f.write_bytes(cut_gz)
    r = invoke("ingest", f)
    assert r.exit_code == 0, r.output
    assert r.stderr == f"note: {f}: truncated gzip stream: read what it held\n"
    assert r.stdout.startswith("verdict   ") and "\nfiles     1 (1 " in r.stdout
    assert "unreadable" not in r.stdout


def test_a_gz_cut_before_any_line_is_one_error(tmp_path, cut_gz):
    f = tmp_path / "torchrun_node0.log.gz"
    f.write_bytes(cut_gz[:12])  # the gzip header and nothing else
    r = invoke("ingest", f)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {f}: truncated gzip stream: nothing in it to read\n")


def test_a_truncated_gz_in_a_folder_is_counted_once_as_read(tmp_path, cut_gz):
    run = tmp_path / "run"
    copy_sample("gloo_2x2_deadlock", run)
    (run / "torchrun_node0.log").unlink()
    (run / "torchrun_node0.log.gz").write_bytes(cut_gz)
    r = invoke("ingest", run, "--no-store")
    assert r.exit_code == 0, r.output
    assert r.stderr == f"note: {run / 'torchrun_node0.log.gz'}: truncated gzip stream: read what it held\n"
    assert "\nfiles     14 (4 flight-recorder, " in r.stdout  # the .gz once, among the 14 files
    assert "unreadable" not in r.stdout and "verdict   DEADLOCK" in r.stdout


def test_summary_lines_a_newcomer_reads():
    out = invoke("ingest", SAMPLES / "gloo_2x2_deadlock", "--no-store").stdout.splitlines()
    assert out[0].startswith("verdict   DEADLOCK: ")  # the verdict first, then the summary under it
    files = next(line for line in out if line.startswith("files"))
    # a file several parsers read is of kind a+b (rank0.log: torchrun's lines and the trainer's)
    assert re.fullmatch(r"files     14 \((\d+ [a-z-]+(\+[a-z-]+)*, )*\d+ [a-z-]+(\+[a-z-]+)*\)", files) and "+" in files
    assert "last      ranks 0-2: gloo:all_reduce seq 9 on pg 0 (from the Flight Recorder)" in out
    errors = next(line for line in out if line.startswith("errors"))
    first = (SAMPLES / "gloo_2x2_deadlock" / "torchrun_node0.log").read_text().splitlines()[3]  # 231 characters
    assert errors == f"errors    8 line(s), first: {SAMPLES / 'gloo_2x2_deadlock' / 'torchrun_node0.log'}:4: {first}"
    out = invoke("ingest", SAMPLES / "gpu_2x1_initstall", "--no-store").stdout.splitlines()
    assert "versions  nccl 2.28.9+cuda13.0; torch 2.11.0" in out  # its ranks had no deepspeed: no "deepspeed "
    assert "network   vm: NCCL uses Socket" in out and "network   vm: NCCL socket interface lo:127.0.0.1 (IPv4)" in out


def test_a_long_error_line_ends_at_a_word():
    from tracekit.reports.summary import _clip

    line = (SAMPLES / "gloo_2x2_mismatch" / "rank2.log").read_text().splitlines()[11]  # gloo's 306-character error
    assert len(line) > 240
    cut = _clip(line)
    assert cut.endswith(" ...") and len(cut) <= 240 and line.startswith(cut[:-4]) and line[len(cut) - 4] == " "


def _unknown_per_file(folder):
    """How many lines of each file no parser understood, as the store counts them."""
    from tracekit.ingest import ingest

    return {r["file"]: r["unknown"] for r in ingest([folder]).files.iter_rows(named=True) if r["unknown"]}


def test_ingest_unknown_lists_the_lines_not_understood_per_file():
    d = SAMPLES / "gloo_2x2_deadlock"
    counts = _unknown_per_file(d)
    total, n_files = sum(counts.values()), len(counts)
    assert total and n_files
    r = invoke("ingest", d, "--no-store", "--unknown")
    assert r.exit_code == 0, r.output
    assert f"unknown   {total} line(s) not understood in {n_files} file(s) (ingest --unknown lists them)" in r.stdout
    listing = r.stdout.split("\n\n")[-1].splitlines()
    assert listing[0] == f"lines not understood: {total} in {n_files} file(s); the first 10 of each file, by block:"
    shown = {}
    for line in listing[1:]:
        if line.startswith("  ... and "):
            n, f = re.fullmatch(r"  \.\.\. and (\d+) more in (.+)", line).groups()
            assert int(n) == counts[f] - 10
            continue
        f, num, text = re.fullmatch(r"(.+?):(\d+): (.*)", line).groups()
        assert Path(f).read_text().splitlines()[int(num) - 1] == text  # the line as the file has it
        shown[f] = shown.get(f, 0) + 1
    assert shown == {f: min(n, 10) for f, n in counts.items()}
    r = invoke("ingest", d, "--no-store", "--unknown", "--json")
    listed = json.loads(r.stdout)["unknown_listed"]
    assert {f["file"]: (f["total"], len(f["lines"])) for f in listed} == {f: (n, min(n, 10)) for f, n in counts.items()}


def test_ingest_unknown_caps_the_files_and_counts_the_rest(tmp_path):
    for i in range(25):  # 25 copies of a Python source file: lines no log parser understands
        shutil.copy(ROOT / "samples" / "repro" / "train.py", tmp_path / f"train_{i:02}.py")
    counts = _unknown_per_file(tmp_path)
    assert len(counts) == 25 and min(counts.values()) > 10
    listing = invoke("ingest", tmp_path, "--no-store", "--unknown").stdout.split("\n\n")[-1].splitlines()
    assert listing[0] == (f"lines not understood: {sum(counts.values())} in 25 file(s); the first 10 of each file, "
                          "by block:")
    rest = sum(n for f, n in counts.items() if f.endswith(("_20.py", "_21.py", "_22.py", "_23.py", "_24.py")))
    assert listing[-1] == f"  ... and {rest} more in 5 more file(s)"
    assert len(listing) == 1 + 20 * 11 + 1


def test_top_level_help_gives_each_command_a_whole_sentence():
    r = invoke("--help")
    listed = r.stdout.split("Commands:\n")[1].splitlines()
    assert len(listed) == len(main.commands)  # one line each: nothing wraps, nothing is cut
    for line in listed:
        name, text = line.split(None, 1)
        assert text.endswith(".") and not text.endswith("..."), line
        assert main.commands[name].short_help == text


def test_every_option_has_help():
    for name, cmd in main.commands.items():
        for p in cmd.params:
            if isinstance(p, click.Option):
                assert p.help, f"{name} {p.opts}"


def test_verdict_of_an_empty_folder_is_bad_input_as_for_ingest(tmp_path):
    for cmd in ("ingest", "verdict"):
        r = invoke(cmd, tmp_path)
        assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {tmp_path}: no logs, dumps or traces found\n"), cmd


def test_verdict_of_nothing_readable_is_one_line(tmp_path, cut_gz):
    f = tmp_path / "torchrun_node0.log.gz"
    f.write_bytes(cut_gz[:12])
    r = invoke("verdict", f)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {f}: truncated gzip stream: nothing in it to read\n")
    r = invoke("verdict", tmp_path)
    assert (r.exit_code, r.stderr) == (2, f"error: {tmp_path}: no readable file ({f}: truncated gzip stream: nothing in it to read)\n")


BENCHMARKS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if "__main__" in p.read_text())


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.name)
def test_every_benchmark_answers_help_without_running(script):
    r = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "usage" in r.stdout.lower() and r.stderr == ""
    if "argparse" not in script.read_text():  # the docstring, which holds the usage, and nothing else
        assert r.stdout.strip() == ast.get_docstring(ast.parse(script.read_text()), clean=False).strip()


def test_stack_dumps_name_files_inside_the_working_folder_relative_to_it(tmp_path, monkeypatch):
    from tracekit import hook

    done = threading.Event()
    waiter = threading.Thread(target=lambda: done.wait(), name="waiter")  # a stack through this file
    waiter.start()
    try:
        monkeypatch.chdir(ROOT)
        hook.dump_stacks(tmp_path / "inside.txt", "0")  # (every thread but the one that dumps)
        monkeypatch.chdir(tmp_path)  # this test file is outside the working folder now: named in full
        hook.dump_stacks(tmp_path / "outside.txt", "0")
    finally:
        done.set()
        waiter.join()
    inside, outside = (tmp_path / "inside.txt").read_text(), (tmp_path / "outside.txt").read_text()
    assert " (tests/test_edges.py:" in inside and str(ROOT) not in inside
    assert f" ({ROOT / 'tests' / 'test_edges.py'}:" in outside


def test_the_readme_sample_carries_no_recording_machines_path_in_its_stacks():
    for f in (SAMPLES / "gloo_2x2_deadlock").glob("stacks_rank*.txt"):
        assert " (/" not in f.read_text() and "Process " in f.read_text(), f
    out = invoke("verdict", SAMPLES / "gloo_2x2_deadlock").stdout
    assert "rank 3 is in next_batch_stuck (samples/repro/train.py:" in out


def test_a_command_that_leaves_at_once_still_says_and_writes_everything(tmp_path):
    """ingest and the other analysis commands leave with os._exit once their output is written
    (cli.QUICK_EXIT): every byte still reaches a pipe, the store is whole, the exit code is the
    command's."""
    from tracekit.store import Store

    run = tmp_path / "run"
    copy_sample("gloo_2x2_deadlock", run)
    p = subprocess.run([sys.executable, "-m", "tracekit.cli", "ingest", str(run), "--json", "--fail-on-hang"],
                       capture_output=True, text=True)
    assert p.returncode == 1, p.stderr  # a deadlock, and --fail-on-hang
    said = json.loads(p.stdout)
    assert said["verdict"]["kind"] == "deadlock" and said["ranks"]["count"] == 4
    stored = Store.read(run / ".tracekit")
    assert stored.files.height == len(said["files"]) and stored.collectives.height > 0
    p = subprocess.run([sys.executable, "-m", "tracekit.cli", "verdict", str(tmp_path / "missing")], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.startswith("error: ") and p.stdout == ""
