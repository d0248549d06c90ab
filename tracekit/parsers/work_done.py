"""A program's own word that its work is done, in the words any program uses (issue 31, session 25: the
excerpts an expert calls healthy that tracekit read as "no step or end among them").

parsers/trainer.py reads the end lines of the programs it knows by name (``PROGRAM_END``, and
``progress_messages.ENDS`` from their printing code); this module reads the same fact where it is said in
general words, by the shape of the sentence, and is called from ``trainer.parse``:

- **a finish sentence** whose subject is the work (``Training finished successfully``, ``Benchmark
  completed``, ``Finished training after 1000 steps``, ``All ranks done``, ``Job completed``) or a rank
  (``Rank 1 finished, time taken: 12.4 s``, ``rank 0: done``), after a logger's header or none: what the
  scripts of issue threads print last (``print(f"Rank {rank} finished")``, ``logger.info("Training
  finished")``), or at its end (s29: the DDP tutorial's ``Finished running basic DDP example on rank 0.``);
- **a result summary**: a figure the program measured over the whole run, named as such (``Average
  throughput: 812.3 samples/s``, ``Total time: 123.4 s``, ``Final loss: 0.12``, PyTorch's mnist example
  ``Test set: Average loss: 0.0266, Accuracy: 9916/10000 (99%)`` (pytorch/examples mnist/main.py ``test``));
- **a rank's own result**: a line that names its rank and prints what it measured or computed
  (``Rank 0: average time per iteration 12.3 ms, throughput 812.3 samples/s``, ``[rank1] all_reduce
  result: tensor([3.])``), or MPI's hello world (mpitutorial.com's mpi_hello_world.c ``printf("Hello world
  from processor %s, rank %d out of %d processors\\n", ...)``): the rank ran its program to that line.
  (s30) The rank named after the subject (``Result on rank 1: 1.0``), a tensor's value after its collective
  under a launcher's rank tag (``[1] after allreduce: tensor([3.])``), a collective said to have worked
  (``rank 0: allreduce success``, ``all_reduce result: 2.0``); never the values of one all-reduce or
  broadcast that differ between ranks (``_disagree``: corrupted data, not a result).

A bare ``Done!`` is not read: torchvision's dataset download prints ``Processing...`` then ``Done!``
(samples/wild/dv17-005: a job silent after it), as many set-up steps end.

Each is a ``program_end`` event (``where``: ``program`` for a finish sentence, ``result`` for a summary or
a rank's result (s28: the work's time once done, a results banner or an evaluation's table), ``saved`` for
the work saved), its rank where the line names one. Never a set-up's end (``Finished loading weights``,
``init done``, ``Completed store-based barrier``: start-up, not work), a part of the work
(``Epoch 3 finished``: the next one follows), a sentence that goes on to a failure (``finished with
errors``, ``completed with exit code 1``) or any line with an error word.
"""

from __future__ import annotations

import polars as pl

from tracekit.schema import EventKind

#: where a sentence starts: the line's start, or after a logger's header (``... - INFO - ``, glog's
#: ``train.py:120] ``, ``INFO:root:``, loguru's ``| INFO | mod:fn:12 - ``)
START = (r"(?:^|\]:?\s+|\s[-|]\s+|\bINFO\b:?\s+|^[A-Z]+:[\w.]+:"
         # (s31) after the rank the script names first, ``Rank 0: Test passed``, ``rank 1, training done``
         r"|^\W{0,3}(?:rank|process|worker)\s*[:=#]?\s*\d+\b\]?\s*[:,]\s+)")
#: the work a finish sentence is about
WORK = (r"(?:training|train|fine-?tuning|pre-?training|benchmark(?:ing)?|bench|tests?|testing|evaluation|eval"
        r"|inference|generation|run|job|workload|experiment|script|program|task|execution|executing"
        r"|all (?:ranks|processes|workers"
        r"|tasks|jobs)|every rank)")
