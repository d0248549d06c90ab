"""The telling lines among those no parser decodes: a crash, a transport failure, a wait, an error, a warning.

A fallback reader, run after every parser of the registry (``tracekit.formats``) over the lines none of
them claimed. It classes a line by its vocabulary alone, the words real programs print when they fail:
a shell's ``Killed`` and ``Segmentation fault (core dumped)``, Python's ``Fatal Python error``, a CUDA
kernel's ``Assertion `...` failed``, the kernel's OOM killer, Ray's ``Worker unexpectedly exits``, PyTorch's
``Unexpected segmentation fault encountered in worker``; a process that cannot start (``NO_START``: the
loader's ``undefined symbol``, CPython's ``can't open file``, a shell's ``command not found``); a launcher's
line that a task, rank or container failed (``LAUNCHER_FAILED``: Paddle's ``Container rank 0 status failed
... code 1``, Horovod's ``Horovod has been shut down``); UCX's ``Transport retry count exceeded on
mlx5_0:1/IB`` and ``Send completion with error``, verbs' ``IBV_WC_*`` statuses, a peer that closed its side
(``Connection closed by localRank 7``, ``Connection reset by peer``); XLA's ``Waiting to connect to client
mesh master``, Ray's ``Placement group creation timed out``, c10d's ``failed to connect to [host]:port``;
otherwise a line at an error level (glog's ``E1204``, Python logging's ``ERROR``, a ``XxxError:``), or at
a warning level. One ``telling_line`` event per line: ``message`` its text, ``where`` its class
(``Telling``), with the rank, host and pid its prefix gives (a launcher's, UCX's ``[host:pid:tid]``,
NCCL's ``host:pid:tid [dev]``, Ray's ``(pid=N)``). A file with none of these has its last line no parser
claimed told (``Telling.LAST``): what UNDECIDED quotes where nothing else is.

Such a line is not decoded: it stays an unknown line (``Parsed.claimed`` is empty), and the event only
lets the verdict quote it (``undecided.undecided``) and weigh it (``rules_salient``). A few families are
read on lines a parser claimed too, where that parser decodes nothing of them (a peer's close, a process
that cannot start, c10d's failed connect). Words in benign context do not count: a setting (``--timeout
1800``, ``NCCL_IB_TIMEOUT=22``, ``timeout: 30``), a count of none (``errors: 0``, ``no error``), a progress
bar, a traceback's source line, a rich traceback's box, a loader's probe (NCCL's net plugin ``dlerror``),
Python's own warnings. An error the program says it caught (``Ignoring``, ``retrying``) is an error,
never a crash.
"""

from __future__ import annotations

from enum import StrEnum

import polars as pl

from tracekit import rank_places, runtime_failures
# (the start-up families, written with the start-up messages they extend)
from tracekit.start_up_frames import COORDINATOR_UNREACHED, COORDINATOR_WAIT, UNPLACED
from tracekit.parsers import Parsed
from tracekit.schema import EventKind


def either(*patterns: str) -> str:
    """One pattern that holds any of ``patterns``, each in its own group with its own case rule: a
    pattern that opens with ``(?i)`` becomes a ``(?i:...)`` group (a flag at a pattern's head applies
    to the whole of a joined pattern in Python and nowhere but the head is allowed), any other a
    ``(?:...)`` one (case-sensitive, as it was alone)."""
    return "|".join(f"(?i:{p.removeprefix('(?i)')})" if p.startswith("(?i)") else f"(?:{p})"
                    for p in patterns)


class Telling(StrEnum):
    """What a telling line's words say (its event's ``where``), strongest first: a line is of the first
    class whose words it holds."""

    CRASH = "crash"
    TRANSPORT = "transport"
    WAIT = "wait"
    ERROR = "error"
    #: a line at a warning level: weighed by no rule, quoted by UNDECIDED where no stronger line is
    WARNING = "warning"
    #: no line of its file holds such words: the file's last line, which UNDECIDED quotes (decoded or not)
    LAST = "last"


