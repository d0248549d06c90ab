"""Where each rank is (the library's answer; the plots and the report only render it): its
collectives on one clock, the process groups by what they are, and each rank's ``RankSituation``
(last collective, state, since when, main thread, last step).

Whether a rank behind its group's frontier is stuck depends on the verdict: in a hang it never
issued the next collective; in a run that still moved (slow progress, a finished run) its last
dump was only taken earlier, and nothing here calls it stuck.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit import align, ignored_exceptions, last_run, sources, user_stop
from tracekit.evidence import Evidence, clip, own_frame
# (the facts in view, each verdict's summary says them: read from here by verdict.decide and the tests)
from tracekit.facts_in_view import ended_by, in_view, seq_said, signal_of  # noqa: F401
from tracekit.outcome import FAILED, EventKind, RankSituation, Situation
from tracekit.store import Store
from tracekit.wording import fmt_ranks, who



def is_hang(verdict) -> bool:
    """Verdicts in which a rank behind its group's frontier is stuck there."""
    return verdict is not None and verdict.kind in FAILED


def timed(store: Store) -> tuple[pl.DataFrame, str]:
    """``sources.timed``: the best timed source's collectives, ``t`` and ``t_end`` on one clock."""
    return sources.timed(store.collectives)


def main_group(coll: pl.DataFrame, verdict=None) -> str | None:
    """The verdict's group where it names one, else the group with the most collectives."""
    for f in (verdict.findings if verdict is not None else []):
        if f.op and f.pg in set(coll["pg"].unique().to_list()):
            return f.pg
    if not coll.height:
        return None
    return coll.group_by("pg").len().sort(["len", "pg"], descending=[True, False])["pg"][0]


def group_labels(store: Store) -> dict[str, str]:
    """Each process group or NCCL communicator by what it is: ``default_pg (pg 0)``, ``NCCL
    communicator of all 4 ranks``, ``NCCL communicator of ranks 0,2 (split)``; never a bare hash."""
    c = store.collectives.filter(pl.col("pg").is_not_null())
    world = store.ranks["world_size"].drop_nulls().max() if store.ranks.height else None
    out = {}
    for pg, desc, ranks, nranks in c.group_by("pg").agg(
            pl.col("pg_desc").drop_nulls().first(), pl.col("rank").drop_nulls().unique().sort(),
            pl.col("nranks").drop_nulls().max()).iter_rows():
        if desc:
            out[pg] = f"{desc} (pg {pg})"
            continue
        n = nranks or len(ranks)
        whole = world is not None and n == world
        if re.fullmatch(r"0x[0-9a-f]+", pg or ""):
            split = store.comms.filter((pl.col("comm_id") == pg) & pl.col("parent").is_not_null()).height > 0
            who = f"all {n} ranks" if whole else f"ranks {fmt_ranks(ranks)}" if ranks else f"{n} ranks"
            out[pg] = f"NCCL communicator of {who}" + (" (split)" if split else "")
        else:
            out[pg] = f"pg {pg}" + ("" if whole or not ranks else f" (ranks {fmt_ranks(ranks)})")
    return out


def main_threads(store: Store) -> dict[int, str]:
    """Per rank, where its main thread is in its last stack dump: the innermost frame of the
    program or a library (a rank waiting in wandb reads as wandb, not as threading.Condition.wait)."""
    st = store.events.filter((pl.col("kind") == EventKind.STACK) & pl.col("rank").is_not_null()
                             & pl.col("thread").str.contains("MainThread"))
    if not st.height:
        return {}
    st = st.with_columns(own_frame().alias("where"))
    return dict(st.sort("file", "line").group_by("rank").agg(pl.col("where").last()).iter_rows())


