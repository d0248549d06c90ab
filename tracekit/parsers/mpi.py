"""What MPI launchers and Horovod say of a job's processes (Open MPI / PRRTE, Horovod's stall inspector).

Open MPI: ``[host:pid] *** Process received signal ***`` then ``[host:pid] Signal: Aborted (6)`` (a
``signal`` event for that process; ``*** The Open MPI ... is aborting the MPI job`` is known: MPI ending
the job after an error it reported above),
``Process name: [[44912,1],251]`` then ``Exit code: 3`` in mpirun's notice (a ``child_failed`` event of
rank 251, exit code 3). Horovod's stall inspector: ``One or more tensors were submitted to be reduced,
gathered or broadcasted by subset of ranks and are waiting for remainder of ranks ...`` (a ``stall``),
then one line per stalled tensor ``NAME [missing ranks: 1, 3]`` (a ``rank_missing`` event per missing
rank, ``op`` the Horovod op) or ``NAME [ready ranks: 5, 6]`` (known: the ranks that are there).
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of

SIGNAL = r"^\[(?P<host>[\w.\-]+):(?P<pid>\d+)\] Signal: (?P<signal>[\w ]+?) \((?P<signum>\d+)\)"
ABORTING = r"\*\*\* The Open MPI .* is aborting the MPI job"
PROCESS_NAME = r"^\s+Process name:\s+\[\[\d+,\d+\],(?P<rank>\d+)\]"
EXIT_CODE = r"^\s+Exit code:\s+(?P<exit_code>-?\d+)"
HOROVOD_STALL = r"One or more tensors were submitted to be (?:reduced|gathered|broadcasted).* by subset of ranks"
STALLED = r"(?:^|Stalled ops:\s*|\] )(?P<name>\S*Horovod(?P<op>Allreduce|Allgather|Broadcast|Alltoall|ReduceScatter)\S*) \[missing ranks: (?P<ranks>[\d, ]+)\]"
READY = r"\S*Horovod\w+\S* \[ready ranks: [\d, ]+\],?\s*$"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("mpi")
    t = pl.col("text")
    df = lines.select("file", "line", "text", "launch_rank")
    mine = df.filter(t.str.contains(any_of(SIGNAL, ABORTING, PROCESS_NAME, EXIT_CODE, HOROVOD_STALL, STALLED, READY)))
    if not mine.height:
        return Parsed("mpi")
    events = []
    sig = mine.filter(t.str.contains(SIGNAL))
    if sig.height:
        g = t.str.extract_groups(SIGNAL).struct
        events.append(sig.with_columns(pl.lit("signal").alias("kind"), g.field("host").alias("host"),
                                       g.field("pid").cast(pl.Int64).alias("pid"),
                                       pl.format("Signal {} ({}) received by PID {}", g.field("signal"), g.field("signum"), g.field("pid"))
                                       .alias("message"), pl.col("launch_rank").alias("rank")))
    # mpirun's notice: the process name (its rank) sits a line above its exit code
    named = df.with_columns(t.str.extract(PROCESS_NAME, 1).cast(pl.Int64, strict=False).forward_fill(limit=2).over("file").alias("_r"),
                            t.str.extract(EXIT_CODE, 1).cast(pl.Int64, strict=False).alias("exit_code"))
    exited = named.filter(pl.col("exit_code").is_not_null() & pl.col("_r").is_not_null())
    if exited.height:
        events.append(exited.with_columns(pl.lit("child_failed").alias("kind"), pl.col("_r").alias("rank"),
                                          pl.format("mpirun: rank {} exited with code {}", "_r", "exit_code").alias("message"),
                                          pl.lit("mpirun").alias("where")))
    stall = mine.filter(t.str.contains(HOROVOD_STALL))
    if stall.height:
        events.append(stall.with_columns(pl.lit("stall").alias("kind"), t.alias("message"), pl.lit("horovod").alias("where"),
                                         pl.col("launch_rank").alias("rank")))
    stalled = mine.filter(t.str.contains(STALLED))
    if stalled.height:
        g = t.str.extract_groups(STALLED).struct
        events.append(stalled.with_columns(g.field("ranks").str.split(",").alias("_m"), g.field("op").str.to_lowercase().alias("op"))
                      .explode("_m").with_columns(pl.col("_m").str.strip_chars().cast(pl.Int64, strict=False).alias("rank"),
                                                  pl.lit("rank_missing").alias("kind"), t.alias("message"), pl.lit("horovod").alias("where")))
    out = pl.concat(events, how="diagonal_relaxed").drop("text", "launch_rank", "_r", "_m", strict=False) if events else None
    return Parsed("mpi", {"events": out}, mine.select("file", "line"))