CRASH = (
    r"(?i)segmentation fault|\bsegfault|\bSIG(?:SEGV|ABRT|BUS|KILL|ILL|FPE)\b|core dumped|fatal python error"
    r"|assertion .{1,300} failed|\bassertion failure at\b|device-side assert"
    r"|(?-i:^\s*Killed\b|\d Killed\s|\bKilled process \d)"
    r"|\bexited unexpectedly|\bunexpectedly exits?\b|\b(?:has|worker|process|actor) (?:has )?died\b"
    r"|\bis dead\b|out of memory|\boom[- ]?kill|terminate called (?:after|without)"
    r"|\*\*\* process received signal|<defunct>|illegal memory access|\bcrashed\b|\bbus error\b"
    # a program's own CRITICAL or FATAL log line that it is exiting (detectron's `CRITICAL train_net.py: 236:
    # Loss is NaN, exiting...`): the process ended itself on a check of its own
    r"|(?-i:\b(?:CRITICAL|FATAL)\b).{0,200}\bexiting\b"
)
#: a process that cannot start, in the words of what refused it: glibc's loader (``symbol lookup error: ...:
#: undefined symbol: X``, ``error while loading shared libraries: libX.so: cannot open shared object
#: file``), CPython (``python3: can't open file 'x.py': [Errno 2] No such file or directory``), bash and
#: dash (``torchrun: command not found``, ``/bin/sh: 1: torchrun: not found``, ``cannot execute binary
#: file: Exec format error``), Slurm (``execve(): python: No such file or directory``), an import that fails
NO_START = (
    r"(?i)\bundefined symbol\b|symbol lookup error|error while loading shared libraries"
    r"|cannot open shared object file|\bcan't open file\b|\bcommand not found\b|exec format error"
    r"|cannot execute binary file|\bexecv\w*\(\): .*no such file|(?-i:^\S+: \d+: \S+: not found$)"
)
#: an import that fails where no parser decoded the traceback: the program cannot start either
IMPORT_FAILED = r"(?-i:\b(?:ModuleNotFoundError|ImportError): )"
#: a launcher's or a framework's own line that a task, rank or container of its job failed: Paddle's
#: ``Container rank 0 status failed cmd [...] code 1 log workerlog.0`` (launch/job/container.py),
#: Horovod's ``Horovod has been shut down. This was caused by an exception on one of the ranks``
#: (common/operations.cc), Kubernetes' ``OOMKilled`` and ``CrashLoopBackOff``, Open MPI's ``mpirun noticed
#: that process rank 1 ... exited on signal 9``, ORTE's ``An ORTE daemon has unexpectedly failed``
LAUNCHER_FAILED = (
    r"(?i)\bcontainer rank \d+ status failed|\bhorovod has been shut down|\bCrashLoopBackOff\b"
    r"|\bOOMKilled\b|noticed that process rank \d+ .*exited|daemon has unexpectedly failed"
)
#: the rank, task, container or local rank a line names (``task 3``, ``localRank 7``, ``process rank 1``):
#: the process it speaks of, which need not be the one that printed it
NAMED = (r"(?i)\b(?P<what>local ?rank|local_rank|task|process rank|container rank|rank)[\s:=#]*"
         r"(?P<n>\d+)\b")
#: a loader's refusal that is a probe, not a failure: NCCL's ``NET/Plugin : dlerror=libnccl-net.so: cannot
#: open shared object file ... using internal implementation``, an optional import a warning reports
PROBE = (r"(?i)\bdlerror\b|\bdlopen\b|\bplugin\b|using internal implementation|\boptional\b"
         r"|warn(?:ing)?s?\b|\bwill not be (?:used|available)\b|\bdisabl(?:e|ed|ing)\b")
