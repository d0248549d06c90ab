"""Training-loop stdout: DeepSpeed, HF Trainer, ms-swift, Megatron (docs/formats.md, "DeepSpeed ...").

Steps and losses become ``step`` events (the progress signal when no collective is logged),
DeepSpeed's comms logger becomes ``comm_op`` events with their bandwidth, ms-swift's argument dump
becomes ``train_arg`` events (``key=value``, what ``tracekit diff`` compares), and the framework's own
log lines are claimed so that what is left over really is unknown.

A program's own word on its progress and end (branch bench, issue 31): an iteration marker alone on
its line (``Rank 1: ==== Iteration 10/10 ====``) is a ``step`` (printed as the iteration starts, so its
last is no end); ``Rank 0: End of workload.``, ``Training completed``, torchelastic's ``worker group
successfully finished`` are ``program_end`` events; a ``Rank N:`` in front names the rank.
A program's own watchdog line (``STALL rank 3 on node0: no progress past step 324 for 120s``) is a
``stall`` of that rank at that step. Megatron/DeepSpeed's one-line timers (``time (ms) | forward:
207.71 | backward: 3509.10 | optimizer: 38738.77 | ...``) are a ``phase_times`` event.
"""

from __future__ import annotations

import polars as pl

from tracekit import progress_messages
from tracekit.parsers import Parsed, any_of, loop_ends, result_block, serving, work_done
from tracekit.parsers.text import PREFIX
from tracekit.schema import EventKind

NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)"
LOSS = rf"\{{.*?'loss': '?(?P<loss>{NUM})'?"
# ms-swift's step report (swift/trainers/callback.py add_train_message), printed as a dict (`print(logs)`,
# single quotes) or written to logging.jsonl as JSON (`append_to_jsonl`, double quotes)
SWIFT_STEP = r"""['"]global_step/max_steps['"]: ['"](?P<step>\d+)/(?P<max_steps>\d+)['"]"""
DS_STEP = r"\bstep=(?P<step>\d+), skipped=(?P<skipped>\d+)"
MEGATRON = rf"iteration\s+(?P<step>\d+)/\s*(?P<max_steps>\d+) \|.*?(?:lm loss: (?P<loss>{NUM}))?"
TQDM = r"(?P<pct>\d+)%\|[^|]*\|+\s*(?P<step>\d+)/(?P<max_steps>\d+) \["
# (s28) a bar of a set-up step, not of the work's loop: HF datasets' `Downloading data: 100%|...| 249M/249M`,
# `Generating train split: 100%|...| 2119719/2119719 [..., 356503.03 examples/s]`, `Map:`, `Filter:`, `Running
# tokenizer on dataset:`, a text chunking's `Grouping texts in chunks of 129:`, transformers' `Loading checkpoint
# shards:`, huggingface_hub's `Fetching 4 files:`: its count and its rate are the set-up's (SGLang's `Capturing
# batches (bs=1 ...): 100%` stays: its capture done is the server's start-up done, samples/wild dv18-017);
# samples/wild dv30-020: picotron's data preparation was read as its steps' pace
SETUP_BAR = (r"(?i)^\W{0,3}(?:\[[^\]]*\]\s*)?(?:downloading|generating|loading|map|filter|running tokenizer"
             r"|tokeniz\w*|grouping|fetching|extracting|preparing|building|caching|converting|resolving"
             r"|compiling|shuffling|computing checksums|concatenating|packing|sanity checking)\b[^|%]{0,80}?:?\s*"
             r"\d+%\|")
# a tqdm bar's tail pasted alone, its bar and counts cut (`[00:40<7:58:13,  5.75s/it, loss=0.175, lr=2e-6]`):
# elapsed<remaining, the pace (tqdm/std.py format_meter), the postfix; a ``progress`` event with no step
TQDM_TAIL = r"^\s*\[(?:\d+:)?\d\d:\d\d<(?:\d+:)?\d\d:\d\d,\s*[\d.]+\s*(?:s/it|it/s)\b[^\]]*\]\s*$"
# any other loop's line with a step and a loss (torchtitan `step: 200  loss:  6.1384`, `step at 58400,
# loss=31.05`, `ep 1 train, step 97, acc 0.004, loss 8.624`), and tf_cnn_benchmarks' `90\timages/sec: 152.2
# +/- 0.2 (...)\t2.321`
# (s30: a JSON line's keys in quotes, `{"step": 10, "loss": 4.21, ...}`, a script's `json.dumps` of its
# metrics)
# (s32: a total after the step, `Rank 0: step 5/5, loss: 1.50`, is the run's last step, ``max_steps``; where the
# line names an epoch, the total is the epoch's, not the run's: left out)
STEP_LOSS = (rf"\bstep[\"']?(?: at)?[:= ]\s*(?P<step>\d+)(?:\s*/\s*(?P<max_steps>\d+))?\b"
             rf".*?\bloss[\"']?[:= ]\s*(?P<loss>{NUM})")