def _fr_status(store: Store) -> pl.DataFrame:
    """Per (rank, pg): last enqueued and last completed sequence number of the rank's latest dump."""
    g = getattr(store, "groups", None)
    if g is None or not g.height:
        return pl.DataFrame(schema={"rank": pl.Int64, "pg": pl.Utf8, "enq": pl.Int64, "done": pl.Int64})
    return (g.filter(pl.col("rank").is_not_null() & pl.col("last_enqueued").is_not_null())
            .group_by("rank", "pg").agg(pl.col("last_enqueued").max().alias("enq"),
                                        pl.col("last_completed").max().alias("done")))


def situation(store: Store, verdict=None) -> Situation:
    """Each rank's situation on the main group: its last collective (op, seq, size, the source that
    says so, when), its state there, where its main thread is, its last step, and whether the
    verdict names it; and the world's ranks that left no record."""
    coll = store.collectives.filter(pl.col("rank").is_not_null() & pl.col("seq").is_not_null()
                                    & ~pl.col("op").is_in(["send", "recv"]))
    tm, _ = timed(store)
    best, source = sources.best(coll, sources.DETAIL)
    coll = best if source else coll
    pg = main_group(coll, verdict)
    labels = group_labels(store)
    named = set(verdict.ranks) if verdict is not None else set()
    hang = is_hang(verdict)
    where = main_threads(store)
    ranks = sorted(set(store.ranks["rank"].drop_nulls().to_list()) | set(coll["rank"].to_list()) | set(where))
    in_pg = pl.lit(False) if pg is None else pl.col("pg") == pg  # no main group: no row is in it
    last = (coll.filter(in_pg).sort("seq").group_by("rank")
            .agg(pl.col("seq").last(), pl.col("op").cast(pl.Utf8).last(),
                 pl.col("state").cast(pl.Utf8).last(), pl.col("bytes").last(),
                 pl.col("source").cast(pl.Utf8).last()))
    last = {r["rank"]: r for r in last.iter_rows(named=True)}
    times = ({} if not tm.height
             else dict(tm.filter(in_pg).group_by("rank").agg(pl.col("t").max()).iter_rows()))
    t0 = tm["t"].min() if tm.height else None
    status = {(r, p): (e, d) for r, p, e, d in _fr_status(store).iter_rows()}
    steps = store.events.filter((pl.col("kind") == EventKind.STEP) & pl.col("rank").is_not_null()
                                & pl.col("step").is_not_null())
    steps = dict(steps.group_by("rank").agg(pl.col("step").max()).iter_rows())
    top = max((x["seq"] for x in last.values()), default=None)
    out = []
    for r in ranks:
        x = last.get(r)
        enq, done = status.get((r, pg), (None, None))
        if x is None:
            state = "no collective recorded on this group"
        elif top is not None and x["seq"] < top:
            state = (f"behind: never issued #{x['seq'] + 1}" if hang
                     else f"its last record ends at #{x['seq']} (taken earlier; the run moved on)")
        elif (enq is not None and done is not None and done < enq) or x["state"] in ("scheduled", "started"):
            state = f"in {x['op']} #{x['seq']}, not completed" + (": waits for the others" if hang else "")
        elif x["state"] == "completed" or (done is not None and enq is not None and done >= enq):
            state = f"completed #{x['seq']}" + ("; not in a collective since" if hang else "")
        else:
            state = f"issued {x['op']} #{x['seq']}"
        out.append(RankSituation(
            rank=r, state=state, pg=labels.get(pg, pg) if x else None, op=x["op"] if x else None,
            seq=x["seq"] if x else None, size=x["bytes"] if x else None, source=x["source"] if x else None,
            since_s=(times[r] - t0) / 1e9 if r in times and t0 is not None else None,
            where=where.get(r), step=steps.get(r), named=r in named))
    world = store.ranks["world_size"].drop_nulls().max() if store.ranks.height else None
    not_seen = sorted(set(range(world)) - set(ranks)) if world else []
    return Situation(out, not_seen, pg)


