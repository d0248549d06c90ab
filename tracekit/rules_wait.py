"""The rule of issue 33: a hang that spans process groups names the rank that holds everyone, and the chain.

Real jobs run several groups at once; a hang in one stalls the others: rank A waits in group X for
rank B, which is not missing but waits in group Y for rank C. ``waiting_across_groups`` gives
tracekit/waitgraph.py each rank's last entry per group, from what the sources record:

- the Flight Recorder (sources/fr.py): each group's members (pg_config; a gloo dump lists none: the
  ranks whose dumps name the group, the world for the default group) and each rank's last enqueued and
  completed sequence number per group (pg_status): enqueued past completed is a wait in the next one;
- NCCL's log: a communicator whose Init START has no Init COMPLETE (global ranks and the communicator's
  key from parsers/nccl_ranks.py), and where a rank left no dump, its last opCount per communicator
  (the ranks at a communicator's highest opCount wait, where another rank is behind);
- stack dumps (situation's main thread): where a rank is, and a group it is still creating
  (``new_group``: its members are in no record yet).

It fires where the wait crosses groups (links in two or more groups, or a cycle) and leaves a hang
inside one group to the plain deadlock rules; a rank at the root that crashed or exited is left to the
crash rules (its own record says why). A chain cut by a rank with no record is UNDECIDED, naming the
records that would close it.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit import waitgraph as wg
from tracekit.evidence import Evidence, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.parsers.salient import Telling
from tracekit.rules_salient import quote
from tracekit.sources import collect, fr
from tracekit.store import Store

# a main thread inside a group's creation: the group is in no record yet
NEW_GROUP = r"(?:^|<- )(?:new_group|new_subgroups\w*|_new_process_group_helper|split_group) \("
# frames that are not the program's own: torch, the standard library, tracekit's hook
NOT_OWN = r"torch/|<frozen |threading\.py|tracekit/"


def waiting_across_groups(ev: Evidence) -> Verdict | None:
    """A hang across process groups: the rank that holds everyone (where its stack says it is), and
    who waits for whom in which group's collective."""
    if ev.finished or ev.moving:
        return None
    stacks = _latest_stacks(ev)
    records = _records(ev.store, stacks)
    g = wg.build(records)
    if not g.links or (len({link.group.pg for link in g.links}) < 2 and not g.cycles):
        return None
    ranks = [r.rank for r in g.roots if r.rank is not None]
    failed = set(ev.crashes["rank"].drop_nulls()) | set(ev.cuda["rank"].drop_nulls())
    if any(r.kind is wg.RootKind.ALL_JOINED for r in g.roots) or failed & (set(ranks) | set(g.missing)):
        return None  # the chain ends in a collective (sizes, the network) or a rank's failure: said elsewhere
    waiting = [r for link in g.links for r in link.waiting]
    proof = lines(stacks.filter(pl.col("rank").is_in(ranks)), 4) + lines(
        stacks.filter(pl.col("rank").is_in(waiting) & ~pl.col("rank").is_in(ranks)), 4)
    proof = list(dict.fromkeys(proof + lines(ev.timeouts, 2)))
    if g.missing:
        return Verdict(Kind.UNDECIDED, f"{g.sentence()}: collect the Flight Recorder dumps, stack dumps and "
                       "logs of those ranks (tracekit run on their nodes)", [], proof)
    if not ranks:  # a cycle: every rank in it waits for another in it
        ranks = sorted({r for cycle in g.cycles for link in cycle for r in link.waiting})
        return Verdict(Kind.DEADLOCK, g.sentence(), ranks, proof)
    init = all(r.awaited_in.seq is None for r in g.roots)
    return Verdict(Kind.INIT_STALL if init else Kind.DEADLOCK, g.sentence(), ranks, proof)