DONE = r"(?:finished|completed?|done|succeeded|ended|passed|success(?:ful(?:ly)?)?)"
#: the work said finished (``Training finished``, ``Benchmark completed successfully``, ``Finished
#: training``, ``Successfully completed the benchmark``; s26: a word naming a test or a benchmark before it,
#: ``all_reduce test PASSED``, ``NCCL benchmark completed``; an evaluator's ``Engine run complete`` stays a part)
FINISHED = (rf"(?i){START}(?:the |all |our )?(?:{WORK}|[\w\-]+ (?:tests?|benchmark|bench))\s+"
            rf"(?:is |has |was |have )?(?:been )?"
            rf"(?:successfully |all )?{DONE}\b"
            rf"|(?i){START}(?:successfully )?(?:finished|completed)\s+(?:the |all )?{WORK}\b")
#: (s25) the end in any subject's words where they say it went well: an IDE's run console (PyCharm's `Process
#: finished with exit code 0`), a process that exited 0, anything `finished successfully` (a set-up step's is
#: no work: ``FAILED`` takes it out)
ENDED_WELL = (r"(?i)\bProcess finished with exit code 0\s*$"
              # (s28) a launcher's own word that what it ran finished with 0 (ezpz's `[I][ezpz/launch] Execution
              # finished with 0.`, samples/wild dv30-014), a job's `finished with exit code 0`
              r"|\b(?:finished|completed|ended|terminated|returned)\s+with\s+(?:(?:exit |return )?(?:code|status)\s+)?0"
              r"\s*[.!]?\s*$"
              r"|\bexited (?:normally )?with (?:exit )?(?:code|status) 0\b"
              r"|\b(?:finished|completed|ended|exited) (?:successfully|normally|cleanly)\b"
              # (s29) MLPerf's logger (mlcommons/logging mlperf_logging/mllog: `:::MLLOG {...}` one JSON object a
              # line): the benchmark's `run_stop` with `"status": "success"`, every MLPerf training reference's end
              r"|^\W{0,3}:::MLLOG \{.*\"key\": \"run_stop\".*\"status\": \"success\""
              # (s33) a job script's own echo of its command's exit status, `echo "RC=$? RUN_ID=..."`,
              # `echo EXIT_CODE=$?` (samples/wild dv48-007, dv31-014): 0, what the whole launch returned
              r"|^\W{0,3}(?:RC|EXIT_CODE|EXIT_STATUS|RETCODE|RET|rc|exit_code|exit_status|retcode)=0(?:\s|$)")
#: (s33b) the same echo of a non-zero status, `RC=250 RUN_ID=...` (samples/wild dv48-008): what the whole launch
#: returned, a failure of the job with its code (``events``: a ``child_failed`` of the job script); group ``code``
SCRIPT_FAILED = (r"^\W{0,3}(?:RC|EXIT_CODE|EXIT_STATUS|RETCODE|RET|rc|exit_code|exit_status|retcode)="
                 r"(?P<code>-?0*[1-9]\d{0,2})(?:\s|$)")
#: a rank said finished (``Rank 1 finished, time taken: 12.4 s``, ``[rank 0] done``, ``process 3 completed``;
#: s33 ``RANK 4: COMPLETE!``, samples/wild dv32-003); group ``rank``
RANK_DONE = (r"(?i)^\W{0,3}(?:rank|process|proc|worker)\s*[:=#]?\s*(?P<rank>\d+)\b\]?:?\s+(?:is |has )?"
             r"(?:successfully )?(?:finished|completed|complete\b|done"
             r"|exit(?:ed|ing) (?:normally|cleanly|successfully)"
             r"|exited with (?:code|status) 0\b)")
#: (s29) a finish sentence that names its rank at its end: PyTorch's DDP tutorial (pytorch/tutorials
#: intermediate_source/ddp_tutorial.rst ``print(f"Finished running basic DDP example on rank {rank}.")``, after
#: ``cleanup()``, copied into many scripts), ``Done training on rank 3``, ``Completed all steps for rank 1``;
#: group ``rank``
RANK_FINISHED = (rf"(?i){START}(?:finished|completed|done)\b[^\n]{{0,60}}?\b(?:on|for|by|from|of) rank\s*"
                 r"(?P<rank>\d+)\b\W{0,3}$")
