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
reader (``parsers/salient.py``) quotes it as a wait where nothing else decides.

A TPU slice's failure as its runtime reports it (the maxtext docs' "Slice Failure / Chip Driver Error", from
libtpu's glog lines on worker 0, the coordinator): ``session_master.cc:539] The task with address
tpu-job-5-38.headless-svc:8471 missed 1 health checks.``, ``session_master.cc:505] Session is failing with the
following status: Session master detected TPU session error from worker tpu-job-5-15...``,
``tpunetd_client.cc:311] Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR in session e6c8...``, and a chip's
own ``*** A program or fatal error occurred, all pending programs will fail ... Physical location: tpu3:pe2:2``.
Each is a ``crash`` event (a worker that stopped answering, a chip or its driver that failed): the first of
them names the worker that failed first; the session's failure after it is its consequence."""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

POD = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?P<worker>(?:\d{1,3}\.){3}\d{1,3}|[\w\-]+) \[\d+\] "
LEVEL = r"(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: )?[IWEF] +\d+ \S*mesh_service\.cc:\d+\] "
WAIT = LEVEL + r"Waiting to connect to client mesh master \(\d+ seconds\) (?P<master>[\w.\-]+):\d+"
#: a TPU slice's failure (libtpu's session master and tpunetd client, a chip's fatal error), its words -> ours
TPU_FAILED = {
    r"The task with address (\S+?)(?::\d+)? missed (\d+) health checks?":
        "TPU worker {1} missed {2} health check(s) (the coordinator's heartbeat to it failed: the worker's "
        "VM, chip or runtime failed); that worker's own log says why",
    r"Session master detected TPU session error from worker (\S+?)(?::\d+)?\.":
        "the TPU session failed: its coordinator detected an error from worker {1}",
    r"Detected failure (SLICE_FAILURE_\w+)":
        "the TPU slice failed: {1} (libtpu's tpunetd: a chip or its driver on one worker failed; the "
        "worker's log and the node pool's health name the bad host)",
    r"A program or fatal error occurred, all pending programs will fail.*?Physical location: (\S+)":
        "a TPU chip at {1} hit a fatal error (a compiler bug or bad TPU hardware; repeated on the same "
        "machine: bad hardware)",
}


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("xla")
    t = pl.col("text")
    failed = _tpu_failed(lines)
    hit = lines.filter(t.str.contains("mesh master", literal=True) & t.str.contains(WAIT))
    if not hit.height:
        return Parsed("xla", {"events": failed}, failed.select("file", "line")) if failed.height else Parsed("xla")
    hit = hit.with_columns(t.str.extract(POD, 1).alias("_worker"), t.str.extract(WAIT, 1).alias("_master"))
    ranks = (pl.concat([hit.select("file", pl.col(c).alias("host")) for c in ("_worker", "_master")])
             .drop_nulls().unique(maintain_order=True))
    if not failed.height:
        return Parsed("xla", {"ranks": ranks})
    return Parsed("xla", {"ranks": ranks, "events": failed}, failed.select("file", "line"))


def _tpu_failed(lines: pl.DataFrame) -> pl.DataFrame:
    """The TPU runtime's failure lines (``TPU_FAILED``) as ``crash`` events, in our words with theirs."""
    t = pl.col("text")
    cheap = lines.filter(t.str.contains("health check|TPU session error|SLICE_FAILURE_|fatal error occurred"))
    parts = []
    for said, ours in TPU_FAILED.items():
        hit = cheap.filter(t.str.contains(said))
        if not hit.height:
            continue
        groups = [t.str.extract(said, i + 1) for i in range(ours.count("{"))]
        text = pl.format(ours.replace("{1}", "{}").replace("{2}", "{}"), *groups)
        parts.append(hit.select("file", "line", pl.lit(EventKind.CRASH).alias("kind"), text.alias("message"),
                                pl.lit("tpu runtime").alias("where")))
    return pl.concat(parts) if parts else pl.DataFrame()