def table(sit: Situation) -> pl.DataFrame:
    """The situation as one row per rank (rank, pg, op, seq, t_s, state, where, named), as the
    report's table and the plots read it."""
    return pl.DataFrame([{"rank": s.rank, "pg": s.pg, "op": s.op, "seq": s.seq, "t_s": s.since_s,
                          "state": s.state, "where": s.where, "named": s.named} for s in sit.ranks],
                        schema={"rank": pl.Int64, "pg": pl.Utf8, "op": pl.Utf8, "seq": pl.Int64,
                                "t_s": pl.Float64, "state": pl.Utf8, "where": pl.Utf8, "named": pl.Boolean})


def waits(store: Store) -> dict[int, tuple[float, str]]:
    """How long a rank is known to have waited in its last collective, from the logs: c10d's
    watchdog (``ran for 25031 milliseconds before timing out``). Seconds and the evidence."""
    ms = pl.col("message").str.extract(r"ran for (\d+) milliseconds", 1).cast(pl.Int64, strict=False)
    wd = store.events.filter((pl.col("kind") == EventKind.WATCHDOG_TIMEOUT)
                             & pl.col("rank").is_not_null()).with_columns(ms.alias("ms"))
    wd = wd.filter(pl.col("ms").is_not_null())
    out = {}
    for r in wd.group_by("rank").agg(pl.col("ms").max(), pl.col("seq").first()).iter_rows(named=True):
        out[r["rank"]] = (r["ms"] / 1000, f"c10d watchdog: seq {r['seq']} ran for {r['ms'] / 1000:.1f} s")
    return out


def stall_note(store: Store) -> str | None:
    """tracekit run's own record of the stall: how long no log grew before it dumped."""
    notes = store.events.filter(pl.col("kind").is_in([EventKind.RUN_NOTE, EventKind.STALL]))["message"]
    notes = notes.drop_nulls()
    secs = notes.str.extract(r"grew for (\d+(?:\.\d+)?)s", 1).cast(pl.Float64, strict=False).drop_nulls()
    return f"no log grew for {secs.max():g} s before the dump (tracekit run)" if secs.len() else None


# --- the situation in one line: what every verdict's summary says -----------------------------

def _frontiers(store: Store, moved: bool = False) -> tuple[dict[int, str], str | None]:
    """Per rank, its last collective on the group with the most ranks, from the best source that
    has any (``all_reduce #29, not completed``); read from a store in memory or on disk alike."""
    c = align.collect(store.collectives.lazy().filter(
        pl.col("rank").is_not_null() & pl.col("seq").is_not_null() & ~pl.col("op").is_in(["send", "recv"]))
        .group_by(pl.col("source").cast(pl.Utf8), "rank", "pg").agg(
            pl.col("seq").max(),
            pl.when(pl.col("op").cast(pl.Utf8) == "other").then(pl.col("op_raw").str.replace(r"^\w+:", ""))
            .otherwise(pl.col("op").cast(pl.Utf8)).sort_by("seq").last().alias("op"),
            pl.col("state").cast(pl.Utf8).sort_by("seq").last()))
    if not c.height:
        return {}, None
    for name in sources.DETAIL:
        sub = c.filter(pl.col("source") == name)
        if sub.height:
            c = sub
            break
    pg = (c.group_by("pg").agg(pl.col("rank").n_unique().alias("n"), pl.col("seq").max().alias("s"))
          .sort(["n", "s", "pg"], descending=[True, True, False])["pg"][0])
    out = {}
    for r in c.filter(pl.col("pg") == pg).iter_rows(named=True):
        open_ = r["state"] in ("scheduled", "started")
        if moved:  # dumps taken on the way of a run that went on: where each was, not where it is
            out[r["rank"]] = f"dumped at {r['op']} #{r['seq']}"
        else:
            out[r["rank"]] = (f"{'in' if open_ else 'last'} {r['op']} #{r['seq']}"
                              + (", not completed" if open_ else ""))
    return out, pg


