"""torchrun's elastic agent, in its own words: the launch, each rendezvous (one per attempt), a failed
worker group with the attempts left, the group stopped for a restart, and a group that finished.

The messages, as torch/distributed/launcher/api.py and torch/distributed/elastic/agent/server/api.py
log them (INFO: torchrun prints them with ``LOGLEVEL=INFO``; docs/formats.md, "PyTorch")::

    Starting elastic_operator with launch configs:
      entrypoint               : train.py
      run_id                   : job42
      max_restarts             : 1
    [default] Rendezvous complete for workers. Result:
      restart_count=1
      master_addr=localhost
      group_rank=0
      group_world_size=2
      global_ranks=[0, 1]
    [default] Worker group FAILED. 1/1 attempts left; will restart worker group
    [default] Stopping worker group
    [default] Rendezvous'ing worker group
    [default] worker group successfully finished. Waiting 300 seconds for other agents to finish.

Each becomes one ``events`` row; a block's values (the lines under its head, glog prefix or not) are
its ``message`` as ``key=value`` words (lists without spaces: ``global_ranks=[0,1]``), which
``fields`` reads back (a one-line message keeps its words, and its values in ``frames``). A rendezvous
says the world's size: a ``ranks`` row that names no process. ``ts``: glog's ``MMDD HH:MM:SS.ffffff``.
``runs.py`` tells attempts apart by run id and restart count with them.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

# torch's glog-like prefix on every line of a block (`I1204 17:08:23.661000 26620 torch/.../api.py:254] `)
GLOG = r"^[IWEF](?P<ts>\d{4} \d\d:\d\d:\d\d\.\d+) +(?P<pid>\d+) [\w/.\-]+:\d+\] ?"
LAUNCH = r"Starting elastic_operator with launch configs:"
RENDEZVOUS = r"\[(?P<role>[\w\-]+)\] Rendezvous complete for workers\. Result:"
LAUNCH_KEYS = ("entrypoint", "min_nodes", "max_nodes", "nproc_per_node", "run_id", "rdzv_backend",
               "rdzv_endpoint", "max_restarts")
LAUNCH_VALUE = r"^\s+(?P<key>[a-z_]+)\s+: (?P<value>.*?)\s*$"
RENDEZVOUS_VALUE = (r"^\s+(?P<key>restart_count|master_addr|master_port|group_rank|group_world_size"
                    r"|local_ranks"
                    r"|role_ranks|global_ranks|role_world_sizes|global_world_sizes)=(?P<value>.*?)\s*$")
FAILED = (r"\[(?P<role>[\w\-]+)\] Worker group (?P<state>[A-Z]+)\. (?P<left>\d+)/(?P<max>\d+) attempts left;"
          r" will restart worker group")
STOPPING = r"\[(?P<role>[\w\-]+)\] Stopping worker group$"
REJOIN = r"\[(?P<role>[\w\-]+)\] Rendezvous'ing worker group$"
MEMBERSHIP = (r"\[(?P<role>[\w\-]+)\] Detected (?P<n>\d+) new nodes from group_rank=(?P<rank>\d+);"
              r" will restart")
SUCCEEDED = r"\[(?P<role>[\w\-]+)\] worker group successfully finished\."
#: the single-line messages: their kind, and their pattern
SINGLE = {EventKind.ELASTIC_FAILED: FAILED, EventKind.ELASTIC_STOP: STOPPING,
          EventKind.ELASTIC_REJOIN: REJOIN, EventKind.ELASTIC_MEMBERSHIP: MEMBERSHIP,
          EventKind.CLEAN_EXIT: SUCCEEDED}
BLOCK_LINES = 30  # a block's values follow its head within this many lines (the launch block: 18)
CHEAP = r"elastic_operator|Rendezvous|[Ww]orker group|new nodes from group_rank|(?:^|\] )\s+\w+\s*[:=]"


def fields(message: str | None) -> dict[str, str]:
    """The ``key=value`` words of an elastic event's message."""
    return dict(re.findall(r"(\w+)=(\S+)", message or ""))


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("elastic")
    body = pl.col("text").str.replace(GLOG, "")
    df = (lines.select("file", "line", "text").filter(pl.col("text").str.contains(CHEAP))
          .with_columns(body.alias("body"), pl.col("text").str.extract(GLOG, 2).cast(pl.Int64).alias("pid"),
                        pl.col("text").str.extract(GLOG, 1).alias("ts")))  # glog's month, day and time
    if not df.height:
        return Parsed("elastic")
    b = pl.col("body")
    launch = _block(df, b.str.contains(LAUNCH), EventKind.ELASTIC_LAUNCH, LAUNCH_VALUE, LAUNCH_KEYS)
    rdzv = _block(df, b.str.contains(RENDEZVOUS), EventKind.ELASTIC_RENDEZVOUS, RENDEZVOUS_VALUE, None)
    singles = []
    for kind, pattern in SINGLE.items():
        g = b.str.extract_groups(pattern).struct
        got = df.filter(b.str.contains(pattern))
        if not got.height:
            continue
        extra = (pl.format("state={} attempts_left={} max_restarts={}", g.field("state"), g.field("left"),
                           g.field("max")) if kind == EventKind.ELASTIC_FAILED
                 else pl.format("new_nodes={} group_rank={}", g.field("n"), g.field("rank"))
                 if kind == EventKind.ELASTIC_MEMBERSHIP else pl.lit(""))
        singles.append(got.with_columns(
            pl.lit(kind).alias("kind"), b.str.strip_chars().alias("message"),
            pl.concat_str(pl.format("role={} ", g.field("role")), extra).str.strip_chars().alias("frames"),
            pl.when(pl.lit(kind == EventKind.CLEAN_EXIT)).then(0).alias("exit_code"),
            pl.lit("torchrun agent").alias("where")))
    events = [e for e, _ in (launch, rdzv) if e.height] + [s.drop("text", "body") for s in singles]
    if not events:
        return Parsed("elastic")
    claimed = pl.concat([launch[1], rdzv[1]] + [s.select("file", "line") for s in singles]).unique()
    events = pl.concat(events, how="diagonal_relaxed")
    # the world a rendezvous made (`global_world_sizes=[2,2]`): a ranks row naming no process
    world = (events.filter(pl.col("kind") == EventKind.ELASTIC_RENDEZVOUS)
             .select("file", pl.col("message").str.extract(r"global_world_sizes=\[(\d+)", 1).cast(pl.Int64)
                     .alias("world_size"))
             .drop_nulls().unique().with_columns(pl.lit("torchrun-agent").alias("source")))
    return Parsed("elastic", {"events": events, "ranks": world}, claimed)


