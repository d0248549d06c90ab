"""Issue 30, "Hostile input": each line of the issue, on copies of the sample runs, in a child process
whose memory is capped and measured (its resident set, from wait4) and whose time is bounded."""

from __future__ import annotations

import os
import pickle
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tracekit import escape
from tracekit.parsers import flight_recorder as fr

from conftest import ROOT, SAMPLES

CAP = 3 << 30  # address space of a child: a runaway fails there, not on the shared machine


def child(code: str, timeout: float = 120, cap: int = CAP) -> tuple[int, str, float]:
    """Run ``code`` in a fresh Python with its address space capped; (exit code, output, peak
    resident set in MB). A child that outlives ``timeout`` is killed and the test fails."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         preexec_fn=limit, env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            os.wait4(p.pid, 0)
            pytest.fail(f"still running after {timeout:.0f}s: {code[:200]}")
        time.sleep(0.05)
    out = p.stdout.read().decode(errors="replace")
    return os.waitstatus_to_exitcode(status), out, usage.ru_maxrss / 1024


# --- Flight Recorder pickles: decoded within limits whatever the sharing --------------------------

def shared_2_40(path: Path) -> None:
    """/work/shared/probe/exp_pickle.py's dump: pg_config's ranks, a list shared 2^40 ways (872 bytes)."""
    P = lambda i: b"r" + struct.pack("<I", i) + b"0"  # noqa: E731 - the opcodes, as the probe writes them
    G = lambda i: b"j" + struct.pack("<I", i)  # noqa: E731
    S = lambda s: b"X" + struct.pack("<I", len(s)) + s.encode()  # noqa: E731
    e = b"]K\x01a" + P(0) + b"".join(b"](" + G(i) + G(i) + b"e" + P(i + 1) for i in range(40)) + G(40)
    path.write_bytes(b"\x80\x02}(" + S("entries") + b"]}(" + S("profiling_name") + S("gloo:all_reduce")
                     + b"ua" + S("pg_config") + b"}(" + S("") + b"}(" + S("ranks") + e + b"uuu.")


LOAD = "try:\n    fr.load(data)\nexcept fr.InputError as e:\n    print('refused:', e)\n"


def test_a_pickle_shared_2_40_ways_is_refused_in_bounded_memory_and_time(tmp_path):
    shared_2_40(tmp_path / "fr_rank0.pkl")
    assert (tmp_path / "fr_rank0.pkl").stat().st_size < 1000
    rc, out, rss = child("from tracekit.parsers import flight_recorder as fr\n"
                         f"data = open({str(tmp_path / 'fr_rank0.pkl')!r}, 'rb').read()\n"
                         "assert fr.looks_like(data)\n"
                         + LOAD, timeout=60)
    assert rc == 0 and out.startswith("refused: more than 4,000,000 items"), out
    assert rss < 1024, f"{rss:.0f} MB resident"


def test_ten_million_shared_entries_are_refused_in_bounded_memory(tmp_path):
    # 10^7 references to one entry: 20 MB of pickle, 10^7 rows and gigabytes if decoded
    entry = {"profiling_name": "nccl:all_reduce", "process_group": ("0", "default_pg"), "input_sizes": [[8]],
             "collective_seq_id": 1, "record_id": 0}
    data = pickle.dumps({"entries": [entry] * 10_000_000, "pg_config": {}}, protocol=4)
    (tmp_path / "fr_rank0.pkl").write_bytes(data)
    del data
    rc, out, rss = child("from tracekit.parsers import flight_recorder as fr\n"
                         f"data = open({str(tmp_path / 'fr_rank0.pkl')!r}, 'rb').read()\n"
                         + LOAD, timeout=120)
    assert rc == 0 and out.startswith("refused: more than 4,000,000 items"), out
    assert rss < 1024, f"{rss:.0f} MB resident"


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_pickles_that_call_anything_are_refused_with_one_line(protocol):
    class Evil:
        def __reduce__(self):
            return (os.system, ("touch /tmp/tracekit-pwned",))

    for payload in (Evil(), {"entries": [Evil()]}, {"entries": [], "x": eval}):
        data = pickle.dumps(payload, protocol=protocol)
        refused = r"^refusing to unpickle (posix\.system|os\.system|builtins\.eval|__builtin__\.eval) "
        with pytest.raises(fr.InputError, match=refused):
            fr.load(data)
    assert not os.path.exists("/tmp/tracekit-pwned")


def test_what_a_dump_legitimately_holds_is_decoded():
    # 2,000 entries of ~20 fields with stack frames, and pg_config of 16k ranks, as a list and as text
    entries = [{"frames": [{"name": f"f{j}", "filename": "train.py", "line": j} for j in range(20)],
                "record_id": i, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": i,
                "p2p_seq_id": 0, "op_id": i, "profiling_name": "nccl:all_reduce", "time_created_ns": i,
                "input_sizes": [[4096, 1024]], "input_dtypes": ["Float"], "output_sizes": [[4096, 1024]],
                "output_dtypes": ["Float"], "state": "completed", "time_discovered_started_ns": i,
                "time_discovered_completed_ns": i, "retired": True, "timeout_ms": 600000, "is_p2p": False}
               for i in range(2000)]
    groups = {str(g): {"name": str(g), "desc": "tp", "ranks": list(range(g * 8, g * 8 + 8))}
              for g in range(2048)}
    groups["0"] = {"name": "0", "desc": "default_pg", "ranks": list(range(16384))}
    groups["1"] = {"name": "1", "desc": "dp", "ranks": str(list(range(16384)))}
    for protocol in (2, 5):
        dump = {"version": "2.10", "entries": entries, "pg_config": groups}
        obj = fr.load(pickle.dumps(dump, protocol=protocol))
        assert len(obj["entries"]) == 2000 and len(obj["pg_config"]["0"]["ranks"]) == 16384
        assert len(fr.parse(obj, "fr_rank3.pkl").tables["collectives"]) == 2000


# --- escaping for each destination -----------------------------------------------------------------

def test_terminal_names_show_control_characters_and_bad_bytes_escaped():
    fake = "rank3\nverdict   HEALTHY: every rank finished\nx.log"
    assert escape.name(fake) == "rank3\\nverdict   HEALTHY: every rank finished\\nx.log"
    assert escape.name(os.fsdecode(b"rank1\xff.log")) == "rank1\\xff.log"
    assert escape.name("a\x1b[31mred\x07\r\u2028") == "a\\x1b[31mred\\x07\\r\\u2028"
    assert escape.line("col\tcol\x00") == "col\tcol\\x00"
    assert escape.name("plain/rank0.log") == "plain/rank0.log"
    assert escape.text(os.fsdecode(b"r\xfe.log")).encode("utf-8") == b"r\\xfe.log"


def test_html_and_markdown_keep_markup_as_text():
    evil = 'RuntimeError: <script>alert(1)</script> <img src=x onerror="alert(2)"> </details>'
    h = escape.html(evil)
    assert "<" not in h and '"' not in h and "&lt;script&gt;" in h
    md = escape.markdown(evil)
    assert "<" not in md and "&lt;/details>" in md
    assert escape.markdown("*bold* [link](http://x) | a") == "\\*bold\\* \\[link\\](http://x) \\| a"
    assert escape.markdown("- 12. ranks 0-2") == "\\- 12. ranks 0-2" and escape.markdown("12. x") == "12\\. x"
    assert escape.markdown_span("a ``b`` c") == "```a ``b`` c```"
    block = escape.markdown_code("line ```\n</details>\nend")
    assert block.startswith("````\n") and block.endswith("\n````") and "</details>" in block


def test_shell_words_paste_back_as_the_same_command(tmp_path):
    argv = ["torchrun", "--nproc_per_node=2", "train.py", "--name", "it's a $HOME `x`", "a\nb", "\x1b[31m",
            "é"]
    line = escape.shell(argv)
    assert "\n" not in line and "\x1b" not in line
    got = subprocess.run(["bash", "-c", f"printf '%s\\0' {line}"], capture_output=True, check=True).stdout
    assert got.split(b"\0")[:-1] == [a.encode() for a in argv]


# --- tracekit open ---------------------------------------------------------------------------------

def test_open_refuses_a_bad_port_or_timeout_with_one_line(tmp_path):
    from click.testing import CliRunner

    from tracekit.cli import main
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": []}')
    for args, said in ((["--port", "99999"], "error: Invalid value for '--port': 99999 is not in the range"),
                       (["--timeout", "inf"], "error: --timeout inf: give a number of seconds above 0"),
                       (["--timeout", "nan"], "error: --timeout nan: give a number of seconds above 0"),
                       (["--timeout", "-1"], "error: --timeout -1.0: give a number of seconds above 0")):
        r = CliRunner().invoke(main, ["open", str(trace), *args])
        assert r.exit_code == 2 and r.output.startswith(said) and r.output.count("\n") == 1, r.output
    os.mkfifo(tmp_path / "fifo.json")
    r = CliRunner().invoke(main, ["open", str(tmp_path / "fifo.json"), "--timeout", "1"])
    assert r.exit_code == 2
    assert r.output == f"error: {tmp_path / 'fifo.json'}: cannot read: a FIFO, not a file: skipped\n"


def test_open_serves_its_file_once_to_one_of_three_clients(tmp_path):
    import threading
    import urllib.error
    import urllib.request

    from tracekit import serve
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": []}')
    server = serve.OneShot(trace, 0)  # any free port: the server says which
    assert server.port > 0
    served = threading.Thread(target=server.wait, args=(30,))
    served.start()
    start, got = threading.Barrier(3), []

    def fetch():
        start.wait()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/t.json", timeout=10) as r:
                got.append(r.read())
        except (urllib.error.HTTPError, OSError) as e:
            got.append(getattr(e, "code", "refused"))
    clients = [threading.Thread(target=fetch) for _ in range(3)]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    served.join()
    assert sorted(map(str, got)).count(str(b'{"traceEvents": []}')) == 1
    assert all(g == b'{"traceEvents": []}' or g in (410, "refused") for g in got), got
