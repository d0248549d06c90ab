"""The failure rules: a CUDA error, NCCL's error code and why, a bootstrap, rendezvous or store
barrier that never came together, a rank that crashed or exited, the network transport's errors, and
a failure sign with no cause. A failure is a cause: it explains the waits of the ranks after it."""

from __future__ import annotations

import re

import polars as pl

from tracekit.evidence import (BOOTSTRAP, CUDA, KILL_CODES, NETWORK_FAIL, RENDEZVOUS, SIGKILL_CODES,
                               STORE_BARRIER, Evidence, clip, lines)
from tracekit import nccl_messages
from tracekit.parsers.torch_patterns import CUT_TRACEBACK
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.rules_common import COLLECT, msg, rank_of, who_or
from tracekit.wording import who


def _failing(r: list[int], ev: Evidence) -> str:
    """``rank 6`` where the failure's own line or torchrun's root cause names the rank; else the local rank
    that the launcher saw fail (torchrun's `failed (exitcode: 1) local_rank: 6`, one only), else
    ``a rank``."""
    if r:
        return who(r)
    said = ev.exits.select(pl.col("message").str.extract(r"local_rank:? (\d+)", 1).alias("local"),
                           "exit_code").drop_nulls("local").unique("local", maintain_order=True)
    if said.height == 1:
        return (f"a rank (the launcher saw local rank {said['local'][0]} fail, exit code "
                f"{said['exit_code'][0]})")
    return "a rank"


def _network_failed_before(ev: Evidence, failures: pl.DataFrame) -> bool:
    """The network transport failed earlier in the same file than the first of ``failures``: the
    later failure (an illegal access in NCCL's proxy, an abort) is what the broken transfer led to."""
    net = ev.transport.filter(pl.col("kind") != EventKind.CONNECT_RETRY)
    if not net.height or not failures.height:
        return False
    first = failures.sort("file", "line").group_by("file").agg(pl.col("line").min().alias("_f"))
    return net.join(first, on="file").filter(pl.col("line") < pl.col("_f")).height > 0


#: a process's abort as MPI or libfabric raise it (``Signal: Aborted (6)``, ``exited on signal 6``)
ABORT = r"Aborted \(6\)|SIGABRT|[Ss]ignal 6\b|is aborting the MPI job|code:? -6\b"


def _aborted_after_endpoint_error(ev: Evidence, failures: pl.DataFrame) -> bool:
    """Every failure is an abort and a rank printed libfabric's endpoint error (PSM3's ``Mismatched address
    format``, an OFI call that failed) in the same log: MPI aborts the job after the transport's error,
    on that rank or another, and the processes' output interleaves, so the abort may print first."""
    said = ev.transport.filter(pl.col("where").fill_null("").str.starts_with("libfabric"))
    if not said.height or not failures.height:
        return False
    aborts = failures.filter(pl.col("message").fill_null("").str.contains(ABORT))
    return aborts.height == failures.height and failures.join(said, on="file", how="semi").height > 0


def cuda_failure(ev: Evidence) -> Verdict | None:
    """A CUDA failure (illegal access, out of memory, device assert): a cause of its own -- unless the
    network transport failed before it in the same log."""
    if not ev.cuda.height or _network_failed_before(ev, ev.cuda):
        return None
    r = rank_of(ev.cuda, ev)
    after = ("; the collectives that no longer pair up after it are its consequence (its error path left "
             "the others' collective)" if ev.mismatches or ev.reported_mismatch.height else "")
    return Verdict(Kind.CRASHED_RANK,
                   f"{who(r) if r else 'a rank'} hit a CUDA error first: {msg(ev.cuda)}{after}", r,
                   lines(ev.cuda) + lines(ev.exits, 3))


