"""Ranks and world sizes that inference servers, c10d's errors, TensorRT-LLM and PyTorch/XLA print (issue
31, item 4): sglang's scheduler prefix in all its shapes, a serving command's tensor-parallel size,
ProcessGroupNCCL's failed unique-id fetch, Gloo's monitored barrier, TensorRT-LLM's ``MPI size: N, rank:
R``, XLA's ``Core N``; each with the lines of the same shape that must not count."""

from __future__ import annotations

import pytest

from tests.factory import text_store as store_of, ranks_of as ranks, worlds_of as worlds


@pytest.mark.parametrize("line, rank", [
    # sglang's run_scheduler_process: `[%(asctime)s{prefix}] `, the prefix's groups each where it has > 1 rank
    ("[2025-02-26 12:01:56 TP3] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16", 3),
    ("[2025-08-23 09:10:52 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 8192, #cached-token: 0", 0),
    ("[14:47:01 TP1] Exception in ModelTpServer:", 1),  # the time alone (older releases)
    ("[2025-08-23 09:10:52 MOE_DP1 TP5 EP5] Decode batch, #running-req: 3", 5),
])
def test_sglangs_tensor_parallel_rank_is_the_global_one_where_no_dp_or_pp_rank_is_named(tmp_path, line, rank):
    assert ranks(store_of(tmp_path, line + "\n")) == [rank]


@pytest.mark.parametrize("line", [
    "[2025-02-07 01:19:40 DP1 TP0] Prefill batch, #new-seq: 1",  # a data-parallel replica's TP rank
    "[2025-02-07 01:19:40 PP1 TP1] Decode batch, #running-req: 3",  # a pipeline stage's
    "[2025-02-07 01:19:40] Prefill batch, #new-seq: 1",  # the tokenizer manager, no rank
])
def test_sglangs_tensor_parallel_rank_of_a_replica_or_stage_is_no_global_rank(tmp_path, line):
    assert ranks(store_of(tmp_path, line + "\n")) == []


@pytest.mark.parametrize("line, world", [
    ("python3 -m sglang.launch_server --model Qwen/Qwen2-72B-Instruct --trust-remote-code --tp 2", 2),
    ("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8 --port 8000", 8),
    ("[2025-05-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=4, pp_size=1, dp_size=1, "
     "nnodes=1, node_rank=0)", 4),
])
def test_a_serving_commands_tensor_parallel_size_is_the_worlds(tmp_path, line, world):
    assert worlds(store_of(tmp_path, line + "\n")) == [world]


@pytest.mark.parametrize("line", [
    "python3 -m sglang.launch_server --model m --tp 4 --dp 2",  # two replicas: one world or two
    "vllm serve m --tensor-parallel-size 4 --pipeline-parallel-size 2 --port 8000",
    "server_args=ServerArgs(model_path='m', tp_size=4, pp_size=1, dp_size=2, nnodes=1)",
    "python3 -m sglang.launch_server --model m --port 30000",  # no size given
])
def test_a_serving_command_with_more_groups_states_no_world(tmp_path, line):
    assert worlds(store_of(tmp_path, line + "\n")) == []


def test_c10d_names_the_rank_whose_unique_id_fetch_failed(tmp_path):
    # ProcessGroupNCCL::broadcastUniqueNCCLID: "[" rank_ "] is setting up NCCL communicator and ..."
    text = ("torch.distributed.DistBackendError: [3] is setting up NCCL communicator and retrieving "
            "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: "
            "Connection reset by peer\n")
    assert ranks(store_of(tmp_path, text)) == [3]
    # the older wording (`retreiving`), the rank alone on the line
    text = ("RuntimeError: [2] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via "
            "c10d key-value store by key '0', but store->get('0') got error: Socket Timeout\n")
    assert ranks(store_of(tmp_path, text)) == [2]


def test_glooss_monitored_barrier_names_the_rank_that_reached_it_not_the_faulty_one(tmp_path):
    text = ("RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors while waiting "
            "for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n")
    assert ranks(store_of(tmp_path, text)) == [1]


def test_tensorrt_llms_mpi_world(tmp_path):
    # cpp/tensorrt_llm/runtime/worldConfig.cpp: "MPI size: %d, rank: %d" of MPI_COMM_WORLD
    s = store_of(tmp_path, "[TensorRT-LLM][INFO] MPI size: 4, rank: 2\n")
    assert (ranks(s), worlds(s)) == ([2], [4])


def test_xlas_core_ordinal_waiting_for_rendezvous(tmp_path):
    # pytorch/xla test/test_mp_rendezvous.py: print('Core {} waiting for rendezvous ...'.format(ordinal))
    text = "Core 3 waiting for rendezvous ...\nCore 1 waiting for rendezvous ...\nCore 1 got rendezvous!\n"
    assert ranks(store_of(tmp_path, text)) == [1, 3]
    assert ranks(store_of(tmp_path, "Score 3 waiting for rendezvous ...\n")) == []


def test_torch_npus_error_head_names_the_raising_processs_global_rank(tmp_path):
    # Ascend/pytorch: `(PID:%d, Device:%d, RankID:%d)` (a real paste: under vLLM's `[rank7]:`, RankID:7)
    text = ("[ERROR] 2024-05-21-11:57:54 (PID:927000, Device:3, RankID:3) ERR02200 DIST call hccl failed.\n"
            "[ERROR] 2024-05-21-11:57:54 (PID:927001, Device:0, RankID:-1) ERR01002 OPS invalid type\n")
    s = store_of(tmp_path, text)
    assert ranks(s) == [3]
    assert s.ranks.filter(s.ranks["rank"] == 3)["pid"].to_list() == [927000]


def test_nvshmems_bootstrap_names_the_pes_rank_and_their_number(tmp_path):
    src = "/workspace/nvshmem/src/modules/bootstrap/uid/bootstrap_uid.cpp:bootstrap_uid_barrier"
    text = f"{src}:559: rank 2 nranks 4 tag 0 - ENTER\n{src}:575: rank 2 nranks 4 tag 2 - DONE\n"
    s = store_of(tmp_path, text)
    assert (ranks(s), worlds(s)) == ([2], [4])
    assert s.files["unknown"].sum() == 0


def test_a_launchers_prefix_on_a_blank_line_shows_no_process(tmp_path):
    # mpirun's `[1,1]<stdout>:` with nothing after it: rank 1's words are not in the paste
    text = ("[1,0]<stdout>:ptv-gpu01:11007:11098 [0] NCCL INFO rank 0 nranks 4\n"
            "[1,2]<stdout>:ptv-gpu01:11009:11097 [2] NCCL INFO rank 2 nranks 4\n"
            "[1,1]<stdout>:\n")
    assert ranks(store_of(tmp_path, text)) == [0, 2]


def test_torchruns_numbered_failure_heads_its_record_though_blank_after_a_prefix(tmp_path):
    # accelerate's test runner puts `stderr: ` before torchrun's error block: `[3]:`, the record, cut here
    text = ("stderr: Failures:\n"
            "stderr: [1]:\n"
            "stderr:   time      : 2023-08-26_23:22:05\n"
            "stderr:   host      : wph178\n"
            "stderr:   rank      : 1 (local_rank: 1)\n"
            "stderr:   exitcode  : 1 (pid: 8835)\n"
            "stderr: [3]:\n"
            "stderr:   time      : 2023-08-26_23:22:05\n"
            "stderr:   host      : wph178\n"
            "stderr:   rank      : 3 (local_rank: 3)\n")
    assert ranks(store_of(tmp_path, text)) == [1, 3]