#: the words of a process that died, of one that cannot start and of a launcher's failure line
DIED = CRASH
#: an MPI library that could not initialise, in Open MPI's and MPICH's words (ompi/errhandler: ``*** An error
#: occurred in MPI_Init_thread`` ``*** on a NULL communicator`` ``*** MPI_ERRORS_ARE_FATAL (processes in this
#: communicator will now abort, ...)``, ``Local abort before MPI_INIT completed``; ``ompi_mpi_init:
#: ompi_rte_init failed``; MPICH's ``Fatal error in PMPI_Init_thread: Other MPI error``): the process
#: cannot start (PMIx's own ``PMIX ERROR: ERROR in file gds_ds12_lock_pthread.c`` is not: jobs start after it)
MPI_INIT_FAILED = (r"(?i)\berror occurred in MPI_Init\w*|\bbefore MPI_INIT completed"
                   r"|\bompi_mpi_init: .{0,60}fail|fatal error in P?MPI_Init\w*"
                   r"|\bMPI_Init\w* (?:failed|returned an error)|\bPMIx?\d?_Init\w*(?:\(\))? failed")
#: MPI's error handler ending the processes of a communicator (after an MPI call failed, at start-up or not)
MPI_ABORTED = r"(?-i:\bMPI_ERRORS_ARE_FATAL\b)"
#: the runtimes' own words that a process of the job failed, could not start, or was lost with its node
#: (``runtime_failures``: vLLM's ``EngineCore failed to start``, SGLang's ``Received sigquit from a child
#: process``, Triton's ``failed to load 'x' version 1:``, ORTE's ``lost communication with a remote daemon``)
RUNTIME_FAILED = runtime_failures.PATTERN
CRASH = either(DIED, NO_START, IMPORT_FAILED, LAUNCHER_FAILED, MPI_INIT_FAILED, MPI_ABORTED, RUNTIME_FAILED)
#: a transport's own failure: decisive where nothing decoded says otherwise (``HARD_TRANSPORT``)
#: a peer that closed its side: the consequence of that peer's end (NCCL's proxy service thread
#: ``[Service thread] Connection closed by localRank 7``, errno's ``Connection reset by peer``)
PEER_CLOSED = (r"(?i)connection (?:closed|reset) by (?:remote )?(?:peer|local ?rank \d+)"
               r"|could not receive type from localRank \d+")
