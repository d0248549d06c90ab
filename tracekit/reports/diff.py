"""``tracekit diff`` for a terminal: a ``diff.Comparison`` (``diff.compare``) as text within
``WIDTH`` columns. The JSON is ``Comparison.to_dict``; the report's pages render the same model
(``reports/report.py``)."""

from __future__ import annotations

import textwrap

import polars as pl

from tracekit.diff import Comparison
from tracekit.figures import size_text

#: the width ``render`` fits (a terminal's 100 columns); longer values are cut with "…" (the full
#: value is in ``--json``). A figure is two lines, A above B, its A/B on A's line.
WIDTH = 100
LABEL = 34
FIGURE = WIDTH - LABEL - 3 - 14  # (room for " A/B 0.000123x")
SETUP = (WIDTH - LABEL - 7) // 2  # "A x | B y"


def _cut(v: str, n: int) -> str:
    v = " ".join(str(v).split())
    return v if len(v) <= n else v[: n - 1] + "…"


def _wrapped(head: str, text: str, indent: int = LABEL) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=f"{head:<{indent}} ",
                         subsequent_indent=" " * (indent + 1), break_on_hyphens=False) or [head]


def render(c: Comparison, path_a: str = "A", path_b: str = "B") -> str:
    """The comparison for a terminal, within ``WIDTH`` columns: both verdicts (their first line; the
    whole in ``--json``), each figure with A above B and A/B, why figures are missing, then the setup
    differences, most telling first."""
    na, nb = c.names["a"], c.names["b"]
    lines = [_cut(f"A = {na}" + (f"  ({path_a})" if str(path_a) != na else ""), WIDTH),
             _cut(f"B = {nb}" + (f"  ({path_b})" if str(path_b) != nb else ""), WIDTH), ""]
    for side in "ab":
        v = c.verdicts[side]
        head = f"{'verdict' if side == 'a' else '':<9} {side.upper()} "
        lines.append(head + _cut(f"{v.kind.word.upper()}: {v.summary}", WIDTH - len(head)))
    lines.append("")
    why: dict[str, list[str]] = {}
    for r in c.figures:
        ratio = r.ratio()
        a = f"A {_cut(r.a.shown(), FIGURE)}"
        with_ratio = f"{a:<{FIGURE + 2}} A/B {ratio:.3g}x" if ratio is not None else a
        lines.append(f"{_cut(r.what, LABEL):<{LABEL}} {with_ratio}")
        lines.append(f"{'':<{LABEL}} B {_cut(r.b.shown(), FIGURE)}")
        missing = {side: f.detail for side, f in (("A", r.a), ("B", r.b)) if f.value is None and f.detail}
        if len(set(missing.values())) == 1 and len(missing) == 2:
            why.setdefault(next(iter(missing.values())), []).append(f"{r.what} (A, B)")
        else:
            for side, d in missing.items():
                why.setdefault(d, []).append(f"{r.what} ({side})")
    for detail, whats in why.items():
        lines += _wrapped("  missing", f"{'; '.join(whats)}: {detail}")
    lines.append("")
    if not c.differences:
        lines.append("no difference in the setup both runs logged")
    for d in c.differences:
        label = _cut(f"{d.area}: {d.what}", LABEL)
        lines.append(f"{label:<{LABEL}} A {_cut(d.a, SETUP):<{SETUP}} | B {_cut(d.b, SETUP)}")
    bw = c.bandwidth.filter(pl.col("busbw_gbs").is_not_null() | pl.col("busbw_gbs_b").is_not_null())
    if bw.height:
        lines += ["", "bus bandwidth (GB/s) by message size:", f"  {'op':<14}{'size':>10}{'A':>10}{'B':>10}"]
        for r in bw.iter_rows(named=True):
            fa = "-" if r["busbw_gbs"] is None else f"{r['busbw_gbs']:.2f}"
            fb = "-" if r["busbw_gbs_b"] is None else f"{r['busbw_gbs_b']:.2f}"
            lines.append(f"  {_cut(r['op'], 14):<14}{size_text(r['size']):>10}{fa:>10}{fb:>10}")
    if c.same:
        lines += [""] + _wrapped("same in both", "; ".join(c.same[:12])
                                 + (f"; ... {len(c.same) - 12} more" if len(c.same) > 12 else ""))
    return "\n".join(lines)
