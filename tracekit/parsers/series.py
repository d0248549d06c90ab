"""A program's own progress lines, found by their shape rather than by the program (issue 31).

Trainers and servers each print their progress in their own words: icefall's ``Epoch 1, batch 50, ...``,
nanotron's ``iteration: 991 / 1000 | ... | elapsed_time_per_iteration_ms: 45 | tokens_per_sec: 14.2K``,
GluonNLP's ``Epoch: 1, Batch: 3900/8164, ... Throughput=52.94 samples/s``, tinygrad's ``    4 4.32 s run,
11.8750 loss, ...``, open_clip's ``Train Epoch: 0 [400564224/512000000 (78%)] ... Batch (t): 4.644,
1802.44/s``, CLIP4Clip's ``Epoch: 1/30, Step: 2/951, ... Time/step: 67.29``, SGLang's ``Decode batch, ...
gen throughput (token/s): 144.95``, vLLM's ``Engine 000: Avg prompt throughput: ... tokens/s``. What they
share is the shape: one template (the line with its digits masked) printed again and again, with a counter
that rises (a step, an iteration, a batch, the samples seen: a number a counter word names, the first of an
``N / M`` whose ``M`` stays, or a line's leading number) and/or a figure of the pace (a rate, a time per
step; ``RATES`` and ``TIMES``, which ``pace.py`` reads too).

A template printed 3+ times in one file with a pace on each line, or 2+ times with a counter that rises
on them (s23: two points of one loop are progress, one line a snapshot), makes ``step`` events
(with the counter) or ``progress`` events (a pace and no counter), ``where="series"``, the time per step in
``duration_ms``. A line printed once (s24) is a ``step`` event only where it names its counter and the
loss, a pace or the loop's total beside it (``LONE_COUNTER``): one step of the loop seen. Not progress: a
template with an error, warning or retry word (``retrying (3/100)``, a repeated ``Connection refused``), a
progress bar (a download's, a loader's: ``45%|####``, ``[=====>``), a
counter that falls (a countdown), and the lines ``parsers/trainer.py`` already reads as steps.
"""

from __future__ import annotations

import os
import re

import polars as pl

from tracekit import progress_messages
from tracekit.parsers import Parsed, any_of, timings, trainer
from tracekit.schema import EventKind

NUMBER = r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
#: a key that names a throughput unit: what it counts, per second (``_per_second``, ``/sec``), per GPU or
#: not (``tokens_per_second_per_gpu``, ``global_step/sec``, ``samples_per_sec``)
UNIT_KEY = (r"(?:tokens?|samples|images|imgs|examples|seqs|sequences|steps?|global_step|iters?|batches"
            r"|frames|words)(?:/|[_ ]per[_ ])s(?:ec(?:ond)?)?"
            r"(?:[_ ](?:per[_ ])?(?:gpu|device|rank|worker|core)s?)?")