#: the same, said of a local rank: NCCL's proxy thread's own line, which NCCL's parser claims
PEER_CLOSED_LOCAL = r"(?i)connection closed by local ?rank \d+|could not receive type from localRank \d+"
HARD_TRANSPORT = (
    r"(?i)retry count(?:er)? exceeded|\bIBV_WC_[A-Z_]+|\bibv_\w+(?:\(\))? failed|completion with error"
    r"|\b(?:local|remote) (?:length|protection|access|operation|invalid request) error"
    r"|\b(?:mlx[45]_\d+|roce|efa|libfabric)\b.*\b(?:error|fail(?:ed|ure)?)\b"
    # a buffer the network plugin could not register (NCCL's and Neuron's ``ncclNetRegMr ... failed``)
    r"|\b\w*RegMr\w*\b.{0,80}\bfail(?:ed|ure)?\b|\breg(?:ister)?_mr\b.{0,80}\bfail"
)
#: the other communication runtimes' own words for a transport they could not set up or use (issue 31):
#: NVSHMEM (host/transport/transport.cpp ``nvshmemi_transport_init:275: init failed for transport: IBGDA``,
#: ``Unable to initialize any transports``; modules/transport/ibgda ``ibgda_rc_init2rtr failed on RC #216``,
#: ``Unable to create ah.``; ``nvshmem setup connections failed``), UCX's own ERROR lines (``rocm_ipc_md.c:79
#: UCX ERROR Failed to create ipc for ...``), Mooncake's transfer engine giving up (``Put operation failed
#: with error: TRANSFER_FAIL``, ``transfer_incomplete max_attempts=3``), libfabric and oneCCL's OFI transport
#: (``|CCL_ERROR| atl_ofi.cpp:...``, ``fi_getinfo ... failed``), PSM2/PSM3's verbs (``Unable to create AH``),
#: a verbs queue pair that could not change state
RUNTIME_TRANSPORT = (
    r"(?i)\binit failed for transport\b|unable to initialize any transports|\bibgda_\w+ failed"
    r"|unable to create ah\b|\bnvshmem\w*\b[^.]{0,80}\b(?:setup connections|bootstrap\w*|init\w*|transports?"
    r"|connect\w*|detect topo) failed|\bnvshmem\b\S*/transport/\S*:\d+: non-zero status: \d+"
    r"|no active IB device that supports GPU-initiated|(?-i:\bUCX\s+ERROR\b)|\bfailed to create ipc\b"
    r"|(?-i:\bTRANSFER_FAIL\b)|\btransfer_incomplete max_attempts|\bFailed to complete transfers?\b"
    r"|(?-i:\|CCL_(?:ERROR|FATAL)\|)|\batl_ofi\w*\.c\w*:\d+.{0,160}\b(?:error|fail)"
    r"|\bfi_\w+\(?\)?[^.]{0,40}\bfailed\b|\bOFI\b[^.]{0,60}\b(?:failed|error)\b"
    r"|\bpsm[23]?_\w+[^.]{0,60}\bfailed\b"
    # (Mooncake's transfer engine on a work completion in error, with verbs' own status words: kvcache-ai/
    # Mooncake mooncake-transfer-engine/src/transport/rdma_transport/worker_pool.cpp:654 ``LOG(ERROR) <<
    # "Worker: Process failed for slice (opcode: " ... << "): " << ibv_wc_status_str(wc[i].status)``, the
    # statuses of linux-rdma/rdma-core libibverbs/enum_strs.c:105 ``transport retry counter exceeded``,
    # ``Work Request Flushed Error``, ...; a glog E line the torch parser claims as a c10d error)
    r"|\bProcess failed for slice\b"
    # (a verbs queue pair that could not move to its next state, in every RDMA program's words: Mooncake's
    # ``[Handshake] Failed to modify QP to RTR``, NCCL's ``ibv_modify_qp failed``, UCX's and Gloo's)
    r"|\bfailed to modify (?:the )?QP\b|\bmodify_qp\w*\b[^.]{0,60}\bfail"
)
#: a verbs work completion's status as rdma-core's ``ibv_wc_status_str`` spells it (linux-rdma/rdma-core
#: libibverbs/enum_strs.c:105-128), as the programs that print it quote it (Mooncake, UCX, Gloo)
WC_STATUS = (r"\b(?:transport retry counter exceeded|RNR retry counter exceeded|local length error"
             r"|local QP operation error|local EE context operation error|local protection error"
             r"|Work Request Flushed Error|memory management operation error|bad response error"
             r"|local access error|remote invalid request error|remote access error|remote operation error"
             r"|local RDD violation error|remote invalid RD request|invalid EE context (?:number|state)"
             r"|response timeout error)\b")
#: UCX's ERROR lines that are no failure: its memory-type cache's region already known (users silence it
#: with ``UCX_MEMTYPE_CACHE=n``: ``memtype_cache.c:83 UCX ERROR failed to insert region ...: Element already
#: exists``)
UCX_BENIGN = r"(?i)failed to insert region|element already exists"
#: a transfer a transfer engine says failed (Mooncake's ``Transfer failed for task0``): decisive only where
#: no retry follows it in its file (``rules_salient``: a retry may succeed)
TRANSFER_FAILED = r"(?i)\btransfer failed for (?:task|batch|request)\b"
#: the runtimes' families read on a line a parser claimed too (none of those parsers decodes their failure)
#: a runtime's own watchdog that fired on a process that made no progress, before it kills the job: SGLang's
#: scheduler (sgl-project/sglang python/sglang/srt/managers/scheduler.py Scheduler.watchdog_thread, 0.4.x:
#: ``logger.error(f"Watchdog timeout ({self.watchdog_timeout=})")``, then
#: ``self.parent_process.send_signal(signal.SIGQUIT)``, which the server's sigquit_handler reports as a child
#: that failed): a wait, and the kill after it its consequence
RUNTIME_WATCHDOG = r"\bWatchdog timeout \(self\.watchdog_timeout=\d+"
RUNTIME = (RUNTIME_TRANSPORT, TRANSFER_FAILED, COORDINATOR_UNREACHED, COORDINATOR_WAIT, MPI_INIT_FAILED,
           MPI_ABORTED, UNPLACED, RUNTIME_FAILED, RUNTIME_WATCHDOG)
