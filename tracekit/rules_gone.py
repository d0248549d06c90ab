"""The failures seen from the side that survived them: a peer that closed its connection, c10d's abort after
NCCL operations failed or timed out, communicators aborted with NCCL's WARNs around them. What failed first
is on the other side; each rule says whose side and what to collect, and a closed connection that NCCL
unwound through its bootstrap is the communicator's set-up that never completed."""

from __future__ import annotations

import polars as pl

from tracekit import ended_first, peer_named, teardown
from tracekit.evidence import Evidence, clip, lines
from tracekit.meanings import EITHER_ABORT
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.rules_common import COLLECT, msg, rank_of, who_or
from tracekit.wording import who


def aborted_unexplained(ev: Evidence) -> Verdict | None:
    """c10d took a process down after "NCCL operations have failed or timed out" (torch_npu after "HCCL
    operations ...", its same words) and no line says which (no watchdog timeout, no NCCL error code): who
    aborted, and what NCCL's own lines show before it."""
    ab = (ev.kinds(EventKind.WATCHDOG_ABORT).filter(pl.col("message").str.contains(EITHER_ABORT))
          .sort("file", "line"))
    if not ab.height:
        return None
    r = ab["rank"].drop_nulls().unique().sort().to_list()
    before = (ev.kinds(EventKind.NCCL_WARN, EventKind.NCCL_UNWIND, EventKind.TRANSPORT_ERROR)
              .sort("file", "line"))
    where = (before["message"].str.extract(r"^([\w/]+\.(?:cc|h)):\d+", 1).drop_nulls()
             .unique(maintain_order=True))
    said = ""
    if before.height:
        said = (f"; before it NCCL's own calls failed ({before.height} line(s), first `{msg(before, 0, 100)}`"
                + (f", in {', '.join(where.head(3).to_list())}" if where.len() else "") + ")"
                + ("; NCCL's socket code returned the error: a connection to a peer broke (the peer's end or "
                   "the network)" if where.str.contains("socket").any() else ""))
    # (torch_npu's ProcessGroupHCCL says the same of HCCL: Ascend/pytorch 9e73e708 torch_npu/csrc/distributed/
    # ProcessGroupHCCL.cpp:991-994 WorkHCCL::handleException: LOG(ERROR) "Some HCCL operations have failed or
    # timed out. ...")
    hccl = ab["message"].str.contains(r"\bHCCL operations").any()
    lib, by = ("HCCL", "torch_npu's ProcessGroupHCCL") if hccl else ("NCCL", "c10d")
    collect = ("every rank's log and its HCCL logs (ASCEND_GLOBAL_LOG_LEVEL=1, ~/ascend/log/plog: the "
               "operation, its error code, the peer) and the launchers' exit codes" if hccl else
               "every rank's log with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) and the launchers' exit codes")
    return Verdict(Kind.UNDECIDED, f"{who(r) if r else 'a rank'} took its process down after {lib} operations "
                   f"failed or timed out ({by}'s abort, which does not say which)" + said + "; no line says a "
                   f"collective timed out, which peer ended or why: collect {collect}",
                   r, lines(before, 3) + lines(ab, 2))


def comms_aborted(ev: Evidence) -> Verdict | None:
    """Processes aborted their communicators (NCCL's `Abort COMPLETE`) with NCCL's WARNs around the abort
    and no line that says why: c10d aborts after an error or a timeout, a program after its own error;
    what they were is not in the logs. (An abort with no WARN is also how c10d tears a healthy job's
    communicators down at its end: no sign of failure.)"""
    ab = ev.aborted
    first = ab.group_by("file", "pid").agg(pl.col("line").min().alias("_abort"))
    after = (ev.kinds(EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR).join(first, on=["file", "pid"])
             .filter(pl.col("line") > pl.col("_abort"))
             .join(ev.benign.select("file", "line"), on=["file", "line"], how="anti").sort("file", "line"))
    if not (ab.height and after.height):
        return None
    r = ab["rank"].drop_nulls().unique().sort().to_list()
    comms = ", ".join(f"{c['comm']} (rank {c['rank']} of {c['nranks']})"
                      for c in ab.head(4).iter_rows(named=True))
    return Verdict(Kind.UNDECIDED, f"process {ab['pid'][0]} aborted {ab.height} communicator(s): {comms}: "
                   "c10d aborts after an error or a timeout, a program after its own error, and neither is "
                   f"in the logs; NCCL's WARNs after the abort (`{msg(after, 0, 80)}`) are the teardown's "
                   "(ncclCommAbort closes its sockets)"
                   + f"; collect the lines before the abort on every rank ({COLLECT})", r,
                   lines(ab.with_columns(pl.lit("Abort COMPLETE").alias("message")), 3) + lines(after, 2))


