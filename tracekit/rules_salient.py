"""Verdicts from the telling lines no parser decodes (``parsers/salient.py``), where their words decide.

The vocabulary of a line decides for the families where it does, when nothing decoded says the run
went on after it (a step, a progress bar, a clean end later in the same file):
- a crash (``Segmentation fault``, a process that cannot start, a launcher's or a runtime's word that a
  process failed) -> CRASHED_RANK, in ``rules_crash_words.crashed_by_words`` (its own module; the helpers
  here that quote and name a line are shared);
- a transport's own failure (a completion error, ``retry count exceeded``, a socket of an address family
  the host has not, a buffer the network plugin could not register) -> TRANSPORT_ERROR;
- a start-up connection to a host:port that timed out or was refused (c10d's ``failed to connect to
  [::ffff:10.0.0.1]:29500 (errno: 110 - Connection timed out)``), or a wait for a connection, a rendezvous
  or a peer shown not to complete, with no step, collective or NCCL init seen -> INIT_STALL naming the
  address (``said_by_telling_lines``, late in ``rules.RULES``, after every rule that reads decoded evidence);
- a peer that closed its connection (``Connection closed by localRank 7``), with no cause seen: a
  consequence, never a cause -> UNDECIDED naming who ended first and what to collect from it
  (``peer_closed``).
Anything else falls through to UNDECIDED, which quotes the most telling line (``undecided.undecided``).
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from tracekit import align
from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import Kind, Verdict
from tracekit.parsers import salient, timings
from tracekit.parsers.salient import Telling
from tracekit.schema import EventKind
from tracekit.wording import who

#: what a program logs when it went on: a telling line before one of these in its file decides nothing
WENT_ON = (EventKind.STEP, EventKind.PROGRESS, EventKind.CLEAN_EXIT, EventKind.TRAIN_END,
           EventKind.PROGRAM_END, EventKind.TEST_PASSED)


def telling(ev: Evidence) -> pl.DataFrame:
    """The telling lines, in file order, those after which the run went on left out."""
    told = ev.kinds(EventKind.TELLING_LINE).filter(pl.col("where") != Telling.LAST).sort("file", "line")
    if not told.height:
        return told
    # (a program's own timing lines, parsers/timings.py, are no sign the run went on past a crash line: the
    # survivors of a rank that died print theirs too)
    later = timings.without(ev.kinds(*WENT_ON)).group_by("file").agg(pl.col("line").max().alias("_on"))
    went_on = pl.col("_on").is_not_null() & (pl.col("line") < pl.col("_on"))
    return told.join(later, on="file", how="left").filter(~went_on).drop("_on")


def whose(row: dict) -> str:
    """``rank 3 on node09``, ``process 19546 on master``, ``a process``: who a line's prefix names."""
    host = f" on {row['host']}" if row.get("host") else ""
    if row.get("rank") is not None:
        return f"rank {row['rank']}{host}"
    if row.get("pid") is not None:
        return f"process {row['pid']}{host}"
    return f"a process{host}"


#: each class's words, as Python reads them (to find where in a long line they sit)
WORDS = {Telling.CRASH: salient.CRASH, Telling.TRANSPORT: salient.TRANSPORT, Telling.WAIT: salient.WAIT,
         Telling.ERROR: salient.ERROR, Telling.WARNING: salient.WARNING}


def telling_part(message: str, where: str, n: int = 160) -> str:
    """The part of a line to quote: all of it where short, else from a little before its telling words
    (a long timestamp or logger header first must not push them out of the quote)."""
    text = message.strip()
    hit = re.search(WORDS.get(where, salient.ERROR), text)
    start = 0 if hit is None or hit.start() < n // 3 else text.rfind(" ", 0, max(hit.start() - 30, 0)) + 1
    return clip(("... " if start else "") + text[start:], n)


def quote(row: dict, n: int = 160) -> str:
    """A telling line as the verdict says it: who, the line's telling part, where it is."""
    said = telling_part(row["message"], row["where"], n)
    return f'{whose(row)} reported "{said}" ({Path(row["file"]).name}:{row["line"]})'