TRANSPORT = HARD_TRANSPORT + (
    r"|connection (?:reset|refused|timed out|closed by peer)|no route to host|network is unreachable"
    r"|broken pipe|address family not supported|wrong magic|transport endpoint is not connected"
    r"|\bE(?:CONNRESET|CONNREFUSED|HOSTUNREACH|NETUNREACH|PIPE)\b"
)
TRANSPORT = either(TRANSPORT, PEER_CLOSED, RUNTIME_TRANSPORT, TRANSFER_FAILED)
WAIT = (r"(?i)\bwaiting (?:for|to|on)\b|\bstill waiting\b|\btimed? ?out\b|\btimeout\b|deadline exceeded"
        r"|\bhang(?:s|ing)?\b|\bhung\b|\bstuck\b|not responding")
ERROR = (r"(?i)^\s*(?:error|fatal|critical)\b|\[(?:error|fatal|critical)\]|(?-i:\b(?:ERROR|FATAL|CRITICAL)\b)"
         # (TensorFlow's ``AbortedError (see above for traceback): ...``)
         r"|^\s*[EF]\d{4} \d\d:\d\d|\b[A-Z]\w*(?:Error|Exception)\b(?: \([^)]{0,40}\))?:"
         r"|\bunhandled exception\b"
         r"|\berror: |\bfailed\b|\bfailure\b")
#: a warning level: ``WARNING``/``WARN`` words, glog's ``W1204 10:00``, c10d's ``[W socket.cpp:663]``, a
#: ``warning: `` (Python's own warning categories are no such line: a deprecation, a user warning)
WARNING = (r"(?-i:\bWARN(?:ING)?\b)|^\s*W\d{4} \d\d:\d\d|^\s*\[W [\w.]+:\d+\]|(?i:\bwarning: )")
PY_WARNING = (r"(?i)\b\w*(?:Deprecation|Future|User|Runtime|Resource|Syntax|Import|Bytes|Unicode)Warning\b"
              r"|deprecat|will be removed|warnings\.warn")
#: a wait for a connection, a rendezvous or a peer during start-up (rules_salient: an init stall)
CONNECT = (r"(?i)\bconnect|rendezvous|\bmaster\b|bootstrap|tcpstore|\bstore\b|placement group|handshake"
           r"|\bjoin|\bpeers?\b|coordinat|\bCreateSession\b")
#: words in benign context: a setting, a count of none, a progress bar, source code, a rich traceback's box
BENIGN = (
    r"(?i)\b(?:errors|failures|failed|fails|error_count|num_errors)\s*[:=]\s*0\b|\berror\s*=\s*0\b"
    r"|\b0 (?:errors?|failures?|failed)\b|error_rate|\bno errors?\b|without (?:an )?errors?"
    # a setting: ``timeout: 30``, ``NCCL_IB_TIMEOUT=22`` (``TimeoutError:`` is no setting)
    r"|(?-i:\b[a-z_]*timeout[a-z_]*\s*[=:]\s*\S)|(?-i:[A-Z_]*TIMEOUT[A-Z_]*=)"
    r"|--[\w-]*timeout|timeout (?:set to|of \d|is set)|\d+%\|[^|]*\||\d(?:it/s|s/it)\]|warnings\.warn\("
    r"|^\s*(?:raise|except|def|elif|return|assert|import|from \S+ import)\b|^\s*File \"|^\s*[│|┃] "
    r"|^\s*(?:#|> )|stack trace:?$|timeout\(ms\)\s*="
    # a call's argument list (``init_process_group(backend, timeout, init_method, rank)``): source code
    r"|\b\w+\((?:\s*[\w.]+(?:=[\w.]+)?\s*,)+"
)
#: a program that says it caught the error and went on: an error, never a crash or a failure
CAUGHT = (r"(?i)\bignor(?:e|ed|ing)\b|\bretrying\b|\bwill (?:be )?retr|\bretry(?:ing)? (?:in|after) \d"
          r"|\bfalling back\b|\bfallback\b"
          # (PSM's ``Reading from remote process' memory failed. Disabling CMA support``: it goes on without)
          r"|\bdisabling \w+ support\b")
