"""NCCL's error codes as a process's own call returned them, read by who raised them and where (split out of
rules_nccl_errors, whose rules call these): ncclSystemError from the process's own call (its transport's
system call failed on that host), ncclUnhandledCudaError in a runtime's word of its own named NCCL call (a
CUDA call on that process's device), ncclInvalidUsage from a collective the program called (NCCL refused
that rank's call); and ``failing``, the words for the rank that failed."""

from __future__ import annotations

import polars as pl

from tracekit import nccl_messages
from tracekit.evidence import Evidence, lines
from tracekit.meanings import says
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.rules_common import msg, rank_of, said_in_files
from tracekit.wording import who


def failing(r: list[int], ev: Evidence) -> str:
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


#: a process's set-up of its communicator, in its traceback or its runtime's words (vLLM's `while processing
#: method init_device`, pynccl's PyNcclCommunicator, ncclCommInitRank, init_process_group)
SET_UP = (r"(?i)\binit_device\b|ncclCommInit|PyNcclCommunicator|device_communicators/pynccl\.py"
          r"|init_process_group|init_distributed"
          r"|initialize_model_parallel|_new_process_group_helper")


#: a collective the program called, as its exception or traceback names it (`work = default_pg.broadcast(...)`)
COLLECTIVE_CALL = r"(?i)\b(?:broadcast|all_?reduce|all_?gather|reduce_scatter|barrier|all_?to_?all|send|recv)\b"


def refused_collective(ev: Evidence, e: pl.DataFrame, r: list[int]) -> Verdict | None:
    """ncclInvalidUsage from a collective the program called (its exception names it: `work =
    default_pg.broadcast([tensor], opts): NCCL error ... invalid usage`), with no communicator set-up in
    that file: NCCL refused that rank's own call (too many async ops, streams mixed in a group, a call
    its communicator cannot take), the program's error on that rank. At a communicator's set-up
    (ncclCommInitRank) the same code can be the ranks disagreeing: nccl_error_unexplained's UNDECIDED."""
    text = pl.concat_str(pl.col("where").fill_null(""), pl.lit(" "), pl.col("message").fill_null(""))
    if said_in_files(ev, e, SET_UP).height or not e.filter(text.str.contains(COLLECTIVE_CALL)).height:
        return None
    call = e.filter(text.str.contains(COLLECTIVE_CALL))
    return Verdict(Kind.CRASHED_RANK, f"{failing(r, ev)} failed: NCCL refused its own collective call "
                   f"({msg(call, 0, 160)}): {nccl_messages.BY_NAME['invalid_usage'].meaning}; that rank's "
                   "call is the cause (NCCL_DEBUG=WARN prints which check refused it)",
                   r, lines(call, 3) + lines(ev.exits, 2))


#: c10d's watchdog reporting an error a collective already in flight met (ProcessGroupNCCL.cpp's
#: checkForNCCLErrors: `raised the following async exception`): a peer's abort or end can be its cause
ASYNC = r"(?i)async(?:hronous)? (?:exception|error)"


def _one_process(ev: Evidence) -> bool:
    """Every rank seen, several of them, is in one process on one host (nccl-tests' `-g 4`, a
    single-process multi-GPU job): no socket joins them, NCCL's transports are that host's own (P2P,
    shared memory). One rank seen in its process says nothing of where the others are."""
    r = ev.store.ranks.filter(pl.col("rank").is_not_null())
    return (r["rank"].n_unique() > 1 and r["pid"].n_unique() == 1 and r["host"].n_unique() == 1
            and r["pid"][0] is not None)


#: the traceback frame of a communicator's init that an exception was raised under (its event's ``where``)
INIT_CALL = r"\bncclCommInit\w*|\bPyNcclCommunicator\b"