def first_telling(ev: Evidence) -> dict | None:
    """The telling line the verdict quotes: the first of the strongest class (a crash before a transport
    failure, a wait, an error), or None."""
    told = ev.kinds(EventKind.TELLING_LINE).filter(pl.col("where") != Telling.LAST)
    if not told.height:
        return None
    rank = pl.col("where").replace_strict({str(c): i for i, c in enumerate(Telling)}, default=9)
    return told.sort(rank, "file", "line").row(0, named=True)


def named(message: str) -> str | None:
    """The rank, task, container or local rank a line speaks of (``localRank 7``, ``task 3``), or None."""
    hit = re.search(salient.NAMED, message)
    return f"{hit['what']} {hit['n']}" if hit else None


def named_rank(message: str) -> int | None:
    """The global rank a launcher's line names (a task, a process rank, a container rank: not a local
    rank, which numbers the processes of one host)."""
    hit = re.search(salient.NAMED, message)
    return int(hit["n"]) if hit and not re.match(r"(?i)local", hit["what"]) else None


def ranks_named(df: pl.DataFrame) -> list[int]:
    """The ranks the lines' prefixes give, else those a launcher's lines name."""
    own = sorted(set(df["rank"].drop_nulls().to_list()))
    return own or sorted({r for r in map(named_rank, df["message"].to_list()) if r is not None})


def hosts_named(df: pl.DataFrame) -> str:
    """``, on 2 hosts (node1, node2)`` where the lines name more than one host."""
    hosts = sorted(set(df["host"].drop_nulls().to_list()))
    return f", on {len(hosts)} hosts ({', '.join(hosts[:4])})" if len(hosts) > 1 else ""


def _started(ev: Evidence) -> bool:
    """Whether the run got past start-up: a step, a collective, an NCCL init that completed (a rendezvous
    or a bootstrap came first)."""
    return (ev.steps.height > 0 or align.collect(ev.store.collectives.lazy().select(pl.len())).item() > 0
            or ev.store.comms.filter(pl.col("state") == "init_complete").height > 0)


#: (s29) start-up's barrier of the coordination service, by its id: PjRT's connect barrier (xla/pjrt/distributed/
#: client.cc `Barrier_id: PjRT_Client_Connect`); a barrier whose id names another (JAX's `sync_global_devices`, a
#: checkpoint's) timed out in a job that ran
START_UP_BARRIER = r"(?i)\bBarrier_id: \S*(?:connect|init|start)"
#: (s29) a peer's going away in the coordination service's or c10d's words (a missed heartbeat, a task that
#: crashed, a remote that shut down): the run had its peers, so no start-up's coordinator is unreached
WENT_AWAY = (r"(?i)heartbeat|crashed unexpectedly|missed \d+ health checks?|remote server shutdown or crash"
             r"|detected fatal errors|reset by peer")


def _other_barrier() -> pl.Expr:
    """A line of a coordination service's barrier that is not start-up's (``START_UP_BARRIER``)."""
    m = pl.col("message").fill_null("")
    return m.str.contains(r"\bBarrier_id:") & ~m.str.contains(START_UP_BARRIER)


