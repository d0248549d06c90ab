"""NCCL's own errors, read in their order of causation: a call NCCL refused (its argument or usage
check), a bootstrap or a peer address that never formed a communicator, NCCL's error code with the
network's reason, NCCL's WARN of its own code (not the network's: which lines are which, rules_nccl_own),
the transport's errors, and NCCL's unwind lines alone. Split out of rules_failure (which keeps CUDA,
crashes, rendezvous and stores)."""

from __future__ import annotations

import re

import polars as pl

from tracekit import nccl_messages, remote_error, rules_gone, rules_set_up
from tracekit.evidence import Evidence, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.parsers.pyspy import RAISED
from tracekit.rules_common import msg, rank_of, said_in_files, who_or
from tracekit.sources import collect
from tracekit.rules_nccl_own import PEER_DROPPED, network_lines, own_code, own_code_failed
from tracekit.rules_nccl_codes import (SET_UP, failing, own_call_cuda, own_code_reported,  # noqa: F401
                                       refused_collective, system_call_failed)
from tracekit.wording import who


def _one_gpu_shared(ev: Evidence) -> Verdict | None:
    """Processes of one host whose communicators of one size sit on one GPU (the same busId in NCCL's
    `comm 0x.. rank 1 nranks 2 cudaDev 0 busId 19000` lines), none of which completed init: NCCL's check of
    a duplicate GPU (src/init.cc, ncclInvalidUsage before 2.30) refused them, whether or not its WARN is
    in the excerpt: the launch gave two ranks one device."""
    c = ev.store.comms.filter(pl.col("bus_id").is_not_null() & pl.col("host").is_not_null())
    if not c.height:
        return None
    done = c.filter(pl.col("state") == "init_complete").select("host", "pid").unique()
    c = c.join(done, on=["host", "pid"], how="anti").with_columns(
        pl.coalesce("global_rank", "rank").alias("r"))
    dup = (c.group_by("host", "bus_id", "nranks").agg(pl.col("pid").n_unique().alias("n"),
                                                    pl.col("r").drop_nulls().unique().sort().alias("ranks"),
                                                    pl.col("cuda_dev").first())
           .filter(pl.col("n") > 1).sort("host", "bus_id"))
    if not dup.height:
        return None
    d = dup.row(0, named=True)
    shown = c.filter((pl.col("host") == d["host"]) & (pl.col("bus_id") == d["bus_id"])).sort("file", "line")
    shown = shown.with_columns(pl.format("comm {} rank {} nranks {} cudaDev {} busId {} ({})", "comm",
                                         "rank", "nranks", "cuda_dev", "bus_id", "state").alias("message"))
    ranks = who(d["ranks"]) if d["ranks"] else f"{d['n']} processes"
    return Verdict(Kind.CRASHED_RANK, f"{ranks} of one communicator (nranks {d['nranks']}) run on one GPU: "
                   f"busId {d['bus_id']} (cudaDev {d['cuda_dev']}) on {d['host']}, and no communicator "
                   "completed init: NCCL refuses two ranks on one device (Duplicate GPU detected, "
                   "ncclInvalidUsage): the launch gave them the same device (no "
                   "torch.cuda.set_device(local_rank), CUDA_VISIBLE_DEVICES alike on both, a global rank "
                   "used as a device index)", d["ranks"], lines(shown, 4) + lines(ev.crashes, 2))


