"""Perfetto traces read back with the perfetto package's own protobuf classes."""

import json
from collections import Counter, defaultdict

from click.testing import CliRunner
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TrackEvent

from tests.conftest import SAMPLES
from tracekit.cli import main


def read(path):
    t = Trace()
    t.ParseFromString(path.read_bytes())
    return t


def check_well_formed(t):
    """uuids unique and declared, BEGIN/END balanced per track, every flow has both ends."""
    uuids = [p.track_descriptor.uuid for p in t.packet if p.HasField("track_descriptor")]
    assert len(uuids) == len(set(uuids))
    depth, flows_out, flows_end = defaultdict(int), Counter(), Counter()
    for p in t.packet:
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        assert e.track_uuid in uuids
        if e.type == TrackEvent.TYPE_SLICE_BEGIN:
            depth[e.track_uuid] += 1
        elif e.type == TrackEvent.TYPE_SLICE_END:
            depth[e.track_uuid] -= 1
            assert depth[e.track_uuid] >= 0
        flows_out.update(e.flow_ids)
        flows_end.update(e.terminating_flow_ids)
    assert all(v == 0 for v in depth.values())
    assert set(flows_out) == set(flows_end) and flows_end and all(v == 1 for v in flows_end.values())
    return flows_end


def test_deadlock_trace(tmp_path):
    out = tmp_path / "d.pftrace"
    r = CliRunner().invoke(main, ["trace", str(SAMPLES / "gloo_2x2_deadlock"), "-o", str(out), "--json-out", str(tmp_path / "d.json")])
    assert r.exit_code == 0, r.output
    t = read(out)
    flows = check_well_formed(t)
    procs = sorted(p.track_descriptor.process.process_name for p in t.packet if p.track_descriptor.HasField("process"))
    assert procs == [f"vm/rank {r}" for r in range(4)]
    names = [p.track_event.name for p in t.packet if p.track_event.type == TrackEvent.TYPE_SLICE_BEGIN]
    hot = [n for n in names if n.startswith("! ")]
    assert len(hot) == 3 and all("all_reduce #9" in n for n in hot)  # ranks 0-2 wait in it, rank 3 never issued it
    instants = [p.track_event.name for p in t.packet if p.track_event.type == TrackEvent.TYPE_INSTANT]
    assert instants == ["rank 3 stops here (deadlock)"]
    assert len(flows) == 9  # seq 0-8 were issued by all four ranks; seq 9 only by three
    js = json.loads((tmp_path / "d.json").read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in js) == len(names)
    assert {e["args"]["name"] for e in js if e["ph"] == "M" and e["name"] == "process_name"} == set(procs)


def test_diff_trace_puts_both_runs_in_one_file(tmp_path):
    out = tmp_path / "dd.pftrace"
    r = CliRunner().invoke(main, ["trace", str(SAMPLES / "gloo_1x4_healthy"), "--diff", str(SAMPLES / "gloo_2x2_healthy"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    t = read(out)
    check_well_formed(t)
    procs = [p.track_descriptor.process.process_name for p in t.packet if p.track_descriptor.HasField("process")]
    assert sum(p.startswith("A ") for p in procs) == 4 and sum(p.startswith("B ") for p in procs) == 4


def test_trace_of_nvrx_dumps(corpus, tmp_path):
    out = tmp_path / "nv.pftrace"
    r = CliRunner().invoke(main, ["trace", str(corpus / "nvrx_fr/gpu_error_1st"), "-o", str(out)])
    assert r.exit_code == 0, r.output
    t = read(out)
    check_well_formed(t)
    assert sum(p.track_descriptor.HasField("process") for p in t.packet) == 16


def test_trace_without_collectives_is_a_clear_error(tmp_path):
    (tmp_path / "x.log").write_text("hello\n")
    r = CliRunner().invoke(main, ["trace", str(tmp_path), "-o", str(tmp_path / "x.pftrace")])
    assert r.exit_code == 2 and "no collectives" in r.output


def test_open_serves_the_trace_once_with_cors(tmp_path):
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    f = tmp_path / "run.pftrace"
    assert CliRunner().invoke(main, ["trace", str(SAMPLES / "gloo_2x2_deadlock"), "-o", str(f)]).exit_code == 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-m", "tracekit.cli", "open", str(f), "--port", str(port), "--timeout", "30"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    link = p.stdout.readline().strip()
    assert link == f"open https://ui.perfetto.dev/#!/?url=http://127.0.0.1:{port}/run.pftrace"
    for _ in range(50):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/run.pftrace", timeout=5) as r:
                assert r.headers["Access-Control-Allow-Origin"] == "https://ui.perfetto.dev"
                assert r.read() == f.read_bytes()
            break
        except OSError:
            time.sleep(0.1)
    assert p.wait(timeout=10) == 0
