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
the line tells them apart. (s31) A runtime's word that start-up's wait ended (``Means.RETURNED``: torch's
``Completed store-based barrier``, SGLang's ``Init torch distributed ends.``) marks the retries before it in its
file as start-up under way (``start_up_returned``).

Sources (commits): NVIDIA/nccl 5067397c (master) and the release tags named; ray-project/ray
028939cb (service_based_gcs_client.cc) and 00f8d999 (gcs_rpc_client.h); pytorch/pytorch's c10d files by
function (the checkout too big to fetch here: file and function named instead of a line).
"""

from __future__ import annotations

import re

from tracekit.parsers import any_of
# (the entry's types and c10d's entries live in their own modules since s30; re-exported here, where the
# rules and parsers read them: ``sm.Means``, ``sm.DECISIVE``)
from tracekit.start_up_c10d import C10D
from tracekit.start_up_entry import ADDR as _ADDR, DECISIVE, Means, Message  # noqa: F401


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
    # (s29) the same wait in HCCL's own log line, before CANN 8.5's stage keywords (dv35-006, CANN's EI0006
    # guide): `[Wait][LinkEstablish]wait socket establish timeout, role[1] rank[1] timeout[120 s]`, then
    # `[LinksEstablishCompleted] is failed. ret[9]`; CANN 8.5 prints it under `[InitChannelStage][Timeout]`
    # (cann hcomm's channel set-up: `[%s][%s] wait socket establish timeout, channel connect timeout after %lld
    # sec`), where parsers/runtimes/cann reads the stage as a link that was never built
    Message("hccl_link_establish_timed_out", "HCCL",
            r"\bwait socket establish timeout\b(?:.{0,40}?\brank\[(?P<rank>\d+)\])?"
            r"(?:.{0,40}?timeout\[(?P<seconds>\d+) ?s\])?",
            Means.TIMED_OUT, "its peer's side of a link (the peer never connected within HCCL_CONNECT_TIMEOUT, "
            "120 s by default: it had not reached the same communicator's set-up, had failed, or is not reachable)",
            "CANN hccl src/.../hccl_socket_manager.cc (`[Wait][LinkEstablish]wait socket establish timeout, "
            "role[%d] rank[%u] timeout[%d s]`, the EI0006 guide's keyword); cann hcomm's channel set-up at 8.5",
            decoded=False),
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
            # (s29: PRRTE, Open MPI 5's launcher, says it in its own name: openpmix/prrte
            # src/mca/errmgr/help-errmgr-base.txt `PRTE was unable to reliably start one or more daemons.`)
            r"(?:ORTE|PRTE) was unable to reliably start one or more daemons",
            Means.GAVE_UP, "its daemons on the other nodes (ssh or srun could not start orted there, or they "
            "cannot connect back to mpirun's node)",
            "open-mpi/ompi orte/mca/errmgr/base/help-errmgr-base.txt:36 at v4.1.8", decoded=False),
    # Horovod's launcher (horovodrun): a host's task server, started over ssh, failed or never reported back
    Message("horovod_task_launch_failed", "Horovod",
            r"Launching (?:horovodrun )?task function was not successful",
            Means.GAVE_UP, "its task server on each host (started over ssh; each must start and connect back to "
            "the driver on the launching host)",
            "horovod/horovod horovod/runner/driver/driver_service.py (_launch_task_servers: `Launching horovodrun "
            "task function was not successful.` then the host's stderr) and horovod/runner/util/threads.py "
            "(exec_command: `Launching task function was not successful:\\n{host_output}`)", decoded=False),
    # (the same launcher's Timeout, raised from its check: the traceback's source line names what it waited for
    # where the exception's own line is cut, horovod/runner/common/util/timeout.py check_time_out_for, called
    # by task_service.wait_for_initial_registration with 'tasks to start')
    Message("horovod_timeout_checked", "Horovod",
            r"\bcheck_time_out_for\(['\"](?P<activity>[^'\"]{1,80})['\"]\)",
            Means.TIMED_OUT, "the launch to report back (horovodrun's --start-timeout, HOROVOD_START_TIMEOUT)",
            "horovod/horovod horovod/runner/common/util/timeout.py (Timeout.check_time_out_for raises only once "
            "the deadline passed: `Timed out waiting for {activity}. Please check connectivity between "
            "servers.`)", decoded=False),
    # Gloo's rendezvous store (connectFullMesh: every rank writes its address under its key and waits for its
    # peers'): Horovod's HTTP store on the launcher's host, and Gloo's own file and hash stores
    Message("gloo_store_wait_timed_out", "Gloo",
            r"Wait timeout after (?P<seconds>\d+) seconds for key\(s\)(?:: (?P<keys>[^.\n]{0,40}))?"
            r"|\bWait timeout for key\(s\)",
            Means.TIMED_OUT, "its peers' addresses in the Gloo rendezvous store (every rank of the world must write "
            "its key: a rank that never started or cannot reach the store; Horovod's HOROVOD_GLOO_TIMEOUT_SECONDS)",
            "horovod/horovod 1470403c horovod/common/gloo/http_store.cc:57 (HTTPStore::wait: GLOO_THROW_IO_EXCEPTION"
            "(\"Wait timeout after \", N, \" seconds for key(s): \", keys)), called from gloo_context.cc Rendezvous "
            "-> connectFullMesh; facebookincubator/gloo gloo/rendezvous/file_store.cc (FileStore::wait: `Wait "
            "timeout for key(s): `)"),
    # Paddle's wait for its peers' endpoints before it creates a communicator (c_gen_nccl_id, the gloo and
    # parameter servers): a connect to each endpoint, retried every 3 s until every one accepts. Real logs show
    # it once or twice before a run that goes on (Paddle#29200): it decides only with nothing past start-up
    Message("paddle_endpoint_not_ready", "Paddle",
            r"\bserver not ready, wait (?P<seconds>\d+) sec to retry"
            r"|\bnot ready endpoints: ?\[['\"]?(?P<address>[\w.\-]+:\d+)",
            Means.RETRYING, "its peers' endpoints (PADDLE_TRAINER_ENDPOINTS or the servers': each must accept a "
            "connect before the communicator is made)",
            "PaddlePaddle/Paddle python/paddle/distributed/fleet/base/private_helper_function.py wait_server_ready "
            "(`sys.stderr.write(\"server not ready, wait 3 sec to retry...\\n\")`, then `not ready endpoints:` "
            "and the list, then time.sleep(3))", decoded=False),
    # torchelastic's etcd rendezvous: the round it found is closed and a participant of it has stopped renewing
    # its keep-alive (its TTL expired: that agent is gone), so the new agent waits for a round that never reopens
    Message("etcd_keep_alive_expired", "torchelastic",
            r"Keep-alive key (?P<key>\S+) is not renewed",
            Means.TIMED_OUT, "the participants of the etcd rendezvous it joins (a participant's keep-alive expired: "
            "that agent is gone and its closed round blocks the next)",
            "pytorch/elastic torchelastic/rendezvous/etcd_rendezvous.py (EtcdRendezvous.wait_for_rendezvous_to_free:"
            " `log.info(\"Keep-alive key {} is not renewed.\")`, then `Rendevous version {} is incomplete.` and "
            "the attempt to destroy it; torch/distributed/elastic/rendezvous/etcd_rendezvous.py since)",
            decoded=False),
    # Ray: a node or driver that could not reach the head's GCS after its retries
    Message("ray_gcs_unreachable", "Ray",
            rf"Unable to connect to GCS (?:\(ray head\) )?at {_ADDR}\. Check that"
            r"|Failed to connect to GCS\. Please check `gcs_server\.out`",
            Means.GAVE_UP, "the Ray head's GCS server (ray start --address, ray.init(address=...))",
            "ray-project/ray python/ray/_private/utils.py (`Unable to connect to GCS at {}. Check that (1) Ray GCS "
            "with matching version started successfully at the specified address, and (2) there is no firewall "
            "setting preventing access.`, after its retries; `Unable to connect to GCS (ray head) at` since Ray "
            "2.5) and python/ray/_private/gcs_utils.py; the text "
            "quoted in doc/source/cluster/faq.rst", decoded=False),
    # (s29) Open MPI's routes to the daemons it launched, set up before any process runs: orte/mca/errmgr/base/
    # help-errmgr-base.txt [no-path] `ORTE does not know how to route a message to the specified daemon`
    Message("orte_daemon_unrouted", "Open MPI",
            r"(?:ORTE|PRTE) does not know how to route a message to the specified daemon",
            Means.GAVE_UP, "a route to a daemon it launched on another node (mpirun's out-of-band wire-up of its "
            "daemons: a node whose daemon never connected back, or an interface the nodes do not share)",
            "open-mpi/ompi orte/mca/errmgr/base/help-errmgr-base.txt [no-path] at v4.1.8", decoded=False),
    # (s29) Ray Client's connect to the head (ray.init("ray://host:10001")): ray-project/ray python/ray/util/
    # client/worker.py Worker._connect_channel: `raise ConnectionError("ray client connection timeout")` after
    # its connection_retries
    Message("ray_client_connect_timed_out", "Ray",
            r"\bray client connection timeout\b",
            Means.TIMED_OUT, "the Ray head's client server (ray.init(address=\"ray://HEAD:10001\"): the head not "
            "up, another port, or a firewall)",
            "ray-project/ray python/ray/util/client/worker.py Worker._connect_channel", decoded=False),
    # Open MPI's out-of-band wire-up of its daemons and processes (before MPI_Init returns)
    Message("ompi_oob_tcp_unreachable", "Open MPI",
            r"A process or daemon was unable to complete a TCP connection",
            Means.GAVE_UP, "a TCP connection to another Open MPI process or daemon (its out-of-band wire-up)",
            "open-mpi/ompi orte/mca/oob/tcp/help-oob-tcp.txt (`A process or daemon was unable to complete a TCP "
            "connection to another process: Local host: ... Remote host: ... This is usually caused by a "
            "firewall on the remote host.`)", decoded=False),
    # MPICH's launcher (Hydra's mpiexec and its proxies): the connect between them at launch, after its retries
    Message("hydra_connect_failed", "MPICH Hydra",
            r"unable to connect from \"[^\"]*\" to \"(?P<address>[^\"]+)\"|\bunable to connect to (?:proxy|the main "
            r"server)\b",
            Means.GAVE_UP, "its proxy on another node (mpiexec's control connection: ssh started it, or it cannot "
            "reach back; a firewall or a hostname that resolves to another interface)",
            "pmodels/mpich src/pm/hydra/lib/utils/sock.c HYDU_sock_connect (`unable to connect from \"%s\" to "
            "\"%s\" (%s)` after its retries) and its callers' HYDU_ERR_POP(status, \"unable to connect to "
            "proxy\")", decoded=False),
    # (s28) a native stack (gdb's `bt`, `thread apply all bt`) whose frame is NCCL's communicator init: the process
    # was inside ncclCommInitRank (its bootstrap, its connections to the peers) when dumped (dv31-006: bootstrapRecv
    # under p2pSetup, initTransportsRank, ncclCommInitRankSync at init.cc); only the init's own frames, not a
    # socket's or a proxy's, which come in the collectives too (dv8-002's recv under ncclSocketWait alone)
    Message("nccl_init_in_stack", "NCCL",
            r"^\s*#\d+\s+(?:0x[0-9a-fA-F]+ in )?(?P<frame>ncclCommInitRank\w*|ncclCommInitAll|initTransportsRank"
            r"|ncclGetUniqueId|bootstrapInit|bootstrapCreateRoot|bootstrapRoot|ncclCommSplit)\b"
            r"(?:.*\bat (?P<source>\S+\.(?:cc|cu|c|h):\d+))?",
            Means.CAUGHT_IN, "NCCL's communicator init (ncclCommInitRank: its bootstrap with the other ranks and "
            "its connections to its peers)",
            "NVIDIA/nccl src/init.cc (ncclCommInitRank -> ncclCommInitRankFunc/ncclCommInitRankSync -> "
            "initTransportsRank, which runs the bootstrap's all-gather and p2pSetup) and src/bootstrap.cc "
            "(bootstrapInit, bootstrapRoot)", decoded=False),
    # Slurm's srun: its launch request to a node's slurmd never got through, so no task of the job started there
    # (only the connection's errors: `Slurmd could not execve job` is a program that cannot start, a crash)
    Message("slurm_task_launch_failed", "Slurm",
            r"\b(?:Task launch for (?:StepId=)?\S+ failed on node (?P<node>[\w.\-]+)|Application launch failed): "
            r"(?P<error>Communication connection failure|Connection refused|Connection timed out|No route to host"
            r"|Socket timed out on send/recv operation|Unable to contact slurm controller)",
            Means.GAVE_UP, "the job's tasks on a node (srun's launch request to slurmd there: the node's slurmd "
            "down or unreachable from the launching host)",
            "SchedMD/slurm src/api/step_launch.c (`error(\"Task launch for %ps failed on node %s: %m\")`, as "
            "compiled into libslurm's string table) and src/srun/srun_job.c (`Application launch failed: %m`)",
            decoded=False),
    # a launcher's ssh to a node (pdsh, mpirun's orted, horovodrun, DeepSpeed's runner) that never connected:
    # OpenSSH's own line (ssh.c / sshconnect.c ssh_connect_direct: `ssh: connect to host %s port %s: %s`),
    # printed before any rank starts there (rules_init.start_up_said reads it only where nothing got past start-up)
    Message("ssh_connect_failed", "ssh",
            r"\bssh: connect to host (?P<node>[\w.\-]+) port (?P<port>\d+): "
            r"(?P<error>Connection refused|Connection timed out|No route to host|Network is unreachable"
            r"|Operation timed out)",
            Means.GAVE_UP, "the connection to a node the launcher starts ranks on (no rank is started there: the "
            "node down, sshd not running or a firewall on its port)",
            "openssh/openssh-portable sshconnect.c ssh_connect_direct (`error(\"ssh: connect to host %s port %s: "
            "%s\", host, strport, ...)`)"),
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
    # (s34: the `> ` its lines begin with is taken off as a paste's quote mark, parsers/text.py, so the line may
    # begin with its words: neither entry of Megatron's matched a pasted log before)
    Message("megatron_init_distributed", "Megatron", r"(?:^\s*|>\s*)initializing torch distributed \.\.\.",
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
    # (s31) start-up's wait ended, in the runtimes' own words (``Means.RETURNED``): the connect retries and waits said
    # before such a line in its file were start-up under way (rules_init.start_up_said drops them)
    Message("torch_store_barrier_completed", "torch",
            r"Rank (?P<rank>\d+): Completed store-based barrier for key ?:\S+ with (?P<nranks>\d+) nodes",
            Means.RETURNED, "every rank of the process group at its store-based barrier",
            "pytorch/pytorch torch/distributed/distributed_c10d.py _store_based_barrier (`logger.info(\"Rank %s: "
            "Completed store-based barrier for key:%s with %s nodes.\")`, once every rank checked in)",
            decoded=False),
    Message("fairseq_initialized_host", "fairseq",
            r"\binitialized host (?P<node>\S+) as rank (?P<rank>\d+)",
            Means.RETURNED, "its process group (init_process_group returned: every rank joined)",
            "facebookresearch/fairseq 3d262bb2 fairseq/distributed/utils.py:298 distributed_init (`logger.info("
            "\"initialized host {} as rank {}\")` after dist.init_process_group)", decoded=False),
    Message("sglang_init_distributed_ends", "SGLang", r"Init torch distributed ends\.",
            Means.RETURNED, "its process groups (init_distributed_environment and initialize_model_parallel returned)",
            "sgl-project/sglang 0005834c python/sglang/srt/model_executor/model_runner.py "
            "ModelRunner.init_torch_distributed (`Init torch distributed ends. mem usage=...`; parsers/trainer's "
            "`dist_init` milestone)"),
    Message("lightning_processes_registered", "Lightning",
            r"All distributed processes registered\. Starting with (?P<nranks>\d+) processes",
            Means.RETURNED, "its process group (init_process_group returned on rank 0: every process joined)",
            "Lightning-AI/pytorch-lightning src/lightning/fabric/utilities/distributed.py _init_dist_connection "
            "(rank 0 logs `All distributed processes registered. Starting with {world_size} processes` after "
            "torch.distributed.init_process_group)", decoded=False),
    Message("megatron_initialized_model_parallel", "Megatron",
            r"(?:^\s*|>\s*)initialized (?:tensor|pipeline) model parallel with size (?P<size>\d+)",
            Means.RETURNED, "its process group and its model-parallel groups",
            "NVIDIA/Megatron-LM megatron/training/initialize.py _initialize_distributed (after init_process_group "
            "and mpu.initialize_model_parallel, rank 0 prints `> initialized tensor model parallel with size {}` "
            "and `> initialized pipeline model parallel with size {}`)", decoded=False),
    # (s34) torchrun's elastic agent: its rendezvous with the other nodes' agents begun (the first attempt's too:
    # api.py logs it before every rendezvous), and the c10d backend's join of the next round (it returns only once
    # min_nodes agents joined: `has joined round N`); a worker group FAILED before it is a restart, which the
    # crash rules read (start_up_ends_the_log fires only with no failure in the excerpt)
    Message("torchelastic_rendezvousing", "torchelastic",
            r"\[(?P<role>[\w\-]+)\] Rendezvous'ing worker group\s*$"
            r"|The node '[^']+' attempts to join the next round of the rendezvous '(?P<run_id>[^']*)'",
            Means.JOINING, "its rendezvous with the other nodes' torchrun agents (it returns once min_nodes agents "
            "joined the round: a node not started, another --rdzv-endpoint or --rdzv-id, or a store it cannot reach)",
            "pytorch/pytorch torch/distributed/elastic/agent/server/api.py:707 at torch 2.13 (_initialize_workers: "
            "`logger.info(\"[%s] Rendezvous'ing worker group\", role)`, then _rendezvous -> next_rendezvous) and "
            "torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1151 (next_rendezvous: `The node '{node}' "
            "attempts to join the next round of the rendezvous '{run_id}'.`)", decoded=False),
    Message("torchelastic_round_joined", "torchelastic",
            r"The node '[^']+' has joined round (?P<round>\d+) of the rendezvous '[^']*' as rank (?P<group_rank>\d+) in "
            r"a world of size (?P<nranks>\d+)",
            Means.RETURNED, "its rendezvous (the round closed with every agent it needs)",
            "pytorch/pytorch torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1186 at torch 2.13 "
            "(next_rendezvous: `The node '{node}' has joined round {round} of the rendezvous '{run_id}' as rank "
            "{rank} in a world of size {world_size}.`)", decoded=False),
    # (s34) detectron2's tools: the arguments printed right before launch(), which spawns num_gpus processes on each
    # machine and has each create the process group when num_machines * num_gpus > 1 (a world of one creates none:
    # only then is the line an announcement); a worker's default_setup logs its rank and world once it returned
    Message("detectron2_launch", "detectron2",
            r"Command Line Args: Namespace\(.*\bnum_gpus=(?:[2-9]|\d{2,}), num_machines=\d+"
            r"|Command Line Args: Namespace\(.*\bnum_gpus=\d+, num_machines=(?:[2-9]|\d{2,})",
            Means.JOINING, "its process group (launch: init_process_group in every spawned worker of every machine, "
            "the world num_machines x num_gpus, through dist_url)",
            "facebookresearch/detectron2 02b5c4e2 tools/train_net.py:155 (`print(\"Command Line Args:\", args)`, then "
            "launch(main, args.num_gpus, num_machines=...)); detectron2/engine/launch.py:54-55 (`world_size = "
            "num_machines * num_gpus_per_machine`, `if world_size > 1:` spawn) and :102 (dist.init_process_group)",
            decoded=False),
    Message("detectron2_rank_set_up", "detectron2",
            r"Rank of current process: (?P<rank>\d+)\. World size: (?P<nranks>\d+)",
            Means.RETURNED, "its process group (launch's init_process_group and synchronize returned)",
            "facebookresearch/detectron2 02b5c4e2 detectron2/engine/defaults.py:218 default_setup (`logger.info(\"Rank "
            "of current process: {}. World size: {}\")`, called by main after launch's worker set up its group)",
            decoded=False),
    # JAX's client before it connects to the coordination service (its connect waits for every process)
    Message("jax_connect_coordinator", "JAX",
            r"Connecting to JAX distributed service on (?P<address>\S+)",
            Means.JOINING, "JAX's coordination service (client.connect returns once every process registered)",
            "jax-ml/jax jax/_src/distributed.py State.initialize: logger.info('Connecting to JAX distributed "
            "service on %s', coordinator_address), then self.client.connect()", decoded=False),
) + C10D


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
#: (s30) what a connect retried means: start-up still under way (it may yet connect), a milestone like a wait begun,
#: never a stall by itself (a retry then steps is a start-up that went on); ``rules_init.start_up_said`` decides the
#: stall where nothing follows it
RETRIES = (Means.RETRYING, Means.RETRIED)
#: the entries of a start-up begun that end a log only where start-up never returned (rules_init)
BEGINS = either(m for m in MESSAGES if m.means in BEGUN)
#: (s31) the entries of a start-up's wait that ended (``Means.RETURNED``)
RETURNS = either(m for m in MESSAGES if m.means is Means.RETURNED)
#: the entries no other parser makes an event of (parsers/start_up reads them)
UNDECODED = either(m for m in MESSAGES if not m.decoded)


def read(text: str) -> tuple[Message, dict] | None:
    """The first entry whose pattern the line holds, with its named groups (those that matched)."""
    for m in MESSAGES:
        hit = re.search(m.pattern, text)
        if hit:
            return m, {k: v for k, v in hit.groupdict().items() if v}
    return None
