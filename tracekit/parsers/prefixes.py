"""The launcher prefixes a log line can carry, as one regex table (``PREFIX``) and the columns its
named groups fill (``TAGS``); ``parsers/text.py`` takes them off every line and reads what they name."""

# Launcher prefixes (docs/formats.md), any number of them in a row, outermost first: a markdown quote
# `> `, ANSI colours (`\x1b[36m`, or `←[36m` where a paste lost the escape byte), a collector's stamp
# (GitHub Actions, `kubectl logs --timestamps`, `docker logs -t`: RFC 3339 `2024-01-01T00:00:00.1Z `, or a
# tab after it in a log service's export; journald and syslog `Dec 04 20:11:13 host prog[pid]: `, its host
# kept; Go's log `2023/10/26 09:19:04 `;
# Open MPI's --timestamp-output `Mon Dec  4 20:11:13 2023` before its tag), `kubectl logs --prefix`
# `[pod/name/container] `, docker compose `name-1  | `, Ray's `(RayTrainWorker pid=615, ip=10.0.0.6) `,
# `(pid=615) ` and `(raylet, ip=...) ` (vLLM's `(VllmWorker rank=1 pid=615) ` names the worker's rank;
# SkyPilot's `(worker1, rank=1, pid=615, ip=...) ` or `(worker1, rank=1, ip=.., pid=615) ` a node's: the
# node's name is its host's, its rank no process's), pdsh `host: `, srun --label
# `12: ` (` 8: ` padded to the largest id's width, `P0 12: ` for a heterogeneous job; the task number: a rank
# only where each task is one, which the prefix does not say), a wall-clock `[2026-01-02 03:04:05] ` (NCCL
# 2.26+ puts one before its WARN lines), `host >> `, torchrun `[rank3]:`, torchelastic's
# TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE (default `[${role_name}${local_rank}]:`: `[default3]:`, `[trainer3]:`,
# `[3]:` with an empty role, a local rank;
# torchx's `[${role_name}${rank}|${local_rank}]:`: `[trainer0|0]:`), each after an optional replica
# label of torchx or NeMo-Run (`trainer/0 `, `B-nemo-ft3/0 `), MPI `[1,3]<stdout>:` (horovodrun's gloo
# `[3]<stdout>:`), a script's own `[3] ` or `[RANK 3] ` rank tag (Lightning's `[rank: 3] `; 4 digits at
# most: `[80746] ` is a pid, taken off without meaning; tags that count up with the lines are a viewer's
# line numbers; the DDP tutorial's `[GPU3] `, its rank).
_REPLICA = r"(?:[\w.\-]+/\d+ )?"
_PARTS = [
    r">[ \t]?",
    r"(?:\x1b|←)?\[\d{1,3}(?:;\d{1,3})*m\s?",
    r"(?P<iso_ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?)(?:Z|[+\-]\d\d:?\d\d)?[ \t]",
    r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d (?P<sys_host>[\w.\-]+) [\w.\-/@]+(?:\[\d+\])?: ",
    r"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)? ",
    # a collector's time of day alone (Jenkins' Timestamper, `HH:mm:ss` by default; `ts '%H:%M:%.S'` of
    # moreutils; a CI viewer's `18:11:06.680 ` before torchrun's `[rank4]:`): taken off, no date to keep
    r"\d\d:\d\d:\d\d(?:[.,]\d{1,9})?[ \t]",
    r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4} ?",
    r"\[pod/[\w.\-]+/[\w.\-]+\] ",
    r"[A-Za-z][\w.\-]*[\-_]\d+ +\| ",
    # (vLLM's worker between its Worker_ names and rank=: `(VllmWorker TP1 pid=615) `, `(VllmWorker PP1_TP0
    # pid=..) `, vllm/v1/executor/multiproc_executor.py: `process_name = f"{process_name} {suffix}"`, suffix
    # `PP{rank // tp_size}` and `TP{rank % tp_size}` joined by `_`, each where that group has more than one rank)
    _REPLICA + r"\((?P<ray_actor>\w[\w.:\-]*)?(?: (?P<vllm_groups>(?:PP\d+_)?TP\d+|PP\d+))?"
    # (NeMo-RL's workers name their actor by their rank, `__repr__`: `(MegatronPolicyWorker[rank=8] pid=..)`)
    r"(?:(?: rank=|\[rank=)(?P<actor_rank>\d+)\]?|, rank=(?P<sky_rank>\d+))?"
    r"(?:, ip=(?P<sky_ip>[\w.\-:]+))?"
    r"(?:,? ?pid=(?P<ray_pid>\d+))?"
    r"(?:,? ?ip=(?P<ray_ip>[\w.\-:]+))?\)\s?",  # (a k8s pod's name where Ray runs on Kubernetes)
    # (DeepSpeed's pdsh runner names the launching node as its hostfile does, `localhost: `, beside the others)
    r"(?P<pdsh_host>(?:\d{1,3}\.){3}\d{1,3}|localhost|[A-Za-z][\w\-]*\d[\w.\-]*): ",
    r"(?:[\w\-]+\.)?(?P<std_host>[\w\-]+) \[std(?:out|err)\] ",
    r"std(?:out|err): ",  # accelerate's test runner: a child's output under `stdout: `
    # (srun pads the task id to the width of the job's largest: ` 8: ` beside `12: `)
    r"(?:P\d+ )? {0,3}(?P<task_tag>\d{1,5}): ",
    r"\[(?P<pts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] ",
    r"(?P<arrow_host>[\w.\-]+) >> ",
    r"\[(?i:rank)(?P<rank_tag>\d+)\]:\s?",
    _REPLICA + r"\[[A-Za-z_][\w\-]*?(?P<tmpl_rank>\d+)\|(?P<tmpl_local>\d+)\]:\s?",
    _REPLICA + r"\[(?:[A-Za-z_][\w\-]*?)?(?P<local_tag>\d+)\]:\s?",
    r"[ \t]*\[(?:\d+,)?(?P<mpi_rank>\d+)\]<std(?:out|err)>:",
    r"\[(?P<bare_tag>\d{1,4})\] ",
    # (the PyTorch DDP tutorial's trainer, github:pytorch/examples distributed/ddp-tutorial-series: multinode.py's
    # `print(f"[GPU{self.global_rank}] Epoch {epoch} | Batchsize: ..")`, multigpu.py's `[GPU{self.gpu_id}]`, the
    # rank on its one node: the writer's rank, as the dev labels read it, dv50-001 and dv50-006)
    r"\[(?:(?:RANK|Rank|rank):? |GPU)(?P<word_tag>\d+)\] ",
    r"\[\d{5,}\] ",
    # a logger's header on each line (vLLM, Python's logging.basicConfig, Hydra, HF, torchtitan, loguru-like
    # `date | LEVEL | name | `): taken off, its level kept, so a multi-line message under it reads plain
    r"(?P<lv1>INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w./\-]+:\d+\] ",
    r"(?P<lv2>INFO|WARNING|ERROR|DEBUG|CRITICAL):[\w.]+:",
    r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\]\[[\w.]+\]\[(?P<lv3>INFO|WARNING|ERROR|DEBUG|CRITICAL)\] - ",
    r"\d\d/\d\d/\d{4} \d\d:\d\d:\d\d - (?P<lv4>INFO|WARNING|ERROR|DEBUG|CRITICAL) - [\w.]+ - ",
    r"\[\w+\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ - [\w.]+ - (?P<lv5>INFO|WARNING|ERROR|DEBUG|CRITICAL) - ",
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? \| (?P<lv6>INFO|WARNING|ERROR|DEBUG|CRITICAL) \| [\w.]+ \| ",
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (?P<lv7>INFO|WARNING|ERROR|DEBUG|CRITICAL) ",
    # ParlAI's worker prefix (parlai/utils/distributed.py:269, `'rank:{:3d} |'.format(rank)`, the global rank,
    # before its LOGFILE_FORMAT `%(asctime)s %(levelname)-8s | `, parlai/utils/logging.py:35)
    r"rank: *(?P<parlai_rank>\d+) \| (?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ "
    r"(?P<lv16>INFO|WARNING|ERROR|DEBUG|CRITICAL) *\| )?",
    # loguru's default format (github:Delgan/loguru loguru/_defaults.py:35, LOGURU_FORMAT: `{time:YYYY-MM-DD
    # HH:mm:ss.SSS Z} | {level: <8} | {name}:{function}:{line} - `; the zone is newer)
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}(?: [+\-]\d\d:\d\d)? \| "
    r"(?P<lv17>INFO|WARNING|ERROR|DEBUG|CRITICAL) *\| [\w.<>]+:[\w<>]+:\d+ - ",
    # icefall / k2's logger after it: `[train.py:546] (0/7) `, the writer's rank and the world's size; ESPnet's
    # `[host:0/3] ` (github:espnet/espnet espnet2/tasks/abs_task.py main_worker, logging.basicConfig's format
    # `[{host}:{dist_rank}/{dist_world_size}] %(asctime)s (%(module)s:%(lineno)d) %(levelname)s: `; a paste may
    # have lost the `[host` before it): the same two numbers
    r"(?:\[[\w.\-]+:\d+\] \(|\[?[\w\-]*:)(?P<slash_rank>\d+)/(?P<slash_world>\d+)[)\]] ",
    r"\[(?P<lv8>INFO|WARNING|ERROR|DEBUG|CRITICAL)\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ \w+: ",
    # Ray's logger: `2022-03-11 01:47:25,905\tINFO torch.py:66 -- `
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\t(?P<lv11>INFO|WARNING|ERROR|DEBUG|CRITICAL) [\w.]+:\d+ -- ",
    # Hugging Face's `[INFO|trainer.py:1605] 2022-07-26 19:15:43,851 >> `
    r"\[(?P<lv10>INFO|WARNING|ERROR|DEBUG|CRITICAL)\|[\w.\-]+:\d+\] \d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ >> ",
    # TensorFlow / Horovod: `2020-12-04 00:05:43.144250: I tensorflow/core/...cc:306] `, also in brackets
    r"\[?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: (?P<lv9>[IWEF]) [\w/.]+:\d+\] ",
    # NeMo's formatter (nemo/utils/formatters/base.py): `[NeMo I 2024-01-01 00:00:00 nemo_logging:349] `
    r"\[NeMo (?P<lv12>[IWEDC]) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [\w.]+:\d+\] ",
    # NeMo 2 / Lightning's padded header: `[INFO     | pytorch_lightning.utilities.rank_zero]: `
    r"\[(?P<lv13>INFO|WARNING|ERROR|DEBUG|CRITICAL)\s*\| [\w.]+\]: ",
    # Composer / llm-foundry's logging format (`%(asctime)s: rank{global_rank}[%(process)d][%(threadName)s]:
    # %(levelname)s: %(name)s: `): the writer's global rank and pid
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+: rank(?P<comp_rank>\d+)\[(?P<comp_pid>\d+)\]\[[^\]]*\]: "
    r"(?P<lv14>INFO|WARNING|ERROR|DEBUG|CRITICAL): [\w.]+: ",
    # TensorRT-LLM's Python logger (tensorrt_llm/logger.py): `[11/18/2025-09:33:30] [TRT-LLM] [RANK 0] [E] `,
    # the writer's global rank where it is named
    r"(?:\[\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d\] )?\[TRT-LLM\] (?:\[RANK (?P<trt_rank>\d+)\] )?"
    r"\[(?P<lv15>[IWEFV])\] ?",
]
LEVELS = [f"lv{i}" for i in range(1, 18)]
PREFIX = "^(?:" + "|".join(f"(?:{p})" for p in _PARTS) + ")*"
MAYBE_PREFIX = (r"^(?:[\w.\-]+: |\[|\(|>|\x1b|←|[\w.\-]+/\d+ [\[(]|\d{4}-\d\d-\d\d|\d\d/\d\d/\d{4} "
                r"|[\w.\-]+ >> |[\w.\-]+ \[std(?:out|err)\] |\d{4}/\d\d/\d\d "
                r"|[A-Z][a-z]{2} (?:[ \d]\d |[A-Z][a-z]{2} )|P\d+ \d| {1,3}\d{1,5}: "
                r"|[\w.\-]+ +\| |\s+\[[\d,]+\]<std"
                r"|\d\d:\d\d:\d\d[.,\d]*[ \t]"
                r"|:\d+/\d+\] "
                r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)[: ])")