EPOCH_WORD = r"(?i)\bepoch"
# (s30) the same with the loss first, as a metrics dict is often ordered (`{"loss": 3.87, "step": 20}`, `loss
# 2.31 iter 100`): the step named by its word after the loss
LOSS_STEP = (rf"\bloss[\"']?[:= ]\s*(?P<loss>{NUM})\b(?:[^\n]*?[,|\s])?[\"']?"
             rf"(?:step|global_step|iter|iteration)[\"']?[:= ]\s*(?P<step>\d+)\b")
# TensorFlow's estimator (`loss = 2.30294, step = 15 (1.941 sec)`), MXNet's Speedometer (`Epoch[0] Batch [50]
# Speed: 875.63 samples/sec`), Keras (`Epoch 24/24` as an epoch starts, then `250/250 [====] - 8s 31ms/step`)
TF_STEP = rf"\bloss = (?P<loss>{NUM}), step = (?P<step>\d+)\b"
MXNET = r"\bEpoch\[(?P<epoch>\d+)\] Batch \[(?P<step>\d+)\]\s+Speed: [\d.]+ samples/sec"
KERAS_EPOCH = r"^Epoch (?P<step>\d+)/(?P<of>\d+)\s*$"
KERAS_DONE = r"^(?P<done>\d+)/(?P<total>\d+) \[=+\] - \d+m?s \d+(?:ms|s|us)/step\b"
# (s23) a tf.keras 2 bar mid-epoch (keras/utils/generic_utils.py Progbar.update, verbose=1, no terminal: "\n", then
# `"%Nd/%d [" % (current, target)`, the bar, `] - ETA: %s`, metrics): `228/625 [=====>....] - ETA: 6:32 - loss: 7.67`
KERAS_BAR = r"^\s*(?P<i>\d+)/(?P<per>\d+) \[=*>?\.*\] - ETA: [\d:]+s?\b"
# torchvision's references MetricLogger.log_every (DeiT, MAE, DINO, detection ...): `Epoch: [7]  [ 100/1251] 
# eta: 0:15:17  lr: 0.001998  loss: 5.2755 (5.2755)  time: 0.7736  data: 0.0005`; the count starts again each
# epoch, so the step is counted over the epochs the header names, and its total is no end of the run
METRIC_LOGGER = (rf"^(?:.*?\bEpoch: \[(?P<epoch>\d+)\])?.*?\[\s*(?P<i>\d+)/(?P<per>\d+)\]\s+eta: [\d:]+ "
                 rf"(?:.*?\bloss: (?P<loss>{NUM}))?")
LOGGED_EVERY = r"\d\]\s+eta: \d"  # what picks its lines, cheaply
# Megatron's argument check (`using world size: 8, data-parallel size: 2, ...`, older `... and model-parallel
# size`)
MEGATRON_WORLD = r"^using world size: (?P<world_size>\d+)\b"
IMAGES = rf"^(?P<step>\d+)\s+images/sec: [\d.]+ \+/- [\d.]+ \(jitter = [\d.]+\)\s+(?P<loss>{NUM})"
COMM_OP = (
    r"comm op: (?P<op>\w+) \| time \(ms\): (?P<ms>[\d.]+) \| msg size: (?P<size>[\d.]+) (?P<unit>\w+) \| "
    r"algbw \(Gbps\): (?P<algbw>[\d.]+) \| busbw \(Gbps\): (?P<busbw>[\d.]+)"
)
DS_VERSION = r"DeepSpeed info: version=(?P<v>\S+)"
TRAIN_START = r"\*{5} Running training \*{5}"
# ms-swift prints its whole argument object, one ``key=value,`` a line, ``)`` alone closing it
# (HF's Trainer the same, under `Training/evaluation parameters `: transformers/trainer.py, training_args.py
# __str__)
ARGS_OPEN = r"(?:\[INFO:swift\] args: |^Training/evaluation parameters |^)\w*Arguments\($"
ARG = r"^(?P<key>[A-Za-z_][\w.]*)=(?P<value>.*?),?$"
# HF Trainer's banner names the accumulation that makes an optimizer step of micro-steps (tracekit.traffic)
HF_ACCUM = r"Gradient Accumulation steps = (?P<value>\d+)\s*$"
KNOWN = (
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\] \[(?:INFO|WARNING|DEBUG|ERROR)\]|\[INFO:swift\]|"
    r"\[WARNING:swift\]|\[(?:INFO|WARNING)\|[\w.]+:\d+\]|OVERFLOW!|^\s*(?:Num examples|Num Epochs|"
    r"Instantaneous batch size|Total train batch size|Gradient Accumulation steps|Total optimization steps|"
    r"Number of trainable parameters)|\|=>>|wandb:|^\s*\d+%\|"
    # HF's logger prefix (transformers 5), its banners, Python logging's default format (modelscope)
    r"|^\[transformers\]|^\*{5} Running (?:Evaluation|Prediction) \*{5}"
    r"|^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ \| (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \| [\w.]+ \|"
)
# a program's own progress and end lines, with the rank it names in front (`Rank 1: `)
SAYS_RANK = r"^Rank (?P<rank>\d+):\s*"
#: (s31) the rank a line names first, then a separator (``rank 0 step 1``, ``Rank 1, epoch 0``, ``rank: 3 |``)
LEADING_RANK = r"(?i)^\s*rank\s*[:=#]?\s*(\d+)\b\s*[:,|\-]?\s"
ITERATION = r"^(?:Rank \d+:\s*)?[=*#\- ]*Iteration\s+(?P<step>\d+)\s*/\s*(?P<max_steps>\d+)[=*#\- ]*$"
#: (s33) a step said started, alone on its line after the rank the script names (``RANK 22: running step
#: 1/10``, ``rank 3: starting iteration 5/100``; samples/wild dv32-003, 350 such lines): a ``step`` of that rank,
#: printed as the step starts (its last is no end: max_steps left out as ITERATION's); group ``named`` the rank
STEP_STARTED = (r"(?i)^(?:rank\s*[:=#]?\s*(?P<named>\d+)\s*[:,\-]\s*)?(?:running|starting|begin(?:ning)?)\s+"
                r"(?:step|iteration|iter)\s+(?P<step>\d+)\s*/\s*(?P<max_steps>\d+)\W{0,3}$")
