"""`tracekit plot` on real runs: every chart is written, drawn (not blank) and of the right size."""

import matplotlib.image as mpimg
from click.testing import CliRunner

from tests.conftest import SAMPLES
from tracekit.cli import main


def drawn(path):
    img = mpimg.imread(path)
    return img.shape[0] > 200 and img.shape[1] > 500 and img[..., :3].std() > 0.05


def test_plots_of_a_deadlock_and_a_bench(tmp_path):
    r = CliRunner().invoke(main, ["plot", str(SAMPLES / "gloo_2x2_deadlock"), "--diff", str(SAMPLES / "gpu_2x1_bench"),
                                  "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["bandwidth.png", "last_collective.png", "progress.png", "progress_b.png"]
    assert all(drawn(tmp_path / n) for n in names)


def test_svg_output_names_the_stuck_rank(tmp_path):
    r = CliRunner().invoke(main, ["plot", str(SAMPLES / "gloo_2x2_deadlock"), "-o", str(tmp_path), "--format", "svg"])
    assert r.exit_code == 0, r.output
    svg = (tmp_path / "progress.svg").read_text()
    assert "rank 3 (stops at 8)" in svg and "rank 0" in svg
    assert "all_gather #8" in (tmp_path / "last_collective.svg").read_text()
