"""Rank identity (issue 31 item 4), session 27: the visible ranks of lines that name their writer or the rank at
fault in other programs' words (parsers/rank_words.py): torchelastic's worker status event, HCCL's link
parameters, TSL's coordination service (JAX), a metrics line's rank field, a logger's source place before a
writer's rank tag, and NCCL's tree and connection lines of a paste that lost their `host:pid:tid`. Real dev
excerpts, real lines from public threads and the programs' code, and small logs in each program's format."""

from __future__ import annotations

import polars as pl
import pytest

from tests.conftest import ROOT
from tests.factory import file_ranks, text_ranks
from tracekit.parsers import rank_words
from tracekit.parsers.text import lines_frames, raw

WILD = ROOT / "samples" / "wild"


def _words(body: str) -> pl.DataFrame:
    """The ``ranks`` rows rank_words reads from ``body``'s lines (empty where it reads none)."""
    parsed = rank_words.parse(lines_frames([raw("job.log", body)]))
    return parsed.tables.get("ranks", pl.DataFrame({"rank": []}, schema={"rank": pl.Int64}))


@pytest.mark.parametrize("excerpt, want", [
    # torchelastic's worker status events: the worker's global rank (the agent's event names none)
    ("dv11-007-yolov5-torchelastic-worker-succeeded-events.txt", [3]),
    ("dv27-014-torchelastic-worker-group-succeeded-clean-end.txt", [0]),
    # HCCL's createLink parameters: the writer's and its peer's user (world) ranks
    ("dv24-005-hccl-transport-init-rank7-15.txt", [7, 15]),
    # the coordination service sets JAX's task 37 to ERROR (heartbeat timeout): the process that failed
    ("dv20-029-t5x-jax-task37-heartbeat-timeout.txt", [37]),
    # ... but a task that merely connected to it is the service's word, not that process's line
    ("dv27-012-pjrt-gpu-multihost-coordination-connected.txt", []),
    # WeNet's step line carries its writer's rank: `... lr 0.00065741 rank 0 RSS MEM USE: 5.11G`
    ("dv25-008-wenet-rank0-rss-climbs-while-training.txt", [0]),
    # NCCL's lines with their `host:pid:tid` stripped (`[0] NCCL INFO Trees [0] -1/-1/-1->1->0`): the trees'
    # and the connection's writers, not the `[0]`/`[1]` device tags
    ("dv12-013-nccl-single-vm-3gpu-init-hangs-after-p2p-ipc.txt", [0, 1]),
])
def test_dev_excerpts_count_the_ranks_their_lines_show(excerpt, want):
    assert file_ranks(WILD / excerpt) == want


# a real torchelastic event (a YOLOv5 thread's log, as torch/distributed/elastic/events writes it)
WORKER_EVENT = ('{"name": "torchelastic.worker.status.SUCCEEDED", "source": "WORKER", "timestamp": 0, "metadata": '
                '{"run_id": "none", "global_rank": 5, "group_rank": 0, "worker_id": "93895", "role": "default", '
                '"hostname": "42fbee0e8ce8", "state": "SUCCEEDED", "total_run_time": 327467}}\n')
AGENT_EVENT = ('{"name": "torchelastic.worker.status.SUCCEEDED", "source": "AGENT", "timestamp": 0, "metadata": '
               '{"run_id": "none", "global_rank": null, "group_rank": 0, "worker_id": null, "role": "default"}}\n')


def test_a_workers_status_event_names_its_global_rank_and_the_agents_none():
    assert _words(WORKER_EVENT)["rank"].to_list() == [5]
    assert _words(AGENT_EVENT)["rank"].to_list() == []


