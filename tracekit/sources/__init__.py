"""Where the collectives come from, and which source answers which question, decided once.

Each source of collectives is a module here (``fr``, ``nccl``, ``kineto``) that says, for itself, who
the members of a group are, which ranks left a record, and whether its rows carry times. This module
holds what every consumer (align, the rules, figures, diff, the timeline, the plots) used to write
again: the order in which sources are preferred, the clock offsets between hosts and their join, and
"the best source with rows for X".

The order: the Flight Recorder first (every entry has a sequence number, a state and an enqueue
time), then NCCL's COLL lines (opCount per communicator, no times), then Kineto (times, sequence
numbers where the profiler recorded them). Where times are needed, the timed sources in that order.
"""

from __future__ import annotations

import polars as pl


from tracekit.sources.common import clock_offsets, collect, on_one_clock  # noqa: F401 (the package's API)
from tracekit.sources import fr, kineto, nccl  # noqa: E402

#: every source of aligned collectives, most telling first
ORDER = (fr, nccl, kineto)
#: their names in that order: ``("fr", "nccl", "kineto")``
NAMES = tuple(s.NAME for s in ORDER)
#: the sources whose rows carry enqueue times, in the order above: ``("fr", "kineto")``
TIMED = tuple(s.NAME for s in ORDER if s.TIMED)
#: for where each rank is (state, sequence number): the timed sources, then the rest
DETAIL = TIMED + tuple(n for n in NAMES if n not in TIMED)
#: for a collective's duration both ends are needed: Kineto's GPU kernels measure the transfer itself,
#: then the Flight Recorder's completion times, then Kineto's CPU-side launches
DURATIONS = ("kineto-gpu",) + TIMED
#: for rates (enqueue times): the timed sources, Kineto's GPU kernels last
RATES = TIMED + ("kineto-gpu",)
#: for a transfer's bandwidth (bytes over the transfer's own time): Kineto's GPU kernels, else its
#: CPU-side ops; never the Flight Recorder, whose times run from enqueue to when the watchdog saw the
#: entry complete
TRANSFERS = ("kineto-gpu", "kineto")


def source(name: str):
    """The module of one source by name (``"fr"``)."""
    return {s.NAME: s for s in ORDER}[name]


def best(coll: pl.DataFrame, order: tuple[str, ...] = NAMES,
         where: pl.Expr | None = None) -> tuple[pl.DataFrame, str]:
    """The rows of the first source in ``order`` that has any (that pass ``where``), and its name;
    an empty frame and ``""`` when none has."""
    for name in order:
        sub = coll.filter(pl.col("source") == name)
        sub = sub if where is None else sub.filter(where)
        if sub.height:
            return sub, name
    return coll.clear(), ""


def best_lazy(coll: pl.LazyFrame, order: tuple[str, ...] = NAMES, where: pl.Expr | None = None,
              select: tuple[str, ...] = ()) -> tuple[pl.DataFrame, str]:
    """``best`` over a table that may be on disk: each source's rows collected in turn (streaming)."""
    for name in order:
        sub = coll.filter(pl.col("source") == name)
        sub = sub if where is None else sub.filter(where)
        got = collect(sub.select(*select) if select else sub)
        if got.height:
            return got, name
    return pl.DataFrame(), ""


def timed(coll: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """Collectives of the best timed source, once per (rank, pg, seq) (the newest entry kept), with
    ``t`` and ``t_end`` in ns on one clock; empty when no source has times (NCCL COLL lines have none)."""
    c = coll.filter(pl.col("rank").is_not_null() & pl.col("seq").is_not_null()
                    & pl.col("start_ns").is_not_null())
    sub, name = best(c, TIMED)
    if not name:
        return c.clear().with_columns(pl.lit(None, pl.Int64).alias("t"),
                                      pl.lit(None, pl.Int64).alias("t_end")), ""
    sub = sub.sort("start_ns").unique(["rank", "pg", "seq"], keep="last", maintain_order=True)
    sub = on_one_clock(sub, {"start_ns": "t", "end_ns": "t_end"})
    return sub.with_columns(pl.col("op").cast(pl.Utf8), pl.col("state").cast(pl.Utf8)), name
