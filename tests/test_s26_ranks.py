"""Rank identity (issue 31 item 4), session 26: writers named by shapes the earlier readers left: srun's error
about failed tasks (parsers/slurm.py ``failed``), Gloo's full-mesh connect, c10d's best-guess-GPU barrier,
Megatron's seed line, a logger's bracketed `[RANK N]` tag or `rank=` field, a script's `[rankN]` tag, a status
line's `rank N on HOST:` (parsers/rank_words.py); and the shapes that name a peer or a group's rank, which
stay uncounted. Real dev excerpts and small logs in each program's own format."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.factory import ranks_of, text_ranks
from tracekit.ingest import ingest
from tracekit.verdict import decide

WILD = ROOT / "samples" / "wild"


@pytest.mark.parametrize("excerpt, want", [
    # Horovod under srun, one task per node: `srun: error: jwc09n018: task 1: Exited with exit code 1`
    ("dev-072-horovod-srun-nccl-init-system-error.txt", [0, 1]),
    # an MPI solver's step: `srun: error: nid001277: tasks 1-3: Out Of Memory`, the range spread
    ("dv15-034-tusas-srun-oom-kill-tasks-1-3-step-cancelled.txt", [1, 2, 3]),
    # a reproducer's own `STALL rank 14 on node1: no progress past step 324 for 120s`
    ("nccl-050-nccl231-graph-replay-silent-stall-all-ranks.txt", [0, 3, 4, 14, 15]),
    # Gloo's connect lines of a TP=2 SGLang server, beside its `TP0`/`TP1` headers: the same two ranks
    ("dv12-023-sglang-docker-compose-2x4090-tp2-startup-no-p2p.txt", [0, 1]),
    # Gloo's groups of one (`Rank 0 is connected to 0 peer ranks`): a rank inside each, no global one
    ("dv20-020-sglang-npu-gloo-single-rank-groups-connected.txt", []),
    # accelerate under srun: `rank : 10 (local_rank: 2)` in torchelastic's block; srun's `task 0` is the node
    ("dv2-061-accelerate-slurm-rank10-local2-sigabrt-save.txt", [10]),
])
def test_dev_excerpts_count_the_ranks_their_lines_show(excerpt, want):
    assert ranks_of(ingest([WILD / excerpt])) == want


def test_the_oom_killed_tasks_are_said_in_the_verdict():
    v = decide(ingest([WILD / "dv15-034-tusas-srun-oom-kill-tasks-1-3-step-cancelled.txt"]))
    assert v.kind.name == "CRASHED_RANK"
    assert "OOM killer" in v.summary and "(1-3)" in v.summary


def test_srun_failed_tasks_are_ranks_and_their_hosts(tmp_path):
    body = ("srun: error: gpu-a: task 0: Exited with exit code 1\n"
            "srun: error: gpu-b: tasks 4-5,7: Killed\n")
    p = tmp_path / "job.log"
    p.write_text(body)
    store = ingest([p])
    assert ranks_of(store) == [0, 4, 5, 7]
    by_rank = dict(zip(store.ranks["rank"].to_list(), store.ranks["host"].to_list()))
    assert by_rank[0] == "gpu-a" and by_rank[7] == "gpu-b"


def test_srun_failed_task_running_torchrun_is_a_node_not_a_rank(tmp_path):
    body = ("E0101 12:00:00.000000 99 torch/distributed/elastic/multiprocessing/api.py:869] failed "
            "(exitcode: 1) local_rank: 0 (pid: 1234) of binary: /usr/bin/python\n"
            "srun: error: gpu-b: task 1: Exited with exit code 1\n")
    assert 1 not in text_ranks(tmp_path, body)


@pytest.mark.parametrize("body, want", [
    # gloo/transport/tcp/context.cc: the world's group (7 peers) and a TP pair's; only the largest counts
    ("[Gloo] Rank 0 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7\n"
     "[Gloo] Rank 5 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7\n"
     "[Gloo] Rank 1 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1\n", [0, 5]),
    # under torchrun's prefix the prefix names the writer; Gloo's rank is its group's
    ("[rank13]:[Gloo] Rank 1 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1\n",
     [13]),
    # ProcessGroupNCCL::barrier before the group knows its devices (torch 1.8-2.1)
    ("[W ProcessGroupNCCL.cpp:1569] Rank 2 using best-guess GPU 2 to perform barrier as devices used by this "
     "process are currently unknown. This can potentially cause a hang if this rank to GPU mapping is "
     "incorrect.\n", [2]),
    # Megatron-LM's model_parallel_cuda_manual_seed
    ("> initializing model parallel cuda seeds on global rank 4, model parallel rank 0, and data parallel "
     "rank 1 with model parallel seed: 3952 and data parallel seed: 1234\n", [4]),
    # TensorRT-LLM's logger header
    ("[10/21/2025-23:25:18] [TRT-LLM] [RANK 1] [I] Setting PyTorch memory fraction to 0.2199\n"
     "[10/21/2025-23:25:18] [TRT-LLM] [RANK 2] [I] Setting PyTorch memory fraction to 0.2199\n", [1, 2]),
    # a logger's header with a rank field
    ("[2026-07-12|15:48:25|core|rank=0] Allocating 795005 tokens for KV cache, K + V = 42.46 GiB\n"
     "[2026-07-12|15:48:25|core|rank=1] Allocating 795005 tokens for KV cache, K + V = 42.46 GiB\n", [0, 1]),
    # a script's own tag
    ("[rank3] loss 1.25 step 10\n", [3]),
    # a status line naming its writer and host
    ("[fesom_port] rank 1 on vader2: node-local rank 1 -> Kokkos device_id 1\n", [1]),
    # a script's tag after a logger's level, a word after the number; after a bare timestamp
    ("2024-05-01 12:00:00,000 - root - INFO - rank 1 step 10 loss 2.3\n", [1]),
    ("2024-05-01 12:00:00,123 rank 2: loss 1.2\n", [2]),
    # the world's size beside the rank, a parenthesised tag
    ("rank 3/8: loss 1.2\n[Rank 5/8] loss 1.3\n(rank 6) loss 1.1\n", [3, 5, 6]),
])
def test_a_writers_own_words_name_its_rank(tmp_path, body, want):
    assert text_ranks(tmp_path, body) == want


@pytest.mark.parametrize("body, want", [
    # Gloo's groups of one: every process is rank 0 of its own
    ("[Gloo] Rank 0 is connected to 0 peer ranks. Expected number of connected peer ranks is : 0\n", []),
    # a process group's rank in c10d's tag is the group's, not the world's
    ("[E ProcessGroupNCCL.cpp:737] [PG 1 Rank 1] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum=4, OpType=ALLREDUCE, Timeout(ms)=600000)\n", []),
    # a peer a line waits on is not seen
    ("waiting for rank 3 on node1: timeout\n", []),
    # under torchrun's own prefix (with the colon) a script's tag is the prefix's rank's report: no second
    # rank
    ("[rank3]:[rank5] loss 1.25\n", [3]),
])
def test_a_peer_or_a_groups_rank_is_not_counted(tmp_path, body, want):
    assert text_ranks(tmp_path, body) == want