#: what a rate in words counts (``tokens per second``)
WORDED_UNIT = r"(?:tokens?|samples|images|sequences|examples|steps|iterations|requests|words|frames)"
#: a rate a progress line prints, the first that matches gives it (group 1; ``K``/``M`` after it scale it)
RATES = (
    # (s18) the runtimes' own rates read from their printing code (tracekit/progress_messages.py: MaxText's
    # `Tokens/s/device: 36653.244`)
    *(p for p, _ in progress_messages.RATES),
    r"(?i)\bgen(?:eration)? throughput(?: \(token/s\))?: ([\d][\d,]*(?:\.\d+)?)",
    # PaddlePaddle's trainers (PaddleOCR tools/program.py: `..., samples: 512, ips: 191.79578 samples/s`;
    # its benchmark/run_benchmark.sh reads `ips:` as images/sec): the rate, before `samples: N`, the batch
    r"\bips:\s*(\d[\d,]*(?:\.\d+)?)",
    # (s28: picotron's `Tokens/s:   1.68K`, its K kept: ``pace.number`` scales it)
    # (s29: the unit per second, never a count: Megatron-DeepSpeed's `total number of samples: 7691`, PaddleOCR's
    # `avg_samples: 32.0` before its `ips:` are no throughput, samples/wild dv37-013)
    # (s30: a unit per device, `tokens/sec/gpu: 3512`, and `img`, `Images/sec: 1520.4`, `812.3 img/s`)
    r"(?i)\b(?:(?:images|imgs?|samples|tokens)/s(?:ec)?(?:/(?:gpu|device|chip|rank))?|tps):?\s*"
    r"(\d[\d,]*(?:\.\d+)?[KMG]?)\b",
    r"(\d[\d,]*(?:\.\d+)?)\s*(?:images|imgs?|samples|tokens?|tok|it|words|examples|seqs|sequences|steps?"
    r"|batch(?:es)?)/s(?:ec)?\b",
    # DeepSpeed's ThroughputTimer (deepspeed/utils/timer.py: `RunningAvgSamplesPerSec=25.0,
    # CurrSamplesPerSec=24.8`): the rate of the last interval, not the average since the start
    r"\bCurrSamplesPerSec=(\d[\d,]*(?:\.\d+)?)",
    r"(?i)\bthroughput[^:=\d]{0,30}[:=]\s*(\d[\d,]*(?:\.\d+)?)",
    r"(?i)\b(?:wps|ups|tokens_per_sec|samples_per_sec|samplespersec|words/s|tok/s)\s*[:=]?\s*"
    r"(\d[\d,]*(?:\.\d+)?[KMG]?)",
    r"(?:^|[\s,(])(\d[\d,]*(?:\.\d+)?)/s\b",
    # (s28) the unit in words (llama.cpp's `( 9.72 ms per token, 102.88 tokens per second)`, llama.cpp
    # common/log print_timings; a script's `tokens per second: 3456.7`)
    rf"(\d[\d,]*(?:\.\d+)?)\s*{WORDED_UNIT}\s+per\s+second\b",
    rf"(?i)\b{WORDED_UNIT}\s+per\s+second\s*[:=]\s*(\d[\d,]*(?:\.\d+)?)",
    r"(\d[\d,]*(?:\.\d+)?)\s*[GT]FLOPS\b",
    # a throughput per GPU or the model FLOPs each GPU does, named before the figure: InternLM's
    # `tflops=93.48, ..., tgs (tokens/gpu/second)=2104.89`, `tokens_per_gpu_per_sec: 2105`, `TFLOPs/GPU: 180`
    r"(?i)\btflops(?:/s)?(?:[/_ ](?:per[/_ ])?gpu)?\s*[:=]\s*(\d[\d,]*(?:\.\d+)?)",
    r"(?i)\b(?:tgs|tokens?[/_ ](?:per[/_ ])?gpu[/_ ](?:per[/_ ])?s(?:ec(?:ond)?)?)\b[^:=\d]{0,30}[:=]\s*"
    r"(\d[\d,]*(?:\.\d+)?)",
    # a key that names its unit in brackets (ms-swift's jsonl `'train_speed(iter/s)': 0.011176`,
    # swift/trainers/mixin.py): the figure after the key
    r"(?i)\w*\((?:iter|it|steps?|samples|tokens?|images|seqs)/s(?:ec)?\)['\"]?\s*[:=]\s*(\d[\d,]*(?:\.\d+)?)",
    # torch_xla's test_train_mp_*.py (`| Training Device=xla:0/3 Epoch=1 Step=640 Loss=0.00174 Rate=551.37
    # GlobalRate=379.99 Time=...`): `Rate=` the samples/s of the last interval, not `GlobalRate=` (since the
    # start)
    r"\bRate=(\d[\d,]*(?:\.\d+)?)",
    # any key that names a throughput unit, in words or with a slash, then its figure (torchtune's
    # `tokens_per_second_per_gpu:576.6`, HF Trainer's `'train_samples_per_second': 3.1`, TensorFlow's
    # estimator `global_step/sec: 1.13` (basic_session_run_hooks.py StepCounterHook), `steps_per_second=2`)
    rf"(?i){UNIT_KEY}['\"]?\s*[:=]\s*(\d[\d,]*(?:\.\d+)?)",
)
#: the unit of a line's rate, where it says one
RATE_UNIT = (r"(?i)(" + "|".join(progress_messages.RATE_UNITS) + "|token/s|tokens?/s(?:ec)?|tok/s|samples/s(?:ec)?|images/s(?:ec)?|"
             r"imgs?/s(?:ec)?|iter/s|it/s|steps?/s|"
             r"tps|wps|\bips\b|" + WORDED_UNIT + r" per second|"
             r"[GT]FLOPS|tokens?/gpu/s\w*|tgs|SamplesPerSec|[a-z_]*?" + UNIT_KEY + ")")
