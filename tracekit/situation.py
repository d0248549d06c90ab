"""Where each rank is (the library's answer; the plots and the report only render it): its
collectives on one clock, the process groups by what they are, and each rank's ``RankSituation``
(last collective, state, since when, main thread, last step).

Whether a rank behind its group's frontier is stuck depends on the verdict: in a hang it never
issued the next collective; in a run that still moved (slow progress, a finished run) its last
dump was only taken earlier, and nothing here calls it stuck.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from tracekit import align, sources
from tracekit.evidence import KILL_CODES, Evidence, clip, own_frame
from tracekit.outcome import FAILED, Cited, EventKind, Kind, RankSituation, Situation, Verdict
from tracekit.parsers.pyspy import RAISED
from tracekit.parsers.salient import Telling
from tracekit.rules_salient import first_telling, quote
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
        out.setdefault(w["rank"], f"timed out in {(w['op'] or '?').upper()} SeqNum {w['seq']}"
                       + (f" of process group {w['pg']}" if w["pg"] is not None else "")
                       + (f" after {w['timeout_ms'] / 1000:g} s" if w["timeout_ms"] else ""))
    for c in ev.crashes.filter(pl.col("rank").is_not_null()).iter_rows(named=True):
        out.setdefault(c["rank"], "raised " + clip(c["message"], 80))
    for x in ev.exits.filter(pl.col("rank").is_not_null()).iter_rows(named=True):
        code = x["exit_code"]
        out.setdefault(x["rank"], f"killed by signal {-code}" if code < 0 else
                       f"stopped from outside (exit {code})" if code in KILL_CODES else
                       f"exited with code {code}")
    return out


def brief(store: Store, ev: Evidence, n: int = 4) -> str:
    """Where each seen rank is, grouped (``ranks 0-2: in all_reduce #29, not completed; rank 3: last
    all_reduce #28, in next_batch_stuck (job.py:59)``) and its last step; empty where nothing is known
    of any rank."""
    coll, _ = _frontiers(store, ev.finished or ev.moving)
    ended = _ended(ev)
    where = {r: re.sub(r"(?<=\()[^()]*?(?:site|dist)-packages/", "", w)
             for r, w in main_threads(store).items() if w}
    steps = ev.steps.filter(pl.col("rank").is_not_null())
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
    elif ev.steps.height:
        out.append(f"last step {ev.steps['step'].max()}")
    counted = store.ranks.filter(pl.col("source").str.contains("nccl-count", literal=True).fill_null(False))
    # (parsers/nccl_ranks.counted: the set of ranks is sure, who holds which is not)
    if out and counted.height:
        out.append(f"{who(counted['rank'].drop_nulls().to_list())} numbered by counting the communicator's "
                   "processes: which process holds which rank is not logged")
    return "; ".join(out)  # (the ranks of the world not seen: the coverage the verdict always says)


# --- UNDECIDED as the situation: what was seen, what is missing to decide, what to collect --------

def _read(store: Store, ev: Evidence) -> tuple[str, pl.DataFrame]:
    """What was read where nothing decided: how many lines, how many of them decoded and as what, and
    the last line of each file (``salient``'s ``Telling.LAST``: where no line holds a crash's, a
    transport's, a wait's or an error's words, the last line is the best one to quote)."""
    files = store.files
    talk = int((files["lines"] - files["blank"]).sum() or 0)
    parsed = int(files["parsed"].fill_null(0).sum() or 0)
    kinds = sorted(set(files.filter(pl.col("parsed") > 0)["kind"].drop_nulls().to_list()) - {"text"})
    decoded = (f"{parsed} decoded" + (f" ({', '.join(kinds)} lines)" if kinds else "")
               if parsed else "none decoded")
    out = (f"{talk} line(s) read, {decoded}: no collective, NCCL init, error, step or end among them")
    last = ev.kinds(EventKind.TELLING_LINE).filter(pl.col("where") == Telling.LAST).sort("file", "line")
    if last.height:
        said = [f'"{clip(r["message"], 140)}" ({Path(r["file"]).name}:{r["line"]}'
                + (f", {r['host']}" if r["host"] else "") + ")" for r in last.head(3).iter_rows(named=True)]
        out += "; the last line: " + "; ".join(said) + (f"; {last.height - 3} more" if last.height > 3
                                                         else "")
    return out, last


#: the lines no rule explained that UNDECIDED names (the kinds rules.nothing counts as errors)
UNEXPLAINED = (EventKind.NCCL_WARN, EventKind.C10D_ERROR, EventKind.EXCEPTION, EventKind.CRASH,
               EventKind.STALL, EventKind.RANK_MISSING, EventKind.WATCHDOG_ABORT,
               # salient: a failure decoded without what decides it (a worker that died, no exit code)
               EventKind.CHILD_FAILED, EventKind.SIGNAL, EventKind.CUDA_ERROR, EventKind.TRANSPORT_ERROR)
STACKS = "a stack dump of every rank while it hangs (py-spy dump --pid, or tracekit run)"
FR = "Flight Recorder dumps (TORCH_NCCL_TRACE_BUFFER_SIZE=2000, TORCH_NCCL_DUMP_ON_TIMEOUT=1)"
COLL = "NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,COLL"


def init_state(store: Store) -> dict | None:
    """NCCL init of the largest communicator the logs show: ``nranks``, the ranks (or processes, where no
    rank is known) that logged Init START and Init COMPLETE, and its Init COMPLETE lines."""
    c = store.comms.filter(pl.col("state").is_in(["init_start", "init_complete"]))
    if not c.height:
        return None
    c = c.with_columns(pl.coalesce("comm_key", pl.format("{}:{}:{}", "host", "pid", "comm")).alias("_k"),
                       pl.coalesce(pl.col("global_rank").cast(pl.Utf8), pl.col("rank").cast(pl.Utf8),
                                   pl.format("{}:{}", "host", "pid")).alias("_who"))
    top = c["nranks"].max()
    big = c.filter(pl.col("nranks") == top) if top is not None else c
    done = big.filter(pl.col("state") == "init_complete")
    who_done = set(done["_who"].to_list())
    started = set(big["_who"].to_list())
    # (in the largest communicator a rank's own number is its global one where no process rank was resolved)
    ranked = (big.with_columns(pl.coalesce("global_rank", "rank").alias("_g"))
              .filter(pl.col("_g").is_not_null()))
    finished = set(ranked.filter(pl.col("state") == "init_complete")["_g"].to_list())
    return {"nranks": top, "done": sorted(who_done), "pending": sorted(started - who_done),
            "ranks_done": sorted(finished), "ranks_pending": sorted(set(ranked["_g"].to_list()) - finished),
            "lines": done}


def _them(ranks: list[int], n: int, noun: str = "process") -> str:
    """``ranks 0-1`` where the ranks are known, else ``2 processes``; ``both``/``all 4`` where they are
    all."""
    plural = "es" if n != 1 and noun.endswith("s") else "s" if n != 1 else ""
    return who(ranks) if ranks else f"{n} {noun}{plural}"


def _init_text(st: dict) -> str:
    done, pending, n = st["done"], st["pending"], st["nranks"]
    out = []
    if done:
        whom = _them(st["ranks_done"], len(done))
        whole = f"{len(done)} of {n}" if n else f"{len(done)}"
        both = not st["ranks_done"] and n == 2 and len(done) == 2
        out.append(f"{'both processes' if both else whom} finished NCCL init (Init COMPLETE, {whole})")
    if pending:
        out.append(f"{_them(st['ranks_pending'], len(pending))} logged Init START of the {n}-rank "
                   "communicator and no Init COMPLETE")
    return " and ".join(out)


def undecided(ev: Evidence) -> tuple[str, list]:
    """UNDECIDED said as the situation, what is missing to decide and what to collect (never a generic
    sentence): ``both ranks finished NCCL init (Init COMPLETE, 2 of 2) and logged nothing after: a hang
    after init or a log that ends there; to decide: ...; collect: ...``. The summary, and its evidence
    lines."""
    from tracekit.evidence import lines  # (the evidence lines' shape)
    store = ev.store
    n = align.collect(store.collectives.lazy().select(pl.len())).item()
    # (a traceback raised whose error line the excerpt cut is an error line too: where it was raised)
    raised = ev.kinds(EventKind.STACK).filter(pl.col("thread") == RAISED)
    errors = pl.concat([ev.kinds(*UNEXPLAINED), raised]).sort("file", "line")
    cov = ev.coverage
    st = init_state(store)
    seen, reading, missing, collect, cited = [], "", [], [], []
    if st:
        seen.append(_init_text(st))
        cited += lines(st["lines"].with_columns(pl.lit("Init COMPLETE").alias("message")), 2)
    if n:
        seen.append(f"{n} collective record(s) logged (where each rank is: below)")
    if errors.height:
        seen.append(f"{errors.height} error line(s) no rule explains, first: "
                    f"{clip(errors['message'][0], 140)}")
        cited += lines(errors, 4)
    told = first_telling(ev)
    if told is not None:  # (a line no parser decodes, read as a crash, a transport failure, a wait, an error)
        seen.append(f"{quote(told)}: not a line tracekit decodes, read as a {told['where']} from its words")
        cited += [Cited(told["file"], told["line"], clip(told["message"]))]
    if ev.steps.height:
        last = ev.steps.sort("step", "file", "line").tail(1).row(0, named=True)
        seen.append(f"steps up to {last['step']} (the last: {clip(last['message'], 120)})")
    setup = store.links.filter(pl.col("what").is_in(["bootstrap", "network", "socket_devices", "ib_devices",
                                                      "ring", "trees", "connection"]))
    if not seen and setup.height:
        nets = sorted(set(setup.filter(pl.col("what") == "network")["value"].drop_nulls().to_list()))
        parts = ([f"network {', '.join(nets)}"] if nets else []) + [
            w for w, k in (("ring and tree channels", ("ring", "trees")), ("connections", ("connection",)))
            if setup.filter(pl.col("what").is_in(k)).height]
        procs = setup.select("host", "pid").unique().height
        seen.append(f"{procs} NCCL process(es) logged communicator set-up"
                    + (f" ({', '.join(parts)})" if parts else "") + " and no Init COMPLETE")
    unwind = ev.kinds(EventKind.NCCL_UNWIND).sort("file", "line")
    if unwind.height and not errors.height and not seen:  # (an error NCCL returned, its WARN cut)
        chain = " -> ".join(dict.fromkeys(unwind["message"].str.extract(r"^([\w./]+:\d+)", 1).drop_nulls()))
        seen.append(f"NCCL returned an error up its call chain ({clip(chain, 160)}; "
                    f"{Path(unwind['file'][0]).name}:{unwind['line'][0]}) and the WARN that says why is not "
                    "in the excerpt")
        cited += lines(unwind, 2)
    if not seen:
        text, last = _read(store, ev)
        seen.append(text)
        cited += lines(last, 3)
    if st and not n and not errors.height and not ev.steps.height:
        reading = (" and logged nothing after: a hang in the first collective after init, or a log that ends "
                   "there" if st["done"] and not st["pending"] else
                   " with nothing after: an init stall, or a log cut before the others' init completed")
        collect += [STACKS, FR, COLL]
    elif n and not errors.height:
        reading = (" and no error, clean end or step after the last collective: a hang there, or a log that "
                   "ends there")
        collect += [STACKS, FR]
    elif not errors.height and told is not None and told["where"] == Telling.WAIT:
        reading = "; whether the wait ever ended is not in the excerpt"
        collect += ["the lines after it on every rank (does the wait end, or time out?)", STACKS]
    elif errors.height or (told is not None and told["where"] != Telling.WARNING):
        reading = "; what led to it is not in the excerpt"
        collect += ["the lines before the first error on every rank", COLL]
    else:
        collect += [COLL, STACKS]
    if cov.world_size and cov.missing and not cov.unranked:
        missing.append(f"{who(cov.missing)} left no record")
    elif not cov.world_size:
        missing.append("the world size is not logged")
    if not cov.seen and cov.unranked:
        missing.append(f"{cov.unranked} process(es) seen, ranks not named")
    missing.append("a sign of time passing (a timeout, a stall, a stack dump) or of the run moving on")
    text = "; ".join(seen) + reading
    return text + f"; to decide: {', '.join(missing)}; collect: {', '.join(dict.fromkeys(collect))}", cited


def undecided_verdict(ev: Evidence) -> Verdict:
    """The UNDECIDED verdict when no rule fires (``rules.nothing``): ``undecided``'s text and lines."""
    text, cited = undecided(ev)
    return Verdict(Kind.UNDECIDED, text, [], cited)
