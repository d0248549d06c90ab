"""A report is the same page every time it is made from the same run: its charts do not follow the
order a polars group-by happens to give (which changes with what the process did before)."""

import matplotlib
import polars as pl
import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES
from tracekit.cli import main


@pytest.mark.parametrize("sample", ["gpu_nccl_crash", "gpu_2x1_healthy"])
def test_the_same_run_gives_the_same_report(sample, monkeypatch):
    monkeypatch.setitem(matplotlib.rcParams, "svg.hashsalt", "tracekit")  # (else SVG ids are random)
    pages = []
    for other_work in (0, 5, 11):
        for _ in range(other_work):  # what the process did before: a group-by's order follows it
            pl.DataFrame({"a": list(range(2000))}).group_by("a").len()
        r = CliRunner().invoke(main, ["report", str(SAMPLES / sample), "-o", "-"])
        assert r.exit_code == 0, r.output
        pages.append(r.output)
    assert "<svg" in pages[0] and pages[0] == pages[1] == pages[2]
