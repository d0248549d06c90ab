"""What the runtimes print while their start-up waits for its peers or its coordinator, and when that wait
ends badly, as data read from the code that prints it (issue 31, "Say what the evidence shows").

Each entry: a name, the runtime, a pattern on the line (searched anywhere in it: launchers and loggers put
prefixes before it), what the line means (``Means``), what start-up was waiting for, and where the runtime
writes it (``repo path:line`` at the commit named; older spellings said per entry). Named groups keep the
line's facts: ``address`` (host:port), ``error``, ``seconds``.

The meanings that decide an init stall by themselves are those that show time passed or the runtime gave
up (``DECISIVE``): a timeout, a give-up after retries, a connect retried (NCCL prints one line per 1000
refused attempts, each after a sleep), no interface to listen on, a foreign peer on the listening socket
while the communicator was never reported complete. A wait said once (``WAITING``: Paddle's ``init nccl
context nranks: 4``) decides nothing alone; UNDECIDED names it. XLA's ``Waiting to connect to client mesh
master (300 seconds) host:port`` (pytorch/xla third_party/xla_client/mesh_service.cc:208) is not an entry:
the mesh service waits so at every ``xm.rendezvous``, not only at start-up; on dev, two excerpts of that one
line are an init stall at start-up and a mid-training save's rendezvous (dv6-005, dv6-006), and nothing in
the line tells them apart.

Sources (commits): NVIDIA/nccl 5067397c (master) and the release tags named; ray-project/ray
028939cb (service_based_gcs_client.cc) and 00f8d999 (gcs_rpc_client.h); pytorch/pytorch's c10d files by
function (the checkout too big to fetch here: file and function named instead of a line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from tracekit.parsers import any_of


class Means(Enum):
    """What a start-up line says of its wait."""
    WAITING = "is waiting for"  # a wait begun: decides nothing alone
    #: a wait begun, said by a program of the job rather than a runtime (UNDECIDED does not name it; it
    #: decides only where it ends the log: rules_init.start_up_ends_the_log)
    JOINING = "is about to wait for"
    RETRYING = "kept retrying a refused connect to"  # time passed: the peer's socket was not listening
    TIMED_OUT = "waited past its limit for"
    GAVE_UP = "gave up on"
    NO_INTERFACE = "found no network interface for"
    FOREIGN_PEER = "had a foreign process connect where it waits for"
    UNREACHABLE = "got no answer from"  # packets dropped (ETIMEDOUT, no route): the network path, not a wait
    UNRESOLVED = "could not resolve the name of"  # getaddrinfo failed: retried until the connect deadline


#: (no interface is not among them: a host without the interface NCCL_SOCKET_IFNAME names is a transport set-up
#: failure in the recorded real-NCCL run, samples/gpu_2x1_badiface, and the wild labels of that line disagree)
DECISIVE = frozenset({Means.RETRYING, Means.TIMED_OUT, Means.GAVE_UP, Means.FOREIGN_PEER, Means.UNRESOLVED})


@dataclass(frozen=True)
class Message:
    name: str
    runtime: str
    pattern: str
    means: Means
    awaited: str  # what start-up waited for, said after ``means`` (the verdict names it)
    source: str  # where the runtime writes it: repo path:line (commit in the module's docstring)
    decoded: bool = True  # False: no other parser makes an event of it; parsers/start_up makes a `stall`


_ADDR = r"(?P<address>\[?[\w.:\-]+\]?[:<]\d+>?)"
MESSAGES: tuple[Message, ...] = (
    # NCCL's sockets (bootstrap, proxy, NET/Socket): connect() refused, retried after a sleep
    Message("nccl_connect_retrying", "NCCL",
            r"Call to connect returned (?P<error>Connection refused), retrying",
            Means.RETRYING, "a peer's NCCL socket (the bootstrap root or ring, a proxy)",
            "NVIDIA/nccl src/misc/socket.cc:471 and :519 at v2.21.5-1 (socketStartConnect/socketPollConnect: "
            "one line per 1000 refused attempts, each after a sleep); src/include/socket.h:378 at v2.4.2-1 "
            "(every attempt)"),
    Message("nccl_connect_retrying_counted", "NCCL",
            rf"\w+: connect to {_ADDR} returned (?P<error>Connection refused), retrying "
            r"\((?P<n>\d+)/(?P<of>\d+)\) after sleep",
            Means.RETRYING, "a peer's NCCL socket",
            "NVIDIA/nccl src/os/linux.cc:293 at 5067397c (ncclOsSocketStartConnect; src/os/windows.cc:322)"),
    # the same retry on a timeout or no route (ETIMEDOUT, EHOSTUNREACH: the connect's packets get no answer):
    # the network path between the hosts (a firewall, a wrong interface), a transport's failure, not a wait
    # for a peer that is not up yet; on dev: nccl-024 (timed out, transport-error) against dv10-011 (refused)
    Message("nccl_connect_unanswered", "NCCL",
            r"Call to connect returned (?P<error>Connection timed out|No route to host), retrying"
            rf"|\w+: connect to {_ADDR} returned (?P<error2>Connection timed out|No route to host), retrying",
            Means.UNREACHABLE, "a peer's address",
            "NVIDIA/nccl src/include/socket.h:398 at v2.7.8-1 (connectAddress: ETIMEDOUT retried with the same "
            "line); src/os/linux.cc:293 at 5067397c (EHOSTUNREACH, ETIMEDOUT)"),
    Message("nccl_connect_gave_up", "NCCL",
            r"socket(?:Start|Poll)Connect: exceeded (?:retries|timeouts) \(\d+\)"
            rf"|connect to {_ADDR} returned (?P<error2>.+?), exceeded error retry count",
            Means.GAVE_UP, "a peer's NCCL socket after its retries",
            "NVIDIA/nccl src/misc/socket.cc:467/476/516/525 at v2.21.5-1; src/os/linux.cc:288 at 5067397c"),
    Message("nccl_no_interface", "NCCL",
            r"Bootstrap ?: no socket interface found|NET/Socket ?: No usable listening interface found",
            Means.NO_INTERFACE, "the bootstrap's listening socket (NCCL_SOCKET_IFNAME names none that is up)",
            "NVIDIA/nccl src/bootstrap.cc:126 and :120 at 5067397c (the same words since v2.4)"),
    Message("nccl_wrong_magic", "NCCL",
            r"socketFinalizeAccept: wrong magic|socketFinalizeAccept from \S+: socket magic mismatch",
            Means.FOREIGN_PEER, "its NCCL peers (a program that is not NCCL, or another job, on its port)",
            "NVIDIA/nccl src/misc/socket.cc:432 at v2.21.5-1 (`wrong magic %lx != %lx`: the connection is "
            "closed and the accept begins again); src/misc/socket.cc:361 at 5067397c"),
    # Ray: a node's GCS client (ray start, a raylet, a driver) and the cluster's head
    Message("ray_gcs_reconnect_gave_up", "Ray",
            rf"Couldn't reconnect to GCS server\. The last attempted GCS server address was {_ADDR}",
            Means.GAVE_UP, "the Ray head's GCS server after its retries",
            "ray-project/ray src/ray/gcs/gcs_client/service_based_gcs_client.cc (ReconnectGcsServer: "
            "RAY_LOG(FATAL) after ping_gcs_rpc_server_max_retries pings)", decoded=False),
    Message("ray_gcs_connect_timed_out", "Ray",
            rf"Failed to connect to GCS at address {_ADDR} within (?P<seconds>\d+) seconds",
            Means.TIMED_OUT, "the Ray head's GCS server",
            "ray-project/ray src/ray/rpc/gcs_server/gcs_rpc_client.h (GcsRpcClient's constructor: "
            "WaitForConnected past gcs_rpc_server_connect_timeout_s)", decoded=False),
    # HCCL (Ascend): the socket a communicator sets up with its peer, never connected
    Message("hccl_connect_timed_out", "HCCL",
            r"Get_Socket_Timeout\(EI0006\)|EI0006:.{0,80}Getting socket times out\. Reason: 1\. The remote "
            r"does not initiate a connect request",
            Means.TIMED_OUT, "a peer NPU's connect request (HCCL_CONNECT_TIMEOUT, 120 s by default)",
            "CANN's error catalog, EI0006 (HCCL is closed source; the text as HCCL prints it: "
            "`Getting socket times out. Reason: 1. The remote does not initiate a connect request`; a "
            "collective's data wait is another reason, `Remote Rank did not send the data in time`, read "
            "by hccl_messages)", decoded=False),
    # Horovod's launcher (horovodrun): its wait for every task to start and report back
    Message("horovod_start_timed_out", "Horovod",
            r"Timed out waiting for (?P<activity>[^.]{1,80})\. Please check connectivity between servers",
            Means.TIMED_OUT, "its tasks on every host to start and register (horovodrun's --start-timeout)",
            "horovod/horovod horovod/runner/launch.py (the Timeout's message: `Timed out waiting for "
            "{activity}. Please check connectivity between servers. You may need to increase the "
            "--start-timeout parameter ...`) and horovod/runner/common/util/timeout.py "
            "(check_time_out_for: ` Timeout after N seconds.`)", decoded=False),
    # Open MPI's launcher (mpirun): the daemons it starts on the other nodes never reported back
    Message("orte_daemons_not_started", "Open MPI",
            r"ORTE was unable to reliably start one or more daemons",
            Means.GAVE_UP, "its daemons on the other nodes (ssh or srun could not start orted there, or they "
            "cannot connect back to mpirun's node)",
            "open-mpi/ompi orte/mca/errmgr/base/help-errmgr-base.txt:36 at v4.1.8", decoded=False),
    # start-up begun, in the runtimes' words: a wait said once, which decides nothing alone; UNDECIDED names
    # it where the log ends there (undecided.py: "start-up began ... and nothing after it is logged")
    Message("paddle_nccl_context", "Paddle",
            r"init nccl context nranks: (?P<nranks>\d+) local rank: (?P<rank>\d+)",
            Means.WAITING, "its NCCL communicator (CreateComm: ncclCommInitRank with every trainer)",
            "PaddlePaddle/Paddle paddle/fluid/imperative/nccl_context.cc (NCCLParallelContext::Init, VLOG(0) "
            "before CreateComm; `nccl_context.cc:83]` in the glog head of Paddle 2.x)", decoded=False),
    # WeNet's trainer before its process group (wenet/utils/train_utils.py init_distributed, then
    # dist.init_process_group or deepspeed.init_distributed; its older train.py printed `this gpu N` alone)
    Message("wenet_init_distributed", "WeNet",
            r"\btraining on multiple gpus, this gpu (?P<gpu>\d+)",
            Means.JOINING, "its process group (init_process_group with every trainer of the world)",
            "wenet-e2e/wenet 01546996 wenet/utils/train_utils.py:256 init_distributed: logging.info("
            "'training on multiple gpus, this gpu {}'.format(local_rank) + ', rank {}, world_size {}'...), "
            "then dist.init_process_group(args.dist_backend)", decoded=False),
    # DeepSpeed's init_distributed before its torch backend creates the process group
    Message("deepspeed_init_distributed", "DeepSpeed",
            # (a terminal may wrap the line anywhere after its first words: `Initializing TorchBackend in D$`)
            r"\bInitializing TorchBackend in D(?:eepSpeed with backend (?P<backend>\w+))?",
            Means.JOINING, "its process group (TorchBackend: torch.distributed.init_process_group)",
            "deepspeedai/DeepSpeed edaa7221 deepspeed/comm/comm.py:856 init_distributed: utils.logger.info("
            "'Initializing TorchBackend in DeepSpeed with backend {}'), then :858 cdb = TorchBackend(...)",
            decoded=False),
    # SGLang's model runner before its process groups and communicators (its end, `Init torch distributed
    # ends.`, is parsers/trainer's `dist_init` milestone)
    Message("sglang_init_distributed", "SGLang",
            r"Init torch distributed begin\.",
            Means.WAITING,
            "its process groups (init_distributed_environment, initialize_model_parallel: every TP and PP "
            "worker must join)",
            "sgl-project/sglang 0005834c python/sglang/srt/model_executor/model_runner.py "
            "ModelRunner.init_torch_distributed (`logger.info(\"Init torch distributed begin.\")`, then "
            "init_distributed_environment and initialize_model_parallel, then `Init torch distributed ends.`)",
            decoded=False),
    # Megatron-LM's rank 0 right before init_process_group (its end: `> initialized tensor model parallel`)
    Message("megatron_init_distributed", "Megatron", r"> initializing torch distributed \.\.\.",
            Means.JOINING, "its process group (torch.distributed.init_process_group with every rank of the "
            "world)",
            "NVIDIA/Megatron-LM megatron/training/initialize.py _initialize_distributed: `if args.rank == 0: "
            "print('> initializing torch distributed ...', flush=True)`, then torch.distributed."
            "init_process_group(...)", decoded=False),
    # vLLM's worker right before its process group (init_distributed_environment's logger.debug; SGLang's copy
    # of vLLM's parallel_state.py prints the same line, llm-054)
    Message("vllm_init_distributed", "vLLM/SGLang",
            r"\bworld_size=(?P<world>\d+) rank=(?P<rank>\d+) local_rank=-?\d+ distributed_init_method=\S+ "
            r"backend=\w+",
            Means.JOINING, "its process group (init_process_group with every worker of the world)",
            "vllm-project/vllm vllm/distributed/parallel_state.py init_distributed_environment: logger.debug("
            "\"world_size=%d rank=%d local_rank=%d distributed_init_method=%s backend=%s\"), then "
            "torch.distributed.init_process_group", decoded=False),
    # JAX's client before it connects to the coordination service (its connect waits for every process)
    Message("jax_connect_coordinator", "JAX",
            r"Connecting to JAX distributed service on (?P<address>\S+)",
            Means.JOINING, "JAX's coordination service (client.connect returns once every process registered)",
            "jax-ml/jax jax/_src/distributed.py State.initialize: logger.info('Connecting to JAX distributed "
            "service on %s', coordinator_address), then self.client.connect()", decoded=False),

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



def either(entries) -> str:
    """One regex of the entries' patterns, their named groups made plain (a frame's regex allows a name
    once): ``parsers.any_of`` over their patterns."""
    return any_of(*(m.pattern for m in entries))


#: every entry's pattern, one alternation
ANY = either(MESSAGES)
#: the entries whose meaning decides an init stall by itself
DECIDES = either(m for m in MESSAGES if m.means in DECISIVE)
#: the entries of a start-up begun (a wait said once: UNDECIDED names it where the log ends there)
WAITS = either(m for m in MESSAGES if m.means is Means.WAITING)
#: what a start-up begun means (a milestone, ``server_up``, not a stall: parsers/start_up)
BEGUN = (Means.WAITING, Means.JOINING)
#: the entries of a start-up begun that end a log only where start-up never returned (rules_init)
BEGINS = either(m for m in MESSAGES if m.means in BEGUN)
#: the entries no other parser makes an event of (parsers/start_up reads them)
UNDECODED = either(m for m in MESSAGES if not m.decoded)


def read(text: str) -> tuple[Message, dict] | None:
    """The first entry whose pattern the line holds, with its named groups (those that matched)."""
    for m in MESSAGES:
        hit = re.search(m.pattern, text)
        if hit:
            return m, {k: v for k, v in hit.groupdict().items() if v}
    return None


# --- where start-up runs: the frames that create a process group or a communicator -------------------------
@dataclass(frozen=True)
class Frame:
    """A function that runs inside a job's start-up (a process group's or a communicator's creation, its
    first collective), as a Python traceback names its frame: ``func (path:line)`` (parsers/pyspy), or
    ``File "path", line N, in func`` (the traceback as Python prints it: ``TRACEBACK_FRAME``)."""

    functions: str  # the functions' names, one alternation
    runtime: str
    means: str  # what the job was doing in it (the verdict says it)
    source: str  # where the runtime defines it (repo path:line or path and function)
    path: str = ""  # the file the function must be in, where its name alone is too common (``__init__``)
    first_collective: bool = False  # it runs the process group's first collective (DDP's), not its creation

    @property
    def pattern(self) -> str:
        """On the frame as parsers/pyspy writes it: ``_initialize_distributed (megatron/x.py:222)``."""
        return rf"^(?:{self.functions}) \(" + (rf"\S*{self.path}:\d+\)" if self.path else "")


FRAMES: tuple[Frame, ...] = (
    Frame(r"init_process_group|_new_process_group_helper|new_group|new_subgroups\w*|_store_based_barrier"
          r"|_create_c10d_store|_create_tcp_store|_\w+_rendezvous_handler|rendezvous|next_rendezvous"
          r"|_rendezvous", "torch",
          "creating a process group (its store rendezvous, its backend, its barrier)",
          "pytorch/pytorch torch/distributed/distributed_c10d.py init_process_group, _new_process_group_helper, "
          "new_group, _store_based_barrier; torch/distributed/rendezvous.py rendezvous, _create_c10d_store, "
          "_create_tcp_store; torch/distributed/elastic/rendezvous/dynamic_rendezvous.py next_rendezvous; "
          "torch/distributed/elastic/agent/server/api.py SimpleElasticAgent._rendezvous"),
    Frame(r"_verify_param_shape_across_processes|_sync_module_states|_sync_params_and_buffers", "torch",
          "DDP's first collective over its process group (where a lazy communicator init happens)",
          "pytorch/pytorch torch/distributed/utils.py _verify_param_shape_across_processes, _sync_module_states "
          "(called by torch/nn/parallel/distributed.py DistributedDataParallel.__init__); "
          "DistributedDataParallel._sync_params_and_buffers (torch 1.x)", first_collective=True),
    Frame(r"__init__", "torch",
          "DDP's constructor, whose collectives (the parameter-shape check, the broadcast of the module's "
          "state) are the process group's first",
          "pytorch/pytorch torch/nn/parallel/distributed.py DistributedDataParallel.__init__: "
          "_verify_param_shape_across_processes(self.process_group, parameters), _sync_module_states(...)",
          path=r"torch/nn/parallel/distributed\.py", first_collective=True),
    Frame(r"_initialize_distributed|initialize_model_parallel|finish_mpu_init", "megatron",
          "Megatron's process-group set-up (init_process_group, then the model-parallel groups' new_group)",
          "NVIDIA/Megatron-LM d98e8a64 megatron/training/initialize.py:272 _initialize_distributed; "
          "megatron/core/parallel_state.py:601 initialize_model_parallel; megatron/training/initialize.py "
          "finish_mpu_init (its inner function: _initialize_distributed(), then the random seeds)"),
    Frame(r"init_distributed", "deepspeed",
          "DeepSpeed's process-group set-up (it calls torch.distributed.init_process_group)",
          "deepspeedai/DeepSpeed edaa7221 deepspeed/comm/comm.py:792 init_distributed; deepspeed/comm/torch.py:177 "
          "torch.distributed.init_process_group(backend, **kwargs)"),
    # (not the worker's init_device, which also sets the device and checks its memory: the frames it calls
    # for the process groups, below it in a traceback, say start-up; tests/test_s19_initfail_start_up.py)
    Frame(r"init_distributed_environment|ensure_model_parallel_initialized|init_world_group"
          r"|init_worker_distributed_environment", "vllm",
          "vLLM's process-group set-up",
          "vllm-project/vllm vllm/distributed/parallel_state.py init_distributed_environment, "
          "ensure_model_parallel_initialized, init_world_group; vllm/v1/worker/gpu_worker.py "
          "init_worker_distributed_environment (called by Worker.init_device)"),
    Frame(r"__init__", "vllm",
          "vLLM's own NCCL communicator's creation (ncclCommInitRank)",
          "vllm-project/vllm vllm/distributed/device_communicators/pynccl.py PyNcclCommunicator.__init__",
          path=r"vllm/distributed/device_communicators/pynccl\.py"),
    Frame(r"ncclCommInitRank", "vllm",
          "vLLM's own NCCL communicator's creation (ncclCommInitRank)",
          "vllm-project/vllm vllm/distributed/device_communicators/pynccl_wrapper.py "
          "NCCLLibrary.ncclCommInitRank"),
)
#: any start-up frame
START_UP_FRAME = any_of(*(f.pattern for f in FRAMES))
#: a frame of a Python traceback as Python prints it (``  File "path", line N, in func``) whose function is a
#: start-up frame's that no path restricts: ``fn`` names it
TRACEBACK_FRAME = (r"^\s*File \".*\", line \d+, in (?P<fn>"
                   + "|".join(f.functions for f in FRAMES if not f.path) + r")\s*$")
#: the same, of a start-up frame a path restricts (pynccl's ``__init__``): ``file``, ``line`` and ``fn`` name it
PATHED_FRAME = (r"^\s*File \"(?P<file>[^\"]*(?:" + "|".join(f.path for f in FRAMES if f.path)
                + r")[^\"]*)\", line (?P<line>\d+), in (?P<fn>"
                + "|".join(f.functions for f in FRAMES if f.path) + r")\s*$")


def frame_of(where: str) -> Frame | None:
    """The start-up frame a traceback's frame is (``func (path:line)``, or a function's bare name where the
    frame's function alone names it), or None."""
    bare = where.strip()
    return next((f for f in FRAMES if re.search(f.pattern, where)
                 or (not f.path and re.fullmatch(f.functions, bare))), None)


