"""The stall rules: a communicator that never finished init, a rank behind its group (in the aligned
records, an analyzer's report, the watchdogs' lines, the stacks), members that left no record,
timeouts that name no rank, a stuck watchdog. (A peer gone and communicators aborted, the failures seen from
the side that survived them, are in rules_gone.) A hang without a cause to name is
UNDECIDED, with what to collect."""

from __future__ import annotations

import math

import polars as pl

from tracekit import align, dump_signal, ended_first, rules_apart
from tracekit.evidence import HEARTBEAT, Evidence, clip, lines
from tracekit.facts_in_view import seq_said
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.parsers.torch_patterns import PG_TAG
from tracekit.rules_common import COLLECT, frames_text, last_open, late_text, msg, stack_lines, stacks_of
from tracekit.wording import who


def init_stall(ev: Evidence) -> Verdict | None:
    """A communicator started init and never completed it, or connects keep retrying before any
    collective."""
    retry = ev.transport.filter(pl.col("kind") == EventKind.CONNECT_RETRY)
    p = ev.pending
    hard = retry.filter(pl.col("message").str.contains(
        r"(?i)no route to host|network is unreachable|refused"))
    if ev.transport.filter(pl.col("kind") != EventKind.CONNECT_RETRY).height or hard.height:
        return None  # init never completed because the network failed: transport_error says it
    # an Init START with no COMPLETE in an excerpt may just be where the excerpt ends: a stall needs a
    # peer that completed the same communicator, or a sign that time passed (a timeout, a stall, stacks)
    comms = ev.store.comms
    started = comms.filter(pl.col("state") == "init_start")["comm_id"].drop_nulls().implode()
    peers_done = comms.filter((pl.col("state") == "init_complete") & pl.col("comm_id").is_in(started))
    stalled = (peers_done.height or _init_timeouts(ev, p).height or ev.stalls.height or ev.stacks.height
               or ev.exits.height)
    if not (p.height and stalled):
        return None  # (connects that only keep retrying are the network's: transport_error says it)
    r = p["rank"].drop_nulls().unique().sort().to_list()
    known = set(ev.store.ranks["rank"].drop_nulls().to_list())
    never = sorted(known - set(ev.init_started)) if p.height else []
    where = stacks_of(ev, never)
    summary = (f"{p.height} communicator init(s) never completed" + (f" on {who(r)}" if r else "")
               + (f"; {who(never)} logged no NCCL init (the bootstrap waits for "
                  f"{'it' if len(never) == 1 else 'them'})" if never else "") + frames_text(where))
    said = pl.format("comm {} nranks {} - Init START without Init COMPLETE", "comm", "nranks")
    said = said.alias("message")
    return Verdict(Kind.INIT_STALL, summary, never or r,
                   lines(p.with_columns(said)) + stack_lines(where, 2) + lines(ev.transport, 4))


#: what a timeout that may be an init's waited in: a communicator's, a store's, a barrier's, a collective's
INIT_WAIT = (r"(?i)nccl|init|communicator|comm\b|store|barrier|rendezvous|collective|all_?reduce|broadcast"
             r"|all_?gather|bootstrap")


def _init_timeouts(ev: Evidence, pending: pl.DataFrame) -> pl.DataFrame:
    """The timeouts that may be a pending init's (stall33b): a watchdog's, or one whose words say a
    communicator, a store, a barrier or a collective waited, and not logged before the init began in its own
    file; a program's unrelated `Timed out while waiting` (for a server, a file) is no sign that an init stalled."""
    began = pending.group_by("file").agg(pl.col("line").min().alias("_began"))
    t = ev.timeouts.join(began, on="file", how="left").filter(
        pl.col("_began").is_null() | (pl.col("line") > pl.col("_began")))
    watchdog = pl.col("kind").is_in([EventKind.WATCHDOG_TIMEOUT, EventKind.WATCHDOG_STATUS,
                                     EventKind.WATCHDOG_ABORT])
    return t.filter(watchdog | pl.col("message").fill_null("").str.contains(INIT_WAIT))


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
        text = late_text(ev)
        return Verdict(Kind.STRAGGLER, f"{text}; the record ends before it issued {f.op} seq {f.seq}, as "
                       "late as every time before, and no collective timed out: late, not stuck",
                       [late["rank"]],
                       [text, *f.evidence[:2]])
    # the latest dump first: where the rank is now, not where an early round caught it
    where = ev.stacks.filter(pl.col("rank").is_in(f.missing)).sort("file", "line", descending=[True, False])
    summary = f.message + frames_text(where.unique(["rank", "where"], maintain_order=True))
    return Verdict(Kind.DEADLOCK, summary, f.missing,
                   [*f.evidence, *stack_lines(where), *lines(ev.timeouts, 3)])


