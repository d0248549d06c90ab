"""Who each row is: the rank of every row of a store's tables, from whichever source tells it.

The sources disagree in what they name: a launcher's prefix names a global rank (torchrun's
``[rank3]:``) or a local one (``[default3]:``), NCCL a communicator's rank, c10d a process group's,
torchrun's agent a worker's local rank and pid, a Flight Recorder dump its rank and no host. Ranks are
given by precedence, each step filling only what the ones before left unnamed (issue 31 item 4):

1. the launcher's global prefix over a group-local rank (``_group_local``: NCCL's ranks of a communicator
   smaller than a rank another source names), each source's order in ``formats.RANK_SOURCES``;
2. the world's size a launch command says, lent to the processes (``_world_only``);
3. a local rank as the global one where no line shows a second node (``_local_as_global``);

then a process's own word over its file's (``resolve_ranks``). Two readings name no rank (s31, the dev
labels' majority, samples/wild/LABELS.md): a local-rank prefix alone (torchelastic's ``[default3]:``,
``launcher.LOCAL_TAG``) off a job shown to be of one node, and processes only COLL lines show, numbered by
counting (``COUNTED``). The ranks only prose names (``Error on rank
1``, ``parsers/rank_prose.py``) count last, in a file no other source names a rank in (``_prose_last``). A
row whose number was inferred says so in its ``source`` (``by-local-rank``). Two readings the dev labels split
on are left out: the one process of a world communicator that names no rank as the rank left (dev-040 and
dv13-060 count it; dv12-012, dv18-011 and llm-058 do not; ``nccl_ranks.counted`` does it for processes seen
only in COLL lines), and a process's CUDA device (NCCL's ``host:pid:tid [dev]``) as its rank (the labels of
dev-002, dev-016 and dv10-010 read ``[0]``/``[1]`` of a one-node job's processes as devices, not ranks).
"""

from __future__ import annotations

import polars as pl

from tracekit import schema
from tracekit.formats import RANK_SOURCES
from tracekit.parsers import rank_prose
from tracekit.parsers.launcher import COMMAND_HOSTS, LOCAL_TAG
from tracekit.schema import EventKind

def _world_only(ranks: pl.DataFrame) -> pl.DataFrame:
    """Rows that say only the world's size (a launch command, an analyzer's report) lend it to the
    rows of processes that lack one (their file's first) and go; where no process is named at all,
    they stay."""
    only = (pl.all_horizontal(pl.col("rank", "host", "pid", "local_rank").is_null())
            & pl.col("world_size").is_not_null())
    said = ranks.filter(only)
    rest = ranks.filter(~only)
    if not said.height or not rest.height:
        return ranks
    per_file = said.group_by("file").agg(pl.col("world_size").max().alias("_w"))
    return (rest.join(per_file, on="file", how="left")
            .with_columns(pl.coalesce("world_size", "_w", pl.lit(said["world_size"].max()))
                          .alias("world_size"))
            .drop("_w"))


def _group_local(ranks: pl.DataFrame) -> pl.DataFrame:
    """NCCL's ranks of a file where another source names a global rank at or past the size of NCCL's
    largest communicator there: that communicator is a sub-group, its ranks group-local (never global)."""
    nccl_world = ranks.filter(pl.col("source") == "nccl").group_by("file").agg(
        pl.col("world_size").max().alias("_w"))
    said = ranks.filter((pl.col("source") != "nccl") & pl.col("rank").is_not_null()).group_by("file").agg(
        pl.col("rank").max().alias("_g"))
    local = nccl_world.join(said, on="file").filter(pl.col("_g") >= pl.col("_w")).select("file")
    if not local.height:
        return ranks
    sub = (pl.col("source") == "nccl") & pl.col("file").is_in(local["file"].implode())
    return ranks.with_columns(pl.when(sub).then(None).otherwise(pl.col(c)).alias(c)
                              for c in ("rank", "world_size"))


#: the ``source`` of the ranks NCCL's parser numbers by counting a communicator's processes that no line names
#: (``nccl_ranks.counted``: COLL lines' ``[nranks=2]`` and a device each)
COUNTED = "nccl-count"


def _counted_unnamed(ranks: pl.DataFrame) -> pl.DataFrame:
    """Processes numbered only by counting (``COUNTED``) hold no rank here: no line is attributable to a rank
    (dv22-006's label: COLL lines carry the device, not the rank); their collectives keep the numbering, which
    matches them across processes."""
    return ranks.with_columns(pl.when(pl.col("source") == COUNTED).then(None).otherwise(pl.col("rank"))
                              .alias("rank"))


