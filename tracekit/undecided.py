"""UNDECIDED said as the situation: what was seen, what is missing to decide, and what to collect.

Where no rule decides (``rules.nothing``), the verdict says what the logs show (NCCL init that started
or completed, collectives logged, error lines no rule explains, the telling line no parser decodes that
``parsers/salient.py`` found, steps), what is missing to decide (the ranks that left no record, the world
size, a sign of time passing) and what to collect, never a generic sentence.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from tracekit import align
from tracekit import start_up_messages as sm
from tracekit.evidence import Evidence, clip
from tracekit.formats import DECODED
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.parsers.pyspy import RAISED
from tracekit.parsers.salient import Telling
from tracekit.rules_salient import first_telling, quote
from tracekit.store import Store
from tracekit.wording import who


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
    if not last.height:  # (every line decoded, none of them an event: the file's own last line)
        last = files.filter(~pl.col("kind").is_in([f.kind for f in DECODED])
                            & pl.col("last_text").is_not_null()).select(
            "file", pl.col("last_line").alias("line"), pl.col("last_text").alias("message"),
            pl.lit(None, pl.Utf8).alias("host"))
    if last.height:
        said = [f'"{clip(" ".join(r["message"].split()), 140)}" ({Path(r["file"]).name}:{r["line"]}'
                + (f", {r['host']}" if r["host"] else "") + ")" for r in last.head(3).iter_rows(named=True)]
        out += "; the last line: " + "; ".join(said) + (f"; {last.height - 3} more" if last.height > 3 else "")
    return out, last


#: NCCL's choices of interface at set-up, as the set-up summary names them
SET_UP_DEVICES = (("bootstrap", "bootstrap over"), ("socket_devices", "sockets over"), ("ib_devices", "IB devices"))


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


def _after_init(store: Store, done: pl.DataFrame) -> int:
    """How many lines follow the last Init COMPLETE of each file that holds one, up to the file's last line
    that is neither blank nor NCCL's own (0 where NCCL's lines end the file: `Init timings`, `Launch mode`)."""
    if not {"file", "line"} <= set(done.columns):
        return 0
    last = done.group_by("file").agg(pl.col("line").max().alias("_at")).join(
        store.files.select("file", "last_line"), on="file")  # (its last line not blank nor NCCL's own)
    return int(last.select((pl.col("last_line") - pl.col("_at")).clip(0).sum()).item() or 0)


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


#: what to collect where start-up is quiet: the wait's own end says what it waited for
QUIET_START_UP = ("the log a few minutes later (the store's, the rendezvous' or NCCL's timeout names what "
                  "start-up waits for)")


def _start_up_begun(ev: Evidence) -> tuple[str, Cited] | None:
    """A runtime's own word that its start-up began a wait (``start_up_messages``, ``Means.WAITING``: Paddle's
    ``init nccl context nranks: 4``, XLA's ``Waiting to connect to client mesh master``): what it said and
    what it waits for, and its line."""
    said = (ev.store.events.filter(pl.col("message").fill_null("").str.contains(sm.WAITS))
            .sort("file", "line"))
    if not said.height:
        return None
    row = said.row(0, named=True)
    m, groups = sm.read(row["message"])
    at = f" at {groups['address']}" if groups.get("address") else ""
    quoted = clip(" ".join(row["message"].split()), 160)
    where = f"{Path(row['file']).name}:{row['line']}"
    text = f"{m.runtime}'s start-up {m.means.value} {m.awaited}{at}: \"{quoted}\" ({where})"
    return text, Cited(row["file"], row["line"], clip(row["message"]))


#: a frame of a communication library's call (NCCL/RCCL, oneCCL, MPI, HCCL, gloo, c10d, Horovod): what a native
#: stack waits in, said by name (``ccl_allgather_impl``, ``PMPI_Gather``, ``ncclSocketProgressOpt``)
COMM_CALL = (r"^(?:r?nccl[A-Z]\w*|ccl_\w+|ccl::\w+|P?MPI_[A-Z]\w*|Hccl[A-Z]\w*|hccl\w*|gloo::\S+|c10d::\S+"
             r"|horovod::\S+|ompi_coll\w*|mca_coll\w*) \(")


def _stacks_said(ev: Evidence) -> tuple[str, pl.DataFrame]:
    """The stack dumps no rule read (a thread of gdb's ``thread apply all bt``, a bare ``bt``): where each
    thread is (its innermost own frame) and the communication call under it, the outermost frame that names
    one (``gdb backtrace is in ccl_executor::wait (libccl.so.1), under ccl_allgather (libccl.so.1)``); ``""``
    where no stack was dumped."""
    st = (ev.kinds(EventKind.STACK).filter(pl.col("thread") != RAISED)
          .unique(["file", "line"], maintain_order=True).sort("file", "line"))
    if not st.height:
        return "", st
    call = (pl.col("frames").fill_null("").str.split(" <- ")  # (the outermost: the API the program called)
            .list.eval(pl.element().filter(pl.element().str.contains(COMM_CALL))).list.last())
    st = st.with_columns(call.alias("_call"), pl.coalesce(pl.format("rank {} {}", "rank", "thread"),
                                                             "thread").alias("_who"))
    each = "; ".join(f"{r['_who']} is in {r['where']}"
                     + (f", under {r['_call']}" if r["_call"] and r["_call"] != r["where"] else "")
                     for r in st.head(3).iter_rows(named=True))
    calls = st["_call"].drop_nulls()
    return (f"{st.height} thread stack(s) dumped, no rule decides from them: {each}"
            + (f"{'; ' + str(st.height - 3) + ' more' if st.height > 3 else ''}"
               + (": a process inside a communication call, a hang there if a peer never joins it"
                  if calls.len() else ""))), st


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
        # (the interfaces it chose: where a hang at set-up is a network's, `lo` or a docker bridge says so)
        chose = [f"{words} {clip(', '.join(vals), 80)}" for what, words in SET_UP_DEVICES
                 if (vals := sorted(set(setup.filter(pl.col("what") == what)["value"].drop_nulls().to_list())))]
        parts = ([f"network {', '.join(nets)}"] if nets else []) + chose + [
            w for w, k in (("ring and tree channels", ("ring", "trees")), ("connections", ("connection",)))
            if setup.filter(pl.col("what").is_in(k)).height]
        procs = setup.select("host", "pid").unique().height
        # (what NCCL warned of during that set-up, harmless alone: `Failed to open libibverbs.so[.1]`, so the
        # network is sockets; said once, with what it means)
        warned = ev.benign.unique("message", maintain_order=True).sort("file", "line")
        said = "; ".join(f"\"{clip(r['message'], 80)}\"" + (f" ({r['where']})" if r["where"] else "")
                         for r in warned.head(2).iter_rows(named=True))
        seen.append(f"{procs} NCCL process(es) logged communicator set-up"
                    + (f" ({', '.join(parts)})" if parts else "") + " and no Init COMPLETE"
                    + (f"; NCCL warned during it: {said}" if said else ""))
    unwind = ev.kinds(EventKind.NCCL_UNWIND).sort("file", "line")
    if unwind.height and not errors.height and not seen:  # (an error NCCL returned, its WARN cut)
        chain = " -> ".join(dict.fromkeys(unwind["message"].str.extract(r"^([\w./]+:\d+)", 1).drop_nulls()))
        seen.append(f"NCCL returned an error up its call chain ({clip(chain, 160)}; "
                    f"{Path(unwind['file'][0]).name}:{unwind['line'][0]}) and the WARN that says why is not "
                    "in the excerpt")
        cited += lines(unwind, 2)
    stacks, dumped = _stacks_said(ev)
    if stacks and not seen:  # (stall34: where a hung process sits is the situation; no stacks rule read it)
        seen.append(stacks)
        cited += lines(dumped, 3)
        collect += [STACKS, "the lines before the hang on every rank"]
    begun = _start_up_begun(ev)
    if begun is not None and not n and not errors.height and not ev.steps.height:
        seen.append(begun[0])
        cited += [begun[1]]
    if not seen:
        text, last = _read(store, ev)
        seen.append(text)
        cited += lines(last, 3)
    if begun is not None and not n and not errors.height and not ev.steps.height and not st:
        # (nothing after it only where its line ends its file; else what follows is no communicator, collective,
        # step or error)
        at = begun[1]
        last = store.files.filter(pl.col("file") == at.file)["last_line"].max()
        after = ("nothing after it is logged" if last is None or at.line >= last
                 else f"{last - at.line} line(s) follow it, none of them a communicator, collective, step or error")
        reading = (f"; start-up began and {after} (no communicator completed, no collective, "
                   "step or error): an init stall if the job stopped here, but nothing shows time passing")
        collect += [QUIET_START_UP, STACKS, "NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,NET",
                    "every rank's launch line (the same MASTER_ADDR/MASTER_PORT, world size and node count)"]
    elif st and not n and not errors.height and not ev.steps.height:
        k = _after_init(store, st["lines"])  # (s30, health30b: lines after it it does not read, said)
        reading = ((" and logged nothing after:" if not k else f"; {k} line(s) follow it, none a collective, step "
                    "or error tracekit reads:") + " a hang in the first collective after init, or a log that ends "
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