# --- start-up words no entry above reads whole: parsers/salient classes its telling lines by them
#: a start-up that never reached its coordinator, in the runtimes' words: PyTorch/XLA's XRT mesh client
#: (xla_client/mesh_service.cc: ``Failed to connect to client mesh master: host:port``, its ``Check failed:
#: impl_->channel->WaitForConnected(...)``), the TensorFlow/JAX coordination service (``Coordination
#: service agent in error status: DEADLINE_EXCEEDED``, ``RegisterTask`` timing out, a barrier that timed
#: out, ``Failed to connect to coordination service``), gRPC's ``failed to connect to all addresses``
COORDINATOR_UNREACHED = (
    r"(?i)\bfailed to connect to client mesh master\b|\bCheck failed: .{0,40}\bWaitForConnected\b"
    r"|\bcoordination (?:service agent in error status|agent is set to error): "
    r"(?:DEADLINE_EXCEEDED|UNAVAILABLE)"
    r"|failed to connect to distributed JAX controller"
    r"|\bRegisterTask\b.{0,200}\b(?:DEADLINE_EXCEEDED|deadline exceeded|UNAVAILABLE|timed out)"
    r"|\b(?:DEADLINE_EXCEEDED|UNAVAILABLE)\b.{0,200}\bRegisterTask\b"
    r"|\bbarrier timed out\b|failed to connect to (?:the )?coordination service"
    r"|\bfailed to connect to all addresses\b"
)
#: a start-up's wait for its coordinator or its peers, in the runtimes' words (TensorFlow's master.cc
#: ``CreateSession still waiting for response from worker: /job:worker/replica:0/task:1``, XRT's ``Waiting to
#: connect to client mesh master``, ``Core 1 waiting for rendezvous``): an init stall where said again
COORDINATOR_WAIT = (r"(?i)\bCreateSession still waiting for response from worker\b"
                    r"|\bwaiting to connect to client mesh master\b|\bwaiting for rendezvous\b")
