"""The runtimes' own checks that the ranks called the same collective, where they print what differed:

- HCCL's parameter check (Ascend CANN, error code EI0005, printed by torch_npu, MindSpore and the GE
  runtime under ``Ascend Error Message``): ``EI0005: The arguments for collective communication are
  inconsistent between ranks: tag [HcomAllReduce_6629421139219749105_0], parameter [count], local [9556480],
  remote [9555712]``; older and newer CANN word it ``...:parameter count, local end 16512, remote end 8320``
  and ``..., operator HcomAllReduce, group hccl_world_group, parameter count, local rank 2176, remote rank
  8320``; CANN's own log says ``CMD information tag check fail`` (the check runs when the two ranks' link is
  set up: tag, op type, data size, buffer size, data type are compared);
- Horovod's coordinator (horovod/common/controller.cc, ``ConstructResponse``): ``Mismatched data types: One
  rank had type float32, but another rank had type int64.``, ``Mismatched ALLREDUCE tensor shapes: ...``,
  ``Mismatched allgather tensor shapes``, ``Mismatched MPI operations: One rank did an allreduce, but another
  rank did a broadcast.``, ``Mismatched root ranks``, ``Mismatched CPU/GPU device selection``, ``Mismatched
  reduce operations``, ``Mismatched prescale and/or postscale factors``;
- MPI's receive that got more than its buffer holds (a send and a receive of different sizes): Open MPI's
  ``MPI_ERR_TRUNCATE: message truncated``, MPICH's ``Message truncated; 400 bytes received but buffer size is
  200``.

Each is a ``collective_mismatch`` event with the check's own words (the parameter and both sides where the
line
gives them), which rules_mismatch.mismatch_reported decides on; the line is claimed.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

HCCL = r"(?:EI0005:?\s*(?:[\d.:-]+\s+)?)?The arguments for collective communication are inconsistent between ranks"
HCCL_LOG = r"CMD information \S+ check fail"
HOROVOD = (r"Mismatched (?:\w+ )?(?:data types|root ranks|CPU/GPU device selection|reduce operations"
           r"|prescale and/or postscale factors|operations|tensor shapes)")
MPI = r"MPI_ERR_TRUNCATE|Message truncated; \d+ bytes received but buffer size is \d+"
#: what HCCL's check compared: the operator (the tag's head), the parameter, the local and the remote values
HCCL_SAID = (r"tag ?\[(?P<op>[A-Za-z]+)[^\]]*\].{0,20}?parameter ?\[(?P<param>[^\]]+)\].{0,20}?local ?\[(?P<local>[^\]]*)\]"
             r".{0,20}?remote ?\[(?P<remote>[^\]]*)\]")
CHECKS = ((HCCL, "HCCL's consistency check (EI0005)"), (HCCL_LOG, "HCCL's consistency check (EI0005)"),
          (HOROVOD, "Horovod's coordinator"), (MPI, "MPI"))
#: the op a check names: HCCL's tag `HcomAllReduce_...` or `operator HcomAllReduce`, Horovod's `ALLREDUCE`
OP = r"(?i)Hcom(AllReduce|AllGather|Broadcast|ReduceScatter|AllToAllV?|Reduce|Send|Receive)|Mismatched (ALLREDUCE|ALLGATHER|BROADCAST|ALLTOALL|REDUCESCATTER)\b"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("collective-checks")
    t = pl.col("text")
    df = lines.filter(t.str.contains("inconsistent between ranks|check fail|Mismatched |MPI_ERR_TRUNCATE"
                                     "|Message truncated;")).select("file", "line", "text")
    parts = []
    for pattern, who in CHECKS:
        hit = df.filter(t.str.contains(pattern))
        if hit.height:
            said = t.str.slice(t.str.find(pattern)).str.strip_chars()
            if pattern == HCCL:  # (its boilerplate out: what differs, with both sides, is the fact)
                g = t.str.extract_groups(HCCL_SAID)
                said = pl.when(g.struct.field("op").is_not_null()).then(pl.format(
                    "the ranks called {} with a different {} (local {}, remote {})", g.struct.field("op"),
                    g.struct.field("param"), g.struct.field("local"), g.struct.field("remote"))
                ).otherwise(pl.format("the ranks' collective arguments differ{}", said.str.replace(
                    HCCL + r"\s*[:,]?", "").str.strip_chars().str.replace(r"^(\S)", ": $1")))
            parts.append(hit.select(
                "file", "line", pl.lit(EventKind.COLLECTIVE_MISMATCH).alias("kind"),
                pl.format("{}: {}", pl.lit(who), said.str.slice(0, 300)).alias("message"),
                pl.coalesce(t.str.extract(OP, 1), t.str.extract(OP, 2)).str.to_lowercase().alias("op"),
                pl.lit(who).alias("where")))
    if not parts:
        return Parsed("collective-checks")
    events = pl.concat(parts).unique(["file", "line"], keep="first", maintain_order=True)
    return Parsed("collective-checks", {"events": events}, events.select("file", "line"))
