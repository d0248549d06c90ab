"""Families of lines the programs around a training job print (issue 31, round 3): each line below is
written as the named printing code writes it; the calm ones are known, the error ones stay unknown, and
the ones that carry a fact (a step, an end, a version, a world size) are decoded."""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
import pytest

from tracekit.ingest import ingest, unknown_lines
from tracekit.parsers import program_output, text

from conftest import ROOT

WILD = ROOT / "samples" / "wild"

KNOWN = {
    # transformers/trainer.py log_metrics, save_model; modeling_utils.py; peft/peft_model.py
    "hf": ["***** train metrics *****", "  epoch                    =        3.0",
           "  train_loss               =     1.2345", "Saving model checkpoint to out/checkpoint-500",
           "Model config LlamaConfig {",
           "Some weights of BertForSequenceClassification were not initialized from the model checkpoint "
           "at bert-base-uncased and are newly initialized: ['classifier.bias']",
           "You should probably TRAIN this model on a down-stream task to be able to use it for predictions "
           "and inference.", "trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622",
           "Loading checkpoint shards: 100%|██████████| 2/2 [00:05<00:00,  2.51s/it]"],
    # accelerate/state.py PartialState.__repr__, commands/launch.py
    "accelerate": ["Distributed environment: MULTI_GPU  Backend: nccl", "Num processes: 8",
    "Process index: 0",
                   "Local process index: 0", "Device: cuda:0", "Mixed precision type: bf16",
                   "The following values were not passed to `accelerate launch` and had defaults used "
                   "instead:",
                   "\t`--num_machines` was set to a value of `1`"],
    # deepspeed/env_report.py, op_builder/builder.py, utils/timer.py, runtime/pipe/module.py
    "deepspeed": ["DeepSpeed C++/CUDA extension op report", "cpu_adam ............... [NO] ....... [OKAY]",
                  " [WARNING]  async_io requires the dev libaio .so object and headers but these were not "
                  "found.",
                  "torch install path ............... ['/opt/conda/lib/python3.10/site-packages/torch']",
                  "stage=0 layers=12", "     0: EmbeddingPipe", "     1: ParallelTransformerLayerPipe"],
    # megatron/training/initialize.py, training.py, arguments.py
    "megatron": ["> initializing torch distributed ...", "> initialized tensor model parallel with size 2",
                 " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 1208602624",
                 "time to initialize megatron (seconds): 11.372",
                 "[after megatron is initialized] datetime: 2023-05-05 12:00:00",
                 "  accumulate_allreduce_grads_in_fp32 .............. False",
                 "    model-and-optimizer-setup ......................: (1234.56, 1236.01)",
                 "    reading sizes...",
                 "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1.2 | max allocated: 3"],
    # nemo/utils/formatters/base.py
    "nemo": ["[NeMo I 2024-01-01 12:00:00 exp_manager:394] Experiments will be logged at /results"],
    # lightning/fabric/utilities/seed.py, pytorch/callbacks/model_summary.py
    "lightning": ["Seed set to 42", "[rank: 1] Seed set to 42", "  | Name  | Type | Params | Mode",
                  "0 | model | GPT  | 124 M  | train", "124 M     Trainable params",
                  "497.759   Total estimated model params size (MB)"],
    # vllm/logger.py, model_loader/weight_utils.py; sglang/srt/managers/scheduler.py; uvicorn
    "vllm-sglang": ["(VllmWorker rank=1 pid=4321) INFO 08-03 13:35:33 "
                    "[multiproc_executor.py:912] Worker ready",
                    "Loading safetensors checkpoint shards: 100% Completed | "
                    "163/163 [01:15<00:00,  2.15it/s]",
                    "[2025-01-30 18:11:14 TP0] Load weight begin. avail mem=78.00 GB",
                    "[2025-01-30 18:11:20 TP0] Decode batch. #running-req: 1, #token: 40, token usage: 0.00",
                    "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"],
    # ray/_private/ray_constants.py LOGGER_FORMAT, scripts/scripts.py, autoscaler/_private/util.py, logging.cc
    "ray": ["2024-01-01 12:00:00,123\tINFO worker.py:1636 -- Started a local Ray instance.",
            "Local node IP: 10.0.0.1", "======== Autoscaler status: 2024-01-01 12:00:00.123456 ========",
            " (no pending nodes)", " 0.0/96.0 CPU",
            "[2025-03-12 15:02:43,448 D 301 301] (python-core-driver-01000000ff) "
            "core_worker.cc:2703: Submitting"],
    # slurm src/srun; enroot
    "slurm": ["srun: job 12345 queued and waiting for resources", "salloc: Granted job allocation 12345",
              "[INFO] Fetching image manifest list", "Parallel mksquashfs: Using 64 processors"],
    # Open MPI opal/util/show_help.c; UCX ucs/debug/log; Intel MPI
    "mpi": ["[node01:12345] 7 more processes have sent help message help-mpi-btl-openib.txt / "
            "ib port not selected",
            '[node01:12345] Set MCA parameter "orte_base_help_aggregate" to 0 to see all help / '
            'error messages',
            "[1631234567.123456] [node01:12345:0]      ib_iface.c:1018 UCX  INFO  ib: using mlx5_0",
            "MPI startup(): Intel(R) MPI Library, Version 2021.5  Build 20211102 (id: 9279b7d62)"],
    # nvidia-smi; torch/utils/collect_env.py
    "cuda-tools": ["+-----------------------------------------------------------------------------+",
                   "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |",
                   "|   0  NVIDIA A100-SXM...  On   | 00000000:07:00.0 Off |                    0 |",
                   "Is debug build: False", "CUDA used to build PyTorch: 12.1", "[pip3] numpy==1.24.4",
                   "GPU 0: NVIDIA A100-SXM4-80GB", "Architecture:                    x86_64"],
    # pip, conda, docker
    "installers": ["Requirement already satisfied: numpy in /usr/lib/python3/dist-packages (1.24.4)",
                   "Successfully installed deepspeed-0.12.3", "Solving environment: done",
                   "Status: Downloaded newer image for nvcr.io/nvidia/pytorch:24.01-py3"],
    # torch/distributed/launch.py, Python's warnings.formatwarning; bash's xtrace
    "warnings-shell": ["/opt/conda/lib/python3.10/site-packages/torch/distributed/launch.py:181: "
                       "FutureWarning: "
                       "The module torch.distributed.launch is deprecated",
                       "and will be removed in future. Use torchrun.",
                       "Note that --use-env is set by default in torchrun.", "  warnings.warn(",
                       "+ python train.py --nproc 8", "++ hostname", "NCCL_DEBUG=INFO"],
    # glog's signal handler (glog/src/signalhandler.cc)
    "stack-frames": ["PC: @     0x7f75332ba350  (unknown)  (unknown)",
                      "    @     0x7f7586283630  (unknown)  (unknown)"],
}

