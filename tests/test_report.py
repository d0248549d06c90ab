"""`tracekit report` on real runs: one self-contained HTML page (inline SVG, nothing fetched) or
Markdown for an issue, with the verdict and its evidence, coverage, where each rank is, the charts,
the diff when asked, and the commands that made it."""

import html
import re

from click.testing import CliRunner

from tests.conftest import SAMPLES
from tracekit import escape, verdict
from tracekit.cli import _load_run, main
from tracekit.reports import report
from tracekit.view import ChartData, RunView


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_html_report_of_a_hang_against_its_fix(tmp_path):
    out = tmp_path / "report.html"
    r = run("report", SAMPLES / "swift_2x2_wandb", "--diff", SAMPLES / "swift_2x2_wandb_fixed", "-o", out)
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"wrote {out}: DEADLOCK, 4 rank(s), 2 chart(s), against swift_2x2_wandb_fixed")
    page = out.read_text()
    v = verdict.decide(_load_run(str(SAMPLES / "swift_2x2_wandb")))
    assert html.escape(v.summary) in page and v.evidence
    # each piece of evidence as its place (file and line, or a dump's record) and what it says
    shown = re.search(r"<h2>Evidence</h2><ul>(.*?)</ul>", page, re.S).group(1)
    for e in v.evidence:
        assert e.file and e.where.startswith(e.file)
        assert f'<code class="where">{html.escape(e.where)}</code>' in shown
        assert not e.text or f"<code>{html.escape(e.text)}</code>" in shown
    # self-contained: no script, no stylesheet or image fetched, no DTD named on the web; the charts'
    # own references are to fragments of the page (clip-path="url(#p1)", xlink:href="#glyph")
    assert not re.search(r"<script|<link|<img|<iframe|(?:src|href)\s*=\s*[\"'](?!#)|@import|url\((?!#)|<!DOCTYPE svg", page, re.I)
    assert page.count("url(#") > 0
    assert page.count("<svg") == 2 and "No chart of bus bandwidth by message size" in page
    assert "4 of 4 ranks seen" in page
    row = re.search(r'<tr class="named">(.*?)</tr>', page, re.S).group(1)
    assert "rank 0" in row and "all_gather #140" in row and "behind: never issued #141" in row and "AsyncioManager.run" in row
    assert "ranks 1-3" in page and "in all_gather #141, not completed: waits for the others" in page
    assert "Against swift_2x2_wandb_fixed" in page and "HEALTHY" in page and "WANDB_MODE" in page
    assert f"tracekit report {SAMPLES / 'swift_2x2_wandb'} --diff {SAMPLES / 'swift_2x2_wandb_fixed'} -o {out}" in page


def test_markdown_report_for_an_issue(tmp_path):
    r = run("report", SAMPLES / "zero3_slow_2x2", "--diff", SAMPLES / "zero3_slow_fixed_2x2", "--markdown", "-o", "-")
    assert r.exit_code == 0, r.output
    md = r.output
    assert len(md) < 65_000 and "<svg" not in md
    assert md.splitlines()[:3] == ["### tracekit report: zero3_slow_2x2", "",
                                   "**SLOW-PROGRESS**: "  # the summary as markdown text: its | escaped
                                   + escape.markdown(verdict.decide(_load_run(str(SAMPLES / "zero3_slow_2x2"))).summary)]
    summaries = re.findall(r"<details><summary>(.*?)</summary>", md)
    assert summaries[:2] == ["Evidence", "Coverage"] and summaries[-1] == "Commands that made this"
    assert "Against zero3_slow_fixed_2x2" in summaries[-2]
    assert "| step time, median | 4.64 s (elapsed_s) | 0.09 s (elapsed_s) | 51.5x |" in md
    assert "| ranks 2-3 | all_gather #166 |" in md and "taken earlier; the run moved on" in md and "never issued" not in md


def test_markdown_is_cut_to_the_limit():
    store = _load_run(str(SAMPLES / "gpu_2x1_divergence"))
    v = verdict.decide(store)
    charts, missing = report.charts({"gpu_2x1_divergence": ChartData.build(store, v)})
    r = report.assemble(RunView.build(store, v, "gpu_2x1_divergence", "x"), None, charts, missing,
                        ["tracekit report x"])
    full = report.markdown(r)
    assert len(report.markdown(r, limit=len(full) // 2)) <= len(full) // 2 < len(full)


def test_a_report_of_nothing_is_bad_input(tmp_path):
    (tmp_path / "empty").mkdir()
    r = run("report", tmp_path / "empty", "-o", tmp_path / "r.html")
    assert r.exit_code == 2 and r.output.startswith(f"error: {tmp_path / 'empty'}: no logs, dumps or traces found")
    assert not (tmp_path / "r.html").exists()
