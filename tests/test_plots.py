"""`tracekit plot` on real runs: the charts agree with the verdict (stuck marks only in a hang, the
straggler marked, each rank's wait after its last collective drawn), name groups by what they are,
and nothing is written where there is nothing to draw. (SVG keeps each text as a comment.)"""

import re

import matplotlib.image as mpimg
import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES
from tracekit.cli import main


def plot(tmp_path, *runs, fmt="svg"):
    args = ["plot", str(SAMPLES / runs[0]), "-o", str(tmp_path), "--format", fmt]
    if len(runs) > 1:
        args += ["--diff", str(SAMPLES / runs[1])]
    r = CliRunner().invoke(main, args)
    return r, {p.stem: (p.read_text() if fmt == "svg" else p) for p in tmp_path.iterdir()}


def drawn(path):
    img = mpimg.imread(path)
    return img.shape[0] > 200 and img.shape[1] > 500 and img[..., :3].std() > 0.05


def test_a_deadlock_and_a_bench_give_every_chart_they_have_data_for(tmp_path):
    r, charts = plot(tmp_path, "gloo_2x2_deadlock", "gpu_2x1_bench", fmt="png")
    assert r.exit_code == 0, r.output
    # the bench has NCCL COLL lines only: sequence numbers but no times, so no progress chart of it
    assert sorted(charts) == ["bandwidth", "last_collective", "last_collective_b", "progress"]
    assert "progress_b.png not written: no collective with a time" in r.output
    assert all(drawn(p) for p in charts.values())


def test_deadlock_marks_the_stuck_rank_and_draws_each_ranks_wait(tmp_path):
    r, charts = plot(tmp_path, "gloo_2x2_deadlock")
    assert r.exit_code == 0, r.output
    svg = charts["progress"]
    assert "rank 3: stops at #8, never issued #9" in svg and "rank 0" in svg
    assert "1 idle stretch cut out" in svg  # 4 of its 4.7 s are data loading: cut, not drawn flat
    # the lanes at the end: who waits in what, and where the missing rank is instead
    assert "in all_reduce #9, not completed: waits for the others" in svg and "ranks 0-2" in svg
    where = re.search(r"next_batch_stuck \((\S+)\)", (SAMPLES / "gloo_2x2_deadlock/stacks_rank3.txt").read_text())[1]
    where = "/".join(where.split("/")[-2:]) if where.startswith("/") else where  # absolute paths end-shortened
    assert f"behind: never issued #9; main thread in next_batch_stuck ({where})" in svg
    assert "all_gather #8" in charts["last_collective"] and "behind: never issued the next one" in charts["last_collective"]


def test_one_rank_one_collective_behind_is_visible(tmp_path):
    r, charts = plot(tmp_path, "swift_2x2_wandb")
    assert r.exit_code == 0, r.output
    svg = charts["progress"]
    assert "rank 0: stops at #140, never issued #141" in svg
    assert "all_gather #140" in svg and "all_gather #141" in svg and "ranks 1-3" in svg
    assert "main thread in AsyncioManager.run (wandb/sdk/lib/asyncio_manager.py:145)" in svg
    assert "no log grew for 20 s before the dump" in svg


def test_slow_progress_is_not_drawn_as_a_hang(tmp_path):
    r, charts = plot(tmp_path, "zero3_slow_2x2")
    assert r.exit_code == 0, r.output
    svg, strip = charts["progress"], charts["last_collective"]
    assert "stops at" not in svg and "never issued" not in svg and "the end of the record" not in svg
    assert "rank 2: its last dump ends at #166" in svg and "the run moved between dumps" in svg
    assert "its record ends earlier (the run went on)" in strip and "never issued" not in strip
    assert "behind the frontier" not in strip and "colorbar" not in strip


def test_the_straggler_is_marked(tmp_path):
    r, charts = plot(tmp_path, "gloo_1x4_straggler")
    assert r.exit_code == 0, r.output
    svg = charts["progress"]
    assert "rank 2: the straggler" in svg and "ms after the median rank entered the same collective" in svg
    assert "rank 2 enters 47 of 65 collectives last" in svg and "stops at" not in svg
    # figures.rank_lateness's values, as the verdict would quote them (tests/test_cli_figures.py)
    assert "rank 2: last in 47 of 65, median 2.1 ms; 31 of 65 over 5 ms (median 50.5)" in svg


def test_the_straggler_labels_cover_no_point():
    """Each rank's line of figures sits against the right edge, past the latest point drawn."""
    import matplotlib.pyplot as plt

    from tracekit import verdict
    from tracekit.cli import _load_run
    from tracekit.reports import plots
    from tracekit.view import ChartData

    store = _load_run(str(SAMPLES / "gloo_1x4_straggler"))
    v = verdict.decide(store)
    c = ChartData.build(store, v)
    fig, ax = plt.subplots(figsize=(11, 2.6))
    plots._lateness(ax, c, c.main_pg, set(v.ranks), v)
    renderer = fig.canvas.get_renderer()
    right = max(x for line in ax.lines for x, _ in ax.transData.transform(line.get_xydata()))
    labels = [t.get_window_extent(renderer).x0 for t in ax.texts]
    plt.close(fig)
    assert len(labels) == 4 and c.lateness["late_ms"].max() > 40  # (its late entries reach ~50 ms)
    assert right < min(labels)


def test_groups_by_description_sizes_in_bytes_units_and_short_names(tmp_path):
    r, charts = plot(tmp_path, "gpu_2x1_divergence", "gpu_2x1_bench")
    assert r.exit_code == 0, r.output
    strip = charts["last_collective"]
    assert "NCCL communicator of all 2 ranks" in strip and "default_pg (pg 0)" in strip and "0x52809" not in strip
    bw = charts["bandwidth"]
    assert "gpu_2x1_bench: all_gather" in bw and "256 MB" in bw and "samples/" not in bw
    assert "<!-- $\\mathdefault{2^{" not in bw  # no 2^n ticks


def test_nothing_to_draw_writes_nothing_and_exits_2(tmp_path):
    r, charts = plot(tmp_path, "swift_1x4_healthy")
    assert r.exit_code == 2 and charts == {}
    lines = r.output.strip().splitlines()
    assert lines[-1].startswith("error: ") and "nothing to plot" in lines[-1]
    assert any(ln.startswith("bandwidth.svg not written: swift_1x4_healthy: no bandwidth lines") for ln in lines)


@pytest.mark.parametrize("sample", ["zero3_slow_2x2", "gloo_1x4_straggler", "swift_2x2_wandb"])
def test_pngs_are_drawn(tmp_path, sample):
    r, charts = plot(tmp_path, sample, fmt="png")
    assert r.exit_code == 0, r.output
    assert {"progress", "last_collective"} <= set(charts) and all(drawn(p) for p in charts.values())
