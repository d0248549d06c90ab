"""Session 31, health31b: healthy and slow program output read as UNDECIDED, second round (issue 31). Covers:

- teardown.ended_then_torn_down (teardown31's rule, which this file's first rule duplicated and was folded into
  at the merge): Megatron's ``[after training is done]``, then the multi-node teardown's
  lines with error words (NCCL's ``misc/socket.cc:64 -> 3``, the heartbeat monitor's ``TCPStore.cpp:125]
  [c10d] recvValue failed ... Connection reset by peer``), then DeepSpeed's launcher ``Process N exits
  successfully.`` is HEALTHY (samples/wild/dv48-007, dv43-002); never where the error words come before the
  work's end, or where a process exits non-zero;
- rules_progress.clean_but_partial: a loop's last step at its stated total that names no rank (Megatron's
  ``iteration 20/ 20``) is the end of the ranks seen in its file (samples/wild/dv48-006, said with its
  iteration times), never of a rank whose own step lines stop short of it;
- progress_figures.ticks: a step's timing block printed again and again (``forward time: 0.35s`` ...
  ``total step time: 0.97s``, a real gloo DDP run's) is read by its whole, the key with the largest figure;
  its parts read after the whole are no step that alternates fast and slow (no SLOW_PROGRESS);
- parsers/work_done.COLLECTIVE_OK: a collective said completed on every visible rank (``Rank 0: all_reduce
  completed``, the real output of a 2-process gloo run under torchrun) is that rank's result: HEALTHY; an
  NCCL line or a line with a failure word is none.
"""

from __future__ import annotations

from pathlib import Path

from tests.factory import events_of, text_store
from tracekit.ingest import ingest
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

WILD = Path(__file__).parent.parent / "samples" / "wild"

#: samples/wild/dv48-007's lines (Megatron-DeepSpeed on 2 nodes, its launcher's `host: ` prefix): the last
#: iteration, the program's end, the teardown's lines with error words, the launcher's exits
STEPS = ("localhost: steps: 2 loss: 12.6373 iter time (s): 65.412 samples/sec: 0.122\n"
         "192.168.205.202:  iteration        2/       2 | consumed samples:           16 | consumed tokens:  "
         "      32768 | elapsed time per iteration (ms): 66348.7 | learning rate: 1.000E-06 | global batch "
         "size:     8 | lm loss: 1.263726E+01 | loss scale: 1.0\n")
END = "localhost: [after training is done] datetime: 2026-03-31 16:39:35 \n"
TEARDOWN = ("192.168.205.202: DGX2-2:1314970:1316911 [0] NCCL INFO misc/socket.cc:64 -> 3\n"
            "192.168.205.202: DGX2-2:1314970:1316911 [0] NCCL INFO misc/socket.cc:81 -> 3\n"
            "localhost: [rank1]:[W331 16:39:45.841627790 TCPStore.cpp:125] [c10d] recvValue failed on "
            "SocketImpl(fd=102, addr=[::]:19725, remote=[fdff:ffff::]:26485): Connection reset by peer\n"
            "localhost: [rank3]:[W331 16:39:45.841648714 TCPStore.cpp:125] [c10d] recvValue failed on "
            "SocketImpl(fd=102, addr=[::]:42687, remote=[fdff:ffff::]:38153): Connection reset by peer\n")
EXITS = ("192.168.205.202: [2026-03-31 16:39:45,558] [INFO] [launch.py:367:main] Process 1314973 exits "
         "successfully.\n"
         "localhost: [2026-03-31 16:39:46,668] [INFO] [launch.py:367:main] Process 2486035 exits successfully.\n")


def test_dv48_007_workers_exit_0_after_the_end_through_teardown_noise_is_healthy():
    v = decide(ingest([WILD / "dv48-007-megatron-ds-smoke-8rank-2node-exits-ok.txt"]))
    assert v.kind == Kind.HEALTHY and v.rule == "ended_then_torn_down"
    # (s33: the last end said is now the job script's own `RC=0` after the workers' `exits successfully`)
    assert "after training is done" in v.summary and "RC=0" in v.summary
    assert "teardown" in v.summary