def refused_call(ev: Evidence) -> Verdict | None:
    """NCCL refused a rank's own call: a WARN that says which (two ranks on one GPU, a CUDA-graph capture
    it cannot take, a buffer on another device), or the code alone (ncclInvalidUsage, ncclInvalidArgument)
    where no other NCCL WARN says something else. NCCL returns these before it sends anything
    (src/init.cc, misc/strongstream.cc, misc/argcheck.cc): the program's error on that rank, a crash there;
    the others' errors and waits after it are its consequence."""
    nccl = pl.concat([ev.kinds(EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR), ev.nccl_errors],
                     how="diagonal_relaxed").unique(["file", "line"], maintain_order=True)
    said = nccl.filter(nccl_messages.is_one_of(nccl_messages.OWN_FAILURE_SAID)).sort("file", "line")
    if not said.height:
        said = nccl.filter(nccl_messages.is_one_of(nccl_messages.OWN_FAILURE)).sort("file", "line")
        if not said.height or ev.transport.height or ev.cuda.height or ev.reported_mismatch.height:
            return None
    m, groups = nccl_messages.meaning_of(said["message"][0] or "") or (None, {})
    named = [int(groups[k]) for k in ("rank", "peer_rank") if k in groups]
    r = rank_of(said, ev) or sorted(set(named))
    then = ev.nccl_errors.join(said.select("file", "line"), on=["file", "line"], how="anti")
    return Verdict(Kind.CRASHED_RANK, f"{who(r) if r else 'a rank'} failed: NCCL refused the program's "
                   f"own call: {msg(said, 0, 160)}"
                   + (f": {m.meaning}" if m else "")
                   + (f"; then: {msg(then, 0, 120)}" if then.height else ""),
                   r, lines(said, 3) + lines(then, 2) + lines(ev.exits, 2))


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
    then = f"; then: {msg(ev.nccl_errors, 0, 120)}" if ev.nccl_errors.height else ""
    return Verdict(Kind.INIT_STALL, f"NCCL's communicator init never completed: its bootstrap failed on "
                   f"{who(r) if r else 'a rank'}: {msg(t, 0, 180)}" + then,
                   r, lines(t, 3) + lines(ev.nccl_errors, 2) + lines(ev.network_settings, 3))


def address_of_no_family(ev: Evidence) -> Verdict | None:
    """NCCL's socket refused a peer address of no network family (ncclSocketInit's check,
    src/misc/socket.cc) while no communicator had completed init: the bootstrap exchanged no usable
    address (a peer that found no interface, NCCL_SOCKET_IFNAME naming one that a node lacks), so the
    communicator never formed. After an init completed the same words are a p2p connection's (undecided)."""
    no_family = nccl_messages.BY_NAME["socket_bad_family"].pattern
    bad = ev.kinds(EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR).filter(
        pl.col("message").str.contains(no_family)).sort("file", "line")
    if not bad.height or ev.store.comms.filter(pl.col("state") == "init_complete").height:
        return None
    set_to = ev.network_settings.filter(pl.col("message").str.contains(r"SOCKET_IFNAME"))
    said = (f"; {set_to['message'][0]} is set: check that interface exists and is up on every node "
            "(`ip -br addr`), or leave NCCL_SOCKET_IFNAME unset" if set_to.height else
            "; set NCCL_SOCKET_IFNAME to the interface the nodes share and check every node has it")
    return Verdict(Kind.INIT_STALL, f"NCCL's communicator set-up never completed on {who_or(bad)}: "
                   f"{msg(bad, 0, 140)}: a peer's address was never filled in (no address family), so the "
                   "bootstrap exchanged no usable address: a peer found no network interface to publish"
                   + said + (f"; then: {msg(ev.nccl_errors, 0, 100)}" if ev.nccl_errors.height else ""),
                   rank_of(bad, ev), lines(bad, 2) + lines(set_to, 2) + lines(ev.nccl_errors, 2))


