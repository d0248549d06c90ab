"""Rank identity (issue 31 item 4), session 29: the set-up lines by which programs' processes say their own
global rank (parsers/rank_words.py RANK_WORDS: Paddle's fleet topology, detectron2's default_setup, timm's,
Swin Transformer's, OpenCLIP's and LAVIS's distributed set-up lines), the keys a process's rank and the
world's size go by in its own settings (``KEY_RANK``, ``KEY_WORLD``: Ascend's `RANK_ID`/`RANK_SIZE`, a script's
`dist_my_rank`/`dist_world_size`), and the process Open MPI's mpirun names as the first to exit
(parsers/mpi.py). Real dev excerpts, real lines from public repositories' logs and sources (where beside
them) and small logs in each program's shape; each names the rank(s) the line attributes, and none a number
its words make a group's, a local or a peer's."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.factory import file_ranks, text_ranks, text_store

WILD = ROOT / "samples" / "wild"


@pytest.mark.parametrize("excerpt, want", [
    # PaddleSeg under paddle.distributed.launch: `HybridParallelInfo: rank_id: 0, ..., dp_group: [0, 1]` (fresh
    # dev; its groups name no writer)
    ("dv35-001-paddleseg-2gpu-steady-then-sigterm.txt", [0]),
    # a script's `dist_my_rank = 1  dist_world_size = 4` lines beside PALS' `rank 0 died from signal 15`
    ("dv33-002-polaris-torch-nccl-2x2-init-hang-signal15.txt", [0, 1, 2, 3]),
    # mpirun's `Process name: [[52222,1],1]` / `Exit code: 1` (fresh dev); beside Horovod's coordinator, rank 0
    ("dv34-008-libgdsync-couldnt-register-mr-mpirun-abort.txt", [1]),
    ("dv32-006-horovod-tf-stall-missing-rank0-nan-branch.txt", [0, 1]),
    # c10d's desync report: `[1] finished collective #2, but didn't join collective #3 (count from 1)` (rank 1 wrote
    # its state to the store; the label counts it beside rank 0's watchdog)
    ("dv28-005-desync-report-rank1-never-joined-allreduce3.txt", [0, 1]),
    # torchelastic's worker events name `"global_rank": 3` in a JSON key, not a process's own settings: as before
    ("dv11-007-yolov5-torchelastic-worker-succeeded-events.txt", [3]),
])
def test_dev_excerpts_count_the_ranks_their_set_up_lines_name(excerpt, want):
    assert file_ranks(WILD / excerpt) == want


@pytest.mark.parametrize("text, want", [
    # Paddle python/paddle/distributed/fleet/base/topology.py, as the PaddlePaddle docs' cluster quick start
    # (paddle.distributed.launch run_check) and a PaddleNLP log print it (`self.global_rank`)
    ("2022-07-20 09:46:51,333-INFO: [topology.py:187:__init__] HybridParallelInfo: rank_id: 0, mp_degree: 1, "
     "sharding_degree: 1, pp_degree: 1, dp_degree: 4, mp_group: [0],  sharding_group: [0], pp_group: [0], "
     "dp_group: [0, 1, 2, 3], check/clip group: [0]\n", [0]),
    ("[2024-04-30 17:28:28,401] [    INFO] topology.py:288 - HybridParallelInfo: rank_id: 5, mp_degree: 2, "
     "sharding_degree: 4, pp_degree: 4, dp_degree: 1, sep_degree: 1, mp_group: [4, 5],  sharding_group: [1, 3, "
     "5, 7], pp_group: [5, 13, 21, 29], dp_group: [5], sep:group: None, check/clip group: [0, 1]\n", [5]),
    # detectron2/engine/defaults.py default_setup, as a YOLOF run on Colab and fastreid print it
    ("[09/06 13:54:38 detectron2]: Rank of current process: 0. World size: 1\n", [0]),
    ("[05/08 09:14:27] fastreid INFO: Rank of current process: 3. World size: 4\n", [3]),
    # timm train.py, as a timm run on Ascend NPUs prints it (two processes; the strings join with no space)
    ("Training in distributed mode with multiple processes, 1 device per process.Process 0, total 2, device "
     "npu:0.\nTraining in distributed mode with multiple processes, 1 device per process.Process 1, total 2, "
     "device npu:1.\n", [0, 1]),
    # older timm: `1 GPU per process. Process %d, total %d.`
    ("Training in distributed mode with multiple processes, 1 GPU per process. Process 3, total 8.\n", [3]),
    # Swin-Transformer main.py's print of RANK and WORLD_SIZE
    ("RANK and WORLD_SIZE in environ: 2/8\n", [2]),
    # open_clip src/training/main.py: the global rank, not the local one
    ("2024-01-01,00:00:00 | INFO | Running in distributed mode with multiple processes. Device: cuda:1."
     "Process (global: 9, local 1), total 16.\n", [9]),
    # LAVIS / BLIP init_distributed_mode, four processes, as a LAVIS run prints them
    ("| distributed init (rank 1, world 4): env://\n| distributed init (rank 0, world 4): env://\n"
     "| distributed init (rank 2, world 4): env://\n| distributed init (rank 3, world 4): env://\n", [0, 1, 2, 3]),
    # Open MPI's --tag-output tags stacked where two processes' writes met (dv37-031's shape): both writers
    ("[1,183]<stdout>:[1,184]<stderr>:INFO:root:Total Training with validation: 1526.16 secs\n", [183, 184]),
    # torchrun nested in a launcher (`[rank0]:[rank4]:` on every line of rank 4, dev-100): the inner tag only
    ("[rank0]:[rank4]:V0731 00:56:28.929000 3080918 torch/distributed/pipelining/stage.py:1349] Shape "
     "inference: stage 0 skipping recv\n", [4]),
    # MXNet's Speedometer with the KVStore's rank (MLPerf image_classification common/fit.py, dv39-002)
    ("2022-05-17 00:33:00,261 Node[0] Epoch[0] Batch [0-20]\tSpeed: 126046.63 samples/sec\taccuracy=nan\n", [0]),
    # Ascend's environment as a launch script echoes it; a process's own keys under other names
    ("RANK_ID=3 RANK_SIZE=8 DEVICE_ID=3\n", [3]),
    ("world_rank=3 world_size=8\n", [3]),
    ("dist_my_rank = 2  dist_world_size = 4\n", [2]),
])
def test_a_programs_set_up_line_names_its_writers_global_rank(tmp_path, text, want):
    assert text_ranks(tmp_path, text) == want


@pytest.mark.parametrize("text", [
    # a node's, a group's and a local rank keep out of the keys
    "node_rank=1 world_size=2\n",
    "tp_rank=1 world_size=8\n",
    "local_rank=1 world_size=8\n",
    # a rank key with no world's size beside it may be a peer's or a default's (as before)
    "rank_id: 3\n",
    # a traceback's source line is code
    "    dist.init_process_group(backend='nccl', world_size=4, rank_id=1)\n",
])
def test_a_number_no_process_says_of_itself_is_no_rank(tmp_path, text):
    assert text_ranks(tmp_path, text) == []


# torch/csrc/distributed/c10d/TraceUtils.h analyzeLaggingRanks (TORCH_NCCL_DESYNC_DEBUG=1), as the c10d desync
# report prints it under a watchdog timeout of rank 0
DESYNC = ("[rank0]:[E515 18:36:47.341808597 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
          "timeout: WorkNCCL(SeqNum=241, OpType=ALLREDUCE, NumelIn=6, NumelOut=6, Timeout(ms)=600000) ran for 600086 "
          "milliseconds before timing out.\n"
          "[rank0]:[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] Rank 0\n"
          "         - [0] Timeout at collective: ALLREDUCE, #315\n"
          "         - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
          "{lagging}"
          "         - Snapshot of ranks' latest states:\n"
          "           #315 started ranks:\n"
          "             [0, 1, 2] started ALLREDUCE\n")


@pytest.mark.parametrize("lagging, want", [
    ("             [7] finished collective #182, but didn't join collective #183 (count from 1)\n", [0, 7]),
    ("           - [3, 5] joined but didn't finish collective #182 (count from 1)\n", [0, 3, 5]),
    # the ranks that never joined wrote nothing of their own; the snapshot's lists are not read
    ("         - To our best knowledge, ranks [6] are the lagging ranks that caused this timeout.\n", [0]),
])
def test_a_desync_report_counts_the_ranks_it_finds_lagging(tmp_path, lagging, want):
    assert text_ranks(tmp_path, DESYNC.format(lagging=lagging)) == want



MPIRUN_FIRST = ("--------------------------------------------------------------------------\n"
                "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
                "the job to be terminated. The first process to do so was:\n\n"
                "  Process name: [[56671,1],{rank}]\n"
                "  Exit code:    1\n"
                "--------------------------------------------------------------------------\n")


def test_the_process_mpirun_names_as_the_first_to_exit_is_a_rank_seen(tmp_path):
    # its MPI_COMM_WORLD rank, the last number of Open MPI's process name, as mpirun's `process rank 1 with PID
    # ... exited on signal 9` names one
    assert text_ranks(tmp_path, MPIRUN_FIRST.format(rank=5)) == [5]
    s = text_store(tmp_path, MPIRUN_FIRST.format(rank=5), "two.log")
    assert s.ranks.filter(s.ranks["rank"] == 5)["source"].to_list() == ["mpi"]
    # the job's end without the name: no rank
    assert text_ranks(tmp_path, "Primary job  terminated normally, but 1 process returned\n"
                                "a non-zero exit code. Per user-direction, the job has been aborted.\n",
                      "three.log") == []
