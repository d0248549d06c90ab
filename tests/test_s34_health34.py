"""Session 34, health34: a program's own output that shows a healthy run.

Covers parsers/result_block.py (a block of measured figures, no banner over it, that closes a file: vLLM's
benchmarks/benchmark_latency.py ``Avg latency: ... seconds`` and its percentile lines, an inference script's
``Prefill time`` / ``Decode time`` / ``Throughput`` block): a ``program_end`` of ``where="result"`` and every
line of it known; not a series (a key repeated), a settings block (``timeout``, ``port``), a start-up's timings
only (``Time to load ...``), a block with a failure's word or one that does not close its file. And the verdict
over it: healthy with the block quoted. It also pins the formats of the programs users run that tracekit
already reads (mmengine, detectron2, timm, torchvision references, pytorch/examples, nanoGPT, torchtitan,
Keras, transformers' metrics block), so a change that loses one of them fails here.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tests.factory import events_of, text_store
from tracekit import rules
from tracekit.evidence import Evidence
from tracekit.ingest import unknown_lines
from tracekit.schema import EventKind

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"

#: vllm benchmarks/benchmark_latency.py (main): ``print(f"Avg latency: {np.mean(latencies)} seconds")``, then
#: ``for percentage, percentile in zip(percentages, percentiles): print(f"{percentage}% percentile latency:
#: {percentile} seconds")``
VLLM_LATENCY = ("Avg latency: 1.5123 seconds\n10% percentile latency: 1.4901 seconds\n"
                "25% percentile latency: 1.5002 seconds\n50% percentile latency: 1.5100 seconds\n"
                "75% percentile latency: 1.5201 seconds\n90% percentile latency: 1.5302 seconds\n"
                "99% percentile latency: 1.5500 seconds\n")

#: an inference script's closing timings: time to load, to the first token, to generate, and its rate
GENERATION = ("Time to load model: 12.3 s\nTime to first token: 0.45 s\nGeneration time: 3.21 s\n"
              "Tokens per second: 45.6\n")


def _verdict(tmp_path, text: str):
    st = text_store(tmp_path, text)
    rule, v = rules.first(Evidence.gather(st))
    return st, rule, v


def test_closing_block_is_a_result_and_healthy(tmp_path):
    st, rule, v = _verdict(tmp_path, GENERATION)
    ends = events_of(st, EventKind.PROGRAM_END)
    assert ends.height == 1 and ends["where"][0] == "result" and ends["line"][0] == 1
    assert "closing block of 4 measured figures" in ends["message"][0]
    assert v.kind.name == "HEALTHY" and rule == "every_rank_ended"
    assert "Time to first token: 0.45 s" in v.summary
    assert unknown_lines([str(tmp_path / "job.log")]).height == 0


def test_vllm_latency_block_is_read_whole(tmp_path):
    st = text_store(tmp_path, VLLM_LATENCY)
    ends = events_of(st, EventKind.PROGRAM_END).filter(pl.col("where") == "result")
    assert ends.height >= 1 and "Avg latency: 1.5123 seconds" in " ".join(ends["message"].to_list())
    assert unknown_lines([str(tmp_path / "job.log")]).height == 0


def _blocked(tmp_path, text: str) -> bool:
    st = text_store(tmp_path, text)
    return events_of(st, EventKind.PROGRAM_END)["message"].str.contains("closing block").any()


def test_not_a_result_block(tmp_path):
    # a key repeated is a series (parsers/timings.py's), not a summary
    assert not _blocked(tmp_path, "fwd time: 1.2 s\nfwd time: 1.3 s\nfwd time: 1.2 s\n")
    # a settings block: a timeout, an interval, a port are no measurement
    assert not _blocked(tmp_path, "store timeout: 1800 s\nlog interval: 10 s\nmaster port: 29500\n")
    # a start-up's timings only: the work has not begun
    assert not _blocked(tmp_path, "Time to load model: 12.3 s\nTime to load tokenizer: 0.4 s\n"
                                  "Time to init engine: 3.2 s\n")
    # a failure's word on a figure line
    assert not _blocked(tmp_path, GENERATION + "Failed requests: 3\n")
    # a block followed by anything else does not close the file
    assert not _blocked(tmp_path, GENERATION + "Starting the next benchmark round\n")
    # too few figures of time or rate (counts and ratios only)
    assert not _blocked(tmp_path, "Accuracy: 0.91\nPrecision: 0.88\nRecall: 0.87\n")


def test_failure_before_the_block_is_not_healthy(tmp_path):
    _, _, v = _verdict(tmp_path, "Traceback (most recent call last):\n  File \"bench.py\", line 3, in <module>\n"
                                 "RuntimeError: CUDA error: out of memory\n" + GENERATION)
    assert v.kind.name != "HEALTHY"


#: formats of the programs users run, quoted from their source (each a print format at the file named); each
#: reads as the run's progress or end today: kept read
KNOWN_FORMATS = {
    # open-mmlab/mmengine mmengine/runner/log_processor.py get_log_after_iter (`Epoch(train) [1][ 50/1000]  lr: ...`)
    "mmengine": ("2023/02/20 10:04:12 - mmengine - INFO - Epoch(train)  [1][  50/1000]  lr: 1.0000e-02  eta: "
                 "0:39:12  time: 0.4672  data_time: 0.0123  memory: 3042  loss: 1.2456\n"
                 "2023/02/20 10:04:35 - mmengine - INFO - Epoch(train)  [1][ 100/1000]  lr: 1.0000e-02  eta: "
                 "0:38:40  time: 0.4621  data_time: 0.0119  memory: 3042  loss: 1.1001\n"
                 "2023/02/20 10:04:58 - mmengine - INFO - Epoch(train)  [1][ 150/1000]  lr: 1.0000e-02  eta: "
                 "0:38:10  time: 0.4600  data_time: 0.0120  memory: 3042  loss: 1.0501\n"),
    # facebookresearch/detectron2 detectron2/utils/events.py CommonMetricPrinter.write, engine/hooks.py
    # IterationTimer.after_train (`Overall training speed: ...`, `Total training time: ...`)
    "detectron2": ("[02/20 10:00:01 d2.utils.events]:  eta: 1:02:03  iter: 19  total_loss: 2.102  time: 0.4500  "
                   "data_time: 0.0200  lr: 0.00039962  max_mem: 3500M\n"
                   "[02/20 10:00:10 d2.utils.events]:  eta: 1:01:50  iter: 39  total_loss: 1.802  time: 0.4490  "
                   "data_time: 0.0200  lr: 0.00079922  max_mem: 3500M\n"
                   "[02/20 11:00:19 d2.engine.hooks]: Overall training speed: 89998 iterations in 11:13:52 "
                   "(0.4494 s / it)\n[02/20 11:00:19 d2.engine.hooks]: Total training time: 11:20:01 (0:06:08 on "
                   "hooks)\n"),
    # pytorch/examples mnist/main.py train/test
    "pytorch-examples": ("Train Epoch: 1 [0/60000 (0%)]\tLoss: 2.305400\nTrain Epoch: 1 [640/60000 (1%)]\t"
                         "Loss: 1.359776\nTrain Epoch: 1 [1280/60000 (2%)]\tLoss: 0.829780\n\nTest set: Average "
                         "loss: 0.0479, Accuracy: 9844/10000 (98%)\n"),
    # karpathy/nanoGPT train.py (`iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms, mfu {...:.2f}%`)
    "nanogpt": ("iter 10: loss 9.6021, time 120.35ms, mfu 30.12%\niter 20: loss 8.9001, time 119.80ms, mfu 30.15%\n"
                "iter 30: loss 8.1201, time 120.01ms, mfu 30.14%\n"),
    # pytorch/torchtitan torchtitan/train.py log of each step, then `Training completed`
    "torchtitan": ("[rank0]:2024-06-11 10:00:01,000 - root - INFO - step:  1  loss: 12.2500  memory: 40.17GiB(42.28%)"
                   "  tps: 1,234  tflops: 50.11  mfu: 16.07%\n"
                   "[rank0]:2024-06-11 10:00:11,000 - root - INFO - step: 10  loss:  9.7700  memory: 46.20GiB"
                   "(48.63%)  tps: 6,789  tflops: 120.30  mfu: 38.56%\n"
                   "[rank0]:2024-06-11 10:00:22,000 - root - INFO - Training completed\n"),
    # keras/src/callbacks/progbar_logger.py + utils/progbar.py (the epoch's closing bar)
    "keras": ("Epoch 1/2\n1875/1875 [==============================] - 10s 5ms/step - loss: 0.2950 - accuracy: "
              "0.9150\nEpoch 2/2\n1875/1875 [==============================] - 9s 5ms/step - loss: 0.1430 - "
              "accuracy: 0.9575\n"),
    # huggingface/transformers trainer_pt_utils.py log_metrics (`***** train metrics *****`)
    "transformers": ("{'loss': 2.1234, 'learning_rate': 4.5e-05, 'epoch': 0.33}\n***** train metrics *****\n"
                     "  epoch                    =        1.0\n  train_loss               =       1.95\n"
                     "  train_runtime            = 0:01:02.12\n  train_samples_per_second =       48.3\n"),
}


def test_known_program_formats_read_healthy(tmp_path):
    for name, text in KNOWN_FORMATS.items():
        folder = tmp_path / name
        folder.mkdir()
        _, rule, v = _verdict(folder, text)
        assert v.kind.name == "HEALTHY", (name, rule, v.summary)


#: samples/wild dv37-031 (GluonCV's Mask R-CNN under horovodrun, Open MPI's --tag-output): each rank's total at its
#: end, the tag of the rank before it left in front (an empty write cut by the next process's)
STACKED_ENDS = "".join(f"[1,{r}]<stdout>:[1,{r + 1}]<stderr>:INFO:root:Total Training with validation: "
                       f"1526.16{r} secs\n" for r in range(183, 186))


def test_rank_named_only_by_a_stacked_tag_left_no_end(tmp_path):
    # (reverted at the merge: rank 183's tag holds no write of its own, so it left no end here; HEALTHY needs
    # every seen rank's own end, and the verdict stays UNDECIDED with the ends that were seen)
    st, rule, v = _verdict(tmp_path, STACKED_ENDS)
    assert sorted(st.ranks["rank"].drop_nulls().unique().to_list()) == [183, 184, 185, 186]  # (183 still seen)
    assert v.kind.name == "UNDECIDED" and rule == "clean_but_partial", (rule, v.summary)
    assert "Total Training with validation" in v.summary and "183-186" in v.summary


def test_rank_with_a_line_of_its_own_and_no_end_stays_undecided(tmp_path):
    # rank 183 wrote a step of its own and no end: where it stopped is not known
    text = "[1,183]<stderr>:INFO:root:[Epoch 11][Batch 100], Speed: 20.1 samples/sec, RPN_Conf=0.02\n" + STACKED_ENDS
    _, _, v = _verdict(tmp_path, text)
    assert v.kind.name != "HEALTHY"


#: samples/wild dv38-007 (youkaichao's torchrun all-reduce test, 16 ranks over sockets): its four result lines, then
#: NCCL's teardown of the communicators at exit
ALLREDUCE_TEST = (
    "lsp-ws1:7650:7708 [0] NCCL INFO comm 0x37c6a330 rank 0 nranks 16 cudaDev 0 busId 4b000 - Init COMPLETE\n"
    "time spent for each trial: 1.650430393218994\n"
    "param all-reduce speed: 2.4236102391439927 GB/s\n"
    "communication bandwidth (estimated): 38.77776382630388 Gb/s\n"
    "answer: 7864320.0\n"
    "lsp-ws1:7650:7729 [0] NCCL INFO [Service thread] Connection closed by localRank 0\n"
    "lsp-ws1:7650:7650 [0] NCCL INFO comm 0x37c6a330 rank 0 nranks 16 cudaDev 0 busId 4b000 - Abort COMPLETE\n")


def test_result_block_before_nccl_teardown(tmp_path):
    st, rule, v = _verdict(tmp_path, ALLREDUCE_TEST)
    ends = events_of(st, EventKind.PROGRAM_END).filter(pl.col("where") == "result")
    assert ends.height == 1 and ends["line"][0] == 2
    # (its figures are bandwidth results too since pace34: with no link in view, the results rule says what to
    # compare them against and does not decide; the whole excerpt, which names NET/Socket, reads HEALTHY)
    assert v.kind.name in ("HEALTHY", "UNDECIDED") and "param all-reduce speed" in v.summary, (rule, v.summary)
    from tracekit.ingest import ingest
    from tracekit.verdict import decide
    whole = decide(ingest(sorted(WILD.glob("dv38-007-*.txt"))))
    assert whole.kind.name == "HEALTHY" and "4.847 GB/s" in whole.summary, whole.summary


def test_two_column_table_closing_the_output_is_a_result(tmp_path):
    # prettytable's frame around a two-column metrics table: the rules and the header row are part of the block
    text = ("+------------+----------+\n| metric     | value    |\n+------------+----------+\n"
            "| latency    | 1.23 s   |\n| throughput | 812.3/s  |\n| step time  | 0.51 s   |\n"
            "+------------+----------+\n")
    st, rule, v = _verdict(tmp_path, text)
    assert events_of(st, EventKind.PROGRAM_END)["where"].to_list() == ["result"]
    assert v.kind.name == "HEALTHY" and "812.3/s" in v.summary
    assert unknown_lines([str(tmp_path / "job.log")]).height == 0


#: samples/wild dv37-031: pycocotools' COCO evaluation as rank 0 printed it after training
COCO_EVAL = ("[1,0]<stdout>:creating index...\n[1,0]<stdout>:GT annotations already exist!\n"
             "[1,0]<stdout>:Loading and preparing results...\n[1,0]<stdout>:DONE (t=0.73s)\n"
             "[1,0]<stdout>:Running per image evaluation...\n[1,0]<stdout>:Evaluate annotation type *bbox*\n"
             "[1,0]<stdout>:DONE (t=3.49s).\n[1,0]<stdout>:Accumulating evaluation results...\n"
             "[1,0]<stderr>: Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.37689\n"
             "[1,0]<stderr>: Average Recall     (AR) @[ IoU=0.50:0.95 | area= small | maxDets=100 ] = 0.39634\n")


def test_pycocotools_lines_are_known(tmp_path):
    text_store(tmp_path, COCO_EVAL)
    assert unknown_lines([str(tmp_path / "job.log")]).height == 0


def test_each_rank_closes_with_its_own_block(tmp_path):
    # torchrun's `[rankN]:` prefix on each line: every rank's last lines are its block, each one its end
    block = ("[rank{r}]:Prefill time: 0.23{r} s\n[rank{r}]:Decode time: 3.45{r} s\n[rank{r}]:Total time: 3.69{r} s\n"
             "[rank{r}]:Peak memory: 12.{r} GB\n")
    st, rule, v = _verdict(tmp_path, "".join(block.format(r=r) for r in (0, 1)))
    ends = events_of(st, EventKind.PROGRAM_END).filter(pl.col("message").str.contains("closing block"))
    assert sorted(ends["rank"].to_list()) == [0, 1]
    assert v.kind.name == "HEALTHY", (rule, v.summary)


def test_a_rank_with_no_block_of_its_own_is_no_end(tmp_path):
    # rank 1 printed one step time and nothing after: its end is not seen
    text = ("[rank0]:step time: 0.51 s\n[rank1]:step time: 0.52 s\n[rank0]:Total time: 12.3 s\n"
            "[rank0]:Samples per second: 812.1\n[rank0]:Peak memory: 12.1 GB\n")
    _, _, v = _verdict(tmp_path, text)
    assert v.kind.name != "HEALTHY"
