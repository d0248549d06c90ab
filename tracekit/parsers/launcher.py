"""Who wrote a line: the rank, host and pid that launcher prefixes and self-naming lines give.

A prefix (``text.PREFIX``: torchrun ``[rank3]:``, MPI ``[1,3]<stdout>:``, ``[RANK 3] ``, Ray
``(Worker pid=615, ip=10.0.0.6)``, pdsh ``host: ``) says which process wrote the line under it; the
line itself is understood (or not) by the parser of its message, so a prefix alone claims nothing.

Lines that name their own writer's rank, or the world's size, are decoded here (``SELF``): the
``| distributed init (rank 3): env://`` of the DETR/DeiT family; a line that starts by naming its rank
(``rank: 3, ...``, ``Rank 0: Completed store-based barrier for 4 nodes.``, ``# Rank 7 tensor ...``;
under a launcher prefix the prefix has said it already); sglang's ``[2025-02-26 12:01:56 TP3]`` (its
tensor-parallel rank, the global one where no DP/PP rank is named); c10d's store barrier (``... for
rank: 3, key: ... (world_size=8, ...``, ``Added key: ... to store for rank: 1``); Lightning's
``GLOBAL_RANK: 1, MEMBER: 2/4``; vLLM's ``world_size=2 rank=1 local_rank=1``; DeepSpeed's launcher
``dist_world_size=16``; any line's ``world_size=N`` or ``world_size: N`` (``WORLD_SAID``); MPI's ``process
rank 1 with PID 820212 on node HOST exited``; aws-ofi-nccl's
``NET/OFI Process rank 1 started. NCCLNet device used on HOST``; fairseq's ``initialized host H as rank 5``;
ESPnet's ``self.dist_rank: 1``; the world in words (Megatron's ``using world size: 8``, ``WORLD_SIZE=8``);
DeepSpeed's launcher (``WORLD INFO DICT``, ``global_rank_mapping``, ``nnodes=2, num_local_procs=4``) and the
launch commands of mpirun, torchrun, deepspeed and ``accelerate launch``. Lines that name a writer but are
another parser's to claim (``WRITERS``: Slurm's ``srun: error: HOST: task 3``, torchelastic's node ids) give
their host and pid only; Slurm's task ids are ranks where each task is one process (``slurm``).

One row of ``ranks`` per (file, host, pid, rank) seen, source ``launcher`` (``LOCAL_TAG`` where a local-rank
prefix alone names the process); an NCCL line under a
prefix lends its ``host:pid``, so the prefix's rank and NCCL's own word about that process meet.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, slurm

NCCL_PROC = r"^\s*(?P<host>[\w.\-]+):(?P<pid>\d+):\d+ \["
# nccl-tests' `#  Rank  0 Group  0 Pid  21431 on HOST device  0 [0x00] ...`: the host of the lines around it
TESTS_RANK = r"^#\s*Rank\s+\d+(?:\s+Group\s+\d+)?(?:\s+Pid\s+\d+)?\s+on\s+(?P<host>[\w.\-]+)\s+device\s"
WORLD_SAID = r"\b(?:dist_)?world_size ?[=:] ?(?P<world_size>\d+)\b"
WORLD_WORDS = (r"(?:(?:^|[^\w\s]|\b(?:[Uu]sing|[Tt]he|[Tt]otal|[Gg]lobal|[Ww]ith))\s*[Ww]orld size"
               r"|(?:^|[^\w])WORLD_SIZE)\s*(?:[=:]|is)\s*(?P<world_size>\d+)\b")
#: the lines of ``SELF`` that say more than who wrote them (an error, a program's message): read for their
#: writer, left unclaimed for the parser of what they say (the failures', the fallback reader's)
UNCLAIMED = (r"\bOut of all \d+ trainers, the trainer process with rank=|\bRank\[\d+\] failed\."
             r"|^\s*[Rr]ank \d+:? [^\x00-\x7f]")
PADDLE_ABORTED = (r"\bOut of all \d+ trainers, the trainer process with rank=\[(?P<ranks>[\d, ]+)\] "
                  r"was aborted")
# sglang's scheduler prefix (below, ``SELF``); under a Ray actor's prefix (`(SGLangEngine pid=516714) [.. TP4]`)
# the engine is one of an RL job's rollout engines (slime, verl, OpenRLHF make several), its TP rank the
# engine's own, no global rank (dev-031)
SGLANG_TP = r"^\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?: ATTN_CP\d+| MOE_DP\d+)* TP(?P<rank>\d+)(?: EP\d+)?\] "
# each: a rank, a world size, a host or a pid its writer states (groups absent from one are null); under a
# launcher's prefix, the prefix's host and pid are the writer's (Ray Train's worker under `(pid=.., ip=..)`)
SELF = [
    r"^\|? ?distributed init \(rank (?P<rank>\d+)\)",
    # sglang's scheduler (`[{asctime}{prefix}] `, the prefix ` DP{dp} PP{pp} ATTN_CP{..} MOE_DP{..} TP{tp}
    # EP{ep}`, each where that group has more than one rank; the time alone in older releases): the
    # tensor-parallel rank is the global one where no data- or pipeline-parallel rank is named (the other
    # groups lie inside it)
    SGLANG_TP,
    # (torch 2.13 distributed_c10d.py:1068, 1081: `Waiting in store based barrier to initialize process group for
    # 30.0 secondsrank: 3, key: ..` (no space, as the two strings join), `Timed out initializing process group in
    # store based barrier on rank 3, for key: ..`; before 2.0 `for rank: 3, key:`, `on rank: 3, for key:`)
    r"store based barrier (?:to initialize process group )?(?:for [\d.]+ seconds|for|on) ?rank:? (?P<rank>\d+), "
    r"(?:for )?key: \S+ \(world_size=(?P<world_size>\d+)",
    # c10d's warning of a collective called outside its group (distributed_c10d.py:1105 _warn_not_in_group:
    # `Running barrier on global rank 3 which does not belong to the given group.`): the caller's global rank
    r"\bRunning \w+ on global rank (?P<rank>\d+) which does not belong to the given group\b",
    r"store_based_barrier_key:\d+ to store for rank: (?P<rank>\d+)",
    # ProcessGroupNCCL's options at a group's creation (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: `[PG ID 0
    # PG GUID 0(default_pg) Rank 3] ProcessGroupNCCL initialization options: size: 8, global rank: 3, TIMEOUT(ms):
    # ...`): the prefix's rank is the group's, `global rank` the writer's; a script's `local rank: 0, global rank:
    # 3` and `Using local_rank: 0, global rank: 3` likewise
    r"(?i)\bglobal rank: (?P<rank>\d+)\b",
    r"\bGLOBAL_RANK: (?P<rank>\d+), MEMBER: \d+/(?P<world_size>\d+)",
    r"\bworld_size=(?P<world_size>\d+) rank=(?P<rank>\d+) local_rank=\d+",
    r"NET/OFI Process rank (?P<rank>\d+) started\. NCCLNet device used on (?P<host>[\w.\-]+) ",
    # fairseq's distributed_utils: `initialized host {socket.gethostname()} as rank {distributed_rank}`
    r"\binitialized host (?P<host>[\w.\-]+) as rank (?P<rank>\d+)\b",
    # DeepSpeed's launcher (deepspeed/launcher/launch.py): `nnodes=1, num_local_procs=2, node_rank=0`
    r"\bnnodes=(?P<nodes>\d+), num_local_procs=(?P<per_node>\d+), node_rank=\d+",
    # the world's size in words (Megatron's `using world size: 8, data-parallel size: ...`, `World size: 8`,
    # an environment's `WORLD_SIZE=8`); a node's or a group's (`local world size`) is none
    WORLD_WORDS,
    # the PyTorch tutorial's point-to-point example (`print('Rank ', rank, ' has data ', tensor[0])`), copied
    # into many a script: `Rank  0  has data  tensor(1.)`
    r"^Rank\s+(?P<rank>\d+)\s+has data\s",
    # ESPnet's distributed options as it prints them (`self.dist_rank: 1`, beside `self.dist_world_size: 4`)
    r"^\s*(?:self\.)?dist_rank: (?P<rank>\d+)\s*$",
    # nccl-tests of NCCL 1 (one process, a rank per GPU): `#   Rank  0 uses device  0 [0x01] GeForce GTX`
    r"^#\s+Rank\s+(?P<rank>\d+) uses device\s+\d+ ",
    # NVSHMEM's bootstrap (src/modules/bootstrap/uid/bootstrap_uid.cpp, NCCL's bootstrap carried over: its
    # debug `rank 2 nranks 4 tag 0 - ENTER`): the processing element's rank among all of them, their number
    r"/bootstrap\w*\.cpp:\w+:\d+: rank (?P<rank>\d+) nranks (?P<world_size>\d+) tag \w+ - (?:ENTER|DONE)",
    # PyTorch/XLA's progress lines (torch_xla/test/test_utils.py, print_training_update / print_test_update:
    # `| Training Device=xla:1/0 Epoch=1 Step=640 ...`, the device then `/{xm.get_ordinal()}`,
    # _get_device_spec): the ordinal is the process's global rank among the replicas
    r"^\| (?:Training|Test) Device=\w+:\d+/(?P<rank>\d+) ",
    # Accelerate's state as scripts log it on every process (accelerate/state.py PartialState.__repr__:
    # `Distributed environment: MULTI_GPU  Backend: nccl`, `Num processes: 8`, `Process index: 3`, `Local
    # process index: 3`, `Device: cuda:3`, a line each): the process index is the global rank (the number
    # of processes is the world's size only under the block's head, read with the program's own figures)
    r"^Process index: (?P<rank>\d+)\s*$",
    # DeepSpeed's environment discovery (deepspeed/comm/comm.py mpi_discovery, in_aml, in_aws_sm: `Discovered
    # MPI settings of world_rank=3, local_rank=1, world_size=8, master_addr=..`, `AzureML`, `AWS SageMaker`):
    # the writer's global rank and the world's size
    r"\bDiscovered (?:MPI|AzureML|AWS SageMaker) settings of world_rank=(?P<rank>\d+), local_rank=\d+, "
    r"world_size=(?P<world_size>\d+)",
    # DeepSpeed's checkpoint tag check (deepspeed/runtime/engine.py _checkpoint_tag_validation: `[rank=3] The
    # checkpoint tag name '..' is not consistent across all ranks.`, logged or raised): the writer's rank
    r"\[rank=(?P<rank>\d+)\] The checkpoint tag name\b",
    # TensorRT-LLM's WorldConfig::mpi (cpp/tensorrt_llm/runtime/worldConfig.cpp): MPI_COMM_WORLD's size, rank
    r"\bMPI size: (?P<world_size>\d+), rank: (?P<rank>\d+)\b",
    # Ray Train's torch backend (ray/train/torch/config.py)
    r"Setting up process group for: \S+ \[rank=(?P<rank>\d+), world_size=(?P<world_size>\d+)\]",
    # a traceback's source line of the call that joined, its arguments literal: the process's own rank
    r"\b(?:init_process_group|init_rpc)\(.*\brank=(?P<rank>\d+)\s*,\s*world_size=(?P<world_size>\d+)\b",
    # c10d's store-based barrier (torch 2.13 torch/distributed/distributed_c10d.py:1088, `"Rank %s: Completed
    # store-based barrier for key:%s with %s nodes."`; before 1.13, `Rank 3: Completed store-based barrier
    # for 4 nodes.`, as torch 1.12's distributed_c10d.py:224 printed it under a logger's header): the
    # writer's rank, the group's size, wherever the header leaves the message
    r"\bRank (?P<rank>\d+): Completed store-based barrier for (?:key:\S+ with )?(?P<world_size>\d+) nodes\b",
    # ColossalAI's ParallelContext.set_device: `process rank {global_rank} is bound to device {ordinal}`
    r"\bprocess rank (?P<rank>\d+) is bound to device \d+",
    # PaddlePaddle's ProcessGroupNCCL (paddle/fluid/distributed/collective/process_group_nccl.cc, VLOG 3):
    # `init nccl rank_in_group: 3, nranks: 4, gid: 0, ...`: group 0 is the global one, its rank the world's
    r"\binit nccl rank_in_group: (?P<rank>\d+), nranks: (?P<world_size>\d+), gid: 0\b",
    # PaddlePaddle's launcher (distributed/utils/launch_utils.py): `ABORT!!! Out of all 2 trainers, the
    # trainer process with rank=[0, 1] was aborted.`: the world's size (the ranks: ``_aborted``)
    r"\bOut of all (?P<world_size>\d+) trainers, the trainer process with rank=",
    # LMDeploy's model agent (pytorch/engine/model_agent.py): `Rank[2] failed.`, a worker of its one group
    r"\bRank\[(?P<rank>\d+)\] failed\.",
    # a program's own `Rank 1 <its message>` in a language other than English (the English ones: ``HEAD``)
    r"^\s*[Rr]ank (?P<rank>\d+):? [^\x00-\x7f]",
    # any other line that states the world's size (DeepSpeed's `world_size = 1`, a traceback's call
    # `init_process_group(..., world_size=2, ...)`, ESPnet's `dist_world_size: 4`); a function's default
    # (`def f(world_size=1)`) is none, nor a group's (`group_world_size=`, `local_world_size=`)
    WORLD_SAID,
]
TORCHRUN_FAILED = r"failed \(exitcode: -?\d+\) local_rank: (?P<local_rank>\d+) \(pid: (?P<pid>\d+)\)"
# each: a launcher's word about one of its workers (never the writer of the line): mpirun's; torchrun's agent
# and torch.multiprocessing.spawn name a local rank (the global one only on a one-node job:
# identity.resolve_ranks); PyTorch's MultiProcessTestCase (common_distributed.py, test_distributed.py)
# numbers its processes by rank
WORKER = [
    r"\bprocess rank (?P<rank>\d+) with PID (?P<pid>\d+) on node (?P<host>[\w.\-]+) exited",
    TORCHRUN_FAILED,
    r"^-- Process (?P<local_rank>\d+) terminated with the following error:",
    r"^(?:torch\.multiprocessing\.spawn\.)?\w+: process (?P<local_rank>\d+) terminated with "
    r"(?:signal|exit code)",
    r"\bProcess(?:es)? (?P<rank>\d+) (?:exited with error code|terminated or timed out after)",
    r"\bTimeout waiting for rank (?P<rank>\d+) to terminate",
    # PaddlePaddle's launcher (distributed/launch/job/container.py): a container is a process of its pod,
    # numbered in the pod (a local rank)
    r"\bContainer rank (?P<local_rank>\d+) status \w+ cmd ",
]
# a line that opens with its own rank, where no launcher prefix has named the writer
HEAD = (r"^\s*(?:#\s*)?[Rr]ank:? (?P<rank>\d+)(?: of (?P<world_size>\d+))?(?:[,:]| \(| [a-z]\w*)"
        r"(?: Completed store-based barrier for (?P<nodes>\d+) nodes)?")
# the launch command, where a paste shows it: mpirun's (horovodrun's) -n/-np/--np; torchrun's (or
# torch.distributed.launch's) --nproc-per-node times --nnodes (1 when not given; an elastic range `1:3` says
# no size); deepspeed's --num_gpus times --num_nodes
MPIRUN = r"\b(?:mpirun|mpiexec|prterun|horovodrun)\b.*?\s--?(?:n|np)[ =](?P<n>\d+)"
# mpirun's host list (`-H a:8,b:8`, `--host a,b`, `-host a,b`): the job's hosts, slots after a colon
MPI_HOSTS = (r"\b(?:mpirun|mpiexec|prterun|horovodrun)\b.*?\s--?(?:H|host)[ =]"
             r"(?P<hosts>[\w.\-]+(?::\d+)?(?:,[\w.\-]+(?::\d+)?)*)")
#: the source of a rank only a local-rank prefix gives (torchelastic's ``--tee`` template `[default3]:`, role and
#: local rank): a node's numbering, which ``identity._local_as_global`` takes for the global one only on a job
#: shown to be of one node (the dev labels of dev-095, dv46-003, dv46-004, dv46-010 and torch-043 count none)
LOCAL_TAG = "local-tag"
COMMAND_HOSTS = "launch command"  # the source of the hosts a launch command lists (identity weighs them)
TORCHRUN = r"\b(?:torchrun|torch\.distributed\.(?:run|launch))\b"
PER_NODE = r"--nproc[-_]per[-_]node[= ](?P<n>\d+)"
NODES = r"--nnodes[= ](?P<n>\d+)(?P<range>:\d+)?"
CHEAP = (r"(?i)rank|world.size|\d TP\d|mpirun|mpiexec|prterun|horovodrun|nproc|torchrun"
         r"|process \d+ terminated|processes \d+ exited|nnodes=|srun: error|node '"
         r"|WORLD INFO DICT|global_rank_mapping|deepspeed|accelerate|container rank|NCCL communicator and"
         r"|MPI size|rendezvous|RankID:|launch_server|sglang serve|vllm serve|vllm\.entrypoints|ServerArgs\("
         r"|trainers, the trainer|^\| (?:Training|Test) Device=|^Process index: ")
# a writer a line names without being this parser's to claim (its message is another's): Slurm's word about
# its tasks (`srun: error: node12: tasks 0-3: Exited with exit code 1`: the host here, the tasks' ranks in
# ``slurm.failed``, where each task is one process of the job), torchelastic's rendezvous node id
# (`The node 'host_4242_0' has joined round 1`: `{fqdn}_{pid}_{local_id}`, the agent's host and pid)
WRITERS = [
    r"^srun: error: (?P<host>[\w.\-]+): tasks? [\d,\-]+: ",
    r"\b[Nn]ode '(?P<host>[\w.\-]+)_(?P<pid>\d+)_\d+'",
    # c10d's errors about the process that raises them (the failure parsers' lines): ProcessGroupNCCL's
    # failed fetch of the unique id (`[2] is setting up NCCL communicator and retrieving ncclUniqueId from
    # [0] via c10d key-value store`: its group's rank, the world's in every paste seen: the first
    # communicator's), Gloo's monitored barrier on a rank past the first (`Rank 1 successfully reached
    # monitoredBarrier, but ...`)
    r"(?:^|: )\[(?P<rank>\d+)\] is setting up NCCL communicator and retr",
    r"\bRank (?P<rank>\d+) successfully reached monitoredBarrier\b",
    # torch_npu's error head (Ascend/pytorch: `[ERROR] 2024-05-21-11:57:54 (PID:927000, Device:3, RankID:3)
    # ERR02200 DIST call hccl api failed.`): the raising process, its global rank (-1 outside a job: none)
    r"\(PID:(?P<pid>\d+), Device:\d+, RankID:(?P<rank>\d+)\)",
    # PyTorch/XLA's multiprocessing tests and copies: `Core {xm.get_ordinal()} waiting for rendezvous ...`
    # (the fallback reader quotes the wait)
    r"^Core (?P<rank>\d+) (?:waiting for|got) rendezvous\b",
]
# DeepSpeed's launcher: `WORLD INFO DICT: {'gpu1': [0, 1], 'gpu2': [0, 1]}` (the hosts, their slots), and
# `global_rank_mapping=defaultdict(<class 'list'>, {'gpu1': [0, 1], 'gpu2': [2, 3]})` (their ranks)
WORLD_INFO = r"\b(?:WORLD INFO DICT: |global_rank_mapping=defaultdict\(<class 'list'>, )\{(?P<dict>[^}]*)\}"
DEEPSPEED = r"^(?:\$ )?(?:\S*/)?deepspeed\s"
ACCELERATE = r"\baccelerate launch\b.*?--num[_-]processes[= ](?P<n>\d+)"
# an inference server's launch (sglang's launch_server, vLLM's serve or API server): its tensor-parallel size
# is the world's where no data- or pipeline-parallel size is given (a replica per data-parallel rank is a
# world of its own in some setups and one world in others); and sglang's printed `server_args=ServerArgs(...)`
SERVE = r"\b(?:sglang\.launch_server|sglang serve|vllm serve|vllm\.entrypoints\.[\w.]+)\b"
SERVE_TP = r"\s(?:--tp|--tp-size|--tensor-parallel-size|-tp)[ =](?P<n>\d+)\b"
SERVE_MORE = r"\s(?:--dp|--dp-size|--data-parallel-size|-dp|--pp|--pp-size|--pipeline-parallel-size|-pp)[ =]"
SERVER_ARGS = r"\bServerArgs\(.*\btp_size=(?P<n>\d+)\b"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("launcher")
    t = pl.col("text")
    # (a COLL line says nothing new of its writer, and the C scanner may have taken it apart before this
    # frame was built: leaving it out either way keeps the store the same both ways; it is most of a big log)
    world = pl.col("world_tag") if "world_tag" in lines.columns else pl.lit(None, pl.Int64)
    df = lines.select("file", "line", "text", "launch_rank", "local_tag", "pdsh_host", "ray_pid", "ray_ip",
                      world.alias("world_tag"))
    talk = ~t.str.contains(": opCount ", literal=True)
    cheap = df.filter(talk & t.str.contains(CHEAP))
    said = pl.concat([_self_named(cheap), _launch_size(cheap), _dp_attention(cheap)], how="diagonal_relaxed")
    writers = _writers(cheap)
    named = pl.col("launch_rank", "local_tag", "pdsh_host", "ray_pid", "ray_ip", "world_tag").is_not_null()
    # (a rank's prefix on a blank line, mpirun's `[1,1]<stdout>:` alone, shows no word of that process; a
    # local one heads the record under it: torchrun's `[3]:` of its error block, its lines below)
    said_any = (t.str.strip_chars() != "") | pl.col("local_tag").is_not_null()
    df = df.filter(talk & pl.any_horizontal(named) & said_any)
    df = df.with_columns(pl.coalesce("pdsh_host", "ray_ip").alias("_phost"),
                         pl.coalesce(t.str.extract(NCCL_PROC, 1), t.str.extract(TESTS_RANK, 1))
                         .alias("_nhost"),
                         t.str.extract(NCCL_PROC, 2).cast(pl.Int64, strict=False).alias("_npid"))
    # a prefix's host (pdsh's, Ray's ip) is the NCCL host name its NCCL lines give, where they give one
    alias = (df.filter(pl.col("_phost").is_not_null() & pl.col("_nhost").is_not_null())
             .group_by("file", "_phost").agg(pl.col("_nhost").unique().alias("_a"))
             .filter(pl.col("_a").list.len() == 1).with_columns(pl.col("_a").list.first()))
    tagged = (df.filter(pl.any_horizontal(pl.col("launch_rank", "local_tag", "_phost", "ray_pid", "world_tag")
                                          .is_not_null()))
              .join(alias, on=["file", "_phost"], how="left").select(
        "file", pl.coalesce("_nhost", "_a", "_phost").alias("host"),
        pl.coalesce("_npid", "ray_pid").alias("pid"),
        pl.col("launch_rank").alias("rank"), pl.col("local_tag").alias("local_rank"),
        pl.col("world_tag").alias("world_size")).unique(maintain_order=True)
              .with_columns(pl.when(pl.col("rank").is_null() & pl.col("local_rank").is_not_null())
                            .then(pl.lit(LOCAL_TAG)).alias("source")))

    ranks = pl.concat([tagged, said.drop("line"), writers, slurm.tasks(lines), slurm.failed(lines)],
                      how="diagonal_relaxed")
    said_by = [pl.col("source")] if "source" in ranks.columns else []
    ranks = ranks.with_columns(pl.coalesce(*said_by, pl.lit("launcher")).alias("source"))
    mine = said.select("file", "line").unique().join(
        cheap.filter(t.str.contains(UNCLAIMED)).select("file", "line"), on=["file", "line"], how="anti")
    return Parsed("launcher", {"ranks": ranks}, mine)


# sglang's scheduler prefix with a data-parallel rank (`[2025-06-05 08:28:03 DP3 TP7]`): under DP attention
# the tensor-parallel group is the whole job and DP splits it (sglang/srt/layers/dp_attention.py,
# compute_dp_attention_world_info: `attn_tp_size = tp_size // dp_size`, `dp_rank = tp_rank // attn_tp_size`);
# under plain data parallelism each DP replica has its own TP group (`DP0 TP1`, `DP1 TP1`)
SGLANG_DP = (r"^\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d DP(?P<dp>\d+)(?: ATTN_CP\d+| MOE_DP\d+)* TP(?P<tp>\d+)"
             r"(?: EP\d+)?\] ")


def _dp_attention(df: pl.DataFrame) -> pl.DataFrame:
    """``file, line, rank`` of sglang's ``DPd TPt`` lines in a file whose every pair fits DP attention's
    layout (one block size ``k`` with ``d == t // k`` for all): the TP rank is then the job's rank."""
    t = pl.col("text")
    pairs = (df.filter(t.str.contains(SGLANG_DP)).select("file", "line", t.str.extract_groups(SGLANG_DP)
                                                            .alias("_g")).unnest("_g")
             .with_columns(pl.col("dp", "tp").cast(pl.Int64)))
    keep = []
    for (f,), g in pairs.group_by("file", maintain_order=True):
        seen = set(zip(g["dp"].to_list(), g["tp"].to_list()))
        if any(all(d == tp // k for d, tp in seen) for k in range(1, max(tp for _, tp in seen) + 2)):
            keep.append(f)
    return (pairs.filter(pl.col("file").is_in(keep))
            .select("file", "line", pl.col("tp").alias("rank"), pl.lit("launcher").alias("source")))


def _launch_size(df: pl.DataFrame) -> pl.DataFrame:
    """``file, line, world_size`` of the launch commands a paste shows, and a row per ``host`` that
    mpirun's host list names."""
    t = pl.col("text")
    per_node = t.str.extract(PER_NODE, 1).cast(pl.Int64, strict=False)
    nodes = pl.when(t.str.extract(NODES, 2).is_null()).then(
        t.str.extract(NODES, 1).cast(pl.Int64, strict=False).fill_null(1))
    # deepspeed's --num_gpus times --num_nodes (1 node where no hostfile or host list says more)
    gpus = t.str.extract(r"\s--num_gpus[= ](\d+)", 1).cast(pl.Int64, strict=False)
    ds_nodes = pl.coalesce(t.str.extract(r"\s--num_nodes[= ](\d+)", 1).cast(pl.Int64, strict=False),
                           pl.when(~t.str.contains(r"\s(?:--hostfile|-H|--include|--exclude)[= ]")).then(1))
    size = (pl.when(t.str.contains(MPIRUN)).then(t.str.extract(MPIRUN, 1).cast(pl.Int64, strict=False))
            .when(t.str.contains(TORCHRUN)).then(per_node * nodes)
            .when(t.str.contains(DEEPSPEED)).then(gpus * ds_nodes)
            .when(t.str.contains(ACCELERATE)).then(t.str.extract(ACCELERATE, 1).cast(pl.Int64, strict=False))
            .when(t.str.contains(SERVE) & ~t.str.contains(SERVE_MORE))
            .then(t.str.extract(SERVE_TP, 1).cast(pl.Int64, strict=False))
            .when(t.str.contains(SERVER_ARGS) & ~t.str.contains(r"\b(?:dp|pp)_size=(?:[2-9]|\d\d)"))
            .then(t.str.extract(SERVER_ARGS, 1).cast(pl.Int64, strict=False)))
    command = pl.any_horizontal(t.str.contains(p) for p in (MPIRUN, TORCHRUN, DEEPSPEED, ACCELERATE, SERVE,
                                                            SERVER_ARGS))
    sized = df.filter(command).select("file", "line", size.alias("world_size")).drop_nulls("world_size")
    # DeepSpeed's launcher's world: its hosts (the launch command's, weighed as such) and their slots
    info = df.filter(t.str.contains(WORLD_INFO)).select(
        "file", "line", t.str.extract(WORLD_INFO, 1).alias("_d"))
    slots = info.select("file", "line", pl.col("_d").str.count_matches(r"(?:\[|, )\d+").cast(pl.Int64)
                        .alias("world_size")).filter(pl.col("world_size") > 0)
    # (`localhost` where it is the only host: the job's one machine, by the name the launcher gives it, as
    # torchrun's error block names it; beside others it is the launching host's alias)
    listed = (info.select("file", "line", pl.col("_d").str.extract_all(r"'([\w.\-]+)':").alias("host"))
              .with_columns(pl.col("host").list.len().alias("_n")).explode("host")
              .with_columns(pl.col("host").str.strip_chars("':"))
              .filter(~pl.col("host").is_in(["localhost", "127.0.0.1"]) | (pl.col("_n") == 1)).drop("_n")
              .with_columns(pl.lit(COMMAND_HOSTS).alias("source")))
    hosts = (df.filter(t.str.contains(MPI_HOSTS))
             .select("file", "line", t.str.extract(MPI_HOSTS, 1).str.split(",").alias("host")).explode("host")
             .with_columns(pl.col("host").str.replace(r":\d+$", ""))
             # (`localhost` is the launching host's alias, not its name: the name, where shown, is elsewhere)
             .filter(~pl.col("host").is_in(["localhost", "127.0.0.1"]))
             .with_columns(pl.lit(COMMAND_HOSTS).alias("source")))
    return pl.concat([sized, hosts, slots, listed], how="diagonal_relaxed")


def _writers(df: pl.DataFrame) -> pl.DataFrame:
    """``file, host, pid, rank``: the writers the lines of ``WRITERS`` name (the lines stay unclaimed)."""
    out = []
    for pattern in WRITERS:
        t = pl.col("text")
        sub = df.filter(t.str.contains(pattern))
        if sub.height:
            out.append(sub.select("file", t.str.extract_groups(pattern).alias("_g")).unnest("_g"))
    if not out:
        return pl.DataFrame(schema={"file": pl.Utf8, "host": pl.Utf8, "pid": pl.Int64, "rank": pl.Int64})
    got = pl.concat(out, how="diagonal_relaxed")
    cols = (("host", pl.Utf8), ("pid", pl.Int64), ("rank", pl.Int64))
    return got.select("file", *[(pl.col(c) if c in got.columns else pl.lit(None)).cast(d, strict=False)
                                .alias(c) for c, d in cols]).unique(maintain_order=True)


def _self_named(df: pl.DataFrame) -> pl.DataFrame:
    """``file, line, host, pid, rank, local_rank, world_size`` of each line that states its writer's rank (or
    a launcher's worker's local rank) or the world's size."""
    t = pl.col("text")
    out = []
    for pattern in SELF + WORKER:
        sub = df.filter(t.str.contains(pattern))
        if pattern == WORLD_SAID:  # (a function's default is no world's size)
            sub = sub.filter(~t.str.contains(r"\bdef "))
        if pattern == SGLANG_TP and "ray_pid" in sub.columns:  # (an RL job's engine: its own TP group)
            sub = sub.filter(pl.col("ray_pid").is_null())
        if not sub.height:
            continue
        sub = sub.with_columns(t.str.extract_groups(pattern).alias("_g")).unnest("_g")
        if "per_node" in sub.columns:  # (DeepSpeed's launcher: its nodes times each one's processes)
            sub = sub.with_columns((pl.col("nodes").cast(pl.Int64) * pl.col("per_node").cast(pl.Int64))
                                   .alias("world_size")).drop("nodes", "per_node")
        if pattern == TORCHRUN_FAILED:  # the agent's own word: torchrun's, as its error block is
            sub = sub.with_columns(pl.lit("torchrun").alias("source"))
        if pattern in SELF:
            sub = sub.with_columns(
                pl.coalesce(*[c for c in ("host", "pdsh_host", "ray_ip") if c in sub.columns]).alias("host"),
                pl.coalesce(*[c for c in ("pid", "ray_pid") if c in sub.columns]).cast(pl.Utf8).alias("pid"))
        out.append(sub)
    aborted = df.filter(t.str.contains(PADDLE_ABORTED))
    if aborted.height:  # a launcher's word about its trainers (global ranks), never the line's writer
        out.append(aborted.select("file", "line", t.str.extract(PADDLE_ABORTED, 1).str.extract_all(r"\d+")
                                  .alias("rank")).explode("rank"))
    head = df.filter(pl.col("launch_rank").is_null() & pl.col("local_tag").is_null() & t.str.contains(HEAD))
    if head.height:
        out.append(head.with_columns(t.str.extract_groups(HEAD).alias("_g")).unnest("_g").with_columns(
            pl.coalesce("world_size", "nodes").alias("world_size")))
    if not out:
        return pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64, "host": pl.Utf8, "pid": pl.Int64,
                                    "rank": pl.Int64, "local_rank": pl.Int64, "world_size": pl.Int64,
                                    "source": pl.Utf8})
    got = pl.concat(out, how="diagonal_relaxed")
    cols = {"host": pl.Utf8, "pid": pl.Int64, "rank": pl.Int64, "local_rank": pl.Int64,
            "world_size": pl.Int64, "source": pl.Utf8}
    return got.select("file", "line", *[(pl.col(c) if c in got.columns else pl.lit(None))
                                        .cast(d, strict=False).alias(c) for c, d in cols.items()])