def deadlock_reported(ev: Evidence) -> Verdict | None:
    """An analyzer's own report that ranks never joined a collective the others are in (torchfrtrace's
    `missing ranks`, c10d's desync report, NCCL RAS's operation counts): said as that tool's word."""
    rm = ev.kinds(EventKind.RANK_MISSING).sort("file", "line")
    if not rm.height:
        return None
    apart = rules_apart.horovod_apart(ev)  # (ranks each missing what the other submitted: a mismatch)
    if apart is not None:
        return apart
    first = rm.row(0, named=True)
    at = rm.filter(pl.col("seq").eq_missing(first["seq"]) & pl.col("pg").eq_missing(first["pg"]))
    r = at["rank"].drop_nulls().unique().sort().to_list()
    seq = f"seq {first['seq']}" if first["seq"] is not None else ""
    op = at["op"].drop_nulls()  # (two readers of one line: the one that knows its op says it)
    what = " ".join(x for x in ((op[0] if op.len() else ""), seq) if x)
    where = f"process group {first['pg']}: " if first["pg"] is not None else ""
    by = first["where"] or "the log"
    said = (f"{who(r)} never joined it (reported by {by})" if r
            else f"ranks behind (reported by {by}): {msg(at, 0, 160)}")
    return Verdict(Kind.DEADLOCK, f"{where}{what or 'a collective'}: " + said, r,
                   lines(at, 6) + lines(ev.timeouts, 2))


def deadlock_from_watchdog(ev: Evidence) -> Verdict | None:
    """Watchdog lines of several ranks disagree on the last work enqueued in one group: the ranks
    behind never issued the next collective."""
    st = ev.timeouts.filter(pl.col("last_enqueued").is_not_null() & pl.col("rank").is_not_null())
    if not st.height:
        return rules_apart.sequences_diverged(ev)
    per = st.group_by(pl.col("pg").fill_null("0"), "rank").agg(
        pl.col("last_enqueued").max(), pl.col("file").first(), pl.col("line").first(),
        pl.col("message").first())
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
                           b, lines(behind.sort("rank"), 4)
                           + lines(g.filter(pl.col("last_enqueued") == top), 2))
    return rules_apart.sequences_diverged(ev)


def deadlock_from_stacks(ev: Evidence) -> Verdict | None:
    """Stacks alone: some processes sit in a collective while others are elsewhere -- unless the run
    finished or every rank moved between dumps (then the stacks are snapshots of a moving job)."""
    st = ev.stacks
    if ev.finished or ev.moving:
        return None
    if not (st.height >= 2 and st["in_c10d"].any() and not st["in_c10d"].all()):
        return None
    out = st.filter(~pl.col("in_c10d"))
    names = [f"rank {r['rank']}" if r["rank"] is not None else f"pid {r['pid'] or r['tid']}"
             for r in out.iter_rows(named=True)]
    if len(names) > 4:
        names = names[:4] + [f"{len(names) - 4} more"]
    waiting = st.filter(pl.col("in_c10d"))
    ranks_in = waiting["rank"].drop_nulls().unique().sort().to_list()
    return Verdict(Kind.DEADLOCK, f"{waiting.height} process(es)"
                   + (f" ({who(ranks_in)})" if ranks_in else "")
                   + f" wait in a collective ({clip(waiting['where'][0], 100)}) "
                   f"while {', '.join(names)} {'is' if len(names) == 1 else 'are'} elsewhere: "
                   f"{out['where'][0]}: {'it' if len(names) == 1 else 'they'} never issued the collective "
                   "the others wait in",
                   out["rank"].drop_nulls().to_list(),
                   lines(out.with_columns(pl.format("{} in {}", "thread", "where").alias("message")), 6))