#: where a field named ``time`` starts: the line's start, a separator or a figure before it, then the word
#: with what it times (``iter time``, ``step_time``, ``time/batch``)
TIME_FIELD = (r"(?i)(?:^|[,|;(){}\[\]]|\d)\s*(?:(?:iter|iteration|step|batch|train)[ _])?time"
              r"(?:[/_ ](?:per[_ ])?(?:step|iter|iteration|batch))?")
#: a line that is only a duration in seconds, or in milliseconds
BARE_TIME = r"^\s*(\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds)\s*$"
BARE_TIME_MS = r"^\s*(\d+(?:\.\d+)?)\s*ms\s*$"
#: seconds per step a progress line prints: (pattern, factor to seconds)
TIMES = (
    # (s18) the runtimes' own times per step read from their printing code (tracekit/progress_messages.py:
    # MaxText's `completed step: 9, seconds: 1.341`)
    *((p, f) for p, f, _ in progress_messages.TIMES),
    (r"elapsed[ _]time[ _]per[ _]iteration[ _]\(?ms\)?:?\s*([\d.]+)", 1e-3),
    # (s20) a line that holds only a duration, printed again and again (a script's own timer: Python's
    # `print(time.time() - t0, " s")` writes `88.0555248260498  s`, print's separator then the literal's
    # space): the time of the interval between two prints, as every other figure here (``pace.cumulative``
    # tells a timer that counts up from the start)
    (BARE_TIME, 1.0),
    (BARE_TIME_MS, 1e-3),
    (r"'elapsed_s': ([\d.]+)", 1.0),
    # (s29) a field of a comma-separated line that is only a duration (MXNet's tools/bandwidth/measure.py
    # `iter 1, 0.113931 sec, 2.264454 GB/sec per gpu, ...`): the time of that iteration
    (r"(?:^|,)\s*(\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds)\s*(?:,|$)", 1.0),
    (r"\(([\d.]+) sec\)", 1.0),  # TensorFlow's estimator: the seconds of the steps since its last line
    (r"([\d.]+)\s*s/it\b", 1.0),
    # (RETURNN's `step 37, ce 5.456, ..., 3.169 sec/step`: returnn/torch/engine.py)
    (r"([\d.]+)\s*(?:s|sec|secs)/(?:step|iter|batch)\b", 1.0),
    # the unit before the figure (PyTorch's word_language_model: `| ms/batch 45.21 |`)
    (r"(?i)\bms/(?:step|iter|batch)\s*[:=]?\s*([\d.]+)", 1e-3),
    (r"([\d.]+)\s*ms/step\b", 1e-3),
    (r"(?i)\bstep[_ ]time(?: \(s\))?[:=]\s*([\d.]+)\s*s?\b", 1.0),
    (r"(?i)\btime[/_ ]?(?:per[_ ])?(?:step|iter(?:ation)?)[:=]\s*([\d.]+)\s*ms\b", 1e-3),  # (s25: `Time per
    # iteration: 45.3 ms`, its unit after the figure)
    (r"(?i)\btime[/_ ]?(?:per[_ ])?(?:step|iter(?:ation)?)[:=]\s*([\d.]+)\b", 1.0),
    (r"(?i)\bbatch \(t\):\s*([\d.]+)", 1.0),
    # nanoGPT's `iter 100: loss 4.2345, time 123.45ms, mfu 35.12%`, modded-nanogpt's `step_avg:123.45ms`
    (r"(?i)\b(?:time|step_avg|iter_time|batch_time|step_time)[:= ]\s*([\d.]+)\s*ms\b", 1e-3),
    (r"(?i)\b(?:step_avg|iter_time|batch_time)[:= ]\s*([\d.]+)\s*s\b", 1.0),
    (r"\b([\d.]+)\s*(?:s|sec|seconds) (?:run|per (?:step|iter(?:ation)?|batch))\b", 1.0),
    # a field named `time` of any template (mmcv's `eta: 2 days, 11:55:36, time: 6.434, data_time: 5.763`,
    # MMF's `val_loss: 3.38 time(s): 307.7 s`, `iter time: 1.23s`, `time (ms): 812`): the word starts a
    # field (after a separator or a figure, never a word: `elapsed time`, `total time`, `data_time` are
    # no time per step), its unit in brackets or after the figure, seconds where none is said
    (rf"{TIME_FIELD}\s*\(ms\)\s*[:=]\s*([\d.]+)", 1e-3),
    (rf"{TIME_FIELD}\s*[:=]\s*([\d.]+)\s*ms\b", 1e-3),
    (rf"{TIME_FIELD}(?:\s*\((?:s|sec|seconds)\))?\s*[:=]?\s*([\d.]+)(?:\s*(?:s|sec|secs|seconds)\b"
     r"|[^\w.:]|$)", 1.0),
)
#: a template with one of these words is an error, a warning, a retry or a wait repeated: never progress
NOT_PROGRESS = (r"(?i)\b(?:error|errors|fail\w*|retr(?:y|ies|ying)|attempt\w*|exception|timed? ?out|"
                r"refused|unable|cannot|could not|warn\w*|wait(?:ing)? (?:for|on)|sleep\w*|reconnect\w*|"
                r"restart\w*|"
                r"countdown|remaining|abort\w*|killed|hang\w*|stuck|no progress)\b"
                r"|\d+%\|| \[=+>?|\bit/s\]|s/it\]"
                # a tqdm bar with no total (HF datasets' `Map (num_proc=1): 800 examples [00:00, 2296.35
                # examples/s]`): its elapsed time and rate in brackets
                r"|\[\d+:\d\d(?::\d\d)?(?:<[\d:?]+)?,\s*[\d.?]+\s*[\w ]*/\w+\]"
                # an evaluation's results, not a step (transformers trainer.py `evaluate`: its metrics keyed
                # `{metric_key_prefix}_...`, `eval_loss`, `eval_runtime`; two of them with a rising
                # global_step are two evaluations, each at a step another line already counts)
                r"|^\s*\{\s*['\"]eval_\w+['\"]\s*:")
