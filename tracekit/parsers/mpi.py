"""What MPI launchers and Horovod say of a job's processes (Open MPI / PRRTE, Horovod's stall inspector).

Open MPI: ``[host:pid] *** Process received signal ***`` then ``[host:pid] Signal: Aborted (6)`` (a
``signal`` event for that process; ``*** The Open MPI ... is aborting the MPI job`` is known: MPI ending
the job after an error it reported above),
``Process name: [[44912,1],251]`` then ``Exit code: 3`` in mpirun's notice (a ``child_failed`` event of
rank 251, exit code 3); without those, ``Primary job terminated normally, but 1 process returned a
non-zero exit code`` is a ``crash`` event of a rank not named.

Horovod's stall inspector: ``One or more tensors were submitted to be reduced, gathered or broadcasted by
subset of ranks and are waiting for remainder of ranks ...`` (a ``stall``), then per stalled tensor
(github:horovod/horovod ``horovod/common/stall_inspector.cc``, by version) ``NAME [missing ranks: 1, 3]``,
or ``NAME [ready ranks: 5, 6]`` (the ranks that are there: those missing are the others of ``mpirun -np
N``, else the numbers below the highest ready one), or under ``Missing ranks:`` a line ``1: [NAME, NAME]``
per missing rank; several may share a line (``Stalled ops: A [ready ranks: 1], B [ready ranks: 1]``). One
``rank_missing`` event per missing rank and line, ``op`` the Horovod op (rank null where the ready ranks
cover 0..N and the world is not known: the report says ranks are behind).
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of
from tracekit.schema import EventKind

SIGNAL = r"^\[(?P<host>[\w.\-]+):(?P<pid>\d+)\] Signal: (?P<signal>[\w ]+?) \((?P<signum>\d+)\)"
ABORTING = r"\*\*\* The Open MPI .* is aborting the MPI job"
# Open MPI's notice when a process exits non-zero (`Primary job  terminated normally, but 1 process
# returned` / `a non-zero exit code. Per user-direction, the job has been aborted.`): a rank failed, which
# one its `Process name:` lines say where mpirun prints them
NONZERO = r"^Primary job\s+terminated normally, but (?P<n>\d+) process(?:es)? returned"
PROCESS_NAME = r"^\s+Process name:\s+\[\[\d+,\d+\],(?P<rank>\d+)\]"
EXIT_CODE = r"^\s+Exit code:\s+(?P<exit_code>-?\d+)"
HOROVOD_STALL = (r"One or more tensors were submitted to be (?:reduced|gathered|broadcasted)"
                 r".* by subset of ranks")
# (TensorFlow's ops: `HorovodAllreduce_grads_0`; PyTorch's tensor names: `allreduce.avg_loss`)
OP = (r"(?:Horovod(?P<op>Allreduce|Allgather|Broadcast|Alltoall|ReduceScatter|Reducescatter)"
      r"|\b(?P<op_torch>allreduce|allgather|broadcast|alltoall|reducescatter)\.)")
STALLED = rf"\S*{OP}\S* \[(?P<which>missing|ready) ranks: (?P<ranks>[\d, ]+)\]"
# Horovod 0.20+: `Missing ranks:` (later `Stalled ranks:`) then `0: [HorovodAllreduce_grads_0, ...]` per
# rank (`0: ` is read as a task label), `0!: [...]` where that rank has already shut down
MISSING_HEAD = r"^(?:Missing|Stalled) ranks:\s*$"
MISSING_LIST = rf"^(?:(?P<r>\d+)(?P<gone>!)?: )?\[(?P<names>[^\]]*{OP}[^\]]*)\],?\s*$"
# libfabric's PSM3 provider (github:ofiwg/libfabric prov/psm3, psm3_handle_error): `host:rank1:  Mismatched
# address format: remote EP (Invalid Fmt): Unknown (2) Local EP: IPv4 (4)` then `Confirm all nodes are running
# the same interconnect HW, addressing format and PSM version`: the endpoints cannot talk (its label is the
# host and the MPI rank, or `host.pid`; the line may sit inside another process's output)
PSM3_LABEL = (r"(?:^|[\s\]])(?P<host>[A-Za-z][\w.\-]*)"
              r":(?:rank(?P<rank>\d+)|(?:pid)?(?P<pid>\d+))(?:\.\d+)?:\s+")
# (the label's rank form alone, where it heads a message: `machine:rank1: Assertion failure at psm3/...`,
# `[1705415958.879795729] machine:rank1.cpu_allreduce_test: Reading from remote process' memory failed`)
PSM_RANK = r"(?:^|[\s\]])(?P<host>[A-Za-z][\w.\-]*):rank(?P<rank>\d+)(?:\.[\w.\-]+)?:\s"
ENDPOINT = PSM3_LABEL + (r"(?P<what>Mismatched address format: .*|Unable to connect .*|.*remote EP .*"
                         r"|PSM3? (?:can't|could not|was unable to) open .*)$")
ENDPOINT_ADVICE = r"^Confirm all nodes are running the same interconnect HW"
# Open MPI's OFI components (ompi/mca/mtl/ofi, opal/mca/btl/ofi): `mtl_ofi_component.c:123: fi_endpoint
# failed: No data available (-61)` / `OFI call fi_... failed`
OFI_CALL = (r"(?P<src>(?:mtl|btl|common)_ofi\w*\.[ch]):\d+:\s+(?:OFI call )?(?P<what>fi_\w+ failed.*"
            r"|fi_\w+\(?\)? returned .*)$")
# Open MPI's and PMIx's head on a process's own lines (opal_output, show_help, the signal handler:
# `[gpu-node-3:400139] PMIX ERROR: ...`, `[v100-gpu-1:12345] *** Process received signal ***`): the writer's
# host and pid. A logger's `[module:lineno] ` has the same shape: a host here has a digit, a dash or a dot
# and is no source file's name, and a pid has 3 digits or more
HEAD = r"^\[(?P<host>[A-Za-z\d][\w\-]*(?:\.[\w\-]+)*):(?P<pid>\d{3,})\] "
NOT_HOST = r"^\d+$|\.(?:py|pyx|c|cc|cpp|cu|cuh|h|hpp|go|rs|js|java|sh|lua|log|txt|json|yaml)$|^[A-Za-z_]+$"
# Open MPI's signal handler (opal/util/stacktrace.c) writes only these under its head: there a host of
# letters alone (`[good:02773] *** Process received signal ***`, `[master:4242] Signal: ...`) is one
OPAL_SIGNAL = (r"^\[[^\]]+\] (?:\*\*\* Process received signal \*\*\*|Signal(?: code)?: |Failing at address: "
               r"|\[ ?\d+\] |\*\*\* End of error message \*\*\*)")
# Open MPI's UCX components setting up UCX, the transport under its point-to-point layer (open-mpi/ompi
# opal/mca/common/ucx/common_ucx.h:50 MCA_COMMON_UCX_ERROR writes `__FILE__:__LINE__  Error: `; the messages:
# ompi/mca/pml/ucx/pml_ucx.c:437 `ucp_ep_create(proc=%d) failed: %s` (an endpoint to a peer), :319 `Failed to
# create UCP worker`, :112/:144/:189 the worker's address not queried, got or received, :175 `Open MPI couldn't
# distribute EP connection details`; opal/mca/common/ucx/common_ucx_wpool.c:62 `ucp_worker_create failed`, :169
# `Failed to create receive worker`): the transport could not be set up on that process (its queue pairs,
# its device), whatever the process did after it (a crash on the endpoint it never got)
PML_UCX = (r"(?P<src>(?:pml|osc|spml|common)_ucx\w*\.c):\d+\s+Error: (?P<what>ucp_ep_create\(proc=\d+\) failed"
           r".*|Failed to create UCP worker.*|ucp_worker_create failed.*|Failed to create receive worker.*"
           r"|Failed to (?:query|get|receive) (?:UCP |UCX )?worker address.*"
           r"|Open MPI couldn't distribute EP connection details.*)$")
# Open MPI's transports that failed to set up, each with a `src` and a `what` group: (pattern, where, message)
OMPI_TRANSPORTS = ((OFI_CALL, "libfabric ofi", "Open MPI's OFI transport ({}): {}"),
                   (PML_UCX, "openmpi ucx", "Open MPI could not set up its UCX transport ({}): {}"))
# Open MPI's TCP transport's notice that a peer process went away (open-mpi/ompi
# opal/mca/btl/tcp/help-mpi-btl-tcp.txt:72-86 `[peer hung up]`: "An MPI communication peer process has
# unexpectedly disconnected. This usually indicates a failure in the peer process (e.g., a crash or otherwise
# exiting without calling MPI_FINALIZE first). ... the root cause of this problem is the failure of the peer",
# then `Local host:`, `Local PID:`, `Peer host:`): the peer's process ended first, on the host the notice
# names, a ``crash`` of it
PEER_HUNG_UP = r"^An MPI communication peer process has unexpectedly disconnected\."
PEER_HOST = r"^\s+Peer host:\s+(?P<host>\S+)\s*$"
#: how many lines under the notice its `Peer host:` line may stand (the help text is 14 lines)
PEER_AHEAD = 16
NP = r"(?:mpirun|mpiexec|horovodrun|prterun)\b.*?\s-(?:np|n)\s+(?P<np>\d+)\b"

def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("mpi")
    t = pl.col("text")
    df = lines.select("file", "line", "text", "launch_rank", "task_tag")
    procs = _heads(df)
    known = any_of(SIGNAL, ABORTING, PROCESS_NAME, EXIT_CODE, HOROVOD_STALL, STALLED, NONZERO, MISSING_HEAD,
                   ENDPOINT, ENDPOINT_ADVICE, OFI_CALL, PML_UCX, PEER_HUNG_UP)
    listed = t.str.extract(MISSING_LIST, 1).is_not_null() | pl.col("task_tag").is_not_null()
    mine = df.filter(t.str.contains(known) | (t.str.contains(MISSING_LIST) & listed))
    if not mine.height:
        return Parsed("mpi", {"ranks": procs} if procs.height else {})
    events = []
    sig = mine.filter(t.str.contains(SIGNAL))
    if sig.height:
        g = t.str.extract_groups(SIGNAL).struct
        events.append(sig.with_columns(pl.lit(EventKind.SIGNAL).alias("kind"), g.field("host").alias("host"),
                                       g.field("pid").cast(pl.Int64).alias("pid"),
                                       pl.format("Signal {} ({}) received by PID {}", g.field("signal"),
                                                 g.field("signum"), g.field("pid"))
                                       .alias("message"), pl.col("launch_rank").alias("rank")))
    # mpirun's notice: the process name (its rank) sits a line above its exit code
    named = df.with_columns(
        t.str.extract(PROCESS_NAME, 1).cast(pl.Int64, strict=False).forward_fill(limit=2).over("file")
        .alias("_r"),
        t.str.extract(EXIT_CODE, 1).cast(pl.Int64, strict=False).alias("exit_code"))
    exited = named.filter(pl.col("exit_code").is_not_null() & pl.col("_r").is_not_null())
    if exited.height:
        events.append(exited.with_columns(pl.lit(EventKind.CHILD_FAILED).alias("kind"),
                                          pl.col("_r").alias("rank"),
                                          pl.format("mpirun: rank {} exited with code {}", "_r", "exit_code")
                                          .alias("message"),
                                          pl.lit("mpirun").alias("where")))
    named_files = exited.select("file").unique()
    nonzero = mine.filter(t.str.contains(NONZERO)).join(named_files, on="file", how="anti")
    if nonzero.height:
        events.append(nonzero.with_columns(
            pl.lit(EventKind.CRASH).alias("kind"), pl.lit("mpirun").alias("where"),
            pl.col("launch_rank").alias("rank"),
            pl.format("mpirun: {} process(es) returned a non-zero exit code and the job was aborted",
                      t.str.extract(NONZERO, 1)).alias("message")))
    stall = mine.filter(t.str.contains(HOROVOD_STALL))
    if stall.height:
        events.append(stall.with_columns(pl.lit(EventKind.STALL).alias("kind"), t.alias("message"),
                                         pl.lit("horovod").alias("where"),
                                         pl.col("launch_rank").alias("rank")))
    events += _endpoint_errors(mine)
    events += _peer_hung_up(df, mine)
    events += _horovod_missing(df, mine)
    drop = ("text", "launch_rank", "task_tag", "_r", "_m")
    out = pl.concat(events, how="diagonal_relaxed").drop(drop, strict=False) if events else None
    if exited.height:
        # (the process mpirun names is a rank seen, as the one of its `process rank 1 with PID .. exited on
        # signal 9` is: an Open MPI process name `[[jobfamily,job],vpid]` ends in its MPI_COMM_WORLD rank; the
        # labels of dv32-006 and dv34-008 count it, nccl-007's of 2 sessions earlier not)
        procs = pl.concat([procs, exited.select("file", pl.col("_r").alias("rank"), pl.lit("mpi").alias("source"))
                           .unique(maintain_order=True)], how="diagonal_relaxed")
    tables = {"events": out, "ranks": procs} if procs.height else {"events": out}
    return Parsed("mpi", tables, mine.select("file", "line"))


def _heads(df: pl.DataFrame) -> pl.DataFrame:
    """``file, host, pid, rank, source``: one row per process an Open MPI / PMIx head names, and per process
    PSM's label names (``host:rank1`` or ``host:rank1.program``: its host and MPI rank, on whatever line it
    sits); the lines stay unclaimed: the message under the head is another parser's."""
    t = pl.col("text")
    g = t.str.extract_groups(HEAD).struct
    heads = (df.filter(t.str.contains(HEAD))
             .select("file", g.field("host").alias("host"), g.field("pid").cast(pl.Int64).alias("pid"),
                     t.str.contains(OPAL_SIGNAL).alias("_opal"))
             .filter(~pl.col("host").str.contains(NOT_HOST) | pl.col("_opal")).drop("_opal"))
    p = t.str.extract_groups(PSM_RANK).struct
    labels = (df.filter(t.str.contains(":rank", literal=True) & t.str.contains(PSM_RANK))
              .select("file", p.field("host").alias("host"), p.field("rank").cast(pl.Int64).alias("rank")))
    return (pl.concat([heads, labels], how="diagonal_relaxed")
            .unique(maintain_order=True).with_columns(pl.lit("mpi").alias("source")))


