"""Collective traffic per step: the bytes each rank moved through NCCL, by op, from the COLL lines.

NCCL logs one line per collective call with its element count and type; ``count`` is the per-rank
chunk for AllGather and ReduceScatter and the whole buffer for the others. Two sizes follow, in
nccl-tests' terms:

- ``data``: the collective's size (AllGather: the gathered output, count x nranks x element size;
  ReduceScatter: the input, the same product; the others: count x element size);
- ``sent``: the bytes one rank sends to its peers with a ring, data x (n-1)/n (AllReduce twice that;
  send: all of it, recv: none; nothing with one rank). Over a link of B bytes/s a collective takes
  at least sent / B: this is the figure to hold against a network.

Per optimizer step divides the run's totals by the optimizer steps the training log reached; per
micro-step by steps x gradient accumulation, where the log gives it (HF's banner or ms-swift's
arguments). Start-up collectives (ZeRO-3 broadcasts every parameter from rank 0 once) and evals are
in the totals: the table is by op, so they stand in their own rows. Sizes are in decimal units (GB =
1e9 bytes), as link rates are.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.figures import Figure
from tracekit.outcome import EventKind
from tracekit.store import Store


@dataclass
class Traffic:
    by_op: pl.DataFrame  # op, calls, data_bytes, sent_bytes: per rank over the run (mean of the ranks)
    ranks: int  # ranks with COLL lines
    nranks: int | None  # communicator size of the largest group
    steps: int | None  # optimizer steps reached
    accumulation: int | None  # micro-steps per optimizer step

    @property
    def micro_steps(self) -> int | None:
        return self.steps * self.accumulation if self.steps and self.accumulation else None

    def per(self, column: str, unit: str) -> dict[str, float]:
        """``column`` per rank per ``unit`` ("run", "step", "micro-step") by op."""
        n = {"run": 1, "step": self.steps, "micro-step": self.micro_steps}[unit]
        if not n:
            return {}
        return {op: v / n for op, v in zip(self.by_op["op"], self.by_op[column])}

    def to_dict(self) -> dict:
        return {"ranks": self.ranks, "nranks": self.nranks, "steps": self.steps,
                "accumulation": self.accumulation,
                "by_op": self.by_op.to_dicts()}


def _accumulation(store: Store) -> int | None:
    args = store.events.filter(pl.col("kind") == EventKind.TRAIN_ARG)["message"].drop_nulls()
    vals = args.filter(args.str.starts_with("gradient_accumulation_steps=")).str.split("=").list.last()
    vals = vals.cast(pl.Int64, strict=False).drop_nulls()
    return int(vals.max()) if vals.len() else None


def measure(store: Store) -> Traffic | None:
    """The run's collective traffic, or None where no NCCL COLL line was logged."""
    c = (store.collectives.lazy().filter((pl.col("source") == "nccl") & (pl.col("state") != "no-op")
                                         & pl.col("bytes").is_not_null())
         .select("op", "bytes", "nranks", "rank", "host", "pid"))
    n = pl.col("nranks").fill_null(1)
    data = (pl.when(pl.col("op").is_in(["all_gather", "reduce_scatter"])).then(pl.col("bytes") * n)
            .otherwise("bytes"))
    share = (n - 1).cast(pl.Float64) / n
    factor = (pl.when(n <= 1).then(0.0).when(pl.col("op") == "all_reduce").then(2 * share)
              .when(pl.col("op") == "send").then(1.0).when(pl.col("op") == "recv").then(0.0).otherwise(share))
    # who sent: the rank, else the process (host, pid) of a log that names no rank
    unranked = pl.col("rank").is_null()
    counted = c.select(pl.len().alias("rows"), pl.col("nranks").max(),
                       pl.col("rank").drop_nulls().n_unique().alias("ranked"),
                       pl.struct(pl.col("host").filter(unranked),
                                 pl.col("pid").filter(unranked)).n_unique().alias("procs"),
                       unranked.any().alias("any_unranked"))
    by_op = (c.group_by(pl.col("op").cast(pl.Utf8))
             .agg(pl.len().alias("calls"), data.sum().alias("data_bytes"),
                  (data * factor).sum().alias("sent_bytes")))
    counted, by_op = pl.collect_all([counted, by_op])
    if not counted["rows"][0]:
        return None
    ranks = counted["ranked"][0] + (counted["procs"][0] if counted["any_unranked"][0] else 0)
    by_op = (by_op.with_columns(pl.col("calls", "data_bytes", "sent_bytes") / ranks)
             .sort("sent_bytes", "data_bytes", "op", descending=[True, True, False]))  # ties: by name
    steps = store.events.filter(pl.col("kind") == EventKind.STEP)["step"].max()
    return Traffic(by_op, ranks, counted["nranks"][0], int(steps) if steps else None, _accumulation(store))


def gb(n: float) -> str:
    """Bytes in decimal units, three figures."""
    for unit, f in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= f:
            return f"{n / f:.3g} {unit}"
    return f"{n:.3g} B"


def lines(t: Traffic, top: int = 5) -> list[str]:
    """The traffic as text: one line of what was counted, one per op (the ``top`` largest)."""
    unit = "micro-step" if t.micro_steps else "step" if t.steps else "run"
    head = (f"{t.steps} optimizer step(s)" + (f" x {t.accumulation} micro-steps" if t.accumulation else "")
            if t.steps else "no step logged: whole run")
    out = [f"per rank per {unit} ({head}; start-up and evals included; "
           f"{t.ranks} rank(s), groups of {t.nranks}):"]
    n = {"run": 1, "step": t.steps, "micro-step": t.micro_steps}[unit]
    for r in t.by_op.head(top).iter_rows(named=True):
        per_step = (f", {gb(r['sent_bytes'] / t.steps)} sent per optimizer step"
                    if unit == "micro-step" else "")
        out.append(f"{r['op']:<15}{r['calls'] / n:>9.1f} calls  {gb(r['data_bytes'] / n):>9} data  "
                   f"{gb(r['sent_bytes'] / n):>9} sent{per_step}")
    if t.by_op.height > top:
        out.append(f"... {t.by_op.height - top} more op(s)")
    return out


def _figure(s: Store, unit: str) -> Figure:
    t = measure(s)
    if t is None:
        return Figure(None, "GB", "", "no NCCL COLL lines (NCCL_DEBUG_SUBSYS with COLL)")
    n = {"step": t.steps, "micro-step": t.micro_steps}[unit]
    if not n:
        return Figure(None, "GB", "",
                      "no optimizer step logged" if unit == "step" else "no gradient accumulation logged")
    sent = t.per("sent_bytes", unit)
    parts = ", ".join(f"{op} {gb(v)}" for op, v in sent.items() if v >= 1e3)
    total = sum(sent.values())
    return Figure(total / 1e9, "GB", "NCCL COLL", f"{n} {unit}(s)", f"{gb(total)} sent per rank ({parts})")


def per_step(s: Store) -> Figure:
    """Bytes one rank sent through collectives per optimizer step, all ops together (the parts by op)."""
    return _figure(s, "step")


def per_micro_step(s: Store) -> Figure:
    """The same per micro-step (optimizer steps x gradient accumulation)."""
    return _figure(s, "micro-step")