#: a figure measured over the whole run, named as such: a word of the summary, then what it measures
SUMMARY = (r"(?i)(?:^|[\s\]|:-])(?:average|avg|mean|overall|final|total|test set|eval(?:uation)? result|"
           # (s31) a test over the trained model, printed once after its loop (``Test accuracy: 97.8%``), the best
           # figure over the run (``Best val acc: 0.92``)
           r"validation result|test|best)s?\b[\w /()\-]{0,40}?\b(?:time|throughput|speed|latency|bandwidth|busbw"
           r"|algbw|loss|accuracy|acc|perplexity|ppl|tokens/s|samples/s|img/sec|images/sec|it/s)\b[^\d\n]{0,20}\d"
           # (s31) PyTorch's CIFAR-10 tutorial (pytorch/tutorials beginner_source/blitz/cifar10_tutorial.py
           # ``print(f'Accuracy of the network on the 10000 test images: {100 * correct // total} %')``)
           r"|(?i)\bAccuracy of the (?:network|model) on (?:the )?\d+ test images: \d")
#: (s26) a benchmark's one summary line of its throughput over the run: vLLM's benchmarks/benchmark_throughput.py
#: ``print(f"Throughput: {len(requests) / elapsed_time:.2f} requests/s, {total_num_tokens / elapsed_time:.2f}
#: total tokens/s, ...")`` (older: ``..., N tokens/s``), and a script's ``Throughput: 812.3 samples/s``
THROUGHPUT = (r"(?i)^\W{0,3}(?:overall |total |measured )?throughput\s*[:=]\s*\d+(?:\.\d+)?\s*"
              r"(?:requests|reqs?|tokens|toks|samples|sequences|seqs|images|img|queries)/s(?:ec)?\b")
#: a serving engine's stat line of the last interval, never a summary over the run, printed once or not:
#: vLLM's `Avg prompt throughput: ... tokens/s, Avg generation throughput: ..., Running: 4 reqs` (vllm/engine/
#: metrics.py LoggingStatLogger.log, vllm/v1/metrics/loggers.py), SGLang's `#running-req: 1010, ...`
INTERVAL = r"\bAvg (?:prompt|generation) throughput\b|#running-req\b|\bRunning: \d+ reqs\b"
#: (s27) a model's generated output, printed once the generation is done: vLLM's offline examples
#: (examples/offline_inference/basic.py ``print(f"Prompt: {prompt!r}, Generated text: {generated_text!r}")``,
#: data_parallel.py's ``DP rank {global_dp_rank}, Prompt: ...``), copied into most scripts that call
#: ``llm.generate``; the text after it is the model's, no status (its words are not read)
GENERATED = (r"^\W{0,3}(?:DP rank \d+,\s+)?(?:Prompt: .{0,400}?,\s+)?(?:Producer )?Generated [Tt]ext: ?['\"]")
#: (s28) the time the whole work took, once it was done, in any program's words: a figure named as that time
#: (``Time taken: 12.3 s``, ``Elapsed time: 123.45 seconds``, ``Total execution time: 0:12:34``, ``Benchmark
#: duration (s): 19.53``), or a sentence that the work was done in so long (``Generated 256 tokens in 3.2s
#: (80.0 tok/s)``, ``Processed 1000 samples in 12.3 s``, ``Training finished in 12 min``: the work, not a side
#: task's ``Finished dumping profiler traces in 0.22 seconds``); a set-up's time (``Loaded weights in 9 s``) is
#: ``FAILED``'s, an epoch's or a step's (``Epoch 1 completed in 123.4s``) ``COUNTED``'s: a part, not the work
TOOK = (rf"(?i){START}\W{{0,3}}(?:total |overall |wall[- ]?(?:clock )?)?(?:time taken|elapsed(?: time)?|time elapsed"
        r"|run ?time|execution time|total time|time used|wall time|(?:benchmark |run |job )?duration)"
        r"\s*(?:\((?:s|sec|seconds|ms|min)\))?\s*[:=]\s*\d"
        rf"|(?i)(?:\b(?:generated|processed|trained|evaluated|served|answered)\b[^\n]{{0,60}}?"
        rf"|{START}(?:the |all )?{WORK}\s+(?:has |was )?(?:completed|finished|done)\b[^\n]{{0,20}}?"
        rf"|{START}(?:completed|finished)\s+(?:the |all )?{WORK}\b[^\n]{{0,20}}?)"
        r"\bin\s+\d+(?:\.\d+)?\s*(?:ms|s|sec|secs|seconds|min|mins|minutes)\b"
        # (s30) a total the work took, named by what it totals and given in a unit of time (gluoncv's Mask
        # R-CNN `Total Training with validation: 1526.16 secs`, samples/wild dv37-031, each rank at its end)
        rf"|(?i){START}\W{{0,3}}total\b[\w /()\-]{{0,40}}?[:=]\s*\d+(?:\.\d+)?\s*"
        r"(?:s|secs?|seconds|mins?|minutes|h|hours)\s*\.?\s*$")
