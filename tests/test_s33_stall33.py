"""Session 33, stalls (stall33): a crashed peer or a hang, said with its fact.

Covers, on real lines from dev excerpts:
- ``peer_named``: the peer a closed connection names (gloo's ``[addr]:port``, NCCL's ``addr<port>``, the c10d store
  client's ``remote=[host]:port``, TensorPipe's RPC worker), said in ``rules_gone.peer_gone``'s UNDECIDED summary;
  several processes that each lost the one same peer read CRASHED_RANK naming it; a store's server, or peers that
  differ, stay UNDECIDED.
- ``dump_signal``: c10d's dump signal of a collective timeout (``Received a dump signal due to a collective timeout
  from  rank 0``) names the rank that timed out and the ranks with no collective in flight; its lines alone read
  UNDECIDED ``timeout_signalled``, never a start-up that stopped (the ranks had completed collectives).
- ``rules_stall.timed_out``: the process group of a watchdog line that names none, from its rank's status line
  (``[PG ID 2 PG GUID 6(mesh_sp) Rank 1]  failure detected by watchdog ...``).
- ``ended_first.ends_said``: an abort of a rank not seen timing out is said in the timeout's summary.
- ``steady_stop`` in ``rules_exit.killed_from_outside``: steady steps up to a scheduler's cancel read HEALTHY, up to a
  bare SIGTERM UNDECIDED; ``parsers/process_end``: Horovod's ``Process 0 exit with status code 134``.
"""

from __future__ import annotations

from tests.factory import text_store
from tracekit.outcome import Kind
from tracekit.verdict import decide

# gloo's pair (dv2-047), NCCL's socket (dev-026), the store client (dev-021), TensorPipe's agent (dev-023)
GLOO = ('RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer '
        '[172.28.0.12]:43185\n')
STORE = ("[rank6]:[W729 10:15:17.529361055 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=76, "
         "addr=[localhost]:60950, remote=[localhost]:29500): Connection reset by peer\n")


def _rpc(agent: int, to: int = 0) -> str:
    return (f"[W tensorpipe_agent.cpp:916] RPC agent for {agent} encountered error when sending outgoing request #0 "
            f"to {to}: async error on socket: Connection reset by peer (this error originated at "
            "tensorpipe/transport/shm/connection_impl.cc:187)\n")


def test_a_closed_connection_names_its_peer(tmp_path):
    v = decide(text_store(tmp_path, GLOO))
    assert v.kind is Kind.UNDECIDED and v.rule == "peer_gone"
    assert "closed its connection: the process at 172.28.0.12:43185" in v.summary


def test_many_processes_losing_one_peer_name_it_as_the_one_that_ended(tmp_path):
    v = decide(text_store(tmp_path, _rpc(3) + _rpc(10) + _rpc(7)))
    assert v.kind is Kind.CRASHED_RANK and v.rule == "peer_gone"
    assert v.summary.startswith("rank 0 ended first") and "3 processes" in v.summary
    assert v.ranks == [0]


def test_peers_that_differ_or_a_store_stay_undecided(tmp_path):
    two = decide(text_store(tmp_path, _rpc(3, 0) + _rpc(10, 1)))
    assert two.kind is Kind.UNDECIDED and "rank 0, rank 1" in two.summary
    store = decide(text_store(tmp_path, STORE, "s.log"))
    assert store.kind is Kind.UNDECIDED
    assert "the c10d store's server at localhost:29500" in store.summary


# c10d's dump-signal lines of torch 2.5 (dv51-002), rank 0's own timeout line not in view
def _signal(rank: int) -> str:
    return (f"localhost: [rank{rank}]:[E328 00:21:12.201735656 ProcessGroupNCCL.cpp:1858] [PG ID 0 PG GUID "
            f"0(default_pg) Rank {rank}] Received a dump signal due to a collective timeout from  rank 0 and we will "
            "try our best to dump the debug info. Last enqueued NCCL work: 7, last completed NCCL work: 7.This is "
            "most likely caused by incorrect usages of collectives, e.g., wrong sizes used across ranks, the order "
            "of collectives is not same for all ranks or the scheduled collective, for some reason, didn't run.\n")


def _observed(rank: int) -> str:
    return (f"localhost: [rank{rank}]:[E328 00:21:12.201604233 ProcessGroupNCCL.cpp:1794] [PG ID 0 PG GUID "
            f"0(default_pg) Rank {rank}] Observed flight recorder dump signal from another rank via TCPStore.\n")


def test_a_dump_signal_names_the_rank_that_timed_out_and_is_no_start_up(tmp_path):
    v = decide(text_store(tmp_path, _observed(2) + _observed(3) + _signal(2) + _signal(3)))
    assert v.kind is Kind.UNDECIDED and v.rule == "timeout_signalled"
    assert v.summary.startswith("rank 0 timed out in a collective")
    assert "ranks 2-3 had no collective in flight" in v.summary and "completed 7 collective(s)" in v.summary