def nccl_failure(ev: Evidence) -> Verdict | None:
    """NCCL gave up (its error code reached the program) and the network says why: NCCL's own WARN,
    a transport error or connect retries."""
    t, dropped = ev.transport.sort("line"), ""
    if not t.height and ev.nccl_errors.height:
        t = _dropped_connection(ev)
        dropped = ("; no line says the peer ended (no crash, exit or timeout): the connection dropped, on "
                   "the network or with a peer that died without a word (the peer's log decides which)")
    if not (ev.nccl_errors.height and t.height):
        return None
    r = rank_of(ev.nccl_errors.head(1), ev)
    said = ev.launched_with
    return Verdict(Kind.TRANSPORT_ERROR, f"NCCL failed on {who_or(t)}: "
                   f"{msg(t, 0, 160)}" + (f" (launched with {said})" if said else "")
                   + f"; {who(r) if r else 'a rank'} then failed: {msg(ev.nccl_errors, 0, 120)}" + dropped,
                   sorted(set(t["rank"].drop_nulls().to_list()) | set(r)),
                   lines(t, 3) + lines(ev.network_settings, 3) + lines(ev.nccl_errors, 2))


#: NCCL's words for a connection its peer closed or reset (net/socket.cc, net_ib.cc, include/socket.h)
PEER_DROPPED = r"(?i)closed by (?:remote )?peer|Connection reset by peer|Broken pipe"


def _dropped_connection(ev: Evidence) -> pl.DataFrame:
    """NCCL's WARN that its peer closed or reset the connection, where nothing else in the logs says
    why (no crash, exit, timeout or CUDA error of the peer): a consequence of the peer's end where that
    end is seen, else all there is to say (the connection dropped: the network's, or a peer that died
    without a word)."""
    if ev.crashes.height or ev.exits.height or ev.timeouts.height or ev.cuda.height:
        return ev.transport.clear()
    return ev.kinds(EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR).filter(
        pl.col("message").str.contains(PEER_DROPPED)).sort("line")


def nccl_error_unexplained(ev: Evidence) -> Verdict | None:
    """NCCL's error code with none of NCCL's own lines to say why: collect them."""
    e = ev.nccl_errors
    if not e.height:
        return None
    r = rank_of(e.head(1), ev)
    said = nccl_messages.meaning_of(e["message"][0] or "")
    if said is not None and said[0].name in nccl_messages.OWN_FAILURE:
        # NCCL's error code itself says the rank's own call failed: that rank is the cause
        m = said[0]
        return Verdict(Kind.CRASHED_RANK, f"{_failing(r, ev)} failed in its own NCCL call "
                       f"({msg(e, 0, 160)}): {m.meaning}; NCCL_DEBUG=WARN prints which argument or call "
                       "(check each rank's torch.cuda.set_device(local_rank) and CUDA_VISIBLE_DEVICES)",
                       r, lines(e, 4) + lines(ev.exits, 2))
    means = f": {said[0].meaning}" if said is not None else ""
    # NCCL's own last error (the line under `Last error:`, or a WARN that alone decides nothing): quoted
    # with what it means, though it does not decide the kind
    last = ev.kinds(EventKind.NCCL_WARN).join(ev.benign.select("file", "line"), on=["file", "line"],
                                               how="anti").sort("file", "line")
    why = "no NCCL WARN line says why"
    if last.height:
        known = nccl_messages.meaning_of(last["message"][0] or "")
        why = (f"NCCL's last error: `{msg(last, 0, 160)}`" + (f" ({known[0].meaning})" if known else "")
               + ", which alone does not say whose fault it is")
    return Verdict(Kind.UNDECIDED, f"NCCL failed on {_failing(r, ev)} ({msg(e, 0, 160)}){means}; "
                   f"{why}: rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) and collect every rank's "
                   "output", r, lines(e, 4) + lines(last, 2) + lines(ev.exits, 2))


