"""Text for a terminal or a pipe: the verdict first, wrapped to the terminal, the rest below."""

from __future__ import annotations

import shutil
import sys
import textwrap


def width() -> int | None:
    """The terminal's width where stdout is one (text is wrapped to it), else None (one line each)."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def wrap(line: str, width: int) -> list[str]:
    return textwrap.wrap(line, max(width - 1, 40), subsequent_indent=" " * 10, break_on_hyphens=False,
                         break_long_words=False) or [line]


def summary_text(s: dict, width: int | None) -> str:
    """``summary.render``'s text, the verdict first; on a terminal (``width``) the verdict wrapped to
    the width and the other lines cut to it (whole in a pipe and in --json, a line each)."""
    from tracekit.reports import summary

    text = summary.render(s)
    if width is None:
        return text
    head, *rest = text.split("\n")
    cut = [ln if len(ln) < width else ln[: width - 2] + "…" for ln in rest]
    return "\n".join(wrap(head, width) + cut)


def verdict_lines(v: dict, width: int | None = None) -> list[str]:
    head = f"{v['kind'].upper()}: {v['summary']}"
    return (wrap(head, width) if width else [head]) + [f"  evidence {e}" for e in v["evidence"]]


def runs_block(run, verdicts: dict, width: int | None = None) -> list[str]:
    """``runs 2 in this folder`` and each run's span, ranks and verdict, the latest first."""
    out = [f"runs      {len(run.attempts)} in {', '.join(run.paths)}, the latest first "
           "(told apart by the launcher, processes, ranks, times and folders; --run N shows one in full)"]
    for a in run.attempts:
        v = verdicts[a.number]
        verdict = f"          {v['kind'].upper()}: {v['summary']}"
        out += [f"run {a.number:<5} {a.describe()}"] + (wrap(verdict, width) if width else [verdict])
    return out
