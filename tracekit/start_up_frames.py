"""Where start-up runs, and the words of a start-up that never reached its coordinator: the Python frames that
create a process group or a communicator (``FRAMES``, ``frame_of``), the runtimes' words of a coordinator never
reached or waited for (``COORDINATOR_UNREACHED``, ``COORDINATOR_WAIT``), workers no scheduler can place
(``UNPLACED``) and a communicator's init call that its runtime says failed (``INIT_CALL_FAILED``).

Split from ``start_up_messages`` (s27): that module holds what the runtimes print while start-up waits, this one
where in a traceback start-up is, and the words the salient parser classes telling lines by.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tracekit.parsers import any_of


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
    # (s28: the other runtimes' set-up, so a failure raised there reads as set-up's whatever its words: the
    # traceback's innermost set-up frame, parsers/torch_context.raised_in_init)
    # (not SGLang's ModelRunner.init_torch_distributed, which also sets the device and checks the GPUs' memory
    # balance, raising its own errors: dv5-013, a crash; the process-group frames under it say set-up)
    Frame(r"init_model_parallel_group", "vllm",
          "the runtime's model-parallel process groups' creation (each GroupCoordinator makes its groups and "
          "its communicators)",
          "vllm-project/vllm vllm/distributed/parallel_state.py init_model_parallel_group"),
    Frame(r"initialize", "jax",
          "JAX's distributed runtime reaching its coordinator (jax.distributed.initialize: the coordination "
          "service's client connects and registers the task)",
          "jax-ml/jax jax/_src/distributed.py initialize, State.initialize (self.client.connect())",
          path=r"jax/_src/distributed\.py"),
    Frame(r"init_parallel_env|_init_parallel_env|_init_parallel_ctx", "paddle",
          "Paddle's process-group set-up (its NCCL communicators' creation, its TCP store)",
          "PaddlePaddle/Paddle python/paddle/distributed/parallel.py init_parallel_env; "
          "python/paddle/fluid/dygraph/parallel_helper.py _init_parallel_ctx"),
    Frame(r"_initialize_multi_worker|enable_collective_ops|configure_collective_ops", "tensorflow",
          "TensorFlow's multi-worker strategy's set-up (its gRPC server and the workers' collective context)",
          "tensorflow/tensorflow tensorflow/python/distribute/collective_all_reduce_strategy.py "
          "CollectiveAllReduceExtended._initialize_multi_worker; tensorflow/python/eager/context.py "
          "Context.enable_collective_ops, configure_collective_ops"),
    Frame(r"init", "horovod",
          "Horovod's init (hvd.init(): its MPI or Gloo controller's set-up)",
          "horovod/horovod horovod/common/basics.py HorovodBasics.init", path=r"horovod/common/basics\.py"),
    Frame(r"_setup_replication", "torch_xla",
          "PyTorch/XLA's replication set-up (the mesh service, its devices' world)",
          "pytorch/xla torch_xla/distributed/xla_multiprocessing.py _setup_replication"),
    Frame(r"_init_dist_connection|init_dist_connection|setup_distributed", "lightning",
          "Lightning's process-group set-up (it calls torch.distributed.init_process_group)",
          "Lightning-AI/pytorch-lightning src/lightning/fabric/utilities/distributed.py _init_dist_connection; "
          "src/lightning/pytorch/strategies/ddp.py DDPStrategy.setup_distributed"),
    Frame(r"init_dist|_init_dist_pytorch|_init_dist_slurm|_init_dist_mpi|distributed_init"
          r"|_setup_torch_process_group", "torch",
          "the framework's process-group set-up (it calls torch.distributed.init_process_group)",
          "open-mmlab/mmengine mmengine/dist/utils.py init_dist, _init_dist_pytorch, _init_dist_slurm, "
          "_init_dist_mpi; facebookresearch/fairseq fairseq/distributed/utils.py distributed_init; "
          "ray-project/ray python/ray/train/torch/config.py _setup_torch_process_group"),
    # (s29: the set-up entry points of more frameworks, each calling its runtime's process-group creation)
    Frame(r"launch_from_torch|launch_from_slurm|launch_from_openmpi|init_global_dist", "colossalai",
          "ColossalAI's launch (its global process group: torch.distributed.init_process_group)",
          "hpcaitech/ColossalAI colossalai/initialize.py launch, launch_from_torch, launch_from_slurm, "
          "launch_from_openmpi; colossalai/legacy/context/parallel_context.py init_global_dist"),
    Frame(r"_setup_devices", "transformers",
          "the Trainer arguments' device set-up (its PartialState: init_process_group for the launched world)",
          "huggingface/transformers src/transformers/training_args.py TrainingArguments._setup_devices",
          path=r"transformers/training_args\.py"),
    Frame(r"init|init_hccl|init_nccl", "mindspore",
          "MindSpore's communication init (mindspore.communication.init: HCCL's or NCCL's world group)",
          "mindspore-ai/mindspore mindspore/python/mindspore/communication/management.py init; "
          "mindspore/python/mindspore/communication/_comm_helper.py",
          path=r"mindspore/communication/\w+\.py"),
    Frame(r"init", "paddle",
          "Paddle Fleet's init (fleet.init(is_collective=True): its collective environment and NCCL/Gloo "
          "groups)", "PaddlePaddle/Paddle python/paddle/distributed/fleet/fleet.py Fleet.init",
          path=r"paddle/distributed/fleet/fleet\.py"),
    # (s31: torch.distributed.rpc's start-up: init_rpc rendezvous through the store, starts its agent, then
    # all-gathers every worker's name; a connect refused or the all-gather's RPC timeout there is a worker that
    # never joined; its agent's own transport failure, dv6-009's `tensorpipe/common/ibv.h`, the transport rules')
    Frame(r"init_rpc|_init_rpc_backend|_tensorpipe_init_backend_handler", "torch",
          "torch.distributed.rpc's start-up (init_rpc: its store rendezvous, its agent's start, the all-gather of "
          "every worker's name)",
          "pytorch/pytorch torch/distributed/rpc/__init__.py init_rpc, _init_rpc_backend; "
          "torch/distributed/rpc/backend_registry.py _tensorpipe_init_backend_handler (api._all_gather(None, "
          "timeout=rpc_backend_options.rpc_timeout))"),
    Frame(r"_initialize_workers", "torch",
          "torchelastic's agent starting its workers (its rendezvous with the other nodes' agents comes first)",
          "pytorch/pytorch torch/distributed/elastic/agent/server/api.py SimpleElasticAgent._initialize_workers"),
    Frame(r"__init__", "accelerate",
          "Accelerate's process state's set-up (PartialState: init_process_group for the launched world)",
          "huggingface/accelerate src/accelerate/state.py PartialState.__init__",
          path=r"accelerate/state\.py"),
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
                    r"|\bwaiting to connect to client mesh master\b|\bwaiting for rendezvous\b"
                    # (s28: vLLM V1's front end polling its engine cores' handshake every 10 s while they start,
                    # vllm-project/vllm vllm/v1/engine/utils.py wait_for_engine_startup: `logger.debug("Waiting
                    # for %d local, %d remote core engine proc(s) to start.")` and `... to connect.`)
                    r"|\bWaiting for \d+ local, \d+ remote core engine proc\(s\) to (?:start|connect)\b")
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