def _block(df: pl.DataFrame, head: pl.Expr, kind: str, value: str, keep: tuple[str, ...] | None):
    """A block's head as one event whose message holds the values of the lines under it, and the
    lines it claimed (its head and its values)."""
    heads = df.filter(head).select("file", "line", "pid", "ts", pl.col("line").alias("_head"))
    claimed = pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64})
    if not heads.height:
        return pl.DataFrame(), claimed
    kv = df.filter(pl.col("body").str.contains(value)).select(
        "file", "line", pl.col("body").str.extract_groups(value).alias("_kv")).unnest("_kv")
    if keep is not None:
        kv = kv.filter(pl.col("key").is_in(keep))
    kv = (kv.sort("file", "line").join_asof(heads.sort("file", "line").select("file", "line", "_head"),
                                             on="line", by="file", strategy="backward", tolerance=BLOCK_LINES,
                                             check_sortedness=False)
          .filter(pl.col("_head").is_not_null()))
    words = kv.group_by("file", "_head").agg(
        pl.concat_str("key", pl.lit("="), pl.col("value").str.replace_all(r"\s+", "")).sort_by("line")
        .str.join(" ").alias("message"))
    events = heads.join(words, on=["file", "_head"], how="left").select(
        "file", "line", "pid", "ts", pl.lit(kind).alias("kind"), pl.col("message").fill_null(""),
        pl.lit("torchrun agent").alias("where"))
    claimed = pl.concat([heads.select("file", "line"), kv.select("file", "line")])
    return events, claimed