def _latest_stacks(ev: Evidence) -> pl.DataFrame:
    """Each rank's main thread in its latest stack dump, with the evidence line's message."""
    st = ev.stacks.filter(pl.col("rank").is_not_null())
    return (st.sort("file", "line").group_by("rank", maintain_order=True).last()
            .with_columns(pl.format("rank {} main thread in {}", "rank", "where").alias("message")))


def _records(store: Store, stacks: pl.DataFrame) -> list[wg.RankRecord]:
    world = store.ranks["world_size"].drop_nulls().max() if store.ranks.height else None
    entries = _fr_entries(store, world)
    for rank, es in _nccl_entries(store, set(entries)).items():
        entries.setdefault(rank, []).extend(es)
    where = dict(stacks.select("rank", "where").iter_rows())
    for r in stacks.filter(pl.col("frames").str.contains(NEW_GROUP).fill_null(False)).iter_rows(named=True):
        made_at = _own_frame(r["frames"]) or r["where"]  # the ranks creating one group share the line
        group = wg.Group(f"new_group at {made_at}", (), f"the group created at {made_at}")
        entries.setdefault(r["rank"], []).append(wg.Entry(r["rank"], group, wg.EntryState.INIT))
    ranks = set(entries) | set(where) | (set(range(world)) if world else set())
    return [wg.RankRecord(r, tuple(entries.get(r, ())), where.get(r), r in entries or r in where)
            for r in sorted(ranks)]


def _own_frame(frames: str | None) -> str | None:
    """The innermost frame of the program itself (``main (train.py:54)``)."""
    own = [f for f in (frames or "").split(" <- ") if f and not re.search(NOT_OWN, f)]
    return own[0] if own else None


def _fr_entries(store: Store, world: int | None) -> dict[int, list[wg.Entry]]:
    """Each rank's last entry per group from its dumps' pg_status (the latest dump: the highest)."""
    # (a scanned store keeps groups and collectives on disk: only the few rows needed are collected)
    named = pl.col("pg_desc").filter(pl.col("pg_desc") != "").drop_nulls().first()
    status = store.groups.lazy().filter(pl.col("rank").is_not_null() & pl.col("last_enqueued").is_not_null())
    last = (pl.col("last_enqueued").max(), pl.col("last_completed").max(), named)
    per = collect(status.group_by("rank", "pg").agg(*last))
    if not per.height:
        return {}
    # where a rank waits: the first sequence number it enqueued and did not complete
    per = per.with_columns(pl.when(pl.col("last_completed").fill_null(-1) < pl.col("last_enqueued"))
                           .then(pl.col("last_completed").fill_null(0).clip(0) + 1).alias("waits_at"))
    coll = store.collectives.lazy().filter(pl.col("source") == "fr")
    desc = dict(collect(coll.group_by("pg").agg(named)).iter_rows())
    at = per.filter(pl.col("waits_at").is_not_null()).select(
        pl.col("rank").cast(pl.Int32), "pg", pl.col("waits_at").alias("seq"))  # (collectives' rank is Int32)
    ops = collect(coll.join(at.lazy(), on=["rank", "pg", "seq"], how="semi").select(
        "rank", "pg", "seq", pl.col("op").cast(pl.Utf8)))
    ops = {(int(r), p, q): o for r, p, q, o in ops.rows()}
    listed = dict(fr.group_members(store).group_by("pg").agg(pl.col("members").first()).rows())
    dumped = dict(per.group_by("pg").agg(pl.col("rank").unique().sort()).rows())
    out: dict[int, list[wg.Entry]] = {}
    for r in per.iter_rows(named=True):
        if r["last_enqueued"] < 0:
            continue
        # members: pg_config's list; a gloo dump lists none: the ranks whose dumps name it (pg 0: the world)
        members = listed.get(r["pg"]) or (range(world) if r["pg"] == "0" and world else dumped[r["pg"]])
        group = wg.Group(r["pg"], tuple(sorted(members)), r["pg_desc"] or desc.get(r["pg"]))
        if r["waits_at"] is None:
            entry = wg.Entry(r["rank"], group, wg.EntryState.COMPLETED, r["last_completed"])
        else:
            op = ops.get((r["rank"], r["pg"], r["waits_at"]))
            entry = wg.Entry(r["rank"], group, wg.EntryState.WAITING, r["waits_at"], op)
        out.setdefault(r["rank"], []).append(entry)
    return out


