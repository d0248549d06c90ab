"""Rank identity (issue 31 item 4), session 25: the visible-rank count of a stream whose program names its writer
another way: srun's `--label` task where each task is one process (parsers/slurm.py ``tasks``),
ESPnet's `[host:rank/world]` prefix (parsers/prefixes.py), c10d's `global rank: N` (launcher ``SELF``), program
sentences (rank_words) and ncclCommSplit communicators (nccl_ranks): real dev excerpts and small logs in each
program's own format."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.factory import file_ranks, text_ranks
from tracekit.ingest import ingest

WILD = ROOT / "samples" / "wild"


def _store(path):
    return ingest([path])


@pytest.mark.parametrize("excerpt, want", [
    # srun --label's `0: ` over a program's own lines (one task per process): task 0 is rank 0
    ("dv17-023-weathergenerator-santis-2-nodes-half-samples-per-sec.txt", [0]),
    # srun's `0: ` over torchrun's agent and NCCL lines of two devices: task 0 is node 0's launcher, no rank
    ("torch-039-nvrx-async-writer-2node-srun-label-efa.txt", []),
    # ESPnet's logging prefix, its `[host` cut off in the paste: `:0/3] 2022-12-02 ...`
    ("dv19-016-espnet-3gpu-epoch-results-scaling.txt", [0]),
])
def test_dev_excerpts_count_the_ranks_their_lines_show(excerpt, want):
    assert file_ranks(WILD / excerpt) == want


def test_espnet_prefix_gives_the_world_size_too():
    store = _store(WILD / "dv19-016-espnet-3gpu-epoch-results-scaling.txt")
    assert store.ranks["world_size"].max() == 3


def test_srun_tasks_of_one_process_each_are_ranks(tmp_path):
    body = ("0: epoch 1 step 10 loss 2.31\n"
            "1: epoch 1 step 10 loss 2.29\n"
            "3: RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert text_ranks(tmp_path, body) == [0, 1, 3]


def test_srun_task_that_runs_torchrun_is_no_rank(tmp_path):
    body = ("0: [rank2]: Traceback (most recent call last):\n"
            "0: [rank2]: RuntimeError: boom\n"
            "1: [rank5]: RuntimeError: boom\n")
    # the torchrun tags name the ranks; srun's 0 and 1 are the nodes' agents
    assert text_ranks(tmp_path, body) == [2, 5]


def test_srun_task_with_nccl_lines_of_two_processes_is_no_rank(tmp_path):
    body = ("0: node1:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
            "0: node1:101:101 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n")
    # (without the rule's check both processes would be rank 0: one task, two pids)
    assert text_ranks(tmp_path, body) == []


def test_horovod_missing_ranks_list_is_not_read_as_srun_tasks(tmp_path):
    body = ("Missing ranks:\n"
            "0: [HorovodAllreduce_grads_0, HorovodAllreduce_grads_1]\n")
    # Horovod's list names the rank missing (a ``rank_missing`` event of mpi.py), no writer: no task 0
    assert text_ranks(tmp_path, body) == []


def test_c10d_options_line_names_the_global_rank_not_the_groups(tmp_path):
    body = ("[PG ID 2 PG GUID 5 Rank 1] ProcessGroupNCCL initialization options: size: 4, global rank: 5, "
            "TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0\n")
    assert text_ranks(tmp_path, body) == [5]


def test_a_scripts_global_rank_line(tmp_path):
    assert text_ranks(tmp_path, "[init] == local rank: 1, global rank: 9 ==\n") == [9]


@pytest.mark.parametrize("excerpt, want", [
    # YOLOX's `Rank 1 initialization finished.` (yolox/core/launch.py) under loguru's header, junk before it
    ("dv17-035-yolox-init-best-guess-barrier.txt", [0, 1, 2, 3]),
    # c10d's `[Rank 2] Found key in store: NCCLABORTEDCOMM:.., from rank: 0`: rank 2 writes, rank 0 aborted
    ("dv16-013-pytorch-ci-rank2-found-aborted-comm-from-rank0.txt", [0, 2]),
    # llm.c's `ProcessID:0, NumProcess::4, DeviceId:0` (llmc/zero.cuh) under srun
    ("dv11-006-llmc-srun-pmix-errors-startup.txt", [0]),
    # two processes whose only communicator is an ncclCommSplit pair (`parent 0x..`): group-local ranks, none global
    ("dv13-064-deepspeed-zero3-tp2-inference-hang-after-commsplit-init.txt", []),
    # a split beside the processes' world communicator: the world's ranks stay
    ("llm-006-swift-grpo-2node-interleaved-nvls-split.txt", [1, 5, 7]),
])
def test_writer_words_and_split_communicators(excerpt, want):
    assert file_ranks(WILD / excerpt) == want


def test_split_communicator_alone_names_no_global_rank(tmp_path):
    body = ("node1:100:200 [0] NCCL INFO ncclCommSplit comm 0x1 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 7000 "
            "parent 0x2 color 15 key 1 commId 0xabc - Init COMPLETE\n")
    assert text_ranks(tmp_path, body) == []
    world = body.replace("ncclCommSplit comm 0x1", "comm 0x2").replace(" parent 0x2 color 15 key 1", "")
    assert text_ranks(tmp_path, world, "world.log") == [1]