def coordinator_unreached(ev: Evidence) -> Verdict | None:
    """INIT_STALL where a runtime says its start-up never reached its coordinator (XLA's ``Failed to connect
    to client mesh master: host:port``, the JAX/TensorFlow coordination service's ``DEADLINE_EXCEEDED`` on
    ``RegisterTask`` or its connect barrier, gRPC's ``failed to connect to all addresses``) and the run never
    got past start-up. After the crashes (a coordinator that crashed leaves the others unable to reach it)
    and before the decoded timeouts and transport errors, which are these same lines read as a wait or a
    socket: the start-up that never connected is what came first."""
    # (a runtime's exception can say it too, `TimeoutError: Placement group creation timed out`, decoded as
    # one: the start-up's words decide it before the timeout does)
    raised = ev.kinds(EventKind.EXCEPTION).filter(pl.col("message").fill_null("").str.contains(
        f"{salient.COORDINATOR_UNREACHED}|{salient.UNPLACED}"))
    told = telling(ev)
    if raised.height:
        told = pl.concat([told, raised.select(told.columns)] if told.height else [raised],
                         how="diagonal_relaxed").unique(["file", "line"], keep="first").sort("file", "line")
    if not told.height or _started(ev):
        return None
    coordinator = told.filter(pl.col("message").str.contains(salient.COORDINATOR_UNREACHED)
                              & ~pl.col("message").str.contains(salient.CAUGHT + r"|shutdown barrier")
                              & ~_other_barrier())
    # (s29: the wait or failure in view must be start-up's: a peer that went away is a crash's, whatever it
    # broke, the same words mid-run, dv31-015)
    if coordinator.height and told["message"].str.contains(WENT_AWAY).any():
        return None
    if not coordinator.height:
        return _never_placed(told)
    first = coordinator.row(0, named=True)
    said = " ".join(coordinator["message"].to_list())
    at = address(said) or (task.group(0) if (task := re.search(TASK, said)) else None)
    times = f" ({coordinator.height} such lines)" if coordinator.height > 1 else ""
    return Verdict(Kind.INIT_STALL, f"start-up never reached its coordinator{f' at {at}' if at else ''}: "
                   f"{quote(first)}{times}; no step or collective is logged: the coordinator (XLA's mesh "
                   "master, the JAX/TensorFlow coordination service) was not up, not reachable or not "
                   "answering in time (its host down or late, a wrong address or port, a firewall, a "
                   "task missing); read from the line's words (no parser decodes it)",
                   ranks_named(coordinator), lines(coordinator, 4))


def _never_placed(told: pl.DataFrame) -> Verdict | None:
    """INIT_STALL where the scheduler says it cannot place the workers (``salient.UNPLACED``: Ray's
    autoscaler on a request no node type fits, vLLM's wait for its placement group): the processes that
    would join never start, so the start-up waits."""
    unplaced = told.filter(pl.col("message").str.contains(salient.UNPLACED))
    if not unplaced.height:
        return None
    first = unplaced.row(0, named=True)
    asked = re.search(r"\{[^{}]{1,200}\}", " ".join(unplaced["message"].to_list()))
    waited = re.findall(r"(?i)placement group of specs for (\d+) seconds", " ".join(unplaced["message"]))
    times = f" ({unplaced.height} such lines)" if unplaced.height > 1 else ""
    return Verdict(Kind.INIT_STALL, f"start-up waits for workers the scheduler cannot place: {quote(first)}"
                   f"{times}" + (f"; waited {max(map(int, waited))} s" if waited else "")
                   + "; no step or collective is logged: no node offers the resources asked"
                   + (f" ({asked.group(0)})" if asked else "") + " (a GPU count no node has, a `node:<ip>` "
                   "resource naming an address the cluster registered under another IP, nodes not joined "
                   "to the cluster); `ray status` says what the cluster offers (read from the line's words)",
                   ranks_named(unplaced), lines(unplaced, 4))


