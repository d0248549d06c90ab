"""The start-up rules of a job that never came together: a rendezvous or its store that failed, the store
barrier that counts the ranks in, a connection to the store that failed while init_process_group ran, a rank
that joined twice. Split out of rules_failure (which keeps CUDA, crashes and failures with no cause)."""

from __future__ import annotations

import re

import polars as pl

from tracekit.evidence import CUDA, RENDEZVOUS, STORE_BARRIER, Evidence, clip, lines
from tracekit import rules_set_up, start_up_frames, start_up_returned
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.rules_common import msg, rank_of
from tracekit.wording import who


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
        # (s30: a log head's time, glog's `E526 03:50:39.898939042`, is no host: dv18-030 read `03:50`; a bogus
        # numeric host of more digits, dv2-062's `6841231`, is the address said)
        if re.fullmatch(r"\d{1,2}", host):
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
    # (s31: a wait in it that its file shows completed after, `Rank 0: Completed store-based barrier for key:... with
    # 6 nodes.`, was a rank early at the barrier, start-up under way: dv45-002)
    waited = sb.filter(m.str.contains(r"Waiting in store based barrier"))
    sb = sb.join(start_up_returned.went_past(ev.store.events, waited, any_wait=True).select("file", "line"),
                 on=["file", "line"], how="anti")
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
    gloo = _gloo_never_connected(ev)
    if gloo is not None:
        return gloo
    rows = ev.kinds(EventKind.EXCEPTION, EventKind.TRANSPORT_ERROR, EventKind.C10D_ERROR, EventKind.CRASH)
    rows = rows.filter(pl.col("where").is_not_null() & pl.col("message").str.contains(CONNECTION_WORDS)
                       & ~pl.col("message").str.contains(CUDA) & ~pl.col("message").str.contains(RENDEZVOUS)
                       & ~pl.col("message").str.contains(STORE_BARRIER)).sort("file", "line")
    if not rows.height or ev.store.comms.filter(pl.col("state") == "init_complete").height:
        return None
    first = rows.row(0, named=True)
    r = rank_of(rows, ev)
    frame = start_up_frames.frame_of(first["where"])
    if frame is not None and frame.first_collective:
        return Verdict(Kind.INIT_STALL, f"start-up never completed: {first['where']} raised on "
                       f"{who(r) if r else 'a rank'}: {clip(first['message'], 160)}: {frame.means} never "
                       "completed, so the ranks never ran a collective together (a rank that never reached "
                       "it, or the connections the communicator's init sets up between them): every rank's "
                       "log and NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) say which",
                       r, lines(rows, 3) + lines(ev.network_settings, 3))
    if frame is not None and frame.runtime not in ("torch", "deepspeed", "megatron", "lightning"):
        # (another runtime's set-up, s28: JAX's coordinator, TensorFlow's strategy, Paddle's or vLLM's groups)
        return Verdict(Kind.INIT_STALL, f"start-up never completed: {first['where']} raised on "
                       f"{who(r) if r else 'a rank'}: {clip(first['message'], 160)}: {frame.means} failed to "
                       "connect before any collective (the coordinator, store or peer it connects to was not up "
                       "yet, had failed, or is not reachable at the address given from this node)",
                       r, lines(rows, 3) + lines(ev.network_settings, 3))
    return Verdict(Kind.INIT_STALL, f"the process group's init never completed: {first['where']} raised on "
                   f"{who(r) if r else 'a rank'}: {clip(first['message'], 160)}: the connection to the store "
                   "(MASTER_ADDR:MASTER_PORT, --rdzv-endpoint) or to a peer's advertised address failed "
                   "before any collective (the store's host not listening yet or gone, the port blocked or "
                   "taken, the address not reachable from this node): check MASTER_ADDR/MASTER_PORT reach "
                   "rank 0's host from every node, that every node was launched, and GLOO_SOCKET_IFNAME/"
                   "NCCL_SOCKET_IFNAME",
                   r, lines(rows, 3) + lines(ev.network_settings, 3))


#: gloo's TCP pair failing to connect to a peer's advertised address, which ProcessGroupGloo's creation does
#: for every pair of its full mesh (pytorch/gloo gloo/transport/tcp/pair.cc Pair::connect, `connect
#: [127.0.1.1]:47363: Connection refused`: a host name that resolves to loopback in /etc/hosts, or
#: GLOO_SOCKET_IFNAME unset)
GLOO_CONNECT = (r"\bconnect (?P<peer>\[[^\]\s]+\]:\d+): (?P<error>Connection refused|Connection timed out"
                r"|No route to host|Network is unreachable|Connection reset by peer)")


def _gloo_never_connected(ev: Evidence) -> Verdict | None:
    """INIT_STALL where gloo could not connect a pair of its full mesh (``GLOO_CONNECT``) and nothing shows
    the job past set-up: the peer address, what the socket said, the interface to set."""
    kinds = (EventKind.EXCEPTION, EventKind.CRASH, EventKind.TRANSPORT_ERROR, EventKind.C10D_ERROR,
             EventKind.TELLING_LINE)
    said = ev.kinds(*kinds).filter(pl.col("message").fill_null("").str.contains(GLOO_CONNECT))
    said = said.sort("file", "line")
    if not said.height or not rules_set_up.unfinished(ev):
        return None
    g = re.search(GLOO_CONNECT, said["message"][0])
    r = rank_of(said, ev)
    loopback = g["peer"].startswith(("[127.", "[::1]"))
    loop = (" (a loopback address: the host name resolves to 127.0.1.1 in /etc/hosts, so each rank "
            "advertised an address no other host reaches)" if loopback else "")
    return Verdict(Kind.INIT_STALL, "the gloo process group's init never completed: "
                   f"{who(r) if r else 'a rank'} could not connect to the peer address {g['peer']} "
                   f"({g['error']}) as gloo connected its full mesh of pairs at the process group's "
                   f"creation{loop}: {msg(said, 0, 160)}; set "
                   "GLOO_SOCKET_IFNAME to the interface the nodes share and check that no firewall blocks "
                   "the ports", r, lines(said, 3) + lines(ev.network_settings, 3))


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