PROGRAM_END = (r"(?i)^(?:Rank \d+:\s*)?(?:End of (?:workload|training)\b"
               r"|Training (?:is )?(?:complete|completed|finished|done)\b"
               r"|Finished training\b|All ranks (?:finished|done|completed)\b)"
               r"|\] worker group successfully finished\b"
               # (branch unknown) Lightning's fit loop (loops/fit_loop.py: `` `Trainer.fit` stopped:
               # `max_steps=100` reached.``), Megatron's (training/training.py: print_datetime('after training
               # is done'), its exit interval `exiting program at iteration N`), `ray job submit`'s `Job
               # 'raysubmit_x' succeeded`
               r"|^(?:\[\w+\s*\| [\w.]+\]: )?`Trainer\.fit` stopped: `\w+=[^`]*` reached\.|"
               r"^\[after training is done\] datetime: |^\[?exiting program (?:after \d+ minutes|"
               r"at iteration \d+)|^-*\s*Job '[\w\-]+' succeeded\b"
               # (progress) a benchmark's or a check's own end (ROCm's micro_benchmarking_pytorch.py: `OK:
               # finished running benchmark..`), DLRover's master after its network check of every node
               # (dlrover/python/elastic_agent/torch/training.py: `Fault nodes are: []  and stragglers are:
               # []`)
               r"|^(?:OK:?\s*)?(?:finished|completed|done)(?: running)?(?: the)? "
               r"(?:benchmark|tests?|checks?)\b"
               r"|^(?:The )?(?:benchmark|tests?|checks?) (?:finished|completed|done|passed)\b"
               # a job's own check of every rank it measured (DLRover's, FlagScale's: progress_messages.CHECKS)
               + "|" + any_of(*(m.pattern for m in progress_messages.CHECKS))
               # (s18) the runtimes' own end lines, read from their printing code: tracekit/progress_messages.py
               + "|" + any_of(*(m.pattern for m in progress_messages.ENDS)))
# (progress) a test runner's own end: unittest's TextTestRunner (and nose, Paddle's and torch's own test
# suites: `Ran 4 tests in 41.896s`, the separator, then `OK` or `OK (skipped=1)`; `FAILED (failures=1)` is
# no clean end: unittest/runner.py), pytest's summary with nothing failed (`=== 5 passed, 1 warning in
# 3.21s ===`: _pytest/terminal.py)
TESTS_RAN = r"^Ran (\d+) tests? in ([\d.]+)s\s*$"
TESTS_OK = r"^OK(?: \((?:\w+=\d+(?:, )?)+\))?\s*$"
PYTEST_PASSED = (r"^=+ (?:\d+ (?:passed|skipped|deselected|xfailed|xpassed|warnings?)(?:, | ))+in [\d.]+s"
                 r"(?: \([\d:]+\))? =+\s*$")
