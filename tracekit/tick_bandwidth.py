"""(s32) The bandwidth a program's progress lines measure, where each line prints one with its unit (MXNet's
tools/bandwidth/measure.py: ``iter 3, 0.115689 sec, 2.230041 GB/sec per gpu, error 0.000000``; a script's
``busbw: 84.27 GBps``): a transfer benchmark's own figure, the one a reader compares with the link it crosses.
rules_bench.steady_ticks says it beside the pace it reads (a time per iteration is not what such a tool
measures): steady figures are healthy for what is seen, and the bandwidth is what says whether they are too low."""

from __future__ import annotations

import polars as pl

#: a bandwidth with its unit on a progress line (``2.26 GB/sec``, ``11.2 GB/s``, ``84.27 GBps``, ``900 MB/s``), and
#: what it is per (``per gpu``)
BANDWIDTH = (r"(?i)(\d+(?:\.\d+)?)\s*((?:G|M)i?B(?:/s(?:ec)?|ps)|(?:G|M)bit/s|(?:G|M)b/s|Gbps)"
             r"((?:\s+per\s+(?:gpu|rank|device|node|link))?)")


def said(ticks: pl.DataFrame) -> str:
    """``2.23-2.33 GB/sec per gpu on 5 lines (`iter 5, 0.110690 sec, 2.330758 GB/sec per gpu, ...`)``: the span of
    the bandwidth every one of two or more progress lines prints in one unit, else empty."""
    msg = ticks["message"].fill_null("")
    got = ticks.select(msg.str.extract_groups(BANDWIDTH).alias("g")).unnest("g")
    got = got.rename(dict(zip(got.columns, ["v", "unit", "per"]))).with_columns(
        pl.col("v").cast(pl.Float64, strict=False), pl.col("per").fill_null("").str.strip_chars())
    if got.height < 2 or got["v"].null_count() or got["unit"].n_unique() != 1 or got["per"].n_unique() != 1:
        return ""
    lo, hi, unit, per = got["v"].min(), got["v"].max(), got["unit"][0], got["per"][0]
    span = f"{lo:.3g}-{hi:.3g}" if hi > lo else f"{lo:.3g}"
    last = msg[-1].strip()
    return f"{span} {unit}{' ' + per if per else ''} on {got.height} lines (`{last[:90]}`)"
