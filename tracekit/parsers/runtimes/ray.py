"""Ray's own lines about its workers (github:ray-project/ray): the raylet's and the core worker's word that
a worker process died, and the memory monitor's that it killed one.

- The raylet (``src/ray/raylet/node_manager.cc``), pushed to the driver under ``(raylet)`` or logged by
  ``worker.py``: ``A worker died or was killed while executing a task by an unexpected system error. ...
  RayTask ID: .. Worker ID: .. Node ID: .. Worker IP address: 10.0.1.75 Worker port: 10230 Worker PID:
  207258 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection
  error code 2. End of file. ...`` (the worker's socket closed: it was SIGKILLed, crashed or stopped).
- The core worker, as an actor's call fails: ``The actor is dead because its worker process has died.
  Worker exit type: .. Worker exit detail: ..``, and ``ray.exceptions.ActorDiedError``'s block: ``The actor
  died unexpectedly before finishing this task.`` then ``class_name: X``, ``actor_id: ..``, ``pid: 92789``,
  ``namespace: ..``, ``ip: 172.17.0.8``.
- The memory monitor (``src/ray/common/memory_monitor.cc``, ``ray.exceptions.OutOfMemoryError``): ``Memory
  on the node (IP: 10.20.49.141, ID: ..) where the task (actor ID: .., name=.., pid=4100606, memory used=..GB)
  was running was 240.0GB / 251.6GB (0.95), which exceeds the memory usage threshold of 0.95. Ray killed
  this worker (ID: ..) because it was the most recently scheduled task``: the host ran out of memory.

Each is a ``crash`` of that worker, its host and pid in ``ranks`` (Ray numbers no rank: a worker's rank is
its framework's, from its own lines). The exception lines themselves (``ActorDiedError: ...``,
``RayTaskError(X): ...``) are torch_log's; placement groups and the Ray Train set-up say nothing of a death.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

WORKER_DIED = r"A worker died or was killed while executing (?:a )?task"
ACTOR_DEAD = r"The actor is dead because its worker process has died|The actor died unexpectedly before"
CONNECTION = r"Worker unexpectedly exits with a connection error code (?P<code>\d+)"
OOM_KILL = (r"Memory on the node \(IP: (?P<host>[\w.\-:]+)[,)].*?pid=(?P<pid>\d+).*?"
            r"(?:exceeds the memory usage threshold|Ray killed this worker)")
IP = r"Worker IP address: (?P<host>[\w.\-:]+)"
PID = r"Worker PID: (?P<pid>\d+)"
EXIT = r"Worker exit type: (?P<type>\w+)(?: Worker exit detail: (?P<detail>[^.]*\.))?"
# the memory monitor's table of the node's top processes under its report: `PID\tMEM(GB)\tCOMMAND` then rows
TOP_HEAD = r"^PID\s+MEM(?:\(GB\))?\s+COMMAND\s*$"
TOP_ROW = r"^\d+\s+\d+(?:\.\d+)?\s+\S"
OOM_ADVICE = (r"^Refer to the documentation on how to address the out of memory issue"
              r"|^Consider provisioning more memory on this node or reducing task parallelism")
# ActorDiedError's block: a tab-indented `key: value` per line under `The actor died unexpectedly ...`
FIELD = r"^\s+(?P<key>class_name|actor_id|pid|namespace|ip|name|node_id|job_id): (?P<value>\S+)\s*$"
CHEAP = (r"worker process has died|A worker died|actor died|Memory on the node|^\s+\w+: \S+\s*$|^PID\s"
         r"|^\d+\s+\d+(?:\.\d+)?\s+\S|^Refer to the documentation|^Consider provisioning")


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("ray")
    t = pl.col("text")
    df = lines.filter(t.str.contains(CHEAP)).select("file", "line", "text", "launch_rank")
    died = df.filter(t.str.contains(WORKER_DIED) | t.str.contains(ACTOR_DEAD) | t.str.contains(CONNECTION))
    oom = df.filter(t.str.contains(OOM_KILL))
    fields = _actor_fields(df)
    table = _top_table(df)
    if not (died.height or oom.height or fields.height or table.height):
        return Parsed("ray")
    crash = died.with_columns(t.str.extract(IP, 1).alias("host"),
                              t.str.extract(PID, 1).cast(pl.Int64).alias("pid"))
    crash = crash.with_columns(death_message(t).alias("message"))
    oom = oom.with_columns(t.str.extract_groups(OOM_KILL).alias("_g")).unnest("_g").with_columns(
        pl.col("pid").cast(pl.Int64),
        pl.format("Ray's memory monitor killed worker pid {} on {}: the node ran out of host memory (OOM)",
                  "pid", "host").alias("message"))
    crash = crash.with_columns(pl.lit(EventKind.CHILD_FAILED).alias("kind"),
                               pl.lit("ray (raylet)").alias("where"))
    oom = oom.with_columns(pl.lit(EventKind.CRASH).alias("kind"),
                           pl.lit("ray (memory monitor)").alias("where"))
    events = pl.concat([crash, oom], how="diagonal_relaxed").select(
        "file", "line", "kind", "host", "pid", pl.col("launch_rank").alias("rank"), "where", "message")
    ranks = (pl.concat([events.select("file", "host", "pid", "rank"), fields.drop("line")],
                       how="diagonal_relaxed")
             .filter(pl.col("host").is_not_null() | pl.col("pid").is_not_null()))
    claimed = pl.concat([d.select("file", "line") for d in (died, oom, fields, table)])
    return Parsed("ray", {"events": events, "ranks": ranks.unique(maintain_order=True)}, claimed)


def death_message(text: pl.Expr) -> pl.Expr:
    """What a worker's death line says, in words: the worker (its pid and host, from the frame's ``pid`` and
    ``host`` columns), Ray's exit type and its detail."""
    detail = pl.coalesce(text.str.extract(EXIT, 2),
                         pl.format("Worker unexpectedly exits with a connection error code {}",
                                   text.str.extract(CONNECTION, 1)),
                         text.str.extract(EXIT, 1))
    kind = text.str.extract(EXIT, 1)
    return pl.concat_str(
        pl.when(text.str.contains(WORKER_DIED)).then(pl.lit("a Ray worker died or was killed"))
        .otherwise(pl.lit("a Ray actor's worker process died")),
        pl.when(pl.col("pid").is_not_null()).then(pl.format(" (pid {} on {})", "pid", "host"))
        .when(pl.col("host").is_not_null()).then(pl.format(" (on {})", "host")).otherwise(pl.lit("")),
        pl.when(kind.is_not_null()).then(pl.format(", Worker exit type {}", kind)).otherwise(pl.lit("")),
        pl.when(detail.is_not_null() & (detail != kind)).then(pl.format(": {}", detail))
        .otherwise(pl.lit("")),
        pl.lit(" (the raylet lost its socket: killed by SIGKILL, the OOM killer, a crash or ray stop)"))