#: (s28) the work saved, said in the past tense (``Epoch 4990 | Training snapshot saved at /fsx/snapshot.pt``,
#: pytorch/examples distributed/ddp-tutorial-series multinode.py ``_save_snapshot``; Ray Train's ``Training
#: saved a checkpoint for iteration 1 at: ...``; NeMo's ``Successfully saved checkpoint from iteration 10 to
#: ...``; transformers' ``Model weights saved in out/model.safetensors``): the steps before it done, their
#: state written; a save announced (``Saving checkpoint to``, ``Checkpoints will be saved to``) is not it
SAVED = (r"(?i)\b(?:checkpoint|snapshot|model|weights|state(?:_dict)?|adapter|ckpt)\w*\b[^\n]{0,40}?\b(?:saved|written"
         r"|stored)\b(?:\s+(?:to|at|in|into|under)\b|:)|\bsaved (?:a |the )?(?:checkpoint|snapshot|model|weights"
         r"|ckpt)\b")
#: a save still to come
WILL = r"(?i)\bwill\b|\bto be\b"
#: (s28) a results block's banner, then its figures (``key: number``): vLLM's and SGLang's serving benchmark
#: (vllm benchmarks/serve.py, sglang bench_serving.py ``print("{s:{c}^{n}}".format(s=" Serving Benchmark
#: Result ", n=50, c="="))``, then ``Successful requests:                     100``), any ``=== ... Results
#: ===`` or ``--- Summary ---`` banner a script prints over its figures
BANNER = (r"(?i)^\s*[=\-*#]{3,}\s*[\w ]{0,40}?\b(?:results?|summary|report|statistics|metrics)\b[\w ]{0,20}"
          r"[=\-*#]{3,}\s*$")
#: (s33) Megatron's evaluation after its training loop returned (Megatron-LM megatron/training/training.py
#: ``pretrain``: ``prefix = f'iteration {iteration} on validation set'`` (newer ``on N-sample draw from
#: validation set``), then ``on test set``; before, ``'the end of training for val data'``), printed by
#: ``evaluate_and_print_results`` as `` validation loss at {prefix} | lm loss value: ... |``: the loop's end and
#: its figures (the loop's own evaluations, ``validation loss at iteration 100 |``, are not it)
FINAL_EVAL = (r"^\W{0,3}(?:validation|valid|test) loss at (?:iteration \d+ on [\w\- ]{0,40}?\b(?:validation|"
              r"valid|test) (?:set|data)|the end of training for (?:val|valid|validation|test) data) \|"
              r"[^\n]*?\bvalue: ")
#: a figure under a banner: ``key: number`` (``Request throughput (req/s):              5.12``)
FIGURE = r"^\s*[A-Za-z][\w ()/%.,\-]{0,60}:\s+[-+]?\d"
#: (s30) the serving benchmark's output rate under its banner (vllm benchmarks/serve.py, sglang
#: bench_serving.py
#: ``print("{:<40} {:<10.2f}".format("Output token throughput (tok/s):", ...))``): its own result line, read by
#: rules_seen.serving_crawls (samples/wild dv33-011: 9.34 tok/s over 10 requests); group 1 the figure
SERVED_RATE = r"^\s*Output token throughput \(tok/s\):\s+(\d+(?:\.\d+)?)"
#: and its mean time per output token (``Mean TPOT (ms):                          353.32``)
SERVED_TPOT = r"^\s*Mean TPOT \(ms\):\s+(\d+(?:\.\d+)?)"
#: (s28) an evaluation's table of results: lm-evaluation-harness (lm_eval/utils.py make_table: ``|Tasks|Version
#: |Filter|n-shot|Metric| |Value| |Stderr|``, older ``|  Task  |Version| Metric |Value |``), OpenCompass's
#: summary (``dataset    version    metric    mode    <model>``), any piped table whose header names a
#: metric and its value; read where a row with a figure follows
EVAL_TABLE = (r"(?i)^\W{0,3}\|\s*(?:tasks?|groups?)\s*\|\s*version\s*\|"
              r"|(?i)^\W{0,3}\|.*\|\s*metrics?\s*\|.*\bvalue\b"
              r"|(?i)^\W{0,3}dataset\s+version\s+metric\s+mode\b")
