"""The verdict's rules, in the order of causation, each ``detect(evidence) -> Verdict | None``.

A mismatch makes ranks crash; a crashed rank explains the timeouts of the ranks that waited for it;
a communicator that never finished init explains everything after it; a transport error explains a
hang in the collective it broke; a rank behind its group is a deadlock; collectives that still
advance are slow progress. HEALTHY needs positive evidence (a clean end or progress, every rank
seen); a failure sign without a cause is UNDECIDED, with what to collect.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import polars as pl

from tracekit import align, rules_exit, rules_wait, sources
from tracekit.evidence import (BENIGN, BOOTSTRAP, HEARTBEAT, KILL_CODES, NETWORK_FAIL, SIGKILL_CODES, STORE_BARRIER,
                               WIRE_MISMATCH, Evidence, clip, lines)
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.wording import who

COLLECT = ("run under `tracekit run` on every node (NCCL INFO, Flight Recorder dumps, stack dumps when "
           "progress stops), or set TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and a ddp_timeout of minutes")


def _msg(df: pl.DataFrame, i: int = 0, n: int = 200) -> str:
    return clip(df["message"][i], n)


def _rank_of(df: pl.DataFrame, ev: Evidence) -> list[int]:
    r = df["rank"].drop_nulls().unique().sort().to_list()
    return r or ([ev.root_cause_rank] if ev.root_cause_rank is not None else [])


def _who_or(df: pl.DataFrame) -> str:
    """The ranks of the rows (``ranks 1-3``), or ``a rank`` where none is known."""
    r = df["rank"].drop_nulls().unique().sort().to_list()
    return who(r) if r else "a rank"


def _where(ev: Evidence, ranks: list[int]) -> pl.DataFrame:
    return ev.stacks.filter(pl.col("rank").is_in(ranks)).unique(["rank", "where"], maintain_order=True)


def _in(where: pl.DataFrame, n: int = 4) -> str:
    return "".join(f"; rank {w['rank']} is in {w['where']}" for w in where.head(n).iter_rows(named=True))


def _stack_lines(where: pl.DataFrame, n: int = 4) -> list[str]:
    return lines(where.with_columns(pl.format("rank {} main thread in {}", "rank", "where").alias("message")), n)


# --- the rules, in order ---------------------------------------------------------------------

def _cuda_first(ev: Evidence, ranks: list[int]) -> bool:
    """A CUDA failure (out of memory, illegal access) on a rank of a mismatch, or on a rank unknown:
    the failing rank's error path (a barrier in its handler, a smaller tensor) made the mismatch, so
    the failure is the cause and the mismatch its consequence."""
    if not ev.cuda.height:
        return False
    failed = set(ev.cuda["rank"].drop_nulls().to_list())
    return not failed or not ranks or bool(failed & set(ranks))


def mismatch_aligned(ev: Evidence) -> Verdict | None:
    """Ranks issued different ops, dtypes or sizes at one sequence number of a group."""
    if not ev.mismatches:
        return None
    f = ev.mismatches[0]
    if _cuda_first(ev, f.missing + f.present):
        return None  # cuda_failure says it
    return Verdict(Kind.MISMATCH, f.message, f.missing, f.evidence)


def mismatch_reported(ev: Evidence) -> Verdict | None:
    """The runtime caught the mismatch itself (TORCH_DISTRIBUTED_DEBUG=DETAIL, gloo's size check)."""
    rep = ev.reported_mismatch.sort("line")
    if not rep.height:
        return None
    r = _rank_of(rep, ev)
    if _cuda_first(ev, r):
        return None
    at = rep.filter(pl.col("seq").is_not_null())
    what = (f"{at['op'][0]} seq {at['seq'][0]}" if at.height else _last_open(ev, r))
    return Verdict(Kind.MISMATCH, f"{who(r) if r else 'a rank'}: the ranks' collectives no longer pair up"
                   + (f" at {what}" if what else "") + f" ({_msg(rep, 0, 160)})"
                   + ("" if what else "; no record here names the collective: a Flight Recorder dump (tracekit run) "
                      "or TORCH_DISTRIBUTED_DEBUG=DETAIL names it"), r, lines(rep) + lines(ev.crashes, 2))


def mismatch_from_watchdog(ev: Evidence) -> Verdict | None:
    """Watchdog lines of several ranks name the same SeqNum of one group with different ops or sizes:
    the ranks are not in the same collective."""
    wd = ev.kinds(EventKind.WATCHDOG_TIMEOUT).filter(pl.col("seq").is_not_null() & pl.col("op").is_not_null()
                                             & pl.col("rank").is_not_null()).with_columns(pl.col("pg").fill_null("0"))
    if wd.select("rank").n_unique() < 2:
        return None
    per = wd.group_by("pg", "seq").agg(pl.col("op").n_unique().alias("ops"), pl.col("numel").n_unique().alias("sizes"),
                                       pl.col("rank").n_unique().alias("n"), pl.col("op").first().alias("op0"))
    bad = per.filter((pl.col("n") > 1) & ((pl.col("ops") > 1) | ((pl.col("sizes") > 1)
                                          & ~pl.col("op0").str.contains("(?i)alltoall|gather|scatter|coalesced"))))
    if not bad.height:
        return None
    pg, seq = bad.row(0)[:2]
    at = wd.filter((pl.col("pg") == pg) & (pl.col("seq") == seq)).unique("rank", maintain_order=True)
    groups = at.group_by("op", "numel", maintain_order=True).agg(pl.col("rank").sort())
    said = "; ".join(f"{who(r)} ran {op.upper()} of {n} element(s)" for op, n, r in groups.iter_rows())
    odd = min(groups.iter_rows(), key=lambda g: len(g[2]))[2]
    if _cuda_first(ev, odd):
        return None
    return Verdict(Kind.MISMATCH, f"process group {pg}: SeqNum {seq} is not the same collective on every rank: {said}",
                   odd, lines(at, 6))


def mismatch_on_the_wire(ev: Evidence) -> Verdict | None:
    """NCCL's network transport saw a peer send another size than this rank posted (`collective
    mismatch error, local size A remote size B`, `message truncated: receiving A bytes instead of B`):
    the ranks issued different collectives, a mismatch seen from the wire, not a network fault."""
    t = ev.transport.filter(pl.col("message").str.contains(WIRE_MISMATCH) & ~pl.col("where").fill_null("").str.contains(BOOTSTRAP)
                            & ~pl.col("message").str.contains(BOOTSTRAP)).sort("line")
    if not t.height:
        return None
    r = t["rank"].drop_nulls().unique().sort().to_list()
    return Verdict(Kind.MISMATCH, f"{who(r) if r else 'a rank'} received another size than it posted: {_msg(t, 0, 160)}: "
                   "the ranks issued different collectives (a size or op mismatch seen by NCCL's network transport); "
                   "TORCH_DISTRIBUTED_DEBUG=DETAIL or a Flight Recorder dump names the collective", r, lines(t, 4))


def bootstrap_failed(ev: Evidence) -> Verdict | None:
    """NCCL's bootstrap failed, or NCCL refused the communicator at init (a duplicate GPU): the
    communicator never completed init, before any collective ran."""
    text = pl.concat_str(pl.col("where").fill_null(""), pl.lit(" "), pl.col("message").fill_null(""))
    # (a bootstrap that found no interface or could not connect is the network's: transport_error says it)
    t = ev.transport.filter(text.str.contains(BOOTSTRAP) & ~text.str.contains(NETWORK_FAIL)
                            & ~text.str.contains(r"(?i)interface|socket")).sort("line")
    if not t.height or ev.store.comms.filter(pl.col("state") == "init_complete").height:
        return None
    r = t["rank"].drop_nulls().unique().sort().to_list()
    return Verdict(Kind.INIT_STALL, f"NCCL's communicator init never completed: its bootstrap failed on "
                   f"{who(r) if r else 'a rank'}: {_msg(t, 0, 180)}" + (f"; then: {_msg(ev.nccl_errors, 0, 120)}"
                                                                        if ev.nccl_errors.height else ""),
                   r, lines(t, 3) + lines(ev.nccl_errors, 2) + lines(ev.network_settings, 3))


def _count(table: pl.DataFrame | pl.LazyFrame) -> int:
    """Rows of a table in memory or scanned from disk (a store's metadata says, nothing is read)."""
    return align.collect(table.lazy().select(pl.len())).item()


def _last_open(ev: Evidence, ranks: list[int]) -> str:
    """The collective these ranks were in when they stopped: their last FR/Kineto entry."""
    c = align.collect(ev.store.collectives.lazy().filter(pl.col("rank").is_in(ranks) & pl.col("source").is_in(sources.TIMED)))
    if not c.height:
        return ""
    last = c.sort("start_ns", "record_id", nulls_last=True).tail(1).row(0, named=True)
    return (f"{last['op_raw'] or last['op']} seq {last['seq']}" + align.tensor_text(last["sizes"], last["dtype"])
            + f" on process group {last['pg']}")


def _network_failed_before(ev: Evidence, failures: pl.DataFrame) -> bool:
    """The network transport failed earlier in the same file than the first of ``failures``: the
    later failure (an illegal access in NCCL's proxy, an abort) is what the broken transfer led to."""
    net = ev.transport.filter(pl.col("kind") != EventKind.CONNECT_RETRY)
    if not net.height or not failures.height:
        return False
    first = failures.sort("file", "line").group_by("file").agg(pl.col("line").min().alias("_f"))
    return net.join(first, on="file").filter(pl.col("line") < pl.col("_f")).height > 0


def cuda_failure(ev: Evidence) -> Verdict | None:
    """A CUDA failure (illegal access, out of memory, device assert): a cause of its own -- unless the
    network transport failed before it in the same log."""
    if not ev.cuda.height or _network_failed_before(ev, ev.cuda):
        return None
    r = _rank_of(ev.cuda, ev)
    after = ("; the collectives that no longer pair up after it are its consequence (its error path left the "
             "others' collective)" if ev.mismatches or ev.reported_mismatch.height else "")
    return Verdict(Kind.CRASHED_RANK, f"{who(r) if r else 'a rank'} hit a CUDA error first: {_msg(ev.cuda)}{after}", r,
                   lines(ev.cuda) + lines(ev.exits, 3))


def nccl_failure(ev: Evidence) -> Verdict | None:
    """NCCL gave up (its error code reached the program) and the network says why: NCCL's own WARN,
    a transport error or connect retries."""
    t = ev.transport.sort("line")
    if not (ev.nccl_errors.height and t.height):
        return None
    r = _rank_of(ev.nccl_errors.head(1), ev)
    said = ev.launched_with
    return Verdict(Kind.TRANSPORT_ERROR, f"NCCL failed on {_who_or(t)}: "
                   f"{_msg(t, 0, 160)}" + (f" (launched with {said})" if said else "")
                   + f"; {who(r) if r else 'a rank'} then failed: {_msg(ev.nccl_errors, 0, 120)}",
                   sorted(set(t["rank"].drop_nulls().to_list()) | set(r)),
                   lines(t, 3) + lines(ev.network_settings, 3) + lines(ev.nccl_errors, 2))


def nccl_error_unexplained(ev: Evidence) -> Verdict | None:
    """NCCL's error code with none of NCCL's own lines to say why: collect them."""
    e = ev.nccl_errors
    if not e.height:
        return None
    r = _rank_of(e.head(1), ev)
    return Verdict(Kind.UNDECIDED, f"NCCL failed on {who(r) if r else 'a rank'} ({_msg(e, 0, 160)}), and no NCCL "
                   "WARN line says why: rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) and collect every "
                   "rank's output", r, lines(e, 4) + lines(ev.exits, 2))


def rendezvous_failed(ev: Evidence) -> Verdict | None:
    """The rendezvous / TCPStore never came together: no rank got as far as a communicator."""
    rz = ev.rendezvous
    if not rz.height:
        return None
    return Verdict(Kind.INIT_STALL, f"the rendezvous never completed: {_msg(rz, 0, 200)} (check --master_addr / "
                   "--master_port, the port is free and reachable from every node, and every node was launched)",
                   _rank_of(rz, ev), lines(rz, 4))


def store_barrier(ev: Evidence) -> Verdict | None:
    """init_process_group's store-based barrier waits or timed out: fewer ranks than the world checked
    in (the others never reached init), or more (two jobs share one store address and port)."""
    sb = ev.store.events.filter(pl.col("message").str.contains(STORE_BARRIER) & pl.col("message").str.contains("worker_count"))
    if not sb.height:
        return None
    m = pl.col("message")
    sb = sb.with_columns(pl.coalesce(m.str.extract(r"rank:? (\d+)", 1).cast(pl.Int64, strict=False), "rank").alias("r"),
                         m.str.extract(r"world_size=(\d+)", 1).cast(pl.Int64, strict=False).alias("world"),
                         m.str.extract(r"worker_count=(\d+)", 1).cast(pl.Int64, strict=False).alias("count"),
                         m.str.extract(r"key:? (\S+?)[ ,(]", 1).alias("key")).sort("file", "line")
    last = sb.tail(1).row(0, named=True)
    world, count = last["world"], last["count"]
    waiting = sorted(set(sb["r"].drop_nulls().to_list()))
    head = (f"init_process_group's store-based barrier ({last['key']}) never completed: worker_count={count} "
            f"of world_size={world} checked in")
    if world is not None and count is not None and count > world:
        return Verdict(Kind.INIT_STALL, head + ": more processes than the world under one key, so two jobs (or a "
                       "restarted one) share one MASTER_ADDR:MASTER_PORT store; give each job its own port",
                       waiting, lines(sb, 3))
    missing = sorted(set(range(world)) - set(waiting)) if world and len(waiting) == count else []
    said = (f"; {who(missing)} never checked in (never reached init_process_group)" if missing else
            f"; {world - count} rank(s) never reached init_process_group" if world and count is not None else "")
    return Verdict(Kind.INIT_STALL, head + said + (f"; {who(waiting)} {'waits' if len(waiting) == 1 else 'wait'} in it" if waiting else ""),
                   missing or waiting, lines(sb, 3))


def crashed_rank(ev: Evidence) -> Verdict | None:
    """A rank failed with an error that is not itself a timeout; the others then wait for it."""
    if not ev.crashes.height or _network_failed_before(ev, ev.crashes):
        return None
    first = ev.crashes.head(1)
    r = _rank_of(first, ev)
    return Verdict(Kind.CRASHED_RANK, f"{who(r) if r else 'a rank'} failed first: {_msg(first)}", r,
                   lines(ev.crashes) + lines(ev.exits, 3))


def init_stall(ev: Evidence) -> Verdict | None:
    """A communicator started init and never completed it, or connects keep retrying before any
    collective."""
    retry = ev.transport.filter(pl.col("kind") == EventKind.CONNECT_RETRY)
    p = ev.pending
    hard = retry.filter(pl.col("message").str.contains(r"(?i)no route to host|network is unreachable|refused"))
    if ev.transport.filter(pl.col("kind") != EventKind.CONNECT_RETRY).height or hard.height:
        return None  # init never completed because the network failed: transport_error says it
    # an Init START with no COMPLETE in an excerpt may just be where the excerpt ends: a stall needs a
    # peer that completed the same communicator, or a sign that time passed (a timeout, a stall, stacks)
    peers_done = ev.store.comms.filter((pl.col("state") == "init_complete")
                                       & pl.col("comm_id").is_in(ev.store.comms.filter(pl.col("state") == "init_start")["comm_id"].drop_nulls().implode()))
    stalled = peers_done.height or ev.timeouts.height or ev.stalls.height or ev.stacks.height or ev.exits.height
    if not (p.height and stalled):
        return None  # (connects that only keep retrying are the network's: transport_error says it)
    r = p["rank"].drop_nulls().unique().sort().to_list()
    known = set(ev.store.ranks["rank"].drop_nulls().to_list())
    never = sorted(known - set(ev.init_started)) if p.height else []
    where = _where(ev, never)
    summary = (f"{p.height} communicator init(s) never completed" + (f" on {who(r)}" if r else "")
               + (f"; {who(never)} logged no NCCL init (the bootstrap waits for {'it' if len(never) == 1 else 'them'})"
                  if never else "") + _in(where))
    pend = p.with_columns(pl.format("comm {} nranks {} - Init START without Init COMPLETE", "comm", "nranks").alias("message"))
    return Verdict(Kind.INIT_STALL, summary, never or r, lines(pend) + _stack_lines(where, 2) + lines(ev.transport, 4))


def transport_error(ev: Evidence) -> Verdict | None:
    """The network transport reported errors (not consequences of a peer's exit, not benign)."""
    t = ev.transport.sort("line")
    if not (t.filter(pl.col("kind") != EventKind.NCCL_WARN).height or (t.height and not ev.missing)):
        return None
    said = ev.launched_with
    return Verdict(Kind.TRANSPORT_ERROR, f"{t.height} transport error line(s), first: {_msg(t)}"
                   + (f" (launched with {said})" if said else ""), t["rank"].drop_nulls().unique().sort().to_list(),
                   lines(t) + lines(ev.network_settings, 3))


def deadlock(ev: Evidence) -> Verdict | None:
    """A rank with a record is behind its group: it never issued the collective the others wait in
    -- unless the run finished or every rank moved between dumps (then the lag is when each was dumped)."""
    if not ev.missing:
        return None
    if ev.finished or ev.moving:
        return None  # slow_progress or healthy says it
    # in one group, the earliest collective a rank never issued is the cause: the ranks waiting in it
    # can issue nothing later, so a later gap is theirs and a consequence
    f = min((m for m in ev.missing if (m.source, m.pg) == (ev.missing[0].source, ev.missing[0].pg)),
            key=lambda m: m.seq if m.seq is not None else math.inf)
    late = ev.late
    if late is not None and set(f.missing) == {late["rank"]} and not ev.timeouts.height:
        # the rank behind was the last to arrive in collective after collective before: the record ends
        # while it is late once more, and no watchdog says it stopped
        text = _late_text(ev)
        return Verdict(Kind.STRAGGLER, f"{text}; the record ends before it issued {f.op} seq {f.seq}, as late as every "
                       "time before, and no collective timed out: late, not stuck", [late["rank"]], [text] + f.evidence[:2])
    # the latest dump first: where the rank is now, not where an early round caught it
    where = ev.stacks.filter(pl.col("rank").is_in(f.missing)).sort("file", "line", descending=[True, False])
    summary = f.message + _in(where.unique(["rank", "where"], maintain_order=True))
    return Verdict(Kind.DEADLOCK, summary, f.missing, f.evidence + _stack_lines(where) + lines(ev.timeouts, 3))


def deadlock_reported(ev: Evidence) -> Verdict | None:
    """An analyzer's own report that ranks never joined a collective the others are in (torchfrtrace's
    `missing ranks`, c10d's desync report, NCCL RAS's operation counts): said as that tool's word."""
    rm = ev.kinds(EventKind.RANK_MISSING).sort("file", "line")
    if not rm.height:
        return None
    first = rm.row(0, named=True)
    at = rm.filter(pl.col("seq").eq_missing(first["seq"]) & pl.col("pg").eq_missing(first["pg"]))
    r = at["rank"].drop_nulls().unique().sort().to_list()
    what = " ".join(x for x in ((first["op"] or ""), f"seq {first['seq']}" if first["seq"] is not None else "") if x)
    where = f"process group {first['pg']}: " if first["pg"] is not None else ""
    by = first["where"] or "the log"
    return Verdict(Kind.DEADLOCK, f"{where}{what or 'a collective'}: " + (
        f"{who(r)} never joined it (reported by {by})" if r else f"ranks behind (reported by {by}): {_msg(at, 0, 160)}"),
        r, lines(at, 6) + lines(ev.timeouts, 2))


def deadlock_from_watchdog(ev: Evidence) -> Verdict | None:
    """Watchdog lines of several ranks disagree on the last work enqueued in one group: the ranks
    behind never issued the next collective."""
    st = ev.timeouts.filter(pl.col("last_enqueued").is_not_null() & pl.col("rank").is_not_null())
    if not st.height:
        return None
    per = st.group_by(pl.col("pg").fill_null("0"), "rank").agg(pl.col("last_enqueued").max(), pl.col("file").first(),
                                                                pl.col("line").first(), pl.col("message").first())
    for (pg,), g in per.group_by(["pg"], maintain_order=True):
        top = g["last_enqueued"].max()
        behind = g.filter(pl.col("last_enqueued") < top)
        if behind.height and g.height > 1:
            b = behind["rank"].sort().to_list()
            ahead = g.filter(pl.col("last_enqueued") == top)["rank"].sort().to_list()
            lows = sorted(set(behind["last_enqueued"].to_list()))
            op = ev.timeouts.filter(pl.col("seq") == top)["op"].drop_nulls()
            return Verdict(Kind.DEADLOCK, f"process group {pg}: {who(b)} last enqueued work "
                           f"{', '.join(map(str, lows))} while {who(ahead)} enqueued {top}"
                           + (f" ({op[0].upper()})" if op.len() else "")
                           + f": {who(b)} never issued seq {min(lows) + 1}; the others wait in it",
                           b, lines(behind.sort("rank"), 4) + lines(g.filter(pl.col("last_enqueued") == top), 2))
    return None


def deadlock_from_stacks(ev: Evidence) -> Verdict | None:
    """Stacks alone: some processes sit in a collective while others are elsewhere -- unless the run
    finished or every rank moved between dumps (then the stacks are snapshots of a moving job)."""
    st = ev.stacks
    if ev.finished or ev.moving:
        return None
    if not (st.height >= 2 and st["in_c10d"].any() and not st["in_c10d"].all()):
        return None
    out = st.filter(~pl.col("in_c10d"))
    names = [f"rank {r['rank']}" if r["rank"] is not None else f"pid {r['pid'] or r['tid']}" for r in out.iter_rows(named=True)]
    if len(names) > 4:
        names = names[:4] + [f"{len(names) - 4} more"]
    return Verdict(Kind.DEADLOCK, f"{st.filter(pl.col('in_c10d')).height} process(es) wait in a collective while "
                   f"{', '.join(names)} {'is' if len(names) == 1 else 'are'} elsewhere: {out['where'][0]}",
                   out["rank"].drop_nulls().to_list(),
                   lines(out.with_columns(pl.format("{} in {}", "thread", "where").alias("message")), 6))


def waiting_on_silent_ranks(ev: Evidence) -> Verdict | None:
    """Members of a group left no record while the others reached a collective: who is behind is
    not known (a rank with no file did not "never issue" anything)."""
    if not ev.silent or ev.finished:
        return None
    f = ev.silent[0]
    what = _last_open(ev, f.present)
    return Verdict(Kind.UNDECIDED, f"{who(f.present)} reached seq {f.seq} of process group {f.pg}"
                   + (f" (last: {what})" if what else "") + f"; {who(f.missing)} left no "
                   f"{align.SOURCE_NAMES.get(f.source, f.source)} record, so whether {'it' if len(f.missing) == 1 else 'they'} "
                   f"issued it is unknown: collect {'its' if len(f.missing) == 1 else 'their'} dumps and logs",
                   [], lines(ev.timeouts, 3))


def exited_without_cause(ev: Evidence) -> Verdict | None:
    """torchrun's root-cause rank failed with a real error code and nothing else explains it."""
    ex = ev.exits.filter(~pl.col("exit_code").is_in(list(KILL_CODES)))
    if not ex.height or ev.timeouts.height or ex["rank"].drop_nulls().n_unique() > 1:
        return None  # several ranks failing alike says nothing of which failed first
    r = [ev.root_cause_rank] if ev.root_cause_rank is not None else _rank_of(ex.head(1), ev)
    code = ex.filter(pl.col("rank").is_in(r))["exit_code"] if r else ex["exit_code"]
    code = code[0] if code.len() else ex["exit_code"][0]
    local = ex["message"].str.extract(r"local_rank: (\d+)", 1).drop_nulls()
    name = who(r) if r else (f"local rank {local[0]}" if local.len() else "a rank")
    why = ("was killed with SIGKILL: the kernel's OOM killer does this when host memory runs out (dmesg on that "
           "node says so)" if code in SIGKILL_CODES else
           f"exited first with code {code} (torchrun's first observed failure) and its output shows no error: "
           "its stderr holds why")
    return Verdict(Kind.CRASHED_RANK, f"{name} {why}", r, lines(ex, 4))


def timed_out(ev: Evidence) -> Verdict | None:
    """Watchdog timeouts with nothing to show which rank is missing: say what timed out."""
    to = ev.timeouts.sort("line")
    if not to.height:
        return None
    r = to["rank"].drop_nulls().unique().sort().to_list()
    wd = to.filter(pl.col("kind") == EventKind.WATCHDOG_TIMEOUT)
    what = ""
    if wd.height:
        w = wd.row(0, named=True)
        what = (f" in {(w['op'] or '?').upper()}" + (f" SeqNum {w['seq']}" if w["seq"] is not None else "")
                + (f" on process group {w['pg']}" if w["pg"] is not None else "")
                + (f" after {w['timeout_ms'] / 1000:g} s" if w["timeout_ms"] else ""))
    last = to.filter(pl.col("last_enqueued").is_not_null())
    if last.height:
        what += "; last enqueued / completed work " + ", ".join(
            f"rank {x['rank'] if x['rank'] is not None else '?'}: {x['last_enqueued']}/{x['last_completed']}"
            for x in last.unique("rank", maintain_order=True).head(4).iter_rows(named=True))
    return Verdict(Kind.UNDECIDED, f"{who(r) if r else 'a rank'} timed out{what}; no record shows which rank is "
                   f"missing: collect every rank's Flight Recorder dump and log ({COLLECT})", r, lines(to))


def slow_progress(ev: Evidence) -> Verdict | None:
    """FR dumps of one rank, taken at different times, whose frontier moved: slow, not hung."""
    m = ev.motion
    if not m.height:
        return None
    moved = m.filter(pl.col("last") > pl.col("first")).with_columns((pl.col("last") - pl.col("first")).alias("dseq"))
    if not moved.height:
        return None
    rate = (moved["dseq"] / moved["dt"].clip(lower_bound=1e-9)).median()
    per_coll = (moved["bytes"] / moved["dseq"]).median()
    took = ev.kinds(EventKind.STEP)["message"].str.extract(r"'elapsed_s': ([\d.]+)", 1).cast(pl.Float64, strict=False).drop_nulls()
    step_s = f"; steps took {took.median():.1f} s each" if took.len() else ""
    gbps = (moved["bytes"] / moved["dt"].clip(lower_bound=1e-9)).median() / 1e9
    # a figure that cannot be worked out (no sizes recorded) is left out, never printed as 0.0
    size = (f", {_bytes(per_coll)} per collective, {_bytes(gbps * 1e9)}/s through each rank"
            if per_coll and per_coll > 0 else "")
    late = _late_text(ev)
    ranks = moved["rank"].sort().to_list()
    v = Verdict(Kind.SLOW_PROGRESS, (f"{late}; " if late else "") + "sequence numbers advanced between dumps on "
                f"{moved.height} rank(s): about {rate:.2f} collectives/s{size}{step_s}; "
                f"the run is slow, not hung" + (" (and it finished)" if ev.finished else ""),
                [ev.late["rank"]] if late else ranks,
                ([late] if late else []) + [f"rank {r['rank']}: seq {r['first']} -> {r['last']} over {r['dt']:.1f}s across {r['dumps']} dumps"
                 for r in moved.sort("rank").iter_rows(named=True)][:6])
    if ev.missing:
        v.notes.append("the ranks' frontiers differ only by when each was dumped: " + (
            "every launcher exited with code 0" if ev.finished else "every rank advanced between its last two dumps"))
    return v


def _bytes(n: float) -> str:
    """``17.0 MB``, ``33 KB``, ``4 B``: a size in the unit that shows it."""
    for unit, k in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= k:
            return f"{n / k:.1f} {unit}" if n < 100 * k else f"{n / k:.0f} {unit}"
    return f"{n:.0f} B"


def _late_text(ev: Evidence) -> str:
    """The rank that makes the others wait, how late per collective and since when (empty when none)."""
    x = ev.late
    if x is None:
        return ""
    return (f"rank {x['rank']} makes the others wait: it arrives last in {x['times']} of {x['of']} collectives, "
            f"a median {x['lag_s']:.2f} s after the next rank, since {x['since_op']} seq {x['since_seq']} "
            f"on process group {x['pg']} ({align.SOURCE_NAMES.get(x['source'], x['source'])} durations)")


def straggler_by_wait(ev: Evidence) -> Verdict | None:
    """Without a clock shared by the ranks: one rank spends least time in most collectives, the others
    wait for it (each rank's own durations)."""
    late = _late_text(ev)
    if not late or ev.failure_signs:
        return None
    return Verdict(Kind.STRAGGLER, late, [ev.late["rank"]], [late])


def straggler(ev: Evidence, min_collectives: int = 20, share: float = 0.6) -> Verdict | None:
    """One rank enters most collectives last (clock offsets per host removed), by a margin that
    matters. Needs enqueue times of every rank (Flight Recorder, Kineto)."""
    c, source = sources.best_lazy(ev.store.collectives.lazy(), sources.TIMED,
                                  pl.col("start_ns").is_not_null() & pl.col("rank").is_not_null() & pl.col("seq").is_not_null(),
                                  ("rank", "pg", "seq", "host", "start_ns", "end_ns"))
    if not source:
        return None
    c = sources.on_one_clock(c.unique(["rank", "pg", "seq"]), {"start_ns": "t"})
    n = c.group_by("pg", "seq").agg(pl.col("rank").n_unique().alias("n"))
    full = c.join(n.filter(pl.col("n") == n["n"].max()), on=["pg", "seq"], how="semi")
    if full["rank"].n_unique() < 2:
        return None
    last = (full.sort("t").group_by("pg", "seq").agg(pl.col("rank").last().alias("late"),
                                                       ((pl.col("t").max() - pl.col("t").median()) / 1e6).alias("lag_ms")))
    if last.height < min_collectives:
        return None
    top = last.group_by("late").agg(pl.len().alias("times"), pl.col("lag_ms").median()).sort("times", descending=True).row(0, named=True)
    # some rank is last by chance in 1/R of them: ask for 3 standard deviations above that too
    # (with 2 ranks, one of them is last in 60% of 20 collectives half the time)
    chance = 1 / full["rank"].n_unique()
    need = max(share, chance + 3 * math.sqrt(chance * (1 - chance) / last.height))
    if top["times"] < need * last.height or top["lag_ms"] < 5.0:  # 1-2 ms is scheduling noise on a busy CPU
        return None
    return Verdict(Kind.STRAGGLER, f"rank {top['late']} enters {top['times']} of {last.height} collectives last, "
                   f"a median {top['lag_ms']:.1f} ms after the others: the others wait for it every time",
                   [top["late"]], [f"{source}: rank {top['late']} last in {top['times']}/{last.height} collectives "
                                   f"(median lag {top['lag_ms']:.1f} ms)"])


def watchdog_stuck(ev: Evidence) -> Verdict | None:
    """c10d's heartbeat monitor found the watchdog thread stuck: a CUDA or NCCL call never returned.
    Which call, and why, only that rank's native stack says."""
    hb = ev.store.events.filter(pl.col("message").str.contains(HEARTBEAT)).unique(["file", "line"], maintain_order=True).sort("file", "line")
    if not hb.height:
        return None
    r = hb["rank"].drop_nulls().unique().sort().to_list()
    secs = hb["message"].str.extract(HEARTBEAT, 1).cast(pl.Int64, strict=False).drop_nulls()
    last = _last_open(ev, r) if r else ""
    return Verdict(Kind.UNDECIDED, f"the watchdog of {who(r) if r else 'a rank'} got stuck"
                   + (f" for {secs.max()} s" if secs.len() else "") + " (c10d's heartbeat monitor): a CUDA or NCCL call "
                   "it made never returned (a kernel that never finished, a peer gone, a driver fault), so the process "
                   "was taken down" + (f"; last collective: {last}" if last else "")
                   + "; which call only that rank's native stack says: py-spy dump --native --pid PID before the "
                   "monitor fires (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC longer), and every rank's Flight Recorder dump",
                   r, lines(hb, 3) + lines(ev.timeouts, 2))


def peer_gone(ev: Evidence) -> Verdict | None:
    """A rank's connection was closed by its peer (broken pipe, reset, closed by remote peer) and
    nothing says why: the peer ended first, and only its own log says why."""
    gone = ev.kinds(EventKind.TRANSPORT_ERROR, EventKind.NCCL_WARN, EventKind.EXCEPTION, EventKind.CRASH).filter(
        pl.col("message").str.contains(r"(?i)broken pipe|closed by (?:remote )?peer|connection reset")).sort("file", "line")
    if not gone.height:
        return None
    return Verdict(Kind.UNDECIDED, f"a peer of {_who_or(gone)} closed its connection ({_msg(gone, 0, 140)}): that peer "
                   "ended first (exited, was killed, or its host went away); its own log or exit code says why: "
                   "collect every rank's output and the launcher's exit codes", [], lines(gone, 3) + lines(ev.exits, 2))


def failed_without_cause(ev: Evidence) -> Verdict | None:
    """A failure sign (a non-zero exit, a kill, a stall, a cancel) and no cause in the evidence."""
    signs = ev.failure_signs
    if not signs:
        return None
    shown = lines(ev.exits, 3) + lines(ev.stalls, 2) + lines(ev.cancelled, 1)
    return Verdict(Kind.UNDECIDED, "the job did not end cleanly (" + "; ".join(signs) + ") but the evidence shows "
                   f"no cause: {COLLECT}", _rank_of(ev.exits, ev), shown)


def slow_steps(ev: Evidence) -> Verdict | None:
    """Steps that still advance, one of them far slower than the others (their timestamps or their
    own per-step times), and no error: slow, not hung."""
    slow = ev.pace["slow"]
    if not slow or ev.trouble.height or ev.failure_signs:
        return None
    text, file, line = slow
    return Verdict(Kind.SLOW_PROGRESS, f"{text}: the run is slow, not hung (steps advanced "
                   f"{ev.steps['step'].min()} -> {ev.steps['step'].max()}, no error logged)",
                   [], [Cited(file, line, text)])


def steady_progress(ev: Evidence) -> Verdict | None:
    """Steps advance at a steady pace and nothing else is logged but calm lines: healthy, though only
    some ranks log steps (and no rank of a known world is known to have left no file). A synchronous
    job's steps advance only while every rank of it takes part in its collectives, so the ranks that
    do not log are moving too."""
    if not ev.progressed or ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.missing or ev.mismatches:
        return None
    if ev.coverage.missing:
        return None  # ranks of the world known to have left no file: what they logged is not known
    pace = ev.pace["per_step_s"]
    if ev.steps.height < 2 or ev.pace["slow"] or ev.pace["falling"] or (pace is None and ev.pace["rate"] is None):
        return None  # a pace that cannot be measured might hide a stall between two step lines
    return Verdict(Kind.HEALTHY, f"{'; '.join(ev.progressed[:2])}" + (f" at a steady {pace:.1f} s per step" if pace else f" at a steady throughput ({ev.pace['rate']:g})")
                   + " and no error, signal or stall is logged: the steps of a synchronous job advance only while "
                   f"every rank takes part ({ev.coverage.describe()})", [], lines(ev.steps.sort("step"), 2))


def healthy(ev: Evidence) -> Verdict | None:
    """Positive evidence of a clean run: a clean end or progress (or Flight Recorder dumps that show
    every group healthy), every rank of the world seen."""
    windows = [w.message for w in ev.windows]
    good = ev.clean_end or ev.progressed or windows
    if not good or not ev.coverage.complete:
        return None
    what = "; ".join((ev.clean_end + ev.progressed + windows)[:3])
    return Verdict(Kind.HEALTHY, f"every rank of {ev.coverage.world_size} seen, no failure logged, and {what}", [],
                   [])


def clean_but_partial(ev: Evidence) -> Verdict | None:
    """A clean end or progress on the ranks seen, but not every rank seen (or the world size unknown)."""
    good = ev.clean_end or ev.progressed
    if not good:
        return None
    if ev.pace["falling"]:
        return Verdict(Kind.UNDECIDED, f"{'; '.join(good[:2])}, but {ev.pace['falling'][0]}: a stall between those "
                       f"steps or a slower phase; the step lines' timestamps or per-step times decide it "
                       f"({ev.coverage.describe()})", [], [Cited(*ev.pace["falling"][1:], ev.pace["falling"][0])])
    return Verdict(Kind.UNDECIDED, f"what was seen ended cleanly or progressed ({'; '.join((ev.clean_end + ev.progressed)[:2])}),"
                   f" but only {ev.coverage.describe()}: the other ranks' logs decide it", [], [])


def nothing(ev: Evidence) -> Verdict:
    """No rule fired: say what was seen and what would decide it."""
    n = _count(ev.store.collectives)
    errors = ev.kinds(EventKind.NCCL_WARN, EventKind.C10D_ERROR, EventKind.EXCEPTION, EventKind.CRASH,
                      EventKind.STALL, EventKind.RANK_MISSING, EventKind.WATCHDOG_ABORT)
    seen = [f"{n} collective record(s)" if n else "no collective record",
            f"{errors.height} error line(s) no rule explains" if errors.height else "no sign of failure"]
    done = ev.store.comms.filter(pl.col("state") == "init_complete")
    if done.height and not n and not errors.height:
        # the last thing the log says is that init completed: stuck right after it, or the log ends there
        r = done["rank"].drop_nulls().unique().sort().to_list()
        return Verdict(Kind.UNDECIDED, f"{who(r) if r else 'the processes seen'} finished NCCL init "
                       f"({done.select('comm').n_unique()} communicator(s)) and logged nothing after: no collective, "
                       f"no error, no step ({ev.coverage.describe()}); whether they hang in the first collective or the "
                       "log ends there is not in it: a stack dump of every rank (py-spy dump) and NCCL_DEBUG=INFO with "
                       "NCCL_DEBUG_SUBSYS=COLL decide it", [], lines(done.with_columns(pl.lit("Init COMPLETE").alias("message")), 2))
    return Verdict(Kind.UNDECIDED, f"{' and '.join(seen)}, but no clean end or progress to call it healthy "
                   f"({ev.coverage.describe()}): {COLLECT}", [], lines(errors, 4))


RULES: list[Callable[[Evidence], Verdict | None]] = [
    mismatch_aligned, mismatch_reported, mismatch_from_watchdog, mismatch_on_the_wire, cuda_failure,
    bootstrap_failed, nccl_failure, rules_wait.waiting_across_groups, crashed_rank, store_barrier, rendezvous_failed,
    init_stall, transport_error, deadlock, deadlock_reported, deadlock_from_watchdog, deadlock_from_stacks,
    slow_progress, waiting_on_silent_ranks, nccl_error_unexplained,
    rules_exit.killed_from_outside,  # exits
    rules_exit.process_ended,  # exits
    exited_without_cause, timed_out, straggler,
    straggler_by_wait, watchdog_stuck, peer_gone,
    rules_exit.workers_ended_unexplained,  # exits
    failed_without_cause, slow_steps, healthy, steady_progress,
    clean_but_partial,
]


def notes(ev: Evidence) -> list[str]:
    """What every verdict carries besides: lagging groups known only from pg_status, benign WARNs,
    a scheduler's cancel."""
    out = [f"also lagging, from pg_status only (no entry in any buffer): {f.message}"
           for f in ev.findings if f.kind.name in ("MISSING", "RANK_ABSENT") and not f.op][:5]
    for pattern, why in BENIGN.items():
        hit = ev.benign.filter(pl.col("message").str.contains(pattern))
        if hit.height:
            out.append(f"harmless: {lines(hit, 1)[0]} ({why})")
    if ev.cancelled.height:
        out.append("the scheduler ended the job (" + _msg(ev.cancelled, 0, 120) + ")")
    return out


def first(ev: Evidence) -> tuple[str, Verdict]:
    """The first rule that fires, and its name."""
    for rule in RULES:
        v = rule(ev)
        if v is not None:
            return rule.__name__, v
    return "nothing", nothing(ev)