def nccl_unwound(ev: Evidence) -> Verdict | None:
    """NCCL's unwind lines alone (`NCCL INFO misc/socket.cc:564 -> 2`, then `bootstrap.cc:270 -> 2`,
    `init.cc:1303 -> 2`), with no WARN, error, exit or timeout that says more: where NCCL failed and with
    which code: through its bootstrap, where no communicator completed init and the job made no progress,
    the communicator's set-up failed there (an init stall); a stray unwind elsewhere decides nothing here."""
    unwound = ev.kinds(EventKind.NCCL_UNWIND).sort("file", "line")
    # (any WARN, even one read as benign or as a teardown's, and any communicator aborted: not alone)
    said = (ev.crashes, ev.exits, ev.timeouts, ev.transport, ev.nccl_errors, ev.cuda, ev.aborted, ev.stalls,
            ev.consequences, ev.kinds(EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR))
    if not unwound.height or any(df.height for df in said) or ev.failure_signs:
        return None
    chain = unwound.filter(pl.col("file") == unwound["file"][0])
    if "pid" in chain.columns and chain["pid"][0] is not None:
        chain = chain.filter(pl.col("pid").eq_missing(chain["pid"][0]))
    at = chain["message"].str.extract(r"^(\S+:\d+) -> \d+", 1).drop_nulls().to_list()
    code = chain["message"].str.extract(r"-> (\d+)", 1).cast(pl.Int64, strict=False).drop_nulls()
    if not at or not code.len():
        return None
    name = nccl_messages.RESULT_CODES.get(code[0])
    said = f" ({nccl_messages.BY_NAME[name].meaning})" if name in nccl_messages.BY_NAME else ""
    r = chain["rank"].drop_nulls().unique().sort().to_list()
    steps = chain["message"].str.extract(r"^(\S+:\d+ -> \d+)", 1).drop_nulls().to_list()
    path = ", ".join(steps[:6]) + (", ..." if len(steps) > 6 else "")
    head = (f"NCCL failed on {who(r) if r else 'a rank'} in {at[0]} with code {code[0]}{said}, unwound as "
            f"`{path}`")
    booted = any(re.search(r"(?:^|/)bootstrap\.(?:cc|cu):", a) for a in at)
    # (elsewhere, a stray unwind of a job that went on, an IB check NCCL retries, decides nothing: not here)
    if not booted or ev.store.comms.filter(pl.col("state") == "init_complete").height or ev.finished \
            or ev.moving or ev.steps.height:
        return None
    return Verdict(Kind.INIT_STALL, f"{head}: the communicator's bootstrap failed, so its init never "
                   "completed; no WARN line says why: NCCL_DEBUG=WARN (or INFO with "
                   "NCCL_DEBUG_SUBSYS=INIT,NET) prints it (most often an interface or address the other "
                   "hosts cannot reach: NCCL_SOCKET_IFNAME)", r, lines(chain, 4))


def rendezvous_failed(ev: Evidence) -> Verdict | None:
    """The rendezvous / TCPStore never came together: no rank got as far as a communicator."""
    rz = ev.rendezvous
    if not rz.height:
        return None
    if rz["message"].str.contains("RendezvousClosedError", literal=True).all():
        return None  # (an agent closed it: its job ended or was stopped; what ended it, the other rules say)
    alive = rz.filter(pl.col("where").fill_null("").str.contains("keep-alive"))
    if alive.height == rz.height:  # (the rendezvous had completed: the job ran, then lost its store)
        node = alive["message"].str.extract(r"The node '([^']+)'", 1).drop_nulls()
        return Verdict(Kind.UNDECIDED, f"the node {node[0] if node.len() else '?'} could no longer reach the "
                       f"rendezvous store ({msg(alive, 0, 200)}): the rendezvous had completed and the job "
                       "ran; the store (at --rdzv-endpoint, served by the agent that started it) went away: "
                       "that node's agent ended (a crashed rank, a kill, its host down) or the network "
                       "between them dropped: collect every node's log and the launchers' exit codes",
                       rank_of(alive, ev), lines(alive, 2) + lines(ev.exits, 2))
    if rz["message"].str.contains("ncclUniqueId", literal=True).any():  # (ProcessGroupNCCL's own init)
        return Verdict(Kind.INIT_STALL, "the NCCL communicator's init never completed: its ranks could not "
                       f"exchange the ncclUniqueId through the c10d store: {msg(rz, 0, 240)} (check the "
                       "store's "
                       "address is reachable from every rank, and that rank 0 reached the same collective)",
                       rank_of(rz, ev), lines(rz, 4))
    if rz["message"].str.contains("connectFullMesh", literal=True).all():  # (ProcessGroupGloo's init)
        if ev.transport.height:
            return None  # the network's own words of it (a refused connect): transport_error says them
        return Verdict(Kind.INIT_STALL, "the gloo process group's init never completed: connecting "
                       f"its full mesh of pairs failed: {msg(rz, 0, 200)} (each rank connects to the address "
                       "every other rank advertised through the store: check GLOO_SOCKET_IFNAME names an "
                       "interface the others reach, and that no firewall blocks the ports)",
                       rank_of(rz, ev), lines(rz, 4))
    at, means = _store_words(rz)
    return Verdict(Kind.INIT_STALL, f"the rendezvous never completed: {msg(rz, 0, 200)}"
                   + (f"; the store is at {at}" if at else "") + (f": {means}" if means else
                   " (check --master_addr / --master_port, the port is free and reachable from every node, "
                   "and every node was launched)"),
                   rank_of(rz, ev), lines(rz, 4))