#: the process a line's own prefix names: UCX/Open MPI ``[host:pid:tid]``, NCCL ``host:pid:tid [dev]``
BRACKET = r"^\s*(?:\[[\d.]+\]\s*)?\[(?P<host>[A-Za-z][\w.\-]*):(?P<pid>\d+)(?::\d+)+\]"
NCCL_LIKE = r"^\s*(?P<host>[A-Za-z][\w.\-]*):(?P<pid>\d+):\d+ \[\d+\]"
RAY_PID = r"\(\w+ pid=(?P<pid>\d+)"
#: PSM2/PSM3's own prefix, host and rank (``machine:rank1.cpu_allreduce_test: ...``, ``node3:rank12: ...``)
PSM_LIKE = r"^\s*(?:\[[\d.]+\]\s*)*(?:(?P<host>[A-Za-z][\w\-]*):)?rank(?P<rank>\d+)[.:]"


#: the most lines a file may have for its last line to be told (``Telling.LAST``)
SHORT = 500
#: the log levels of an error (a logger header's, taken off by ``text``)
LEVELS = ["ERROR", "CRITICAL", "E", "C"]


def _class() -> pl.Expr:
    t = pl.col("text")
    level = pl.col("log_level").fill_null("").is_in(LEVELS)
    warned = pl.col("log_level").fill_null("").is_in(["WARNING", "WARN", "W"])
    caught = t.str.contains(CAUGHT)
    probe = (t.str.contains(PROBE) & ~t.str.contains(DIED) & ~t.str.contains(LAUNCHER_FAILED)
             & ~t.str.contains(RUNTIME_FAILED))
    return (pl.when(t.str.contains(CRASH) & ~caught & ~probe).then(pl.lit(Telling.CRASH))
            .when(t.str.contains(TRANSPORT) & ~caught).then(pl.lit(Telling.TRANSPORT))
            .when(t.str.contains(WAIT) | t.str.contains(UNPLACED) | t.str.contains(rank_places.PLACE))
            .then(pl.lit(Telling.WAIT))
            .when(t.str.contains(ERROR) | level).then(pl.lit(Telling.ERROR))
            .when((t.str.contains(WARNING) | warned) & ~t.str.contains(PY_WARNING))
            .then(pl.lit(Telling.WARNING)))