#: the error lines of the same programs: never known
ERRORS = [
    "[NeMo E 2024-01-01 12:00:00 exp_manager:394] Something failed",
    "(VllmWorker rank=1 pid=4321) ERROR 08-03 13:35:33 [multiproc_executor.py:912] "
    "WorkerProc hit an exception.",
    "[2025-01-30 18:11:14 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "2024-01-01 12:00:00,123\tERROR worker.py:1636 -- Worker died",
    "srun: error: node01: task 3: Exited with exit code 1",
    "[1631234567.123456] [node01:12345:0]      ib_iface.c:1018 UCX  ERROR  ibv_create_cq() failed",
    "[2025-03-12 15:02:43,448 E 301 301] (raylet) worker_pool.cc:500: Failed to start worker",
    '  "message": "RendezvousTimeoutError: rendezvous timed out",',
    "pytorch-job-worker-0   0/1     CrashLoopBackOff   5          10m",
]


def known(lines: list[str]) -> set[int]:
    """The numbers of the lines tracekit understood, reading them as one log (every parser, a line a
    terminal wrapped counted with the line it continues)."""
    with tempfile.TemporaryDirectory() as d:
        log = Path(d, "x.log")
        log.write_text("\n".join(lines) + "\n")
        left = set(unknown_lines([log])["line"].to_list())
    return {i for i, ln in enumerate(lines, 1) if ln.strip() and i not in left}