def ended_while_others_wait(ev: Evidence) -> Verdict | None:
    """Ranks that timed out in a collective, while other ranks had ended their work cleanly (their
    own end line, exit code 0) without timing out: the ranks that ended never issued it."""
    wd = ev.kinds(EventKind.WATCHDOG_TIMEOUT).filter(pl.col("rank").is_not_null()).sort("file", "line")
    if not wd.height:
        return None
    waiting = set(wd["rank"].to_list())
    ended = ev.kinds(EventKind.CLEAN_EXIT, EventKind.PROGRAM_END).filter(pl.col("rank").is_not_null()
                                                  & ~pl.col("rank").is_in(list(waiting))).sort("file", "line")
    left = sorted(set(ended["rank"].to_list()))
    if not left:
        return None
    w = wd.row(0, named=True)
    what = ((w["op"] or "a collective").upper() + (f" {seq_said(w['seq'])}" if w["seq"] is not None else "")
            + (f" of process group {w['pg']}" if w["pg"] is not None else ""))
    after = f" after {w['timeout_ms'] / 1000:g} s" if w["timeout_ms"] else ""
    return Verdict(Kind.DEADLOCK, f"{who(sorted(waiting))} timed out in {what}{after}, while {who(left)} had "
                   f"ended {'its' if len(left) == 1 else 'their'} work (`{clip(ended['message'][0], 60)}`) "
                   f"without waiting in it: {who(left)} never issued {what}; a collective only some ranks "
                   "call (a branch on the rank, a loop of another length) or ranks that left early",
                   left, lines(wd, 2) + lines(ended, 4))


def waiting_on_silent_ranks(ev: Evidence) -> Verdict | None:
    """Members of a group left no record while the others reached a collective: who is behind is
    not known (a rank with no file did not "never issue" anything)."""
    if not ev.silent or ev.finished:
        return None
    f = ev.silent[0]
    what = last_open(ev, f.present)
    return Verdict(Kind.UNDECIDED, f"{who(f.present)} reached seq {f.seq} of process group {f.pg}"
                   + (f" (last: {what})" if what else "") + f"; {who(f.missing)} left no "
                   f"{align.SOURCE_NAMES.get(f.source, f.source)} record, so whether "
                   f"{'it' if len(f.missing) == 1 else 'they'} issued it is unknown: collect "
                   f"{'its' if len(f.missing) == 1 else 'their'} dumps and logs",
                   [], lines(ev.timeouts, 3))