def parse(lines: pl.DataFrame, unclaimed: pl.DataFrame) -> Parsed:
    """A ``telling_line`` event for each line of ``unclaimed`` (``file, line``: the non-blank lines no
    parser claimed) whose words class it, and for a peer's close wherever it is (NCCL's parser claims
    its proxy thread's ``Connection closed by localRank 7`` and decodes nothing of it) or a process that
    cannot start (``NO_START``); and in a file with
    none, its last line (``Telling.LAST``). ``lines``: the lines frame (``text.lines_frame``)."""
    cols = ["file", "line", "text", "log_level", "launch_rank", "pdsh_host", "ray_pid"]
    every = lines.select(c if c in lines.columns else pl.lit(None).alias(c) for c in cols)
    # (``_i``: the lines' own order, kept in the events, so a batch of files gives each file's events as
    # that file alone does: tracekit.engines parses a file per task and compares)
    every = every.with_row_index("_i")
    if "blank" in lines.columns:
        every = every.filter(~lines["blank"])
    t = pl.col("text")
    # (a loader's or a shell's refusal, c10d's failed connect and Paddle's failed container are read on a
    # line a parser claimed too: nccl-tests' parser claims ``all_reduce_perf: symbol lookup error: ...`` by
    # its program's name, the torch parser c10d's ``[W socket.cpp:663]`` lines by their head, the launcher
    # parser ``Container rank 0 status failed ...`` for the local rank it names, decoding no failure)
    # (and the other runtimes' own failure lines: parsers/runtimes claims UCX's for their host and pid)
    # (and a rank's own word of where it is, `Rank 0 is stuck at dist.barrier()`: the launcher's parser claims
    # `Rank N` by its head, rank_places)
    anywhere = every.filter(t.str.contains(either(PEER_CLOSED_LOCAL, NO_START, CONNECT_FAILED,
                                                  r"\bContainer rank \d+ status failed\b", *RUNTIME,
                                                  rank_places.PLACE)))
    df = pl.concat([every.join(unclaimed.select("file", "line"), on=["file", "line"], how="semi")
                    .with_columns(pl.lit(False).alias("_claimed")),
                    anywhere.with_columns(pl.lit(True).alias("_claimed"))])
    df = df.unique(["file", "line"], keep="first", maintain_order=True)
    df = df.filter(t.str.contains(either(CRASH, TRANSPORT, WAIT, ERROR, UNPLACED, rank_places.PLACE))
                   | t.str.contains(WARNING)
                   | pl.col("log_level").fill_null("").is_in([*LEVELS, "WARNING", "WARN", "W"]))
    # (a line of a few characters, ``{`` or ``Error:`` under an error level, says nothing to quote; a
    # shell's ``Killed`` does)
    # (SGLang's watchdog prints its setting in its own words: ``(self.watchdog_timeout=300)``)
    df = df.filter((~t.str.contains(BENIGN) | t.str.contains(RUNTIME_WATCHDOG))
                   & t.str.strip_chars().str.len_chars().is_between(6, 4000))
    # a traceback's source line (the line under ``File "x.py", line N``) quotes code, not an event
    before = lines.select("file", (pl.col("line") + 1).alias("line"), pl.col("text").alias("_before"))
    df = df.join(before, on=["file", "line"], how="left").filter(
        ~pl.col("_before").fill_null("").str.contains(r"^\s*File \"[^\"]+\", line \d+")).drop("_before")
    df = df.with_columns(_class().alias("where")).filter(
        pl.col("where").is_in([Telling.CRASH, Telling.TRANSPORT])
        | (pl.col("where").is_not_null()
           & (~pl.col("_claimed")
              | t.str.contains(either(COORDINATOR_UNREACHED, COORDINATOR_WAIT, UNPLACED, RUNTIME_WATCHDOG,
                                      rank_places.PLACE)))))
    df = df.drop("_claimed")
    # (the last line no parser claimed: a claimed one may carry another parser's event, and two events of
    # one line from two parsers come in no fixed order, batch by batch)
    # and in a short file only (``SHORT`` lines, an excerpt's size): a big file is read in pieces, and a
    # piece's last line is not its file's
    short = every.group_by("file").agg(pl.col("line").max()).filter(pl.col("line") <= SHORT).select("file")
    quiet = every.join(unclaimed.select("file", "line"), on=["file", "line"], how="semi").join(
        short, on="file", how="semi")
    df = pl.concat([df, _last_lines(quiet.join(df, on="file", how="anti"))], how="diagonal").sort("_i")
    if not df.height:
        return Parsed("salient")
    bracket, nccl_like = t.str.extract_groups(BRACKET).struct, t.str.extract_groups(NCCL_LIKE).struct
    psm = t.str.extract_groups(PSM_LIKE).struct
    events = df.select(
        "file", "line", pl.lit(EventKind.TELLING_LINE).alias("kind"), t.str.strip_chars().alias("message"),
        "where", pl.coalesce("launch_rank", psm.field("rank").cast(pl.Int64, strict=False)).alias("rank"),
        pl.coalesce("pdsh_host", bracket.field("host"), nccl_like.field("host"),
                    psm.field("host")).alias("host"),
        pl.coalesce(pl.col("ray_pid").cast(pl.Int64), bracket.field("pid").cast(pl.Int64, strict=False),
                    nccl_like.field("pid").cast(pl.Int64, strict=False),
                    t.str.extract(RAY_PID, 1).cast(pl.Int64, strict=False)).alias("pid"))
    return Parsed("salient", {"events": events})