def _nccl_entries(store: Store, dumped: set[int]) -> dict[int, list[wg.Entry]]:
    """NCCL's side: communicators whose init never completed, and (for ranks with no FR dump) the last
    opCount per communicator."""
    comms = store.comms.filter(pl.col("global_rank").is_not_null() & pl.col("comm_key").is_not_null())
    out: dict[int, list[wg.Entry]] = {}
    if not comms.height:
        return out
    # a communicator's members where every one of them left a line (nranks of them), else unknown
    known = comms.group_by("comm_key").agg(pl.col("global_rank").unique().sort(), pl.col("nranks").max())
    members = {k: tuple(m) if len(m) == n else () for k, m, n in known.iter_rows()}
    inits = comms.filter(pl.col("state").is_in(["init_start", "init_complete"]))
    done = (pl.col("state") == "init_complete").any().alias("done")
    inits = inits.group_by("global_rank", "comm_key").agg(done)
    for rank, key, _ in inits.filter(~pl.col("done")).iter_rows():
        group = wg.Group(key, members.get(key, ()), f"communicator {key}")
        out.setdefault(rank, []).append(wg.Entry(rank, group, wg.EntryState.INIT))
    coll = store.collectives.lazy().filter((pl.col("source") == "nccl") & pl.col("rank").is_not_null()
                                           & ~pl.col("rank").is_in(list(dumped)))
    last = collect(coll.group_by("rank", "pg").agg(pl.col("seq").max(),
                                                   pl.col("op").sort_by("seq").last().cast(pl.Utf8)))
    ends = last.group_by("pg").agg(pl.col("seq").max().alias("top"), pl.col("seq").min().alias("low"))
    for r in last.join(ends, on="pg").iter_rows(named=True):
        behind = r["low"] < r["top"]  # someone is behind: the ranks at the highest opCount wait
        state = wg.EntryState.WAITING if behind and r["seq"] == r["top"] else wg.EntryState.COMPLETED
        group = wg.Group(r["pg"], members.get(r["pg"], ()), f"communicator {r['pg']}")
        out.setdefault(r["rank"], []).append(wg.Entry(r["rank"], group, state, r["seq"], r["op"]))
    return out



#: a frame of start-up: the store and rendezvous (torch/distributed/rendezvous.py ``_create_c10d_store``,
#: ``TCPStore``, elastic's ``next_rendezvous``, the store socket's ``waitForInput``), the process group's
#: creation (``init_process_group``, its ``_store_based_barrier``, ``new_group``, ``init_device_mesh``),
#: the frameworks' wrappers (Lightning's ``setup_environment``/``init_dist_connection``, DeepSpeed's and
#: Megatron's ``init_distributed``/``initialize_model_parallel``) and NCCL's own init (``ncclCommInitRank``,
#: the unique id's broadcast); and in a gdb or pstack dump, the C frames of set-up: NCCL's bootstrap and
#: transport set-up under its init (NVIDIA/nccl src/init.cc ``initTransportsRank``, src/bootstrap.cc
#: ``bootstrapInit``/``bootstrapAllGather``, src/transport.cc ``ncclTransportP2pSetup``), MPI's start-up (Open MPI
#: ompi/runtime/ompi_mpi_init.c ``ompi_mpi_init`` under ``PMPI_Init``/``PMPI_Init_thread``), HCCL's communicator
#: init (``HcclCommInitRootInfo``, ``HcclCommInitClusterInfo``) and Gloo's full-mesh connect
#: (gloo/rendezvous/context.cc ``connectFullMesh``)
START_UP = (r"\b(?:_create_c10d_store|TCPStore\w*|_\w*rendezvous_handler|next_rendezvous|_rendezvous"
            r"|waitForInput|init_process_group|_store_based_barrier|new_group|_new_process_group_helper"
            r"|init_device_mesh|setup_environment|_?init_dist_connection|init_distributed"
            r"|initialize_model_parallel|ncclCommInit\w*|broadcastUniqueNCCLID|getNCCLComm"
            r"|initTransportsRank|bootstrap(?:Init|AllGather|Root|NetAccept|Connect)\w*|ncclTransportP2pSetup"
            r"|ompi_mpi_init|P?MPI_Init\w*|HcclCommInit\w*|connectFullMesh) \(")