def _actor_fields(df: pl.DataFrame) -> pl.DataFrame:
    """``file, line, host, pid`` of ActorDiedError's ``pid:`` / ``ip:`` lines (the block's other keys:
    host and pid null), only within six lines under ``The actor died unexpectedly``."""
    t = pl.col("text")
    head = df.filter(t.str.contains(ACTOR_DEAD)).select("file", pl.col("line").alias("_head"))
    near = (df.filter(t.str.contains(FIELD)).join(head, on="file")
            .filter((pl.col("line") > pl.col("_head")) & (pl.col("line") <= pl.col("_head") + 6))
            .unique(["file", "line"]))
    if not near.height:
        return pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64, "host": pl.Utf8, "pid": pl.Int64})
    g = t.str.extract_groups(FIELD).struct
    near = near.with_columns(g.field("key").alias("_k"), g.field("value").alias("_v"))
    ip = near.filter(pl.col("_k") == "ip").group_by("file", "_head").agg(pl.col("_v").first().alias("host"))
    pid = near.filter(pl.col("_k") == "pid").group_by("file", "_head").agg(
        pl.col("_v").first().cast(pl.Int64, strict=False).alias("pid"))
    who = ip.join(pid, on=["file", "_head"], how="full", coalesce=True)
    return near.join(who, on=["file", "_head"], how="left").select("file", "line", "host", "pid")


def _top_table(df: pl.DataFrame) -> pl.DataFrame:
    """``file, line`` of the memory monitor's table (its header and the rows right under it) and advice."""
    t = pl.col("text")
    head = df.filter(t.str.contains(TOP_HEAD)).select("file", pl.col("line").alias("_head"))
    rows = (df.filter(t.str.contains(TOP_ROW)).join(head, on="file")
            .filter((pl.col("line") > pl.col("_head")) & (pl.col("line") <= pl.col("_head") + 20)))
    return pl.concat([df.filter(t.str.contains(TOP_HEAD) | t.str.contains(OOM_ADVICE)).select("file", "line"),
                      rows.select("file", "line")]).unique()