#: what the store's socket and the rendezvous say, in their words (c10d socket.cpp, TCPStore.cpp,
#: elastic/rendezvous), and what each means: the first that any line says is the reading
STORE_WORDS = (
    (r"(?i)Name or service not known|gai error|cannot be retrieved|Temporary failure in name resolution",
     "its host name does not resolve on this node (check MASTER_ADDR / --rdzv-endpoint names a host every "
     "node's resolver knows, or give its IP)"),
    (r"(?i)Address already in use|errno: 98|failed to (?:bind|listen)",
     "the port is taken on the store's host (another job or a leftover process of an earlier run holds it): "
     "pick a free MASTER_PORT, or end the old processes"),
    (r"(?i)Connection refused|errno: 111",
     "nothing listens there: the store's process (rank 0, or the agent at --rdzv-endpoint) had not started, "
     "had died, or the port is wrong"),
    (r"(?i)wait timeout after|waiting for clients|clients joined|RendezvousTimeoutError|store->get",
     "the store was reached, but the other ranks never arrived in time (not every node was launched, or "
     "they failed before init_process_group: their own output says why)"),
    (r"(?i)timed out|errno: 110|No route to host|Network is unreachable",
     "the store's host is not reachable from this node (a firewall, the wrong interface or address, a "
     "node on another network): check MASTER_ADDR is the address the other nodes reach"),
    (r"RendezvousClosedError", "the rendezvous was closed: another node's agent ended the job"),
    (r"RendezvousConnectionError", "the rendezvous backend (--rdzv-endpoint) could not be reached"),
)
ENDPOINT = (r"\((?P<host>[\w.\-]+), (?P<port>\d+)\)|\[(?P<host2>[^\]\s]+)\]:(?P<port2>\d+)"
            r"|(?P<host3>\b[\w.\-]*[A-Za-z\d]):(?P<port3>\d{2,5})\b")


def _store_words(rz: pl.DataFrame) -> tuple[str, str]:
    """Where the store is (``host:port`` as a line names it) and what the lines' words mean."""
    text = " ".join(rz["message"].fill_null("").to_list())
    at = ""
    for m in re.finditer(ENDPOINT, text):
        host = m.group("host") or m.group("host2") or m.group("host3")
        port = m.group("port") or m.group("port2") or m.group("port3")
        if host.endswith((".cpp", ".py", ".hpp")):  # (a source line, `socket.cpp:426`)
            continue
        at = f"port {port} of this host" if host in ("::", "0.0.0.0") else f"{host}:{port}"
        break
    means = next((said for pattern, said in STORE_WORDS if re.search(pattern, text)), "")
    return at, means


