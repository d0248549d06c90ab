"""Identity, session 16 (issue 31, item 4): what reads as a launcher prefix and is the message's first word,
and rank and world-size sentences of whole families of logs, each from the code that prints it."""

from __future__ import annotations

from tests.factory import text_store as store_of, ranks_of as ranks, worlds_of as worlds, hosts_of as hosts
from tracekit.parsers.text import lines_frame


def test_a_cann_error_code_at_a_lines_start_is_the_message_not_a_hosts_prefix(tmp_path):
    # torch_npu / CANN print `EJ0001: [PID: ..] ...` (a vLLM-Ascend paste, the worker's own prefix taken off);
    # the code fits `host: ` (a letter, then a digit), and on two lines pdsh's prefix would be assumed
    text = ("EJ0001: [PID: 35532] 2025-08-26-04:05:21.569.071 Failed to initialize the HCCP process. Reason: "
            "Maybe the last training process is running.\n"
            "EJ0001: [PID: 35533] 2025-08-26-04:05:21.569.072 Failed to initialize the HCCP process.\n"
            "E19999: Inner Error!\n"
            "E19999: Inner Error!\n")
    df = lines_frame("npu.log", text)
    assert df["text"].str.starts_with("E").all() and df["pdsh_host"].null_count() == df.height
    assert df["text"][0].startswith("EJ0001: [PID: 35532] ")
    assert hosts(store_of(tmp_path, text)) == []
    # under pdsh's own prefix, the prefix names the host and the code stays the message's
    text = "worker-1: EH9999: Inner Error!\nworker-1: EH9999: wait for compute device to finish failed\n"
    df = lines_frame("pdsh.log", text)
    assert df["text"].to_list()[0] == "EH9999: Inner Error!"
    assert df["pdsh_host"].to_list() == ["worker-1", "worker-1"]
    # a host's prefix of the same letters-then-digits shape stays a prefix
    df = lines_frame("h.log", "node12: hello\nnode12: again\n")
    assert df["pdsh_host"].to_list() == ["node12", "node12"] and df["text"].to_list() == ["hello", "again"]


def test_skypilots_node_prefix_names_a_host_per_node_and_no_rank(tmp_path):
    # SkyPilot's log prefix (sky/skylet: `(head, rank=0, pid=..)`, `(worker1, rank=1, pid=.., ip=..)`; its Go
    # exec writes `ip=` before `pid=`): the node's name is its host's; its rank is the node's, no process's
    text = ("\x1b[36m(head, rank=0, pid=3808)\x1b[0m All nodes: 10.100.9.12:8,10.100.10.12:8\n"
            "\x1b[36m(worker1, rank=1, ip=10.100.10.12, pid=2769)\x1b[0m Worker nodes\n"
            "(worker2, rank=2, pid=13680, ip=10.146.0.25) [2024-01-15 23:37:46,764] torch.distributed.run: "
            "[WARNING] master_addr is only used for static rdzv_backend\n"
            "(head, rank=0, pid=27079) ===== Benchmark Results =====\n")
    s = store_of(tmp_path, text)
    assert hosts(s) == ["head", "worker1", "worker2"]
    assert ranks(s) == []
    # its older form numbered the nodes (`(node-1 pid=.., ip=..)`); Ray's own actors stay hosted by their ip
    s = store_of(tmp_path, "(node-0 pid=26831) Local Rank: 0, Epoch: 0\n"
                           "(node-1 pid=23066, ip=172.31.23.131) Local Rank: 0, Epoch: 0\n")
    assert hosts(s) == ["node-0", "node-1"]
    s = store_of(tmp_path, "(RayTrainWorker pid=19799, ip=10.72.0.6) hello\n"
                           "(RayTrainWorker pid=19799, ip=10.72.0.6) again\n")
    assert hosts(s) == ["10.72.0.6"]


