"""The models the renderers take (tracekit/view.py), built once from a real run's store: the report
and the timeline render from them alone, and say what they said when they read the store."""

import polars as pl

from tests.conftest import SAMPLES
from tracekit import verdict
from tracekit.cli import _load_run
from tracekit.outcome import Kind
from tracekit.reports import report, timeline
from tracekit.view import ChartData, CollectivesView, RunView


def _run(name):
    store = _load_run(str(SAMPLES / name))
    return store, verdict.decide(store)


def test_the_report_renders_from_the_view_alone():
    store, v = _run("gloo_2x2_deadlock")
    view = RunView.build(store, v, "deadlock", "samples/gloo_2x2_deadlock")
    assert v.kind == Kind.DEADLOCK and view.verdict is v
    named = view.places.filter(pl.col("named"))
    assert named["rank"].to_list() == [[r] for r in v.ranks] and "never issued" in named["state"][0]
    assert view.coverage[0].startswith("4 of 4 ranks seen")
    charts, missing = report.charts({"deadlock": ChartData.build(store, v)})
    assert set(charts) == {"progress per rank", "last collective per rank and process group"}
    assert "bus bandwidth by message size" in missing  # gloo on CPU: no bandwidth lines, no Kineto
    r = report.assemble(view, None, charts, missing, ["tracekit report x"])
    md = report.markdown(r)
    assert md.startswith("### tracekit report: deadlock") and f"**{v.kind.name}**" in md
    assert "| rank 3 | all_gather #8 | default_pg (pg 0) |" in md and "| ranks 0-2 | all_reduce #9 |" in md
    assert report.html(r).count("<svg") == 2


def test_the_timeline_renders_from_the_collectives_view():
    for name, axis in (("gloo_2x2_deadlock", "time"), ("gpu_2x1_bench", "sequence")):
        store, v = _run(name)
        cv = CollectivesView.build(store)
        assert cv.axis == axis and cv.collectives.height
        assert set(cv.hosts) == set(cv.collectives["rank"].to_list())
        if axis == "sequence":  # no timed source: x is the sequence number, 1 ms each, and no end
            assert (cv.collectives["start_ns"] == cv.collectives["seq"] * 1_000_000).all()
            assert cv.collectives["end_ns"].null_count() == cv.collectives.height
        tl = timeline.render(cv, v)
        assert len(tl.slices) == cv.collectives.height and any(s.highlight for s in tl.slices) == (axis == "time")
        assert tl.axis == axis and len(tl.processes) == len(cv.hosts)


def test_chart_data_holds_what_the_charts_draw():
    store, v = _run("gloo_2x2_deadlock")
    c = ChartData.build(store, v)
    assert c.source and c.timed.height and c.main_pg in c.labels
    behind = c.last.filter((pl.col("pg") == c.main_pg) & (pl.col("behind") > 0))["rank"].to_list()
    assert behind == v.ranks  # the rank the deadlock names is the one behind on its group
    assert c.ranks.filter(pl.col("named"))["rank"].to_list() == v.ranks
    store, v = _run("zero3_slow_2x2")
    c = ChartData.build(store, v)
    assert v.kind == Kind.SLOW_PROGRESS
    # a slow run's Flight Recorder dumps, each one's newest entry per rank: more than one per rank
    assert c.dump_ends.height > c.dump_ends["rank"].n_unique() >= 2 and c.dump_ends["t"].null_count() == 0