def _last_lines(df: pl.DataFrame) -> pl.DataFrame:
    """Each file's last line that says something (not a progress bar, source code, a rule of dashes)."""
    t = pl.col("text")
    said = df.filter(~t.str.contains(BENIGN) & t.str.contains(r"\w{3}")
                     & t.str.strip_chars().str.len_chars().is_between(6, 4000))
    return (said.sort("file", "line").group_by("file", maintain_order=True).last()
            .with_columns(pl.lit(Telling.LAST).alias("where")))


def hard_transport() -> pl.Expr:
    """Whether a ``telling_line``'s message is a transport's own failure (a completion error, a retry
    count exceeded, a socket of an address family the host has not), not a socket closed under a peer
    that died."""
    own = HARD_TRANSPORT + r"|socket creation failed|address family not supp"
    return (pl.col("message").str.contains(either(own, RUNTIME_TRANSPORT))
            & ~pl.col("message").str.contains(UCX_BENIGN))


def hard_transport_lines(told: pl.DataFrame) -> pl.DataFrame:
    """The telling lines read as a transport's own failure (``hard_transport``), not a socket closed
    under a peer that died."""
    return told.filter((pl.col("where") == Telling.TRANSPORT) & hard_transport())


def waits_to_connect() -> pl.Expr:
    """Whether a ``telling_line`` of class wait names a connection, rendezvous or peer being waited for."""
    return (pl.col("where") == Telling.WAIT) & pl.col("message").str.contains(CONNECT)


def timed_out() -> pl.Expr:
    """Whether a line says its wait ended without the thing waited for (``timed out``, ``deadline
    exceeded``), not only that it waits."""
    return pl.col("message").str.contains(r"(?i)\btimed? ?out\b|deadline exceeded|TimeoutError")


#: c10d's own words for a connect that did not complete (torch/csrc/distributed/c10d/socket.cpp)
CONNECT_FAILED = r"(?i)\bfailed to connect to\b|\btimed out after \S+ while trying to connect\b"
#: a host and port a line connects to: ``[::ffff:10.0.0.1]:23456``, ``10.0.0.1:29500``, ``node1:29500``,
#: NCCL's ``10.0.0.1<43287>``, c10d's ``(10.0.0.1, 29500)``
ADDRESS = (r"\[[0-9a-fA-F:.]+\]:\d+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{2,5}\b|<\d+>)|[\w\-]:\d{4,5}\b"
           r"|\([\w.\-]+, \d{2,5}\)")
#: a start-up connection that did not complete: timed out, refused, unreachable
UNREACHED = (r"(?i)\btimed? ?out\b|\brefused\b|errno:? ?11[01]\b|\bE(?:TIMEDOUT|CONNREFUSED)\b"
             r"|no route to host|network is unreachable")


def connect_failed() -> pl.Expr:
    """Whether a ``telling_line`` says a connection to a host:port (a rendezvous, a store, a bootstrap)
    did not complete: c10d's ``The client socket has failed to connect to [::ffff:192.168.1.219]:23456
    (errno: 110 - Connection timed out)``, ``connect() to 10.0.0.1:29500 failed: Connection refused``."""
    msg = pl.col("message")
    return (pl.col("where").is_in([Telling.TRANSPORT, Telling.WAIT, Telling.ERROR])
            & msg.str.contains(r"(?i)\bconnect") & msg.str.contains(UNREACHED) & ~msg.str.contains(CAUGHT)
            & msg.str.contains(ADDRESS))
