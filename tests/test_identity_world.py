"""The world's size and a process's rank where a line states them in words (parsers/launcher.py's
WORLD_SAID and the literal arguments of init_process_group / init_rpc in a traceback's source line)."""

from __future__ import annotations

import pytest

from tests.factory import text_store as store_of


@pytest.mark.parametrize("line, world", [
    # DeepSpeed's config dump (deepspeed/runtime/config.py)
    ("[2024-01-02 03:04:05,678] [INFO] [config.py:733:__init__] Config mesh_device None world_size = 1", 1),
    # a traceback's source line of the user's call
    ("    dist.init_process_group(backend='nccl', init_method='tcp://192.168.1.2:23456',  world_size=2,"
     "timeout=datetime.timedelta(seconds=15))", 2),
    # ESPnet's distributed option dump
    ("    self.dist_world_size: 4", 4),
])
def test_a_line_that_states_the_worlds_size(tmp_path, line, world):
    s = store_of(tmp_path, line + "\n")
    got = s.ranks["world_size"].drop_nulls().unique().to_list()
    assert got == [world]
    assert s.ranks["rank"].drop_nulls().to_list() == []  # a size names no rank


@pytest.mark.parametrize("line", [
    "def setup(rank, world_size=1):",  # a function's default
    "torchelastic: group_world_size=2 local_world_size=8",  # a node group's, a node's
])
def test_a_default_or_a_groups_size_is_no_worlds(tmp_path, line):
    s = store_of(tmp_path, line + "\n")
    assert s.ranks["world_size"].drop_nulls().to_list() == []


def test_init_rpcs_literal_rank_is_the_failing_processs(tmp_path):
    text = ("Traceback (most recent call last):\n"
            '  File "rpc_test.py", line 40, in <module>\n'
            '    rpc.init_rpc("worker0", rank=0, world_size=2)\n'
            "RuntimeError: In create at tensorpipe/transport/ibv/context.cc:35 \"\": Invalid argument\n")
    s = store_of(tmp_path, text)
    assert s.ranks["rank"].drop_nulls().to_list() == [0]
    assert s.ranks["world_size"].drop_nulls().unique().to_list() == [2]


@pytest.mark.parametrize("command, world, hosts", [
    ("mpirun --np 32 -H spt01:8,spt02:8,pt01:8,pt02:8 -x NCCL_DEBUG=INFO ./all_reduce_perf -b 8 -e 8G",
     32, ["pt01", "pt02", "spt01", "spt02"]),
    ("mpirun -np 4 -H centos01:2,centos02:2 -bind-to none python train.py", 4, ["centos01", "centos02"]),
    # `localhost` is an alias of the launching host, whose name the prompt may give: no host of its own
    ("mpirun -host localhost,172.31.20.228 -np 2 ./all_reduce_perf -b 1250M -e 1250M -g 1", 2,
     ["172.31.20.228"]),
    ("horovodrun --host node1:4,node2:4 -np 8 python train.py", 8, ["node1", "node2"]),
])
def test_mpiruns_command_names_the_worlds_size_and_its_hosts(tmp_path, command, world, hosts):
    s = store_of(tmp_path, command + "\n")
    assert s.ranks["world_size"].drop_nulls().unique().to_list() == [world]
    assert sorted(s.ranks["host"].drop_nulls().unique().to_list()) == hosts
    assert s.ranks["rank"].drop_nulls().to_list() == []


def test_a_host_list_that_names_the_processes_hosts_otherwise_counts_no_host_twice(tmp_path):
    # nccl-tests names its processes' hosts; mpirun's list gives the same two machines by address
    text = ("mpirun --bind-to none --host 10.0.0.48:1,10.0.0.52:1 -np 2 ./build/broadcast_perf -b 8 -e 128M\n"
            "#  Rank  0 Group  0 Pid  14926 on v100-gpu-1 device  0 [0x00] Tesla V100-SXM2-32GB\n"
            "#  Rank  1 Group  0 Pid   9210 on v100-gpu-5 device  0 [0x00] Tesla V100-SXM2-32GB\n")
    s = store_of(tmp_path, text)
    assert sorted(s.ranks["host"].drop_nulls().unique().to_list()) == ["v100-gpu-1", "v100-gpu-5"]
    # named alike, the list stays: it names the hosts no process line shows
    same = text.replace("10.0.0.48:1,10.0.0.52:1", "v100-gpu-1:1,v100-gpu-7:1")
    s = store_of(tmp_path, same)
    got = sorted(s.ranks["host"].drop_nulls().unique().to_list())
    assert got == ["v100-gpu-1", "v100-gpu-5", "v100-gpu-7"]
