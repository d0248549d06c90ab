"""Text for a terminal or a pipe: the verdict first, wrapped to the terminal, the rest below."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (the commands import polars where they run: `run` needs none)
    from tracekit.outcome import Verdict
    from tracekit.runs import Attempt
    from tracekit.view import Summary


def width() -> int | None:
    """The terminal's width where stdout is one (text is wrapped to it), else None (one line each)."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def wrap(line: str, width: int) -> list[str]:
    return textwrap.wrap(line, max(width - 1, 40), subsequent_indent=" " * 10, break_on_hyphens=False,
                         break_long_words=False) or [line]


def summary_text(s: Summary, width: int | None) -> str:
    """``summary.render``'s text, the verdict first; on a terminal (``width``) the verdict wrapped to
    the width and the other lines cut to it (whole in a pipe and in --json, a line each)."""
    from tracekit.reports import summary

    text = summary.render(s)
    if width is None:
        return text
    head, *rest = text.split("\n")
    cut = [ln if len(ln) < width else ln[: width - 2] + "…" for ln in rest]
    return "\n".join(wrap(head, width) + cut)


def verdict_lines(v: Verdict, width: int | None = None) -> list[str]:
    head = f"{v.kind.word.upper()}: {v.summary}"
    return (wrap(head, width) if width else [head]) + [f"  evidence {e}" for e in v.evidence]


def runs_block(run, runs: list[tuple[Attempt, Verdict]], width: int | None = None) -> list[str]:
    """``runs 2 in this folder`` and each run's span, ranks and verdict, the latest first."""
    out = [f"runs      {len(runs)} in {', '.join(run.paths)}, the latest first "
           "(told apart by the launcher, processes, ranks, times and folders; --run N shows one in full)"]
    for a, v in runs:
        verdict = f"          {v.kind.word.upper()}: {v.summary}"
        out += [f"run {a.number:<5} {a.describe(v.coverage)}"] + (wrap(verdict, width) if width else [verdict])
    return out


def doctor_lines(report: list[dict], diffs: list[str], several: bool) -> list[str]:
    """``tracekit doctor``'s findings (``doctor.check_all``), a command's findings said once where
    several commands have the same ones; then how the commands differ, where there are several."""
    from tracekit import escape

    out = escape.line  # the command's words on a terminal: a control character or a bad byte escaped
    lines: list[str] = []
    shown: dict[str, str] = {}
    for r in report:
        key = json.dumps(r["findings"])
        if key in shown:
            lines.append(f"{r['where']}: the same {len(r['findings'])} finding(s) as {shown[key]}")
            continue
        shown[key] = r["where"]
        lines.append(f"{r['where']}: {len(r['findings'])} finding(s)")
        for f in r["findings"]:
            lines += [f"  {f['severity']:<8}{f['id']}: {out(f['what'])}", f"          why: {out(f['why'])}",
                      f"          fix: {out(f['fix'])}"]
    if several:
        lines.append("commands differ in: " + ("; ".join(map(out, diffs)) if diffs else "nothing"))
    return lines