def store_barrier(ev: Evidence) -> Verdict | None:
    """init_process_group's store-based barrier waits or timed out: fewer ranks than the world checked
    in (the others never reached init), or more (two jobs share one store address and port)."""
    m = pl.col("message")
    sb = ev.store.events.filter(m.str.contains(STORE_BARRIER) & m.str.contains("worker_count"))
    if not sb.height:
        return None
    sb = sb.with_columns(pl.coalesce(m.str.extract(r"rank:? (\d+)", 1).cast(pl.Int64, strict=False),
                                     "rank").alias("r"),
                         m.str.extract(r"world_size=(\d+)", 1).cast(pl.Int64, strict=False).alias("world"),
                         m.str.extract(r"worker_count=(\d+)", 1).cast(pl.Int64, strict=False).alias("count"),
                         m.str.extract(r"key:? (\S+?)[ ,(]", 1).alias("key")).sort("file", "line")
    last = sb.tail(1).row(0, named=True)
    world, count = last["world"], last["count"]
    waiting = sorted(set(sb["r"].drop_nulls().to_list()))
    head = (f"init_process_group's store-based barrier ({last['key']}) never completed: worker_count={count} "
            f"of world_size={world} checked in")
    if world is not None and count is not None and count > world:
        return Verdict(Kind.INIT_STALL, head + ": more processes than the world under one key, so two jobs "
                       "(or a restarted one) share one MASTER_ADDR:MASTER_PORT store; give each job its own "
                       "port",
                       waiting, lines(sb, 3))
    missing = sorted(set(range(world)) - set(waiting)) if world and len(waiting) == count else []
    said = (f"; {who(missing)} never checked in (never reached init_process_group)" if missing else
            f"; {world - count} rank(s) never reached init_process_group" if world and count is not None
            else "")
    if waiting:
        said += f"; {who(waiting)} {'waits' if len(waiting) == 1 else 'wait'} in it"
    return Verdict(Kind.INIT_STALL, head + said, missing or waiting, lines(sb, 3))


#: a connection's failure in a socket's words (errno names, gai errors, torch's DistNetworkError)
CONNECTION_WORDS = (r"(?i)connection (?:reset|refused|closed|timed out|aborted)|broken pipe"
                    r"|Name or service not known|No route to host|Network is unreachable"
                    r"|Address already in use|DistNetworkError"
                    r"|timed out|Temporary failure in name resolution")


def init_connection_failed(ev: Evidence) -> Verdict | None:
    """A connection failed under a process group's set-up frame (``init_process_group``, a rendezvous
    handler, ``init_distributed``): the ranks never came together, before any collective -- the store or
    a peer's advertised address was not reachable, whatever socket words the failure used."""
    rows = ev.kinds(EventKind.EXCEPTION, EventKind.TRANSPORT_ERROR, EventKind.C10D_ERROR, EventKind.CRASH)
    rows = rows.filter(pl.col("where").is_not_null() & pl.col("message").str.contains(CONNECTION_WORDS)
                       & ~pl.col("message").str.contains(CUDA) & ~pl.col("message").str.contains(RENDEZVOUS)
                       & ~pl.col("message").str.contains(STORE_BARRIER)).sort("file", "line")
    if not rows.height or ev.store.comms.filter(pl.col("state") == "init_complete").height:
        return None
    first = rows.row(0, named=True)
    r = rank_of(rows, ev)
    return Verdict(Kind.INIT_STALL, f"the process group's init never completed: {first['where']} raised on "
                   f"{who(r) if r else 'a rank'}: {clip(first['message'], 160)}: the connection to the store "
                   "(MASTER_ADDR:MASTER_PORT, --rdzv-endpoint) or to a peer's advertised address failed "
                   "before any collective (the store's host not listening yet or gone, the port blocked or "
                   "taken, the address not reachable from this node): check MASTER_ADDR/MASTER_PORT reach "
                   "rank 0's host from every node, that every node was launched, and GLOO_SOCKET_IFNAME/"
                   "NCCL_SOCKET_IFNAME",
                   r, lines(rows, 3) + lines(ev.network_settings, 3))