def peer_gone(ev: Evidence) -> Verdict | None:
    """A rank's connection was closed by its peer (broken pipe, reset, closed by remote peer) and
    nothing says why: the peer ended first, and only its own log says why. (Not a close after the run's end
    on that rank: its teardown, ``teardown.noise``.)"""
    closed = pl.col("message").str.contains(r"(?i)broken pipe|closed by (?:remote )?peer|connection reset")
    gone = ev.kinds(EventKind.TRANSPORT_ERROR, EventKind.NCCL_WARN, EventKind.EXCEPTION,
                    EventKind.CRASH).filter(closed).sort("file", "line")
    # (s31) not a close after the run's end on its rank: its teardown's (the store's host exited first)
    gone = gone.join(teardown.noise(ev).select("file", "line"), on=["file", "line"], how="anti")
    if not gone.height:
        return None
    in_init = _unwound_through_init(ev, gone)
    if in_init is not None:
        return in_init
    lost = peer_named.one_peer_lost_by_many(gone)
    if lost is not None:  # (stall33: several processes each lost the one same process: it ended first)
        return Verdict(Kind.CRASHED_RANK, f"{peer_named.process(lost)} ended first (it exited, crashed or was killed): "
                       f"{peer_named.writers(gone)} processes ({who_or(gone)}) each lost their connection to it "
                       f"({msg(gone, 0, 140)}); one peer lost by many is that process's end, not the network's; "
                       "its own log (its last lines, exit code or signal; dmesg for the OOM killer) says why",
                       [int(lost.split()[1])] if lost.startswith("rank ") else [], lines(gone, 4) + lines(ev.exits, 2))
    peer = peer_named.peer_text(gone)
    return Verdict(Kind.UNDECIDED, f"a peer of {who_or(gone)} closed its connection"
                   + (f": {peer}" if peer else "") + f" ({msg(gone, 0, 140)}): "
                   "that peer ended first (exited, was killed, or its host went away); its own log or exit "
                   "code says why: collect every rank's output and the launcher's exit codes", [],
                   lines(gone, 3) + lines(ev.exits, 2))


#: NCCL's bootstrap (as its unwind lines `NCCL INFO bootstrap.cc:169 -> 2` name it): the ring its processes
#: form first, before any of their transports connect
INIT_SOURCES = r"(?:^|/)bootstrap\.(?:cc|cu):\d+ -> \d+"


def _unwound_through_init(ev: Evidence, gone: pl.DataFrame) -> Verdict | None:
    """A closed connection that NCCL unwound through its bootstrap (`bootstrap.cu:169 -> 2`) where no
    communicator completed init: the communicator's set-up failed there, before any collective (a peer that
    ended in its own set-up, or the network between them). (Not one unwound through init.cc alone: a P2P or
    proxy connection its peer closed because that peer failed first, whose cause only its own WARN says.)"""
    if ev.store.comms.filter(pl.col("state") == "init_complete").height:
        return None
    first = gone.row(0, named=True)
    unwound = ev.kinds(EventKind.NCCL_UNWIND).filter((pl.col("file") == first["file"])
                                                    & (pl.col("line") > first["line"])).sort("line")
    if "pid" in unwound.columns and first.get("pid") is not None:
        unwound = unwound.filter(pl.col("pid").eq_missing(first["pid"]))
    init = unwound.filter(pl.col("message").str.contains(INIT_SOURCES))
    if not init.height:
        return None
    r = gone["rank"].drop_nulls().unique().sort().to_list()
    return Verdict(Kind.INIT_STALL, f"NCCL's communicator set-up failed on {who(r) if r else 'a rank'}: a "
                   f"peer closed its connection during it ({msg(gone, 0, 140)}), and NCCL unwound the error "
                   f"through {init['message'][0].split(' ->')[0]}: the communicator never completed init; "
                   "the peer ended in its own set-up or the network between them dropped: the peer's log "
                   "says which (NCCL_DEBUG=INFO, NCCL_SOCKET_IFNAME set to an interface every host reaches)",
                   r, lines(gone, 2) + lines(init, 2))