@pytest.mark.parametrize("family", sorted(KNOWN))
def test_each_familys_lines_are_known(family):
    lines = KNOWN[family]
    got = known(lines)
    assert not [ln for i, ln in enumerate(lines, 1) if i not in got]


def ours(lines: list[str]) -> set[int]:
    """The numbers of the lines parsers/program_output.py takes as known."""
    frame = text.lines_frame("x.log", "\n".join(lines) + "\n")
    return set(program_output.parse(frame).claimed["line"].to_list())


def test_the_error_lines_of_the_same_programs_stay_unknown():
    lines = [ln for family in KNOWN.values() for ln in family] + ERRORS
    got = ours(lines)
    first = len(lines) - len(ERRORS) + 1
    assert not [lines[i - 1] for i in got if i >= first]


def test_a_python_warnings_message_over_lines_ends_at_its_source_line():
    lines = ["/x/foo.py:12: UserWarning: the message", "goes on here", "  warnings.warn(msg)",
    "RuntimeError: boom"]
    assert ours(lines) == {2, 3}


def test_versions_and_the_world_size_a_program_prints_reach_the_ranks(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("\n".join([
        "Traceback (most recent call last):",
        '  File "/usr/local/bin/torchrun", line 33, in <module>',
        "    sys.exit(load_entry_point('torch==2.4.0a0+3bcc3cd', 'console_scripts', 'torchrun')())",
        "deepspeed info ................... 0.12.3, unknown, unknown",
        "Distributed environment: MULTI_GPU  Backend: nccl", "Num processes: 8", "Process index: 0"]) + "\n")
    r = ingest([log]).ranks
    assert r["torch_version"].drop_nulls().to_list() == ["2.4.0a0+3bcc3cd"]
    assert r["deepspeed_version"].drop_nulls().to_list() == ["0.12.3"]
    assert r["world_size"].max() == 8


def test_num_processes_counts_only_under_accelerates_state(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("Num processes: 8\n")
    assert ingest([log]).ranks["world_size"].drop_nulls().is_empty()


def test_steps_and_ends_of_more_training_loops_are_events(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("\n".join([
        "[2023-11-07 01:55:23,714] [INFO] [timer.py:260:stop] epoch=0/micro_step=40/global_step=10, "
        "RunningAvgSamplesPerSec=25.02, CurrSamplesPerSec=25.70, MemAllocated=4.32GB, "
        "MaxMemAllocated=38.49GB",
        "step:12 - actor/pg_loss:0.01 - critic/score/mean:0.5",
        "epoch 001:    100 / 1563 loss=9.123, nll_loss=8.9, ppl=478.3, wps=1234, num_updates=100, lr=0.0005",
        "`Trainer.fit` stopped: `max_steps=100` reached.",
        "[after training is done] datetime: 2023-05-05 12:00:00",
        "Job 'raysubmit_abc123' succeeded",
        "Training/evaluation parameters TrainingArguments(", "_n_gpu=1,", "gradient_accumulation_steps=4,",
        ")",
    ]) + "\n")
    ev = ingest([log]).events
    steps = ev.filter(pl.col("kind") == "step").sort("line")
    assert steps["step"].to_list() == [10, 12, 100]
    assert steps["loss"].to_list()[-1] == pytest.approx(9.123)
    assert ev.filter(pl.col("kind") == "program_end")["line"].sort().to_list() == [4, 5, 6]
    args = ev.filter(pl.col("kind") == "train_arg")["message"].to_list()
    assert "gradient_accumulation_steps=4" in args


@pytest.mark.parametrize("name, family", [
    ("dv5-007-verl-v100-startup-only.txt", ("contains 494.03M parameters", "Actor use_remove_padding")),
    ("dv5-032-vllm-ray-pp-same-host-core-worker-debug.txt", ("core_worker.cc:",)),
    ("dv5-034-sglang-dsv3-2node-rank6-allreduce-seq2.txt", ("Loading safetensors checkpoint shards:",)),
    ("dv5-031-ray-driver-sigsegv-fatal-python-error.txt", ("PC: @", "    @     0x")),
])
def test_real_excerpts_families_are_known(name, family):
    left = unknown_lines([WILD / name])["raw"].to_list()
    assert not [ln for ln in left if any(f in ln for f in family)], left


def test_steps_of_torchtune_old_fairseq_and_the_imagenet_example(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("\n".join([
        # torchtune/training/metric_logging.py StdoutLogger.log_dict
        "Step 3 | loss:0.905918538570404 lr:2e-05 gpu_resources:40627398656 ",
        # fairseq before 0.7, progress_bar.py: the step counted over the epochs
        "| epoch 010  2000 / 8223 loss=1.27 (1.50), wps=962, wpb=908, bsz=32, lr=0.001, clip=100%, "
        "gnorm=2.14",
        # examples/imagenet/main.py ProgressMeter
        "Epoch: [1][ 10/5005]\tTime  0.312 ( 0.456)\tData  0.001 ( 0.12)\tLoss 6.9077e+00 (6.9101e+00)",
        # a Lightning end under NeMo 2's `[LEVEL | name]: ` header
        "[INFO     | pytorch_lightning.utilities.rank_zero]: `Trainer.fit` stopped: `max_steps=10` reached.",
    ]) + "\n")
    ev = ingest([log]).events
    steps = ev.filter(pl.col("kind") == "step").sort("line")
    assert steps["step"].to_list() == [3, 10 * 8223 + 2000, 5005 + 10]
    assert steps["loss"].to_list() == pytest.approx([0.905918538570404, 1.27, 6.9077])
    assert ev.filter(pl.col("kind") == "program_end")["line"].to_list() == [4]


def test_openmmlab_loggers_steps_by_epoch_and_by_iteration(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("\n".join([
        # mmcv/runner/hooks/logger/text.py TextLoggerHook._log_info, under its Python logging header
        "2021-05-01 12:00:00,123 - mmdet - INFO - Epoch [2][50/7330]\tlr: 1.990e-02, eta: 1 day, 2:08:47, "
        "time: 0.656, data_time: 0.053, memory: 3669, loss_rpn_cls: 0.0512, loss: 1.2345",
        "2021-05-01 12:00:00,123 - mmseg - INFO - Iter [100/80000]\tlr: 9.989e-03, eta: 8:00:00, "
        "time: 0.360, data_time: 0.010, memory: 3000, decode.loss_ce: 1.5, loss: 2.25",
        # torch/distributed/elastic's logger before torch 2.2, apex/amp/frontend.py
        "[2024-03-18 17:38:50,208] torch.distributed.elastic.multiprocessing.api: [WARNING] "
        "Sending process 1 closing signal SIGTERM",
        "Selected optimization level O1:  Insert automatic casts around Pytorch functions and Tensor methods.",
        "opt_level              : O1",
    ]) + "\n")
    ev = ingest([log]).events
    steps = ev.filter(pl.col("kind") == "step").sort("line")
    assert steps["step"].to_list() == [2 * 7330 + 50, 100]
    assert steps["loss"].to_list() == pytest.approx([1.2345, 2.25])
    assert steps["max_steps"].to_list()[1] == 80000
    assert set(unknown_lines([log])["line"].to_list()) <= {3}  # (the SIGTERM notice: torch_log's, or unknown)
