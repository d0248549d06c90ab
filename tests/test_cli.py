"""The CLI as a user drives it: exact exit codes, one-line errors, the README's commands."""

import io
import json
import re
from pathlib import Path

from click.testing import CliRunner

from tests.conftest import ROOT, SAMPLES, copy_sample
from tracekit.cli import main


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_ingest_writes_store_and_prints_verdict(tmp_path):
    r = run("ingest", SAMPLES / "gloo_2x2_deadlock", "--out", tmp_path / "store")
    assert r.exit_code == 0, r.output
    assert "verdict   DEADLOCK" in r.output
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == [
        "collectives.parquet", "comms.parquet", "events.parquet", "files.parquet", "groups.parquet", "links.parquet",
        "made_by.txt",
        "ranks.parquet"]
    r = run("verdict", tmp_path / "store")
    assert r.output.startswith("DEADLOCK:")


def test_json_schema_and_fail_on_hang(tmp_path):
    r = run("ingest", SAMPLES / "gloo_2x2_deadlock", "--json", "--no-store", "--fail-on-hang")
    assert r.exit_code == 1
    s = json.loads(r.output)
    assert s["schema_version"] == 1 and s["verdict"]["kind"] == "deadlock"
    assert s["ranks"]["count"] == 4
    assert set(s) >= {"files_by_kind", "versions", "transports", "communicators", "last_collective", "errors", "unknown_lines"}


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 10)
    r = run("ingest", junk, "--no-store")
    assert r.exit_code == 2
    assert r.output.strip().splitlines()[0] == f"error: {junk}: binary file, not a log"
    r = run("ingest", tmp_path / "nope")
    assert r.exit_code == 2 and "no such file" in r.output


def test_a_missing_path_beside_readable_ones_is_exit_2_after_the_others_are_read(tmp_path):
    r = run("ingest", SAMPLES / "gloo_2x2_deadlock", tmp_path / "nope", "--no-store")
    assert r.exit_code == 2
    assert r.stderr.splitlines()[0] == f"error: {tmp_path / 'nope'}: no such file or folder"
    assert "verdict   DEADLOCK" in r.stdout  # the path that is there is still read


def test_broken_store_is_a_clear_error(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "files.parquet").write_text("not parquet")
    r = run("verdict", tmp_path / "s")
    assert r.exit_code == 2 and "not a readable parquet" in r.output and "Traceback" not in r.output


def test_every_command_has_help_and_is_in_readme():
    readme = (ROOT / "README.md").read_text()
    assert set(main.commands) == {"ingest", "verdict", "diff", "run", "doctor", "watch", "trace", "open", "plot",
                                  "report"}
    for name, cmd in main.commands.items():
        assert cmd.help and cmd.help.strip().splitlines()[-1].strip().startswith("Example: tracekit "), name
        assert re.search(rf"tracekit {name}\b", readme), name


