"""What NCCL's own WARN and INFO messages mean, as data, read from NCCL's source (issue 33).

Each entry: a name, a pattern on the message (the text after ``NCCL WARN`` / ``NCCL INFO``, as
``parsers/nccl.py`` cuts it), what it means, the verdict kinds it points to (by ``Kind`` name, most
likely first: this module imports no analysis), and where NCCL writes it: ``file:line`` of
github.com/NVIDIA/nccl at 5067397c (master, nccl4py v0.3.1 merge); patterns also take the wording of
older releases where it differed (said per entry); a net plugin's own WARN (NCCL prints it with the
plugin's file:line) says ``owner/repo file:line`` of the plugin's source instead. Named groups keep the
message's numbers (sizes, peer).

The point of reading messages for their meaning: ``NET/Socket : peer ... message truncated : receiving
64 bytes instead of 32`` is NCCL saying two ranks posted different sizes (an all_to_all with other
splits, a send/recv pair of other sizes), a MISMATCH, not the network failing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from tracekit.parsers import any_of


@dataclass(frozen=True)
class Message:
    name: str
    pattern: str
    meaning: str
    points_to: tuple[str, ...]  # verdict kinds by name (tracekit's Kind), most likely first
    source: str  # where NCCL writes it: NVIDIA/nccl file:line


_PEER = r"(?P<peer>\S+)"
MISMATCH, INIT, NET, CRASH = "MISMATCH", "INIT_STALL", "TRANSPORT_ERROR", "CRASHED_RANK"
UNDECIDED = "UNDECIDED"  # a message that alone decides no kind
MESSAGES: tuple[Message, ...] = (
    # sizes that differ between ranks
    Message("socket_truncated",
            rf"NET/\w+ ?: (?:peer {_PEER} )?message truncated ?: "
            r"receiving (?P<got>\d+) bytes instead of (?P<expected>\d+)",
            "the peer sent more bytes than this rank posted to receive: the ranks called the collective or "
            "send/recv with different sizes (all_to_all splits, a send/recv pair, NCCL_PROTO/NCCL_ALGO "
            "set differently)",
            (MISMATCH,), "src/transport/net_socket.cc:636"),
    Message("bootstrap_truncated",
            r"Message truncated ?: received (?P<got>[\d,]+) bytes instead of (?P<expected>[\d,]+)",
            "a bootstrap message (the out-of-band socket that sets up a communicator or a p2p connection, "
            "never a collective's data) of another size than expected: the ranks disagree on the set-up "
            "(NCCL versions or builds that differ, a rank of another job on the same id): the communicator "
            "or connection never completes",
            (INIT, MISMATCH), "src/bootstrap.cc:224 (also :236, :249)"),
    Message("version_mismatch",
            r"Mismatched NCCL version detected ?: rank (?P<rank_a>\d+) version (?P<version_a>\d+) "
            r"rank (?P<rank_b>\d+) version (?P<version_b>\d+)",
            "ranks of one communicator loaded different NCCL versions", (MISMATCH,), "src/init.cc:1043"),
    Message("collective_check_mismatch",
            r"Mismatched collective detected, please check your collective calls at and around rank "
            r"(?P<rank>\d+)",
            "NCCL 2.4's own check: this rank (the rank named is the writer's own) called another collective, "
            "or another size, than its peers at this point", (MISMATCH,),
            "src/init.cc:1247 (NCCL 2.4.x only, at v2.4.8-1; the check went in 2.5)"),
    Message("bootstrap_root_mismatch", r"Bootstrap Root ?: mismatch in info from procs",
            "ranks joined one unique id with different sizes: launches that disagree on the world size",
            (INIT, MISMATCH), "src/bootstrap.cc:335"),
    Message("rank_checked_in_twice",
            r"Bootstrap Root ?: rank (?P<rank>\d+) of (?P<nranks>\d+) ranks has already checked in",
            "two processes claim one rank (a duplicated RANK, two jobs on one NCCL unique id)",
            (INIT, MISMATCH), "src/bootstrap.cc:348"),
    Message("net_count_mismatch", r"Detected mixed local Net device counts across ranks",
            "nodes see different numbers of NICs: the communicator's setup stops", (INIT,),
            "src/init.cc:1339"),
    Message("ib_link_mismatch", r"NET/IB ?: Remote \S+ device is incompatible with the local",
            "the two ends' NICs are of another link layer (IB vs RoCE): select one type with NCCL_IB_HCA",
            (NET,), "src/transport/net_ib/connect.cc:1034 (also :1535)"),
    Message("buffer_on_other_device",
            r"(?P<op>\w+) ?: (?P<buffer>\w+) allocated on device (?P<device>\d+) "
            r"mismatchs with NCCL device (?P<nccl_device>\d+)",
            "a tensor on another GPU than the communicator's: a wrong torch.cuda.set_device", (CRASH,),
            "src/misc/argcheck.cc:24"),
    # the network
    Message("ib_completion_error",
            rf"NET/IB ?: Got completion from peer {_PEER} with "
            r"(?:status=(?P<status>\w+)(?:\((?P<code>\d+)\))?|error (?P<error>\d+))",
            "an InfiniBand/RoCE work request failed (status 12, IBV_WC_RETRY_EXC_ERR: the peer stopped "
            "answering; a link or a switch, or the peer process died)", (NET, CRASH),
            "src/transport/net_ib/p2p.cc:688 (2.18-2.22: `with error %d, opcode %d, len %d, vendor err %d`)"),
    # (s33: the FastSocket net plugin's advisories, google/nccl-fastsocket, not NCCL's own: it steers each data
    # socket's flow to a receive queue and CPU, retrying the match up to a limit; past it, or where the CPU is not
    # found, it warns and uses the socket as it is: the socket is connected (its INFO `NET/FastSocket : Connected
    # after 1000 retries`, `Accepted data socket 3` follow), nothing failed; dev dv35-007 labelled healthy)
    Message("fastsocket_steering",
            r"^Maximum retry reached for (?:accept|connect) \d+\.?$|^Cannot get incoming CPU\.?$",
            "the FastSocket plugin could not steer a data socket's flow to its queue or CPU and uses it as "
            "it is (the socket is connected): a performance advisory, not a failure", (UNDECIDED,),
            "google/nccl-fastsocket net_fastsocket.cc:674 (the WARNs' own file:line: :674, :785 `Maximum retry "
            "reached for connect/accept %d`, :652, :765 `Cannot get incoming CPU`)"),
    Message("connect_failed", rf"(?:\w+: )?[Cc]onnect to {_PEER} failed ?: (?P<error>.+)",
            "a TCP connect to a peer failed outright (no route, wrong interface)", (NET,),
            "src/os/linux.cc:302 (before 2.19: `socketStartConnect: Connect to %s failed : %s`)"),
    Message("connect_retries_exhausted",
            rf"(?:\w+: )?connect to {_PEER} returned (?P<error>.+?), exceeded error retry count",
            "a peer never accepted the connection after every retry: it is unreachable or not listening",
            (NET, INIT), "src/os/linux.cc:288"),
    Message("connect_retrying",
            rf"(?:\w+: )?connect to {_PEER} returned (?P<error>.+?), retrying"
            r"|Call to connect returned (?P<error_old>.+?), retrying",
            "a connect refused or timed out, retried (a peer not listening yet is normal at start)",
            (NET,), "src/os/linux.cc:293 (INFO)"),
    Message("peer_closed", rf"Connection closed by remote peer(?: {_PEER})?",
            "the peer closed its socket: its process exited or was killed, or the link dropped",
            (CRASH, NET), "src/misc/socket.cc:58"),
    Message("socket_call_failed",
            rf"(?:\w+: )?Call to (?P<call>recv from|send to) {_PEER} failed ?: (?P<error>.+)",
            "a socket send/recv to a peer failed (reset, broken pipe)", (NET, CRASH), "src/os/linux.cc:362"),
    Message("no_socket_interface",
            r"Bootstrap ?: no socket interface found|NET/Socket ?: No usable listening interface",
            "no network interface matches NCCL_SOCKET_IFNAME (or none is up)", (INIT, NET),
            "src/bootstrap.cc:126 (also :120)"),
    Message("socket_bad_family",
            r"ncclSocketInit: connecting to address .*with family (?P<family>\d+) is neither AF_INET",
            "NCCL was handed a peer address that is no network address at all (family 1 is AF_UNIX; an "
            "empty, never-filled handle): NCCL's own state or the program's call order (a send before the "
            "peer's matching receive, outside a group), not the network", (UNDECIDED,),
            "src/misc/socket.cc:585"),
    Message("no_transport", r"No transport found for rank (?P<rank>\d+)\[\w+\] -> rank (?P<peer_rank>\d+)",
            "NCCL found no way (P2P, SHM, NET) to reach a peer: transports disabled by NCCL_*_DISABLE",
            (NET,), "src/transport.cc:39"),
    # a rank's own failure
    Message("cuda_failure", r"Cuda failure (?:\d+ )?'(?P<error>[^']*)'",
            "a CUDA call inside NCCL failed on this rank", (CRASH,),
            "src/include/checks.h:18 (cudawrap.h:37 adds the number)"),
    Message("duplicate_gpu",
            r"Duplicate GPU detected ?: rank (?P<rank>\d+) and rank (?P<peer_rank>\d+) both on CUDA device "
            r"(?P<device>\w+)",
            "two ranks of one communicator run on one GPU of one node (NCCL compares the bus ids the ranks "
            "report): the launch gave two processes the same device (no torch.cuda.set_device(local_rank), "
            "CUDA_VISIBLE_DEVICES alike on both, a global rank used as a device index); NCCL refuses the "
            "communicator with ncclInvalidUsage: the program's own error on those ranks, not the network",
            (CRASH, INIT),
            "src/init.cc:974 (at v2.29.7, `ret = ncclInvalidUsage`; 2.30 lets ranks share a GPU)"),
    Message("graph_capture_unsupported", r"NCCL cannot be captured in a graph",
            "the program captured an NCCL call in a CUDA graph (vLLM's and SGLang's CUDA graphs) with an "
            "NCCL built for CUDA < 11.3 or a driver older than R465: ncclInvalidUsage on that rank; run "
            "eager (vLLM --enforce-eager) or install an NCCL and a driver that support capture",
            (CRASH,), "src/misc/strongstream.cc:91 (`return ncclInvalidUsage`; :53 in 2.18-2.21)"),
    # (failures, issue 31): a config attribute ncclCommInitRankConfig refuses (blocking, cgaClusterSize,
    # min/max channels, splitShare, ...): `ret = ncclInvalidArgument` before any connection is made
    Message("invalid_config",
            r"Invali[dg] config (?P<attribute>[\w/ ]+?) attribute value (?P<value>-?\d+(?:/-?\d+)?)",
            "the program handed ncclCommInitRankConfig a config attribute NCCL refuses (an ncclConfig_t "
            "not set from NCCL_CONFIG_INITIALIZER, or a value out of range: a library built against another "
            "NCCL than the one loaded): ncclInvalidArgument at that rank's communicator init, not the "
            "network",
            (CRASH, INIT), "src/init.cc:2314 (blocking; :2320-2404 the other attributes)"),
    Message("cuda_alloc_failed",
            r"Failed to CUDA (?:malloc|calloc|host alloc)(?: async)? (?P<bytes>\d+) bytes",
            "NCCL could not allocate its buffers: the GPU is out of memory", (CRASH,),
            "src/include/alloc.h:462 (also :159, :493, :520)"),
    Message("comm_aborted", r"Comm 0x[0-9a-fA-F]+ is in abort state",
            "the communicator was aborted (by the watchdog after a timeout, or another error): a consequence",
            (CRASH,), "src/proxy.cc:1371"),
    # ncclGetErrorString: the words torch's exceptions quote (`NCCL error in: ..., <these words>`)
    Message("remote_error", r"remote process exited or there was a network error|ncclRemoteError",
            "ncclRemoteError: a peer's process exited, or the network between them failed",
            (CRASH, NET), "src/init.cc:3430"),
    Message("system_error", r"unhandled system error|ncclSystemError",
            "ncclSystemError: a system call failed (sockets, shared memory too small in a container)",
            (NET,), "src/init.cc:3422"),
    Message("invalid_usage",
            r"invalid usage \(run with NCCL_DEBUG=WARN|ncclInvalidUsage|, invalid usage, NCCL version",
            "ncclInvalidUsage: NCCL refused the program's call on this rank (two ranks on one GPU, a CUDA "
            "graph capture it cannot take, or ranks that disagree: versions, sizes, the world size; the WARN "
            "before it says which), raised before any data went over the network",
            (CRASH, MISMATCH), "src/init.cc:3428"),
    Message("cuda_error_code", r"unhandled cuda error|ncclUnhandledCudaError",
            "ncclUnhandledCudaError: a CUDA call inside NCCL failed on this rank", (CRASH,),
            "src/init.cc:3420"),
    Message("internal_error",
            r"internal error - please report this issue|Internal check failed|ncclInternalError",
            "ncclInternalError: one of NCCL's own checks failed; most often the consequence of something "
            "that went wrong before it (an address never filled in, a connection its peer closed), which "
            "the line under `Last error:` names", (UNDECIDED,), "src/init.cc:3424 (ncclGetErrorString)"),
    Message("invalid_argument", r"(?:ncclInvalidArgument|, invalid argument\b|invalid argument \(run with)",
            "ncclInvalidArgument: this rank passed NCCL an argument it refuses (a tensor on another GPU than "
            "the communicator's, a wrong device index or rank, a null buffer, a count or type it cannot "
            "take): the rank's own call, not the network", (CRASH,),
            "src/init.cc:3426 (`invalid argument (run with NCCL_DEBUG=WARN for details)`; 2.4-2.7: `invalid "
            "argument`)"),
)

#: NCCL's words that the writing rank's own call was wrong (its arguments, its device, two ranks on one GPU, a
#: capture NCCL cannot take), never a peer's or the network's: decisive without more (NCCL checks these
#: before it sends anything). Not ncclInvalidUsage alone: NCCL also returns it for ranks that disagree
#: (versions, sizes, a world size), which only its WARN says; nor `unhandled cuda error`: a CUDA call inside
#: NCCL failed, for a reason of this rank or of the node's P2P/NVLS set-up that only the WARN says.
OWN_FAILURE = ("invalid_argument", "buffer_on_other_device", "duplicate_gpu", "graph_capture_unsupported",
               "invalid_config")
#: of those, NCCL's WARNs that say which call it refused: decisive wherever they stand (the error codes
#: alone decide only where no other WARN says something else)
OWN_FAILURE_SAID = ("buffer_on_other_device", "duplicate_gpu", "graph_capture_unsupported", "invalid_config")
#: ncclResult_t (src/nccl.h.in) as NCCL's unwind lines return it (`enqueue.cc:1935 -> 5`): number -> message
RESULT_CODES = {1: "cuda_error_code", 2: "system_error", 3: "internal_error", 4: "invalid_argument",
                5: "invalid_usage", 6: "remote_error"}
#: the ncclGetErrorString words (what torch's exception quotes), not a WARN of NCCL's own
ERROR_STRINGS = ("remote_error", "system_error", "invalid_usage", "cuda_error_code", "internal_error",
                 "invalid_argument")

BY_NAME = {m.name: m for m in MESSAGES}
_COMPILED = [(m, re.compile(m.pattern)) for m in MESSAGES]


def meaning_of(text: str) -> tuple[Message, dict[str, str]] | None:
    """The first message ``text`` reads as, with its named groups that matched; None for none."""
    for m, rx in _COMPILED:
        hit = rx.search(text)
        if hit:
            return m, {k: v for k, v in hit.groupdict().items() if v is not None}
    return None


def reads_as(kind: str, col: str = "message") -> pl.Expr:
    """Whether each row of ``col`` is a message whose likeliest reading is verdict kind ``kind``."""
    # (one regex of several entries: their group names would clash, so ``parsers.any_of`` makes them plain)
    return pl.col(col).str.contains(any_of(*(m.pattern for m in MESSAGES if m.points_to[0] == kind)))


def is_one_of(names: tuple[str, ...], col: str = "message") -> pl.Expr:
    """Whether each row of ``col`` reads first as one of the messages ``names`` (false for none)."""
    return message_name(col).is_in(list(names)).fill_null(False)


def bare_message() -> str:
    """One pattern for a line that is NCCL's own WARN words and nothing else before them (a WARN pasted
    without its ``host:pid:tid [dev] NCCL WARN`` head): every entry but the error-code strings."""
    return r"^\s*(?:" + any_of(*(m.pattern for m in MESSAGES if m.name not in ERROR_STRINGS)) + ")"


def message_name(col: str = "message") -> pl.Expr:
    """The name of the first message each row of ``col`` reads as (null for none), for a frame of
    WARN lines: one vectorised pass per entry, no Python per row."""
    expr = pl.lit(None, pl.Utf8)
    for m in reversed(MESSAGES):
        expr = pl.when(pl.col(col).str.contains(m.pattern)).then(pl.lit(m.name)).otherwise(expr)
    return expr
