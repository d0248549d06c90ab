"""One verdict on what kind of stall a run is in, fused from every source, with its evidence.

The order of the checks is the order of causation: a crashed rank explains the timeouts of the
ranks that waited for it; a communicator that never finished init explains everything after;
a transport error explains a hang in the collective it broke; a missing collective is a
deadlock; collectives that still advance are slow progress, not a hang.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from enum import Enum

import polars as pl

from tracekit import align
from tracekit.align import Finding, Match, fmt_ranks
from tracekit.store import Store

NETWORK_SETTINGS = r"^(?:NCCL_SOCKET_IFNAME|NCCL_SOCKET_FAMILY|GLOO_SOCKET_IFNAME|NCCL_IB_\w+|NCCL_NET\w*|NCCL_P2P_DISABLE|NCCL_SHM_DISABLE)="
C10D_FRAME = r"distributed_c10d|deepspeed/comm|torch/distributed/(?:_functional|nn|fsdp|algorithms)|c10d"


class Kind(Enum):
    DEADLOCK = "a rank never issues the collective the others wait in"
    MISMATCH = "ranks issued different collectives at the same point"
    INIT_STALL = "a communicator started init on some ranks and never completed it"
    TRANSPORT_ERROR = "the network transport reported errors"
    CRASHED_RANK = "a rank exited or was killed; the others wait for it"
    SLOW_PROGRESS = "not hung: collectives still advance, slowly"
    STRAGGLER = "one rank consistently arrives last"
    HEALTHY = "no sign of a stall"
    UNDECIDED = "the evidence does not decide it"


@dataclass
class Verdict:
    kind: Kind
    summary: str
    ranks: list[int] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "kind": self.kind.name.lower().replace("_", "-"), "meaning": self.kind.value, "summary": self.summary,
            "ranks": self.ranks, "evidence": self.evidence, "notes": self.notes,
            "findings": [f.to_dict() for f in self.findings],
        }


def _ev(df: pl.DataFrame, n: int = 6) -> list[str]:
    return [f"{r['file']}:{r['line']}: {(r['message'] or '').strip()[:160]}" for r in df.head(n).iter_rows(named=True)]


# a frame of the standard library: py-spy's `threading.py:327`, faulthandler's `/usr/lib/python3.11/...`
STDLIB_FRAME = (r"\((?:" + "|".join(sorted(sys.stdlib_module_names)) + r")(?:\.py)?[/:]"
                r"|/lib/python3\.\d+/(?:[^/]+/)*[^/]+\.py:")
SITE = r"site-packages|dist-packages"


def _stacks(store: Store) -> pl.DataFrame:
    """The main thread's innermost frame of the program or a library per rank (or per pid where no
    rank is known): a rank waiting in wandb.init reads as wandb, not as threading.Condition.wait."""
    st = store.events.filter((pl.col("kind") == "stack") & pl.col("thread").str.starts_with("MainThread"))
    own = pl.col("frames").str.split(" <- ").list.eval(pl.element().filter(
        ~pl.element().str.contains(STDLIB_FRAME) | pl.element().str.contains(SITE))).list.first()
    st = st.with_columns(pl.coalesce(own, "where").alias("where"))
    return st.with_columns(pl.col("where").str.contains(C10D_FRAME).fill_null(False).alias("in_c10d"),
                           pl.col("thread").str.extract(r"thread (\S+)", 1).alias("tid"))


def decide(store: Store) -> Verdict:
    ev = store.events
    findings = []
    for source in ("fr", "nccl", "kineto"):
        findings += align.find(store, source)
    confirmed = [f for f in findings if f.op]
    mismatches = [f for f in confirmed if f.kind in (Match.OP_TYPE, Match.DTYPE, Match.SIZE)]
    missing = [f for f in confirmed if f.kind == Match.MISSING]
    absent = [f for f in findings if f.kind == Match.RANK_ABSENT]
    stacks = _stacks(store)
    notes = [f"also lagging, from pg_status only (no entry in any buffer): {f.message}"
             for f in findings if not f.op][:5]

    consequence = r"(?i)time[ d]*out|watchdog|ChildFailedError|SignalException|closed by peer|Connection reset"
    crash = ev.filter((pl.col("kind") == "crash")
                      | ((pl.col("kind") == "signal") & ~pl.col("message").str.contains("SIGTERM|SIGINT|SIGHUP"))
                      | ((pl.col("kind") == "exception") & ~pl.col("message").str.contains(consequence)))
    exits = ev.filter((pl.col("kind") == "rank_exit") & (pl.col("exit_code") != 0))
    timeouts = ev.filter(pl.col("kind").is_in(["watchdog_timeout", "watchdog_status"])
                         | ((pl.col("kind").is_in(["exception", "transport_error"])) & pl.col("message").str.contains(r"(?i)timed? ?out")))
    # "closed by peer" follows a peer's exit: evidence of the exit, not a broken network
    transport = ev.filter((pl.col("kind").is_in(["transport_error", "connect_retry", "nccl_warn"]))
                          & ~pl.col("message").str.contains(consequence))
    init = store.comms.filter(pl.col("state").is_in(["init_start", "init_complete"]))
    pending = (init.group_by("host", "pid", "comm").agg(
        (pl.col("state") == "init_complete").any().alias("done"), pl.col("rank").first(), pl.col("file").first(),
        pl.col("line").first(), pl.col("nranks").first())
        .filter(~pl.col("done")))

    # 1. a mismatch of op, dtype or size at one sequence number (it makes ranks crash, too)
    if mismatches:
        f = mismatches[0]
        return Verdict(Kind.MISMATCH, f.message, f.missing, f.evidence, findings, notes)
    # 1b. a mismatch the runtime itself caught (TORCH_DISTRIBUTED_DEBUG=DETAIL, gloo's size check)
    reported = ev.filter(pl.col("kind").is_in(["collective_mismatch", "gloo_size_mismatch"]))
    if reported.height:
        r = reported["rank"].drop_nulls().unique().sort().to_list()
        msg = (reported["message"][0] or "").strip()
        return Verdict(Kind.MISMATCH, f"rank {fmt_ranks(r) or '?'}: the ranks' collectives no longer pair up ("
                       f"{msg[:160]}); the first collective where their sequences differ is where they diverged",
                       r, _ev(reported) + _ev(crash, 2), findings, notes)
    # 2. a crashed rank: an error that is not itself a timeout, on a rank others then wait for
    if crash.height:
        first = crash.sort("line").head(1)
        r = first["rank"].drop_nulls().to_list()
        warns = transport.filter(pl.col("kind") == "nccl_warn")
        if warns.height and (first["message"][0] or "").find("NCCL") >= 0:
            # the crash is NCCL giving up: its own WARN line says why (no interface, refused connect, ...)
            w = warns.sort("line").head(1)
            net = ev.filter((pl.col("kind") == "setting") & pl.col("message").str.contains(NETWORK_SETTINGS))
            said = "; ".join(sorted(set(net["message"].to_list())))
            return Verdict(Kind.TRANSPORT_ERROR, f"NCCL failed on rank {fmt_ranks(w['rank'].drop_nulls().to_list()) or '?'}: "
                           f"{(w['message'][0] or '').strip()[:160]}" + (f" (launched with {said})" if said else "")
                           + f"; rank {fmt_ranks(r) or '?'} then failed: {(first['message'][0] or '').strip()[:120]}",
                           sorted(set(warns["rank"].drop_nulls().to_list()) | set(r)),
                           _ev(warns, 3) + _ev(net, 3) + _ev(crash, 2), findings, notes)
        return Verdict(Kind.CRASHED_RANK, f"rank {fmt_ranks(r) or '?'} failed first: {(first['message'][0] or '').strip()[:200]}",
                       r, _ev(crash) + _ev(exits, 3), findings, notes)
    # 3. a communicator whose init never completed, or connections that keep retrying
    if pending.height or (transport.filter(pl.col("kind") == "connect_retry").height and not store.collectives.height):
        r = pending["rank"].drop_nulls().unique().sort().to_list()
        # Ranks of the run that never started any communicator: the peers the waiting ones wait for.
        started = set(init["rank"].drop_nulls().to_list())
        never = sorted(set(store.ranks["rank"].drop_nulls().to_list()) - started) if pending.height else []
        where = stacks.filter(pl.col("rank").is_in(never)).unique(["rank", "where"], maintain_order=True)
        summary = (f"{pending.height} communicator init(s) never completed" + (f" on ranks {fmt_ranks(r)}" if r else "")
                   + (f"; ranks {fmt_ranks(never)} never started NCCL init (waited for in the bootstrap)" if never else "")
                   + "".join(f"; rank {w['rank']} is in {w['where']}" for w in where.head(4).iter_rows(named=True)))
        return Verdict(Kind.INIT_STALL, summary, never or r,
                       _ev(pending.with_columns(pl.format("comm {} nranks {} - Init START without Init COMPLETE", "comm", "nranks").alias("message")))
                       + _ev(where.with_columns(pl.format("rank {} main thread in {}", "rank", "where").alias("message")), 2)
                       + _ev(transport, 4), findings, notes)
    # 4. transport errors
    if transport.filter(pl.col("kind") != "nccl_warn").height or (transport.height and not missing):
        r = transport["rank"].drop_nulls().unique().sort().to_list()
        net = ev.filter((pl.col("kind") == "setting") & pl.col("message").str.contains(NETWORK_SETTINGS))
        said = "; ".join(sorted(set(net["message"].to_list())))
        return Verdict(Kind.TRANSPORT_ERROR, f"{transport.height} transport error line(s), first: "
                       f"{(transport.sort('line')['message'][0] or '').strip()[:200]}"
                       + (f" (launched with {said})" if said else ""), r, _ev(transport) + _ev(net, 3), findings, notes)
    # 5. a rank that never issued the collective the others wait in -- unless the dumps were taken
    # while the run moved: a run that finished, or whose every rank advanced between its last two
    # dumps, lags only by the moments its ranks were dumped
    motion = _motion(store)
    finished = _finished(store)
    moving = motion.height > 0 and motion.filter(pl.col("prev").is_not_null() & (pl.col("last") > pl.col("prev"))).height == motion.height
    if (missing or absent) and (finished or moving):
        slow = _progress(store, motion, finished)
        note = ("the ranks' frontiers differ only by when each was dumped: "
                + ("every launcher exited with code 0" if finished else "every rank advanced between its last two dumps"))
        if slow is not None:
            slow.notes.append(note)
            slow.findings = findings
            return slow
        notes.append(note)
        missing, absent = [], []
    if missing or absent:
        f = (missing or absent)[0]
        where = stacks.filter(pl.col("rank").is_in(f.missing))
        ev_lines = f.evidence + _ev(where.with_columns(pl.format("rank {} main thread in {}", "rank", "where").alias("message")), 4)
        summary = f.message
        if where.height:
            seen = where.unique(["rank", "where"], maintain_order=True).head(4)
            summary += "; " + "; ".join(f"rank {r['rank']} is in {r['where']}" for r in seen.iter_rows(named=True))
        return Verdict(Kind.DEADLOCK, summary, f.missing, ev_lines + _ev(timeouts, 3), findings, notes)
    # 6. stacks alone: a rank outside the collective the others sit in
    if stacks.height >= 2 and stacks["in_c10d"].any() and not stacks["in_c10d"].all():
        out = stacks.filter(~pl.col("in_c10d"))
        who = [f"rank {r['rank']}" if r["rank"] is not None else f"pid {r['pid'] or r['tid']}" for r in out.iter_rows(named=True)]
        if len(who) > 4:
            who = who[:4] + [f"{len(who) - 4} more"]
        return Verdict(Kind.DEADLOCK,
                       f"{stacks.filter(pl.col('in_c10d')).height} process(es) wait in a collective while "
                       f"{', '.join(who)} {'is' if len(who) == 1 else 'are'} elsewhere: {out['where'][0]}",
                       out["rank"].drop_nulls().to_list(),
                       _ev(out.with_columns(pl.format("{} in {}", "thread", "where").alias("message")), 6), findings, notes)
    if timeouts.height:
        r = timeouts["rank"].drop_nulls().unique().sort().to_list()
        return Verdict(Kind.UNDECIDED, f"ranks {fmt_ranks(r)} timed out in a collective but no record shows who "
                       "is missing: collect Flight Recorder dumps (tracekit run) from every rank", r, _ev(timeouts), findings, notes)
    cancelled = ev.filter(pl.col("kind") == "job_cancelled")
    if cancelled.height:
        notes.append("the scheduler ended the job (" + (cancelled["message"][0] or "").strip()[:120] + "), not a fault of the run")
    progress = _progress(store)
    if progress is not None:
        return progress
    late = _straggler(store)
    if late is not None:
        late.findings, late.notes = findings, notes
        return late
    if store.collectives.height or ev.filter(pl.col("kind") == "step").height:
        return Verdict(Kind.HEALTHY, "every rank reached the same collectives and no error was logged", [], [], findings, notes)
    return Verdict(Kind.UNDECIDED, "no collectives, stacks or errors found: run under `tracekit run` to collect "
                   "NCCL INFO, Flight Recorder dumps and stack dumps", [], [], findings, notes)


def _straggler(store: Store, min_collectives: int = 20, share: float = 0.6) -> Verdict | None:
    """One rank enters most collectives last (clock offsets per host removed), by a margin that
    matters: a straggler. Needs enqueue times of every rank (Flight Recorder, Kineto)."""
    for source in ("fr", "kineto"):
        c = store.collectives.filter((pl.col("source") == source) & pl.col("start_ns").is_not_null()
                                     & pl.col("rank").is_not_null() & pl.col("seq").is_not_null())
        if c.height:
            break
    else:
        return None
    c = c.unique(["rank", "pg", "seq"])
    off = align.clock_offsets(c)
    c = c.join(off, on="host", how="left").with_columns((pl.col("start_ns") - pl.col("offset_ns").fill_null(0)).alias("t"))
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
    if top["times"] < need * last.height or top["lag_ms"] < 1.0:
        return None
    return Verdict(Kind.STRAGGLER, f"rank {top['late']} enters {top['times']} of {last.height} collectives last, "
                   f"a median {top['lag_ms']:.1f} ms after the others: the others wait for it every time",
                   [top["late"]], [f"{source}: rank {top['late']} last in {top['times']}/{last.height} collectives "
                                   f"(median lag {top['lag_ms']:.1f} ms)"])


def _motion(store: Store) -> pl.DataFrame:
    """Per rank with several FR dumps: its frontier in the first, the second-to-last and the last
    dump (ordered by the newest enqueue each holds), the seconds between, the bytes in between."""
    fr = store.collectives.filter((pl.col("source") == "fr") & pl.col("rank").is_not_null())
    if not fr.height:
        return pl.DataFrame()
    per = fr.group_by("rank", "file").agg(pl.col("seq").max(), pl.col("start_ns").max().alias("t")).sort("rank", "t")
    m = per.group_by("rank").agg(
        pl.len().alias("dumps"), pl.col("seq").first().alias("first"), pl.col("seq").get(-2, null_on_oob=True).alias("prev"),
        pl.col("seq").last().alias("last"), ((pl.col("t").last() - pl.col("t").first()) / 1e9).alias("dt"),
    ).filter(pl.col("dumps") > 1)
    if not m.height:
        return m
    moved = (fr.join(m.select("rank", "first", "last"), on="rank").filter((pl.col("seq") > pl.col("first")) & (pl.col("seq") <= pl.col("last")))
             .unique(["rank", "seq"]).group_by("rank").agg(pl.col("bytes").sum().alias("bytes")))
    return m.join(moved, on="rank", how="left").with_columns(pl.col("bytes").fill_null(0))


def _finished(store: Store) -> bool:
    """Every ``tracekit run`` launcher logged that its job exited with code 0."""
    ev = store.events
    launchers = ev.filter(pl.col("kind") == "launch")["file"].n_unique()
    ends = ev.filter((pl.col("kind") == "run_note") & pl.col("message").str.starts_with("exit code"))["message"]
    return launchers > 0 and ends.len() >= launchers and (ends == "exit code 0").all()


def _progress(store: Store, motion: pl.DataFrame | None = None, finished: bool = False) -> Verdict | None:
    """Several FR dumps of one rank, taken at different times, whose frontier moved: slow, not hung."""
    m = _motion(store) if motion is None else motion
    if not m.height:
        return None
    moved = m.filter(pl.col("last") > pl.col("first")).with_columns((pl.col("last") - pl.col("first")).alias("dseq"))
    if not moved.height:
        return None
    rate = (moved["dseq"] / moved["dt"].clip(lower_bound=1e-9)).median()
    per_coll = (moved["bytes"] / moved["dseq"]).median()
    steps = store.events.filter(pl.col("kind") == "step")
    took = steps["message"].str.extract(r"'elapsed_s': ([\d.]+)", 1).cast(pl.Float64, strict=False).drop_nulls()
    step_s = f"; steps took {took.median():.1f} s each" if took.len() else ""
    gbps = (moved["bytes"] / moved["dt"].clip(lower_bound=1e-9)).median() / 1e9
    return Verdict(Kind.SLOW_PROGRESS, f"sequence numbers advanced between dumps on {moved.height} rank(s): about "
                   f"{rate:.2f} collectives/s, {per_coll / 2**20:.1f} MB per collective, {gbps:.2f} GB/s through each rank{step_s}; "
                   f"the run is slow, not hung" + (" (and it finished)" if finished else ""), moved["rank"].sort().to_list(),
                   [f"rank {r['rank']}: seq {r['first']} -> {r['last']} over {r['dt']:.1f}s across {r['dumps']} dumps"
                    for r in moved.sort("rank").iter_rows(named=True)][:6])