#: (s29) ``error`` before a decimal figure is a measured error, no failure: taken out of a line before
#: ``NOT_PROGRESS`` is asked (MXNet's tools/bandwidth/measure.py `iter 1, 0.113931 sec, 2.264454 GB/sec per
#: gpu, error 0.000000`, its `logging.info('iter %d, %f sec, %f GB/sec per gpu, error %f', ...)`; a model's
#: `val_error: 0.0821`, nccl-tests' error column `2e-07` is its own parser's)
MEASURED_ERROR = r"(?i)\b(?:\w+_)?error\s*[:=]?\s*[-+]?\d+\.\d+(?:e[-+]?\d+)?"
#: a rank a line names at its start
NAMED_RANK = r"(?i)^\W{0,3}rank\s*[:=#]?\s*(\d+)\b"
#: a logger header's level, within the line's first characters
LEVEL = r"^.{0,60}?\b(?:WARNING|WARN|W|INFO|I)\b"
#: a number a counter word names (its text in front: ``batch 50``, ``iteration: 991``, ``Step: 2/951``; not a
#: rendezvous' ``round 3``: rounds rise as workers restart)
#: (s25: Pax's `step_i: 100, training loss: 2.34`, paxml/programs.py `logging.info('step_i: %d, training loss:
#: %s', step_i, loss)`: a counter word with an index suffix)
# (s30: ``it`` as scripts shorten the iteration, ``it: 20, loss: 2.10, lr: 0.001``)
COUNTER = (r"(?i)(?:^|[^\w])(?:global_step|step|steps|iter|iters|iteration|it|update|updates|num_updates|"
           r"batch|consumed_samples|consumed_tokens|samples)(?:_(?:i|idx|num))?[\s:=#\[]{0,4}$")
EPOCH = r"(?i)(?:^|[^\w])epoch[\s:=#\[]{0,4}$"
#: a line of a loop's progress names what it counts
WORDED = r"(?i)\b(?:step|iter|iteration|epoch|batch|update|samples|tokens)s?\b"
#: the words a line must hold to be looked at (cheap; most lines of a big log hold none)
CANDIDATE = (r"(?i)step|iter|epoch|batch|update|sample|token|throughput|loss|/s\b|/sec\b|per_sec|wps|flops|"
             r"time|"
             r"\d\s*/\s*\d|^\s*\d+\s|" + BARE_TIME + "|" + BARE_TIME_MS)
