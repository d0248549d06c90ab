"""Each cause with what fixes it and how to check the fix took: one table that the verdict (its
``fix`` and ``check``), the report and ``doctor`` read, so a cause is never fixed two ways.

A row applies to a verdict of one of its kinds whose summary or evidence matches ``when``; the
first row that applies is the verdict's (rows run from the most specific to the most general).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tracekit.outcome import Kind

_ANY_FAIL = (Kind.DEADLOCK, Kind.MISMATCH, Kind.INIT_STALL, Kind.TRANSPORT_ERROR, Kind.CRASHED_RANK,
             Kind.SLOW_PROGRESS, Kind.STRAGGLER, Kind.UNDECIDED)


@dataclass(frozen=True)
class Fix:
    cause: str
    kinds: tuple[Kind, ...]
    when: str  # a regex over the verdict's summary and evidence
    fix: str
    check: str


FIXES: tuple[Fix, ...] = (
    Fix("wandb", _ANY_FAIL, r"(?i)wandb",
        "WANDB_MODE=offline (sync later with `wandb sync`), or make sure every rank-0 node reaches "
        "api.wandb.ai",
        "the next run's rank 0 logs its first step; a stack dump of rank 0 no longer shows wandb"),
    # --- branch failures (issue 31): the store's words, ranks that left, a node rank taken twice ---
    Fix("store-name", (Kind.INIT_STALL,), r"does not resolve on this node",
        "set MASTER_ADDR (--rdzv-endpoint) to the head node's IP or to a name every node resolves (in "
        "Kubernetes or Ray the head's service name, not its pod name)",
        "`getent hosts <MASTER_ADDR>` answers on every node, and every rank logs past init_process_group"),
    Fix("store-port-taken", (Kind.INIT_STALL,), r"the port is taken",
        "pick a free MASTER_PORT (or --rdzv-endpoint port), or end the leftover processes that hold it "
        "(`ss -ltnp | grep <port>` on the store's host)",
        "`ss -ltnp` shows the port free before the launch; rank 0 logs past init_process_group"),
    Fix("store-not-listening", (Kind.INIT_STALL,), r"nothing listens there",
        "launch rank 0 (the store's host) with the others, give every node the same MASTER_ADDR:MASTER_PORT, "
        "and read rank 0's own output for an error before it listened",
        "`nc -zv <MASTER_ADDR> <MASTER_PORT>` connects from every node while rank 0 runs"),
    Fix("no-address-family", (Kind.INIT_STALL,), r"no address family",
        "set NCCL_SOCKET_IFNAME to an interface every node has (`ip -br addr`), or leave it unset",
        "the next NCCL log's `Bootstrap : Using <iface>` names that interface on every node, and every rank "
        "logs Init COMPLETE"),
    Fix("node-rank-twice", (Kind.INIT_STALL,), r"joined twice",
        "give each node its own node rank: srun --ntasks-per-node equal to the GPUs per node (Lightning "
        "reads SLURM_NODEID / SLURM_PROCID), NODE_RANK or --node_rank per node, num_nodes in the Trainer",
        "each GLOBAL_RANK from 0 to world size - 1 is printed once"),
    Fix("ranks-left-early", (Kind.DEADLOCK,), r"had ended (?:its|their) work",
        "make every rank call the same collectives: no collective under a rank-dependent `if`, the same "
        "number of batches per rank (drop_last, equal shards), a barrier before a rank leaves the loop",
        "every rank logs its end after the same collectives; the next run's watchdog logs no timeout"),
    Fix("nccl-invalid-argument", (Kind.CRASHED_RANK,), r"ncclInvalidArgument",
        "one GPU per rank before any collective (torch.cuda.set_device(LOCAL_RANK)), every tensor of a "
        "collective on that device; NCCL_DEBUG=WARN names the argument NCCL refused",
        "the next run's NCCL_DEBUG=WARN output has no `invalid argument` WARN and the collective completes"),
    Fix("rendezvous-store-gone", (Kind.UNDECIDED,), r"could no longer reach the rendezvous store",
        "find the node whose agent ended first (its log, its exit code, the scheduler's node state); host "
        "the rendezvous where a node's loss does not take it (--rdzv-backend=c10d on a stable host, or etcd)",
        "every node's agent logs the workers' end, with no keep-alive failure before it"),
    Fix("nccl-graph-capture", (Kind.CRASHED_RANK,), r"cannot be captured in a graph",
        "run eager (vLLM --enforce-eager, SGLang --disable-cuda-graph), or install an NCCL built for CUDA "
        ">= 11.3 and a driver >= R465 (`python -c 'import torch; print(torch.cuda.nccl.version())'`, "
        "nvidia-smi)",
        "the next start logs no `cannot be captured in a graph` WARN and captures its CUDA graphs"),
    Fix("comms-aborted", (Kind.UNDECIDED,), r"aborted \d+ communicator",
        "find the error or timeout that made the process abort: its output before the first `Abort COMPLETE` "
        "(TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and NCCL_DEBUG=INFO keep it), and every other rank's log",
        "the next log shows the line before the abort that names the failed or timed-out collective"),
    Fix("agent-raised", (Kind.UNDECIDED,), r"torchrun's agent raised",
        "read the launcher's whole output on every node: the exception under its traceback says a "
        "rendezvous that never completed (same --rdzv-endpoint and --nnodes on every node, the port open) "
        "or workers that failed (their own error blocks)",
        "every node's torchrun logs its workers started (`Starting elastic_operator` / the workers' first "
        "lines)"),
    # (session 14: processes that could not start, sequences that diverged, NCCL's own code)
    Fix("undefined-symbol", (Kind.CRASHED_RANK,), r"symbol lookup error|undefined symbol",
        "the program was built against another version of the library than the one it loads: point "
        "LD_LIBRARY_PATH (or the build's NCCL_HOME / -L) at the library it was built with, or rebuild it "
        "against the installed one (`ldd <binary> | grep nccl` shows which one loads)",
        "`ldd <binary>` resolves every library to the intended version, and the program starts on every "
        "node"),
    Fix("shared-library-missing", (Kind.CRASHED_RANK,), r"error while loading shared libraries",
        "install the library the error names on every node, or add its directory to LD_LIBRARY_PATH in the "
        "environment the launcher passes to every node", "`ldd <binary>` shows no `not found` on any node"),
    Fix("script-missing", (Kind.CRASHED_RANK,), r"can't open file '[^']+': \[Errno",
        "the script's path does not exist where that process started: launch from the same directory on "
        "every node (or give an absolute path), and make the code present on every node (a shared file "
        "system, or copy it)",
        "`ls <path>` on every node of the hostfile finds the script, and every rank logs its start"),
    Fix("sequences-diverged", (Kind.DEADLOCK,), r"sequences of collectives diverged",
        "make every rank of the group issue the same collectives in the same order: no collective under a "
        "rank-dependent branch (a logging or checkpoint hook on rank 0 only, an eval on some ranks); "
        "TORCH_DISTRIBUTED_DEBUG=DETAIL names the first call where the ranks differ",
        "the ranks' watchdogs (or Flight Recorder dumps) show the same SeqNum and op on every rank of the "
        "group"),
    # --- end of branch failures ---
    Fix("two-jobs-one-store", (Kind.INIT_STALL,), r"share one MASTER_ADDR",
        "give each job its own MASTER_PORT (and kill leftover processes of an earlier run)",
        "the barrier's worker_count equals world_size; every rank logs past init_process_group"),
    Fix("store-barrier", (Kind.INIT_STALL,), r"store-based barrier|rendezvous never completed",
        "launch every rank (check the scheduler started all nodes), make MASTER_ADDR:MASTER_PORT reachable "
        "from every node, and look at the missing ranks' own output for an error before init_process_group",
        "every rank logs past init_process_group (NCCL `Init COMPLETE` on every rank with NCCL_DEBUG=INFO)"),
    # (starts, s25: set-up failures read from a crash's words, rules_set_up.failed_in_set_up)
    # (starts, s29: rules_set_up.set_up_step_unreturned, start_up_messages' HCCL, PRRTE/ORTE, Ray Client, oneCCL)
    Fix("set-up-step-unreturned", (Kind.INIT_STALL,), r"verbose trace shows .{0,300}begun",
        "the step the trace ends in names what set-up waits on: for a transport component of MPI_Init (openib, "
        "ucx, tcp) check its devices and interfaces (ibv_devinfo and the ports' state, --mca btl_tcp_if_include) "
        "or exclude it (--mca btl ^openib) to see MPI_Init pass without it; for a launch state (PENDING DAEMON "
        "LAUNCH) make every host reachable over passwordless ssh with the daemons (orted, prted) on PATH there",
        "the same verbose run prints the step's return (`select: init of component X returned success`, the job's "
        "next state, DAEMONS REPORTED then RUNNING) and every rank logs past MPI_Init"),
    Fix("hccl-link-timeout", (Kind.INIT_STALL,),
        r"HCCL waited past its limit|wait socket establish timeout|Get_Socket_Timeout",
        "find the rank that never connected (its own plog: an earlier error, or it started late or never reached "
        "this communicator's set-up) and start every rank within HCCL_CONNECT_TIMEOUT of the others (raise it for "
        "slow starts); check the device IPs reach each other (hccn_tool -i N -ip -g; hccn_tool -i N -ping -g "
        "address PEER_IP)",
        "every rank's log shows the communicator's init done and no `wait socket establish timeout` / EI0006"),
    Fix("hccl-comm-init", (Kind.INIT_STALL,), r"Ascend HCCL's communicator init|HcclCommInit\w*",
        "read the HCCL error above it in that rank's plog (ASCEND_SLOG_PRINT_TO_STDOUT=1, ASCEND_GLOBAL_LOG_LEVEL=1): "
        "a rank table or device IP that differs between ranks, a port already bound (EI0019: another job, or "
        "HCCL_IF_BASE_PORT), a peer that never reached the same init",
        "every rank's plog shows the communicator's init done (the first collective runs)"),
    Fix("mpi-daemons", (Kind.INIT_STALL,),
        r"(?:ORTE|PRTE) was unable to reliably start|(?:ORTE|PRTE) does not know how to route|Open MPI gave up",
        "make every host of the host list reachable from mpirun's host over passwordless ssh (or launch under the "
        "scheduler: srun, --mca plm slurm), with the same Open MPI install on PATH and LD_LIBRARY_PATH there "
        "(--prefix, or configure --enable-orterun-prefix-by-default), and let the daemons connect back over an "
        "interface both share (--mca oob_tcp_if_include IFACE)",
        "`mpirun -np N -H host1,host2 hostname` prints every host"),
    Fix("oneccl-transport", (Kind.INIT_STALL, Kind.CRASHED_RANK), r"oneCCL's transport set-up",
        "give oneCCL a transport the nodes have: the OFI provider of the fabric (FI_PROVIDER=tcp, verbs, psm3; "
        "`fi_info -p PROVIDER` lists it on every node) or CCL_ATL_TRANSPORT=mpi",
        "every rank logs past its communicator's creation"),
    Fix("mpi-init", (Kind.INIT_STALL,), r"MPI_Init|PMIx?\d?_Init|ORTE was unable to reliably start",
        "run every rank with the same MPI build as mpirun (`which mpirun` and `ldd` of the program on each node), "
        "launch through mpirun/srun --mpi=pmix rather than by hand, and let its daemons reach every node "
        "(passwordless ssh, OMPI_MCA_btl_tcp_if_include set to the nodes' shared interface)",
        "`mpirun -np 2 -H node1,node2 hostname` prints both hosts; every rank logs past MPI_Init"),
    # (starts, s26: rules_set_up's set-up failures read from a failure line's words or a traceback's exception)
    Fix("start-up-port-in-use", (Kind.INIT_STALL,), r"EADDRINUSE|server socket has failed to listen|Address already in use",
        "free the port on rank 0's host (a process of an earlier run still holds it: kill it) or give the job "
        "another MASTER_PORT (vLLM/SGLang: another --port or distributed port)",
        "`ss -ltnp | grep <port>` shows only the new run's process, and every rank logs past init_process_group"),
    Fix("start-up-peer-unreached", (Kind.INIT_STALL,), r"the peer, store or coordinator the line names",
        "start the master, store or coordinator first (rank 0, the head node) and make its address reachable "
        "from every node (`nc -zv MASTER_ADDR MASTER_PORT`), with the same MASTER_ADDR/PORT and world size on "
        "every rank",
        "every rank logs past init_process_group (NCCL `Init COMPLETE` on every rank with NCCL_DEBUG=INFO)"),
    Fix("coordinator-unreached", (Kind.INIT_STALL,),
        r"distributed JAX controller|WaitForConnected|client mesh master|PjRT_Client_Connect|coordination service",
        "start the coordinator process (process 0) and make its coordinator_address (host:port) reachable from "
        "every host: the same address and num_processes on every process, the port open in the firewall",
        "every process logs past jax.distributed.initialize (jax.process_count() equals num_processes)"),
    # (starts, s27: the launchers' and runtimes' set-up waits, start_up_messages read by rules_init.start_up_said)
    Fix("launcher-hosts", (Kind.INIT_STALL,),
        r"Horovod gave up on its task server|horovod timeout checked|MPICH Hydra gave up|An ORTE daemon has "
        r"unexpectedly failed",
        "make every host of the host list reachable from the launching host over ssh on the port given "
        "(horovodrun -p, mpirun's plm_rsh_args) and able to connect back to it over an interface both share "
        "(horovodrun --network-interface, mpirun -mca oob_tcp_if_include)",
        "`ssh -p PORT HOST hostname` answers for every host, and the launcher's verbose log says every host "
        "registered (horovodrun: `Notified all the hosts that the registration is complete`)"),
    Fix("gloo-rendezvous", (Kind.INIT_STALL,), r"Gloo rendezvous store|Gloo's device creation",
        "start every rank of the world (a rank that never started leaves its key unwritten) and set "
        "GLOO_SOCKET_IFNAME (HOROVOD_GLOO_IFACE) to an interface every host has; raise "
        "HOROVOD_GLOO_TIMEOUT_SECONDS where ranks start slowly",
        "every rank logs past hvd.init() / init_process_group"),
    Fix("ray-gcs", (Kind.INIT_STALL,), r"Ray head's (?:GCS|client) server|Ray Client's connect",
        "start the head first (`ray start --head --port P`) and give workers and drivers its reachable address "
        "(`ray start --address HEAD:P`), the same Ray and Python versions on every node and port P open between "
        "the nodes",
        "`ray status` on the head lists every node"),
    Fix("paddle-endpoints", (Kind.INIT_STALL,), r"Paddle kept retrying",
        "start every trainer and server of the endpoint list (PADDLE_TRAINER_ENDPOINTS, fleetrun --ips/--servers) "
        "with each endpoint's port free on its host and open between the nodes",
        "the `not ready endpoints` list empties and every trainer logs its first step"),
    Fix("etcd-rendezvous", (Kind.INIT_STALL,), r"etcd rendezvous it joins",
        "restart the job's agents with a new --rdzv_id (or delete the stale run's keys in etcd), so no agent "
        "waits on the closed round of an agent that is gone",
        "every agent logs its workers started after `Rendezvous'ing worker group`"),
    Fix("nccl-init-unexplained", (Kind.INIT_STALL,), r"stopped in its communicator's init",
        "rerun every rank with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and fix the step its WARN names "
        "(NCCL_SOCKET_IFNAME to the interface the ranks share, the network plugin the image loads, the "
        "container's IPC and shared memory)",
        "every rank logs NCCL `Init COMPLETE` for the communicator"),
    # (starts, s28: the launchers' connects and the other runtimes' set-up, rules_init.start_up_said and
    # set_up_rekind.failed_in_set_up over start_up_frames.FRAMES)
    Fix("launcher-ssh", (Kind.INIT_STALL,), r"ssh gave up on the connection to a node",
        "make every host of the host list reachable from the launching host over ssh without a password "
        "(sshd running, port 22 or the launcher's ssh port open, the host's key in known_hosts), or start each "
        "node's ranks on that node (torchrun per node, DeepSpeed --no_ssh)",
        "`ssh -o BatchMode=yes HOST hostname` prints the host's name for every host of the list"),
    Fix("slurm-launch", (Kind.INIT_STALL,), r"Slurm gave up on the job's tasks",
        "check the node's slurmd (`scontrol show node NODE`: its State and Reason; `systemctl status slurmd` "
        "there) and that the launching host reaches it on SlurmdPort; resubmit with --exclude=NODE while it is "
        "down",
        "`srun -N1 -w NODE hostname` answers, and every task of the step logs its start"),
    Fix("grpc-coordinator", (Kind.INIT_STALL,),
        r"gRPC's connect to the cluster's coordinator|JAX's distributed runtime reaching its coordinator"
        r"|TensorFlow's multi-worker strategy's set-up|Could not start gRPC server|PyTorch/XLA's replication"
        r"|CreateSession still waiting for response from worker",
        "start every worker of the cluster spec (TF_CONFIG's cluster, JAX's coordinator_address and "
        "num_processes) and make each worker's host:port reachable from the others: the port free and open in "
        "the firewall, an address of an interface the other hosts reach (not localhost), the same spec and "
        "task order on every worker",
        "every worker logs past its strategy's or jax.distributed.initialize's set-up (jax.process_count() "
        "equals num_processes; the strategy lists every worker's devices)"),
    Fix("vllm-engine-start", (Kind.INIT_STALL,), r"core engine proc\(s\) to (?:start|connect)",
        "read the engine core's and its workers' own lines (EngineCore_DP0, VllmWorker rank=N) for the step they "
        "stopped in, with VLLM_LOGGING_LEVEL=DEBUG and NCCL_DEBUG=INFO; a communicator that never forms between "
        "the GPUs is the common cause (NCCL_P2P_DISABLE=1 on hosts without working peer-to-peer, --shm-size or "
        "--ipc=host in a container); remote engines: their --data-parallel-address and port reachable",
        "the front end logs its API server's start after `Waiting for ... core engine proc(s)`"),
    Fix("nccl-init-stack", (Kind.INIT_STALL,), r"caught by a stack dump inside NCCL's communicator init",
        "dump every rank's stack at the same moment: the rank that is not inside ncclCommInitRank (it never "
        "reached it, or waits in another communicator's init) holds the others; rerun with NCCL_DEBUG=INFO "
        "NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET on every rank, whose bootstrap lines name the peer waited for, and "
        "set NCCL_SOCKET_IFNAME to the interface the ranks share",
        "every rank logs NCCL `Init COMPLETE` for the communicator"),
    Fix("horovod-init", (Kind.INIT_STALL,), r"Horovod's init \(hvd\.init",
        "read the first error above `Horovod initialization failed` (its MPI or Gloo controller's); launch "
        "with horovodrun -np N -H host1:n,host2:n (or mpirun with the MPI Horovod was built against, "
        "`horovodrun --check-build`) and give the controller an interface every host shares "
        "(--network-interface, HOROVOD_GLOO_IFACE)",
        "every rank logs past hvd.init() and hvd.size() equals -np"),
    Fix("process-group-unreached", (Kind.INIT_STALL,),
        r"process group's init never completed|ncclUniqueId through the c10d store|process-group set-up"
        r"|model-parallel process groups' creation|Accelerate's process state|Failed to connect to GCS"
        r"|the c10d store's server",
        "start rank 0 (the store's host, or the head) first and make MASTER_ADDR:MASTER_PORT (the store, the "
        "coordinator's address) reachable from every node (`nc -zv MASTER_ADDR MASTER_PORT`), with the same "
        "address, port and world size on every rank and every node launched",
        "every rank logs past init_process_group (NCCL `Init COMPLETE` on every rank with NCCL_DEBUG=INFO)"),
    Fix("duplicate-gpu", _ANY_FAIL, r"(?i)duplicate GPU",
        "one GPU per rank: torch.cuda.set_device(LOCAL_RANK) before init_process_group, and "
        "CUDA_VISIBLE_DEVICES not narrowed to one device per node",
        "the NCCL Init lines of one host show a different cudaDev / busId for every rank"),
    Fix("shm", _ANY_FAIL, r"(?i)/dev/shm|no space left|posix_fallocate|shm_open|NCCL_SHM",
        "give the container shared memory (docker --shm-size=16g or --ipc=host; k8s an emptyDir of medium "
        "Memory at /dev/shm)",
        "`df -h /dev/shm` shows room, and the next NCCL log has no shm WARN"),
    Fix("ib-completion", _ANY_FAIL,
        r"(?i)completion error|error 12|IBV_WC|ibv_\w+ failed|NET/IB.*(?:error|fail)",
        "check the fabric (ibstat, ibv_devinfo, ib_write_bw between the hosts), the RoCE GID "
        "(NCCL_IB_GID_INDEX) and NCCL_IB_HCA; raise NCCL_IB_TIMEOUT (22) only once the links are clean",
        "ib_write_bw between the two hosts reaches line rate, and the next NCCL log has no NET/IB WARN"),
    # before "interface": a peer's closed connection names the peer's address (127.0.0.1 on one host), and
    # the cause is the peer that ended, not the interface
    Fix("peer-ended", (Kind.UNDECIDED,), r"closed its connection",
        "find the peer that ended first: its own output (torchrun --log-dir DIR --tee 3 keeps each rank's) "
        "and the launcher's exit codes say whether it raised, was killed or lost its host",
        "the peer's log names how it ended; the next run's verdict names that rank"),
    Fix("interface", (Kind.TRANSPORT_ERROR, Kind.INIT_STALL, Kind.UNDECIDED),
        r"(?i)no route to host|network is unreachable|connection refused|connect(?:ion)? timed out"
        r"|socketPollConnect|Bootstrap|connectFullMesh|127\.0\.0\.1",
        "set NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME to the interface the nodes share (not lo, docker0 or "
        "a bridge), open the ports between the nodes, and use one address family (NCCL_SOCKET_FAMILY)",
        "the next NCCL log's `Bootstrap : Using <iface>` names the shared interface and every rank logs "
        "Init COMPLETE"),
    Fix("socket-fallback", (Kind.SLOW_PROGRESS, Kind.STRAGGLER, Kind.TRANSPORT_ERROR),
        r"(?i)NET/Socket|via NET/Socket",
        "use RDMA: NCCL_IB_HCA, NCCL_IB_GID_INDEX (RoCE), the IB/EFA plugin; or move less (ZeRO-2, hpZ)",
        "the next NCCL INFO log says `via NET/IB` (or the plugin's transport), not `via NET/Socket`"),
    Fix("heartbeat", _ANY_FAIL, r"(?i)heartbeat|watchdog got stuck",
        "a CUDA or NCCL call never returned: dump the stuck rank's native stack (py-spy dump --native, "
        "cuda-gdb) and look for the kernel or NCCL call it waits in",
        "the next run's watchdog logs no heartbeat timeout"),
    Fix("host-oom", (Kind.CRASHED_RANK, Kind.UNDECIDED), r"SIGKILL|OOM killer|signal 9\b|code -9\b",
        "use less host memory: fewer dataloader workers, no CPU offload of parameters, smaller prefetch",
        "dmesg on that node shows no `Out of memory: Killed process`, and the rank exits 0"),
    Fix("cuda-oom", _ANY_FAIL, r"(?i)out of memory|OutOfMemoryError",
        "a smaller micro-batch or sequence length, activation checkpointing, or "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        "torch.cuda.max_memory_allocated() on that rank stays below its device's memory through a step"),
    Fix("cuda-fault", _ANY_FAIL, r"(?i)illegal memory access|device-side assert|CUDA error|\bECC\b",
        "rerun that rank with CUDA_LAUNCH_BLOCKING=1 (or compute-sanitizer) to find the kernel; an ECC error "
        "is the GPU's: drain the node",
        "the rerun passes the step it failed in; nvidia-smi -q shows no new ECC errors"),
    # --- branch bench (issue 31): benchmarks, Horovod, a program's own timers and watchdog ---
    Fix("nccl-tests-corrupt", (Kind.UNDECIDED,), r"nccl-tests found wrong values",
        "find the path that corrupts: rerun with NCCL_P2P_DISABLE=1, then NCCL_SHM_DISABLE=1, then "
        "NCCL_NET_GDR_LEVEL=LOC, one at a time; disable PCIe ACS and set the IOMMU to passthrough",
        "nccl-tests prints `# Out of bounds values : 0 OK` and #wrong 0 on every row"),
    Fix("nccl-tests-busbw", (Kind.SLOW_PROGRESS, Kind.UNDECIDED),
        r"nccl-tests.*(?:bus bandwidth falls|at most [\d.]+ GB/s)",
        "NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING shows the transport and algorithm per "
        "size: pin NCCL_PROTO / NCCL_ALGO to the fast one, check `via NET/IB` (not NET/Socket), NCCL_IB_HCA "
        "and the GPU-NIC affinity",
        "the next nccl-tests table keeps its bus bandwidth at the large sizes"),
    Fix("horovod-stall", (Kind.DEADLOCK, Kind.CRASHED_RANK),
        r"reported by horovod|Horovod: rank \d+ has shut down",
        "make every rank submit the same tensors in the same order: no collective under a rank-dependent "
        "`if`, the same number of batches per rank, the same model on every rank; a rank that shut down: "
        "its own log",
        "no `One or more tensors were submitted ... by subset of ranks` warning in the next run"),
    Fix("phase-timer", (Kind.SLOW_PROGRESS,), r"each iteration spends .* in optimizer",
        "with ZeRO the optimizer step moves the gradients and parameters: overlap_comm, larger "
        "reduce_bucket_size / allgather_bucket_size, a faster interconnect (NVLink, IB not sockets)",
        "the optimizer timer falls to the order of forward + backward in the next run"),
    Fix("program-stall", (Kind.UNDECIDED, Kind.DEADLOCK), r"the program's own watchdog",
        "dump every rank's native stack at the stall (py-spy dump --native --pid PID) and NCCL's RAS "
        "report (ncclras) to see which collective and peer each rank waits on",
        "the stacks name one collective; the next run passes that step"),
    # --- end of branch bench ---
    Fix("mismatch", (Kind.MISMATCH,), r".",
        "make every rank issue the same collectives: the same code and versions on every node, the same data "
        "length per rank (drop_last, equal shards), no collective under a rank-dependent `if`, the same "
        "cache",
        "TORCH_DISTRIBUTED_DEBUG=DETAIL runs past that sequence number with no mismatch error"),
    Fix("straggler", (Kind.STRAGGLER, Kind.SLOW_PROGRESS),
        r"makes the others wait|enters \d+ of \d+ collectives last",
        "look at that rank's own host: GPU clocks and temperature (nvidia-smi -q -d CLOCK,PERFORMANCE), its "
        "data loader, its disk, other jobs on it",
        "the next run's verdict no longer names a rank that makes the others wait"),
    Fix("deadlock", (Kind.DEADLOCK,), r".",
        "find why the named rank never issued the collective: its stack (where it is), a collective under a "
        "rank-dependent `if`, uneven data so one rank leaves the loop early, an exception swallowed on that "
        "rank",
        "Flight Recorder dumps of the next run show every rank at the same sequence number"),
    Fix("slow-steps", (Kind.SLOW_PROGRESS,), r"(?i)took|per step",
        "find what the slow steps did besides training (checkpoint, eval, data loading, a node's "
        "throttling): `tracekit run` dumps stacks when progress stops",
        "the step times are steady in the next run's step lines"),
    # exits: how a process ended, as its launcher or runtime said (tracekit/rules_exit.py)
    Fix("hangup", (Kind.CRASHED_RANK,), r"SIGHUP",
        "run the launcher where a closed session cannot reach it: nohup torchrun ... > train.log 2>&1 &, "
        "tmux or screen, or a batch job (sbatch)",
        "the next run's log goes on past the moment its ssh session closes; no `death signal` line"),
    Fix("terminated", (Kind.CRASHED_RANK,), r"SIGTERM \(signal 15\)|SIGQUIT \(signal 3\)",
        "find what sent it: the scheduler's record of the job (sacct -j JOBID -o JobID,State,Elapsed,"
        "Timelimit: TIMEOUT, PREEMPTED, CANCELLED); raise the time limit, or checkpoint often and resume",
        "sacct shows the job COMPLETED, and its log ends with the training's own last line"),
    Fix("interrupted", (Kind.UNDECIDED,), r"Ctrl-C",
        "before stopping a job that seems stuck, dump every rank's stack (py-spy dump --pid PID, each "
        "rank), or run it under `tracekit run`, which dumps them when progress stops",
        "the stacks show where each rank waits"),
    Fix("segfault", (Kind.CRASHED_RANK,), r"SIGSEGV|[Ss]egmentation fault",
        "find the native frame: rerun with `python -X faulthandler` (or under gdb, or with a core dump: "
        "ulimit -c unlimited) and look at the library it names; try another version of it (NCCL, the "
        "extension, the driver)",
        "the rerun passes the step it failed in without a segmentation fault"),
    Fix("bus-error", (Kind.CRASHED_RANK, Kind.TRANSPORT_ERROR), r"SIGBUS|[Bb]us error",
        "give the container more shared memory (docker --shm-size=16g or --ipc=host; k8s an emptyDir of "
        "medium Memory at /dev/shm), or NCCL_SHM_DISABLE=1 to test whether shared memory is the cause",
        "`df -h /dev/shm` shows room during the run, and no process ends with SIGBUS"),
    Fix("python-exception", (Kind.CRASHED_RANK,), r"a Python exception \(its traceback",
        "read that process's own traceback: torchrun --log-dir DIR --redirects 3 --tee 3 keeps each rank's "
        "output, and `@record` (torch.distributed.elastic.multiprocessing.errors) puts it in the "
        "ChildFailedError block",
        "the failing rank's traceback names the exception; the next run passes the line it raised at"),
    Fix("workers-killed", (Kind.UNDECIDED,), r"killed its worker subprocesses",
        "keep the launcher's full output (its `exits with return code` / `failed (exitcode: N)` line) and "
        "each rank's own log (DeepSpeed: --enable_each_rank_log DIR; torchrun: --log-dir DIR --tee 3)",
        "the launcher's output names the process that ended first, with its code"),
)

#: each row by its cause
BY_CAUSE = {f.cause: f for f in FIXES}


def for_verdict(kind: Kind, text: str) -> Fix | None:
    """The first row that applies to a verdict of ``kind`` whose summary and evidence read ``text``."""
    for f in FIXES:
        if kind in f.kinds and re.search(f.when, text):
            return f
    return None
