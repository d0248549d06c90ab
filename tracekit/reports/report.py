"""``tracekit report``: one page to share about a run: the verdict and its evidence, coverage
(which ranks left which records), where each rank is, the charts, the comparison with a second
run when asked, and the commands that made it.

Two renderings of one ``Report``: ``html`` (a single self-contained file: inline SVG, inline CSS,
no script and no reference to anything outside it) and ``markdown`` (for pasting into an issue:
collapsed ``<details>`` sections, no images, under GitHub's 65,536-character limit).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from tracekit import diff, escape
from tracekit.outcome import Cited, Kind
from tracekit.reports import plots
from tracekit.view import ChartData, RunView
from tracekit.wording import fmt_ranks

MARKDOWN_LIMIT = 65_000


@dataclass
class Report:
    name: str
    path: str
    verdict: dict
    coverage: list[str]
    ranks: pl.DataFrame  # ranks, last collective, state, main thread (ranks in one place share a row)
    charts: dict[str, str] = field(default_factory=dict)  # title -> inline SVG
    missing: dict[str, str] = field(default_factory=dict)  # chart -> why it is not drawn
    comparison: diff.Comparison | None = None
    # each command as its words (shown shell-quoted: escape.shell), or as a line already written
    commands: list[list[str] | str] = field(default_factory=list)
    kind: Kind = Kind.UNDECIDED  # the verdict's kind, which the page's colour keys on
    evidence: list[Cited] = field(default_factory=list)  # the verdict's, each with its file and line


def assemble(view: RunView, comparison: diff.Comparison | None = None, charts: dict[str, str] | None = None,
             missing: dict[str, str] | None = None, commands: list[list[str] | str] | None = None) -> Report:
    """The report of one run's ``view``: its charts already drawn (title -> SVG, ``svg``), the
    charts not drawn and why, the comparison with a second run, the commands that made it."""
    v = view.verdict
    cited = [e if isinstance(e, Cited) else Cited(None, None, e) for e in dict.fromkeys(v.evidence)]
    return Report(view.name, view.path, v.to_dict(), view.coverage, view.places, dict(charts or {}),
                  dict(missing or {}), comparison, list(commands or []), v.kind, cited)


def svg(draw: Callable[[Path], object]) -> str:
    """What ``draw(path)`` writes, as inline SVG (no XML prolog, DOCTYPE or metadata)."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "chart.svg"
        draw(p)
        text = p.read_text()
    text = text[text.index("<svg"):]  # no XML prolog or DOCTYPE (it names a DTD on the web)
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)


def charts(runs: dict[str, ChartData]) -> tuple[dict[str, str], dict[str, str]]:
    """The report's charts of its first run (progress, last collective) and the bandwidth of every
    run in ``runs`` (name -> ``ChartData``), each as inline SVG (title -> SVG); and the charts with
    nothing to draw (title -> why)."""
    name, c = next(iter(runs.items()))
    drawn, missing = {}, {}
    for title, draw in (("progress per rank", lambda p: plots.progress(c, p, name)),
                        ("last collective per rank and process group",
                         lambda p: plots.last_collective(c, p, name)),
                        ("bus bandwidth by message size", lambda p: plots.bandwidth(runs, p))):
        try:
            drawn[title] = svg(draw)
        except plots.Nothing as e:
            missing[title] = str(e)
    return drawn, missing


# --- HTML ---------------------------------------------------------------------------------------

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1150px; color: #222;
       padding: 0 1em; }
