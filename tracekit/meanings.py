"""What messages mean, as data read by the parsers and the evidence: the NCCL/plugin WARNs that a
fallback follows (harmless, each with why), and the wordings of torch, NCCL, CUDA and the rendezvous
that say a line is a consequence, a CUDA failure, the network's failure, NCCL's error code, a
rendezvous that never came together, or a collective mismatch.

One list of benign WARNs: ``parsers/nccl_shapes`` turns the lines it matches into ``benign_warn``
events, the evidence (``tracekit.evidence``) sets the same lines aside as notes, never as a cause.
"""

import polars as pl

# A line that reports the end of waiting (a timeout, the watchdog's abort, a peer closing its socket,
# torchrun's error block) is a consequence of a failure elsewhere, never the failure itself.
CONSEQUENCE = (r"(?i)time[ d]*out|watchdog|ChildFailedError|SignalException|closed by (?:remote )?peer"
               r"|Connection reset|Broken pipe"
               # (NCCL's socket.cc closing a socket whose peer has already gone: a teardown's word, issue 31)
               r"|Call to shutdown failed"
               r"|Could not receive type from localRank|Failed to execute operation \w+ from rank"
               r"|Socket recv failed while polling|c10::DistBackend"
               r"|DistBackendError|communicator was aborted|taking the entire process down"
               r"|ProcessGroupNCCL is aborted"
               # (Horovod's operations.cc: its background loop ended because of another rank's exception)
               r"|Horovod has been shut down")
CUDA = (r"(?i:CUDA error|CUDA out of memory|OutOfMemoryError|illegal memory access|device-side assert"
        r"|cudaError"
        r"|CUBLAS_STATUS|CUDNN_STATUS|uncorrectable ECC|CUDA driver error|Cuda failure|cudaMalloc\w* failed"
        r"|cuMem\w+ failed|hip\w+ failed|hipError)")
# a connection that could not be made: the network's own failure, whatever words of time it uses
NETWORK_FAIL = (r"(?i)call to (?:connect|bind|accept)|connect(?:ion)? (?:timed out|timeout|refused|failed)"
                r"|ibv_\w+ failed"
                r"|No route to host|Network is unreachable|Connection refused")
# NCCL's own error codes as torch or the program reports them: NCCL failed, and says why only in its
# WARN lines (NCCL_DEBUG=WARN or INFO)
NCCL_ERROR = (r"ncclSystemError|ncclInternalError|ncclInvalidUsage|ncclInvalidArgument|ncclUnhandledCudaError"
              r"|ncclRemoteError|NCCL error|unhandled (?:system|cuda) error"
              r"|remote process exited or there was a network error")
# the rendezvous / TCPStore never came together: nobody got as far as a communicator
# c10d's store socket (torch/csrc/distributed/c10d/socket.cpp) giving up: the server cannot bind or
# listen on the port, the client reaches no address of the store's host or cannot resolve its name.
# (A W line `failed to connect to [localhost]:29500 (errno: 97 ...)` for one address is a retry,
# printed by healthy runs too, and is not one of these.)
STORE_SOCKET = (r"socket has failed to connect to any network address|client socket has timed out"
                r"|server socket has failed to (?:listen|bind)|server socket cannot be initialized"
                r"|IPv4 network addresses of \(.*\) cannot be retrieved")
RENDEZVOUS = (r"Rendezvous\w*(?:Error|Timeout)|RendezvousConnectionError|C10d store has failed|"
              + STORE_SOCKET
              + r"|TCPStore\w* .*(?:failed|timed out)|DistStoreError|connect\(\) timed out\. Original timeout"
              # the ranks' exchange of ncclUniqueId through the store (ProcessGroupNCCL's init) failing
              r"|retrieving ncclUniqueId from \[\d+\] via c10d key-value store"
              # ProcessGroupGloo's init: each rank connects a pair to every other rank's advertised address
              r"|Gloo connectFullMesh failed"
              # TCPStore's client reading an answer outside the store's protocol while it waits for keys
              # (pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp TCPStore::doWait: TORCH_CHECK(false,
              # "Stop_waiting response is expected"), "wait_canceled response is expected"; TCPStore::check:
              # "ready or not_ready response expected"): what answered at MASTER_ADDR:MASTER_PORT is no
              # store of this job (an empty or wrong address, another service on the port)
              r"|Stop_waiting response is expected|wait_canceled response is expected"
              r"|ready or not_ready response expected")
