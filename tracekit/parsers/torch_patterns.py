"""The words of torchrun, PyTorch c10d and the Python runtime that ``parsers/torch_log`` reads, as patterns:
c10d's watchdog lines of every generation, torchrun's error block, closing signals, the elastic agent's
records, DETAIL mismatch reports, gloo's transport errors, Python exceptions and ``tracekit run``'s own
lines. Each says which code prints it."""

from __future__ import annotations

from tracekit.meanings import STORE_SOCKET
from tracekit.nccl_messages import bare_message
from tracekit.schema import EventKind
from tracekit.start_up_frames import TRACEBACK_FRAME

# every generation: `WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=.., NumelOut=.., Timeout(ms)=600000)`, and
# before torch 1.10 `WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000)` without a sequence number; torch_npu's
# ProcessGroupHCCL prints the same as `WorkHCCL(SeqNum=, OpType=, NumelIn=, NumelOut=, Timeout(ms)=)`
# (github:Ascend/pytorch torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:645-659, its checkTimeout's
# `[Rank N] Watchdog caught collective operation timeout: ... ran for N milliseconds before timing out.` at
# :904-911, 9e73e708a)
WORK = r"Work(?:NCCL|Gloo|HCCL)?\("
WATCHDOG = (
    r"Work(?:NCCL|Gloo|HCCL)?\((?:SeqNum=(?P<seq>\d+), )?OpType=(?P<op>\w+)(?:, NumelIn=(?P<numel>\d+))?"
    r"(?:, NumelOut=\d+)?, Timeout\(ms\)=(?P<timeout_ms>\d+)\)"
)
TIMED_OUT = r"operation timeout: Work|before timing out|timed out"
# c10d taking the process down after a timeout or an error elsewhere: a consequence
ABORT = (r"Some [NH]CCL operations have failed or timed out|we are taking the entire process down"
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
# c10d's group status (`last enqueued NCCL work: 9387, last completed NCCL work: 9386`, `PG status: last enqueued
# work: ...`); torch_npu's `Last enqueued HCCL work: N, last completed HCCL work: M` (ProcessGroupHCCL.cpp:1707-1709)
LAST_WORK = (
    r"[Ll]ast enqueued (?:[NH]CCL )?work: (?P<last_enqueued>-?\d+), "
    r"last completed (?:[NH]CCL )?work: (?P<last_completed>-?\d+)"
)
AT_WORK = r"(?:at work|work sequence id|Timeout at NCCL work): (?P<seq>\d+)"
CHILD_RANK = r"^\s*rank\s*: (?P<rank>\d+) \(local_rank: (?P<local_rank>\d+)\)"
# (the pid may be missing: a block pasted without it, `  exitcode  : 1` in dv12-007/dv12-008, `exitcode: 1` in
# dv7-001; torch/distributed/elastic/multiprocessing/errors/__init__.py _FAILURE_FORMAT_TEMPLATE writes
# `  exitcode  : ${exitcode} (pid: ${pid})`)
CHILD_EXIT = r"^\s*exitcode\s*: ?(?P<exit_code>-?\d+)(?: \(pid: (?P<pid>\d+)\))?(?:\s|$)"
CHILD_HOST = r"^\s*host\s*: (?P<host>\S+)"
CHILD_TIME = r"^\s*time\s*: (?P<time>\d\S+)"
FAILED = r"failed \(exitcode: (?P<exit_code>-?\d+)\) local_rank: (?P<local_rank>\d+) \(pid: (?P<pid>\d+)\)"
# a job of one node, as its launch says it: its local ranks are its global ranks
ONE_NODE = (r"\bgroup_world_size=1\b|--nnodes[= ]1(?:\s|$)|--standalone\b|^\s*max_nodes\s*: 1\s*$"
            r"|WORLD INFO DICT: \{'[^']*': \[[\d, ]*\]\}|\bnnodes=1, num_local_procs="
            r"|\bsrun\b.*\s-N ?1\b|\"group_world_size\": 1\b"
            r"|(?:--master[_-]addr[= ]|MASTER_ADDR=|--rdzv[_-]endpoint[= ]|tcp://)(?:127\.0\.0\.1|localhost)\b")
SIGNAL = r"Sending process (?P<pid>\d+) closing signal (?P<signal>\w+)"
SIGNAL_RECEIVED = r"[Ss]ignal (?P<signum>\d+) \((?P<signal>\w+)\) received by PID (?P<pid>\d+)"
MISMATCH = (
    r"Detected mismatch between collectives on ranks\. Rank (?P<rank>\d+) is running collective: "
    r"CollectiveFingerPrint\(SequenceNumber=(?P<seq>\d+), OpType=(?P<op>\w+)"
)
FINGERPRINT_LINE = (r"^\s*(?:but )?Rank \d+ is running (?:inconsistent )?collective:"
                    r"(?: CollectiveFingerPrint\(|\s*$)")  # (its fingerprint on the next line, where wrapped)
# gloo's own pairing check: the peer sent another size than this rank's collective expects
GLOO_MISMATCH = r"(?P<message>\d+ vs \d+\. Received data size doesn't match expected size)"
# gloo's own size checks in its transports (GLOO_ENFORCE_LE/EQ in tcp/pair.cc, ibverbs/buffer.cc,
# uv/pair.cc): `[enforce fail at .../gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes.
# 194478720 vs 4` -- the peer sent more bytes than this rank's buffer holds: the two ran different
# collectives or one of other sizes (a size of a buffer, a length, a byte count on each side)
GLOO_ENFORCE = (r"enforce fail at [^\]]*gloo/transport/[^\]]*\]\s*(?P<message>[^\]]*?(?:length|nbytes|size)"
                r".*?\. (?P<got>\d+) vs (?P<want>\d+))")
GLOO_ERROR = (r"(?P<message>(?:\[[^\]]*gloo[^\]]*\] )?(?:Connection closed by peer|Connection refused"
              r"|Timed out waiting \d+ms for \w+ operation|Connection reset by peer|Socket Timeout"
              r"|timed out after \d+ms|Network is unreachable).*)")
CRASH = (r"terminate called after throwing|what\(\):\s+(?:CUDA error|NCCL error)|Segmentation fault"
         r"|core dumped")
# NCCL's error code printed on a line of its own: torch < 1.9's exception text under a wrapped `RuntimeError:
# ...:` line (`NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:911, invalid usage, NCCL version
# 2.7.8`), and the NCCLCHECK macro of NCCL's own examples that programs copy (TensorRT-LLM's plugins:
# `Failed, NCCL error allreducePlugin.cpp:295 'internal error - please report this issue ...'`; nccl-tests'
# `Test NCCL failure` is parsers/nccl_tests')
# (c10d's message, ProcessGroupNCCL / NCCLUtils.hpp: `NCCL error in: <file>:<line>, <what>, NCCL version <v>`, at
# a line's start or inside a program's own error line: `worker ERROR: Worker encountered error NCCL error in: ..`)
NCCL_FAILED = (r"(?:^|\s)NCCL error in: \S+:\d+, (?P<what>[^,]+), NCCL version"
               r"|^(?:\S+:? )?Failed, NCCL error \S+:\d+ '(?P<what2>[^']+)'")
# a C++ exception that escaped (`terminate called after throwing an instance of 'gloo::IoException'`): its
# text is on the next line, `  what():  [.../pair.cc:378] writev [127.0.0.1]:11160: Connection reset by peer`
TERMINATE = r"terminate called after throwing an instance of '(?P<type>[^']+)'"
WHAT = r"\bwhat\(\):\s+(?P<what>\S.*)$"
CANCELLED = r"CANCELLED AT (?P<ts>\S+)(?: DUE TO (?P<message>[A-Z ]+))?"  # (no reason: a person's scancel)
KILLING = r"Killing subprocess (?P<pid>\d+)"  # DeepSpeed's launcher (its own signal: parsers/process_end)
# (Ray wraps a task's exception in its own: `ray.exceptions.RayTaskError(NcclError): ray::Worker.compute()`)
# (an exception without a message ends its traceback with its bare name: `...api.RendezvousTimeoutError`)
# (TensorFlow 1.x ends its traceback with `AbortedError (see above for traceback): <message>`)
# (posted indented, as a quoted traceback: `  NameError: name 'die' is not defined`)
EXCEPTION = (r"^\s*(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt)(?:\([\w.]+\))?)"
             r"(?: \(see above for traceback\))?: (?P<message>.*)"
             r"|^\s*(?P<bare>[A-Za-z_][\w.]*(?:Error|Exception)):?\s*$")
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


# a traceback frame of a job's start-up (start_up_frames.FRAMES: a process group's or a communicator's
# creation, the rendezvous, DDP's construction, vLLM's, DeepSpeed's and Megatron's init): an exception under
# it was raised while the job's ranks were still coming together, before any collective of the training
INIT_FRAME = TRACEBACK_FRAME
# the word torch_log gives a traceback cut before its exception, where nothing else in its file says more
CUT_TRACEBACK = "a Python traceback begins here and its exception is cut from the excerpt: a process raised"


# start-up waits a runtime reports in its own words, saying how long it waited or how many of the world came
# (issue 31, branch init): a ``stall`` event whose ``where`` names the family (rules_init.START_UP_WAITS
# says what each means)
# - JAX's TPU backend (jax/_src/xla_bridge.py, ``tpu_client_timer_callback``, at jax-ml/jax 00acf459: a
#   threading.Timer of ``timer_secs=60.0`` warns while ``xla_client.make_tpu_client()`` has not returned,
#   which waits for every host of the slice): `TPU backend initialization is taking more than 60.0 seconds.
#   Did you run your code on all TPU hosts?`
BACKEND_INIT_SLOW = r"\b\w+ backend initialization is taking more than [\d.]+ seconds"
# - torchft's lighthouse (pytorch/torchft src/lighthouse.rs, ``quorum_compute``, logged at every quorum tick,
#   100 ms by default): fewer replica groups asked for a quorum than it needs: `No quorum, only have 1
#   participants, need 2` (early versions), `New quorum not ready, only have 1 participants, need
#   min_replicas 2 [...]` (later; its `need at least half of N healthy workers` is a split-brain guard
#   between live groups, not a start-up, and is not read)
QUORUM_SHORT = r"\bonly have \d+ participants, need (?:min_replicas )?\d+\b"
# c10d's watchdog line cut after its head (ProcessGroupNCCL.cpp's checkTimeout: `Watchdog caught collective
# operation timeout: ` then the work's `WorkNCCL(...)`), its work on the next line
WRAPPED_HEAD = r"Watchdog caught collective operation timeout:\s*$"
# PaddlePaddle's comm task watchdog (github:PaddlePaddle/Paddle paddle/phi/core/distributed/comm_task_manager.cc,
# CommTaskLoop at 05ba5e51: `LOG(WARNING) << "Find timeout init but not start task:" << task->GetTraceMsg()`, and
# `"Find timeout start but not finish task:"`; nccl_comm_task.cc GetTraceMsg at 00816fcb: `group_key:K,group_ranks:
# [0, 1],global_rank:R,local_rank:L,comm_count:SEQ,op:OP,started:0,completed:0,numel:N,nranks:M`): a rank's
# collective ran past FLAGS' timeout, issued and not started (its stream still busy before it) or started and not
# finished (waiting for its peers)
PADDLE_TIMEOUT = (r"Find timeout (?:init but not start|start but not finish) task: ?group_key:(?P<pg>[^,]*),"
                  r"group_ranks:\[[^\]]*\],global_rank:(?P<rank>\d+),local_rank:\d+,comm_count:(?P<seq>\d+),"
                  r"op:(?P<op>\w+),started:\d,completed:\d,numel:(?P<numel>\d+)")