def timed_out(ev: Evidence) -> Verdict | None:
    """Watchdog timeouts with nothing to show which rank is missing: say what timed out (the op, its
    SeqNum and process group, the timeout, each rank's last enqueued and completed work), which ranks
    were seen timing out and which of the world left no record."""
    to = ev.timeouts.sort("line")
    if not to.height:
        return None
    r = to["rank"].drop_nulls().unique().sort().to_list()
    wd = to.filter(pl.col("kind") == EventKind.WATCHDOG_TIMEOUT)
    what = ""
    if wd.height:
        w = wd.row(0, named=True)
        what = (f" in {(w['op'] or '?').upper()}" + (f" {seq_said(w['seq'])}" if w["seq"] is not None else "")
                + _group_said(to, w) + rules_apart.size_text(w)
                + (f" after {w['timeout_ms'] / 1000:g} s" if w["timeout_ms"] else ""))
        if w["seq"] is None and w["where"] == "HCCL" and w["message"]:  # (HCCL's code says why it gave up)
            what += f": {clip(w['message'], 200)}"
        if w["seq"] == 1:
            what += (" (the group's first collective: the ranks never completed one together, so a rank "
                     "that never reached it or the connections it sets up are at fault)")
        firsts, others = _elsewhere(wd, w)
        if others:
            what = f": {who(firsts)}{what}; {others}"
    last = to.filter(pl.col("last_enqueued").is_not_null()).unique("rank", maintain_order=True)
    if not wd.height and not last.height:  # no collective named: the timeout's own words
        what = f": {msg(to, 0, 160)}"
    if last.height:  # c10d's words, ranks that say the same grouped
        same = last.group_by("seq", "last_enqueued", "last_completed", maintain_order=True).agg(
            pl.col("rank").drop_nulls().sort())
        what += "; " + ", ".join(
            (who(x["rank"]) if x["rank"] else "a rank") + " "
            + (f"at NCCL work: {x['seq']}, " if x["seq"] is not None else "")
            + f"last enqueued NCCL work: {x['last_enqueued']}, "
            f"last completed NCCL work: {x['last_completed']}"
            for x in same.head(4).iter_rows(named=True))
        if last.filter(pl.col("last_completed") < pl.col("last_enqueued")).height == last.height:
            what += " (each enqueued a collective it never completed: all wait in one)"
    world, absent = ev.coverage.world_size, ev.coverage.missing
    silent = f"; {who(absent)} of the world of {world} left no record" if absent else ""
    outside = rules_apart.one_rank_absent(ev)  # (every rank of the group but one waits in it)
    then = ("; collect that rank's log and stack" if outside else
            "; no record shows which rank is missing: collect every rank's Flight Recorder dump and log")
    return Verdict(Kind.UNDECIDED, f"{who(r) if r else 'a rank'} timed out{what}{silent}"
                   + dump_signal.source_said(ev) + (f"; {outside}" if outside else "") + ended_first.ends_said(ev) + f"{then} ({COLLECT})", r, lines(to))


def _group_said(to: pl.DataFrame, w: dict) -> str:
    """`` on process group 2 (mesh_sp)``: the timeout line's group, else that of its rank's status line of the same
    SeqNum (torch >= 2.3 names the group on ``[PG ID 2 PG GUID 2(mesh_sp) Rank 1] Timeout at NCCL work: 262, ...``
    under a watchdog line of ``[Rank 1]`` alone), ``""`` where neither names one."""
    pg, desc = w["pg"], w.get("pg_desc")
    if pg is None and "pg" in to.columns:
        st = to.filter((pl.col("kind") == EventKind.WATCHDOG_STATUS) & pl.col("pg").is_not_null()
                       & pl.col("rank").eq_missing(w["rank"]) & pl.col("seq").eq_missing(w["seq"]))
        if st.height:
            pg, desc = st["pg"][0], st["pg_desc"][0] if "pg_desc" in st.columns else None
    if pg is None:  # (torch 2.7's `[PG ID 1 PG GUID 1 Rank 2]  failure detected by watchdog at work sequence id`)
        said = (to.filter(pl.col("rank").eq_missing(w["rank"]))["message"].str.extract_groups(PG_TAG)
                .struct.unnest().filter(pl.col("pg").is_not_null()))
        if said.height:
            pg, desc = said["pg"][0], said["desc"][0] or said["desc2"][0]
    if pg is None:
        return ""
    return f" on process group {pg}" + (f" ({desc})" if desc and str(desc) != str(pg) else "")


