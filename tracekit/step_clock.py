"""When each progress line was written, by the clock the line itself carries (split from pace.py in session
27): a timestamp (``2024-03-12 08:22:56``, a logger's header or the prefix parsers' ``ts``), else a tqdm bar's
own clock, the time elapsed since the bar began (tqdm/std.py format_meter ``{n}/{total} [{elapsed}<{remaining},
{rate}]``, format_interval ``MM:SS`` or ``H:MM:SS``). pace.measure reads the gaps between steps from it: a
bar's smoothed ``s/it`` hides a step that waited (GPEN's bar at ``8/40000 [38:20<...`` then ``9/40000
[57:06<...`` among steps 3 s apart, samples/wild dv28-002), its elapsed clock shows it."""

from __future__ import annotations

import polars as pl

#: a timestamp with its date (ISO, with a space or a ``T``)
STAMP = r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2})"
#: tqdm's elapsed time after its counter: hours (optional), minutes, seconds
ELAPSED = r"\b\d+/\d+\s*\[(?:(\d+):)?(\d{1,2}):(\d\d)(?:<|,)"


def elapsed(text: pl.Expr) -> pl.Expr:
    """The seconds a tqdm bar's ``[MM:SS<`` or ``[H:MM:SS<`` says since it began, else null."""
    part = [text.str.extract(ELAPSED, k).cast(pl.Int64, strict=False) for k in (1, 2, 3)]
    return pl.when(part[1].is_not_null()).then(part[0].fill_null(0) * 3600 + part[1] * 60 + part[2])


#: a bar's total after its counter: which bar a line is of
TOTAL = r"\b\d+/(\d+)\s*\["


def one_bar(steps: pl.DataFrame, text: pl.Expr) -> bool:
    """Whether the lines' bars are one bar: one file, one rank and one total (ranks' bars interleaved in one
    file, ``1/61289 [00:05<`` and ``1/61601 [00:05<``, each keep a clock of their own: samples/wild dv2-050)."""
    totals = steps.select(text.str.extract(TOTAL, 1)).to_series().drop_nulls()
    ranks = steps["rank"].drop_nulls() if "rank" in steps.columns else pl.Series([], dtype=pl.Int64)
    return totals.n_unique() <= 1 and ranks.n_unique() <= 1 and steps["file"].n_unique() <= 1


def written_at(text: pl.Expr, bar_clock: bool = True) -> pl.Expr:
    """When the line was written: its timestamp, else (``bar_clock``: the lines are one bar's, ``one_bar``)
    its bar's elapsed clock (from the epoch: only the gaps between its lines count), else null."""
    stamp = (text.str.extract(STAMP, 1).str.replace("T", " ")
             .str.to_datetime("%Y-%m-%d %H:%M:%S", strict=False))
    return stamp.fill_null(pl.from_epoch(elapsed(text), time_unit="s")) if bar_clock else stamp
