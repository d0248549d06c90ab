"""A world that every rank joined and whose join never returned (session 32, issue 31): INIT_STALL.

What it reads: the ranks' own word that they enter the process group's creation with the world's size
(``EventKind.RANK_JOINED`` with its ``numel``, the world: Lightning's ``Initializing distributed: GLOBAL_RANK: 1,
MEMBER: 2/2``, logged by ``_init_dist_connection`` right before ``torch.distributed.init_process_group``), and
where each file's log ends (``store.files.last_line``).

Why: Lightning's rank 0 logs ``All distributed processes registered. Starting with {world_size} processes``
(with its ``distributed_backend=...`` banner) as soon as ``init_process_group`` returns, and it returns once every
rank of the world has joined the store. Where every rank 0..N-1 of the world said it joined, rank 0 among them,
and the log ends at the last of those lines (no banner, no NCCL init, collective, step, end or error after), the
world was complete and its rendezvous still did not finish: the store or the network between the ranks (a
MASTER_ADDR/PORT that one rank cannot reach, a firewall, an interface) held it. On dev, dv24-003 (both members
of 2, then nothing) is labelled an init stall and nothing else; the same lines followed by the banner (dv26-013,
dv17-022, dv15-013) or by any other line stay as they are; part of the world that never joined is
``rules_stall.joined_then_nothing``'s.
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.sources import collect
from tracekit.start_up_messages import RETURNS
from tracekit.wording import who


def world_joined_unreturned(ev: Evidence) -> Verdict | None:
    """INIT_STALL where every rank of the world said it joined, rank 0 among them, and each file that holds a
    join ends at its last join line: the world, rank 0's missing line, what to collect."""
    j = ev.kinds(EventKind.RANK_JOINED).filter(pl.col("rank").is_not_null() & pl.col("numel").is_not_null())
    if (not j.height or ev.steps.height or ev.progressed or ev.finished or ev.failure_signs or ev.clean_end
            or ev.stalls.height or ev.store.comms.height
            or collect(ev.store.collectives.lazy().select(pl.len())).item()):
        return None
    if ev.store.events.filter(pl.col("message").fill_null("").str.contains(RETURNS)).height:
        return None
    worlds = j["numel"].unique().to_list()
    joined = set(j["rank"].to_list())
    if len(worlds) != 1 or joined != set(range(worlds[0])) or worlds[0] < 2:
        return None
    if set(ev.store.ranks["rank"].drop_nulls().to_list()) - joined:
        return None  # (a rank seen that never said it joined: a log of another shape)
    ends = j.group_by("file").agg(pl.col("line").max().alias("_j")).join(
        ev.store.files.select("file", "last_line"), on="file", how="left")
    if ends.filter(pl.col("last_line").is_null() | (pl.col("last_line") != pl.col("_j"))).height:
        return None  # (a file that says something after its last join: its end is not the join)
    j = j.sort("file", "line")
    world = worlds[0]
    return Verdict(Kind.INIT_STALL, f"start-up never completed: every rank of the world of {world} ({who(sorted(joined))}) "
                   f"said it was joining the process group (\"{clip(' '.join(j['message'][0].split()), 100)}\") "
                   "and the log ends there: rank 0 never logged `All distributed processes registered. Starting "
                   f"with {world} processes`, which Lightning prints as soon as init_process_group returns, nor "
                   "anything after it (no NCCL init, collective, step, end or error): the whole world joined and "
                   "the rendezvous still did not complete: the store at MASTER_ADDR:MASTER_PORT not reachable from "
                   "every rank (a firewall, the interface it binds, a hostname that resolves elsewhere); a stack "
                   "dump of each rank (py-spy dump) and TORCH_DISTRIBUTED_DEBUG=DETAIL, NCCL_DEBUG=INFO say where "
                   "each waits", sorted(joined), lines(j, 4))