def refused_call(ev: Evidence) -> Verdict | None:
    """NCCL refused a rank's own call: a WARN that says which (two ranks on one GPU, a CUDA-graph capture
    it cannot take, a buffer on another device), or the code alone (ncclInvalidUsage, ncclInvalidArgument)
    where no other NCCL WARN says something else. NCCL returns these before it sends anything
    (src/init.cc, misc/strongstream.cc, misc/argcheck.cc): the program's error on that rank, a crash there;
    the others' errors and waits after it are its consequence."""
    nccl = pl.concat([ev.kinds(EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR), ev.nccl_errors],
                     how="diagonal_relaxed").unique(["file", "line"], maintain_order=True)
    said = nccl.filter(nccl_messages.is_one_of(nccl_messages.OWN_FAILURE_SAID)).sort("file", "line")
    if not said.height and (shared := _one_gpu_shared(ev)) is not None:
        return shared
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
    t = ev.transport.sort("line")
    dropped = ""
    if not t.height and ev.nccl_errors.height:
        t = _dropped_connection(ev)
        raised = ev.kinds(EventKind.STACK).filter((pl.col("thread") == RAISED)
                                                  & ~pl.col("rank").is_in(t["rank"].drop_nulls().implode())
                                                  & pl.col("rank").is_not_null())
        if t.height and raised.height:  # (another rank raised: its end, cut from the excerpt, may be why)
            return _closed_by_peer(ev, t, raised)
        dropped = ("; no line says the peer ended (no crash, exit or timeout): the connection dropped, on "
                   "the network or with a peer that died without a word (the peer's log decides which)")
    if not (ev.nccl_errors.height and t.height):
        return None
    if (local := rules_gone.local_peer_closed(ev, t)) is not None:
        return local  # (a process of the same node ended: no network in it; waits s28)
    own = own_code(t)
    if own.height == t.height:  # (NCCL's WARNs are all of its own code, a topology or config it read: no
        return own_code_failed(ev, own)  # network failed; that rank's call or init did)
    if not dropped and (checked := own_code_reported(ev, t, network_lines(t))) is not None:
        return checked  # (NCCL's own check's code, and no line of the network: waits s28)
    r = rank_of(ev.nccl_errors.head(1), ev)
    said = ev.launched_with
    return Verdict(Kind.TRANSPORT_ERROR, f"NCCL failed on {who_or(t)}: "
                   f"{msg(t, 0, 160)}" + (f" (launched with {said})" if said else "")
                   + f"; {who(r) if r else 'a rank'} then failed: {msg(ev.nccl_errors, 0, 120)}" + dropped,
                   sorted(set(t["rank"].drop_nulls().to_list()) | set(r)),
                   lines(t, 3) + lines(ev.network_settings, 3) + lines(ev.nccl_errors, 2))


def _dropped_connection(ev: Evidence) -> pl.DataFrame:
    """NCCL's WARN that its peer closed or reset the connection, where nothing else in the logs says
    why (no crash, exit, timeout or CUDA error of the peer): a consequence of the peer's end where that
    end is seen, else all there is to say (the connection dropped: the network's, or a peer that died
    without a word)."""
    if ev.crashes.height or ev.exits.height or ev.timeouts.height or ev.cuda.height:
        return ev.transport.clear()
    return ev.kinds(EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR).filter(
        pl.col("message").str.contains(PEER_DROPPED)).sort("line")


