"""Ranks, world sizes and hosts as the programs that print them word them (issue 31, item 4): fairseq's
``initialized host``, accelerate's state, Megatron's ``using world size``, DeepSpeed's launcher and command,
``accelerate launch``, Slurm's ``srun: error``, torchelastic's rendezvous node ids and Open MPI / PMIx heads;
each with the lines of the same shape that must not count."""

from __future__ import annotations

import pytest

from tests.factory import text_store as store_of, ranks_of as ranks, worlds_of as worlds, hosts_of as hosts
from tracekit.coverage import coverage


def test_fairseqs_initialized_host_names_the_rank_and_its_host(tmp_path):
    # fairseq/distributed/utils.py: logger.info("initialized host {} as rank {}".format(gethostname(), rank))
    text = ("2020-07-28 07:40:23 | INFO | fairseq.distributed_utils | initialized host node-a7 as rank 5\n"
            "2020-07-28 07:40:23 | INFO | fairseq.distributed_utils | initialized host node-a7 as rank 4\n"
            "| initialized host node-b2 as rank 0\n")
    s = store_of(tmp_path, text)
    assert ranks(s) == [0, 4, 5]
    assert hosts(s) == ["node-a7", "node-b2"]


@pytest.mark.parametrize("line, world", [
    # Megatron's arguments (megatron/training/arguments.py)
    ("using world size: 8, data-parallel size: 2, context-parallel size: 1, tensor-model-parallel size: 4, "
     "pipeline-model-parallel size: 1", 8),
    ("[2024-05-01 10:00:00] World size: 16", 16),
    ("+ export WORLD_SIZE=4", 4),
    ("The world size is 2", 2),
])
def test_the_worlds_size_in_words(tmp_path, line, world):
    s = store_of(tmp_path, line + "\n")
    assert worlds(s) == [world]
    assert ranks(s) == []


@pytest.mark.parametrize("line", [
    "local world size: 8",  # a node's
    "group world size: 2",  # a node group's
    "LOCAL_WORLD_SIZE=8",
    "world size of the sub-group 4",  # no number after the words
])
def test_a_nodes_or_a_groups_size_in_words_is_no_worlds(tmp_path, line):
    assert worlds(store_of(tmp_path, line + "\n")) == []


def test_deepspeeds_launcher_names_its_hosts_and_world(tmp_path):
    # deepspeed/launcher/launch.py main(): the world info, the nodes and each one's processes, the mapping
    text = ("[2023-10-13 11:31:28,593] [INFO] [launch.py:138:main] WORLD INFO DICT: "
            "{'gpu-node-1': [0, 1, 2, 3], 'gpu-node-2': [0, 1, 2, 3]}\n"
            "[2023-10-13 11:31:28,593] [INFO] [launch.py:144:main] nnodes=2, num_local_procs=4, node_rank=0\n"
            "[2023-10-13 11:31:28,593] [INFO] [launch.py:155:main] global_rank_mapping=defaultdict("
            "<class 'list'>, {'gpu-node-1': [0, 1, 2, 3], 'gpu-node-2': [4, 5, 6, 7]})\n")
    s = store_of(tmp_path, text)
    assert worlds(s) == [8]
    assert hosts(s) == ["gpu-node-1", "gpu-node-2"]
    assert ranks(s) == []  # the mapping is the launcher's plan, no process's word
    assert s.files["unknown"].sum() == 0


def test_deepspeeds_launcher_on_localhost_names_one_machine_by_that_name_alone(tmp_path):
    # (as torchrun's error block does: `host : localhost`); a name the processes give is the machine's
    text = ("[2021-02-08 22:59:18,790] [INFO] [launch.py:78:main] WORLD INFO DICT: {'localhost': [0, 1]}\n"
            "[2021-02-08 22:59:18,790] [INFO] [launch.py:87:main] nnodes=1, num_local_procs=2, node_rank=0\n")
    s = store_of(tmp_path, text)
    assert worlds(s) == [2]
    assert hosts(s) == ["localhost"]
    s = store_of(tmp_path, text + "gpu1:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>\n")
    assert hosts(s) == ["gpu1"]
    # beside another host, localhost is the launching host's alias
    text = ("[2021-02-08 22:59:18,790] [INFO] [launch.py:78:main] WORLD INFO DICT: "
            "{'localhost': [0], 'gpu2': [0]}\n")
    assert hosts(store_of(tmp_path, text)) == ["gpu2"]


