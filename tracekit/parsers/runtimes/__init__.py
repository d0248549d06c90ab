"""Other runtimes' own lines, one module of this package per runtime family, read as one format: UCX
(``ucx``), Ray (``ray``), TensorPipe (``tensorpipe``), PyTorch/XLA (``xla``), Ascend CANN's log lines
(``cann``), c10d's desync report of the ranks that never joined a timed-out collective (``c10d_desync``),
the NVIDIA driver's Xid lines of a GPU that failed (``nvrm``), the verbs' failed work outside NCCL
(``verbs``: libmlx5's error completion, Open MPI's openib), the runtimes' own checks that the ranks called
the same collective (``collective_checks``: HCCL's EI0005, Horovod's coordinator, MPI's truncated receive)
and a program's own per-rank prints of the tensor it passes to a collective (``rank_prints``). Each decodes
its lines into the existing event kinds with the host and pid that wrote them, so the rules decide on them
as on torch's and NCCL's; their ``ranks`` rows carry the source ``runtimes``."""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.parsers.runtimes import (c10d_desync, cann, collective_checks, nvrm, rank_prints, ray, tensorpipe,
                                       ucx, verbs, xla)

FAMILIES = (ucx, ray, tensorpipe, xla, cann, c10d_desync, nvrm, verbs, collective_checks, rank_prints)


def parse(lines: pl.DataFrame) -> Parsed:
    found = [p for p in (f.parse(lines) for f in FAMILIES) if p.found]
    if not found:
        return Parsed("runtimes")
    tables = {}
    for name in ("events", "ranks"):
        parts = [p.tables[name] for p in found if p.tables.get(name) is not None and p.tables[name].height]
        if parts:
            tables[name] = pl.concat(parts, how="diagonal_relaxed")
    if "ranks" in tables:
        tables["ranks"] = tables["ranks"].with_columns(pl.lit("runtimes").alias("source"))
    claimed = pl.concat([p.claimed for p in found]).unique()
    return Parsed("runtimes", tables, claimed)