def _closed_by_peer(ev: Evidence, closed: pl.DataFrame, raised: pl.DataFrame) -> Verdict:
    """NCCL's error code, and its WARN that the peer closed or reset the connection, where another rank's
    traceback is seen with its exception cut (``raised``): that rank's end may be the close, or the link
    dropped; neither line says which, so UNDECIDED, naming the peer the WARN names and the rank that raised.
    (With no other rank's word at all, the dropped connection is what failed: nccl_failure says so.)"""
    said = nccl_messages.meaning_of(closed["message"][0] or "")
    peer = said[1].get("peer") if said and said[0].name == "peer_closed" else None
    r = rank_of(ev.nccl_errors.head(1), ev)
    of = f"its peer {peer}" if peer else "its peer"
    return Verdict(Kind.UNDECIDED, f"NCCL failed on {who_or(closed)}: {of} closed the connection "
                   f"({msg(closed, 0, 160)}); {who(r) if r else 'a rank'} then failed: "
                   f"{msg(ev.nccl_errors, 0, 120)}; {who(raised['rank'].unique().sort().to_list())} raised "
                   "(a traceback whose exception the excerpt cut): no line says whose end came first, that "
                   "rank's (the close its consequence) or the link's; to decide: collect the log of the rank "
                   f"on {peer or 'that peer'} and of {who(raised['rank'].unique().sort().to_list())} (their "
                   "last lines, exit codes or signals) and those hosts' dmesg",
                   sorted(set(closed["rank"].drop_nulls().to_list()) | set(r)),
                   lines(closed, 3) + lines(ev.nccl_errors, 2) + lines(raised, 2))


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
        return Verdict(Kind.CRASHED_RANK, f"{failing(r, ev)} failed in its own NCCL call "
                       f"({msg(e, 0, 160)}): {m.meaning}; NCCL_DEBUG=WARN prints which argument or call "
                       "(check each rank's torch.cuda.set_device(local_rank) and CUDA_VISIBLE_DEVICES)",
                       r, lines(e, 4) + lines(ev.exits, 2))
    if said is not None and said[0].name == "remote_error" and (net := remote_error.nccl_tests_network(ev, e)):
        return net  # (crash34: nccl-tests' one failing process, every other rank listed and silent)
    if said is not None and said[0].name == "invalid_usage":
        refused = refused_collective(ev, e, r)
        if refused is not None:
            return refused
    means = f": {said[0].meaning}" if said is not None else ""
    # NCCL's own last error (the line under `Last error:`, or a WARN that alone decides nothing): quoted
    # with what it means, though it does not decide the kind
    last = ev.kinds(EventKind.NCCL_WARN).join(ev.benign.select("file", "line"), on=["file", "line"],
                                               how="anti").sort("file", "line")
    if said is not None and said[0].name == "system_error" and not last.height:
        system = system_call_failed(ev, e, r)
        if system is not None:
            return system
    if not last.height and (topo := _unwound_through_topology(ev, e, r)) is not None:
        return topo
    why = "no NCCL WARN line says why"
    if last.height:
        known = nccl_messages.meaning_of(last["message"][0] or "")
        why = (f"NCCL's last error: `{msg(last, 0, 160)}`" + (f" ({known[0].meaning})" if known else "")
               + ", which alone does not say whose fault it is")
    # (not NCCL's refusal of the program's own call, invalid usage: which argument only its WARN says, and dev
    # labels ncclCommInitRank's `invalid usage` alone undecided, llm-042)
    in_set_up = (None if said is not None and said[0].name == "invalid_usage"
                 else rules_set_up.nccl_code_in_set_up(ev, e, r, means, why))
    if in_set_up is not None:
        return in_set_up
    if not last.height and (own := _own_check_refused(ev, e, r, said, means)) is not None:
        return own
    return Verdict(Kind.UNDECIDED, f"NCCL failed on {failing(r, ev)} ({msg(e, 0, 160)}){means}; "
                   f"{why}: rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) and collect every rank's "
                   "output", r, lines(e, 4) + lines(last, 2) + lines(ev.exits, 2))


#: NCCL's code of its own check on the calling rank (ncclGetErrorString: `internal error - please report this issue
#: to the NCCL developers`): never a byte on the wire nor a peer's going away (not `invalid usage`: ranks that
#: disagree get it too, and only its WARN says which; test_failures_refused)
OWN_CHECKS = ("internal_error",)
#: the same codes as torch's ProcessGroupNCCL words them (`NCCL error in: ...ProcessGroupNCCL.cpp:1275, internal error,
#: NCCL version 2.14.3`) and NCCL's own names of them, in any of the error's lines
OWN_CHECK_WORDS = r", internal error, NCCL version|\bncclInternalError\b"
#: the communicator's own init call (never a process group's set-up around a first collective: dv14-049's
#: all_reduce in vLLM's _init_distributed_environment raised NCCL's check, labelled crashed-rank)
COMM_INIT = r"(?i)ncclCommInit|PyNcclCommunicator|device_communicators/pynccl\.py|\binit_device\b"


def _own_check_refused(ev: Evidence, e: pl.DataFrame, r: list[int], said, means: str) -> Verdict | None:
    """CRASHED_RANK where NCCL's code is its own internal check on the calling rank (``OWN_CHECKS``), raised by the
    program's call through ProcessGroupNCCL or a plugin (``ProcessGroupNCCL.cpp:1275, internal error``), with no
    NCCL WARN, no transport error, no timeout and no communicator-init call (``COMM_INIT``: ncclCommInitRank,
    PyNcclCommunicator, init_device) in its files, on a communicator that had worked before (``_used_before``:
    at its first collective, its lazy set-up may be what failed): that rank's own call failed NCCL's check (s32:
    dev label dv14-049 crashed-rank; dv6-030, dv9-004 accept it; dv2-033's init_device stays set-up's)."""
    own = (said is not None and said[0].name in OWN_CHECKS) or e["message"].fill_null("").str.contains(
        OWN_CHECK_WORDS).any()
    if (not own or ev.transport.height or ev.timeouts.height
            or said_in_files(ev, e, COMM_INIT).height or not _used_before(ev, e)):
        return None
    return Verdict(Kind.CRASHED_RANK, f"{failing(r, ev)} failed in its own NCCL call: {msg(e, 0, 160)}{means}; "
                   "NCCL's own check refused the call on that rank (no line is the network's or a peer's going "
                   "away, and no communicator init is named), so that rank's call is the failure; NCCL_DEBUG=WARN "
                   "prints the check that failed (a device shared by two ranks, a bad argument, a port in use)",
                   r, lines(e, 4) + lines(ev.exits, 2))