@pytest.mark.parametrize("line, want", [
    # vllm-ascend thread's log (HCCL transport_manager.cc): rank[] is the group's, the user ranks the world's
    ("[ERROR] HCCL(17528,python3):2026-03-18-10:34:43.142.013 [transport_manager.cc:1325] [18744][InitChannelStage]"
     "[Timeout]Transport init error! createLink para:rank[1]-localUserrank[1]-localIpAddr[192.168.200.100/1], "
     "remoteRank[0]-remoteUserrank[0]-remoteIpAddr[192.168.200.100/0], machineType[1], linkMode[1]", [0, 1]),
    # an older CANN's wording (`creakLink`, `dst_rank`), the group's rank 5 the world's 4
    ("Transport init error. Reason: [Create] [DestLink]Create Dest error! createLink para:rank[5]-localUserrank[4]"
     "-localIpAddr[127.10.0.1], dst_rank[6]-remoteUserrank[7]-remote_ip_addr[127.10.0.1]", [4, 7]),
    ("Transport init error. Reason: [Create][DestLink]Create Dest error! creakLink para:rank[9]-localUserrank[9]-"
     "localIpAddr[135.173.74.4], dst_rank[0]-remoteUserrank[0]-remote_ip_addr[135.173.74.3]", [0, 9]),
])
def test_hccl_link_parameters_name_the_world_ranks(line, want):
    assert sorted(_words(line + "\n")["rank"].to_list()) == want


def test_the_coordination_service_names_the_task_it_set_to_error():
    failed = ("E1115 16:03:15.140058 coordination_service.cc:954] /job:jax_worker/replica:0/task:3 has been set to "
              "ERROR in coordination service: UNAVAILABLE: Task /job:jax_worker/replica:0/task:3 heartbeat timeout.\n")
    joined = ("I0915 02:15:50.592342 coordination_service.cc:551] /job:jax_worker/replica:0/task:12 has connected "
              "to coordination service. Incarnation: 9502647996696210448\n")
    assert _words(failed)["rank"].to_list() == [3]
    assert _words(joined)["rank"].to_list() == []


@pytest.mark.parametrize("body, want", [
    # a metrics line with its writer's rank as a field
    ("2022-03-23 23:57:28,855 DEBUG TRAIN Batch 0/185100 loss 4.577072 lr 0.00065741 rank 3 RSS MEM USE: 5.11G\n",
     [3]),
    ("step 10 loss 1.25 | rank 2 | 310 tokens/s\n", [2]),
    # a logger's source place between its level and the writer's tag
    ("[2025-01-01 00:00:00] INFO train.py:100: [rank 2] step 10\n", [2]),
    ("2025-01-01 00:00:00,123 WARNING [utils.py:12] Rank 4: skipping a bad batch\n", [4]),
    ("Rank: 1 | loss: 0.3\n", [1]),
    # a peer a line waits for, or a rank in a hint, is no writer's
    ("Timed out waiting for rank 3 to join\n", []),
    ("INFO train.py:100: please check the logs of the other ranks\n", []),
])
def test_a_writers_rank_in_its_own_line(tmp_path, body, want):
    assert text_ranks(tmp_path, body) == want


def test_hostless_tree_and_connection_lines_name_their_writers():
    body = ("[0] NCCL INFO Channel 00/02 :    0   1   2\n"
            "[1] NCCL INFO Trees [0] 2/-1/-1->1->0 [1] 2/-1/-1->1->0\n"
            "[2] NCCL INFO Channel 00 : 2[3000] -> 0[1000] via P2P/IPC\n"
            "[0] NCCL INFO Channel 00 : 1[2000] -> 0[1000] [receive] via NET/Socket/0\n")
    assert sorted(_words(body)["rank"].to_list()) == [0, 1, 2]


def test_hostless_comm_lines_take_precedence_over_trees():
    # a file whose comm lines give its communicators: their largest one's ranks, the trees' (of any) not added
    body = ("[0] NCCL INFO comm 0x55d4 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
            "[0] NCCL INFO comm 0x66d4 rank 0 nranks 1 cudaDev 0 busId 1000 - Init COMPLETE\n"
            "[0] NCCL INFO Trees [0] 5/-1/-1->4->3\n")
    assert sorted(_words(body)["rank"].to_list()) == [0]