def test_dv43_002_says_the_exits_beside_its_last_iteration():
    v = decide(ingest([WILD / "dv43-002-megads-2node-clean-end-noisy-teardown.txt"]))
    assert v.kind == Kind.HEALTHY and "exits successfully" in v.summary and "after training is done" in v.summary


def test_end_teardown_exits_built_from_real_lines_is_healthy(tmp_path):
    v = decide(text_store(tmp_path, STEPS + END + TEARDOWN + EXITS))
    assert v.kind == Kind.HEALTHY and v.rule == "ended_then_torn_down"
    assert "recvValue failed" in v.summary and "exits successfully" in v.summary


def test_error_words_before_the_works_end_are_not_teardown(tmp_path):
    # (before the last iteration at its total: they may be what the job went through, not its teardown)
    v = decide(text_store(tmp_path, TEARDOWN + STEPS + END + EXITS))
    assert v.rule != "ended_then_torn_down" and v.kind != Kind.HEALTHY


def test_a_process_that_exits_non_zero_is_no_clean_end(tmp_path):
    # (DeepSpeed's launch.py sigkill_handler: `logger.error(f"{cmd} exits with return code = {returncode}")`)
    failed = ("localhost: [2026-03-31 16:39:46,670] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', "
              "'-u', 'pretrain_gpt.py', '--local_rank=1'] exits with return code = 1\n")
    v = decide(text_store(tmp_path, STEPS + END + TEARDOWN + EXITS + failed))
    assert v.rule != "ended_then_torn_down" and v.kind != Kind.HEALTHY


def test_the_programs_end_alone_covers_the_ranks_of_its_teardown(tmp_path):
    # (Megatron's end line names no rank: it covers the ranks of its file, whose noise after it is teardown)
    v = decide(text_store(tmp_path, STEPS + END + TEARDOWN))
    assert v.kind == Kind.HEALTHY and v.rule == "ended_then_torn_down" and "after training is done" in v.summary


def test_dv48_006_rankless_last_iteration_at_its_total_ends_the_ranks_seen():
    v = decide(ingest([WILD / "dv48-006-megatron-ds-32rank-iter-85-270s-slow.txt"]))
    assert v.kind == Kind.HEALTHY and v.rule == "clean_but_partial"
    assert "iteration       20/      20" in v.summary and "iter time (s)" in v.summary  # (its pace said)


def test_a_rank_whose_own_steps_stop_short_of_the_total_is_not_ended(tmp_path):
    text = ("==== Iteration 10/10 ====\n"
            "[Rank 0] (after 9 iterations) memory (MB) | allocated: 7039.17 | max allocated: 10825.77\n"
            "Rank 0: ==== Iteration 9/10 ====\n"
            "Rank 1: ==== Iteration 10/10 ====\n")
    assert decide(text_store(tmp_path, text)).kind != Kind.HEALTHY


#: the real output of a 2-process gloo run under torchrun (torch 2.x, CPU): each rank all-reduces a tensor of
#: ones times (rank + 1) three times and prints `Rank {rank}: all_reduce {i} completed, result ..., took ...s`
GLOO = ("Rank 0: initialized, world_size=2\n"
        "Rank 1: initialized, world_size=2\n"
        "Rank 0: all_reduce 0 completed, result 3.0, took 0.0401s\n"
        "Rank 1: all_reduce 0 completed, result 3.0, took 0.0035s\n"
        "Rank 1: all_reduce 1 completed, result 3.0, took 0.0016s\n"
        "Rank 0: all_reduce 1 completed, result 3.0, took 0.0025s\n")


def test_real_gloo_run_collectives_completed_on_every_rank_is_healthy(tmp_path):
    assert decide(text_store(tmp_path, GLOO)).kind == Kind.HEALTHY


def test_a_collective_said_completed_on_every_visible_rank_is_their_result(tmp_path):
    s = text_store(tmp_path, "Rank 0: all_reduce completed\nRank 1: all_reduce completed\n")
    ends = events_of(s, EventKind.PROGRAM_END)
    assert sorted(ends["rank"].to_list()) == [0, 1]
    v = decide(s)
    assert v.kind == Kind.HEALTHY and "all_reduce completed" in v.summary