# NCCL's network saying a peer sent another size than this rank posted: the ranks' collectives
# differ (a size or op mismatch seen from the wire), not a network fault
WIRE_MISMATCH = r"(?i)collective mismatch error|message truncated ?: ?receiving \d+ bytes instead of \d+"
# NCCL's bootstrap (the rendezvous of a communicator's ranks before any collective): the communicator
# never completed init. (NCCL refusing a communicator for the program's own error, two ranks on one GPU,
# is not the bootstrap's: nccl_messages.OWN_FAILURE)
BOOTSTRAP = r"(?i)^bootstrap|bootstrap\.cc|Bootstrap ?(?:Root)?\s*:"
# c10d's heartbeat monitor: the watchdog thread itself made no progress, so a CUDA or NCCL call it
# made (a query of a collective's CUDA event, an abort) never returned
HEARTBEAT = r"(?i)watchdog got stuck for (\d+) seconds|Heartbeat monitor timed out"
# init_process_group's own barrier over the store: every rank adds its key, then waits for world_size keys
STORE_BARRIER = r"(?i)store[ _]based[ _]barrier"
# the runtime's own word that ranks called different collectives (torch DETAIL, Horovod, DeepSpeed)
MISMATCH_TEXT = (r"Detected mismatch between collectives"
                 r"|Mismatched (?:ALLREDUCE|ALLGATHER|BROADCAST|ALLTOALL|REDUCESCATTER)"
                 r"|Collectives differ in|collective mismatch|Mismatch between collective")
# "terminate called after throwing an instance of 'X'": the process dying of an exception raised
# elsewhere, a consequence wherever a timeout was logged or X is the watchdog's DistBackendError
TERMINATE = r"terminate called after throwing an instance of"
# NCCL / plugin WARNs that a fallback follows, each with why it is harmless, and whether NCCL also
# prints it at INFO level (then the parser takes it from INFO lines too: a missing net plugin is
# announced at INFO on every healthy start, and is said only where NCCL WARNs it). The order is the
# order of the notes ("harmless: ...") a verdict carries.
_BENIGN = [
    (r"Failed to open libibverbs|libibverbs\.so", "no InfiniBand verbs library: NCCL falls back to sockets",
     True),
    (r"NET/OFI Only EFA provider is supported",
     "aws-ofi-nccl found no EFA device: NCCL uses its own transports", True),
    (r"NET/Plugin ?:.*(?:No plugin found|Plugin load|Failed to find|could not find|not found)"
     r"|libnccl-net[\w-]*\.so",
     "no external NCCL net plugin: NCCL uses its internal one", False),
    (r"Could not (?:find|open) .*libnccl-tuner|NCCL_TUNER_PLUGIN", "no tuner plugin: NCCL uses its defaults",
     False),
    (r"(?:NET/IB|NCCL_IB).*No device found|No IB devices found", "no InfiniBand device: NCCL uses sockets",
     False),
    (r"ibvwrap.*lib wrapper not initialized|lib wrapper not initialized",
     "no InfiniBand verbs library: NCCL falls back to sockets", True),
    (r"Got async event : client reregistration", "an IB subnet manager port event; traffic goes on", True),
    (r"ras/\S+.*Call to bind failed|Call to bind failed: Address already in use",
     "NCCL's RAS service found its port taken; training is not affected", True),
    (r"SHARP coll init error|Cannot initialize CollNet|SHArP Job init error"
     r"|CollNet.*(?:disabled|not supported)"
     r"|sharp_\w+ failed|Job error in sharp_\w+|Begin job id: \d+ failed",
     "SHARP/CollNet unavailable: NCCL uses point-to-point", True),
    (r"Could not find a path for pattern \d+, falling back",
     "a topology search fallback; NCCL picks another pattern", True),
    (r"Missing \"(?:amd_iommu=on|iommu=pt)\" from kernel command line"
     r"|Missing \"HSA_FORCE_FINE_GRAIN_PCIE=1\"",
     "RCCL's advice on kernel and environment settings, printed at every start", True),
    # (failures, issue 31): ncclCudaLibraryInit's result is ignored, `(void)ncclCudaLibraryInit()` in
    # ncclCommInitRank (src/init.cc, 2.19-2.21): a driver entry point not found leaves cuMem/DMA-BUF off
    (r"Retrieve cu\w+ (?:version \d+ )?failed with -?\d+|CUDA some PFN functions not found",
     "NCCL could not look up a CUDA driver entry point (a driver other than its build expects); it goes on "
     "without it (cuMem, DMA-BUF off)", False),
]
#: every benign WARN: pattern -> why it is harmless
BENIGN = {pattern: why for pattern, why, _ in _BENIGN}
#: those the NCCL parser takes from any line it reads, INFO too (``benign_warn`` events)
BENIGN_LOGGED = {pattern: why for pattern, why, info in _BENIGN if info}
#: any of those, as one pattern
BENIGN_LOGGED_ANY = "|".join(f"(?:{k})" for k in BENIGN_LOGGED)