h1 { font-size: 1.4em; margin-bottom: .2em; }
h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.verdict { font-size: 1.1em; padding: .7em 1em; border-left: 6px solid #c0392b; background: #fbeeec; }
.verdict.ok { border-color: #27ae60; background: #eef8f1; }
.verdict.slow { border-color: #e67e22; background: #fdf3e7; }
.kind { font-weight: 700; letter-spacing: .02em; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
td, th { border: 1px solid #ddd; padding: 4px 7px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } tr.named td { background: #fdecea; }
code, pre { font: 12px/1.4 ui-monospace, monospace; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: 12px; }
.muted { color: #666; } code.where { color: #666; }
"""


def _e(v) -> str:
    """Any text in HTML: entities for markup, control characters escaped (escape.html)."""
    return escape.html("" if v is None else str(v))


def _cited_html(c: Cited) -> str:
    """Where the evidence was read (file and line, or a dump's record), then what it says."""
    text = f"<code>{_e(c.text)}</code>" if c.text else ""
    return f'<code class="where">{_e(c.where)}</code> {text}'.rstrip() if c.where else text


def _commands(r: Report) -> list[str]:
    """The commands, each on one line: words shell-quoted, so a run folder named ``a b; rm x`` is
    pasted back as the one argument it is."""
    return [escape.shell(c) if isinstance(c, list) else escape.line(c) for c in r.commands]


def _table(rows: list[list], head: list[str], named: list[bool] | None = None) -> str:
    out = ["<table><tr>" + "".join(f"<th>{_e(x)}</th>" for x in head) + "</tr>"]
    for i, row in enumerate(rows):
        cls = ' class="named"' if named and named[i] else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{_e(x)}</td>" for x in row) + "</tr>")
    return "\n".join(out + ["</table>"])


def _rank_rows(r: Report) -> tuple[list[list], list[str], list[bool]]:
    rows = [[f"rank{'s' if len(x['rank']) > 1 else ''} {fmt_ranks(x['rank'])}",
             f"{x['op']} #{x['seq']}" if x["op"] else "-", x["pg"] or "-",
             "-" if x["t_s"] is None else f"{x['t_s']:.3f}", x["state"], plots.short_frame(x["where"])]
            for x in r.ranks.iter_rows(named=True)]
    head = ["ranks", "last collective", "process group", "entered at (s)", "state", "main thread"]
    return rows, head, r.ranks["named"].to_list()


def _figures(c: diff.Comparison) -> tuple[list[list], list[str]]:
    rows = [[f.what, f.a.shown(), f.b.shown(), "-" if f.ratio() is None else f"{f.ratio():.3g}x",
             "; ".join(f"{s}: {x.detail}" for s, x in (("A", f.a), ("B", f.b)) if x.detail)]
            for f in c.figures]
    return rows, ["figure", f"A {c.names['a']}", f"B {c.names['b']}", "A/B", "over / why missing"]


def html(r: Report) -> str:
    v = r.verdict
    tone = ("ok" if r.kind == Kind.HEALTHY else "slow" if r.kind in (Kind.SLOW_PROGRESS, Kind.STRAGGLER)
            else "")
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
             f"<title>tracekit report: {_e(r.name)}</title>",
             f"<style>{CSS}</style></head><body>",
             f"<h1>tracekit report: {_e(r.name)}</h1><p class=\"muted\">{_e(r.path)}</p>",
             f'<p class="verdict {tone}" id="verdict"><span class="kind">{_e(v["kind"].upper())}</span>: '
             f"{_e(v['summary'])}</p>"]
    if r.evidence or v["notes"]:
        parts.append("<h2>Evidence</h2><ul>" + "".join(f"<li>{_cited_html(x)}</li>" for x in r.evidence)
                     + "".join(f"<li>note: {_e(x)}</li>" for x in v["notes"]) + "</ul>")
    parts.append("<h2>Coverage</h2><ul>" + "".join(f"<li>{_e(x)}</li>" for x in r.coverage) + "</ul>")
    rows, head, named = _rank_rows(r)
    parts.append("<h2>Where each rank is</h2>" + _table(rows, head, named)
                 + '<p class="muted">Ranks in the same place share a row; the verdict\'s ranks are '
                 "shaded.</p>")
    parts.append("<h2>Charts</h2>")
    for title, drawn in r.charts.items():
        parts.append(f"<figure>{drawn}<figcaption>{_e(title)}</figcaption></figure>")
    for title, why in r.missing.items():
        parts.append(f"<p class=\"muted\">No chart of {_e(title)}: {_e(why)}.</p>")
    if r.comparison is not None:
        c = r.comparison
        parts.append(f"<h2>Against {_e(c.names['b'])}</h2>")
        b = c.verdicts["b"]
        parts.append(f'<p>B: <span class="kind">{_e(b.kind.word.upper())}</span>: {_e(b.summary)}</p>')
        rows, head = _figures(c)
        parts.append(_table(rows, head))
        if c.differences:
            parts.append("<h3>What differs in the setup</h3>" + _table(
                [[f"{d.area}: {d.what}", d.a, d.b] for d in c.differences], ["what", "A", "B"]))
        else:
            parts.append("<p>No difference in the setup both runs logged.</p>")
    parts.append("<h2>Commands that made this</h2><pre>" + "\n".join(_e(x) for x in _commands(r)) + "</pre>")
    return "\n".join(parts + ["</body></html>"])


# --- Markdown -----------------------------------------------------------------------------------

def _cited_markdown(c: Cited) -> str:
    """Where (file and line, or a dump's record), then what it says, each as inline code."""
    return " ".join(escape.markdown_span(x) for x in (c.where, c.text) if x)


def _md_cell(v) -> str:
    return "-" if v is None or v == "" else escape.markdown(str(v))


def _md_table(rows: list[list], head: list[str], limit: int | None = None) -> str:
    shown = rows if limit is None else rows[:limit]
    out = ["| " + " | ".join(map(escape.markdown, head)) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_md_cell(x) for x in row) + " |" for row in shown]
    if len(shown) < len(rows):
        out.append(f"\n{len(rows) - len(shown)} more row(s) not shown")
    return "\n".join(out)


def _details(summary: str, body: str) -> str:
    """A collapsed section (``summary``: markdown already escaped, ``body``: markdown)."""
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def markdown(r: Report, limit: int = MARKDOWN_LIMIT) -> str:
    """The report for an issue; long tables are cut until the whole fits ``limit`` characters."""
    for rows_shown in (None, 200, 50, 10):
        text = _markdown(r, rows_shown)
        if len(text) <= limit:
            return text
    return text[: limit - 40] + "\n\n(cut to fit an issue)\n"


def _markdown(r: Report, rows_shown: int | None) -> str:
    v, md = r.verdict, escape.markdown  # every text from the run escaped: it is data, never markup
    out = [f"### tracekit report: {md(r.name)}", f"**{v['kind'].upper()}**: {md(v['summary'])}"]
    if r.evidence or v["notes"]:
        out.append(_details("Evidence", "\n".join([f"- {_cited_markdown(x)}" for x in r.evidence]
                                                  + [f"- note: {md(x)}" for x in v["notes"]])))
    out.append(_details("Coverage", "\n".join(f"- {md(x)}" for x in r.coverage)))
    rows, head, _ = _rank_rows(r)
    out.append(_details(f"Where each rank is ({r.ranks['rank'].list.len().sum()} ranks, {len(rows)} places)",
                        _md_table(rows, head, rows_shown)))
    if r.comparison is not None:
        c = r.comparison
        b = c.verdicts["b"]
        body = [f"B: **{b.kind.word.upper()}**: {md(b.summary)}", "",
                _md_table(*_figures(c)), ""]
        setup = [[f"{d.area}: {d.what}", d.a, d.b] for d in c.differences]
        body.append(_md_table(setup, ["what", "A", "B"], rows_shown)
                    if c.differences else "No difference in the setup both runs logged.")
        out.append(_details(f"Against {md(c.names['b'])}", "\n".join(body)))
    charts = ", ".join(r.charts) or "none"
    out.append(_details("Commands that made this", escape.markdown_code("\n".join(_commands(r))) + "\n"
                        + f"(charts: {md(charts)}; in the HTML report)"))
    return "\n\n".join(out) + "\n"