def said_by_telling_lines(ev: Evidence) -> Verdict | None:
    """TRANSPORT_ERROR or INIT_STALL from the words of lines no parser decodes (a crash's words are
    weighed earlier, ``crashed_by_words``)."""
    told = telling(ev)
    if not told.height:
        return None
    transport = (pl.concat([salient.hard_transport_lines(told), _transfers_given_up(ev, told)])
                 .unique(["file", "line"]).sort("file", "line"))
    if transport.height:
        first = transport.row(0, named=True)
        who_else = ranks_named(transport)
        also = (f"; {transport.height} such lines" if transport.height > 1 else "") + (
            f" ({who(who_else)})" if len(who_else) > 1 else "")
        named_ = transport_named(first["message"]) or transport_named(" ".join(transport["message"]))
        status = re.search(salient.WC_STATUS, " ".join(transport["message"]))
        if status:  # (the verbs completion's status, which a long line's quote may cut)
            named_ += f" (the verbs work completion's status: {status[0]})"
        return Verdict(Kind.TRANSPORT_ERROR, f"the network transport failed{named_}: {quote(first)}{also}; "
                       "read from its words (no parser decodes the line)", who_else,
                       lines(_distinct(transport), 4))
    started = _started(ev)
    unreached = told.filter(salient.connect_failed())
    if unreached.height and not started:
        first = unreached.row(0, named=True)
        at = address(" ".join(unreached["message"].to_list()))
        times = f" ({unreached.height} such lines)" if unreached.height > 1 else ""
        return Verdict(Kind.INIT_STALL, f"start-up never connected{f' to {at}' if at else ''}: {quote(first)}"
                       f"{times}; no step or collective is logged: the rendezvous, store or bootstrap "
                       "address was not reachable (its host down or not listening yet, a wrong address or "
                       "port, a firewall); read from the line's words (no parser decodes it)",
                       ranks_named(unreached), lines(unreached, 4))
    # (and a runtime's own start-up wait, start_up_frames.COORDINATOR_WAIT: vLLM's engine cores' handshake)
    connect = told.filter((salient.waits_to_connect() | ((pl.col("where") == Telling.WAIT)
                                                         & pl.col("message").str.contains(salient.COORDINATOR_WAIT)))
                          & ~_other_barrier())
    if connect.height and not started and not told["message"].str.contains(WENT_AWAY).any():
        undone = connect.filter(salient.timed_out())
        repeated = connect.group_by("message").len().filter(pl.col("len") > 1).height > 0
        if undone.height or repeated:
            first = (undone if undone.height else connect).row(0, named=True)
            most = connect.group_by("message").len()["len"].max()
            why = "it timed out" if undone.height else f"the wait is said again ({most} times)"
            return Verdict(Kind.INIT_STALL, f"start-up never completed: {quote(first)}; {why}, and no step "
                           "or collective is logged (read from the line's words: no parser decodes it)",
                           ranks_named(connect), lines(connect, 4))
    return None


#: a task of a coordination service (``/job:jax_worker/replica:0/task:6``, ``task 6``)
TASK = r"/job:[\w\-]+/replica:\d+/task:\d+|\btask:? ?\d+\b"


def _transfers_given_up(ev: Evidence, told: pl.DataFrame) -> pl.DataFrame:
    """A transfer engine's failed transfers (Mooncake's ``Transfer failed for task0``) that no retry line
    follows in their file: a retry that may succeed decides nothing (its giving up, ``TRANSFER_FAIL``, is
    a hard failure of its own)."""
    failed = told.filter(pl.col("message").str.contains(salient.TRANSFER_FAILED))
    if not failed.height:
        return failed
    retries = ev.kinds(EventKind.TELLING_LINE).filter(pl.col("message").str.contains(salient.CAUGHT))
    last = retries.group_by("file").agg(pl.col("line").max().alias("_r"))
    return failed.join(last, on="file", how="left").filter(
        pl.col("_r").is_null() | (pl.col("line") > pl.col("_r"))).drop("_r")


#: a transport a runtime's line names (NVSHMEM's ``init failed for transport: IBGDA``, UCX's ``rocm_ipc``),
#: and the call that failed (``nvshmemi_transport_init:275``, ``ibgda_rc_init2rtr failed``, ``ibv_reg_mr``)
#: (the most specific first: NVSHMEM's IBGDA module sits under ``nvshmem/src/modules/transport/ibgda``)
TRANSPORT_NAME = [r"(?i)\btransport: (\w+)",
                  r"(?i)\b(ibgda|ibrc|rocm_ipc|cuda_ipc|cma|psm[23]?|atl_ofi)(?:\b|_)",
                  r"(?i)\b(libfabric|ofi|ucx|nvshmem|mooncake|RoCE|EFA|NET/\w+)\b"]
CALL = (r"\b((?:[a-z]+_)+[a-z0-9]+)(?!\.\w)(?::\d+)?(?:\(\))?"
        # (not a field of a record the line prints: Mooncake's ``(opcode: 1, local_nic: mlx5_9, ...)``)
        r"(?=[: ](?:\s*init)? ?failed|: (?![\w.:@]+[,)])|\b.{0,40}\bfailed)")