def test_rank_and_world_sentences_of_c10d_colossalai_paddle_lmdeploy(tmp_path):
    # c10d's store-based barrier since 1.13 (the older `for 4 nodes.` form is read already)
    s = store_of(tmp_path, "2023-02-27 15:27:11,696 INFO Rank 3: Completed store-based barrier for "
                           "key:store_based_barrier_key:1 with 4 nodes.\n"
                           "[rank1]:[I ProcessGroupNCCL.cpp:1] Rank 1: Completed store-based barrier for "
                           "key:store_based_barrier_key:1 with 4 nodes.\n")
    assert ranks(s) == [1, 3] and worlds(s) == [4]
    # ColossalAI's ParallelContext.set_device: its global rank
    s = store_of(tmp_path, "[01/01/24 10:00:00] INFO     colossalai - colossalai - INFO: process rank 5 is "
                           "bound to device 5\n")
    assert ranks(s) == [5]
    # PaddlePaddle's ProcessGroupNCCL: the global group (gid 0) names the world's rank and size; another
    # group's rank is group-local
    glog = ("I1107 11:51:35.221338 564864 process_group_nccl.cc:702] init nccl rank_in_group: {}, "
            "nranks: {}, gid: {}, place key: Place(gpu:3), store_key: nccl_ids/0/0\n")
    s = store_of(tmp_path, glog.format(3, 4, 0))
    assert ranks(s) == [3] and worlds(s) == [4]
    s = store_of(tmp_path, glog.format(1, 2, 5))
    assert ranks(s) == [] and worlds(s) == []
    # PaddlePaddle's launcher: the trainers that aborted (global ranks) of the world it counts
    s = store_of(tmp_path, "ERROR 2020-11-30 13:01:49,988 utils.py:413] ABORT!!! Out of all 8 trainers, the "
                           "trainer process with rank=[2, 3] was aborted. Please check its log.\n")
    assert ranks(s) == [2, 3] and worlds(s) == [8]
    # LMDeploy's model agent; a user's `Rank N` message in any language
    s = store_of(tmp_path, "2024-10-21 10:42:00,218 - lmdeploy - ERROR - model_agent.py:489 - "
                           "Rank[2] failed.\n")
    assert ranks(s) == [2]
    s = store_of(tmp_path, "Rank 1 训练步骤错误: Application timeout caused pair closure\n")
    assert ranks(s) == [1]
    # (lines that say more than their writer stay for the parser of what they say: the fallback reader's)
    assert s.files["unknown"].sum() == 1


def test_skypilots_head_is_the_host_its_nccl_tests_lines_name(tmp_path):
    text = ("(worker1, rank=1, pid=20075, ip=10.164.15.193) 10.164.15.192,10.164.15.193\n"
            "(head, rank=0, pid=21170) # nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor)\n"
            "(head, rank=0, pid=21170) #  Rank  0 Group  0 Pid  21431 on nccl-ebd1-head-5vwmjam2-compute "
            "device  0 [0x00] NVIDIA A100-SXM4-40GB\n"
            "(head, rank=0, pid=21170) #  Rank  1 Group  0 Pid  21431 on nccl-ebd1-head-5vwmjam2-compute "
            "device  1 [0x00] NVIDIA A100-SXM4-40GB\n")
    s = store_of(tmp_path, text)
    assert hosts(s) == ["nccl-ebd1-head-5vwmjam2-compute", "worker1"] and ranks(s) == [0, 1]


def test_a_host_that_a_file_of_one_rank_names_elsewhere_is_another_machine_not_that_rank(tmp_path):
    # pdsh's `node2: ` lines beside NCCL's lines of one process on node1 (a GPT-NeoX paste): node2 is a host
    # of its own, not rank 4's
    text = ("node2: Last error:\n"
            "node2: Net : Call to recv from NODE2_IP<56843> failed : Connection refused\n"
            "node1: node1:15874:17284 [4] NCCL INFO comm 0x55 rank 4 nranks 8 cudaDev 4 busId 61000 - "
            "Init COMPLETE\n"
            "node1: node1:15874:17284 [4] NCCL INFO Channel 00 : 4[61000] -> 3[42000] via SHM/direct\n")
    s = store_of(tmp_path, text)
    assert hosts(s) == ["node1", "node2"] and ranks(s) == [4]
    assert s.ranks.filter(s.ranks["host"] == "node2")["rank"].to_list() == [None]