#: a row of such a table with a figure in it
EVAL_ROW = r"(?i)^\W{0,3}(?:\|[^|\n]*)*\|?\s*[-+]?\d+\.\d+\s*(?:\||\s|$)|^\W{0,3}\S+\s+\w+\s+\w+\s+\w+\s+\d+\.\d+\s*$"
#: (s28) torch's word, as a process exits, that it never destroyed its process group (ProcessGroupNCCL's
#: destructor at exit: ``process group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal
#: program exit, ...``; torch 2.4+: ``WARNING: destroy_process_group() was not called before program exit``):
#: that rank's program reached its exit; calm only where nothing else failed (``where="exited"``)
EXITED = (r"destroy_process_group\(\) was not called before program exit"
          r"|process group has NOT been destroyed before we destruct ProcessGroupNCCL")
#: (s32) c10d's warning printed as a process terminates (torch/csrc/distributed/c10d/ProcessGroup.cpp,
#: ``~WorkRegistry``: ``Warning: At the time of process termination, there are still 1 unwaited collective
#: calls. Please review your program ...``): advice about async functional collectives, printed by a process
#: that is ending; its end (``where="terminated"``), no rank named, calm only where nothing else failed
TERMINATED = r"\bAt the time of process termination, there are still \d+ unwaited collective calls?\b"
#: (s32) a program's own word that a rank's work succeeded (``[rank 0] TP forward OK, out shape ...``,
#: ``Rank 1: test passed``, ``rank 0: outputs match``): on a line whose rank is named (its head, a launcher's
#: tag), after the file's last counted line (a check inside a loop is its progress)
SUCCEEDED = (r"(?i)\b(?:ok|okay|passed|success(?:ful(?:ly)?)?|succeeded|done|finished|completed?"
             r"|match(?:es|ed)?|correct|verified)\b")
#: (s32) a communicator's set-up step said done, not the work's (NVSHMEM's bootstrap, ``bootstrap_uid.cpp:
#: bootstrap_uid_allgather:503: rank 1 nranks 8 - DONE``, samples/wild dv50-003; NCCL's ``nranks`` lines)
SET_UP_DONE = r"(?i)\bnranks\b|\bbootstrap"
#: (s32) a success word alone on its line, past the rank's name (``[rank3]: done``): a launcher's or a step's
#: ``done`` as often as a program's (c3ce8eb), never a result by itself
BARE_WORD = (r"(?i)^\W*(?:(?:rank|process|proc|worker)\s*[:=#]?\s*\d+\W*)?"
             r"(?:ok|okay|done|finished|completed?|passed|success|succeeded)\W*$")
#: a line that names its rank at its start (``Rank 0:``, ``[rank1]``, ``rank=2``, ``process 3``); group
#: ``rank``
RANK_HEAD = r"(?i)^\W{0,3}(?:rank|process|proc|worker)\s*[:=#]?\s*(?P<rank>\d+)\b"
#: what a rank's result line holds: a value it computed, a time or a rate it measured
RESULT = (r"(?i)\bresult|\boutput\b|\bsum\b|\breduced\b|\bgathered\b|\bafter\b.*\btensor\(|\d\s*(?:ms|us|s|sec"
          r"|secs|seconds)\b|\d\s*[KMGT]?(?:B|b|bit|samples|tokens|images|img|it|iter|steps)/s(?:ec)?\b"
          r"|\bhello (?:world )?from\b"
          # (s26) the distributed tutorial's ``print('Rank ', rank, ' has data ', tensor[0])`` (pytorch/tutorials
          # intermediate_source/dist_tuto.rst), and a rank's line that is its tensor alone (``rank 1
          # tensor([2., 2.], device='cuda:1')``): the value the collective gave it
          r"|\bhas data\b.*\btensor\(|^\W{0,3}rank\s*[:=#]?\s*\d+\W{0,3}\s+tensor\(")
