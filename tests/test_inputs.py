"""The input layer (tracekit/inputs.py) on real files: a copy of a sample run with hostile things
added beside its logs, each giving one note while the rest is read."""

from __future__ import annotations

import gzip
import json
import mmap
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tracekit import inputs
from tracekit.inputs import Limits

from conftest import ROOT, SAMPLES


@pytest.fixture
def run(tmp_path) -> Path:
    r = tmp_path / "run"
    shutil.copytree(SAMPLES / "gloo_2x2_crash", r)
    return r


def names(walk: inputs.Walk, root: Path) -> list[str]:
    return [os.path.relpath(f.path, root) for f in walk.files]


def notes_of(walk: inputs.Walk) -> dict[str, str]:
    return {os.path.basename(n.name): n.what for n in walk.notes}


SAMPLE_FILES = sorted(os.listdir(SAMPLES / "gloo_2x2_crash"))


def test_a_fifo_device_and_socket_are_skipped_and_the_walk_never_blocks(run):
    import socket
    os.mkfifo(run / "rank9.log")
    (run / "zero.log").symlink_to("/dev/zero")  # a device, whatever the link says
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(run / "sock.log"))
    try:
        w = inputs.walk([run])
    finally:
        s.close()
    assert names(w, run) == SAMPLE_FILES
    got = notes_of(w)
    assert got["rank9.log"] == "a FIFO, not a file: skipped"
    assert got["sock.log"] == "a socket, not a file: skipped"
    assert got["zero.log"] == "a symbolic link out of the folder (/dev/zero): not followed"
    # named on the command line, the device is not read either
    assert inputs.walk(["/dev/zero"]).notes[0].what == "a character device, not a file: skipped"
    r = inputs.read("/dev/zero")
    assert r.data is None and r.notes[0].what == "a character device, not a file: skipped"


def test_links_loops_dangling_and_outside_are_notes_and_inside_links_are_read_once(run, tmp_path):
    (run / "a").symlink_to("b")
    (run / "b").symlink_to("a")
    (run / "gone.log").symlink_to("/nonexistent/x.log")
    (tmp_path / "secret").write_text("root:x:0:0\n")
    (run / "passwd.log").symlink_to(tmp_path / "secret")
    (run / "again.log").symlink_to("rank3.log")  # the same file twice: read once
    (run / "sub").mkdir()
    (run / "sub" / "up").symlink_to("..")  # a folder loop through a link
    w = inputs.walk([run])
    assert names(w, run) == SAMPLE_FILES
    got = notes_of(w)
    assert got["a"] == got["b"] == "a symbolic link loop: skipped"
    assert got["gone.log"] == "a symbolic link that leads nowhere: skipped"
    assert got["passwd.log"].startswith("a symbolic link out of the folder (")
    assert all(n.skipped for n in w.notes)
    # a link to a file inside the folder is read, when its target is not read already
    w = inputs.walk([run], skip_file=lambda folder, name: name == "rank3.log")
    assert "again.log" in names(w, run) and "rank3.log" not in names(w, run)


def _unprivileged(code: str) -> subprocess.CompletedProcess:
    """``code`` in a child that file permissions apply to (root drops the capabilities that pass them)."""
    cmd = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root without setpriv: permissions cannot be tested")
        cmd = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_a_file_and_a_folder_without_permission_are_notes_and_the_rest_is_read(run):
    (run / "sub").mkdir()
    (run / "sub" / "x.log").write_text("hello\n")
    os.chmod(run / "sub", 0)
    os.chmod(run / "rank3.log", 0)
    try:
        got = _unprivileged(
            "import json, sys; from tracekit import inputs\n"
            f"w = inputs.walk([{str(run)!r}])\n"
            "reads = [inputs.read(f) for f in w.files]\n"
            "print(json.dumps({'notes': [str(n) for n in w.notes],"
            " 'read': [(r.found.name, r.data is not None, r.error) for r in reads]}))")
    finally:
        os.chmod(run / "sub", 0o755)
        os.chmod(run / "rank3.log", 0o644)
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert out["notes"] == [f"{run / 'sub'}: cannot list the folder: permission denied"]
    read = {os.path.basename(n): (ok, err) for n, ok, err in out["read"]}
    assert read["rank3.log"] == (False, "cannot read: permission denied")
    assert all(ok for n, (ok, _) in read.items() if n != "rank3.log") and len(read) == 6


def test_names_that_are_not_utf8_or_hold_a_newline_are_read_and_shown_escaped(run):
    raw = os.fsencode(run) + b"/rank1\xff.log"
    shutil.copy(run / "rank1.log", raw)
    shutil.move(run / "rank3.log", run / "rank3\nverdict   HEALTHY: fake\nx.log")
    w = inputs.walk([run])
    shown = sorted(os.path.basename(f.name) for f in w.files)
    assert "rank1\\xff.log" in shown and "rank3\\nverdict   HEALTHY: fake\\nx.log" in shown
    assert all("\n" not in f.name for f in w.files)
    for f in w.files:
        f.name.encode("utf-8")  # valid UTF-8: tables and JSON take it
        assert inputs.read(f).data  # read under its own bytes
    assert not w.notes