def _used_before(ev: Evidence, e: pl.DataFrame) -> bool:
    """Whether the communicator had worked before its call failed NCCL's check: the job's steps advanced, or the
    failing call is past the group's first collective (``SeqNum=N``, N > 1). torch creates a process group's NCCL
    communicator lazily, inside its first collective: a check that fails there may be the communicator's set-up
    as well as the rank's own call (experts split: a set-up failure, a rank's failure), so it stays undecided."""
    seqs = e["message"].fill_null("").str.extract(r"SeqNum=(\d+)", 1).cast(pl.Int64, strict=False).drop_nulls()
    if "seq" in e.columns:
        seqs = pl.concat([seqs, e["seq"].drop_nulls().cast(pl.Int64)])
    return bool(ev.progressed) or bool(seqs.len() and seqs.max() > 1)


def _unwound_through_topology(ev: Evidence, e: pl.DataFrame, r: list[int]) -> Verdict | None:
    """INIT_STALL where NCCL's error code reached the program after NCCL unwound, in the same file, through its
    topology code (``TOPOLOGY``: `graph/paths.cc:260 -> 3`, `transport/p2p.cc:123 -> 3`, `graph/paths.cc:588
    -> 3`, `init.cc:1014 -> 3`; NVIDIA/nccl v2.21.5-1 src/init.cc:1014 is initTransportsRank's
    ncclTopoComputePaths, which checks every GPU pair's P2P reach), with no WARN and no communicator that
    completed init or collective: the communicator's init failed in its topology and path computation."""
    first = e.sort("file", "line").row(0, named=True)
    chain = ev.kinds(EventKind.NCCL_UNWIND).filter((pl.col("file") == first["file"])
                                                  & (pl.col("line") < first["line"])).sort("line")
    topo = chain.filter(pl.col("message").str.contains(r"(?:^|/)graph/\w+\.cc:\d+ -> \d+"))
    if not topo.height or ev.store.comms.filter(pl.col("state") == "init_complete").height \
            or collect(ev.store.collectives.lazy().select(pl.len())).item():
        return None
    steps = chain["message"].str.extract(r"^(\S+:\d+ -> \d+)", 1).drop_nulls().to_list()
    path = ", ".join(steps[:6]) + (", ..." if len(steps) > 6 else "")
    return Verdict(Kind.INIT_STALL, f"NCCL's communicator init failed on {failing(r, ev)}: NCCL unwound "
                   f"through its topology code (`{path}`: graph/, which runs inside ncclCommInitRank's "
                   f"initTransportsRank, computing the GPUs' paths and P2P reach), then {msg(e, 0, 160)}; no "
                   "communicator completed init; NCCL_DEBUG=INFO prints the P2P check that failed (a "
                   "container or VM that hides the GPUs' PCI topology or forbids P2P: NCCL_P2P_DISABLE=1 to "
                   "confirm)",
                   r, lines(topo, 2) + lines(e, 2))