#: the fewest lines of one template that make a series
MIN_LINES = 3
#: the fewest where a counter on them rises (s23): two points of one loop are progress, one is a snapshot
MIN_COUNTED = 2
#: (s24, issue 31) a line of a loop printed once in the excerpt that still says a step of it done: a counter
#: word and its number (group 1; group 2 the loop's total where an ``N/M`` says it; an epoch counts only with
#: its total, `[epoch 3/10]`), with the loss, a pace figure (``RATES``, ``TIMES``) or that total beside it.
#: What programs print: icefall's `Epoch 1, batch 50, loss[loss=1.621, ...], tot_loss[...], batch size: 138`
#: (k2-fsa/icefall egs/librispeech/ASR/*/train.py `logging.info(f"Epoch {params.cur_epoch}, " f"batch
#: {batch_idx}, loss[{loss_info}], " ...)`), torchtitan's `step: 10  loss:  1.5568  memory: ...  wps: 1,786
#: mfu: 10.46%` (pytorch/torchtitan train.py `f"{color.cyan}step: {train_state.step:2}  " f"{color.green}loss:
#: ..." f"{color.blue}wps: {round(wps):,}  " f"{color.magenta}mfu: {mfu:.2f}%"`). A log excerpt often holds one
#: such line; one line is a snapshot of the loop (the rules say so), never a series' trend.
LONE_COUNTER = (r"(?i)(?:^|[^\w])(?:global_step|steps?|iter|iteration|batch|update)(?:_(?:i|idx|num))?"
                r"[\s:=#\[]{0,4}(\d+)(?:\s*/\s*(\d+))?(?:$|[^\w.]|\.(?:$|\D))")  # (not `iteration: 45.3 ms`)
LONE_EPOCH = r"(?i)(?:^|[^\w])epoch[\s:=#\[]{0,4}(\d+)\s*/\s*(\d+)\b"
#: (s33b, issue 31) a line that opens on its epoch, then the loop's figures as ``| key: number`` fields: the
#: PyTorch DDP tutorial's trainer (github:pytorch/examples distributed/ddp-tutorial-series multinode.py
#: `print(f"[GPU{self.global_rank}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {len(self.train_data)}")`, its
#: rank taken off by parsers/prefixes.py): one epoch of that rank begun, the epoch its step (its ``Steps:`` the
#: batches of each epoch, no counter); printed once by each rank, a lone line of each (samples/wild dv28-012).
#: Not where a field counts steps (DeepSpeed-Chat's `epoch: 0|step: 391|ppo_ep: 1|act_loss: ...`: the step
#: is ``LONE_COUNTER``'s)
EPOCH_FIELDS = r"(?i)^\W{0,3}epoch[\s:=#]{0,3}(\d+)\s*\|\s*[A-Za-z][\w ]{0,30}:\s*\d"
STEP_FIELD = r"(?i)\b(?:global_step|step|iter|iteration|update)\s*[:=]\s*\d"
LONE_LOSS = r"(?i)\bloss\b\W{0,3}(?:loss=)?[-+]?\d"
#: the loss's figure on a report (group 1)
LOSS_FIGURE = r"(?i)\bloss\b\W{0,3}(?:loss=)?([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
#: (s24, issue 31) a serving engine's periodic stat line printed once or twice (three or more are a series):
#: requests running and tokens generated per second, both above 0, say it serves (a line with requests
#: running and nothing generated is a stall, and stays undecoded). vLLM's `Avg prompt throughput: 120.3
#: tokens/s, Avg generation throughput: 38.5 tokens/s, Running: 4 reqs, ...` (vllm/engine/metrics.py
#: LoggingStatLogger.log; rules_seen.SERVER_STATS), SGLang's `Decode batch. #running-req: 1010, #token:
#: 55006, token usage: 0.93, gen throughput (token/s): 1397.13, #queue-req: 12279` (sglang
#: python/sglang/srt/managers/scheduler.py's decode log, as samples/wild/dv16-031-*.txt holds it)
SERVED = (r"Avg generation throughput: (?P<gen>[\d.]+) tokens/s, Running: (?P<running>\d+) reqs",
          r"#running-req: (?P<running>\d+),.*\bgen throughput \(token/s\): (?P<gen>[\d.]+)")
#: (s26, issue 31) a line that holds only a pace, after a label or none: how a user pastes the speeds of two
#: runs side by side (tqdm's ``2.59 s/it`` / ``2.61 it/s`` read off its bar, ``Single GPU: 1.2 s/step``); group
#: ``v`` the figure, ``unit`` its unit. Two or more in a file are ``progress`` events ``where="compared"``, the
#: label line before a bare figure (one that ends with ``:``) joined in front of it
PACE_ALONE = (r"(?i)^\W{0,3}(?:(?P<label>[A-Za-z][^:=]{0,80})[:=]\s*)?(?P<v>\d+(?:\.\d+)?)\s*"
              r"(?P<unit>s/it|sec/it|it/s|s/step|sec/step|steps?/s|ms/step|ms/it|samples/s(?:ec)?|tokens/s(?:ec)?"
              r"|img/s(?:ec)?|images/s(?:ec)?)\W{0,3}$")