#: workers that a scheduler cannot place, so the run never starts: Ray's autoscaler on a request no node
#: type fits (autoscaler/_private/autoscaler.py ``Error: No available node types can fulfill resource
#: request {...}``), its raylet's ``resource request cannot be scheduled right now`` and ``tasks with
#: infeasible resource requests``, vLLM's placement-group wait (executor/ray_utils.py ``Waiting for
#: creating a placement group of specs for N seconds``) and its end (``Cannot provide a placement group``),
#: Ray Train/SkyRL's ``Failed to create placement group``, and vLLM's warning before it waits (``The number
#: of required GPUs exceeds the total number of available GPUs in the placement group``)
UNPLACED = (r"(?i)\bno available node types can fulfill resource requests?\b"
            r"|\bresource request cannot be scheduled right now\b"
            r"|\btasks with infeasible resource requests?\b"
            r"|\bwaiting for creating a placement group\b|\bcannot provide a placement group\b"
            r"|\bfailed to create placement group\b"
            r"|\bnumber of required GPUs exceeds the total number of available GPUs\b"
            # torchx's Ray driver (pytorch/torchx torchx/schedulers/ray/ray_driver.py create_placement_groups:
            # `pg.wait(timeout_seconds=100)` not ready -> `raise TimeoutError("Placement group creation timed
            # out. Make sure your cluster either has enough resources ...")`)
            r"|\bplacement group creation timed out\b")