#: the ``source`` of the ranks only a log's prose names (``parsers/rank_prose.py``)
PROSE = rank_prose.SOURCE


def _prose_last(ranks: pl.DataFrame) -> pl.DataFrame:
    """The ranks a file's prose names (``Error on rank 1``) count only in a file where no other source names
    a rank or a local rank: a prefix, a program's own tag or NCCL's communicator line says whose line it is,
    where the prose may name a peer, a root or a report's ranks (one process counted once)."""
    prose = pl.col("source") == PROSE
    if not ranks.height or not ranks.select(prose.any()).item():
        return ranks
    named = ranks.filter(~prose & (pl.col("rank").is_not_null() | pl.col("local_rank").is_not_null()))["file"]
    return ranks.filter(~(prose & pl.col("file").is_in(named.unique().implode())))


#: a launcher's own lines (its word about its workers, a job's end): never the rank of the file they sit in
LAUNCHER_KINDS = (EventKind.CHILD_FAILED, EventKind.CLOSING_SIGNAL, EventKind.JOB_CANCELLED,
                  EventKind.ELASTIC_LAUNCH, EventKind.ELASTIC_RENDEZVOUS, EventKind.ELASTIC_FAILED,
                  EventKind.ELASTIC_STOP, EventKind.ELASTIC_REJOIN, EventKind.ELASTIC_MEMBERSHIP)
LAUNCHER_WHERE = ("mpirun", "horovod", "nccl ras", "torchrun agent", "torchelastic",
                  "torch.multiprocessing.spawn", "ray", "ray (raylet)", "ray (memory monitor)")


#: the ``where`` of events the runtimes' parsers (parsers/runtimes) decode from lines that name their writer
RUNTIME_WHERE = r"^(?:ucx\b|ray \(|tensorpipe \()"


def _lend_writer(events: pl.DataFrame) -> pl.DataFrame:
    """A line another parser also read as the same kind of event (torch_log's ``Segmentation fault``, its
    ``A worker died``) is one event: the runtime's reading lends it the host, pid and rank the line names,
    and goes, so the event is counted once and reads as before."""
    if not events.height or "where" not in events.columns or "host" not in events.columns:
        return events
    mine = pl.col("where").fill_null("").str.contains(RUNTIME_WHERE)
    key = ["file", "line", "kind"]
    lent = events.filter(mine).select(*key, pl.col("host").alias("_h"), pl.col("pid").alias("_p"),
                                      pl.col("rank").alias("_r")).unique(key, keep="first")
    others = events.filter(~mine)
    twice = others.join(lent, on=key, how="semi").select(key).unique()
    if not twice.height:
        return events
    others = (others.join(lent, on=key, how="left", maintain_order="left")
              .with_columns(pl.coalesce("host", "_h").alias("host"), pl.coalesce("pid", "_p").alias("pid"),
                            pl.coalesce("rank", "_r").alias("rank"))
              .drop("_h", "_p", "_r"))
    return pl.concat([others, events.filter(mine).join(twice, on=key, how="anti")], how="diagonal_relaxed")


def _command_hosts(ranks: pl.DataFrame) -> pl.DataFrame:
    """The hosts a launch command lists (mpirun's ``-H``) are the job's where they are named as its processes
    name theirs; where the processes name hosts and none of the listed ones (``-H 10.0.0.48`` for the process
    on ``v100-gpu-1``: one machine by two names), the list goes, so no host counts twice."""
    listed = pl.col("source") == COMMAND_HOSTS
    said = ranks.filter(~listed & pl.col("host").is_not_null())["host"].unique()
    hosts = ranks.filter(listed)["host"]
    if not hosts.len() or not said.len() or hosts.is_in(said.implode()).any():
        return ranks
    return ranks.filter(~listed)