def rank_joined_twice(ev: Evidence) -> Verdict | None:
    """The same global rank joined twice (Lightning's `initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8`
    printed twice) and nothing ran after: two launches took the same ranks (each node thinks it is node
    0), so the ranks the world still needs never join and the rendezvous waits."""
    j = ev.kinds(EventKind.RANK_JOINED).filter(pl.col("rank").is_not_null())
    twice = sorted(j.group_by("rank").agg(pl.len().alias("n")).filter(pl.col("n") > 1)["rank"].to_list())
    if (not twice or ev.steps.height or ev.clean_end
            or ev.store.comms.filter(pl.col("state") == "init_complete").height):
        return None
    world = j["numel"].max()
    never = sorted(set(range(world)) - set(j["rank"].to_list())) if world else []
    if not never:
        return None  # (every rank joined again: a restart's second attempt, not two launches of one rank)
    return Verdict(Kind.INIT_STALL, f"{who(twice)} joined twice ({msg(j, 0, 80)} printed "
                   f"{j.filter(pl.col('rank') == twice[0]).height} times): two launches took the same global "
                   "ranks, each node thinking it is node 0"
                   + (f", and {who(never)} of the world of {world} never joined, so init_process_group waits "
                      "for them" if never else "")
                   + ": check the node rank each node gets (NODE_RANK / SLURM_NODEID, srun --ntasks-per-node "
                   "equal to the GPUs per node, num_nodes in the Trainer)", never or twice, lines(j, 4))


def crashed_rank(ev: Evidence) -> Verdict | None:
    """A rank failed with an error that is not itself a timeout; the others then wait for it."""
    if (not ev.crashes.height or _network_failed_before(ev, ev.crashes)
            or _aborted_after_endpoint_error(ev, ev.crashes)):
        return None
    first = ev.crashes.head(1)
    r = rank_of(first, ev)
    # (a traceback cut before its error line: where it raised, the innermost frame the excerpt shows)
    cut = ev.raised_cut.filter(pl.col("file") == first["file"][0]) if first["message"][0] == CUT_TRACEBACK \
        else ev.raised_cut.clear()
    inner = f"; it raised in {clip(cut['where'][0], 160)}" if cut.height else ""
    return Verdict(Kind.CRASHED_RANK, f"{_failing(r, ev)} failed first: {msg(first)}{inner}", r,
                   lines(ev.crashes) + lines(cut, 1) + lines(ev.exits, 3))


#: NCCL's source files of the network (its transports, sockets, IB verbs, bootstrap, proxy, net plugins, RAS),
#: as a WARN line's `file.cc:line` names them
NET_SOURCE = r"(?i)(?:^|/)(?:transport/|net|socket|ib|bootstrap|proxy|p2p|shm|coll_?net|nvls|ras/|plugin/)"
SOURCE = r"\.(?:cc|cu|cpp|c|h|hpp):\d+$"


def _own_code(t: pl.DataFrame) -> pl.DataFrame:
    """NCCL WARNs from a source file of NCCL's own that is not the network's (`include/msccl/msccl_parser.h:70
    NCCL WARN Attribute minBytes of node algo not found`, graph/, misc/, enqueue.cc) in words that are not
    the network's: NCCL failed in its own code on that rank, not on the wire."""
    where = pl.col("where").fill_null("")
    return t.filter((pl.col("kind") == EventKind.NCCL_WARN) & where.str.contains(SOURCE)
                    & ~where.str.contains(NET_SOURCE)
                    & ~pl.col("message").str.contains(NETWORK_FAIL)
                    & ~pl.col("message").str.contains(PEER_DROPPED))


def _own_code_failed(ev: Evidence, own: pl.DataFrame) -> Verdict:
    """A rank's NCCL failed in its own code (a WARN of no network file), and the code it unwound with."""
    first = own.row(0, named=True)
    unwound = ev.kinds(EventKind.NCCL_UNWIND).filter((pl.col("file") == first["file"])
                                                    & (pl.col("line") > first["line"])).sort("line")
    code = unwound["message"].str.extract(r"-> (\d+)$", 1).cast(pl.Int64, strict=False).drop_nulls()
    name = nccl_messages.RESULT_CODES.get(code[0]) if code.len() else None
    said = nccl_messages.BY_NAME[name].meaning if name in nccl_messages.BY_NAME else None
    back = (f"; it unwound with code {code[0]} through {unwound.height} call(s) "
            f"(last {unwound['message'][-1].split(' ->')[0]})" + (f": {said}" if said else "")
            if code.len() else "")
    r = own["rank"].drop_nulls().unique().sort().to_list()
    return Verdict(Kind.CRASHED_RANK, f"NCCL failed in its own code on {who(r) if r else 'a rank'}: "
                   f"{first['where']}: {clip(first['message'], 160)} (a WARN of NCCL's "
                   f"{first['where'].split(':')[0]}, not of its network){back}: that rank's NCCL call or "
                   "communicator init failed there; the WARN names what it could not do (a setting, a file "
                   "NCCL reads, an algorithm or topology it was given)", r, lines(own, 3) + lines(unwound, 3))


