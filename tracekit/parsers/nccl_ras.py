"""The report of NCCL's RAS client (``ncclras``, NCCL 2.24+): the job, its communicators and what is wrong.

::

    Job summary / =========== / Nodes Processes GPUs ... / 4 8 1 32 32
    Communicators... (0.00s)
    Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
        0         1         4         8        32        32   RUNNING  MISMATCH
    Errors / Warnings
    #0-0 (fa93daea854b060b) MISMATCH
      Communicator ranks have different AllGather operation counts
      30 ranks have launched up to operation 640
      2 ranks have launched up to operation 641
      Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124

Ranks whose operation count is behind the others' never launched the next operation: a ``rank_missing``
event (rank null: the report counts them) with the operation they lack as ``seq``. A process the
report names gives its node and pid (the RAS client wrote these lines, not the rank: no rank is
claimed). The world is the ranks of group 0 where it is one communicator holding every rank of the group.
Under ``DEAD`` (``2 job processes are considered dead (unreachable via the RAS network)``) each
``Process P on node H managing GPU G`` line is a ``crash`` event of that process (github:NVIDIA/nccl
src/ras/client_support.cc: its RAS thread stopped answering: the process died or its node went away);
``INCOMPLETE``'s processes only sent no data, and make no event.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of
from tracekit.schema import EventKind

MARK = r"^(?:Job summary|Communicators\.\.\. \(|Group\s+Comms\s+Nodes\s+Ranks)"
KNOWN = [
    r"^Job summary$", r"^=+$", r"^Communicators\.\.\. \([\d.]+s\)$", r"^(?:Errors|Warnings)$",
    r"^\s*(?:\(total\)\s+)?(?:Nodes|per node|Processes|GPUs|per process|\(total\))"
    r"(?:\s+(?:Processes|GPUs|per node|per process|\(total\)))*\s*$",
    r"^\s*\d+(?:\s+\d+){2,4}\s*$", r"^Group\s+Comms\s+Nodes", r"^\s*#\s+in group\s+per comm",
    r"^The outlier node:",
    r"^\s*Node \S+ running processes", r"^CUDA runtime version \d+, driver version \d+",
    r"^\s*Missing communicator data from \d+ (?:job process|ranks?|job processes)",
    r"^(?:INCOMPLETE|MISMATCH|TIMEOUT|OK)$",
    r"^#\d+-\d+ \([0-9a-f]+\) [A-Z,]+$", r"^\s*Communicator ranks have different \w+ operation counts",
    r"^DEAD$", r"^\s*\d+ job process(?:es are| is) considered dead",
    r"^\s*\[could not find information on \d+ process",
]
GROUP_ROW = (r"^\s*(?P<group>\d+)\s+(?P<comms>\d+)\s+(?P<nodes>\d+)\s+(?P<per_node>\d+)\s+"
             r"(?P<per_comm>\d+)\s+(?P<in_group>\d+)\s+(?P<status>[A-Z]+)\s+\S+\s*$")
LAUNCHED = r"^\s*(?P<n>\d+) ranks? ha(?:s|ve) launched up to operation (?P<op_count>\d+)"
OP_COUNTS = r"different (?P<op>\w+) operation counts"
PROCESS = (r"^\s*(?:Rank \d+ -- GPU \d+ managed by process (?P<pid>\d+) on node (?P<host>\S+)"
           r"|Process (?P<pid2>\d+) on node (?P<host2>\S+) managing GPUs? \S+)")


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("nccl-ras")
    t = pl.col("text")
    df = lines.select("file", "line", "text")
    files = df.filter(t.str.contains(MARK)).select("file").unique()
    if not files.height:
        return Parsed("nccl-ras")
    df = df.join(files, on="file", how="semi")
    known = df.filter(t.str.contains(any_of(*KNOWN, LAUNCHED, PROCESS, GROUP_ROW)))
    # the block (`#0-0 (...) MISMATCH`) each line belongs to, and the op its counts are of
    # the block (`#0-0 (...) MISMATCH`, or the job's `DEAD` / `INCOMPLETE`) each line belongs to
    head = t.str.contains(r"^#\d+-\d+ \(|^(?:DEAD|INCOMPLETE|TIMEOUT)$")
    df = df.with_columns(pl.when(head).then(pl.col("line")).forward_fill().over("file").alias("_block"),
                         pl.when(head).then(t.str.strip_chars()).forward_fill().over("file").alias("_said"),
                         t.str.extract(OP_COUNTS, 1).alias("op"))
    df = df.with_columns(pl.col("op").forward_fill().over("file", "_block"))
    counts = df.filter(t.str.contains(LAUNCHED)).with_columns(
        t.str.extract(LAUNCHED, 2).cast(pl.Int64).alias("_at"))
    behind = (counts.with_columns(pl.col("_at").max().over("file", "_block").alias("seq"))
              .filter(pl.col("_at") < pl.col("seq")))
    events = behind.select("file", "line", pl.lit(EventKind.RANK_MISSING).alias("kind"),
                           pl.col("op").str.to_lowercase(), "seq",
                           t.str.strip_chars().alias("message"), pl.lit("nccl ras").alias("where"))
    g = t.str.extract_groups(GROUP_ROW).struct
    rows = df.filter(t.str.contains(GROUP_ROW)).select(
        "file", *(g.field(f).alias(f) for f in ("group", "comms", "per_comm", "in_group")))
    world = rows.filter((pl.col("group") == "0") & (pl.col("comms") == "1")
                        & (pl.col("per_comm") == pl.col("in_group"))).select(
        "file", pl.col("per_comm").cast(pl.Int64).alias("world_size"))
    p = t.str.extract_groups(PROCESS).struct
    procs = df.filter(t.str.contains(PROCESS)).select(
        "file", pl.coalesce(p.field("host"), p.field("host2")).alias("host"),
        pl.coalesce(p.field("pid"), p.field("pid2")).cast(pl.Int64).alias("pid")).unique(maintain_order=True)
    # (the rank a block's `Rank 21 -- GPU 5 managed by process 3456 on node H` gives that process, said with it:
    # its communicator's rank, claimed nowhere)
    comm_rank = df.filter(t.str.contains(r"^\s*Rank \d+ -- GPU")).select(
        "file", p.field("pid").cast(pl.Int64).alias("pid"),
        t.str.extract(r"^\s*Rank (\d+) --", 1).alias("_crank")).unique(["file", "pid"])
    dead = df.filter(t.str.contains(PROCESS) & (pl.col("_said") == "DEAD")).select(
        "file", "line", pl.lit(EventKind.CRASH).alias("kind"), pl.lit("nccl ras").alias("where"),
        pl.coalesce(p.field("host"), p.field("host2")).alias("host"),
        pl.coalesce(p.field("pid"), p.field("pid2")).cast(pl.Int64).alias("pid"), t.str.strip_chars().alias("_t"))
    dead = dead.join(comm_rank, on=["file", "pid"], how="left").with_columns(
        pl.format("NCCL RAS: {} is considered dead (unreachable via the RAS network){}", "_t",
                  pl.when(pl.col("_crank").is_not_null()).then(pl.format(
                      "; its communicator's rank {} (the report's block names it)", "_crank"))
                  .otherwise(pl.lit(""))).alias("message")).drop("_t", "_crank")
    events = pl.concat([events, dead], how="diagonal_relaxed")
    ranks = pl.concat([world, procs], how="diagonal_relaxed").with_columns(pl.lit("nccl-ras").alias("source"))
    return Parsed("nccl-ras", {"events": events, "ranks": ranks}, known.select("file", "line"))