def _distinct(df: pl.DataFrame) -> pl.DataFrame:
    """The lines that say different things first (four processes' same ``Unable to create ah.`` cite one,
    and the ``ibgda_rc_init2rtr failed`` after them gets cited too), then the rest, in file order."""
    said = pl.col("message").str.replace_all(r"\d+", "N")
    first = df.with_columns(said.alias("_s")).with_row_index("_i")
    once = first.unique("_s", keep="first", maintain_order=True)
    return pl.concat([once, first.join(once.select("_i"), on="_i", how="anti")]).drop("_i", "_s")


def transport_named(message: str) -> str:
    """`` (transport IBGDA; call nvshmemi_transport_init)``: the transport and the call a line names, or
    nothing where it names neither."""
    name = next((hit for p in TRANSPORT_NAME if (hit := re.search(p, message))), None)
    call = re.search(CALL, message)
    parts = ([f"transport {name[1]}"] if name else []) + (
        [f"call {call[1]}"] if call else [])
    return f" ({'; '.join(parts)})" if parts else ""


def address(text: str) -> str | None:
    """The first host:port a line connects to (``[::ffff:192.168.1.219]:23456``, ``10.0.0.1:29500``,
    ``(master, 29500)``), not a source file's ``socket.cpp:663``."""
    # (a host:port is not followed by more of an address: gRPC's ``ipv4:10.0.0.9:1234`` is 10.0.0.9:1234)
    shapes = r"\[[0-9a-fA-F:.]+\]:\d+|\b[\w.\-]*\w(?::\d{2,5}\b(?![.\d])|<\d+>)|\(([\w.\-]+), (\d{2,5})\)"
    for hit in re.finditer(shapes, text):
        if hit[1]:
            return f"{hit[1]}:{hit[2]}"
        if not re.search(r"\.(?:cc|cpp|cu|c|h|hpp|py|so)(?=:)|^\d+:\d+$", hit[0]):
            return hit[0]
    return None


def peer_closed(ev: Evidence) -> Verdict | None:
    """UNDECIDED that names the peer which ended first, where the only telling lines say a peer closed its
    connection (NCCL's proxy thread's ``Connection closed by localRank 7``, ``Connection reset by peer``):
    a consequence of that peer's end, never a cause; what ended it is in its own log. A run that logs a
    step or an end closes its connections as it tears down (``Connection closed by localRank 0`` after
    ``training complete``): nothing here then."""
    if ev.finished or ev.kinds(*WENT_ON).height:
        return None
    told = telling(ev)
    closed = told.filter(pl.col("message").str.contains(salient.PEER_CLOSED))
    if not closed.height or told.filter(pl.col("where") == Telling.CRASH).height:
        return None
    hit = closed["message"].str.extract_groups(salient.NAMED).struct
    names = sorted({f"{w} {n}" for w, n in zip(hit.field("what"), hit.field("n")) if n is not None})
    first = closed.row(0, named=True)
    by = f"{', '.join(names)} ended first" if names else "a peer ended first (the lines do not say which)"
    whose = f"{', '.join(names)}'s own log" if names else "every rank's own log"
    writers = closed.select("host", "pid").unique().height
    if len(names) == 1 and writers > 1:
        # (several processes each name the one peer whose connections closed: the lines show whose end came
        # first, that peer's; its end is the cause, theirs the consequence)
        return Verdict(Kind.CRASHED_RANK, f"{names[0]} ended first (it exited, crashed or was killed): "
                       f"{writers} other processes each say it closed their connection ({closed.height} "
                       f"line(s), first: {quote(first)}), and no line names another peer; its own log (its "
                       "last lines, its exit code or signal; dmesg for the OOM killer or a segfault) says why",
                       [], lines(closed, 4))
    return Verdict(Kind.UNDECIDED, f"{closed.height} line(s) from {writers} process(es) say a peer closed "
                   f"its connection: {by} (it exited, crashed or was killed) and the others saw its sockets "
                   f"close, a consequence; first: {quote(first)}; what ended it is not in the excerpt; to "
                   f"decide: collect {whose} (its last lines, its exit code or signal; dmesg for the OOM "
                   "killer) and the lines before these on every rank", [], lines(closed, 4))