TIMESTAMP = r"^\[?(?P<ts>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)\]?\s"
ANSI = r"(?:\x1b|←)\[\d{0,3}(?:;\d{1,3})*[mK]"
#: a message's error code, which the `host: ` prefix's shape also fits: Ascend CANN's (`EJ0001`, `EI0006`,
#: `EH9999`, `EZ9999`, `E19999`: E, two of a module's letters or digits, three digits) and longer ones
ERROR_CODE = r"^E(?:[0-9A-Z]{2}\d{3}|[A-Z]{1,2}\d{4,5})$"
PDSH_OVER_CODE = (r"^\s*([A-Za-z][\w\-]*\d[\w.\-]*|(?:\d{1,3}\.){3}\d{1,3}): "
                  r"E(?:[0-9A-Z]{2}\d{3}|[A-Z]{1,2}\d{4,5}): ")
TAGS = ("iso_ts", "sys_host", "pdsh_host", "std_host", "ray_actor", "vllm_groups", "actor_rank", "ray_pid", "ray_ip",
        "sky_rank", "sky_ip", "task_tag", "pts", "arrow_host", "rank_tag", "tmpl_rank", "tmpl_local",
        "local_tag", "mpi_rank", "bare_tag", "word_tag", "slash_rank", "slash_world", "comp_rank", "comp_pid",
        "trt_rank", "parlai_rank", *LEVELS)
STAMPS = ("pts", "iso_ts")  # the prefixes' wall-clock stamps, the line's ``ts``