# a program's own watchdog naming the rank that made no progress (`STALL rank 3 on node0: no progress past
# step 324 for 120s`): a ``stall`` event of that rank, at that step
NO_PROGRESS = (r"(?i)\brank (?P<stalled>\d+)\b(?: on (?P<host>[\w.\-]+))?\W.*?\bno progress\b"
               r"(?:.*?\bstep (?P<step>\d+))?")
# DeepSpeed's SynchronizedWallClockTimer.log (deepspeed/utils/timer.py:134 in v0.6.6-v0.10.0: `string =
# f"rank={dist.get_rank()} time (ms)"`, then ` | {name}: {elapsed:.2f}` per timer; `time (ms)` alone before
# and since, timer.py:145), printed through log_dist (deepspeed/utils/logging.py:95, `"[Rank {}] {}"`)
PHASES = r"(?:^|\[Rank \d+\] )(?:rank=\d+ )?time \(ms\) \| (?:[\w\- ]+: [\d.]+(?: \| )?){2,}"
# (branch unknown) DeepSpeed's ThroughputTimer (deepspeed/utils/timer.py:
# `epoch=0/micro_step=40/global_step=10, RunningAvgSamplesPerSec=25.0, ...`, before 0.9 `0/20,
# RunningAvgSamplesPerSec=...`: epoch/global step); verl's console metrics (verl/utils/tracking.py: `step:12 -
# actor/pg_loss:0.01 - ...`); fairseq's simple progress bar (fairseq/logging/progress_bar.py
# SimpleProgressBar.log: `epoch 001:    100 / 1563 loss=9.1, ..., num_updates=100`)
DS_TIMER = r"(?:\bglobal_step=|\] \d+/)(?P<step>\d+), RunningAvgSamplesPerSec="
VERL = r"^step:(?P<step>\d+) - [\w/@.\-]+:"
FAIRSEQ = rf"^epoch \d+:\s+\d+ / \d+ .*?\bnum_updates=(?P<step>\d+)"
FAIRSEQ_LOSS = rf"^\|? ?epoch \d+:?\s+\d+ / \d+ loss=(?P<loss>{NUM})"
# fairseq before 0.7 (progress_bar.py: `| epoch 010  2000 / 8223 loss=1.27 (1.50), wps=962, ...`): no update
# count, the step counted over the epochs as torchvision's MetricLogger's is
FAIRSEQ_OLD = r"^\| epoch (?P<epoch>\d+)\s+(?P<i>\d+) / (?P<per>\d+) loss="
# torchtune's StdoutLogger (torchtune/training/metric_logging.py: `Step 3 | loss:0.91 lr:2e-05 ...`) and the
# loops that print the same head; PyTorch's ImageNet example's ProgressMeter (examples/imagenet/main.py:
# `Epoch: [0][ 10/5005]\tTime ...\tLoss 6.9 (6.9)`)
STEP_BAR = rf"^Step (?P<step>\d+) \| (?:.*?\b[Ll]oss[: ]\s*(?P<loss>{NUM}))?"
# OpenMMLab's text logger (mmcv/runner/hooks/logger/text.py: `Epoch [4][100/1000]\tlr: 1.000e-02, eta: ...,
# loss: 1.23`, by iteration `Iter [100/80000]\tlr: ...`; mmengine's `Epoch(train)  [1][ 50/7330]  base_lr:
# ...`)
MMCV_EPOCH = (rf"\bEpoch(?:\(train\))?\s*\[(?P<epoch>\d+)\]\[\s*(?P<i>\d+)/(?P<per>\d+)\]\s+(?:base_)?lr[:_]"
              rf"(?:.*?, loss: (?P<loss>{NUM}))?")
MMCV_ITER = (rf"\bIter(?:\(train\))?\s*\[\s*(?P<step>\d+)/(?P<max_steps>\d+)\]\s+(?:base_)?lr[:_]"
             rf"(?:.*?, loss: (?P<loss>{NUM}))?")
IMAGENET = rf"^Epoch: \[(?P<epoch>\d+)\]\[\s*(?P<i>\d+)/(?P<per>\d+)\]\s+Time\b(?:.*?\bLoss (?P<loss>{NUM}))?"
OWN_STEPS = any_of(*(m.pattern for m in progress_messages.STEPS))
NOT_END = any_of(*(m.pattern for m in progress_messages.STEPS + progress_messages.PARTS))
#: the lines this module reads as steps (parsers/series.py leaves them to it)
STEP_PATTERNS = (r"\{.*'loss': ", DS_STEP, r"iteration\s+\d+/\s*\d+ \|", TQDM, STEP_LOSS, LOSS_STEP, TF_STEP,
                 MXNET,
                 KERAS_EPOCH, KERAS_DONE, IMAGES, DS_TIMER, VERL, FAIRSEQ, FAIRSEQ_OLD, STEP_BAR, MMCV_ITER,
                 IMAGENET, MMCV_EPOCH, LOGGED_EVERY, ITERATION, STEP_STARTED, OWN_STEPS)