def transport_error(ev: Evidence) -> Verdict | None:
    """The network transport reported errors (not consequences of a peer's exit, not benign)."""
    t = ev.transport.sort("line")
    if not (t.filter(pl.col("kind") != EventKind.NCCL_WARN).height or (t.height and not ev.missing)):
        return None
    own = _own_code(t)
    if own.height == t.height:  # (every WARN is of NCCL's own code: no network in it)
        return _own_code_failed(ev, own)
    said = ev.launched_with
    return Verdict(Kind.TRANSPORT_ERROR, f"{t.height} transport error line(s), first: {msg(t)}"
                   + (f" (launched with {said})" if said else ""),
                   t["rank"].drop_nulls().unique().sort().to_list(), lines(t) + lines(ev.network_settings, 3))


def exited_without_cause(ev: Evidence) -> Verdict | None:
    """torchrun's root-cause rank failed with a real error code and nothing else explains it."""
    ex = ev.exits.filter(~pl.col("exit_code").is_in(list(KILL_CODES)))
    if not ex.height or ev.timeouts.height or ex["rank"].drop_nulls().n_unique() > 1:
        return None  # several ranks failing alike says nothing of which failed first
    r = [ev.root_cause_rank] if ev.root_cause_rank is not None else rank_of(ex.head(1), ev)
    code = ex.filter(pl.col("rank").is_in(r))["exit_code"] if r else ex["exit_code"]
    code = code[0] if code.len() else ex["exit_code"][0]
    local = ex["message"].str.extract(r"local_rank: (\d+)", 1).drop_nulls()
    name = who(r) if r else (f"local rank {local[0]}" if local.len() else "a rank")
    why = ("was killed with SIGKILL: the kernel's OOM killer does this when host memory runs out (dmesg on "
           "that node says so)" if code in SIGKILL_CODES else
           f"exited first with code {code} (torchrun's first observed failure) and its output shows no "
           "error: its stderr holds why")
    return Verdict(Kind.CRASHED_RANK, f"{name} {why}", r, lines(ex, 4))


def failed_without_cause(ev: Evidence) -> Verdict | None:
    """A failure sign (a non-zero exit, a kill, a stall, a cancel) and no cause in the evidence."""
    signs = ev.failure_signs
    if not signs:
        return None
    shown = lines(ev.exits, 3) + lines(ev.stalls, 2) + lines(ev.cancelled, 1)
    # the first line of a sign, quoted with its rank: the situation, even where no cause is shown
    first = next((df for df in (ev.stalls, ev.exits, ev.cancelled, ev.timeouts, ev.transport)
                  if df.height and "message" in df.columns), None)
    said = ""
    if first is not None:
        r = first["rank"].drop_nulls()
        said = f"; {'rank ' + str(r[0]) + ': ' if r.len() else ''}{msg(first, 0, 160)}"
    elif ev.pending.height:  # a communicator's Init START without its COMPLETE, and nothing else
        p = ev.pending.row(0, named=True)
        said = (f"; {'rank ' + str(p['rank']) + ': ' if p['rank'] is not None else ''}"
                f"communicator {p['comm']} "
                f"of nranks {p['nranks']}: Init START without Init COMPLETE"
                + (" (a communicator of one rank: a world or group of its own; if the job has more ranks, "
                   "this process did not join them)" if p["nranks"] == 1 else ""))
    return Verdict(Kind.UNDECIDED, "the job did not end cleanly (" + "; ".join(signs) + f"){said}; the "
                   f"evidence shows no cause: {COLLECT}", rank_of(ev.exits, ev), shown)