#: never a rank's result nor the end of the work: a failure, a wait, a set-up step (its end is no work done),
#: and a line of a value before the collective that makes it
FAILED = (r"(?i)\b(?:error|errors|fail\w*|exception|traceback|abort\w*|killed|timed? ?out|timeout|refused|"
          r"unable|cannot|could not|not|unsuccessful\w*|abnormal\w*|non-?zero|exit code [1-9]|signal|warn\w*|"
          r"retr(?:y|ying|ies)|waiting|hang\w*|stuck|load\w*|download\w*|init\w*|setup|set up|connect\w*|"
          r"rendezvous|barrier|compil\w*|warm-?up|build\w*|before|about to|start\w*|begin\w*|entering|calling"
          r"|input|sending)\b")
#: a finish that says it went wrong (``finished with errors``, ``completed with exit code 1``): no clean end,
#: whoever prints it (parsers/trainer.py's own end patterns are read through it too)
WENT_WRONG = (r"(?i)\b(?:with (?:errors?|failures?|exceptions?|exit (?:code|status) [1-9])|error|errors"
              r"|failed|failure|abort\w*|unsuccessful\w*|abnormal\w*|non-?zero)\b")
#: a part of the work said finished (``Epoch 3 finished``, ``iteration 10 done``): the next one follows
PART = r"(?i)\b(?:epoch|iteration|step \d|batch \d)"
#: a counter on a line: a progress line (parsers/series.py's), not a result over the run
COUNTED = r"(?i)\b(?:epoch|iter(?:ation)?|step|batch)\s*[:=#\[]?\s*\d"
#: (s32) a rank's line of one template printed this often is a series of reports, not its end's result
REPORTED = 3
#: (s32) the words that make a rank's line a result whatever its repeats (a value it computed or got)
SAYS_RESULT = r"(?i)\bresult|\boutput\b|\bsum\b|\breduced\b|\bgathered\b|\btensor\(|\bhas data\b|\bhello\b"
#: the rank a rank's result names: at its start (``RANK_HEAD``) or as MPI's ``rank 3 out of 4``
RANK_OF = r"(?i)\brank (?P<rank>\d+) (?:out )?of \d+\b"
#: (s30) the rank a result names after its subject (``Result on rank 1: 1.0``, ``all_reduce output from rank 2:
#: tensor([6.])``, ``sum for rank 0 = 6``): group ``rank``
RANK_ON = r"(?i)\b(?:on|from|for|at|by) rank\s*[:=#]?\s*(?P<rank>\d+)\b"
#: (s30) a value a collective gave, printed as torch prints a tensor after the word of what it is (``after
#: allreduce: tensor([3.], device='cuda:0')``, ``received tensor: tensor([1., 1.])``, ``output: tensor(...)``):
#: what a line under a launcher's rank tag (``[1] ...``, ``[rank1]: ...``) prints once its collective returned
TENSOR_RESULT = (r"(?i)\b(?:results?|reduced|gathered|received|after|output|broadcasted|sum)\b[^\n]{0,60}?"
                 r"\btensor\(\[?\s*[-+\d.]")
#: (s30) a collective said to have worked, in a script's words (``rank 0: allreduce success``, ``all_reduce
#: ok: 2.0``, ``broadcast check passed``, ``NCCL all_gather verified``, s31 ``Rank 0: all_reduce completed``): the collective returned with the
#: value the script expected; NCCL's own lines (``NCCL INFO ...``) are never it
COLLECTIVE_OK = (r"(?i)\b(?:all_?reduce|all_?gather|reduce_?scatter|broadcast|all_?to_?all|send/recv|p2p"
                 r"|collectives?)\b[^\n]{0,30}?(?:\b(?:success(?:ful(?:ly)?)?|succeeded|ok|passed|correct"
                 # (s31) ``Rank 0: all_reduce completed``, ``all_gather done on rank 1``: a collective returns only
                 # once every rank of its group took part in it
                 r"|verified|completed?|done|finished)\b|\bresults?\s*[:=]\s*[-+\d\[(t])")