def _elsewhere(wd: pl.DataFrame, w: dict) -> tuple[list[int], str]:
    """The ranks whose watchdog names the first line's collective, and the others' (``rank 0 in BROADCAST
    SeqNum 4``), grouped: where each rank waits, so that the ranks said to time out in the first one are
    only those whose line names it. Where one group's SeqNums differ, the ranks at the lower one are behind:
    their oldest unfinished collective is one the others had completed."""
    named = wd.filter(pl.col("rank").is_not_null()).unique(["rank", "op", "seq", "pg"])
    if w["rank"] is None or named["rank"].n_unique() < named.height:
        # (a rank whose lines name several SeqNums: several groups whose lines do not name theirs, torch <
        # 2.2's `[Rank 0]` alone, or one rank's repeated timeouts: where it waits now, its lines do not say)
        return [], ""
    first = (w["op"], w["seq"], w["pg"])
    other = named.filter(~(pl.col("op").eq_missing(first[0]) & pl.col("seq").eq_missing(first[1])
                           & pl.col("pg").eq_missing(first[2])))
    if not other.height:
        return [], ""
    at = other.group_by("op", "seq", "pg", maintain_order=True).agg(pl.col("rank").unique().sort())
    text = "; ".join(f"{who(x['rank'])} in {(x['op'] or '?').upper()}"
                     + (f" {seq_said(x['seq'])}" if x["seq"] is not None else "")
                     for x in at.head(3).iter_rows(named=True))
    same = named.filter(pl.col("pg").eq_missing(w["pg"]) & pl.col("seq").is_not_null()
                        & ~rules_apart.in_unnamed_group())
    low = same.filter(pl.col("seq") == same["seq"].min())["rank"].unique().sort().to_list() \
        if same["seq"].n_unique() > 1 else []
    behind = (f" ({who(low)} behind: {'its' if len(low) == 1 else 'their'} oldest unfinished collective is one "
              "the others completed)" if low else "")
    return sorted(set(named["rank"].to_list()) - set(other["rank"].to_list())), f"{text}{behind}"


def watchdog_stuck(ev: Evidence) -> Verdict | None:
    """c10d's heartbeat monitor found the watchdog thread stuck: a CUDA or NCCL call never returned.
    Which call, and why, only that rank's native stack says."""
    hb = (ev.store.events.filter(pl.col("message").str.contains(HEARTBEAT))
          .unique(["file", "line"], maintain_order=True).sort("file", "line"))
    if not hb.height:
        return None
    r = hb["rank"].drop_nulls().unique().sort().to_list()
    secs = hb["message"].str.extract(HEARTBEAT, 1).cast(pl.Int64, strict=False).drop_nulls()
    last = last_open(ev, r) if r else ""
    return Verdict(Kind.UNDECIDED, f"the watchdog of {who(r) if r else 'a rank'} got stuck"
                   + (f" for {secs.max()} s" if secs.len() else "") + " (c10d's heartbeat monitor): a CUDA "
                   "or NCCL call it made never returned (a kernel that never finished, a peer gone, a driver "
                   "fault), so the process was taken down" + (f"; last collective: {last}" if last else "")
                   + "; which call only that rank's native stack says: py-spy dump --native --pid PID before "
                   "the monitor fires (TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC longer), and every rank's Flight "
                   "Recorder dump",
                   r, lines(hb, 3) + lines(ev.timeouts, 2))


def joined_then_nothing(ev: Evidence) -> Verdict | None:
    """Ranks said they were joining the process group (Lightning's GLOBAL_RANK line, fairseq's
    `distributed init`) and nothing after is logged: no NCCL init, collective, step, end or failure.
    Who joined and who of the world never did is the situation; whether time passed, the excerpt does
    not say (a sign of it decides an init stall)."""
    j = ev.kinds(EventKind.RANK_JOINED).filter(pl.col("rank").is_not_null()).sort("file", "line")
    if (not j.height or ev.steps.height or ev.failure_signs or ev.store.comms.height or ev.clean_end
            or align.collect(ev.store.collectives.lazy().select(pl.len())).item()):
        return None
    joined = sorted(set(j["rank"].to_list()))
    world = j["numel"].max() or ev.coverage.world_size
    never = sorted(set(range(world)) - set(joined)) if world else []
    were = "it was" if len(joined) == 1 else "they were"
    situation = (f"{who(joined)} said {were} joining the process group (`{clip(j['message'][0], 80)}`)"
                 + (f" and {who(never)} of the world of {world} never did" if never else ""))
    waits = f"waits for {who(never)}" if never else "never returned"
    if ev.stalls.height or ev.stacks.height:
        return Verdict(Kind.INIT_STALL, f"{situation}; nothing after it but a stall: init_process_group "
                       f"{waits}", never or joined, lines(j, 4) + lines(ev.stalls, 2))
    # (every rank of the world that did not say it joined left no record at all: the rendezvous waits for
    # processes that never started or never reached it; a rank that logged and never said it joined is
    # a log of another shape, its join cut or said in words no parser decodes)
    if never and not set(ev.store.ranks["rank"].drop_nulls().to_list()) - set(joined):
        return Verdict(Kind.INIT_STALL, f"{situation} and left no record; nothing after it is logged (no "
                       f"NCCL init, collective, step, end or error): init_process_group {waits}: "
                       f"{'it was' if len(never) == 1 else 'they were'} not started, started with another "
                       "world size or MASTER_ADDR/PORT, or cannot reach the store (a job script that starts "
                       "one process where it should start the world: srun, torchrun's --nnodes/--nproc)",
                       never, lines(j, 4))
    return Verdict(Kind.UNDECIDED, f"{situation}; nothing after it is logged (no NCCL init, collective, "
                   f"step, end or error): if the job stopped here, init_process_group {waits} (an init "
                   "stall), but the excerpt does not show time passing: a stack dump of every rank (py-spy "
                   "dump --pid) and NCCL_DEBUG=INFO say where each rank is", never, lines(j, 4))