# the time a logger's header put in front of a line (within its first characters)
STAMP = r"^.{0,40}?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)"
# Python's warnings: ``path.py:12: FutureWarning: ...`` then the source line, indented
PY_WARNING = r"^\S+\.py:\d+: \w*Warning: "


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("trainer")
    t = pl.col("text")
    # (a logger header the lines frame took off, `2024-04-10 04:59:03 | INFO | logs | `, still dates the line)
    said_ts = pl.col("raw").str.extract(STAMP, 1) if "raw" in lines.columns else pl.lit(None, pl.Utf8)
    tag = pl.col("launch_rank") if "launch_rank" in lines.columns else pl.lit(None, pl.Int64)
    # (the process a launcher's prefix names, whatever number it gives: parsers/work_done.py's reports)
    procs = [c for c in ("rank_tag", "mpi_rank", "launch_rank", "local_tag", "task_tag", "bare_tag", "word_tag")
             if c in lines.columns]
    proc = pl.coalesce(*(pl.col(c).cast(pl.Utf8) for c in procs)) if procs else pl.lit(None, pl.Utf8)
    df = lines.select("file", "line", "text", pl.coalesce("ts", said_ts).alias("ts"),
                      pl.coalesce("rank_tag", "mpi_rank").alias("rank"), tag.alias("_tag"), proc.alias("_proc"))
    frames = []

    def add(kind: str, mask: pl.Expr, pattern: str | None = None) -> None:
        sub = df.filter(mask)
        if sub.height:
            if pattern:
                sub = sub.with_columns(t.str.extract_groups(pattern).alias("_g")).unnest("_g")
            frames.append(sub.with_columns(pl.lit(kind).alias("kind"), t.alias("message")))

    add(EventKind.STEP, t.str.contains(r"""\{.*['"]loss['"]: """) & t.str.contains("global_step/max_steps"),
        SWIFT_STEP)
    add(EventKind.STEP, t.str.contains(r"\{.*'loss': ") & ~t.str.contains("global_step/max_steps"))
    add(EventKind.STEP, t.str.contains(DS_STEP), DS_STEP)
    add(EventKind.STEP, t.str.contains(r"iteration\s+\d+/\s*\d+ \|"), MEGATRON)
    add(EventKind.PROGRESS, t.str.contains(TQDM) & ~t.str.contains(SETUP_BAR), TQDM)
    add(EventKind.PROGRESS, t.str.contains(TQDM_TAIL))
    if "raw" in lines.columns:  # a bar a message was written after: the lines frame keeps the message
        bars = lines.filter(pl.col("raw").str.contains(TQDM) & ~t.str.contains(TQDM)).join(
            df.select("file", "line", "ts", "rank"), on=["file", "line"])
        if bars.height:
            bar = pl.col("raw").str.extract(r"(\d+%\|[^\]]*\])", 1)
            frames.append(bars.select("file", "line", "ts", "rank", bar.alias("text"),
                                      pl.col("raw").str.extract_groups(TQDM).alias("_g"))
                          .unnest("_g").with_columns(pl.lit(EventKind.PROGRESS).alias("kind"),
                                                     pl.col("text").alias("message")))
    others = ~t.str.contains(r"\{.*'loss': |\bstep=\d+, skipped=|iteration\s+\d+/\s*\d+ \||^step:\d+ - ")
    n = len(frames)
    add(EventKind.STEP, others & t.str.contains(STEP_LOSS), STEP_LOSS)
    frames[n:] = [f.with_columns(pl.when(t.str.contains(EPOCH_WORD)).then(None).otherwise(pl.col("max_steps"))
                                 .alias("max_steps")) for f in frames[n:]]
    # (a bar's postfix, `41.36s/it, loss=3.1, ..., global_step=794.0]`, is the bar's own step: its counter counts)
    add(EventKind.STEP, others & ~t.str.contains(STEP_LOSS) & ~t.str.contains(TQDM) & t.str.contains(LOSS_STEP),
        LOSS_STEP)
    add(EventKind.STEP, t.str.contains(TF_STEP), TF_STEP)
    add(EventKind.STEP, t.str.contains(MXNET), MXNET)
    _keras(_own_lines(lines, df), frames)
    add(EventKind.STEP, t.str.contains(IMAGES), IMAGES)
    add(EventKind.STEP, t.str.contains(DS_TIMER), DS_TIMER)
    add(EventKind.STEP, t.str.contains(VERL), VERL)
    n = len(frames)
    add(EventKind.STEP, t.str.contains(FAIRSEQ), FAIRSEQ)
    frames[n:] = [f.with_columns(t.str.extract(FAIRSEQ_LOSS, 1).alias("loss")) for f in frames[n:]]
    add(EventKind.STEP, t.str.contains(STEP_BAR), STEP_BAR)
    add(EventKind.STEP, t.str.contains(MMCV_ITER), MMCV_ITER)
    n = len(frames)
    add(EventKind.STEP, t.str.contains(FAIRSEQ_OLD), FAIRSEQ_OLD)
    add(EventKind.STEP, t.str.contains(IMAGENET), IMAGENET)
    add(EventKind.STEP, t.str.contains(MMCV_EPOCH), MMCV_EPOCH)
    frames[n:] = [f.with_columns((pl.col("epoch").cast(pl.Int64) * pl.col("per").cast(pl.Int64)
                                  + pl.col("i").cast(pl.Int64)).alias("step"),
                                 pl.coalesce(*([pl.col("loss")] if "loss" in f.columns else []),
                                             t.str.extract(FAIRSEQ_LOSS, 1)).alias("loss"))
                  .drop("epoch", "i", "per") for f in frames[n:]]
    n = len(frames)
    add(EventKind.STEP, t.str.contains(LOGGED_EVERY), METRIC_LOGGER)
    frames[n:] = [f.with_columns((pl.col("epoch").cast(pl.Int64).fill_null(0) * pl.col("per").cast(pl.Int64)
                                  + pl.col("i").cast(pl.Int64)).alias("step")).drop("epoch", "i", "per")
                  for f in frames[n:]]
    n = len(frames)
    # (a banner printed as an iteration starts: its last one is no end, so max_steps is left out)
    add(EventKind.STEP, t.str.contains(ITERATION), ITERATION)
    add(EventKind.STEP, t.str.contains(STEP_STARTED), STEP_STARTED)
    frames[n:] = [f.drop("max_steps").with_columns(
        pl.coalesce(pl.col("named").cast(pl.Int64, strict=False), "rank").alias("rank")).drop("named")
        if "named" in f.columns else f.drop("max_steps") for f in frames[n:]]
    for m in progress_messages.STEPS:  # (s18) a runtime's own line per step done, read from its code
        add(EventKind.STEP, t.str.contains(m.pattern), m.pattern)
    # (an iteration's report in an end's words, Ray Train's `Training finished iteration 3 at ...`, is a step)
    add(EventKind.PROGRAM_END, t.str.contains(PROGRAM_END) & ~t.str.contains(NOT_END)
        & ~t.str.contains(work_done.WENT_WRONG))
    ran = t.str.contains(TESTS_RAN)
    after = pl.any_horizontal(ran.shift(k).over("file").fill_null(False) for k in (1, 2, 3))
    df = df.with_columns((t.str.contains(TESTS_OK) & after).alias("_ok"),
                         pl.when(ran).then(t).forward_fill().over("file").alias("_ran"))
    ok = df.filter(pl.col("_ok"))
    if ok.height:  # (the message names the run: `Ran 1 test in 41.896s: OK`)
        frames.append(ok.with_columns(pl.lit(EventKind.PROGRAM_END).alias("kind"),
                                      pl.format("{}: {}", "_ran", t).alias("message")))
    add(EventKind.PROGRAM_END, t.str.contains(PYTEST_PASSED) & t.str.contains(r"\d passed\b"))
    add(EventKind.PHASE_TIMES, t.str.contains(PHASES))
    # (s26) a JAX program's compile stages, each timed as it finished: ``where="compile"`` (set below)
    stage = any_of(*(m.pattern for m in progress_messages.COMPILE_STAGES))
    add(EventKind.PHASE_TIMES, t.str.contains(stage) & ~t.str.contains(PHASES))
    add(EventKind.STALL, t.str.contains(NO_PROGRESS), NO_PROGRESS)
    said = pl.coalesce(t.str.extract(SAYS_RANK, 1).cast(pl.Int64, strict=False),
                       t.str.extract(NO_PROGRESS, 1).cast(pl.Int64, strict=False), "rank", "_tag")
    compiled = pl.col("message").str.contains(stage) & (pl.col("kind") == EventKind.PHASE_TIMES)
    frames[n:] = [f.with_columns(said.alias("rank"), pl.when(compiled).then(pl.lit("compile"))
                                 .otherwise(pl.lit("program")).alias("where"))
                  .drop("stalled", strict=False) for f in frames[n:]]
    # (s25) the same fact in general words: a finish sentence, a result summary, a rank's own result
    done = [f.filter(~pl.col("text").str.contains(PROGRAM_END) & ~pl.col("text").str.contains(NOT_END)
                     & ~pl.col("text").str.contains(any_of(*STEP_PATTERNS)))
            for f in work_done.events(df.drop("_ok", "_ran"))]
    frames += done
    # (s31) a loop's end its counters or a bare end word after its progress say: parsers/loop_ends.py
    ended = loop_ends.events(df.drop("_ok", "_ran"), frames)
    frames += ended
    # (s34) a block of measured figures with no banner that closes a file: parsers/result_block.py
    closing, block_lines = result_block.events(df.drop("_ok", "_ran"))
    frames += closing
    add(EventKind.COMM_OP, t.str.contains("comm op: "), COMM_OP)
    if (served := serving.events(df)) is not None:  # (an inference server's start-up and requests)
        frames.append(served)
    add(EventKind.TRAIN_START, t.str.contains(TRAIN_START))
    add(EventKind.TRAIN_END, t.str.contains(r"\{'train_runtime'"))
    opened = t.str.contains(ARGS_OPEN).cast(pl.Int32).cum_sum().over("file")
    closed = (t == ")").cast(pl.Int32).cum_sum().over("file")
    df = df.with_columns(((opened > closed) & ~t.str.contains(ARGS_OPEN)).alias("_in_args"))
    add(EventKind.TRAIN_ARG, pl.col("_in_args") & t.str.contains(ARG), ARG)
    n = len(frames)
    add(EventKind.TRAIN_ARG, t.str.contains(HF_ACCUM), HF_ACCUM)
    frames[n:] = [f.with_columns(pl.lit("gradient_accumulation_steps").alias("key")) for f in frames[n:]]
    events = (pl.concat(frames, how="diagonal_relaxed").drop("_tag", "_proc", "_ok", "_ran", strict=False)
              if frames
              else None)
    if events is not None:
        # (s31) a progress line that names its rank first, with no launcher's tag (``rank 0 step 1 loss 2.1``,
        # ``Rank 1, epoch 0, step 50, loss 1.198``): that rank's step
        step_rank = t.str.extract(LEADING_RANK, 1).cast(pl.Int64, strict=False)
        events = events.with_columns(pl.when(pl.col("kind").is_in([EventKind.STEP, EventKind.PROGRESS]))
                                     .then(pl.coalesce("rank", step_rank)).otherwise("rank").alias("rank"))
        events = events.with_columns(
            pl.when(pl.col("kind") == EventKind.TRAIN_ARG).then(pl.format("{}={}", "key", "value"))
            .otherwise("message").alias("message") if "key" in events.columns else pl.col("message"),
            *(pl.col(c).cast(pl.Int64, strict=False) if c in events.columns
              else pl.lit(None, pl.Int64).alias(c) for c in ("step", "max_steps")),
            pl.coalesce(t.str.extract(LOSS, 1), *([pl.col("loss")] if "loss" in events.columns else []))
            .cast(pl.Float64, strict=False).alias("loss"),
            (pl.col("op") if "op" in events.columns else pl.lit(None, pl.Utf8)).alias("op"),
        )
        if "algbw" in events.columns:  # DeepSpeed's comms logger: ms, size with unit, Gbps (bits)
            unit = pl.col("unit").str.to_uppercase().replace_strict(
                {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30}, default=None, return_dtype=pl.Float64)
            events = events.with_columns(
                (pl.col("size").cast(pl.Float64, strict=False) * unit).round().cast(pl.Int64).alias("bytes"),
                pl.col("ms").cast(pl.Float64, strict=False).alias("duration_ms"),
                (pl.col("algbw").cast(pl.Float64, strict=False) / 8).alias("algbw_gbs"),
                (pl.col("busbw").cast(pl.Float64, strict=False) / 8).alias("busbw_gbs"),
                pl.when(pl.col("kind") == EventKind.COMM_OP).then(pl.lit("deepspeed")).alias("where"),
            )
    ranks = pl.concat([
        df.filter(t.str.contains(DS_VERSION)).select(
            "file", t.str.extract(DS_VERSION, 1).alias("deepspeed_version"),
            pl.lit("deepspeed").alias("source")),
        df.filter(t.str.contains(MEGATRON_WORLD)).select(
            "file", t.str.extract(MEGATRON_WORLD, 1).cast(pl.Int64).alias("world_size"),
            pl.lit("megatron").alias("source")),
    ], how="diagonal_relaxed")
    closing = t == ")"
    args_end = closing & (t.str.contains(ARGS_OPEN).cast(pl.Int32).cum_sum().over("file")
                          > closing.cast(pl.Int32).cum_sum().over("file") - 1)
    warned = t.str.contains(PY_WARNING)
    after_warning = warned.shift(1, fill_value=False).over("file") & t.str.starts_with("  ")
    used = args_end | pl.col("_in_args") | warned | after_warning | t.str.contains(
        any_of(*(r"\{.*'loss': ", DS_STEP, STEP_LOSS, LOSS_STEP, IMAGES, r"^total images/sec: ",
                 r"^\[iteration\] datetime: ", r"^time \(ms\) \| \w", r"^Invalidate trace cache @ step \d+",
                 r"iteration\s+\d+/\s*\d+ \|", TQDM, "comm op: ", TRAIN_START, DS_VERSION, KNOWN,
                 r"\{'train_runtime'|\{'eval_\w*loss'",
                 LOGGED_EVERY, MEGATRON_WORLD, ITERATION, STEP_STARTED, PROGRAM_END, PHASES, NO_PROGRESS, TF_STEP, MXNET,
                 KERAS_EPOCH, KERAS_DONE, KERAS_BAR, DS_TIMER, VERL, FAIRSEQ, FAIRSEQ_OLD, STEP_BAR,
                 IMAGENET, MMCV_EPOCH, MMCV_ITER, TESTS_RAN, PYTEST_PASSED, serving.SERVING, TQDM_TAIL,
                 OWN_STEPS))
    ) | pl.col("_ok")
    claimed = pl.concat([df.filter(used).select("file", "line"), *(f.select("file", "line") for f in done + ended),
                         *([block_lines] if block_lines is not None else [])])
    return Parsed("trainer", {"events": events, "ranks": ranks}, claimed.unique().sort("file", "line"))