def test_gzip_is_streamed_and_cut_at_its_limit(tmp_path):
    line = b"[rank0]:[W1203 16:16:47.123456 ProcessGroupGloo.cpp:123] some warning text\n"
    text = line * ((8 << 20) // len(line))
    (tmp_path / "w.log.gz").write_bytes(gzip.compress(text, 9))
    r = inputs.read(str(tmp_path / "w.log.gz"), Limits(gzip_bytes=1 << 20))
    assert r.gzip and len(r.data) == 1 << 20 and text.startswith(r.data)
    assert [n.what for n in r.notes] == ["cut at 1.0 MB decompressed: the rest not read"]
    whole = inputs.read(str(tmp_path / "w.log.gz"))  # past 1 MB: in an anonymous map, held once
    assert isinstance(whole.data, mmap.mmap) and whole.data[:] == text and not whole.notes
    # two members, as `cat a.gz b.gz` makes; then a stream cut short
    (tmp_path / "two.gz").write_bytes(gzip.compress(b"a\n") + gzip.compress(b"b\n"))
    assert inputs.read(str(tmp_path / "two.gz")).data == b"a\nb\n"
    (tmp_path / "cut.gz").write_bytes(gzip.compress(text)[:20000])
    cut = inputs.read(str(tmp_path / "cut.gz"))
    assert text.startswith(cut.data) and len(cut.data) > 0
    assert cut.error == "truncated gzip stream: read what it held"


def test_a_line_past_the_limit_is_cut_and_the_other_lines_are_kept(tmp_path):
    f = tmp_path / "big.log"
    f.write_bytes(b"first\n" + b"a" * (3 << 20) + b"\nlast\n" + b"b" * (1 << 20 | 5))
    r = inputs.text(inputs.read(str(f)), Limits(line_bytes=1 << 20))
    lines = bytes(r.data).split(b"\n")
    assert lines[0] == b"first" and lines[1] == b"a" * (1 << 20) and lines[2] == b"last"
    assert lines[3] == b"b" * (1 << 20)
    assert [(n.line, n.what) for n in r.notes] == [
        (2, f"a line of {3 << 20:,} bytes cut at 1.0 MB"),
        (4, f"a line of {(1 << 20) + 5:,} bytes cut at 1.0 MB")]
    # a line just under the limit is kept whole
    f.write_bytes(b"c" * ((1 << 20) - 1) + b"\n")
    assert inputs.text(inputs.read(str(f))).data == b"c" * ((1 << 20) - 1) + b"\n"


def test_nul_bytes_are_noise_and_the_log_is_read(run):
    data = (run / "rank3.log").read_bytes()
    first, rest = data.split(b"\n", 1)
    (run / "rank3.log").write_bytes(first + b"\n\x00\x00\x00\x00\n" + rest)
    raw = inputs.read(str(run / "rank3.log"))
    assert raw.data == data[:len(first) + 1] + b"\x00" * 4 + b"\n" + rest and not raw.notes  # as it is
    r = inputs.text(raw)
    assert r.data == first + b"\n\n" + rest
    assert r.error == "4 NUL byte(s) taken out as noise"


def test_a_settled_big_file_is_mapped_under_a_lease_that_holds_off_truncation(tmp_path):
    f = tmp_path / "nccl.0.log"
    body = b"node0:1000:2000 [0] NCCL INFO AllReduce: opCount 1 count 8 datatype 9\n" * 40000
    f.write_bytes(body)
    live = inputs.read(str(f))
    assert type(live.data) is bytes and live.data == body  # written just now: read
    old = time.time() - 60
    os.utime(f, (old, old))
    r = inputs.read(str(f))
    if not isinstance(r.data, mmap.mmap):
        pytest.skip("no read lease on this filesystem: settled files are read")
    assert r.data[:] == body
    # another process truncates the file (as `truncate -s 4096` does): it waits for the lease
    child = subprocess.Popen([sys.executable, "-c", f"import os; os.truncate({str(f)!r}, 4096)"])
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=1.0)
    assert r.data[-len(body) // 2:] == body[-len(body) // 2:]  # every page still there: no SIGBUS
    del r
    assert child.wait(timeout=60) == 0 and f.stat().st_size == 4096


def test_a_file_a_writer_holds_open_is_read_not_mapped(tmp_path):
    f = tmp_path / "nccl.0.log"
    f.write_bytes(b"x\n" * (1 << 20))
    old = time.time() - 60
    os.utime(f, (old, old))
    with open(f, "ab"):
        r = inputs.read(str(f))
    assert type(r.data) is bytes and r.data == b"x\n" * (1 << 20) and not r.notes


def test_an_ordinary_file_comes_back_as_it_is(run):
    shutil.copytree(SAMPLES / "gloo_2x2_deadlock", run / "deadlock")  # pickles: NUL bytes kept by read
    for f in inputs.walk([run]).files:
        r = inputs.read(f)
        assert r.data == Path(f.path).read_bytes() and not r.notes and r.size == len(r.data)
        if f.path.endswith((".log", ".txt")):
            assert inputs.text(r).data == Path(f.path).read_bytes() and not r.notes
    assert inputs.read(str(run / "missing.log")).error == "cannot read: no such file"