def system_call_failed(ev: Evidence, e: pl.DataFrame, r: list[int]) -> Verdict | None:
    """NCCL's code ncclSystemError (`unhandled system error`) raised by a process's own call (its
    communicator init, a barrier, DDP's first broadcast), with no NCCL WARN of anything else, no other
    rank's failure, exit, timeout or closed connection before it: a system call of NCCL's transport
    failed on that host (a socket, shared memory too small in a container, memory registration), the
    network layer's own failure. NCCL returns ncclSystemError from its socket and shared-memory calls
    (src/misc/socket.cc, src/transport/shm.cc, src/misc/shmutils.cc: `return ncclSystemError`).
    Left UNDECIDED: the watchdog's report of a collective in flight (a peer's abort can cause it), and
    every rank in one process on one host (no socket between ranks: a shared-memory or memory failure
    of that host, nothing says which)."""
    own = e.filter(~pl.col("message").fill_null("").str.contains(ASYNC)
                   & (pl.col("kind") != EventKind.WATCHDOG_ABORT))
    if own.height < e.height or _one_process(ev) or ev.timeouts.height or ev.cuda.height or ev.transport.height:
        return None
    # (raised under the program's own frame of communicator init, vLLM's PyNcclCommunicator calling
    # ncclCommInitRank, or beside its runtime's word of a set-up method, vLLM's `Error executing method
    # 'init_device'`: an init that never completed, rules_set_up.nccl_code_in_set_up's; dv28-014)
    if (own.filter(pl.col("where").fill_null("").str.contains(INIT_CALL)).height
            or said_in_files(ev, own, r"\binit_device\b").height):
        return None
    at, first = own["file"][0], own["line"][0]
    # (a process's end after the error is its consequence: mp.spawn's `process 0 terminated with exit code 1`)
    # (and an end that carries the same NCCL error is that error: mp.spawn's `process 3 raised RuntimeError`)
    if ev.exits.filter(((pl.col("file") != at) | (pl.col("line") < first)) & ~says("nccl_error")).height:
        return None
    return Verdict(Kind.TRANSPORT_ERROR, f"{failing(r, ev)}'s own NCCL call failed with a system error "
                   f"({msg(own, 0, 160)}): ncclSystemError: a system call of NCCL's transport failed on "
                   "that host (a socket it could not open or connect, shared memory too small in a "
                   "container: docker's --ipc=host or --shm-size, memory it could not register); no rank "
                   "failed, exited or timed out before it; NCCL_DEBUG=WARN prints which call and why",
                   r, lines(own, 4) + lines(ev.network_settings, 3))


#: a runtime's word that its own call of NCCL returned an error, naming the call: Horovod's
#: `ncclAllReduce failed: unhandled cuda error` (horovod/common/ops/nccl_operations.cc, its ErrorCheck:
#: `name + " failed: " + ncclGetErrorString(nccl_result)`), XLA's `NCCL operation ncclGroupEnd() failed:
#: unhandled cuda error` (xla/service/gpu/nccl_utils.cc, `"NCCL operation %s failed: %s"`)
NAMED_CALL = r"\bnccl[A-Z]\w*(?:\([^)]*\))? failed:? "


def own_call_cuda(ev: Evidence) -> Verdict | None:
    """NCCL's ncclUnhandledCudaError as the runtime's word of its own named NCCL call (not torch's
    DistBackendError, which a rank also raises after another rank's failure aborted its communicator):
    a CUDA call inside that process's NCCL call failed on its own device (the driver, P2P, memory), the
    process's own failure whichever other ranks fail alike."""
    kinds = [EventKind.CRASH, EventKind.EXCEPTION, EventKind.C10D_ERROR, EventKind.TELLING_LINE]
    e = ev.store.events.filter(pl.col("kind").is_in(kinds) & says("nccl_error") & ~says("consequence")
                               & pl.col("message").str.contains(NAMED_CALL)
                               & nccl_messages.is_one_of(("cuda_error_code",))).sort("file", "line")
    if not e.height:
        return None
    r = rank_of(e.head(1), ev)
    call = e["message"].str.extract(r"\b(nccl[A-Z]\w*)", 1)[0]
    said = e["message"].str.extract(r"\b(nccl[A-Z]\w*(?:\([^)]*\))? failed:? [^.;\n]{0,60})", 1)[0]
    return Verdict(Kind.CRASHED_RANK, f"{failing(r, ev)} failed: a CUDA call inside its own {call} failed "
                   f"(`{said}`, in: {msg(e, 0, 120)}): {nccl_messages.BY_NAME['cuda_error_code'].meaning} (its device, "
                   "driver or GPU peer access, not the network); NCCL_DEBUG=WARN prints the CUDA error (check "
                   "the driver matches the CUDA of the build, and NCCL_P2P_DISABLE=1 where the GPUs' peer "
                   "access fails)", r, lines(e, 4) + lines(ev.exits, 2))