def _own_lines(lines: pl.DataFrame, df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with each line's own text where parsers/text.py joined lines of one width as a wrapped one
    (Keras' bars are all of one width: an epoch's banner after one would be glued onto it)."""
    if "cont_of" not in lines.columns or lines["cont_of"].null_count() == lines.height:
        return df
    joined = lines.filter(pl.col("cont_of").is_not_null()).select("file", pl.col("cont_of").alias("line"))
    joined = joined.unique()
    heads = joined.with_columns(pl.lit(True).alias("_head"))
    own = lines.join(heads, on=["file", "line"], how="left").select(
        "file", "line", (pl.col("cont_of").is_not_null() | pl.col("_head").fill_null(False)).alias("_own"),
        pl.col("raw").str.replace(PREFIX, "").alias("_raw"))
    df = df.join(own, on=["file", "line"], how="left").with_columns(
        pl.when(pl.col("_own")).then(pl.col("_raw")).otherwise(pl.col("text")).alias("text"))
    return df.drop("_own", "_raw")


def _keras(df: pl.DataFrame, frames: list[pl.DataFrame]) -> None:
    """Keras: each epoch's banner (``Epoch 24/24``, printed as it starts) is a ``step``; a bar that
    completes (``250/250 [====] - 8s 31ms/step``) under the last epoch's banner is the ``program_end``."""
    t = pl.col("text")
    k = df.with_columns(t.str.extract(KERAS_EPOCH, 1).cast(pl.Int64, strict=False).alias("_e"),
                        t.str.extract(KERAS_EPOCH, 2).cast(pl.Int64, strict=False).alias("_of"))
    k = k.with_columns(pl.col("_e", "_of").forward_fill().over("file"))
    # (s23) bars mid-epoch: a step each, counted over the epochs (batch 228 of epoch 2 of 625 is step 853);
    # where a file holds them its banners are no steps of their own
    bars = k.filter(t.str.contains(KERAS_BAR)).with_columns(t.str.extract_groups(KERAS_BAR).alias("_g")).unnest("_g")
    if bars.height:
        frames.append(bars.with_columns(pl.lit(EventKind.PROGRESS).alias("kind"), t.alias("message"),
                                        ((pl.col("_e").fill_null(1) - 1) * pl.col("per").cast(pl.Int64)
                                         + pl.col("i").cast(pl.Int64)).alias("step"))
                      .drop("_e", "_of", "i", "per"))
    banners = k.filter(t.str.contains(KERAS_EPOCH)).join(bars.select("file").unique(), on="file", how="anti")
    if banners.height:
        frames.append(banners.with_columns(pl.lit(EventKind.STEP).alias("kind"), t.alias("message"),
                                           pl.col("_e").alias("step")).drop("_e", "_of"))
    complete = t.str.extract(KERAS_DONE, 1) == t.str.extract(KERAS_DONE, 2)
    last = k.filter(t.str.contains(KERAS_DONE) & complete & (pl.col("_e") == pl.col("_of")))
    if last.height:
        said = pl.format("Keras: the last epoch ({}/{}) completed: {}", "_e", "_of", t)
        frames.append(last.with_columns(pl.lit(EventKind.PROGRAM_END).alias("kind"),
                                        pl.lit("program").alias("where"),
                                        said.alias("message")).drop("_e", "_of"))