#: the characters of the masked line that name its template
KEY = 80
#: what stands for a number in a template (a character no log line holds: a line's own `#` stays apart)
MASK = "\x01"


def template(t: pl.Expr) -> pl.Expr:
    """The line with its numbers masked, its spacing and trailing separators evened out (a right-aligned
    counter, a `` |`` one line ends with and the next does not)."""
    return t.str.replace_all(NUMBER, MASK).str.replace_all(r"\s+", " ").str.strip_chars(" |,;")


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("series")
    t = pl.col("text")
    said_ts = pl.col("raw").str.extract(trainer.STAMP, 1) if "raw" in lines.columns else pl.lit(None, pl.Utf8)
    tags = [c for c in ("rank_tag", "mpi_rank", "launch_rank") if c in lines.columns]
    # (the launcher's prefix first, then a rank the line names at its start: `Rank 1: iter 10 ...`)
    rank = pl.coalesce(*tags, t.str.extract(NAMED_RANK, 1).cast(pl.Int64, strict=False))
    # (s30) a program's own timing lines printed again and again (parsers/timings.py), under this parser's own
    base = (lines.filter(~t.str.contains(any_of(*trainer.STEP_PATTERNS)))
            .select("file", "line", "text", pl.coalesce("ts", said_ts).alias("ts"), rank.alias("rank")))
    timed = timings.parse(base)
    cand = base.filter(t.str.contains(CANDIDATE) & t.str.contains(r"\d")).with_columns(template(t).alias("_full"))
    # one template: the same first KEY characters once masked (nanotron adds memory figures to some lines)
    # (a logger header's level is no warning of the line's own: icefall logs its progress at WARNING)
    said = t.str.replace(LEVEL, "").str.replace_all(MEASURED_ERROR, "")
    cand = cand.filter(~said.str.contains(NOT_PROGRESS)).with_columns(
        pl.col("_full").str.slice(0, KEY).alias("_tmpl"))
    counts = cand.group_by("file", "_tmpl").agg(pl.len().alias("_n"))
    # (s25) a template printed once by each rank (`[rank0]: step 10 time 0.512s`, `[rank1]: step 10 ...`) is a
    # lone line of each: one step of the loop seen on every rank that printed it
    per_rank = cand.group_by("file", "_tmpl").agg(pl.col("rank").n_unique().alias("_r"), pl.len().alias("_n"),
                                                  pl.col("rank").null_count().alias("_none"))
    each_once = per_rank.filter((pl.col("_n") > 1) & (pl.col("_r") == pl.col("_n")) & (pl.col("_none") == 0))
    once = cand.join(pl.concat([counts.filter(pl.col("_n") == 1).select("file", "_tmpl"),
                                each_once.select("file", "_tmpl")]), on=["file", "_tmpl"], how="semi")
    few = cand.join(counts.filter(pl.col("_n") < MIN_LINES), on=["file", "_tmpl"], how="semi")
    lone = pl.concat([timed, _lone(once), _served(few), _compared(lines)], how="diagonal_relaxed")
    cand = cand.join(counts.filter(pl.col("_n") >= MIN_COUNTED), on=["file", "_tmpl"], how="semi")
    if not cand.height and not lone.height:
        return Parsed("series")
    took = pl.coalesce(*(t.str.extract(p, 1).cast(pl.Float64, strict=False) * f * 1e3 for p, f in TIMES))
    paced = t.str.contains(any_of(*RATES)) | took.is_not_null()
    cand = cand.with_columns(took.alias("duration_ms"), paced.alias("_paced"),
                             t.str.extract_all(NUMBER).alias("_nums"))
    frames = [lone] if lone.height else []
    for (file, tmpl), g in cand.sort("file", "line").group_by("file", "_tmpl", maintain_order=True):
        step = _counter(g)
        if step is None and (g["_paced"].sum() < MIN_LINES or g.height < MIN_LINES):
            if (g.height >= MIN_LINES and g["text"].str.contains(LONE_LOSS).all()
                    and g["text"].str.extract(LOSS_FIGURE, 1).n_unique() > 1):
                # (s26) a loss reported again and again with no counter and no pace (`[rank 0] loss: 2.3451`):
                # reports of a loop that moves, ``step`` events with no step, ``where="loss_reports"``
                frames.append(g.with_columns(pl.lit(EventKind.STEP).alias("kind"), pl.lit(None, pl.Int64).alias("step"),
                                             pl.lit(None, pl.Int64).alias("max_steps"),
                                             pl.lit("loss_reports").alias("where")))
            continue  # (no counter that rises: a pace printed on MIN_LINES lines or more, else nothing)
        kind = EventKind.STEP if step is not None else EventKind.PROGRESS
        frames.append(g.with_columns(pl.lit(kind).alias("kind"),
                                     (step if step is not None else pl.lit(None, pl.Int64)).alias("step"),
                                     pl.lit(None, pl.Int64).alias("max_steps")))
    if not frames:
        return Parsed("series")
    frames = [f.with_columns(pl.col("where").fill_null("series")) if "where" in f.columns
              else f.with_columns(pl.lit("series").alias("where")) for f in frames]
    events = pl.concat([f.select("file", "line", "ts", "rank", "kind", "text", pl.col("step").cast(pl.Int64),
                                 pl.col("max_steps").cast(pl.Int64), pl.col("duration_ms").cast(pl.Float64),
                                 pl.col("where").cast(pl.Utf8))
                        for f in frames]).unique(["file", "line"], keep="last", maintain_order=True).sort(
        "file", "line").select("file", "line", "ts", "rank", "kind", t.alias("message"), "step", "max_steps",
                               "duration_ms", "where")
    # (a step line whose time only parsers/timings.py reads, `iteration 12 took 1.1s`: its figure kept, where
    # the line prints no rate, which stays its pace: MLPerf's `avg train utts/s 15471 | took 18.00 s`)
    rated = pl.col("message").fill_null("").str.contains(any_of(*RATES))
    events = events.join(timed.select("file", "line", pl.col("duration_ms").alias("_timed")),
                         on=["file", "line"], how="left").with_columns(
        pl.when(rated).then(pl.col("duration_ms")).otherwise(pl.coalesce("duration_ms", "_timed"))
        .alias("duration_ms")).drop("_timed")
    return Parsed("series", {"events": events}, events.select("file", "line"))