#: where NCCL connects a rank to its peers (its transports' connect, run inside ncclTransportP2pSetup): a CUDA
#: call there maps or writes a connection's buffers. NVIDIA/nccl v2.21.5-1 src/transport/p2p.cc:275
#: (ncclP2pImportShareableBuffer: `CUDACHECK(cudaIpcOpenMemHandle(devMemPtr, ipcDesc->devIpc, ...))`, the P2P
#: transport importing its peer GPU's buffer); v2.18.3-1 src/transport.cc:153 (ncclTransportP2pSetup: the
#: cudaMemcpyAsync of a connector after `transportComm->connect`); src/proxy.cc (the proxy thread's connect
#: of the same transports). Not transport/nvls.cc (NVLink SHARP's multicast memory of one node, no peer's
#: connection) nor include/alloc.h, shm.h (allocations: a device or host memory failure)
# (as NCCL prints it, `transport/p2p.cc:275`; RCCL's with its build's path, `.../hipify/src/transport/p2p.cc:220
# NCCL WARN hipIpcGetMemHandle failed`, stays a CUDA failure: the dev labels split on it, dv19-008 against
# nccl-036 and nccl-037, s29)
PEER_CONNECT = r"^(?:transport/p2p|transport|proxy)\.cc:\d+$"


def peer_connect_cuda_failed(ev: Evidence) -> Verdict | None:
    """TRANSPORT_ERROR where NCCL's WARN of a CUDA failure is in its code that connects a rank to its
    peers (``PEER_CONNECT``): the transport's set-up between the GPUs failed (CUDA IPC between processes
    that cannot share memory: another container or PID namespace, GPUs not visible to both, peer access
    refused), which a rank's own error would not be."""
    at = ev.cuda.filter((pl.col("kind") == EventKind.NCCL_WARN)
                        & pl.col("where").fill_null("").str.contains(PEER_CONNECT))
    if not at.height or at.height != ev.cuda.filter(pl.col("kind") == EventKind.NCCL_WARN).height:
        return None
    r = rank_of(at, ev)
    first = at.row(0, named=True)
    return Verdict(Kind.TRANSPORT_ERROR, f"NCCL's transport set-up between GPUs failed on {failing(r, ev)}: "
                   f"{first['where']}: {first['message']} (a CUDA call of the code that connects a rank to "
                   "its peers: the P2P transport importing a peer GPU's buffer over CUDA IPC, or a "
                   "connector's set-up after its connect): the processes cannot share GPU memory (separate "
                   "containers or PID namespaces, GPUs not visible to both, peer access refused); "
                   "NCCL_P2P_DISABLE=1 (or NCCL_P2P_LEVEL) moves the traffic to shared memory or the network",
                   r,
                   lines(at, 3) + lines(ev.exits, 2))


#: NCCL's error codes that say one of NCCL's own checks refused the rank's call or its state (ncclGetErrorString,
#: src/init.cc: `internal error - please report this issue`, `invalid usage`, `invalid argument`), never a byte
#: on the wire: where NCCL's own lines say nothing of the network either, the failure is that rank's
OWN_CODES = ("internal_error", "invalid_usage", "invalid_argument")


def own_code_reported(ev: Evidence, t: pl.DataFrame, network: pl.DataFrame) -> Verdict | None:
    """The program reports one of ``OWN_CODES`` (torch's `NCCL error in: ..., internal error - please report
    this issue to the NCCL developers` then `ncclInternalError: Internal check failed.` and `Last error:`
    `Trying to launch too many work items: max 512, have 513`; `invalid usage` then `Error : Invalid peer 8,
    nRanks 8`) and none of NCCL's lines ``t`` is the network's (``network``: a WARN of a transport source, a
    socket or verbs failure, a peer that dropped): NCCL's check on that rank failed, CRASHED_RANK of the rank
    that raised it. (A set-up's failure of the same shape is re-kinded as set-up by set_up_rekind.)"""
    e = ev.nccl_errors
    codes = e.filter(nccl_messages.is_one_of(OWN_CODES))
    if not codes.height or network.height or not t.height:
        return None
    r = rank_of(codes.head(1), ev) or t["rank"].drop_nulls().unique().sort().to_list()
    name = nccl_messages.message_name()
    code = codes.select(name)[0, 0]
    first = t.row(0, named=True)
    return Verdict(Kind.CRASHED_RANK, f"{failing(r, ev)} failed in its own NCCL call: "
                   f"{nccl_messages.BY_NAME[code].meaning.split(':')[0]} ({msg(codes, 0, 120)}); NCCL's last "
                   f"error: {first['message'][:160]}: NCCL's own check refused the call on that rank (its "
                   "arguments, a peer or size it cannot take, too many operations in one group), not the "
                   "network; the check's words name what to change (NCCL_DEBUG=WARN on every rank shows it "
                   "and where)", r, lines(t, 3) + lines(codes, 2) + lines(ev.exits, 2))