def stalled_in_start_up(ev: Evidence) -> Verdict | None:
    """INIT_STALL where a stack dump of a hung process (py-spy, faulthandler, gdb) has it in start-up
    (``START_UP``: the store, the rendezvous, the process group's creation, NCCL's init) and the run
    shows no step, collective, progress or clean end: the dump itself says time passed there. Names the
    function it waits in and the process; a dump that has another process in a collective is left to
    the deadlock rules."""
    st = ev.stacks
    if not st.height or ev.steps.height or ev.progressed or ev.clean_end or ev.finished:
        return None
    if collect(ev.store.collectives.lazy().select(pl.len())).item():
        return None
    frames = pl.coalesce("frames", "where").fill_null("")
    st = st.with_columns(frames.str.extract("(" + START_UP[2:] + ")", 1).str.strip_suffix(" (")
                         .alias("_fn"))
    up = st.filter(pl.col("_fn").is_not_null())
    if not up.height or st.filter(pl.col("_fn").is_null() & pl.col("in_c10d")).height:
        return None
    up = up.unique(["rank", "pid", "tid", "_fn"], maintain_order=True)
    name = pl.coalesce(pl.format("rank {}", "rank"), pl.format("pid {}", "pid"),
                       pl.format("thread {}", "tid"), pl.lit("a process"))
    host = pl.when(pl.col("host").is_not_null()).then(pl.format(" on {}", "host")).otherwise(pl.lit(""))
    place = pl.when(pl.col("where").str.starts_with(pl.col("_fn"))).then(pl.col("where")).otherwise(
        pl.format("{}, under {}", "where", "_fn"))
    up = up.with_columns(pl.format("{}{} in {}", name, host, place).alias("message"))
    fns = list(dict.fromkeys(up["_fn"].to_list()))
    said = "; ".join(up["message"].head(4).to_list()) + (f"; {up.height - 4} more" if up.height > 4 else "")
    # (what the same files said before the dump: c10d's or the store's warning is often why it waits)
    before = _said_before(ev, up)
    return Verdict(Kind.INIT_STALL, f"start-up never completed: a stack dump shows {said}; no step or "
                   f"collective is logged: {', '.join(fns[:3])} waits for ranks that have not joined "
                   "(the store's or rendezvous' address not reachable or not listening, a rank not "
                   "started, a wrong world size or MASTER_ADDR)"
                   + (f"; before it, {quote(before.row(0, named=True))}" if before.height else "")
                   + "; the other ranks' stacks say which one",
                   up["rank"].drop_nulls().unique().sort().to_list(), lines(before, 2) + lines(up, 4))


def _said_before(ev: Evidence, up: pl.DataFrame) -> pl.DataFrame:
    """The error, transport and wait lines no parser decodes (``telling_line``) before the first start-up
    stack of their file."""
    told = ev.kinds(EventKind.TELLING_LINE).filter(pl.col("where").is_in(
        [Telling.ERROR, Telling.TRANSPORT, Telling.WAIT, Telling.CRASH]))
    first = up.group_by("file").agg(pl.col("line").min().alias("_s"))
    return told.join(first, on="file").filter(pl.col("line") < pl.col("_s")).drop("_s").sort("file", "line")
