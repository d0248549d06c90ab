"""The ranks a program's own sentences name: a process that says which rank it is, or a report that names
the ranks it compares, where no prefix or NCCL line says so (issue 31, rank identity).

Each entry of ``RANK_WORDS`` is one sentence of one runtime, read from the code that prints it, and what its
number is: the writer's global rank, its local rank (global only where nothing shows a second node:
``identity._local_as_global``), or the ranks a report names. A number that is a group-local rank (c10d's
``[PG 5 Rank 1]``), a node's rank (``--machine-rank``, SkyPilot's ``(worker1, rank=1)``) or a peer a line
waits on is no entry: the rank it names is not one whose lines are seen.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of
from tracekit.parsers.rank_set_up import SET_UP, RankWord


RANK_WORDS = (
    RankWord(r"Rank (?P<rank>\d+) is running (?:inconsistent )?collective:",
             "pytorch torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp (TORCH_DISTRIBUTED_DEBUG=DETAIL's "
             "fingerprint check: `Detected mismatch between collectives on ranks. Rank {} is running collective: "
             "{}, but Rank {} is running collective: {}`)",
             "each side of the report is the collective one global rank issued"),
    RankWord(r"DDP expects same model across all ranks, but Rank (?P<rank>\d+) has \d+ params, while rank "
             r"(?P<other>\d+) has",
             "pytorch torch/csrc/distributed/c10d/reducer.cpp (verify_params_across_processes)",
             "the two global ranks whose parameter counts it compared"),
    RankWord(r"\bProcess rank: (?P<local>\d+), device: ",
             "transformers examples/pytorch/*/run_*.py (`Process rank: {training_args.local_rank}, device: "
             "{training_args.device}, n_gpu: ...`)",
             "the writer's local rank"),
    RankWord(r"\bProcess rank: (?P<rank>\d+), world size: (?P<world>\d+)",
             "LLaMA-Factory llamafactory/hparams/parser.py (`Process rank: {training_args.process_index}, "
             "world size: {training_args.world_size}, ...`)",
             "the writer's global rank and the world's size"),
    RankWord(r"\binit nccl context nranks: (?P<world>\d+) local rank: (?P<rank>\d+)(?:\s|$)",
             "Paddle paddle/fluid/imperative/nccl_context.cc (`init nccl context nranks: {nranks_} local rank: "
             "{local_rank_}`; ParallelStrategy's local_rank_ is the trainer's id over all nodes)",
             "the writer's global rank and the world's size"),
    RankWord(r"\bHcclCommInitRootInfo fail, error:\d+, rank:(?P<rank>\d+), rankSize:(?P<world>\d+)",
             "MindIE's hccl_runner (its own log line, as the Ascend runtime prints it)",
             "the writer's rank in the world HCCL initialises"),
    # Ray Train's report of its workers (python/ray/train/_internal/backend_executor.py, `Started distributed
    # worker processes:` then `- (node_id=.., ip=10.0.0.6, pid=615) world_rank=0, local_rank=0, node_rank=0`
    # a line each; `Started training worker group of size 8:` in Train v2): each worker's global rank, tied
    # to the host and pid its own lines carry under Ray's `(RayTrainWorker pid=615, ip=10.0.0.6)`
    RankWord(r"- \((?:node_id=\w+, )?ip=(?P<host>[\w.\-:]+), pid=(?P<pid>\d+)\) world_rank=(?P<rank>\d+), "
             r"local_rank=\d+, node_rank=\d+",
             "Ray Train python/ray/train/_internal/backend_executor.py (the driver's list of its workers)",
             "each worker's global rank, with its host and pid"),
    # c10d's notice of a peer's aborted communicator (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, torch
    # 1.9-1.12 checkForNCCLErrorsInternal: `[Rank 2] Found key in store: NCCLABORTEDCOMM:<id>, from rank: 0. This
    # means that rank has aborted its NCCL communicators previously`): the rank that wrote the key (rank 0
    # aborted), besides the writer its `[Rank 2]` names
    RankWord(r"\bFound key in store: NCCLABORTEDCOMM:\w+, from rank: (?P<other>\d+)\b",
             "pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (checkForNCCLErrorsInternal)",
             "the global rank that aborted its communicators and wrote the key"),
    # llm.c's multi-GPU set-up (llmc/zero.cuh multi_gpu_config_init: `printf("ProcessID:%d, NumProcess::%d,
    # DeviceId:%d\n", result.process_rank, result.num_processes, ...)`, the rank ncclCommInitRank is given;
    # `Started Multi Node training managed by Slurm: ` before it under Slurm)
    RankWord(r"\bProcessID:(?P<rank>\d+), NumProcess::?(?P<world>\d+)",
             "llm.c llmc/zero.cuh multi_gpu_config_init",
             "the writer's global rank and the world's size"),
    # YOLOX yolox/core/launch.py _distributed_worker (`logger.info("Rank {} initialization finished.".format(
    # global_rank))`, global_rank = machine_rank * num_gpus_per_machine + local_rank), before its process group
    RankWord(r"\bRank (?P<rank>\d+) initialization finished\.",
             "YOLOX yolox/core/launch.py _distributed_worker",
             "the writer's global rank"),
    # c10d's barrier before the group knows its devices (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp
    # barrier(): `LOG(WARNING) << "Rank " << this->getRank() << " using best-guess GPU " << deviceIdx << " to
    # perform barrier ..."`, torch 1.8-2.1 without a `[rankN]:` prefix), each process of the group printing it
    # once: the barrier of init_process_group, so the default group's, the global rank
    RankWord(r"\bRank (?P<rank>\d+) using best-guess GPU \d+ to perform barrier\b",
             "pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (ProcessGroupNCCL::barrier)",
             "the writer's global rank"),
    # Megatron-LM's seed set-up (megatron/core/tensor_parallel/random.py model_parallel_cuda_manual_seed,
    # older megatron/mpu/random.py: `> initializing model parallel cuda seeds on global rank {}, model
    # parallel rank {}, and data parallel rank {} with model parallel seed: ...`): the writer's global rank
    RankWord(r"\bcuda seeds on global rank (?P<rank>\d+), model parallel rank \d+",
             "Megatron-LM megatron/core/tensor_parallel/random.py (model_parallel_cuda_manual_seed)",
             "the writer's global rank"),
    # torchelastic's event of a worker's state (torch/distributed/elastic/agent/server/api.py _construct_event,
    # written as JSON by torch/distributed/elastic/events: `{"name": "torchelastic.worker.status.SUCCEEDED",
    # "source": "WORKER", "timestamp": 0, "metadata": {"run_id": .., "global_rank": 3, "group_rank": 0, ..`),
    # one per worker: the worker's global rank (the agent's own event, `"source": "AGENT"`, names none)
    RankWord(r"\"source\": \"WORKER\", \"timestamp\": \d+, \"metadata\": \{\"run_id\": \"[^\"]*\", "
             r"\"global_rank\": (?P<rank>\d+)",
             "pytorch torch/distributed/elastic/agent/server/api.py (_construct_event, a worker's status event)",
             "the worker's global rank"),
    # HCCL's link set-up (Ascend's hccl transport_manager.cc / transport_heterog: `createLink para:rank[7]-
    # localUserrank[7]-localIpAddr[..], remoteRank[15]-remoteUserrank[15]-..`, older `creakLink para:rank[9]-
    # localUserrank[9]-.., dst_rank[0]-remoteUserrank[0]-..`): the user ranks are the world's (paraVector_'s
    # worldRank), `rank[..]` the group's; the writer and the peer it links to
    RankWord(r"\bcrea[tk][eL]?[Ll]ink para\]?:?rank\[\d+\]-localUserrank\[(?P<rank>\d+)\][^\n]*?"
             r"\bremoteUserrank\[(?P<other>\d+)\]",
             "Ascend HCCL transport_manager.cc (a link's set-up, its error repeats the parameters)",
             "the writer's world rank and the peer's it links to"),
    # the coordination service of TSL (JAX, TensorFlow; xla/tsl/distributed_runtime/coordination/
    # coordination_service.cc: `/job:jax_worker/replica:0/task:37 has been set to ERROR in coordination service:
    # UNAVAILABLE: Task /job:jax_worker/replica:0/task:37 heartbeat timeout`): the JAX process (its
    # process_index, the global rank) the service found failed; a task that merely connected is not seen
    RankWord(r"/job:jax_worker/replica:\d+/task:(?P<other>\d+) has been set to ERROR\b",
             "xla/tsl coordination_service.cc (a task set to ERROR: heartbeat timeout, a task that failed)",
             "the JAX process that failed"),
    # DeepSpeed's fp16 loss scaler skipping a step (deepspeed/runtime/zero/stage3.py _overflow_clean_up,
    # stage_1_and_2.py step, fp16/fused_optimizer.py: `[deepscale] OVERFLOW! Rank {dist.get_rank()} Skipping step.
    # Attempted loss scale: ..`; dv30-026, dv31-016): the writer's global rank
    RankWord(r"\bOVERFLOW! Rank (?P<rank>\d+) Skipping step\b",
             "DeepSpeed deepspeed/runtime/zero/stage3.py, stage_1_and_2.py (the loss scaler's overflow notice)",
             "the writer's global rank"),
    # ezpz's set-up line (ezpz/dist.py setup_torch: `['host'][device='mps'][node=0/0][rank=1/1][local_rank=1/1]`,
    # each of node, rank and local rank over its largest index; dv31-004): the writer's global rank
    RankWord(r"\]\[rank=(?P<rank>\d+)/\d+\]\[local_rank=\d+/\d+\]",
             "ezpz ezpz/dist.py setup_torch (each process's bracketed node, rank and local rank)",
             "the writer's global rank"),
    # Megatron-LM's memory report (megatron/training.py report_memory: `print("[Rank {}] {}".format(
    # torch.distributed.get_rank(), string))`, string `(after {iteration} iterations) memory (MB) | allocated:
    # ..`), printed by one rank of each model-parallel group at once: the writer's global rank, wherever the
    # prints of several ranks land on one line (`...| max reserved: 29316.0[Rank 6] (after 20 iterations)`)
    RankWord(r"\[Rank (?P<rank>\d+)\] \(after \d+ iterations\) memory \(MB\)",
             "Megatron-LM megatron/training.py (report_memory, one line per model-parallel rank)",
             "the writer's global rank"),
    RankWord(r"\bGlobal Checkpoint Save : Rank: (?P<rank>\d+) :",
             "NeMo nemo/utils/callbacks/dist_ckpt_io.py (`Global Checkpoint Save : Rank: "
             "{torch.distributed.get_rank()} : Iteration: ...`)",
             "the writer's global rank"),
) + SET_UP

#: Open MPI's --tag-output tags stacked at a line's start (`[1,183]<stdout>:[1,184]<stderr>:INFO:root:...`): each
#: tags a write of its process, the outer ones empty or cut where the next process's write began (many processes
#: writing to one stream); the prefix parser keeps the last tag as the line's writer, the others are writers seen
#: too (dv37-031's label counts the outer `[1,183]`). torchrun's `[rank0]:[rank4]:` is no such case: a launcher
#: nested in another, the same outer tag always before the same inner one (dev-100's label counts the inner)
STACKED = r"^\s*(?:\[\d+,\d+\]<std(?:out|err)>:\s?){2,}"
STACKED_TAG = r"\[\d+,(\d+)\]<std(?:out|err)>:"
#: a launcher's tag in the middle of a line: another process's write, whatever prefix the line starts with
MID_TAGS = (
    # a launcher's tag that a second stream's write put in the middle of a line (two processes' writes
    # interleaved without a newline): torchrun's `[rank3]:` (torch/distributed/elastic/multiprocessing/api.py,
    # its `[rank{global_rank}]:` log_line_prefix), Open MPI's --tag-output `[1,3]<stdout>:`
    # (orte/mca/iof/base/iof_base_output.c, `[%s,%s]<%s>:` of the job and the rank); the line's start is
    # the prefix parser's (``text.PREFIX``)
    RankWord(r".\[rank(?P<rank>\d+)\]:",
             "pytorch torch/distributed/run.py --tee/--log-line-prefix-template, a second write mid-line",
             "the global rank of the process whose write sits in the line"),
    RankWord(r".\[\d+,(?P<rank>\d+)\]<std(?:out|err)>:",
             "Open MPI mpirun --tag-output, a second write mid-line",
             "the MPI rank of the process whose write sits in the line"),
)
#: the place in the code a logger's format puts after the level (`INFO train.py:100: `, `WARNING [utils.py:12] `,
#: Python logging's `%(filename)s:%(lineno)d`), before the message
SOURCE_PLACE = r"\[?[\w./\-]+\.py:\d+\]?:?\s+"
SOURCE_AT = f"(?:{SOURCE_PLACE})?"
#: a writer's own rank tag as it opens a message: `Rank 3: `, `rank 3 step`, `Rank: 3 | `; and `[rank 3] `
RANK_TAG = r"[Rr]ank:? (?P<rank>\d+)"
RANK_TAG_END = r"(?:[:,] | [a-z]\w*| ?\| )"
RANK_BRACKET = r"\[[Rr](?:ank|ANK):? ?(?P<rank>\d+)\] "
#: the keys a process's own rank goes by in its settings, and the world's size beside it: torch's `rank`/`RANK`
#: and `world_size`, JAX's `process_id`/`process_index` and `num_processes`, Ascend's environment (`RANK_ID`
#: and `RANK_SIZE`, the rank in the world HCCL initialises, as its launch scripts export and echo them), and a
#: script's own names for the same (`world_rank`, `my_rank`, `dist_my_rank = 1  dist_world_size = 4`,
#: dv33-002); a node's, a group's or a local rank (`node_rank`, `tp_rank`, `local_rank`) is no such key
KEY_RANK = r"(?:global_|world_|dist_|mpi_|my_|dist_my_)?rank(?:_id)?|process_id|process_index"
KEY_WORLD = r"(?:dist_)?world_size|rank_size|num_processes|process_count"
#: the writer's own rank where a line's start has not said it: read only on a line no launcher prefix names
#: a writer of (under ``[default0]:`` a ``Rank 3: 9.9ms`` is a report of the prefix's rank, not rank 3's line)
WRITER_WORDS = (
    # a program's `Rank 3: ...` after a logger's header that ``text.PREFIX`` does not take off (a date, a
    # level, a logger's name: `2024-01-01 12:00:00 INFO Rank 3: loss 1.2`, glog's `I0101 12:00:00.000 123
    # train.py:12] Rank 2: ...`): the sentence opens with its writer's rank, as ``launcher.HEAD`` reads it at
    # a line's start (the PyTorch tutorials' `print(f"Rank {rank}: ...")`, issue 31's `Rank 1: ==== Iteration
    # 10/10 ====`, `... - INFO - rank 3 step 10`, a word after the number as ``launcher.HEAD`` takes it)
    RankWord(r"^.{0,80}?\b(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\b[\]:|\s\-]*\s" + SOURCE_AT
             + RANK_TAG + r"(?: of \d+)?" + RANK_TAG_END,
             "a program's print or logging of its own `Rank {rank}: ...` under a logger's header",
             "the writer's global rank"),
    RankWord(r"^.{0,80}?\b(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL|FATAL)\b[\]:|\s\-]*\s" + SOURCE_AT
             + RANK_BRACKET,
             "a program's logging of its own `[rank {rank}] ...` under a logger's header",
             "the writer's global rank"),
    # the same where a prefix took the header's date and level off and left its source place (Python logging's
    # `%(asctime)s %(levelname)s [%(filename)s:%(lineno)d] %(message)s`): `[utils.py:12] Rank 4: ...`
    RankWord("^" + SOURCE_PLACE + RANK_TAG + RANK_TAG_END,
             "a program's logging of its own `Rank {rank}: ...` after the logger's source place",
             "the writer's global rank"),
    RankWord("^" + SOURCE_PLACE + RANK_BRACKET,
             "a program's logging of its own `[rank {rank}] ...` after the logger's source place",
             "the writer's global rank"),
    RankWord(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w./\-]+:\d+\] [Rr]ank:? (?P<rank>\d+)[:,] ",
             "absl / glog's header (JAX, TensorFlow, torch's C++ logging) before a program's "
             "`Rank {rank}: ...`",
             "the writer's global rank"),
    # a script's own tag at a line's start in the shapes ``launcher.HEAD`` leaves (`Rank 0 | step 10 | loss
    # ...`, `rank 3 > ...`): its writer's rank
    RankWord(r"^(?:[Rr]ank|RANK):? ?(?P<rank>\d+) ?[|:>] ",
             "a script's `print(f\"rank{rank}: ...\")` or `f\"Rank {rank} | ...\"` tag",
             "the writer's global rank"),
    # a logger's bracketed header, then the writer's rank as a bracketed tag: TensorRT-LLM's logger
    # (tensorrt_llm/logger.py, `[01/16/2026-06:20:17] [TRT-LLM] [RANK 0] [I] ...`), a script's `[time] [Rank
    # 1] HCCL Comm Initialized`; a process group's `[PG 1 Rank 0]` is no such tag
    RankWord(r"^(?:\[[^\[\]]*\]\s*){1,3}\[(?:[Rr]ank|RANK) ?(?P<rank>\d+)\]\s",
             "TensorRT-LLM tensorrt_llm/logger.py and scripts' `[Rank {rank}]` after a bracketed header",
             "the writer's global rank"),
    # a script's `print(f"[rank{rank}] ...")` at a line's start (torchrun's own `[rank3]:` prefix has a colon)
    RankWord(r"^\[(?:[Rr]ank|RANK)(?P<rank>\d+)\] ",
             "a script's `[rank{rank}] ...` tag at a line's start",
             "the writer's global rank"),
    # a program's own status line that opens with its rank and host, after a tag or a word at most (`STALL
    # rank 3 on node0: no progress past step 324 for 120s`, `[fesom_port] rank 1 on vader2: node-local rank 1
    # -> ...`): the writer's rank and the host it runs on
    RankWord(r"^(?:\[[\w\-. ]+\]\s*|[A-Z][A-Za-z]*\s+)?[Rr]ank (?P<rank>\d+) "
             r"on (?P<host>[A-Za-z][\w.\-]*):\s",
             "a program's `rank {rank} on {host}: ...` status line",
             "the writer's global rank and its host"),
    # a logger's bracketed header that carries the rank as a key (`[2026-07-12|15:48:25|core|rank=1]
    # Allocating ...`, `[core|rank=0] CUDA graph is disabled.`): the writer's rank
    RankWord(r"^\[[^\[\]]*\b(?:rank|RANK)=(?P<rank>\d+)\]",
             "a logger's bracketed header with a `rank=` field",
             "the writer's global rank"),
    # a script's tag after a bare timestamp (`2024-01-01 12:00:00,123 rank 3: loss 1.2`, Python logging's
    # `%(asctime)s` with no level): the tag opens the message as ``launcher.HEAD`` reads it at a line's start
    RankWord(r"^\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\]?\s+[Rr]ank:? (?P<rank>\d+)"
             r"(?: of \d+)?(?:[:,] | \(| [a-z]\w*)",
             "a script's `rank {rank}: ...` after a logger's bare timestamp",
             "the writer's global rank"),
    # a training step's metrics line that carries its writer's rank as one of its fields, after a number
    # (WeNet wenet/utils/executor.py: `TRAIN Batch 0/185100 loss 4.57 loss_att 4.22 ... lr 0.00065741 rank 0`;
    # a script's `step 10 loss 1.2 | rank 3 | ...`)
    RankWord(r"(?i)\b(?:loss|step|iter(?:ation)?|batch|epoch)\b[^\n]*?\d\s*[,|]?\s+(?:global_)?rank\s*[:=]?\s*"
             r"(?P<rank>\d+)\b",
             "WeNet wenet/utils/executor.py's step line and scripts' metrics lines with a rank field",
             "the writer's global rank"),
    # a script's tag with the world's size or in parentheses at a line's start (`rank 3/8: ...`, `[Rank 3/8]
    # ...`, `(rank 3) ...`)
    RankWord(r"^[(\[]?(?:[Rr]ank|RANK) ?(?P<rank>\d+) ?/ ?(?P<world>\d+)[)\]]?:? ",
             "a script's `rank {rank}/{world}` tag",
             "the writer's global rank and the world's size"),
    RankWord(r"^\((?:[Rr]ank|RANK) ?(?P<rank>\d+)\):? ",
             "a script's `(rank {rank})` tag",
             "the writer's global rank"),
    # a process printing its own rank alone on a line (`print("RANK:", os.environ["RANK"])`, `rank = 3`)
    RankWord(r"^(?:RANK|[Rr]ank|global_rank|GLOBAL_RANK)\s*[=:]\s*(?P<rank>\d+)\s*$",
             "a script's print of its RANK variable (torchrun sets RANK, torch/distributed/run.py)",
             "the writer's global rank"),
    # a process's own settings as keys, the rank beside the world's size on one line: vLLM's
    # init_distributed_environment (`world_size=2 rank=1 local_rank=1 ...`), Ray Train's `[rank=0,
    # world_size=2]`, a script's `rank=1, world_size=8`, an environment dump's `RANK=2 WORLD_SIZE=4`, a
    # Python dict or a log record's `{'rank': 1, 'world_size': 8}`; a node's rank (`node_rank=`,
    # `group_rank=`) or a group's (`tp_rank=`) is no key here
    RankWord(r"(?i)(?:^|[\s,{(\[])['\"]?(?:" + KEY_RANK + r")['\"]?\s*[=:]\s*"
             r"(?P<rank>\d+)\b(?:[^\n]*?\b['\"]?(?:" + KEY_WORLD + r")['\"]?\s*[=:]\s*"
             r"(?P<world>\d+)\b)?",
             "a process's own keys: vLLM vllm/distributed/parallel_state.py, Ray Train, scripts, env dumps, "
             "JAX's jax.distributed.initialize(..., num_processes=4, process_id=2)",
             "the writer's global rank (and the world's size where said)"),
)
#: NCCL's communicator line where a paste lost its `host:pid:tid` head (`[0] NCCL INFO comm 0x.. rank 0 nranks
#: 2 ...`, src/init.cc; the NCCL parser reads the line with its head): the writer's rank in the communicator,
#: a global one only in the file's largest communicator (``_hostless``)
HOSTLESS = (r"^NCCL INFO (?:\w+ )?comm 0x[0-9a-fA-F]+ rank (?P<rank>\d+) n[Rr]anks (?P<world>\d+) ")
#: the same paste's lines that name their writer's rank without a communicator's size (nccl_ranks reads them
#: with their head): a tree's `Trees [0] 14/-1/-1->13->12` is written by 13 (graph/connect.cc), a connection's
#: `Channel 00 : 1[21000] -> 0[1000] via P2P/IPC` by the rank that sends (transport/p2p.cc, net.cc; a
#: `[receive]` one by the rank that receives): read where no comm line gives the file's communicators
HOSTLESS_SAID = (r"^NCCL INFO Trees \[0\] [\d/\-]+->(?P<rank>\d+)->",
                 r"^NCCL INFO Channel \d+(?:/\d+)? : (?P<rank>\d+)\[[0-9a-fA-F]+\] -> \d+\[[0-9a-fA-F]+\]"
                 r"(?: \[send\])? via ",
                 r"^NCCL INFO Channel \d+(?:/\d+)? : \d+\[[0-9a-fA-F]+\] -> (?P<rank>\d+)\[[0-9a-fA-F]+\]"
                 r" \[receive\] via ")
#: a line a ``WRITER_WORDS`` key entry needs beside its rank: the world's size said as a key (a lone `rank=0`
#: may be a peer's, a default's, a hint's) Gloo's full-mesh connect (gloo/transport/tcp/context.cc
#: createAndConnectAllPairs: `[Gloo] Rank 3 is connected to 7 peer ranks. Expected number of connected peer
#: ranks is : 7`), each process of each Gloo group once (vLLM and SGLang make a Gloo twin of every group, the
#: world's first): a global rank only in the file's largest group, and none in a group of one (``_gloo``)
GLOO = r"\[Gloo\] Rank (?P<rank>\d+) is connected to (?P<peers>\d+) peer ranks\b"
#: c10d's desync report (TORCH_NCCL_DESYNC_DEBUG=1; torch/csrc/distributed/c10d/TraceUtils.h analyzeLaggingRanks:
#: `[1] finished collective #2, but didn't join collective #3 (count from 1)`, `- [47] joined but didn't finish
#: collective #41207 (count from 1)`): the ranks it finds lagging, each from the state that rank wrote to the store
#: (dv28-005's label counts them; the snapshot of every rank's state after it, and the ranks that `never joined
#: any collectives`, wrote nothing of their own)
LAGGING = (r"(?:^|\s)\[(?P<ranks>\d+(?:, ?\d+)*)\] (?:joined but didn't finish collective #\d+"
           r"|finished collective #\d+, but didn't join collective #\d+)")
KEYS_WORLD = r"(?i)\b(?:" + KEY_WORLD + r")['\"]?\s*[=:]\s*\d"
#: not the writer's word: a function's defaults, a call's rank keyword (a traceback's source line
#: `dist.init_process_group(backend='nccl', world_size=1, rank=1)` is code: dv27-002, dv27-003), a command
#: line's flags, the `[tracekit] rank=0 ...` header `tracekit run` makes each rank print (parsers/torch_log.py
#: reads it whole), and NCCL's own lines (`NCCL INFO rank 2 nranks 4`: a communicator's rank, nccl_ranks' to weigh)
NOT_SAID = (r"\bdef \w+\(|\b[\w.]+\([^()]*\b(?:\w+_)?rank(?:_id)?\s*=\s*\d|\s--[\w\-]+[= ]|^\[tracekit\] "
            r"|\bNCCL (?:INFO|WARN)\b")
ANY = any_of(*(w.pattern for w in RANK_WORDS))
ANY_WRITER = any_of(*(w.pattern for w in WRITER_WORDS))
ANY_TAG = any_of(*(w.pattern for w in MID_TAGS))
CHEAP = (r"(?i)rank|\]<std|process_(?:id|index)|ProcessID:|/task:\d|^NCCL INFO (?:Trees|Channel) "
         r"|per process\. ?Process \d|Process \(global: \d|didn't (?:join|finish) collective #"
         r"|Node\[\d+\] (?:Epoch|Iter)\[")


def parse(lines: pl.DataFrame) -> Parsed:
    """``ranks`` rows of the ranks the lines' sentences name (``source`` ``rank-words``); claims no line
    (the sentence is another parser's to read, or an unknown line)."""
    if not lines.height:
        return Parsed("rank-words")
    t = pl.col("text")
    df = lines.filter(t.str.contains(CHEAP))
    words = df.filter(t.str.contains(ANY))
    # (the writer's own words count where no launcher prefix has named the line's writer)
    prefixed = [pl.col(c).is_not_null() for c in ("launch_rank", "local_tag") if c in df.columns]
    unnamed = df.filter(~pl.any_horizontal(prefixed)) if prefixed else df
    own = unnamed.filter(t.str.contains(ANY_WRITER) & ~t.str.contains(NOT_SAID))
    rows = [g for w in RANK_WORDS for g in _named(words, w)]
    rows += [g for w in WRITER_WORDS for g in _named(_keyed(own, w), w)]
    rows += _hostless(df) + _gloo(unnamed) + _lagging(df) + _stacked(lines)
    rows += [g for w in MID_TAGS for g in _named(df.filter(t.str.contains(ANY_TAG)), w)]
    if not rows:
        return Parsed("rank-words")
    ranks = (pl.concat(rows, how="diagonal_relaxed").unique(maintain_order=True)
             .with_columns(pl.lit("rank-words").alias("source")))
    return Parsed("rank-words", {"ranks": ranks})


def _largest_group(df: pl.DataFrame, pattern: str, size: pl.Expr) -> pl.DataFrame:
    """``file, rank, world_size`` of ``pattern``'s lines (groups ``rank`` and those ``size`` reads) of the
    largest group their file shows."""
    t = pl.col("text")
    hit = df.filter(t.str.contains(pattern))
    g = (hit.select("file", t.str.extract_groups(pattern).alias("_g")).unnest("_g")
         .select("file", pl.col("rank").cast(pl.Int64), size.alias("world_size")))
    return g.filter(pl.col("world_size") == pl.col("world_size").max().over("file"))


def _hostless(df: pl.DataFrame) -> list[pl.DataFrame]:
    """``file, rank, world_size`` of ``HOSTLESS`` lines of the largest communicator their file shows; ``file,
    rank`` of ``HOSTLESS_SAID`` lines in the files that have no ``HOSTLESS`` line."""
    t = pl.col("text")
    out = ([_largest_group(df, HOSTLESS, pl.col("world").cast(pl.Int64))]
           if df["text"].str.contains(HOSTLESS).any() else [])
    said = df.filter(t.str.contains(r"^NCCL INFO (?:Trees|Channel) "))
    if out:
        said = said.join(out[0].select("file").unique(), on="file", how="anti")
    for p in HOSTLESS_SAID if said.height else ():
        hit = said.filter(t.str.contains(p))
        if hit.height:
            out.append(hit.select("file", t.str.extract(p, 1).cast(pl.Int64).alias("rank")))
    return out


def _stacked(lines: pl.DataFrame) -> list[pl.DataFrame]:
    """``file, rank`` of every tag of the ``STACKED`` launcher tags a line starts with."""
    if "raw" not in lines.columns:
        return []
    hit = lines.filter(pl.col("raw").str.contains(STACKED))
    if not hit.height:
        return []
    tags = (hit.select("file", pl.col("raw").str.extract(STACKED, 0).str.extract_all(STACKED_TAG).alias("_t"))
            .explode("_t"))
    return [tags.select("file", pl.col("_t").str.extract(STACKED_TAG, 1).cast(pl.Int64).alias("rank"))]


def _lagging(df: pl.DataFrame) -> list[pl.DataFrame]:
    """``file, rank`` of each rank a desync report's ``LAGGING`` line lists."""
    hit = df.filter(pl.col("text").str.contains(LAGGING))
    if not hit.height:
        return []
    return [hit.select("file", pl.col("text").str.extract(LAGGING, 1).str.split(",").alias("rank"))
            .explode("rank").select("file", pl.col("rank").str.strip_chars().cast(pl.Int64, strict=False))]


def _gloo(df: pl.DataFrame) -> list[pl.DataFrame]:
    """``file, rank`` of ``GLOO`` lines of the largest group of two or more their file shows."""
    if not df["text"].str.contains(GLOO).any():
        return []
    # (the group's size is the world's only where the largest group is the world, which Gloo does not say: no
    # world size is claimed, dv12-023's label states none)
    g = _largest_group(df, GLOO, pl.col("peers").cast(pl.Int64) + 1)
    return [g.filter(pl.col("world_size") > 1).drop("world_size")]


def _keyed(df: pl.DataFrame, w: RankWord) -> pl.DataFrame:
    """The lines a key entry of ``WRITER_WORDS`` reads: those that also say the world's size as a key."""
    return df.filter(pl.col("text").str.contains(KEYS_WORLD)) if "world_size" in w.pattern else df


def _named(df: pl.DataFrame, w: RankWord) -> list[pl.DataFrame]:
    """``file, rank | local_rank[, world_size]`` frames of every sentence of ``w`` in ``df``'s lines."""
    t = pl.col("text")
    hit = df.filter(t.str.contains(w.pattern)) if df.height else df
    if not hit.height:
        return []
    # (every sentence of a line: a report pasted flat names both sides on one line)
    g = (hit.select("file", t.str.extract_all(w.pattern).alias("_m")).explode("_m")
         .select("file", pl.col("_m").str.extract_groups(w.pattern).alias("_g")).unnest("_g"))
    out = []
    # (a sentence that names the process too: its host and pid, so that process's own lines meet the rank)
    proc = [pl.col(c).cast(d, strict=False) for c, d in (("host", pl.Utf8), ("pid", pl.Int64))
            if c in g.columns]
    for col, as_ in (("rank", "rank"), ("other", "rank"), ("local", "local_rank")):
        if col in g.columns:
            out.append(g.select("file", pl.col(col).cast(pl.Int64, strict=False).alias(as_),
                                *(proc if col != "other" else []),
                                *([pl.col("world").cast(pl.Int64, strict=False).alias("world_size")]
                                  if "world" in g.columns and col != "other" else [])))
    return out
