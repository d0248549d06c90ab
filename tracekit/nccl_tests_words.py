"""The words rules_nccl_tests and rules_measured say nccl-tests' results in: sizes as nccl-tests says them
(1024s), a table's span, its op and test, the tables of a file, the transport NCCL logged, the ranks the
header names (split out of rules_nccl_tests, session 25)."""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence
from tracekit.wording import fmt_ranks

def _size(n: int | None) -> str:
    """``33554432`` -> ``32 MB``; ``8`` -> ``8 B`` (nccl-tests sizes are powers of two, said in 1024s)."""
    if n is None:
        return "?"
    for unit, k in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= k:
            v = n / k
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


def _span(rows: pl.DataFrame) -> str:
    """``8 B - 64 KB``, or ``8 B`` where the rows hold one size."""
    lo, hi = rows["bytes"].min(), rows["bytes"].max()
    return _size(lo) if lo == hi else f"{_size(lo)} - {_size(hi)}"


def _tables(rows: pl.DataFrame) -> list[pl.DataFrame]:
    """The result tables: per file, a new one where the size stops growing or the op changes."""
    rows = rows.sort("file", "line").with_columns(
        ((pl.col("bytes") <= pl.col("bytes").shift(1).over("file")).fill_null(True)
         | (pl.col("op") != pl.col("op").shift(1).over("file")).fill_null(True)).cum_sum().alias("_table"))
    return [t for _, t in rows.group_by("_table", maintain_order=True)]


def _test(rows: pl.DataFrame, op: bool = True) -> str:
    """``nccl-tests all_reduce``, or ``the all_reduce benchmark (all_reduce_bench.py)``: what printed the
    rows."""
    if (rows["where"] == "all_reduce_bench").all():
        return f"the{_op(rows)} benchmark (all_reduce_bench.py)"
    return f"nccl-tests{_op(rows) if op else ''}"


def _op(table: pl.DataFrame) -> str:
    """`` all_reduce`` (with its space), or empty where the output does not name the test."""
    op = table["op"][0]
    return f" {op}" if op and op != "unknown" else ""


def transport_logged(ev: Evidence) -> str:
    """The network or peer transport NCCL logged for this run's connections (``NET/IB``), else empty."""
    links = ev.store.links
    if not links.height or "transport_kind" not in links.columns:
        return ""
    kinds = links["transport_kind"].drop_nulls()
    return ", ".join(kinds.value_counts(sort=True)["transport_kind"].head(2).to_list()) if kinds.len() else ""


def _ranks_text(ev: Evidence) -> str:
    """``ranks 0-9 on host gn11``: the ranks and hosts nccl-tests' header names, or empty."""
    r = ev.store.ranks.filter(pl.col("source").str.contains("nccl-tests") & pl.col("rank").is_not_null())
    if not r.height:
        return ""
    hosts = r["host"].drop_nulls().unique().sort().to_list()
    n = r["rank"].n_unique()
    return (f"{'rank' if n == 1 else 'ranks'} {fmt_ranks(r['rank'].to_list())}"
            + (f" on {'host' if len(hosts) == 1 else 'hosts'} {', '.join(hosts[:4])}" if hosts else ""))
