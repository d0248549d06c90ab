"""c10d's start-up lines (PyTorch's store client and server at init_process_group's rendezvous and torchrun's c10d
rendezvous backend), as ``start_up_messages`` entries: split from it in s30 (the c10d entries grew with the
TCPStore client's retry line). ``start_up_messages.MESSAGES`` holds them after the other runtimes' entries, in the
order below (``read`` takes the first entry that matches).
"""

from __future__ import annotations

from tracekit.start_up_entry import Means, Message

C10D: tuple[Message, ...] = (
    # (s30) torch 2.4 and later: the TCPStore client's own retry of its connect (and its validation of the server),
    # after a backoff, until the store's timeout (pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp,
    # TCPClient::connect: `C10D_WARNING("TCP client failed to connect/validate to host {}:{} - retrying (try={},
    # timeout={}ms, delay={}ms): {}", ...)`, the socket's own error at its end); no parser decodes it (the torch
    # parser claims its `[W... TCPStore.cpp:N]` head, salient reads `retrying` as a caught error): first, so a line
    # that ends in the socket's words is read as this retry
    Message("c10d_store_client_retrying", "torch",
            r"TCP client failed to connect/validate to host (?P<address>[^\s]+:\d+) - retrying "
            r"\(try=(?P<attempt>\d+), timeout=(?P<limit_ms>\d+)ms, delay=\d+ms\)(?:: (?P<error>.{1,200}))?",
            Means.RETRIED, "the c10d store's server (MASTER_ADDR:MASTER_PORT, rank 0's host or the rendezvous "
            "endpoint), after a backoff each time, until the store's timeout",
            "pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp (TCPClient::connect's retry loop: "
            "`TCP client failed to connect/validate to host {}:{} - retrying (try={}, timeout={}ms, delay={}ms): {}`)",
            decoded=False),
    # (s28) c10d's store client connecting to the store's server at start-up (init_process_group's
    # rendezvous, torchrun's c10d rendezvous backend): each failed attempt is recorded and warned, then retried
    # after a backoff until the connect's deadline (pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp
    # SocketConnectOp::tryConnect: `recordError("The client socket has failed to connect to {} (errno: {} -
    # {}).", ...)` on ECONNREFUSED/ECONNRESET, retry; socket.cpp:558/601/663 in the warnings of torch 1.10-2.1);
    # on dev every excerpt of it is an init stall (dv11-042, dv17-017, dv2-062)
    Message("c10d_client_connect_refused", "torch",
            r"The client socket has failed to connect to (?P<address>\[[^\]\s]+\]:\d+|[\w.\-]+:\d+) "
            # (the line's end: a program that wraps it and says it retries, `..., retrying in 5 s`, may succeed)
            r"\(errno: \d+ - (?P<error>Connection refused|Connection reset by peer)\)\.?\s*$",
            Means.RETRYING, "the c10d store's server (MASTER_ADDR:MASTER_PORT, rank 0's host or the rendezvous "
            "endpoint)",
            "pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp (SocketConnectOp::tryConnect: the error "
            "recorded and warned, then `retry = true` until the deadline)"),
    Message("c10d_client_connect_unanswered", "torch",
            r"The client socket has failed to connect to (?P<address>\[[^\]\s]+\]:\d+|[\w.\-]+:\d+) "
            r"\(errno: \d+ - (?P<error>Connection timed out|No route to host|Network is unreachable)\)\.?\s*$",
            Means.TIMED_OUT, "the c10d store's server (MASTER_ADDR:MASTER_PORT: each attempt's connect got no "
            "answer, the address not reachable from this node or a firewall dropping the port)",
            "pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp (SocketConnectOp::tryConnect: "
            "ETIMEDOUT/EHOSTUNREACH recorded and warned, retried until the deadline)"),
    Message("c10d_client_connect_gave_up", "torch",
            r"The client socket has failed to connect to any network address of \((?P<host>[^,)]+), "
            r"(?P<port>\d+)\)",
            Means.GAVE_UP, "the c10d store's server (MASTER_ADDR:MASTER_PORT) after its retries",
            "pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp (SocketConnectOp::run: `The client socket "
            "has failed to connect to any network address of ({}, {}).` with the errors recorded, thrown as "
            "DistNetworkError/RuntimeError)"),
    # (s32, setup32) the store client's read that its socket's poll timed out (a get/wait on a key no other rank set:
    # at start-up, a rank of the world that never joined); torch 2.1-2.3 warn the poll's 0 as `While waitForInput,
    # poolFD failed with (errno: 0 - Success).`, 2.4 and later say it (pytorch/pytorch torch/csrc/distributed/c10d/
    # socket.cpp SocketImpl::waitForInput: `waitForInput: poll for socket {} returned 0, likely a timeout`, then
    # `waitForInput: socket {} timed out after {}ms`; a real gloo world of 3 with one rank never started prints both;
    # the torch parser claims their glog head and decodes no event: parsers/start_up's stall)
    Message("c10d_store_read_timed_out", "torch",
            r"waitForInput: poll for socket .{0,300}? returned 0, likely a timeout"
            r"|waitForInput: socket .{0,300}? timed out after (?P<limit_ms>\d+)ms"
            r"|While waitForInput, poolFD failed with \(errno: 0 - ",
            Means.TIMED_OUT, "a key of the c10d store that another rank never set (its read waited past its timeout)",
            "pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp (SocketImpl::waitForInput)", decoded=False),
    Message("c10d_client_timed_out", "torch",
            r"The client socket has timed out after (?P<seconds>\d+)(?:s|ms)? while trying to connect to "
            r"\((?P<host>[^,)]+), (?P<port>\d+)\)",
            Means.TIMED_OUT, "the c10d store's server (MASTER_ADDR:MASTER_PORT)",
            "pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp (SocketConnectOp::run, "
            "throwTimeoutError)"),
    # (its client resolving the store's host: a getaddrinfo failure is recorded and retried, after a backoff,
    # until the connect's deadline, with every address family: the name never resolved, whatever the family;
    # parsers/torch_log decodes no event of it where the family is IPv6 or none)
    Message("c10d_name_unresolved", "torch",
            r"The (?:IPv[46] )?network addresses of \((?P<host>[^,)]+), (?P<port>\d+)\) cannot be retrieved "
            r"\(gai error: (?P<error>-?\d+ - [^)]*)\)",
            Means.UNRESOLVED,
            "the c10d store's host (MASTER_ADDR, --rdzv-endpoint), retrying it until its timeout",
            "pytorch/pytorch 056b6f38 torch/csrc/distributed/c10d/socket.cpp SocketConnectOp::tryConnect "
            "(`recordError(\"The {}network addresses of ({}, {}) cannot be retrieved (gai error: {} - "
            "{}).\"`, then `retry = true`: the loop sleeps its backoff and resolves again until the deadline, "
            "then throwTimeoutError)", decoded=False),
    Message("c10d_server_listen_failed", "torch",
            r"The server socket has failed to listen on any local network address",
            Means.GAVE_UP, "listening on the c10d store's port",
            "pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp (SocketListenOp::run)"),
)