#: a process's or its transport's word that the peer's end went away: NCCL's socket transport (`NET/Socket :
#: peer 10.0.0.2<45678> closed the connection`, `Connection closed by remote peer`), its proxy (`Connection
#: closed by localRank 3`), its error string for ncclRemoteError (`remote process exited or there was a
#: network error`), a socket's errno words (`Connection reset by peer`, `Broken pipe`)
PEER_WORDS = (r"(?i)closed the connection|closed by (?:remote )?peer|connection closed by localRank"
              r"|connection reset|broken pipe|remote process exited")
#: exit codes of a death by a signal the process did not raise itself over a peer: SIGKILL (the OOM killer, a
#: scheduler), SIGSEGV, SIGBUS, SIGILL, SIGFPE. Not SIGABRT (-6: c10d's own abort after an NCCL error or a
#: timeout), SIGTERM or SIGINT (what a launcher sends the other workers once one failed), nor 1 (an exception,
#: which the peer's closed connection itself raises)
OWN_DEATHS = (-9, -11, -7, -4, -8, 137, 139, 135)


def peer_died_first(ev: Evidence) -> Verdict | None:
    """CRASHED_RANK where ranks' transports say a peer closed the connection or exited (``PEER_WORDS``) and a
    launcher says a process other than those died of a signal no peer's failure sends (``OWN_DEATHS``: torchrun's
    first observed failure, a launcher's end of a named rank, srun's task), or ended with any code that is no
    stop request before the first such line by the lines' own clocks (``ended_first.clock``): that process died
    first and its peers' closed connections are the consequence, not a network fault."""
    said = pl.col("message").fill_null("")
    gone = (ev.kinds(EventKind.TRANSPORT_ERROR, EventKind.NCCL_WARN, EventKind.EXCEPTION, EventKind.C10D_ERROR,
                     EventKind.WATCHDOG_ABORT).filter(said.str.contains(PEER_WORDS)).sort("file", "line"))
    if not gone.height or not ev.exits.height or "exit_code" not in ev.exits.columns:
        return None
    seeing = set(gone["rank"].drop_nulls().to_list())
    t0 = gone.select(ended_first.clock(ended_first.said()).min()).item()
    earlier = (ended_first.clock(ended_first.said()) < t0) if t0 is not None else pl.lit(False)
    dead = ended_first.ends(ev, sorted(seeing)).filter(
        pl.col("exit_code").is_in(list(OWN_DEATHS)) | earlier.fill_null(False))
    first = dead.filter(pl.col("where").fill_null("").str.contains("first observed"))
    dead = (first if first.height else dead).sort("file", "line")
    who_died = dead.select(pl.coalesce(pl.col("rank").cast(pl.Utf8), pl.col("pid").cast(pl.Utf8),
                                       pl.col("message"))).to_series()
    if not dead.height or who_died.n_unique() > 1 and not first.height:
        return None  # (several processes killed alike say nothing of which died first)
    d = dead.row(0, named=True)
    from tracekit.rules_exit import _name, meaning  # (rules_exit imports the rules of its family, not these)
    dead_name = f"rank {d['rank']}" if d["rank"] is not None else _name(d)  # (srun's task, a launcher's pid)
    return Verdict(Kind.CRASHED_RANK, f"{dead_name} died first: {clip(d['message'], 140)} ({meaning(d['exit_code'])}); "
                   f"{who_or(gone)} then saw {'its' if len(seeing) <= 1 else 'their'} connection to a peer close "
                   f"(`{msg(gone, 0, 120)}`): the consequence of that death, not a network fault; the dead "
                   "rank's own host says why it died (dmesg -T for the OOM killer, the scheduler's log, a core "
                   "file)", [d["rank"]] if d["rank"] is not None else [], lines(dead, 2) + lines(gone, 3))


#: NCCL's proxy service thread on a rank's node losing the connection of another process of that node (NVIDIA/nccl
#: src/proxy.cc: `WARN("[Service thread] Connection closed by localRank %d", peer->localRank)`, the recv of that
#: process's proxy socket returning closed): a local socket, no network between them
LOCAL_PEER_CLOSED = r"Connection closed by localRank (\d+)"


