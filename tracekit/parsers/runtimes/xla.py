"""PyTorch/XLA's mesh service and its pod launcher (github:pytorch/xla: ``xla_client/mesh_service.cc``,
``torch_xla/distributed/xla_dist.py``).

A TPU pod's workers meet at the mesh master (worker 0's host) before any collective: ``2020-05-28
11:50:27.058553: I    7449 tensorflow/compiler/xla/xla_client/mesh_service.cc:208] Waiting to connect to
client mesh master (300 seconds) 10.164.15.199:8477``. ``xla_dist`` prefixes each worker's line with the
time, the worker's address and its index: ``2020-05-28 11:50:27 10.164.15.200 [1] `` (the index is a VM's,
not a rank).

The waiting worker's host (the prefix's) and the mesh master's host go to ``ranks``: hosts of the job, no
rank. The wait itself makes no event and is left unclaimed: it is printed on every start, and only its
repetition past the timeout (which the excerpt may not show) says the rendezvous failed, so the fallback
reader (``parsers/salient.py``) quotes it as a wait where nothing else decides."""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed

POD = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?P<worker>(?:\d{1,3}\.){3}\d{1,3}|[\w\-]+) \[\d+\] "
LEVEL = r"(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: )?[IWEF] +\d+ \S*mesh_service\.cc:\d+\] "
WAIT = LEVEL + r"Waiting to connect to client mesh master \(\d+ seconds\) (?P<master>[\w.\-]+):\d+"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("xla")
    t = pl.col("text")
    hit = lines.filter(t.str.contains("mesh master", literal=True) & t.str.contains(WAIT))
    if not hit.height:
        return Parsed("xla")
    hit = hit.with_columns(t.str.extract(POD, 1).alias("_worker"), t.str.extract(WAIT, 1).alias("_master"))
    ranks = (pl.concat([hit.select("file", pl.col(c).alias("host")) for c in ("_worker", "_master")])
             .drop_nulls().unique(maintain_order=True))
    return Parsed("xla", {"ranks": ranks})