def _lone(cand: pl.DataFrame) -> pl.DataFrame:
    """The lines printed once (their template not repeated) that say a step of a loop done (``EPOCH_FIELDS``,
    or ``LONE_COUNTER`` or ``LONE_EPOCH`` with the loss, a pace or the loop's total): ``step`` events, the
    counter as the step, its total as ``max_steps``, the time per step where the line prints one."""
    t = pl.col("text")
    step = t.str.extract_groups(LONE_COUNTER)
    epoch = t.str.extract_groups(LONE_EPOCH)
    fields = pl.when(~t.str.contains(STEP_FIELD)).then(t.str.extract(EPOCH_FIELDS, 1))
    n = pl.coalesce(fields, step.struct.field("1"), epoch.struct.field("1")).cast(pl.Int64, strict=False)
    total = (pl.when(fields.is_not_null()).then(pl.lit(None, pl.Utf8))
             .when(step.struct.field("1").is_not_null()).then(step.struct.field("2"))
             .otherwise(epoch.struct.field("2")).cast(pl.Int64, strict=False))
    took = pl.coalesce(*(t.str.extract(p, 1).cast(pl.Float64, strict=False) * f * 1e3 for p, f in TIMES))
    sign = (t.str.contains(LONE_LOSS) | t.str.contains(any_of(*RATES)) | took.is_not_null()
            | fields.is_not_null())
    got = cand.with_columns(n.alias("step"), total.alias("max_steps"), took.alias("duration_ms"))
    return (got.filter(pl.col("step").is_not_null() & (sign | pl.col("max_steps").is_not_null())
                       & (pl.col("max_steps").is_null() | (pl.col("step") <= pl.col("max_steps"))))
            .with_columns(pl.lit(EventKind.STEP).alias("kind")))


def _served(cand: pl.DataFrame) -> pl.DataFrame:
    """A serving engine's stat lines too few for a series (``SERVED``) with requests running and tokens
    generated: ``progress`` events with no step."""
    t = pl.col("text")
    gen = pl.coalesce(*(t.str.extract(p, 1 if p.index("gen") < p.index("running") else 2) for p in SERVED))
    running = pl.coalesce(*(t.str.extract(p, 2 if p.index("gen") < p.index("running") else 1) for p in SERVED))
    got = cand.with_columns(gen.cast(pl.Float64, strict=False).alias("_gen"),
                            running.cast(pl.Int64, strict=False).alias("_running"))
    return (got.filter((pl.col("_gen") > 0) & (pl.col("_running") > 0))
            .with_columns(pl.lit(EventKind.PROGRESS).alias("kind"), pl.lit(None, pl.Int64).alias("step"),
                          pl.lit(None, pl.Int64).alias("max_steps"),
                          pl.lit(None, pl.Float64).alias("duration_ms"))
            .drop("_gen", "_running"))