#: a trainer's epoch figure on its step lines: the HF Trainer's log dict (``{'loss': 0.0117, ..., 'epoch':
#: 0.99}``, transformers trainer.py ``Trainer.log``: ``logs["epoch"] = self.state.epoch``, the global step over
#: the steps of an epoch, rounded to 2 places), and the ``epoch=0.99`` / ``epoch: 0.99`` of other loggers
EPOCH_FIGURE = r"""(?i)['"]?\bepoch['"]?\s*[:=]\s*(\d+(?:\.\d+)?)"""
#: how near the next whole epoch the last figure is (a log every N steps prints 0.99, 0.98 before the end)
EPOCH_NEAR = 0.05


def stopped_at_epoch_end(ev: Evidence) -> Verdict | None:
    """UNDECIDED, never HEALTHY, where the excerpt's last progress line is the last step of an epoch: the
    bar's step n of its total T is k/E of the run (n x E = k x T, E the epochs the total spans) and the
    trainer's last epoch figure is just under k. The end of an epoch runs work the steps do not (an
    evaluation, a checkpoint save, the data loader's re-creation, a collective only some ranks issue), and a
    hang there leaves exactly these lines: steady steps, then nothing (deepspeedai/deepspeed#4367). Whether
    the run went on or stopped there only a later line or a stack of every rank says."""
    if (ev.trouble.height or ev.failure_signs or ev.stalls.height or ev.clean_end or ev.finished
            or ev.stacks.height):
        return None
    st = ev.steps.filter(pl.col("max_steps").is_not_null()).sort("file", "line")
    if not st.height:
        return None
    last = st.row(-1, named=True)
    n, total = last["step"], last["max_steps"]
    # (a log dict with no step number is a step line too: its epoch figure counts)
    figs = (ev.kinds(EventKind.STEP, EventKind.PROGRESS)
            .filter((pl.col("file") == last["file"]) & (pl.col("line") <= last["line"]))
            .sort("line").select(pl.col("message").str.extract(EPOCH_FIGURE, 1).cast(pl.Float64, strict=False)
                                 .alias("e"), "file", "line", "message").drop_nulls("e"))
    if not figs.height or not n or not total or n >= total:
        return None
    e = figs["e"][-1]
    k = math.ceil(e - 1e-9) if e > 0 else 0
    if k < 1 or k - e > EPOCH_NEAR or (k * total) % n:
        return None
    epochs = k * total // n
    if epochs <= k:
        return None
    return Verdict(Kind.UNDECIDED, f"the progress stops at the end of epoch {k} of {epochs}: the last line is "
                   f"step {n} of {total} ({n} x {epochs} = {k} x {total}) and the trainer's last epoch figure "
                   f"is {e:g}, and no line comes after it: the end of an epoch runs what the steps do not (an "
                   "evaluation, a checkpoint save, the data loader's re-creation, a collective only some ranks "
                   "issue), so a run that hangs there leaves exactly these lines; whether it went on the "
                   "excerpt does not show: if it stopped, a py-spy dump of every rank there says which is "
                   "outside the collective the others wait in (the steps before it were steady: "
                   f"{ev.coverage.describe()})", [],
                   lines(figs.tail(1), 1) + lines(st.tail(1), 1))
