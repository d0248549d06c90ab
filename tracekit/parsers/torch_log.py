"""torchrun and PyTorch c10d stdout/stderr (docs/formats.md, "PyTorch").

Watchdog timeouts of every generation, ``ChildFailedError`` blocks, closing signals, exit codes,
collective-mismatch reports of TORCH_DISTRIBUTED_DEBUG=DETAIL, gloo transport errors, Python
exceptions, and the ``[tracekit]`` header line that ``tracekit run`` makes each rank print.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.meanings import STORE_SOCKET
from tracekit.nccl_messages import bare_message, message_name, reads_as
from tracekit.parsers import Parsed, any_of, process_end
from tracekit.schema import EventKind

# every generation: `WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=.., NumelOut=.., Timeout(ms)=600000)`, and
# before torch 1.10 `WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000)` without a sequence number
WATCHDOG = (
    r"Work(?:NCCL|Gloo)?\((?:SeqNum=(?P<seq>\d+), )?OpType=(?P<op>\w+)(?:, NumelIn=(?P<numel>\d+))?"
    r"(?:, NumelOut=\d+)?, Timeout\(ms\)=(?P<timeout_ms>\d+)\)"
)
TIMED_OUT = r"operation timeout: Work|before timing out|timed out"
# c10d taking the process down after a timeout or an error elsewhere: a consequence
ABORT = (r"Some NCCL operations have failed or timed out|we are taking the entire process down"
         r"|Terminating the process after attempting to dump debug info"
         r"|terminate called after throwing an instance of 'c10::DistBackendError'"
         r"|watchdog thread terminated with exception: (?:\[|NCCL|Watchdog)|communicator was aborted on rank")
CUDA = (r"CUDA error: |CUDA out of memory|illegal memory access|device-side assert|uncorrectable ECC"
        r"|HIP failure|hipError\w+|cudaError\w+")
BARE_NCCL = bare_message()  # NCCL's WARN words at a line's start, without NCCL's head
# c10d says its watchdog is stuck: a hang the runtime reports
STUCK = r"Heartbeat monitor timed out|watchdog got stuck for \d+ seconds"
# c10d's store barrier still waiting for ranks that have not arrived (worker_count < world_size)
STORE_WAIT = (r"Waiting in store based barrier to initialize process group for rank: \d+, key: \S+ "
              r"\(world_size=\d+, worker_count=\d+")
ASYNC_ERROR = r"raised the following async exception: "
# c10d's desync report (TORCH_NCCL_DESYNC_DEBUG): `[7] finished collective #182, but didn't join collective
# #183`
DESYNC = r"^\s*\[(?P<rank>\d+)\] finished collective #\d+, but didn't join collective #(?P<seq>\d+)"
# Ray: a worker process died under it
RAY_DIED = r"A worker died or was killed while executing a task"
# the elastic agent's rendezvous (dynamic_rendezvous.py) failing to reach its store once the job runs:
# `The node 'host_123_0' has failed to send a keep-alive heartbeat to the rendezvous 'none' due to an error
# of type RendezvousConnectionError.` (also on its way out: `has failed to shutdown the rendezvous`)
KEEP_ALIVE = (r"The node '(?P<node>[^']+)' has failed to (?:send a keep-alive heartbeat to|shutdown) the "
              r"rendezvous '[^']*' due to an error of type (?P<exc>\w+)")
# torchelastic's worker status records: `{"name": "torchelastic.worker.status.SUCCEEDED", ...
# "global_rank": 0, ...}`
ELASTIC = r"^\{\"name\": \"torchelastic\.worker\.status\.(?P<state>\w+)\""
ELASTIC_KV = {"rank": r"\"global_rank\": (\d+)", "host": r"\"hostname\": \"([^\"]+)\"",
              "world_size": r"role_world_size\\?\": \[?(\d+)", "pid": r"\"worker_id\": \"(\d+)\""}
# the options ProcessGroupNCCL prints as it starts (`NCCL_ASYNC_ERROR_HANDLING: 1`, `TIMEOUT(ms): 5000`):
# settings
PG_OPTION = (r"^(?P<key>(?:NCCL|TORCH)_\w+|TIMEOUT\(ms\)|USE_HIGH_PRIORITY_STREAM|SPLIT_FROM|SPLIT_COLOR"
             r"|PG_NAME|PG_DESC): (?P<value>\S*)$")
# c10d's and torchelastic's own lines that are known and say nothing further
C10D_KNOWN = (r"preparing to dump debug info|First PG on this rank to signal dumping"
              r"|NCCL watchdog thread started"
              r"|ProcessGroupNCCL initialized with following options|ProcessGroupNCCL created ncclComm_"
              r"|using GPU \d+ to perform barrier as devices used by this process"
              r"|Running collective: CollectiveFingerPrint"
              r"|Received a dump signal|Snapshot of ranks' latest states|the lagging/dead/mismatched ranks"
              r"|^\s*#\d+ (?:started|finished) ranks:|^\s*\[[\d, ]+\] (?:started|finished) \w+"
              r"|Timeout at collective: "
              r"|^\s*Rank \d+\s*$|Rendezvous complete for workers"
              r"|^\s+(?:restart_count|master_addr|master_port|group_rank"
              r"|group_world_size|local_ranks|role_ranks|global_ranks|role_world_sizes|global_world_sizes)="
              r"|^\s*\[c10d\]\s*$|Starting elastic_operator with launch configs"
              r"|^\s+(?:entrypoint|min_nodes|max_nodes"
              r"|nproc_per_node|run_id|rdzv_backend|rdzv_endpoint|rdzv_configs|max_restarts|monitor_interval"
              r"|log_dir|metrics_cfg)\s+: ")
WORLD = (r"^\s+(?:group_world_size|global_world_sizes)=\[?(?P<world_size>\d+)"
         r"|All DDP processes registered\. Starting ddp with (?P<world_size2>\d+) processes")
# torchelastic's error file, dumped as JSON: `"message": "RendezvousConnectionError: The connection ..."`
ERROR_JSON = r"^\s*\"message\": \"(?P<json_message>(?P<exc>[\w.]+(?:Error|Exception)): [^\"]*)"
# PyTorch Lightning's start-up lines
LIGHTNING = (r"^\s*LOCAL_RANK: \d+ - CUDA_VISIBLE_DEVICES: |^distributed_backend=\w+|^Global seed set to \d+"
             r"|^All DDP processes registered|^Initializing distributed: |^initializing ddp: ")
# a rank's own word that it is joining the process group: Lightning's `initializing ddp` / `Initializing
# distributed: GLOBAL_RANK: 1, MEMBER: 2/8`, fairseq's `| distributed init (rank 1): tcp://host:16344`
JOINED = (r"[Ii]nitializing (?:ddp|distributed): GLOBAL_RANK: (?P<joined>\d+), MEMBER: \d+/(?P<world>\d+)"
          r"|distributed init \(rank (?P<joined2>\d+)\): (?P<method>\S+)")
# `[Rank 3]`, `[PG 0 Rank 3]`, `[PG 0 (default_pg) Rank 3]`, `[PG ID 2 PG GUID 3(tp) Rank 1]`: the rank in
# process group ``pg`` (id 2, GUID 3, description tp); a global rank only in the default group (PG 0) or
# where no group is named
PG_TAG = (r"\[(?:PG (?:ID )?(?P<pg>\d+) (?:PG GUID (?P<guid>[^\s(\]]+)(?:\((?P<desc>[^)]*)\))? )?"
          r"(?:\((?P<desc2>[^)]*)\) )?)?Rank (?P<rank>\d+)\]")
# c10d ties a process group to its NCCL communicator (glog INFO, TORCH_CPP_LOG_LEVEL=INFO)
PG_COMM = r"ProcessGroupNCCL created ncclComm_ (?P<comm>0x[0-9a-fA-F]+)"
LAST_WORK = (
    r"[Ll]ast enqueued (?:NCCL )?work: (?P<last_enqueued>-?\d+), "
    r"last completed (?:NCCL )?work: (?P<last_completed>-?\d+)"
)
AT_WORK = r"(?:at work|work sequence id|Timeout at NCCL work): (?P<seq>\d+)"
CHILD_RANK = r"^\s*rank\s*: (?P<rank>\d+) \(local_rank: (?P<local_rank>\d+)\)"
CHILD_EXIT = r"^\s*exitcode\s*: (?P<exit_code>-?\d+) \(pid: (?P<pid>\d+)\)"
CHILD_HOST = r"^\s*host\s*: (?P<host>\S+)"
CHILD_TIME = r"^\s*time\s*: (?P<time>\d\S+)"
FAILED = r"failed \(exitcode: (?P<exit_code>-?\d+)\) local_rank: (?P<local_rank>\d+) \(pid: (?P<pid>\d+)\)"
# a job of one node, as its launch says it: its local ranks are its global ranks
ONE_NODE = (r"\bgroup_world_size=1\b|--nnodes[= ]1(?:\s|$)|--standalone\b|^\s*max_nodes\s*: 1\s*$"
            r"|WORLD INFO DICT: \{'[^']*': \[[\d, ]*\]\}")
SIGNAL = r"Sending process (?P<pid>\d+) closing signal (?P<signal>\w+)"
SIGNAL_RECEIVED = r"[Ss]ignal (?P<signum>\d+) \((?P<signal>\w+)\) received by PID (?P<pid>\d+)"
MISMATCH = (
    r"Detected mismatch between collectives on ranks\. Rank (?P<rank>\d+) is running collective: "
    r"CollectiveFingerPrint\(SequenceNumber=(?P<seq>\d+), OpType=(?P<op>\w+)"
)
FINGERPRINT_LINE = r"^\s*(?:but )?Rank \d+ is running (?:inconsistent )?collective: CollectiveFingerPrint\("
# gloo's own pairing check: the peer sent another size than this rank's collective expects
GLOO_MISMATCH = r"(?P<message>\d+ vs \d+\. Received data size doesn't match expected size)"
GLOO_ERROR = (r"(?P<message>(?:\[[^\]]*gloo[^\]]*\] )?(?:Connection closed by peer|Connection refused"
              r"|Timed out waiting \d+ms for \w+ operation|Connection reset by peer|Socket Timeout"
              r"|timed out after \d+ms|Network is unreachable).*)")
CRASH = (r"terminate called after throwing|what\(\):\s+(?:CUDA error|NCCL error)|Segmentation fault"
         r"|core dumped")
CANCELLED = r"CANCELLED AT (?P<ts>\S+)(?: DUE TO (?P<message>[A-Z ]+))?"  # (no reason: a person's scancel)
KILLING = r"Killing subprocess (?P<pid>\d+)"  # DeepSpeed's launcher (its own signal: parsers/process_end)
# (Ray wraps a task's exception in its own: `ray.exceptions.RayTaskError(NcclError): ray::Worker.compute()`)
# (an exception without a message ends its traceback with its bare name: `...api.RendezvousTimeoutError`)
EXCEPTION = (r"^(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt)(?:\([\w.]+\))?): (?P<message>.*)"
             r"|^(?P<bare>[A-Za-z_][\w.]*(?:Error|Exception)):?\s*$")
TRACEKIT = r"^\[tracekit\] (?P<kv>(?:\w+=\S*\s*)+)$"
# what tracekit's hook in each rank says when the rank stopped making progress
TRACEKIT_STALL = r"^\[tracekit\] stall: (?P<message>.*)$"
# tracekit run's own lines: launch.<host>.txt (env, packages, argv) and notes in launcher.<host>.log
RUN_ENV = r"^\[tracekit-run\] env (?P<message>\S.*)$"
RUN_PKG = r"^\[tracekit-run\] package (?P<message>\S.*)$"
RUN_LAUNCH = r"^\[tracekit-run\] (?P<message>(?:host|started|cwd|argv|settings)=.*)$"
# kinds whose message is the pattern's group, not the line
OWN_MESSAGE = {EventKind.LAUNCH, EventKind.PACKAGE, EventKind.RUN_NOTE, EventKind.GLOO_SIZE_MISMATCH}
RUN_NOTE = r"^\[tracekit-run\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?P<message>.*)$"
# glog: `[E1202 12:00:00.1 1 x.cpp:1]`, `[E626 06:24:44.9 ProcessGroupNCCL.cpp:616]`,
# `[E ProcessGroupNCCL.cpp:455]`
GLOG = r"^\[?(?P<level>[WEIF])(?:\d{3,4} \d\d:\d\d:\d\d\.\d+(?: +\d+)?)? ?[\w/.\-]+:\d+\]"
KNOWN = (
    r"^(?:Traceback \(most recent call last\)|\s+File \".*\", line \d+|=+$|-+$|\*+$|Root Cause|"
    r"Failures:|\s*time\s*:|\s*error_file|\s*traceback\s*:|torch\.distributed\.elastic|"
    r"\S+\.py:\d+: \w*Warning|USDT:\d{4}-|The above exception|During handling|frame #\d+: "
    r"|Exception raised from)"
)


# a traceback frame of a process group's set-up (distributed_c10d.py, rendezvous.py, the elastic
# rendezvous, vLLM's and DeepSpeed's init_distributed): an exception under it was raised while the job's
# ranks were still coming together, before any collective
INIT_FRAME = (r"^\s*File \".*\", line \d+, in (?P<fn>init_process_group|_new_process_group_helper"
              r"|_store_based_barrier|_env_rendezvous_handler|_tcp_rendezvous_handler|_create_c10d_store"
              r"|_create_tcp_store"
              r"|next_rendezvous|_rendezvous|init_distributed_environment|init_distributed|init_device"
              r"|initialize_model_parallel)\s*$")


def _raised_in_init(df: pl.DataFrame) -> pl.Expr:
    """Per line: the set-up function (``init_process_group``) of the traceback the line ends, where one of
    its frames is one (null otherwise); a new ``Traceback`` line, or the line after an exception, starts
    afresh."""
    t = pl.col("text")
    ended = t.shift(1).over("file").str.contains(EXCEPTION).fill_null(False)
    mark = (pl.when(t.str.contains(INIT_FRAME)).then(t.str.extract(INIT_FRAME, 1))
            .when(t.str.contains(r"^\s*Traceback \(most recent call last\)") | ended).then(pl.lit(""))
            .otherwise(pl.lit(None, pl.Utf8)))
    return pl.when(mark.forward_fill().over("file") != "").then(mark.forward_fill().over("file"))


def _kv(col: str, key: str) -> pl.Expr:
    return pl.col(col).str.extract(rf"(?:^|\s){key}=(\S*)", 1)


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("torch")
    t = pl.col("text")
    tag = t.str.extract_groups(PG_TAG)
    pg_rank = tag.struct.field("rank").cast(pl.Int64, strict=False)
    ray = [c for c in ("ray_pid", "ray_ip", "pdsh_host") if c in lines.columns]  # (process_end reads them)
    df = lines.select("file", "line", "text", "ts", "launch_rank", "local_tag", *ray).with_columns(
        tag.struct.field("pg").alias("pg"), tag.struct.field("guid").alias("pg_name"),
        pl.coalesce(tag.struct.field("desc"), tag.struct.field("desc2")).alias("pg_desc"),
        pl.when(tag.struct.field("pg").is_not_null()).then(pg_rank).alias("pg_rank"),
        # a launcher's prefix names the global rank; a group-local rank never replaces it
        pl.when(tag.struct.field("pg").fill_null("0") == "0").then(pg_rank).alias("_own"),
    ).with_columns(pl.coalesce("launch_rank", "_own").alias("rank"))
    # a line of another group without a launcher's prefix: the global rank of its file, where the file's
    # other lines name exactly one (a per-rank log: its `[PG ID 0 ...]` lines, tracekit's header)
    known = pl.col("_known").drop_nulls()
    df = df.with_columns(pl.coalesce("rank", pl.when(t.str.contains(TRACEKIT)).then(
        _kv("text", "rank").cast(pl.Int64, strict=False))).alias("_known"))
    df = df.with_columns(pl.coalesce("rank", pl.when(known.n_unique().over("file") == 1).then(
        known.first().over("file"))).alias("rank")).drop("_known")
    df = df.with_columns(_raised_in_init(df).alias("_init"))
    frames = []
    kinds = []  # (kind, mask, pattern, extra), masks evaluated together below

    own = t.str.starts_with("[tracekit-run] ")  # tracekit's own record: its values are never log lines

    def add(kind: str, mask: pl.Expr, pattern: str | None = None, **extra: pl.Expr) -> None:
        if kind not in (EventKind.LAUNCH, EventKind.SETTING, EventKind.PACKAGE, EventKind.RUN_NOTE):
            mask = mask & ~own
        kinds.append((kind, mask, pattern, extra))

    def take(kind: str, rows: pl.Series, pattern: str | None, extra: dict) -> None:
        sub = df.filter(rows)
        if pattern:
            g = pl.col("_g").struct
            sub = sub.with_columns(t.str.extract_groups(pattern).alias("_g"))
            sub = sub.with_columns(  # a group named like a column (rank, pid) fills it where it matched
                (pl.coalesce(g.field(n), pl.col(n)) if n in sub.columns else g.field(n)).alias(n)
                for n in re.compile(pattern).groupindex
            ).drop("_g")
        if "message" in sub.columns and (kind in OWN_MESSAGE or kind == EventKind.SETTING):
            message = pl.col("message")  # the pattern's own group (tracekit run's `env KEY=value`)
        elif "json_message" in sub.columns:
            message = pl.col("json_message")
        elif "key" in sub.columns:  # ProcessGroupNCCL's options: `KEY: value`
            message = pl.format("{}={}", "key", "value")
        else:
            message = t
        frames.append(sub.with_columns(pl.lit(kind).alias("kind"), message.alias("message"), **extra))

    # each field wherever it stands: torch 1.x prints `WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=...)`, posts
    # reorder or cut them (`WorkNCCL(OpType=ALLREDUCE, SeqNum=458) ran for`, a line wrapped mid-name)
    field = {n: t.str.extract(rf"Work(?:NCCL|Gloo)?\(.*?\b{k}=(\w+)", 1)
             for n, k in (("seq", "SeqNum"), ("op", "OpType"), ("numel", "NumelIn"))}
    work = t.str.contains(r"Work(?:NCCL|Gloo)?\((?:SeqNum|OpType)=")
    add(EventKind.WATCHDOG_TIMEOUT, work & t.str.contains(TIMED_OUT),
        WATCHDOG, seq=pl.coalesce(pl.col("seq"), field["seq"]), op=pl.coalesce(pl.col("op"), field["op"]),
        numel=pl.coalesce(pl.col("numel"), field["numel"]))
    add(EventKind.WATCHDOG_ABORT, t.str.contains(ABORT) & ~t.str.contains(CUDA))
    add(EventKind.CUDA_ERROR, t.str.contains(CUDA))
    add(EventKind.STALL, t.str.contains(STUCK), where=pl.lit("c10d"))
    add(EventKind.STALL, t.str.contains(STORE_WAIT), where=pl.lit("c10d store barrier"))
    add(EventKind.EXCEPTION, t.str.contains(ASYNC_ERROR), WATCHDOG)
    add(EventKind.RANK_MISSING, t.str.contains(DESYNC), DESYNC, where=pl.lit("c10d desync report"))
    add(EventKind.RANK_JOINED, t.str.contains(JOINED), JOINED, where=pl.lit("lightning"),
        rank=pl.coalesce(t.str.extract(JOINED, 1), t.str.extract(JOINED, 3)).cast(pl.Int64, strict=False),
        numel=t.str.extract(JOINED, 2).cast(pl.Int64, strict=False))
    add(EventKind.CHILD_FAILED, t.str.contains(RAY_DIED), where=pl.lit("ray"))
    add(EventKind.C10D_ERROR, t.str.contains(KEEP_ALIVE), where=pl.lit("torchelastic rendezvous keep-alive"))
    add(EventKind.SETTING, t.str.contains(PG_OPTION), PG_OPTION, where=pl.lit("c10d"))
    add(EventKind.WATCHDOG_STATUS, t.str.contains(LAST_WORK), LAST_WORK,
        seq=t.str.extract(AT_WORK, 1).cast(pl.Int64, strict=False))
    add(EventKind.COLLECTIVE_MISMATCH, t.str.contains("Detected mismatch between collectives"), MISMATCH)
    # (the same report posted with its sides on lines of their own: `but Rank 0 is running collective: ...`)
    add(EventKind.COLLECTIVE_MISMATCH,
        t.str.contains(FINGERPRINT_LINE) & ~t.str.contains("Detected mismatch"))
    add(EventKind.GLOO_SIZE_MISMATCH,
        t.str.contains("Received data size doesn't match expected size", literal=True),
        GLOO_MISMATCH)
    add(EventKind.CHILD_FAILED, t.str.contains(FAILED), FAILED)
    add(EventKind.CLOSING_SIGNAL, t.str.contains(SIGNAL), SIGNAL)
    # (in torchrun's error block, `traceback : Signal 9 (SIGKILL) received by PID` is that block's own end,
    # its rank_exit, not another)
    add(EventKind.SIGNAL, t.str.contains(SIGNAL_RECEIVED) & ~t.str.contains(r"^\s*traceback\s*:"),
        SIGNAL_RECEIVED)
    # (raised under a set-up frame: ``where`` names it, `init_process_group`)
    add(EventKind.TRANSPORT_ERROR, t.str.contains(GLOO_ERROR) & ~t.str.contains("NCCL INFO"),
        where=pl.col("_init"))
    add(EventKind.EXCEPTION, t.str.contains(EXCEPTION) & ~t.str.contains(process_end.NOT_EXCEPTIONS),
        EXCEPTION,
        where=pl.col("_init"))
    add(EventKind.CRASH, t.str.contains(CRASH) & ~t.str.contains("DistBackendError", literal=True)
        & ~t.str.contains(process_end.ANY))  # (a launcher's word of a signal: a process end, below)
    add(EventKind.JOB_CANCELLED, t.str.contains(CANCELLED))
    add(EventKind.CLOSING_SIGNAL, t.str.contains(KILLING), KILLING)
    add(EventKind.LAUNCH, t.str.contains(RUN_LAUNCH), RUN_LAUNCH)
    add(EventKind.SETTING, t.str.contains(RUN_ENV), RUN_ENV)
    add(EventKind.PACKAGE, t.str.contains(RUN_PKG), RUN_PKG)
    add(EventKind.RUN_NOTE, t.str.contains(RUN_NOTE), RUN_NOTE)
    add(EventKind.STALL, t.str.contains(TRACEKIT_STALL), where=pl.lit("tracekit"))
    add(EventKind.PG_COMM, t.str.contains(PG_COMM), PG_COMM, where=pl.lit("c10d"))
    add(EventKind.C10D_ERROR, t.str.contains(GLOG) & t.str.starts_with("[E") | t.str.contains(r"^E\d{3,4} "))
    # c10d's store socket gives up in W lines too (a port in use, a host name no resolver knows)
    add(EventKind.C10D_ERROR, t.str.contains(GLOG) & t.str.starts_with("[W") & t.str.contains(STORE_SOCKET)
        & ~t.str.contains("errno: 97", literal=True))  # (an IPv6 address on a host without IPv6: next one)
    add(EventKind.EXCEPTION, t.str.contains(ERROR_JSON), ERROR_JSON)
    # the line under `Last error:` in an NCCL exception is NCCL's own reason (what its WARN said)
    add(EventKind.NCCL_WARN, (t.shift(1).over("file").str.strip_chars() == "Last error:").fill_null(False)
        & (t.str.strip_chars() != "") & ~reads_as("MISMATCH", "text"), where=pl.lit("NCCL's last error"))

    # NCCL's own WARN words pasted bare, with neither their `host:pid:tid [dev] NCCL WARN` head nor a `Last
    # error:` above (`Duplicate GPU detected : rank 9 and rank 1 both on CUDA device 34000`): NCCL's reason
    add(EventKind.NCCL_WARN, t.str.contains(BARE_NCCL) & ~reads_as("MISMATCH", "text"),
        where=pl.lit("NCCL's message"))
    # NCCL's own word under `Last error:` that the ranks' sizes differ (`message truncated`): a mismatch
    add(EventKind.COLLECTIVE_MISMATCH,
        (t.shift(1).over("file").str.strip_chars() == "Last error:").fill_null(False)
        & reads_as("MISMATCH", "text"), where=pl.lit("NCCL's last error"))
    # one pass for every mask (a polars call costs more than its work on a small log), then the kinds found
    masks = df.select(mask.alias(str(i)) for i, (_, mask, _, _) in enumerate(kinds))
    for (kind, _, pattern, extra), rows in zip(kinds, masks):
        if rows.any():
            take(kind, rows, pattern, extra)

    # ChildFailedError blocks: host, rank and exit code sit on consecutive lines.
    block = df.with_columns(
        t.str.extract(CHILD_HOST, 1).alias("b_host"), t.str.extract(CHILD_TIME, 1).alias("b_time"),
        t.str.extract(CHILD_RANK, 1).cast(pl.Int64, strict=False).alias("b_rank"),
        t.str.extract(CHILD_RANK, 2).cast(pl.Int64, strict=False).alias("b_local"),
        t.str.extract(CHILD_EXIT, 1).cast(pl.Int64, strict=False).alias("exit_code"),
        t.str.extract(CHILD_EXIT, 2).cast(pl.Int64, strict=False).alias("pid"),
        # the summary lists the other failures first, then the first one torchrun observed
        pl.when(t.str.contains(r"^\s*Root Cause")).then(pl.lit("torchrun: first observed failure"))
        .when(t.str.contains(r"^\s*Failures:")).then(pl.lit("torchrun: another failure")).alias("b_where"),
    ).with_columns(pl.col("b_host", "b_rank", "b_local", "b_time").forward_fill(limit=3).over("file"),
                   pl.col("b_where").forward_fill().over("file").fill_null("torchrun"))
    exits = block.filter(pl.col("exit_code").is_not_null() & pl.col("b_rank").is_not_null())
    if exits.height:
        frames.append(exits.with_columns(
            pl.lit(EventKind.RANK_EXIT).alias("kind"), pl.col("b_rank").alias("rank"),
            pl.col("b_host").alias("host"),
            pl.col("b_where").alias("where"), pl.coalesce("b_time", "ts").alias("ts"),
            pl.format("rank {} (local_rank {}) on {} exited with code {}", "b_rank", "b_local", "b_host",
                      "exit_code").alias("message"),
        ))
    ended = process_end.decode(df)  # every launcher's and runtime's word that a process ended
    if ended is not None:
        frames.append(ended)

    # ranks that c10d's lines name (a global one: no launcher prefix said otherwise) and torchrun's failures
    said = df.filter(pl.col("_own").is_not_null() & pl.col("launch_rank").is_null()).select(
        "file", pl.col("_own").alias("rank"), pl.lit("c10d").alias("source")).unique(maintain_order=True)
    failed = exits.select("file", pl.col("b_host").alias("host"), "pid", pl.col("b_rank").alias("rank"),
                          pl.col("b_local").alias("local_rank"), pl.lit("torchrun").alias("source"))
    if ended is not None and ended.filter(pl.col("kind") == EventKind.RANK_EXIT).height:
        failed = pl.concat([failed, ended.filter(pl.col("kind") == EventKind.RANK_EXIT).select(
            "file", "pid", "rank", pl.lit("torchrun").alias("source"))], how="diagonal_relaxed")
    elastic = df.filter(t.str.contains(ELASTIC)).with_columns(
        t.str.extract(ELASTIC, 1).alias("_state"),
        *[t.str.extract(p, 1).alias(f"_{k}") for k, p in ELASTIC_KV.items()])
    if elastic.height:  # the agent's word about each worker: a clean exit, or a failure
        frames.append(elastic.with_columns(
            pl.when(pl.col("_state") == "SUCCEEDED").then(pl.lit(EventKind.CLEAN_EXIT))
            .otherwise(pl.lit(EventKind.CHILD_FAILED)).alias("kind"),
            pl.col("_rank").cast(pl.Int64, strict=False).alias("rank"), pl.col("_host").alias("host"),
            pl.when(pl.col("_state") == "SUCCEEDED").then(0).alias("exit_code"),
            pl.format("torchelastic: worker of global rank {} on {} {}", "_rank", "_host", "_state")
            .alias("message"),
            pl.lit("torchelastic").alias("where")))
    worlds = pl.concat([
        elastic.select("file", pl.col("_host").alias("host"),
                       pl.col("_world_size").cast(pl.Int64, strict=False).alias("world_size")),
        df.filter(t.str.contains(WORLD)).select(
            "file", pl.coalesce(t.str.extract(WORLD, 1), t.str.extract(WORLD, 2))
            .cast(pl.Int64, strict=False).alias("world_size")),
    ], how="diagonal_relaxed").with_columns(pl.lit("torchrun").alias("source"))
    header = df.filter(t.str.contains(TRACEKIT))
    ranks = header.select(
        "file",
        _kv("text", "host").alias("host"), _kv("text", "pid").cast(pl.Int64, strict=False).alias("pid"),
        _kv("text", "rank").cast(pl.Int64, strict=False).alias("rank"),
        _kv("text", "local_rank").cast(pl.Int64, strict=False).alias("local_rank"),
        _kv("text", "node_rank").cast(pl.Int64, strict=False).alias("node"),
        _kv("text", "world_size").cast(pl.Int64, strict=False).alias("world_size"),
        _kv("text", "torch").alias("torch_version"), _kv("text", "deepspeed").alias("deepspeed_version"),
        pl.lit("tracekit").alias("source"),
    )
    events = pl.concat(frames, how="diagonal_relaxed") if frames else None
    if events is not None:
        for c in ("seq", "numel", "timeout_ms", "last_enqueued", "last_completed", "exit_code", "pid", "rank",
                  "local_rank"):
            if c in events.columns:
                events = events.with_columns(pl.col(c).cast(pl.Int64, strict=False))
        if "op" in events.columns:
            events = events.with_columns(pl.col("op").str.to_lowercase())
        events = _one_node_ranks(_rank_by_pid(events), df.filter(t.str.contains(ONE_NODE))["file"].unique())
        events = events.unique(["file", "line", "kind"], maintain_order=True).with_columns(
            pl.when(pl.col("kind").is_in([EventKind.NCCL_WARN, EventKind.EXCEPTION, EventKind.CRASH,
                                          EventKind.C10D_ERROR, EventKind.COLLECTIVE_MISMATCH]))
            .then(message_name()).alias("message_id"))
    after_last_error = ((t.shift(1).over("file").str.strip_chars() == "Last error:").fill_null(False)
                        & (t.str.strip_chars() != ""))
    used = after_last_error | t.str.contains(any_of(BARE_NCCL,
        r"Work(?:NCCL|Gloo)?\((?:SeqNum|OpType)=", LAST_WORK, ABORT, CUDA, STUCK, ASYNC_ERROR, DESYNC,
        RAY_DIED, PG_OPTION, C10D_KNOWN, ELASTIC, WORLD, KEEP_ALIVE, FINGERPRINT_LINE, "Detected mismatch",
        "Received data size doesn't match", FAILED, SIGNAL, SIGNAL_RECEIVED,
        GLOO_ERROR, EXCEPTION, GLOG, CHILD_HOST, CHILD_RANK, CHILD_EXIT, TRACEKIT, KNOWN,
        r"^\[tracekit-run\] ", CRASH,
        CANCELLED, KILLING, r"^E\d{3,4} ", ERROR_JSON, LIGHTNING, TRACEKIT_STALL, process_end.ANY))
    # torchrun's failed local ranks of a one-node job
    if events is not None and "local_rank" in events.columns:
        local = pl.col("local_rank").cast(pl.Int64, strict=False)
        one = events.filter((pl.col("kind") == EventKind.CHILD_FAILED) & (pl.col("rank") == local))
        failed = pl.concat([failed, one.select("file", "pid", "rank", local.alias("local_rank"),
                                               pl.lit("torchrun").alias("source"))], how="diagonal_relaxed")
    ranks = pl.concat([ranks, said, failed, worlds], how="diagonal_relaxed")
    return Parsed("torch", {"events": events, "ranks": ranks}, df.filter(used).select("file", "line"))


def _rank_by_pid(events: pl.DataFrame) -> pl.DataFrame:
    """A line that names a pid (``failed (exitcode: -9) local_rank: 1 (pid: 36071)``) gets the rank that
    torchrun's error block gives that pid in the same file (over the rank of the file's other lines)."""
    if "pid" not in events.columns:
        return events
    named = ((pl.col("kind") == EventKind.RANK_EXIT) & pl.col("pid").is_not_null()
             & pl.col("rank").is_not_null())
    known = (events.filter(named).select("file", "pid", pl.col("rank").alias("_by_pid"))
             .unique(["file", "pid"]))
    if not known.height:
        return events
    return (events.join(known, on=["file", "pid"], how="left", coalesce=True)
            .with_columns(pl.coalesce("_by_pid", "rank").alias("rank")).drop("_by_pid"))


def _one_node_ranks(events: pl.DataFrame, one_node: pl.Series) -> pl.DataFrame:
    """torchrun's ``failed (exitcode: N) local_rank: R`` names a local rank: the global one too where the
    file says the job has one node (its launch command, torchrun's rendezvous result or launch config)."""
    if "local_rank" not in events.columns or not one_node.len():
        return events
    local = pl.col("local_rank").cast(pl.Int64, strict=False)
    mine = pl.col("file").is_in(one_node.implode()) & (pl.col("kind") == EventKind.CHILD_FAILED)
    return events.with_columns(pl.when(mine).then(pl.coalesce("rank", local)).otherwise(pl.col("rank"))
                               .alias("rank"))