# --- what a message says, decoded once ------------------------------------------------------
# The events table carries a ``says`` column (schema.EVENTS): the names of SAYS whose pattern its
# message matches, decoded once where the parsers' events enter the store (``ingest.combine``). The
# evidence and the summary filter that column (``says``) instead of reading the wording again.

# the watchdog's abort of a rank whose collective timed out: SIGABRT, exit code -6
WATCHDOG_ABORT_SIGNAL = r"Signal 6 \(SIGABRT\)|SIGABRT|signal 6\b|exitcode: -6|code -6\b"
# a line that follows a failure elsewhere, as the summary of `tracekit ingest` lists errors:
# a consequence, torchrun's `failed (exitcode: 1) local_rank: 1`, a closing signal
KNOCK_ON = CONSEQUENCE + r"|failed \(exitcode: -?\d+\) local_rank|closing signal"

# c10d's abort after a collective failed or timed out (ProcessGroupNCCL: `Some NCCL operations have failed or
# timed out`, `Exception (either an error or timeout) detected by watchdog`): it says neither, so its words of
# time are no timeout
EITHER_ABORT = r"(?i)operations have failed or timed out|\(either an error or timeout\)"
#: meaning -> words struck from a message before that meaning's pattern reads it
SAYS_UNLESS = {"timeout": EITHER_ABORT}

#: meaning -> the pattern a message matches when it says so. ``benign`` is read from the event's
#: ``where`` and message together (a benign WARN's words may sit in either).
SAYS = {
    "consequence": CONSEQUENCE, "cuda": CUDA, "network_fail": NETWORK_FAIL, "nccl_error": NCCL_ERROR,
    "rendezvous": RENDEZVOUS, "mismatch": MISMATCH_TEXT, "terminate": TERMINATE,
    # (c10d's watchdog names a timeout in `Watchdog caught collective operation timeout:`, which is said
    # even where a paste cuts the line before its last word)
    "timeout": r"(?i)timed? ?out|Watchdog caught collective operation",
    "stop_signal": "SIGTERM|SIGINT|SIGHUP", "abort_signal": WATCHDOG_ABORT_SIGNAL, "knock_on": KNOCK_ON,
    "benign": "|".join(BENIGN),
}


def decoded(message: pl.Expr, where: pl.Expr | None = None) -> pl.Expr:
    """The meanings (keys of SAYS, in its order) a message carries, as a list; null where the
    message is null and ``where`` says nothing benign (a line with no words says nothing, so a
    filter on any meaning leaves it out, as a filter on its wording did)."""
    text = pl.concat_str((where if where is not None else pl.lit(None, pl.Utf8)).fill_null(""), pl.lit(" "),
                         message.fill_null(""))
    benign = text.str.contains(SAYS["benign"])
    named = [pl.when((message.str.replace_all(SAYS_UNLESS[name], "") if name in SAYS_UNLESS else message)
                     .str.contains(p)).then(pl.lit(name))
             for name, p in SAYS.items() if name != "benign"]
    found = pl.concat_list(*named, pl.when(benign).then(pl.lit("benign"))).list.drop_nulls()
    return pl.when(message.is_not_null() | benign).then(found)


def with_says(events: pl.DataFrame) -> pl.DataFrame:
    """``events`` with its ``says`` column decoded from ``message`` and ``where``: each distinct pair
    decoded once (a log repeats its warnings: 500,000 events are a few thousand messages)."""
    pairs = events.select("message", "where").unique()
    pairs = pairs.with_columns(decoded(pl.col("message"), pl.col("where")).alias("says"))
    cols = events.columns if "says" in events.columns else [*events.columns, "says"]
    return (events.drop("says", strict=False)
            .join(pairs, on=["message", "where"], how="left", nulls_equal=True, maintain_order="left")
            .select(cols))


def says(meaning: str) -> pl.Expr:
    """Whether an event's message says ``meaning`` (a key of SAYS): a filter on its ``says`` column,
    null where the message is null."""
    if meaning not in SAYS:
        raise ValueError(f"{meaning!r} is not a meaning of meanings.SAYS ({', '.join(SAYS)})")
    return pl.col("says").list.contains(meaning)
