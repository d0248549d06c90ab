"""A training step's time spread over its ranks, as the program reports it (session 34): Megatron's timers as
(min, max) across ranks (parsers/minmax_timers.py, megatron/core/timers.py ``_get_global_min_max_time_string``).

The report gives, for each phase of the iteration, the fastest rank's time and the slowest's. A phase that
feeds the step its input (``batch-generator``, ``broadcast-data``, ``data-iterator``: the data loader, and
tensor-parallel rank 0's broadcast of the batch, megatron/training/utils.py ``get_batch_on_this_tp_rank``) that
takes a large share of the step on the slowest rank, and twice as long there as on the fastest, is where the
step waits: the ranks that got their batch late hold the others at the step's first collective, every step; the
run advances, slowly. The report names no rank (only the smallest and the largest time), so it says slow, not
which rank. The one-off timers (``*-setup``, ``load-checkpoint``, ``save-checkpoint``, ``evaluate``) and the
pipeline's send/recv (whose spread is the pipeline's bubble, by stage) are not read.
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.parsers.minmax_timers import WHERE
from tracekit.rules_bench import _calm

#: the phase that holds the whole iteration's forward and backward (the step's length, on its slowest rank)
STEP = "forward-backward"
#: the phases that feed the step its input (Megatron's training loop and its data broadcast)
INPUT = r"^(?:batch-generator|broadcast-data|data-iterator|get-batch)$"
#: an input phase this share of the step (on the slowest rank) or more, and the slowest rank this many times
#: the fastest: the step waits on its input, unevenly across ranks (samples/wild dv38-011: batch-generator
#: 409-818 ms and broadcast-data 395-776 ms of a 5.2 s forward-backward, labelled slow)
SHARE, SPREAD = 0.1, 1.5
#: an input phase this share of the step or more on every rank: the step waits on its input, evenly
ALL_SHARE = 0.25
#: a slowest rank over this many times the fastest: the fastest loads no data (a pipeline's middle stage)
LOADS = 10


def _timers(ev: Evidence) -> pl.DataFrame:
    """The last report's timers: phase, lo, hi (ms), file, line, message."""
    ph = ev.kinds(EventKind.PHASE_TIMES).filter(pl.col("where") == WHERE).sort("file", "line")
    got = ph["message"].str.extract_groups(r"^(?P<phase>[^:]+): \((?P<lo>[\d.]+), (?P<hi>[\d.]+)\)$").struct
    return ph.with_columns(got.field("phase"), got.field("lo").cast(pl.Float64, strict=False).alias("lo"),
                           got.field("hi").cast(pl.Float64, strict=False).alias("hi"))


def input_spread(ev: Evidence) -> Verdict | None:
    """Megatron's per-iteration timers across ranks where the step waits on its input: a data phase that takes
    ``SHARE`` of the step on the slowest rank and ``SPREAD`` times the fastest's, or ``ALL_SHARE`` on every
    rank: slow progress, with the phase, its (min, max) and the step's length."""
    t = _timers(ev)
    if not t.height or not _calm(ev):
        return None
    steps = t.filter(pl.col("phase") == STEP)
    if not steps.height:
        return None
    step = steps.row(-1, named=True)
    # (the timers of the last step's report: printed with its forward-backward, in the same file)
    report = t.filter((pl.col("file") == step["file"]) & ((pl.col("line") - step["line"]).abs() <= 40)
                      & (pl.col("hi") > 0))
    near = report.filter(pl.col("phase").str.contains(INPUT))
    # (a fastest rank near 0 is a rank that loads no data: a pipeline's middle stages get no batch, their timer
    # stops at once; that spread is the layout's, not a wait)
    uneven = (pl.col("hi") >= SPREAD * pl.col("lo")) & (pl.col("lo") * LOADS >= pl.col("hi"))
    waits = near.filter(((pl.col("hi") >= SHARE * step["hi"]) & uneven) | (pl.col("lo") >= ALL_SHARE * step["hi"]))
    if not waits.height:
        return None
    each = "; ".join(f"{w['phase']} {w['lo']:g}-{w['hi']:g} ms ({w['hi'] / max(w['lo'], 1e-9):.1f}x from the fastest "
                     f"rank to the slowest, {w['hi'] / step['hi']:.0%} of the step)"
                     for w in waits.iter_rows(named=True))
    comm = report.filter(pl.col("phase").str.contains("all-reduce|all-gather|reduce-scatter"))
    tight = comm.filter(pl.col("hi") < SPREAD * pl.col("lo")).sort("hi").tail(1)
    grads = (f"; {tight['phase'][0]} is even across ranks ({tight['lo'][0]:g}-{tight['hi'][0]:g} ms): the links are "
             "not what holds the step" if tight.height else "")
    cited = [Cited(step["file"], step["line"], step["message"])] + [
        Cited(w["file"], w["line"], w["message"]) for w in waits.head(3).iter_rows(named=True)]
    return Verdict(Kind.SLOW_PROGRESS, f"Megatron's timers across ranks (min, max per iteration): each step of "
                   f"{step['lo']:g}-{step['hi']:g} ms in forward-backward waits on its input data: {each}{grads}; "
                   "the ranks whose batch comes late hold the others at the step's first collective, every step: "
                   "the run advances, slowly (the data loader, its workers, or tensor-parallel rank 0's broadcast "
                   "of the batch); the report names no rank: `--timing-log-option all` names each rank's time",
                   [], cited)