#: (s30) the collectives after which every rank holds the same value
AGREED = r"(?i)\b(?:all_?reduce|broadcast(?:ed)?|bcast)\b"


def _disagree(t: pl.Expr) -> pl.Expr:
    """Lines of one template that print an all-reduce's or a broadcast's tensor with different values: after
    those collectives every rank holds the same value, so a rank's other value is data the transport corrupted
    (samples/wild/dv33-001: rank 10's ``broadcast result: tensor(-218.0041, ...)`` beside the others'
    ``-572.5027``, after its IB completion error), never a clean result."""
    value = t.str.extract(r"tensor\((.*?)(?:,\s*device=|\)\s*$)", 1)
    # (srun's tag left on the line where it is padded, ` 0: `, is no part of it)
    number = r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
    template = t.str.replace(r"^\s*\d{1,5}:\s+", "").str.replace_all(number, "#")
    return (t.str.contains(AGREED) & value.is_not_null()
            & (value.n_unique().over(pl.col("file"), template) > 1)).fill_null(False)


def events(df: pl.DataFrame) -> list[pl.DataFrame]:
    """The ``program_end`` events of ``df`` (``file``, ``line``, ``text``, ``ts``, ``rank``): a finish
    sentence, a result summary, a rank's result."""
    t = pl.col("text")
    calm = ~t.str.contains(FAILED)
    said = pl.col("text").str.strip_chars() != ""
    df = df.filter(said)
    sentence = ((t.str.contains(FINISHED) | t.str.contains(RANK_DONE) | t.str.contains(ENDED_WELL)
                 | t.str.contains(RANK_FINISHED))
                & ~t.str.contains(PART))
    # (s30: a launcher's rank tag, ``_tag``, names the rank of a tensor's value; ``RANK_ON`` after the subject)
    tag = pl.col("_tag") if "_tag" in df.columns else pl.lit(None, pl.Int64)
    ranked = (t.str.contains(RANK_HEAD) | t.str.contains(RANK_OF) | t.str.contains(RANK_ON)
              | (tag.is_not_null() & t.str.contains(TENSOR_RESULT)))
    nccl = t.str.contains(r"\bNCCL (?:INFO|WARN)\b")
    # (``time per iteration 12.3 ms`` names what a figure measures, no counter)
    per = r"(?i)\bper (?:iter(?:ation)?|step|batch|epoch)\b"
    counted = t.str.replace_all(per, "per_unit").str.contains(COUNTED)
    # (a summary is printed once: one printed again and again is an interval's, vLLM's `Avg prompt throughput:
    # ...` every 10 s, parsers/series.py's)
    shape = t.str.replace_all(r"\d+(?:\.\d+)?", "#").str.slice(0, 40)
    once = pl.len().over("file", shape) == 1
    # (a benchmark's table and its `#` comment lines are parsers/nccl_tests.py's and result_tables.py's)
    table = t.str.contains(r"^\s*(?:#|\d)")
    results = t.str.contains(RESULT) | t.str.contains(TENSOR_RESULT)
    said_ok = t.str.contains(COLLECTIVE_OK) & ~nccl  # (a collective said to have worked: a result, ranked or not)
    # (s32: a rank's line of one template printed three times or more, `[rank0] elapsed: 1.02s, loss: 0.6931`,
    # is that rank's report at each interval, progress: a time or rate on it is no result of its end)
    again = pl.len().over("file", shape, pl.coalesce("rank", tag).fill_null(-1)) >= REPORTED
    measured_only = ~t.str.contains(SAYS_RESULT)
    result = ((((t.str.contains(SUMMARY) | t.str.contains(THROUGHPUT)) & once)
               | (ranked & results & ~(again & measured_only)) | said_ok)
              & ~counted & ~table & ~t.str.contains(INTERVAL))
    said = pl.coalesce(t.str.extract(RANK_HEAD, 1).cast(pl.Int64, strict=False),
                       t.str.extract(RANK_OF, 1).cast(pl.Int64, strict=False),
                       t.str.extract(RANK_FINISHED, 1).cast(pl.Int64, strict=False),
                       t.str.extract(RANK_ON, 1).cast(pl.Int64, strict=False))
    named = pl.coalesce(said, "rank", tag)
    # (a line a process prints about another rank, under its own launcher tag: `[default0]:    Rank 1: 10.12ms`
    # in FlagScale's straggler report of rank 0 (samples/wild/torch-043), is no result of rank 1's own)
    # (one process, under one launcher prefix, that names several ranks on its result lines prints a table of
    # theirs)
    proc = pl.col("_proc") if "_proc" in df.columns else pl.lit(None, pl.Utf8)
    table_of = (result & said.is_not_null()).cast(pl.Int32).sum().over("file", proc) > 1
    others = proc.is_not_null() & table_of & (said.n_unique().over("file", proc, result) > 1)
    result = result & ~others & ~_disagree(t)
    generated = t.str.contains(GENERATED)
    # (a time the work took is printed once by each process at its end: once per rank named)
    once_each = pl.len().over("file", shape, pl.coalesce(said, "rank", tag).fill_null(-1)) == 1
    took = t.str.contains(TOOK) & once_each & ~counted
    # (a banner or a table header counts where its figures follow: within the next 3 lines of its file)
    after = [t.shift(-k).over("file").fill_null("") for k in (1, 2, 3)]
    block = ((t.str.contains(BANNER) & pl.any_horizontal(a.str.contains(FIGURE) for a in after))
             | (t.str.contains(EVAL_TABLE) & pl.any_horizontal(a.str.contains(EVAL_ROW) for a in after)))
    bannered = t.str.contains(BANNER).cast(pl.Int32).cum_sum().over("file") > 0
    block = block | ((t.str.contains(SERVED_RATE) | t.str.contains(SERVED_TPOT)) & bannered)
    df = df.sort("file", "line")
    # (a save on a loop's line, ``Epoch 4990 | Training snapshot saved at ...``, is that loop's: its progress)
    saved = t.str.contains(SAVED) & ~t.str.contains(WILL) & ~counted
    # (only in a file with no error: after a failure the same warning is the failed process's exit, and the
    # rules over the failure decide it, a set-up's failure being init-stall: samples/gpu_2x1_badiface)
    clean_file = ~t.str.contains(r"(?i)\berror|traceback|exception|\bfailed\b").any().over("file")
    exited = t.str.contains(EXITED) & clean_file
    # (a terminating process after a failure is the failed run's exit: a timeout, an abort, a signal too)
    failed = r"(?i)\berror|traceback|exception|\bfailed\b|timed? ?out|timeout|\babort|\bkilled\b|\bsignal\b"
    terminated = t.str.contains(TERMINATED) & ~t.str.contains(failed).any().over("file")
    # (s32: a rank's own word that its work succeeded, once per rank and template, past the last counted line)
    last_count = t.str.contains(COUNTED).cast(pl.Int32).cum_sum().over("file")
    past = last_count == last_count.max().over("file")
    succeeded = (t.str.contains(SUCCEEDED) & pl.coalesce(said, "rank", tag).is_not_null() & ~nccl & ~counted
                 & ~table & ~again & past & ~t.str.contains(SET_UP_DONE) & ~t.str.contains(BARE_WORD))
    result = result | succeeded
    final_eval = t.str.contains(FINAL_EVAL)
    result = result | final_eval
    got = df.filter((calm & (sentence | result | took | block | saved)) | generated | exited | terminated
                    ).with_columns(
        pl.lit(EventKind.PROGRAM_END).alias("kind"), t.str.strip_chars().alias("message"),
        pl.when(exited).then(pl.lit("exited")).when(terminated).then(pl.lit("terminated"))
        .when(sentence).then(pl.lit("program"))
        .when(saved & ~result & ~took & ~block).then(pl.lit("saved"))
        .otherwise(pl.lit("result")).alias("where"),
        named.alias("rank"))
    code = t.str.extract(SCRIPT_FAILED, 1).cast(pl.Int64, strict=False)
    echoed = df.filter(code.is_not_null()).with_columns(
        pl.lit(EventKind.CHILD_FAILED).alias("kind"), code.alias("exit_code"), pl.lit("job script").alias("where"),
        pl.format("the job script: its command exited with status {} (`{}`)", code, t.str.strip_chars())
        .alias("message"))
    return [f for f in (got, echoed) if f.height]

