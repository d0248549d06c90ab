"""Rank identity (issue 31 item 4), session 28: the ranks a log's prose names (parsers/rank_prose.py), counted
last: only in a file where no prefix, program tag or NCCL line names a rank (identity._prose_last); a number
the words around it make a group's, a node's, a peer's, a flag's or code's is no rank; and a call's rank keyword
in a traceback's source line is code, not the writer's word (parsers/rank_words.py NOT_SAID). Real dev
excerpts, real lines from public threads (their URL beside them) and small logs in each program's shape."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.factory import file_ranks, text_ranks
from tracekit.parsers import rank_prose
from tracekit.parsers.text import lines_frames, raw

WILD = ROOT / "samples" / "wild"


@pytest.mark.parametrize("excerpt, want", [
    # DeepSpeed's loss scaler: `[deepscale] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: ..` (fresh dev)
    ("dv30-026-bigscience-hf-deepspeed-zero3-gpt2-52b-n8-training-completed.txt", [0]),
    ("dv31-016-bigscience-104b-overflow-skips-steady-422s.txt", [0]),
    # ezpz's `[node=0/0][rank=1/1][local_rank=1/1]` of each process (fresh dev)
    ("dv31-004-ezpz-test-mps-gloo-2rank-steady.txt", [0, 1]),
    # DLRover's rendezvous sentence: `... has joined round 0 of the network-check rendezvous as rank 0 in a world
    # of size 2.` (the label's [0])
    ("dv11-045-dlrover-network-check-rendezvous-ok-no-fault-nodes.txt", [0]),
    # `dist.init_process_group(backend='nccl', ..., world_size=1, rank=1)` is a traceback's source line: code
    ("dv27-003-tcpstore-connect-timed-out-init.txt", []),
    ("dv27-002-gloo-file-init-wait-timeout.txt", []),
    # the Neuron runtime's `[rank 0, channel 0] failed to register channel buffer`: a ring position
    ("dv11-044-neuronx-nemo-enc-netregmr-failed-register-channel-buffer.txt", []),
    # Paddle's `init nccl context nranks: 4 local rank: 0/1 gpu id: 0/1 ring id: 0/1`: a ring's position
    ("dv17-008-paddlefleetx-2node-stuck-after-init-nccl-context.txt", []),
])
def test_dev_excerpts_count_the_ranks_their_prose_names(excerpt, want):
    assert file_ranks(WILD / excerpt) == want


@pytest.mark.parametrize("line, want", [
    # torch 1.x c10d (NCCLUtils.hpp) as pytorch/pytorch#64241 quotes it
    ("NCCL communicator was aborted on rank 1.\n", [1]),
    # torch_npu's error header, vllm-project/vllm-ascend#486
    ("[ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed.\n", [1]),
    # lmdeploy's TP process failure (lmdeploy/pytorch/engine/model_agent.py), Ascend/pytorch#54
    ("2024-10-21 10:42:00,218 - lmdeploy - ERROR - model_agent.py:489 - Rank[2] failed.\n", [2]),
    # MindIE's all-gather runner, gpustack/gpustack#2021
    ("[2025-05-13 02:25:58.70257] [error] [38031] [all_gather_hccl_runner.cpp:38] hcclComm is null, rank: 1\n",
     [1]),
    # the PyTorch DDP tutorial's print (intermediate_source/ddp_tutorial.rst, `print(f"Running basic DDP example
    # on rank {rank}.")`)
    ("Running basic DDP example on rank 1.\n", [1]),
    # c10d's TCPStore error guesses at a peer (hiyouga/LlamaFactory#5769's `[rank2]:` line, its prefix cut)
    (". This may indicate a possible application crash on rank 0 or a network set up issue.\n", []),
])
def test_real_lines_name_the_writer_not_a_guess(tmp_path, line, want):
    assert text_ranks(tmp_path, line) == want


@pytest.mark.parametrize("body, want", [
    ("Error on rank 3 of 8: CUDA out of memory\n", [3]),
    ("Exception on global rank 5: NCCL error\n", [5]),
    ("Process 1 exited with exit code 1\n", [1]),
    ("process 2 of 4 started\n", [2]),
    ("Exception in process 1: CUDA error: an illegal memory access was encountered\n", [1]),
    ("(RayTrainWorker pid=1234, ip=10.0.0.1) rank=0 starting training\n", [0]),
    # an NCCL communicator line whose head a collector's prefix ate: its rank in the largest communicator
    ("worker-9 >> :168:1228 [2] NCCL INFO comm 0x55d rank 82 nranks 96 cudaDev 2 busId 2000 - Init COMPLETE\n"
     "worker-9 >> :168:1228 [2] NCCL INFO comm 0x77e rank 1 nranks 8 cudaDev 2 busId 2000 - Init COMPLETE\n",
     [82]),
])
def test_prose_names_a_rank(tmp_path, body, want):
    assert text_ranks(tmp_path, body) == want


@pytest.mark.parametrize("body", [
    "TP rank 3 failed to load weights\n",  # a group's rank
    "local_rank=0, device=cuda:0\n",  # a local rank alone (tests/test_s24_ranks.py)
    "[INFO] [launch.py:100:main] nnodes=2, num_local_procs=8, node_rank=1\n",  # a node's
    "torchrun --nnodes 2 --node_rank 1 --rank 3 train.py\n",  # a command line's flags
    "Sending process 123 closing signal SIGTERM\n",  # a pid
    "[PG 3 Rank 1] Watchdog caught collective operation timeout\n",  # a process group's rank
    "world size 8, 8 ranks in total\n",  # a count
    "Please check rank 0 logs for faulty rank.\n",  # a peer
    "(worker1, rank=1, pid=16369, ip=10.164.0.58) epoch 1\n",  # SkyPilot's node rank
    "NCCL WARN Proxy Call to rank 3 failed (Connect)\n",  # NCCL's own line names a peer
    # a debugger's frame: the function's arguments (fresh dev dv31-006's gdb stack)
    "#6  ncclCommInitRankSync (newcomm=0x1b1fbae80, nranks=2, commId=..., myrank=0) at init.cc:950\n",
    # a test's description of a transfer between two ranks (fresh dev dv32-012, dv32-013)
    "=== Test 1: Unidirectional (Rank 0 -> Rank 1) ===\n",
])
def test_numbers_that_are_no_process_rank(tmp_path, body):
    assert text_ranks(tmp_path, body) == []


def test_prose_counts_last_one_process_once(tmp_path):
    # the prefix names the writer; the prose names the peer it waits on: one process, rank 3
    body = ("[rank3]: RuntimeError: timed out waiting for rank 0\n"
            "[rank3]: Error on rank 0 suspected\n")
    assert text_ranks(tmp_path, body) == [3]


def test_prose_rows_are_marked_and_bad_input_reads_none():
    frame = lines_frames([raw("job.log", "Error on rank 2\n\x00\xff rank \n" + "rank " * 500 + "\n")])
    got = rank_prose.rows(frame)
    assert got is not None and got["rank"].to_list() == [2] and got.columns == ["file", "rank", "world_size"]
    assert rank_prose.rows(lines_frames([raw("job.log", "nothing here\n")])) is None


def test_an_indented_shell_job_line_names_a_job_not_a_rank(tmp_path):
    """zsh's job report (`[1]    79314 exit 143   mpiexec ...`) pasted indented under a log is the shell's
    job 1, as it is at the line's start (dv31-002: ranks 0, 6, 11 and the job)."""
    assert file_ranks(WILD / "dv31-002-fsdp2-xpu-torch-not-compiled-cuda.txt") == [0, 6, 11]
    assert text_ranks(tmp_path, "[rank3]: RuntimeError: boom\n      [1]    79314 exit 143   mpiexec -n 4 python train.py\n") == [3]
