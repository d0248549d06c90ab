"""Start-up stalls read from what the start-up prints (issue 31, words): a stack dump of a hung process
whose frames are in start-up (rules_wait.stalled_in_start_up) and workers a scheduler cannot place
(rules_salient's placement waits). Stacks in py-spy's own shape, with the frames torch 2.x has there
(torch/distributed/rendezvous.py, distributed_c10d.py); placement lines as Ray's autoscaler and vLLM's
executor/ray_utils.py print them (pasted in vllm-project/vllm issues)."""

from __future__ import annotations

from tests.factory import text_store
from tracekit.outcome import Kind
from tracekit.verdict import decide

#: py-spy dump of a process stuck creating its store (verl worker, torch 2.4's line numbers)
STORE_STACK = """\
Process 206492: python -m verl.trainer.main_ppo
Python v3.10.14 (/usr/bin/python3.10)

Thread 206492 (idle): "MainThread"
    _create_c10d_store (torch/distributed/rendezvous.py:189)
    _env_rendezvous_handler (torch/distributed/rendezvous.py:269)
    init_process_group (torch/distributed/distributed_c10d.py:1520)
    wrapper (torch/distributed/c10d_logger.py:83)
    init (verl/workers/fsdp_workers.py:121)
"""

#: the same process waiting in init_process_group's store barrier (torch 1.13)
BARRIER_STACK = """\
Thread 1884 (idle): "MainThread"
    _store_based_barrier (torch/distributed/distributed_c10d.py:346)
    init_process_group (torch/distributed/distributed_c10d.py:781)
    init_distributed (deepspeed/comm/comm.py:624)
    main (train.py:88)
"""

#: a training process in a collective: no start-up frame
ALLREDUCE_STACK = """\
Thread 3311 (active): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:2050)
    wrapper (torch/distributed/c10d_logger.py:75)
    train_step (train.py:140)
    main (train.py:201)
"""


def test_a_stack_dump_in_the_store_is_an_init_stall_naming_the_function(tmp_path):
    v = decide(text_store(tmp_path, STORE_STACK))
    assert v.kind is Kind.INIT_STALL
    assert "_create_c10d_store (torch/distributed/rendezvous.py:189)" in v.summary
    assert "pid 206492" in v.summary or "thread 206492" in v.summary


def test_the_store_barrier_of_init_is_start_up_too(tmp_path):
    v = decide(text_store(tmp_path, BARRIER_STACK))
    assert v.kind is Kind.INIT_STALL
    assert "_store_based_barrier" in v.summary


def test_a_start_up_stack_after_steps_is_no_init_stall(tmp_path):
    steps = "".join(f"step {i} loss 2.{i}\n" for i in range(1, 6))
    v = decide(text_store(tmp_path, steps + STORE_STACK))
    assert v.kind is not Kind.INIT_STALL


def test_a_stack_in_a_collective_is_no_start_up(tmp_path):
    v = decide(text_store(tmp_path, ALLREDUCE_STACK))
    assert v.kind is not Kind.INIT_STALL


#: Ray's autoscaler (autoscaler/_private/autoscaler.py) on a request no node type fits, as the driver
#: shows it, and vLLM's wait for its placement group (vllm/executor/ray_utils.py), from vllm issues
AUTOSCALER = ("(autoscaler +21m12s) Error: No available node types can fulfill resource request "
              "{'node:10.2.0.127': 0.001, 'GPU': 1.0}. Add suitable node types to this cluster to resolve "
              "this issue.\n")
PG_WAIT = ("INFO 02-02 19:54:30 ray_utils.py:212] Waiting for creating a placement group of specs for 10 "
           "seconds. specs=[{'GPU': 1.0, 'node:172.31.42.4': 0.001}, {'GPU': 1.0}]. Check `ray status` to "
           "see if you have enough resources.\n")


def test_workers_the_autoscaler_cannot_place_are_an_init_stall(tmp_path):
    v = decide(text_store(tmp_path, AUTOSCALER))
    assert v.kind is Kind.INIT_STALL
    assert "No available node types" in v.summary and "'node:10.2.0.127'" in v.summary


def test_vllms_placement_group_wait_is_an_init_stall_with_the_time_waited(tmp_path):
    later = PG_WAIT.replace("10 \nseconds", "30 seconds").replace("for 10", "for 30").replace("19:54:30",
                                                                                          "19:54:50")
    v = decide(text_store(tmp_path, "Started a local Ray instance.\n" + PG_WAIT + later))
    assert v.kind is Kind.INIT_STALL
    assert "waited 30 s" in v.summary


def test_vllms_warning_before_the_wait_is_quoted_first(tmp_path):
    """vLLM warns before it waits (executor/ray_utils.py) in words of no log level tracekit reads."""
    warn = ("WARNING 02-02 19:54:20 ray_utils.py:315] The number of required GPUs exceeds the total number "
            "of available GPUs in the placement group.\n")
    v = decide(text_store(tmp_path, "Started a local Ray instance.\n" + warn + PG_WAIT))
    assert v.kind is Kind.INIT_STALL
    assert "required GPUs exceeds" in v.summary and "waited 10 s" in v.summary


def test_a_placement_wait_after_steps_is_no_init_stall(tmp_path):
    steps = "".join(f"step {i} loss 2.{i}\n" for i in range(1, 6))
    v = decide(text_store(tmp_path, steps + AUTOSCALER))
    assert v.kind is not Kind.INIT_STALL


def test_a_rank_that_joined_while_the_others_left_no_record_is_an_init_stall(tmp_path):
    """Lightning's own line (strategies' _init_dist_connection: ``Initializing distributed: GLOBAL_RANK: 0,
    MEMBER: 1/8``) from rank 0 alone, the 7 others nowhere: init_process_group waits for them."""
    v = decide(text_store(tmp_path, "GPU available: True, used: True\n"
                                    "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8\n"))
    assert (v.kind, v.ranks) == (Kind.INIT_STALL, list(range(1, 8)))
    assert "MEMBER: 1/8" in v.summary
    assert "ranks 1-7 of the world of 8 never did and left no record" in v.summary


def test_a_rank_that_logged_but_never_said_it_joined_keeps_it_undecided(tmp_path):
    """Rank 0 completed the store barrier for all 4 (torch's ``Rank 0: Completed store-based barrier for 4
    nodes.``) and never printed its own join line: the excerpt cut it, the others may have joined."""
    v = decide(text_store(tmp_path, "initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/4\n"
                                    "Rank 0: Completed store-based barrier for 4 nodes.\n"
                                    "Rank 1: Completed store-based barrier for 4 nodes.\n"))
    assert v.kind is not Kind.INIT_STALL


def test_every_rank_joined_and_the_log_ends_there_is_an_init_stall(tmp_path):
    # (session 23: fairseq prints `initialized host H as rank N` once init_process_group returns
    # (fairseq/distributed/utils.py:298); none did and the log ends at the joins: dv4-017's first call)
    v = decide(text_store(tmp_path, "".join(f"| distributed init (rank {r}): tcp://localhost:16344\n"
                                            for r in range(8))))
    assert v.kind is Kind.INIT_STALL