def test_the_package_runs_as_a_module_and_every_command_has_its_help():
    """``python -m tracekit.cli`` is the console script (tests and `tracekit run` start it so)."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "tracekit.cli", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and all(name in p.stdout for name in main.commands)
    for name in main.commands:
        r = run(name, "--help")
        assert r.exit_code == 0 and r.output.startswith(f"Usage: main {name} "), name


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_a_terminal_quiet_in_a_pipe(tmp_path, monkeypatch):
    """Ingest draws a bar that reaches 100% on a terminal; through a pipe stderr holds no bar."""
    from tracekit import ingest as ingest_module
    from tracekit.cli import Progress
    from tracekit.ingest import ingest

    monkeypatch.setattr(ingest_module, "PROGRESS_BYTES", 8 << 20)  # (64 MB batches by default)
    monkeypatch.setattr(ingest_module, "SCANNED_PROGRESS_BYTES", 8 << 20)  # (512 MB with the C scanner)
    big = tmp_path / "run"
    copy_sample("gpu_2x1_bench", big)
    for i in range(3):  # about 3 x 9 MB: several batches, so the bar moves
        (big / f"nccl_copy{i}.log").write_text((SAMPLES / "gpu_2x1_bench" / "nccl.vm.1129.log").read_text() * 350)
    term = _Terminal()
    with Progress("ingest", term) as bar:
        ingest([big], progress=bar)
    drawn = term.getvalue()
    percents = [int(p) for p in re.findall(r"(\d+)%", drawn)]
    assert drawn.count("ingest  [") >= 3 and percents[-1] == 100 and percents == sorted(percents)
    r = CliRunner().invoke(main, ["ingest", str(SAMPLES / "gloo_2x2_deadlock"), "--no-store"])
    assert r.exit_code == 0 and "%" not in r.stderr and "[#" not in r.stderr


def test_version_says_whether_the_c_scanner_is_built():
    from tracekit.parsers import nccl
    out = CliRunner().invoke(main, ["--version"]).output
    assert "0.1.0" in out and ("COLL lines: built" in out) == (nccl._scan is not None)


def files_of(path):
    import polars as pl

    return pl.col("file") == str(path)


def test_open_run_reads_a_fresh_folder_store_and_ingests_a_stale_one(tmp_path):
    """load.open_run owns the store cache: a folder's own store is written once, read back while
    fresh (same tables), and the logs are read again once one of them changes."""
    import os

    from tracekit.load import open_run

    folder = tmp_path / "run"
    copy_sample("gloo_2x2_deadlock", folder)
    first = open_run([folder])
    assert first.wait() == folder / ".tracekit" and first.nothing_read() is None
    again = open_run([folder], no_store=True)
    assert again.target is None
    for name, table in first.store.tables().items():
        assert again.store.tables()[name].equals(table), name
    log = folder / "rank0.log"
    with open(log, "a") as f:
        f.write("a line no parser knows\n")
    later = (folder / ".tracekit" / "files.parquet").stat().st_mtime + 5
    os.utime(log, (later, later))
    fresh = open_run([folder], no_store=True)  # the logs read again (the new line counted), none written
    unknown = {r["file"]: r["unknown"] for r in fresh.store.files.iter_rows(named=True)}
    assert unknown[str(log)] == first.store.files.filter(files_of(log))["unknown"][0] + 1
    assert (folder / ".tracekit" / "files.parquet").stat().st_mtime < later


def test_open_run_raises_one_line_errors(tmp_path):
    import pytest

    from tracekit.errors import InputError
    from tracekit.load import open_run

    with pytest.raises(InputError, match=r"nope: no such file or folder$"):
        open_run([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"empty: no logs, dumps or traces found$"):
        open_run([tmp_path / "empty"])
    with pytest.raises(InputError, match=r"--engine spark: not an engine"):
        open_run([SAMPLES / "gloo_2x2_deadlock"], engine="spark", reuse=False, no_store=True)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "x.bin").write_bytes(b"\0\1\2" * 100)
    nothing = open_run([tmp_path / "bin"])
    assert "no readable file" in str(nothing.nothing_read()) and nothing.wait() is None  # no store written
    assert nothing.notes()[0][0] == "error" and not (tmp_path / "bin" / ".tracekit").exists()


def test_dash_reads_standard_input_as_the_same_file_would_be_read(tmp_path):
    """`kubectl logs POD | tracekit ingest -`: standard input is read as a file (gzip found from its
    content, torchrun's `[rankN]:` and srun --label's `N: ` prefixes taken off), named `<stdin>`."""
    import gzip

    import polars as pl

    from tracekit.load import STDIN_NAME, open_run

    for prefix in ("[rank{r}]:", "{r}: "):
        text = "".join(prefix.format(r=r) + line for r in range(4)
                       for line in (SAMPLES / "gloo_2x2_deadlock" / f"rank{r}.log").open())
        (tmp_path / "pasted.log").write_text(text)
        from_file = open_run([tmp_path / "pasted.log"], no_store=True).store
        r = CliRunner().invoke(main, ["ingest", "-", "--json"], input=gzip.compress(text.encode()))
        assert r.exit_code == 0, r.output
        s = json.loads(r.output)
        assert s["ranks"]["count"] == 4 and s["verdict"]["kind"] == "undecided"
        assert all(e.startswith(f"{STDIN_NAME}:") for e in s["verdict"]["evidence"])
        piped = open_run(["-"], stdin=io.BytesIO(text.encode()))
        copy = next(iter(piped.spooled))
        piped.close()
        assert not Path(copy).exists()  # the copy of standard input is gone once closed
        for name, table in from_file.tables().items():
            if "file" in table.columns:
                named = pl.col("file").cast(pl.Utf8).replace({str(tmp_path / "pasted.log"): STDIN_NAME})
                table = table.with_columns(named.cast(table.schema["file"]))
            ours = piped.store.tables()[name]
            assert ours.drop("size_bytes", strict=False).equals(table.drop("size_bytes", strict=False)), name
    r = run("verdict", "-")  # nothing piped: an empty standard input is bad input, one line
    assert r.exit_code == 2 and r.output.count("\n") == 1 and r.output.startswith("error: ")


def test_the_verdict_comes_first_in_a_pipe_and_wrapped_to_a_terminal():
    from tracekit import verdict
    from tracekit.cli import _summary_text
    from tracekit.ingest import ingest
    from tracekit.view import Summary

    store = ingest([SAMPLES / "gloo_2x2_mismatch"])
    s = Summary.build(store, verdict.decide(store))
    piped = _summary_text(s, None)
    assert piped.startswith("verdict   MISMATCH: rank 1: the ranks' collectives no longer pair up")
    one_line, *rest = piped.splitlines()
    cut = rest.index("")  # the verdict's evidence and notes, then the summary under it
    assert rest[cut + 1].startswith("files     6 ")
    # the cause above its consequences: gloo's abort on rank 1 first, not a peer that closed after it
    errors = next(ln for ln in rest if ln.startswith("errors    ")).replace(str(SAMPLES), "samples")
    assert "first cause: samples/gloo_2x2_mismatch/rank1.log:2: terminate called after throwing" in errors
    shown = _summary_text(s, 80).splitlines()
    head = shown[: next(i for i, ln in enumerate(shown) if ln.startswith("  evidence "))]
    assert len(head) >= 3 and all(ln.startswith(" " * 10) for ln in head[1:])
    assert " ".join(ln.strip() for ln in head) == one_line
    assert all(len(ln) < 80 for ln in shown)
    whole = [ln.rstrip("…") for ln in shown[len(head):]]  # the rest, each line cut to the width
    assert all(b.startswith(w) for w, b in zip(whole, rest, strict=True))


def test_lines_not_understood_are_counted_and_listed_by_block():
    """ms-swift prints the model's config and generation config as JSON and the model as a tree:
    printouts (parsers/printouts.py), known; what is left is counted once, the same in text and JSON."""
    r = run("ingest", SAMPLES / "swift_2x2_wandb", "--no-store")
    unknown = next(ln for ln in r.stdout.splitlines() if ln.startswith("unknown   "))
    s = json.loads(run("ingest", SAMPLES / "swift_2x2_wandb", "--no-store", "--json").output)
    blocks = {b["kind"]: b for b in s["unknown_blocks"]}
    total = sum(s["unknown_lines"].values())
    assert unknown.startswith(f"unknown   {total} line(s) not understood in ")
    assert sum(b["lines"] for b in blocks.values()) == total
    assert "JSON dump" not in blocks and "model printout" not in blocks


def test_a_dump_that_holds_an_error_is_listed_as_one_block(tmp_path):
    """A JSON dump with an error in it is no printout: its lines stay unknown, listed as one block."""
    log = tmp_path / "worker.log"
    log.write_text('{\n  "rank": 1,\n  "error": "RuntimeError: NCCL communicator was aborted",\n'
                   '  "world": 2\n}\n')
    listed = run("ingest", log, "--no-store", "--unknown").stdout
    assert re.search(rf"{re.escape(str(log))}:1-\d: a JSON dump of \d lines: {{", listed), listed