def cuda_inside_nccl(ev: Evidence) -> Verdict | None:
    """NCCL's error code says a CUDA call inside it failed (`unhandled cuda error`, ncclUnhandledCudaError:
    torch's, vLLM's and SGLang's pynccl quote it) while the process set up its communicator (a set-up
    frame, or its runtime's word of the set-up failing, in the same file), and no network error or timeout
    came with it: that rank's init failed (its device, its driver, its P2P/NVLS set-up), never the
    network's. The same code alone, mid-run, decides nothing without NCCL's WARN (nccl_error_unexplained)."""
    if ev.transport.height or ev.timeouts.height:
        return None
    e = ev.nccl_errors.filter(nccl_messages.is_one_of(("cuda_error_code",)))
    said = said_in_files(ev, e, SET_UP)
    if not (e.height and said.height):
        return own_call_cuda(ev)
    r = rank_of(e.head(1), ev)
    return Verdict(Kind.CRASHED_RANK, f"{failing(r, ev)} failed: a CUDA call inside its NCCL call failed "
                   f"({msg(e, 0, 160)}) as it set up its communicator ({msg(said, 0, 100)}): "
                   f"{nccl_messages.BY_NAME['cuda_error_code'].meaning}; NCCL_DEBUG=WARN "
                   "prints the CUDA error (check the driver matches the CUDA of the build, each rank's "
                   "device, and NCCL_P2P_DISABLE=1 or NCCL_NVLS_ENABLE=0 where the GPUs' peer access fails)",
                   r, lines(e, 4) + lines(said, 1) + lines(ev.exits, 2))


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


#: what says the data moved: a figure measured over the transport, a step, a completed test or a clean end
MOVED = (EventKind.BANDWIDTH, EventKind.COMM_OP, EventKind.STEP, EventKind.PROGRESS, EventKind.TEST_PASSED,
         EventKind.CLEAN_EXIT, EventKind.TRAIN_END, EventKind.PROGRAM_END)


def went_on(ev: Evidence, t: pl.DataFrame) -> bool:
    """Every transport line is a warning (an NCCL or plugin WARN, libfabric's ``<warn>``, a connect NCCL
    retries) and, in each file that has them, the data moved after the last of them (a bandwidth row, a step,
    a completed test, a clean end): the warnings did not stop the transport (a retry that then connects, a
    provider's optional library absent), so they are not its failure (s29: cause, not noise)."""
    if not t.height or t.filter(~pl.col("kind").is_in([EventKind.NCCL_WARN, EventKind.CONNECT_RETRY])).height:
        return False
    last = t.group_by("file").agg(pl.col("line").max().alias("_last"))
    moved = ev.kinds(*MOVED).join(last, on="file").filter(pl.col("line") > pl.col("_last"))
    return moved["file"].n_unique() == last.height


def transport_error(ev: Evidence) -> Verdict | None:
    """The network transport reported errors (not consequences of a peer's exit, not benign)."""
    t = ev.transport.sort("line")
    if not (t.filter(pl.col("kind") != EventKind.NCCL_WARN).height or (t.height and not ev.missing)):
        return None
    if went_on(ev, t):
        return None
    if (local := rules_gone.local_peer_closed(ev, t)) is not None:
        return local
    gone = rules_gone.server_gone(ev, ev.kinds(EventKind.TRANSPORT_ERROR, EventKind.C10D_ERROR,
                                               EventKind.NCCL_WARN, EventKind.EXCEPTION).sort("line"))
    if gone is not None:
        return gone
    own = own_code(t)
    if own.height == t.height:  # (every WARN is of NCCL's own code: no network in it)
        return own_code_failed(ev, own, in_init=True)
    if t["where"][0] == "verbs set-up":  # (parsers/runtimes/verbs: a verbs user could not set RDMA up)
        r = t["rank"].drop_nulls().unique().sort().to_list()
        ended = pl.concat([ev.crashes.select("rank", "message"), ev.exits.select("rank", "message")])
        gone = ended["rank"].drop_nulls().unique().sort().to_list()
        after = (f"; {who(gone) if gone else 'a process'} then ended ({msg(ended)}): its consequence"
                 if ended.height else "")
        return Verdict(Kind.TRANSPORT_ERROR, f"{msg(t)}: the RDMA transport never came up on {failing(r, ev)} "
                       "(a memory region the NIC would not register: GPU memory needs nvidia-peermem or dma-buf "
                       "support, host memory a locked-memory limit, `ulimit -l unlimited`; a queue pair it would "
                       f"not create or move){after}; check with ibv_devinfo, `lsmod | grep peermem` and the same "
                       "test between two hosts", r or gone, lines(t, 3) + lines(ev.crashes, 1) + lines(ev.exits, 1))
    said = ev.launched_with
    return Verdict(Kind.TRANSPORT_ERROR, f"{t.height} transport error line(s), first: {msg(t)}"
                   + (f" (launched with {said})" if said else ""),
                   t["rank"].drop_nulls().unique().sort().to_list(), lines(t) + lines(ev.network_settings, 3))