#: a communicator's init that its runtime says failed, by the init call (the rank raised there: its start-up
#: never completed, whatever the code says of why): torch_npu's HCCL_CHECK_ERROR (Ascend/pytorch 023f5fc2
#: torch_npu/csrc/distributed/HCCLUtils.hpp:17-45: ``<func>:<file>:<line> HCCL function error: <call>, error
#: code is <N>``) around HCCLComm::create, create_config, createGlobalHcclComm and createSubHcclComm's calls
#: (hcclCommInitRootInfo, hcclCommInitRootInfoConfig, hcclCommInitClusterInfoConfig, hcclCreateSubCommConfig,
#: declared there :55-77); HCCL's own op_base.cc ``HcclCommInitRootInfo failed``. ``call`` and ``code`` name
#: them
INIT_CALL_FAILED = (r"HCCL function error: (?P<call>hcclCommInit\w*|hcclCreateSubComm\w*)\(.{0,200}?\), error "
                    r"code is (?P<code>\d+)|\b(?P<call2>HcclCommInit\w*|HcclGetRootInfo) fail(?:ed)?\b")
#: HCCL's result codes (Ascend/pytorch 0036108 third_party/hccl/inc/hccl/hccl_types.h:26-48, HcclResult)
HCCL_RESULTS = {1: "HCCL_E_PARA, a parameter error", 2: "HCCL_E_PTR, an empty pointer", 3: "HCCL_E_MEMORY",
                4: "HCCL_E_INTERNAL, an internal error", 5: "HCCL_E_NOT_SUPPORT", 6: "HCCL_E_NOT_FOUND",
                7: "HCCL_E_UNAVAIL, a resource unavailable", 8: "HCCL_E_SYSCALL", 9: "HCCL_E_TIMEOUT",
                11: "HCCL_E_TCP_CONNECT", 12: "HCCL_E_ROCE_CONNECT", 15: "HCCL_E_RUNTIME", 16: "HCCL_E_DRV",
                19: "HCCL_E_NETWORK"}


def init_call_failed(text: str) -> str | None:
    """What a line says of a communicator's init call that failed (``INIT_CALL_FAILED``): the call and its
    code with the code's meaning, or None."""
    hit = re.search(INIT_CALL_FAILED, text)
    if hit is None:
        return None
    call, code = hit.group("call") or hit.group("call2"), hit.group("code")
    if code is None:
        return f"{call} failed"
    means = HCCL_RESULTS.get(int(code))
    return f"{call} returned error code {code}" + (f" ({means})" if means else "")