def test_a_dump_signal_beside_the_watchdog_line_is_said_in_the_timeout(tmp_path):
    wd = ("[rank0]:[E328 00:21:11.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
          "operation timeout: WorkNCCL(SeqNum=8, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
          "for 600061 milliseconds before timing out.\n")
    v = decide(text_store(tmp_path, wd + _signal(2) + _signal(3)))
    assert v.rule == "timed_out" and "ALLREDUCE SeqNum=8" in v.summary
    assert "rank 0 timed out first" in v.summary and "they never issued the one rank 0 timed out in" in v.summary


def test_the_timeout_says_the_process_group_of_its_status_line(tmp_path):
    # dv32-008's lines: the watchdog line names the group rank only, the status line its group
    text = ("(WorkerDict pid=3934735) [rank7]:[E226 16:00:37.342220332 ProcessGroupNCCL.cpp:685] [Rank 1] Watchdog "
            "caught collective operation timeout: WorkNCCL(SeqNum=262, OpType=ALLTOALL, NumelIn=4493312, "
            "NumelOut=4493312, Timeout(ms)=1800000) ran for 1800082 milliseconds before timing out.\n"
            "(WorkerDict pid=3934735) [rank7]:[E226 16:00:37.342550291 ProcessGroupNCCL.cpp:2252] [PG ID 2 PG GUID "
            "6(mesh_sp) Rank 1]  failure detected by watchdog at work sequence id: 262 PG status: last enqueued "
            "work: 265, last completed work: 261\n")
    v = decide(text_store(tmp_path, text))
    assert v.rule == "timed_out" and "ALLTOALL SeqNum=262 on process group 2 (mesh_sp)" in v.summary


def test_an_abort_of_a_rank_not_seen_waiting_is_said(tmp_path):
    wd = ("[rank1]:[E607 12:30:01.000000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
          "timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
          "1800043 milliseconds before timing out.\n")
    block = ("Root Cause (first observed failure):\n[0]:\n  time      : 2024-06-07_12:30:05\n  host      : node1\n"
             "  rank      : 0 (local_rank: 0)\n  exitcode  : -6 (pid: 1001)\n  error_file: <N/A>\n"
             "  traceback : Signal 6 (SIGABRT) received by PID 1001\n")
    v = decide(text_store(tmp_path, wd + block))
    assert v.kind is Kind.UNDECIDED and "rank 0" in v.summary and "exit code -6" in v.summary


# Megatron-LM's iteration lines and the DeepSpeed launcher's and Slurm's ends (dv37-015)
def _iters(n: int) -> str:
    return "".join(f" iteration {10 * i:>10}/    1000 | consumed samples: {40 * i:>12} | elapsed time per iteration (ms): "
                   "1376.1 | learning rate: 1.500E-04 | global batch size:     4 | lm loss: 2.247505E+01 |\n"
                   for i in range(1, n + 1))


CANCEL = "slurmstepd: error: *** STEP 1809579.0 ON r8i3n1 CANCELLED AT 2021-05-23T08:45:57 ***\n"
SIGTERM = "Killing subprocess 16342\nMain process received SIGTERM, exiting\n"


def test_steady_steps_then_the_schedulers_cancel_read_healthy(tmp_path):
    v = decide(text_store(tmp_path, _iters(5) + "Killing subprocess 16342\n" + CANCEL + "Main process received SIGTERM, exiting\n"))
    assert v.kind is Kind.HEALTHY and v.rule == "killed_from_outside"
    assert "ran steadily until the scheduler cancelled it (steps 10 to 50" in v.summary and "CANCELLED" in v.summary
    # (Megatron's iteration lines carry no clock: a hang after the last of them is not ruled out, and it is said)
    assert "the step lines carry no clock: how long before the stop the last one came is not shown" in v.summary


def test_a_sigterm_after_steady_steps_with_no_cancel_is_undecided_and_without_steps_crashed(tmp_path):
    v = decide(text_store(tmp_path, _iters(5) + SIGTERM))
    assert v.kind is Kind.UNDECIDED and "ran steadily until it was stopped from outside" in v.summary
    bare = decide(text_store(tmp_path, _iters(1) + SIGTERM, "b.log"))
    assert bare.kind is Kind.CRASHED_RANK and bare.summary.startswith("killed from outside")


def test_horovods_word_of_a_process_that_ended_names_the_rank(tmp_path):
    # Horovod's gloo launcher (dv15-031's line 4): the slot's rank and its shell code (134: SIGABRT)
    v = decide(text_store(tmp_path, "Process 0 exit with status code 134\n"))
    assert v.kind is Kind.CRASHED_RANK and v.rule == "process_ended"
    assert "rank 0 ended: exit code 134" in v.summary and "SIGABRT" in v.summary