def _missing_of(ready: str, world: int | None) -> list[int | None]:
    """The ranks a ``ready ranks`` list leaves out: of the world where known, else those below the
    highest ready rank; ``[None]`` where none can be named."""
    have = {int(r) for r in ready.replace(",", " ").split()}
    out = sorted(set(range(world if world else max(have) + 1)) - have) if have else []
    return out or [None]


def _horovod_missing(df: pl.DataFrame, mine: pl.DataFrame) -> list[pl.DataFrame]:
    """One ``rank_missing`` event per rank and stalled-ops line of Horovod's stall inspector."""
    t = pl.col("text")
    np_ = t.str.extract(NP, 1).cast(pl.Int64, strict=False)
    world = df.select("file", np_.alias("_np")).drop_nulls().group_by("file").max()
    listed = (mine.filter(t.str.contains(STALLED)).join(world, on="file", how="left")
              .with_columns(t.str.extract_all(STALLED).alias("_s")).explode("_s")
              .with_columns(pl.col("_s").str.extract_groups(STALLED).alias("_g")).unnest("_g"))
    out = []
    if listed.height:
        # the ranks a list leaves out, worked out once per distinct list
        pairs = listed.select("ranks", "_np").unique()
        left_out = [_missing_of(r, w) for r, w in pairs.iter_rows()]
        pairs = pairs.with_columns(pl.Series("_m", left_out, dtype=pl.List(pl.Int64)))
        said = pl.col("ranks").str.extract_all(r"\d+").cast(pl.List(pl.Int64))
        listed = listed.join(pairs, on=["ranks", "_np"], how="left", nulls_equal=True).with_columns(
            pl.when(pl.col("which") == "missing").then(said).otherwise(pl.col("_m")).alias("_m"))
        out.append(listed.explode("_m").with_columns(
            pl.col("_m").alias("rank"), pl.lit(EventKind.RANK_MISSING).alias("kind"), t.alias("message"),
            pl.coalesce("op", "op_torch").str.to_lowercase().alias("op"), pl.lit("horovod").alias("where"))
            .drop("_s", "_np", "which", "ranks", "op_torch"))
    g = t.str.extract_groups(MISSING_LIST).struct
    rank = pl.coalesce(g.field("r").cast(pl.Int64, strict=False),
                       pl.col("task_tag").cast(pl.Int64, strict=False))
    lists = mine.filter(t.str.contains(MISSING_LIST)).with_columns(
        rank.alias("rank"), g.field("gone").is_not_null().alias("_gone"),
        pl.coalesce(t.str.extract(OP, 1), t.str.extract(OP, 2)).str.to_lowercase().alias("op"),
        pl.lit("horovod").alias("where"),
        pl.concat_str(pl.col("task_tag").fill_null(""), pl.lit(": "), t)
        .str.strip_prefix(": ").alias("message"))
    lists = lists.filter(pl.col("rank").is_not_null())
    if lists.height:
        out.append(lists.with_columns(pl.lit(EventKind.RANK_MISSING).alias("kind")).drop("_gone"))
        # `N!`: that rank shut down while the others wait for it in the op: the rank is gone, not stuck
        gone = lists.filter("_gone")
        if gone.height:
            out.append(gone.with_columns(pl.lit(EventKind.CRASH).alias("kind"), pl.format(
                "Horovod: rank {} has shut down while the other ranks wait for it in {}", "rank",
                g.field("names").str.split(",").list.first()).alias("message")).drop("_gone"))
    return out