@pytest.mark.parametrize("command, world", [
    ("deepspeed --num_gpus 4 --num_nodes 2 train.py --deepspeed ds.json", 8),
    ("$ deepspeed --num_gpus=2 main.py", 2),
    ("deepspeed --hostfile hosts.txt --num_gpus 8 train.py", None),  # as many nodes as the hostfile has
    ("accelerate launch --num_processes 6 --multi_gpu train.py", 6),
    ("accelerate launch --config_file fsdp.yaml train.py", None),
])
def test_a_launch_command_states_the_worlds_size(tmp_path, command, world):
    s = store_of(tmp_path, command + "\n")
    assert worlds(s) == ([world] if world else [])


def test_slurms_error_names_the_tasks_hosts_and_no_ranks_under_a_launcher(tmp_path):
    # slurm src/srun: `srun: error: HOST: task(s) LIST: Exited with exit code N`; a task id is a rank only
    # where each task is one process of the job: not where a launcher runs under each task (torchrun's words),
    # when the task is a node (s26: parsers/slurm.py reads the ids as ranks otherwise, as the dev labels of
    # dev-072 and dv15-034 count them)
    text = ("srun: error: slurm-job-compute-0-0: tasks 2-7: Exited with exit code 1\n"
            "srun: error: slurm-job-compute-0-1: tasks 8-13,15: Exited with exit code 1\n"
            "srun: error: slurm-job-compute-0-1: task 14: Exited with exit code 1\n")
    s = store_of(tmp_path, "torchrun --nnodes 16 --nproc-per-node 8 train.py\n" + text)
    assert hosts(s) == ["slurm-job-compute-0-0", "slurm-job-compute-0-1"]
    assert ranks(s) == []


def test_torchelastics_node_id_names_the_agents_host(tmp_path):
    # torch/distributed/elastic/rendezvous/dynamic_rendezvous.py: a node is `{fqdn}_{pid}_{local_id}`
    line = ("WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'jean-zay-iam37-ib0_187281_0'"
            " has failed to send a keep-alive heartbeat to the rendezvous 'none' due to an error of type "
            "RendezvousConnectionError.\n")
    s = store_of(tmp_path, line * 2)
    assert hosts(s) == ["jean-zay-iam37-ib0"]
    assert s.ranks.filter(s.ranks["host"] == "jean-zay-iam37-ib0")["pid"].to_list() == [187281]
    assert ranks(s) == []


def test_open_mpi_and_pmix_heads_name_each_processs_host(tmp_path):
    text = ("[qbd487:400139] PMIX ERROR: ERROR in file ../src/mca/gds/ds12/gds_ds12_lock_pthread.c at line 169\n"
            "[qbd488:616078] PMIX ERROR: ERROR in file ../src/mca/gds/ds12/gds_ds12_lock_pthread.c at line 169\n"
            "[v100-gpu-1:12345] *** Process received signal ***\n"
            "[v100-gpu-1:12345] Signal: Segmentation fault (11)\n")
    s = store_of(tmp_path, text)
    assert hosts(s) == ["qbd487", "qbd488", "v100-gpu-1"]
    assert ranks(s) == []


@pytest.mark.parametrize("line", [
    "[train.py:546] (0/7) epoch 1",  # a logger's file and line
    "[trainer:1234] INFO loss 0.5",  # a logger's module and line
    "[socket.cpp:204] [c10d] The hostname of the client socket cannot be retrieved.",
    "[10:12] step 5",  # a clock
])
def test_a_loggers_file_and_line_is_no_host(tmp_path, line):
    assert hosts(store_of(tmp_path, line + "\n")) == []


def test_composers_log_header_names_the_writers_rank_and_pid(tmp_path):
    # llm-foundry's train.py: `%(asctime)s: rank{global_rank}[%(process)d][%(threadName)s]: %(levelname)s: ...`
    text = ("2024-08-20 15:00:38,101: rank0[113865][MainThread]: INFO: llmfoundry.command_utils.train: "
            "Starting training...\n"
            "2024-08-20 15:00:38,102: rank3[113868][MainThread]: DEBUG: composer.trainer.trainer: Spinning the "
            "dataloaders\n")
    s = store_of(tmp_path, text)
    assert ranks(s) == [0, 3]
    assert sorted(s.ranks["pid"].drop_nulls().to_list()) == [113865, 113868]