def local_peer_closed(ev: Evidence, t: pl.DataFrame) -> Verdict | None:
    """Every one of NCCL's failure lines ``t`` is its proxy's word that a process of the same node closed its
    connection (``LOCAL_PEER_CLOSED``): that process ended first (it exited, raised or was killed; or it
    finished while this rank still waited in a collective), which no line here says; never the network's.
    UNDECIDED, naming the local rank gone, where nothing else in view says how it ended."""
    closed = t.filter(pl.col("message").fill_null("").str.contains(LOCAL_PEER_CLOSED))
    if not closed.height or closed.height != t.height:
        return None
    local = sorted(set(closed["message"].str.extract(LOCAL_PEER_CLOSED, 1).cast(pl.Int64).to_list()))
    host = closed["host"].drop_nulls() if "host" in closed.columns else closed["rank"].clear()
    on = f" on {host[0]}" if host.len() else ""
    writers = closed.select("host", "pid").unique().height
    if len(local) == 1 and writers > 1:
        # (several processes each lost the one local rank: its end came first, theirs follow; as rules_salient's
        # peer_closed reads the same lines where no NCCL error code is in view)
        return Verdict(Kind.CRASHED_RANK, f"local rank {local[0]}{on} ended first (it exited, crashed or was "
                       f"killed): {writers} other processes each say it closed their connection to NCCL's proxy "
                       f"({msg(closed, 0, 120)}); its own log (its last lines, exit code or signal; dmesg for the "
                       "OOM killer or a segfault) says why", [], lines(closed, 4) + lines(ev.nccl_errors, 2))
    return Verdict(Kind.UNDECIDED, f"the process of local rank {', '.join(map(str, local))}{on} ended first: NCCL's "
                   f"proxy on {who_or(closed)} lost its connection ({msg(closed, 0, 120)}; a socket within the node, "
                   "no network between them), and no line here says how it ended (an exception, a kill, or its "
                   "own clean end while this rank still waited in a collective); " + COLLECT
                   + " (that local rank's own output and exit code decide it)",
                   closed["rank"].drop_nulls().unique().sort().to_list(), lines(closed, 3) + lines(ev.nccl_errors, 2))


#: an address and port, and what a socket said of it a few words on (brpc's `SocketId=4@10.2.0.1:6170@58494:
#: Connection reset by peer`, gloo's `[10.2.0.1]:6170: Connection refused`, c10d's `(10.2.0.1, 6170)`)
ADDRESS_SAID = (r"(?P<addr>\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-fA-F:]+\])\]?(?::|, )(?P<port>\d{2,5})\b"
                r"[^\[\n]{0,40}?"
                r"(?P<what>Connection reset by peer|Connection refused)")


def server_gone(ev: Evidence, t: pl.DataFrame) -> Verdict | None:
    """A connection to an address reset by its peer, then a new connect to that same address refused:
    nothing listens there any more -- the process that served it (a parameter server, the store, a peer
    rank) ended; its end is the cause, the resets and refusals of the others its consequence."""
    said = (t.select("file", "line", "rank", pl.col("message").str.extract_all(ADDRESS_SAID).alias("_s"))
            .explode("_s").drop_nulls("_s")
            .with_columns(pl.col("_s").str.extract_groups(ADDRESS_SAID).alias("_g")).unnest("_g"))
    if not said.height:
        return None
    reset = said.filter(pl.col("what") == "Connection reset by peer").group_by("addr", "port").agg(
        pl.col("line").min().alias("_reset"))
    gone = said.filter(pl.col("what") == "Connection refused").join(reset, on=["addr", "port"])
    gone = gone.filter(pl.col("line") >= pl.col("_reset")).sort("line")
    if not gone.height:
        return None
    where = f"{gone['addr'][0]}:{gone['port'][0]}"
    rows = t.join(gone.select("file", "line").unique(), on=["file", "line"])
    return Verdict(Kind.CRASHED_RANK, f"the process serving {where} is gone: its connections were reset by "
                   "that peer and new connects to the same address were refused (nothing listens there any "
                   "more): that server (or rank) crashed or was killed first, and "
                   f"{who_or(rows)}'s transport errors are the consequence: {msg(rows, 0, 200)}; its own "
                   "log, exit code and dmesg say why",
                   rank_of(rows, ev), lines(rows, 3))