def _compared(lines: pl.DataFrame) -> pl.DataFrame:
    """The lines that hold only a pace (``PACE_ALONE``), two or more in a file: ``progress`` events
    ``where="compared"`` (a user's runs side by side), a bare figure's label line joined in front of it."""
    t = pl.col("text")
    said = lines.filter(t.str.strip_chars() != "").sort("file", "line").with_columns(
        t.shift(1).over("file").alias("_before"))
    got = said.filter(t.str.contains(PACE_ALONE) & ~t.str.contains(NOT_PROGRESS))
    got = got.filter(pl.len().over("file") >= 2)
    if not got.height:
        return got.select("file", "line")
    bare = t.str.extract_groups(PACE_ALONE).struct.field("label").is_null()
    labelled = bare & pl.col("_before").fill_null("").str.strip_chars().str.ends_with(":")
    text = pl.when(labelled).then(pl.col("_before").str.strip_chars() + " " + t.str.strip_chars()).otherwise(t)
    v = t.str.extract_groups(PACE_ALONE)
    unit = v.struct.field("unit").str.to_lowercase()
    fig = v.struct.field("v").cast(pl.Float64)
    took = (pl.when(unit.is_in(["s/it", "sec/it", "s/step", "sec/step"])).then(fig * 1e3)
            .when(unit.is_in(["ms/step", "ms/it"])).then(fig))
    tags = [c for c in ("rank_tag", "mpi_rank", "launch_rank") if c in lines.columns]
    rank = pl.coalesce(*tags) if tags else pl.lit(None, pl.Int64)
    return got.select("file", "line", pl.col("ts") if "ts" in got.columns else pl.lit(None, pl.Utf8).alias("ts"),
                      rank.cast(pl.Int64).alias("rank"), text.alias("text"),
                      pl.lit(EventKind.PROGRESS).alias("kind"), pl.lit(None, pl.Int64).alias("step"),
                      pl.lit(None, pl.Int64).alias("max_steps"), took.alias("duration_ms"),
                      pl.lit("compared").alias("where"))


def _counter(g: pl.DataFrame) -> pl.Series | None:
    """The values of the template's counter on each of its lines, or None where no field counts: the
    numbers a counter word names first, then the ``N`` of an ``N / M`` whose ``M`` stays in a line a
    counter word is in (not a build's ``[3/12] c++ ...``, a loader's ``file 3/100``), then a leading
    number on lines that print their pace, then an epoch; the first that never falls and rises (a leading
    number: strictly), on each rank's lines."""
    parts = re.split(NUMBER, g["text"][0])  # the text around each number
    full = g["_full"]
    same = len(os.path.commonprefix(full.to_list()))  # the numbers in it are the same fields on every line
    width = min(full[0][:same].count(MASK), g["_nums"].list.len().min())
    cols = [g["_nums"].list.get(i).cast(pl.Float64, strict=False) for i in range(width)]
    order = []
    for i, before in enumerate(parts[:width]):
        after = parts[i + 1]
        if re.search(COUNTER, before):
            order.append((0, i))
        elif (re.match(r"^\s*/\s*$", after) and i + 1 < len(cols) and cols[i + 1].n_unique() == 1
              and (re.search(WORDED, g["text"][0]) or re.search(LONE_LOSS, g["text"][0]))):
            # (s30: a loop's ``[20/100] loss=2.10 lr=0.001`` names no counter word, its loss says the loop)
            order.append((1, i))
        elif i == 0 and not before.strip() and g["_paced"].all():
            order.append((2, i))
        elif re.search(EPOCH, before):
            order.append((3, i))
    for rank, i in sorted(order):
        v = cols[i]
        if v.null_count() or (v != v.round()).any():
            continue
        # (each rank's lines on their own: ranks that print into one file interleave, each at its pace)
        d = pl.DataFrame({"v": v, "r": g["rank"]}).select(pl.col("v").diff().over("r"))["v"].drop_nulls()
        if not d.len() or (d < 0).any() or not (d > 0).any() or (rank == 2 and (d <= 0).any()):
            continue
        return v.cast(pl.Int64)
    return None