def test_nccl_lines_and_failures_are_no_collective_completed(tmp_path):
    text = ("gpu1:1001:1050 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f count 8 done\n"
            "Rank 1: all_reduce not completed, timed out after 1800 s\n")
    assert not events_of(text_store(tmp_path, text), EventKind.PROGRAM_END).height


#: the real output of a 2-process gloo DDP run under torchrun (torch 2.x, CPU): rank 0 times each step's parts
#: and prints them as a block, `print(f"forward time: {t1-t0:.4f}s")` ... `print(f"total step time: {t3-t0:.4f}s")`
BLOCKS = ("forward time: 0.0189s\nbackward time: 0.0132s\noptimizer time: 0.0004s\ntotal step time: 0.0325s\n"
          "forward time: 0.0551s\nbackward time: 0.0117s\noptimizer time: 0.0005s\ntotal step time: 0.0673s\n"
          "forward time: 0.0032s\nbackward time: 0.0149s\noptimizer time: 0.0004s\ntotal step time: 0.0185s\n"
          "forward time: 0.0016s\nbackward time: 0.0175s\noptimizer time: 0.0004s\ntotal step time: 0.0195s\n")


def test_a_timing_blocks_parts_are_not_read_as_steps(tmp_path):
    from tracekit.evidence import Evidence

    ev = Evidence.gather(text_store(tmp_path, BLOCKS))
    said = ev.ticks["message"].to_list()
    assert said == [f"total step time: {t}s" for t in ("0.0325", "0.0673", "0.0185", "0.0195")]


def test_steady_timing_blocks_are_no_slow_steps_that_alternate(tmp_path):
    # (the same program's block with the figures of a steady run: the part after the whole is no faster step)
    steady = "".join(f"forward time: {f:.2f}s\nbackward time: {b:.2f}s\noptimizer step time: {o:.2f}s\n"
                     f"total step time: {f + b + o:.2f}s\n"
                     for f, b, o in ((0.35, 0.52, 0.10), (0.34, 0.51, 0.11), (0.36, 0.53, 0.10), (0.35, 0.52, 0.10)))
    v = decide(text_store(tmp_path, steady))
    assert v.kind != Kind.SLOW_PROGRESS and v.rule != "pace_alternates"
    assert v.kind == Kind.HEALTHY and "step time: 0.97" in v.summary  # (the whole step's time said)


#: the real output of a 2-process gloo DDP run under torchrun (torch 2.x, CPU, two busy cores): rank 0 logs the
#: world size once, then `print(f"throughput: {128 * world / dt:.1f} samples/s")` each step, naming no rank
UNNAMED = ("Initialized process group: world_size=2\nthroughput: 4449.6 samples/s\nthroughput: 1554.7 samples/s\n"
           "throughput: 4861.2 samples/s\nthroughput: 4698.7 samples/s\nthroughput: 3004.2 samples/s\n"
           "throughput: 1905.0 samples/s\n")


def test_steady_throughput_naming_no_rank_in_a_logged_world_is_healthy(tmp_path):
    # (the same program's lines with the figures of a steady run)
    steady = "Initialized process group: world_size=8\n" + "".join(
        f"throughput: {9800 - 10 * i:.1f} samples/s\n" for i in range(5))
    v = decide(text_store(tmp_path, steady))
    assert v.kind == Kind.HEALTHY and v.rule == "steady_unnamed"
    assert "world size is 8 and no line names a rank" in v.summary and "samples/s" in v.summary


def test_throughput_that_swings_threefold_naming_no_rank_is_not_healthy(tmp_path):
    assert decide(text_store(tmp_path, UNNAMED)).kind != Kind.HEALTHY


def test_steady_throughput_beside_one_named_rank_of_a_larger_world_is_not_steady_unnamed(tmp_path):
    steady = "Rank 0: initialized, world_size=8\n" + "".join(
        f"throughput: {9800 - 10 * i:.1f} samples/s\n" for i in range(5))
    assert decide(text_store(tmp_path, steady)).rule != "steady_unnamed"