def _ended(ev: Evidence) -> dict[int, str]:
    """Per rank, how it ended or stopped where the logs say: timed out, exited, killed, raised."""
    out: dict[int, str] = {}
    timed_out = ev.timeouts.filter(pl.col("rank").is_not_null() & pl.col("seq").is_not_null()).sort("line")
    for w in timed_out.iter_rows(named=True):
        out.setdefault(w["rank"], f"timed out in {w['op'].upper() if w['op'] else 'work'} {seq_said(w['seq'])}"
                       + (f" of process group {w['pg']}" if w["pg"] is not None else "")
                       + (f" after {w['timeout_ms'] / 1000:g} s" if w["timeout_ms"] else ""))
    crashes = ev.crashes.join(ignored_exceptions.ignored(ev, ev.crashes), on=["file", "line"], how="anti")
    crashes = user_stop.without_stop(ev, crashes)  # (nor what raised as a user's Ctrl-C unwound)
    for c in crashes.filter(pl.col("rank").is_not_null()).iter_rows(named=True):  # (not one Python ignored)
        # (a rank another rank's line names as failed, c10d's word or NCCL RAS's: said as that word)
        out.setdefault(c["rank"], ("named failed: " if c["where"] in ("c10d named", "nccl ras") else "raised ")
                       + clip(c["message"], 80))
    for x in ev.exits.filter(pl.col("rank").is_not_null()).iter_rows(named=True):
        out.setdefault(x["rank"], ended_by(x["exit_code"]))
    return out


def brief(store: Store, ev: Evidence, n: int = 4) -> str:
    """Where each seen rank is, grouped (``ranks 0-2: in all_reduce #29, not completed; rank 3: last
    all_reduce #28, in next_batch_stuck (job.py:59)``) and its last step; empty where nothing is known
    of any rank."""
    coll, _ = _frontiers(store, ev.finished or ev.moving)
    ended = _ended(ev)
    where = {r: re.sub(r"(?<=\()[^()]*?(?:site|dist)-packages/", "", w)
             for r, w in main_threads(store).items() if w}
    # (stall34: each rank's steps of the file's last run, last_run.last_steps: a job that ran its work again
    # after an end is where its last run stopped, not at the earlier runs' top step)
    last = last_run.last_steps(ev)
    steps = last.filter(pl.col("rank").is_not_null())
    step = dict(steps.group_by("rank").agg(pl.col("step").max()).iter_rows()) if steps.height else {}
    said: dict[str, list[int]] = {}
    for r in sorted(set(coll) | set(ended) | set(where)):
        parts = [p for p in (coll.get(r), ended.get(r), f"in {where[r]}" if r in where else None) if p]
        said.setdefault(", ".join(parts), []).append(r)
    out = [f"{who(r)}: {text}" for text, r in sorted(said.items(), key=lambda x: x[1][0])]
    if len(out) > n:
        out = out[:n] + [f"{len(out) - n} more group(s)"]
    if step:
        top = max(step.values())
        at_top = [r for r, s in step.items() if s == top]
        out.append(f"last step {top}" + ("" if len(step) == 1 else f" ({who(at_top)})"))
        gone = last_run.earlier_ranks(ev)
        if gone:  # (ranks that stepped in an earlier run and never in the last one)
            out.append(f"{who(gone)}: no step in the last run (steps in an earlier run only)")
    elif ev.steps.height:
        out.append(f"last step {last['step'].max()}")
    counted = store.ranks.filter(pl.col("source").str.contains("nccl-count", literal=True).fill_null(False))
    # (parsers/nccl_ranks.counted: the set of ranks is sure, who holds which is not)
    if out and counted.height:
        out.append(f"ranks numbered by counting the communicator's {counted.height} processes: which process "
                   "holds which rank is not logged")
    return "; ".join(out)  # (the ranks of the world not seen: the coverage the verdict always says)