def _endpoint_errors(mine: pl.DataFrame) -> list[pl.DataFrame]:
    """One ``transport_error`` per libfabric endpoint error a rank printed (PSM3's, Open MPI's OFI calls) and
    per UCX set-up Open MPI could not do (an endpoint, a worker): the transport failed, and the abort MPI
    raises after it is its consequence."""
    t = pl.col("text")
    out = []
    psm3 = mine.filter(t.str.contains(ENDPOINT))
    if psm3.height:
        g = t.str.extract_groups(ENDPOINT).struct
        out.append(psm3.with_columns(
            pl.lit(EventKind.TRANSPORT_ERROR).alias("kind"), g.field("host").alias("host"),
            pl.coalesce(g.field("rank").cast(pl.Int64), pl.col("launch_rank")).alias("rank"),
            g.field("pid").cast(pl.Int64).alias("pid"), pl.lit("libfabric psm3").alias("where"),
            pl.format("libfabric PSM3 on {}: {}", g.field("host"), g.field("what")).alias("message")))
    for pattern, where, said in OMPI_TRANSPORTS:
        hit = mine.filter(t.str.contains(pattern))
        if hit.height:
            g = t.str.extract_groups(pattern).struct
            out.append(hit.with_columns(
                pl.lit(EventKind.TRANSPORT_ERROR).alias("kind"), pl.col("launch_rank").alias("rank"),
                pl.lit(where).alias("where"), pl.format(said, g.field("src"), g.field("what")).alias("message")))
    return out


def _peer_hung_up(df: pl.DataFrame, mine: pl.DataFrame) -> list[pl.DataFrame]:
    """One ``crash`` per Open MPI notice that a peer process disconnected unexpectedly (``PEER_HUNG_UP``): the
    peer on the host its ``Peer host:`` line names ended first; the process that printed it survived it."""
    t = pl.col("text")
    hung = mine.filter(t.str.contains(PEER_HUNG_UP))
    if not hung.height:
        return []
    ahead = pl.coalesce(t.shift(-k).over("file").str.extract(PEER_HOST, 1) for k in range(1, PEER_AHEAD + 1))
    peer = df.select("file", "line", ahead.alias("_peer"))
    hung = hung.join(peer, on=["file", "line"], how="left")
    return [hung.with_columns(
        pl.lit(EventKind.CRASH).alias("kind"), pl.lit(None, pl.Int64).alias("rank"),
        pl.col("_peer").alias("host"), pl.lit("openmpi btl tcp").alias("where"),
        pl.format("Open MPI: an MPI communication peer process has unexpectedly disconnected (peer host: "
                  "{}): the peer process crashed or exited without MPI_FINALIZE",
                  pl.col("_peer").fill_null("not named"))
        .alias("message")).drop("_peer")]
