"""The x axis of `tracekit trace`, said in the output and carried in the trace itself: a run with
no timed source is drawn on sequence numbers, and its ranks and an instant at its start say so."""

from click.testing import CliRunner
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace

from tests.conftest import SAMPLES
from tracekit.cli import main
from tracekit.reports.timeline import AXES, SEQUENCE_MARK


def trace(tmp_path, *args):
    out = tmp_path / "t.pftrace"
    r = CliRunner().invoke(main, ["trace", *map(str, args), "-o", str(out)])
    assert r.exit_code == 0, r.output
    t = Trace()
    t.ParseFromString(out.read_bytes())
    names = [p.track_descriptor.process.process_name for p in t.packet if p.track_descriptor.process.process_name]
    instants = [p.track_event.name for p in t.packet if p.track_event.type == p.track_event.TYPE_INSTANT]
    return r.output, names, instants


def test_nccl_only_run_is_on_a_sequence_axis_and_says_so(tmp_path):
    out, names, instants = trace(tmp_path, SAMPLES / "gpu_2x1_bench")
    assert f"axis sequence ({AXES['sequence']})" in out
    assert names == [f"vm/rank {r}{SEQUENCE_MARK}" for r in (0, 1)]
    assert "x axis: sequence number, not time" in instants


def test_a_timed_run_is_on_time_and_a_mixed_pair_names_each_axis(tmp_path):
    out, names, instants = trace(tmp_path, SAMPLES / "gloo_2x2_deadlock")
    assert f"axis time ({AXES['time']})" in out and not any(SEQUENCE_MARK in n for n in names)
    out, names, _ = trace(tmp_path, SAMPLES / "gloo_2x2_deadlock", "--diff", SAMPLES / "gpu_2x1_bench")
    assert f"axis mixed (A: {AXES['time']}; B: {AXES['sequence']})" in out
    assert sum(SEQUENCE_MARK in n for n in names) == 2 and sum(n.startswith("A ") for n in names) == 4


def test_help_says_what_each_axis_means():
    r = CliRunner().invoke(main, ["trace", "--help"])
    for word in ("time ", "sequence ", "mixed "):
        assert f"\n    {word}" in r.output.replace("  ", " ") or word.strip() in r.output
    assert "NOT time" in r.output and SEQUENCE_MARK.strip() in r.output
