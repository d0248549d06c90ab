"""One figure, one value: step time, collectives per second and lateness are each worked out by one
function of tracekit/figures.py, and every place that shows them (diff, the plots, the report, the
verdict) shows that value, on every sample."""

import re

import polars as pl
import pytest

from tests.conftest import SAMPLES
from tracekit import diff, figures, verdict
from tracekit.ingest import ingest

RUNS = sorted(d.name for d in SAMPLES.iterdir() if d.is_dir() and d.name not in ("wild", "repro"))
STORES: dict = {}


def store(name):
    if name not in STORES:
        STORES[name] = ingest([SAMPLES / name])
    return STORES[name]


@pytest.mark.parametrize("name", RUNS)
def test_diff_shows_the_figures_functions_values(name):
    s = store(name)
    c = diff.compare(s, s)
    shown = {row.what: row.a.value for row in c.figures}
    assert shown["step time, median"] == figures.step_median(s).value
    assert shown["step time, first step"] == figures.step_first(s).value
    assert shown["collectives per second"] == figures.collective_rate(s).value


@pytest.mark.parametrize("name", RUNS)
def test_lateness_per_rank_and_the_latest_rank_agree(name):
    s = store(name)
    late, source = figures.lateness(s)
    top = figures.latest_rank(s)
    if not late.height:
        assert top is None
        return
    per = figures.rank_lateness(late)
    assert per["times_last"].sum() >= per["of"][0]  # every shared collective has a last rank (ties: several)
    row = per.filter(pl.col("rank") == top["rank"]).row(0, named=True)
    assert row["late_ms"] == top["late_ms"] and row["times_last"] == top["times_last"] == per["times_last"].max()
    # the median rank's lateness is 0 in each collective: the medians of the ranks straddle 0
    assert per["late_ms"].min() <= 0 <= per["late_ms"].max()


def test_the_straggler_plot_draws_the_figures_the_verdict_would_quote(tmp_path):
    """samples/gloo_1x4_straggler: rank 2 is last in 47 of 65 collectives, 31 of them by more than
    5 ms (a median 50.5 ms then), 2.1 ms over all 65: the plot's labels are these figures."""
    s = store("gloo_1x4_straggler")
    top = figures.latest_rank(s)
    assert (top["rank"], top["times_last"], top["of"], top["times_late"]) == (2, 47, 65, 31)
    assert round(top["late_ms"], 1) == 2.1 and round(top["late_when_late_ms"], 1) == 50.5


@pytest.mark.parametrize("name", ["zero3_slow_2x2", "gloo_1x4_straggler"])
def test_the_verdict_quotes_the_same_figures(name):
    s = store(name)
    v = verdict.decide(s).summary
    rate = re.search(r"about ([\d.]+) collectives/s", v)
    if rate:
        assert float(rate.group(1)) == round(figures.collective_rate(s).value, 2)
    late = re.search(r"enters (\d+) of (\d+) collectives last", v)
    if late:
        top = figures.latest_rank(s)
        assert (int(late.group(1)), int(late.group(2))) == (top["times_last"], top["of"])
        assert "every time" not in v or top["times_last"] == top["of"]
    assert rate or late