@pytest.mark.parametrize("actor, rank", [
    ("Worker_TP2", 2),  # vLLM v1's worker of tensor-parallel rank 2, no other group
    ("Worker_PP0_TP3", 3),
    ("Worker_PP1", 1),  # pipeline rank 1 of a job without tensor parallelism
    ("Worker_PP1_TP2", None),  # past the first pipeline stage: its global rank needs the TP size
    ("Worker_DP1_TP0", None),  # a data-parallel engine's
    ("VllmWorkerProcess", None),
])
def test_vllms_worker_name_is_a_rank_only_where_it_is_the_global_one(tmp_path, actor, rank):
    line = f"({actor} pid=967) ERROR 12-16 02:10:29 [multiproc_executor.py:822] WorkerProc hit an exception.\n"
    assert ranks(store_of(tmp_path, line)) == ([rank] if rank is not None else [])


def test_espnets_distributed_options_name_the_rank_and_the_world(tmp_path):
    text = "self.dist_backend: nccl\nself.dist_rank: 1\nself.dist_world_size: 4\n"
    s = store_of(tmp_path, text)
    assert ranks(s) == [1] and worlds(s) == [4]
    # a dataloader worker's id or a sub-group's local rank is no process's rank
    s = store_of(tmp_path, "worker_id: 3\nself.dist_local_rank: 2\n")
    assert ranks(s) == []


def test_nccl1s_tests_name_a_rank_per_device(tmp_path):
    text = ("#   Rank  0 uses device  0 [0x01] GeForce GTX TITAN X\n"
            "#   Rank  1 uses device  1 [0x02] GeForce GTX TITAN X\n")
    assert ranks(store_of(tmp_path, text)) == [0, 1]


def test_paddles_container_rank_is_a_local_rank(tmp_path):
    line = ("Container rank 0 status failed cmd ['/opt/conda/bin/python', '-u', 'train_with_fleet.py'] code 1 "
            "log log/workerlog.0\n")
    s = store_of(tmp_path, line)
    assert s.ranks["local_rank"].drop_nulls().to_list() == [0]
    # a pod's number: its global one where no line shows a second node, and the coverage says how it was read
    assert ranks(s) == [0]
    assert "rank 0 numbered by local rank, no line showing a second node" in coverage(s).describe()


def test_tensorrt_llms_logger_names_the_writers_rank(tmp_path):
    text = ("[11/18/2025-09:33:30] [TRT-LLM] [RANK 0] [E] Failed to initialize executor on rank 0: "
            "[TensorRT-LLM][ERROR] Assertion failed: Failed, NCCL error\n"
            "[10/21/2025-23:23:13] [TRT-LLM] [I] TensorRT-LLM inited.\n"
            "[04/29/2026-20:54:16] [TRT-LLM] [RANK 3] [I] CutlassFusedMoE selects alltoall_method_type\n")
    assert ranks(store_of(tmp_path, text)) == [0, 3]


def test_the_tutorials_rank_has_data_names_each_rank(tmp_path):
    # pytorch/tutorials intermediate_source/dist_tuto.rst: print('Rank ', rank, ' has data ', tensor[0])
    text = "Rank  0  has data  2.0\nRank  1  has data  2.0\n"
    assert ranks(store_of(tmp_path, text)) == [0, 1]
    assert ranks(store_of(tmp_path, "Ranked 3 has data\n")) == []


def test_a_log_services_stamp_and_tab_are_taken_off(tmp_path):
    # an export of a log service: RFC 3339 stamp, a tab, then the line as the process wrote it
    text = ("2023-03-09T10:53:23.670-05:00\tERROR:torch.distributed.elastic.agent.server.api:Error waiting on "
            "exit barrier. Elapsed: 315.7792458534241 seconds\n"
            "2023-03-09T10:53:23.670-05:00\t[rank3]: RuntimeError: boom\n")
    s = store_of(tmp_path, text)
    assert ranks(s) == [3]