def _short_hosts(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """One machine by one name: NCCL names a host by its name up to the first dot (``getHostName``), Open
    MPI and most others by the whole (``[vm2.com:15359]`` beside NCCL's ``vm2:15364:15376``); where a dotted
    name's first label is itself a host named, the dotted one is that host (an IP address is no name)."""
    named = [n for n, t in tables.items() if "host" in t.columns and t.height]
    # (the hosts of the small tables: the collectives', the bulk, are their processes' already)
    small = [n for n in named if n in ("ranks", "events", "comms", "links")]
    if not small:
        return tables
    hosts = pl.concat([tables[n].select(pl.col("host").drop_nulls()) for n in small]).unique()
    if not hosts.height:
        return tables
    short = hosts.filter(pl.col("host").str.contains(".", literal=True)
                         & ~pl.col("host").str.contains(r"^[\d.]+$")).with_columns(
        pl.col("host").str.split(".").list.first().alias("_short"))
    short = short.filter(pl.col("_short").is_in(hosts["host"].implode()))
    if not short.height:
        return tables
    to = dict(zip(short["host"], short["_short"]))
    return {**tables, **{n: tables[n].with_columns(pl.col("host").replace(to)) for n in named}}


def _nodes(tables: dict[str, pl.DataFrame]) -> tuple[bool, bool]:
    """Whether what was read shows a job of one node (one host named, or NCCL's communicators all of
    one node) and whether it shows a second node (two hosts, a node past the first, a communicator of
    several nodes, a process whose global rank differs from its local one)."""
    named = [tables[n] for n in ("ranks", "events", "comms") if n in tables and "host" in tables[n].columns]
    hosts = pl.concat([t.select(pl.col("host").drop_nulls()) for t in named]).n_unique()
    comms, r = tables.get("comms"), tables["ranks"]
    nodes = (comms["nnodes"].drop_nulls() if comms is not None and "nnodes" in comms.columns
             else pl.Series([], dtype=pl.Int64))
    second = (hosts > 1 or (r["node"].fill_null(0) > 0).any() or (nodes > 1).any()
              or r.filter(pl.col("rank") != pl.col("local_rank")).height > 0)
    one = hosts == 1 or (hosts == 0 and nodes.len() > 0 and nodes.max() == 1)
    return one and not second, bool(second)


#: the source a rank's row adds where its number is its local rank on a job no line shows of one node
BY_LOCAL_RANK = "by-local-rank"


def _local_as_global(ranks: pl.DataFrame, one_node: bool, second_node: bool) -> pl.DataFrame:
    """Where no line shows a second node, a process's local rank (torchrun's ``[default3]:``,
    ``local_rank: 3``, spawn's ``Process 3``) is its global one: certainly on a job shown to be of one
    node, and as the reading of its own words where nothing shows the node count (such a row's source
    says so, ``BY_LOCAL_RANK``, and the coverage sentence with it)."""
    if second_node:
        return ranks
    guessed = pl.col("rank").is_null() & pl.col("local_rank").is_not_null()
    out = ranks.with_columns(pl.coalesce("rank", "local_rank").alias("rank"))
    if one_node:
        return out
    # (a local-rank prefix alone, torchelastic's `[default3]:`, is a node's numbering: no global rank unless
    # the job is shown to be of one node; a program's word of its worker, spawn's `Process 3`, the agent's
    # `local_rank: 3 (pid: ..)`, is read as the rank, as most dev labels do)
    tagged = ranks.select((pl.col("source") == LOCAL_TAG) & guessed).to_series()
    out = out.with_columns(pl.when(tagged).then(None).otherwise(pl.col("rank")).alias("rank"))
    sure = ranks["rank"].drop_nulls().implode()
    marked = ranks.select(guessed & ~pl.col("local_rank").is_in(sure)).to_series() & ~tagged
    return out.with_columns(pl.when(marked).then(pl.col("source") + "," + BY_LOCAL_RANK)
                            .otherwise(pl.col("source")).alias("source"))


def resolve_ranks(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Give every row a rank where any source tells it: its process (host, pid) where that process
    holds one rank, then its pid where one host has it, then its file where the file is one rank's
    (a log that ``tracekit run`` wrote per rank; a pasted excerpt of many processes is not, and a
    launcher's own lines, ``LAUNCHER_KINDS``, are no rank's); then a host where its rank tells it (a
    Flight Recorder dump names no host; the rank's log does). A local rank is the global one where no
    line shows a second node (``_local_as_global``)."""
    if "events" in tables:
        tables = {**tables, "events": _lend_writer(tables["events"])}
    tables = _short_hosts({**tables, "ranks": _command_hosts(tables["ranks"])})
    ranks = _local_as_global(_world_only(_group_local(_prose_last(_counted_unnamed(tables["ranks"])))),
                             *_nodes(tables))
    known = ranks.filter(pl.col("rank").is_not_null())
    one = pl.col("rank").n_unique() == 1
    by_proc = known.filter(pl.col("pid").is_not_null()).group_by(["host", "pid"]).agg(
        pl.col("rank").first().alias("_r"), one.alias("_one")).filter("_one").drop("_one")
    by_pid = (by_proc.group_by("pid").agg(pl.col("_r").first().alias("_rp"),
                                          pl.col("host").first().alias("_hp"),
                                          ((pl.col("_r").n_unique() == 1) & (pl.col("host").n_unique() == 1))
                                          .alias("_one"))
              .filter("_one").drop("_one"))
    procs = ranks.filter(pl.col("pid").is_not_null()).group_by("file").agg(
        pl.struct("host", "pid").n_unique().alias("_procs"))
    # (a file whose lines name two local ranks holds two processes, whatever else it names)
    locals_ = ranks.group_by("file").agg(pl.col("local_rank").drop_nulls().n_unique().alias("_locals"))
    by_file = (known.group_by("file")
               .agg(pl.col("rank").n_unique().alias("_n"), pl.col("rank").first().alias("_rf"),
                    pl.col("host").drop_nulls().unique().alias("_hf"))
               .join(procs, on="file", how="left").join(locals_, on="file", how="left")
               .filter((pl.col("_n") == 1) & (pl.col("_procs").fill_null(0) <= 1)
                       & (pl.col("_locals").fill_null(0) <= 1))
               .drop("_n", "_procs", "_locals"))
    by_rank = ranks.filter(pl.col("rank").is_not_null() & pl.col("host").is_not_null()).group_by("rank").agg(
        pl.col("host").n_unique().alias("_n"), pl.col("host").first().alias("_h")
    ).filter(pl.col("_n") == 1).drop("_n")

    def fill(df: pl.DataFrame) -> pl.DataFrame:
        df = (df.join(by_proc, on=["host", "pid"], how="left", nulls_equal=False)
              .join(by_pid, on="pid", how="left").join(by_file, on="file", how="left"))
        if "kind" in df.columns:  # a launcher's own line is not the rank of the file it sits in
            own = pl.col("kind").cast(pl.Utf8).is_in(LAUNCHER_KINDS)
            if "where" in df.columns:
                own = own | pl.col("where").is_in(LAUNCHER_WHERE)
            df = df.with_columns(pl.when(own.fill_null(False)).then(None).otherwise(pl.col("_rf"))
                                 .alias("_rf"))
        # (a pid names the process of that pid's host only, a file of one rank that rank's host only: a row
        # naming another host is another process, pdsh's `node2: ` beside NCCL's lines of node1)
        if "host" in df.columns:
            other = (pl.col("_hp") != pl.col("host")).fill_null(False)
            elsewhere = (pl.col("host").is_not_null() & (pl.col("_hf").list.len() > 0)
                         & ~pl.col("_hf").list.contains(pl.col("host"))).fill_null(False)
            df = df.with_columns(pl.when(other).then(None).otherwise(pl.col("_rp")).alias("_rp"),
                                 pl.when(elsewhere).then(None).otherwise(pl.col("_rf")).alias("_rf"))
        df = (df.with_columns(pl.coalesce("rank", "_r", "_rp", "_rf").alias("rank"))
              .drop("_r", "_rp", "_rf", "_hp", "_hf"))
        if "host" in df.columns:
            df = (df.join(by_rank, on="rank", how="left")
                  .with_columns(pl.coalesce("host", "_h").alias("host")).drop("_h"))
        return df

    out = {}
    for name, df in tables.items():
        if (name in ("files", "ranks") or "rank" not in df.columns or not df.height
                or (df["rank"].null_count() == 0 and ("host" not in df.columns or df["host"].null_count() == 0
                                                      or not by_rank.height))):
            # nothing to find: every rank known, and every host or none to fill in (NCCL's collectives,
            # the bulk, usually; FR dumps name no host: 2 M rows joined 4 times for nothing took 1.5 s)
            out[name] = df
            continue
        out[name] = fill(df)
    # One row per process: merge what the sources said of it (a process of several GPUs: one per rank).
    ranks = fill(ranks) if ranks["rank"].null_count() else ranks
    out["ranks"] = (
        ranks.with_columns(pl.col("source").replace_strict(RANK_SOURCES, default=len(RANK_SOURCES),
                                                           return_dtype=pl.Int64).alias("_o"))
        .sort("rank", "_o", "file", nulls_last=True, maintain_order=True).drop("_o")
        .group_by(pl.coalesce(pl.col("rank").cast(pl.Utf8),
                              pl.col("host") + ":" + pl.col("pid").cast(pl.Utf8),
                              pl.col("host"), pl.col("file")).alias("_k"), maintain_order=True)
        .agg([pl.col(c).drop_nulls().first() for c in schema.RANKS if c != "source"]
             + [pl.col("source").unique().sort().str.join(",")])
        .drop("_k")
    )
    return out
