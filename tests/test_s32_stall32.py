"""Session 32, stalls (stall32): who ended first where ranks time out or lose a peer (``ended_first``,
``rules_gone.peer_died_first``). A process a launcher says ended (torchrun's ``failed (exitcode: N) local_rank:
R``, DeepSpeed's ``exits with return code = N``, srun's ``task N: Segmentation fault``) before the others'
watchdog timeout, by the lines' own clocks or line order, or of a signal of its own fault, is the crashed rank;
an abort (-6) of a rank that timed out, a stop request (SIGTERM) or an end whose order is not shown is not,
and the timeout's UNDECIDED summary then says that end. Peers' closed connections (NCCL's ncclRemoteError
words) after a process's death read CRASHED_RANK naming it, by the clocks too, and srun's task with no rank."""

from __future__ import annotations

from tests.factory import text_store
from tracekit import ended_first
from tracekit.ingest import ingest
from tracekit.outcome import Kind
from tracekit.verdict import decide

import polars as pl


def _wd(rank: int, hhmm: str = "12:30") -> str:
    # c10d's watchdog line of torch >= 2.4 (ProcessGroupNCCL.cpp), with its `[rankN]:` prefix
    return (f"[rank{rank}]:[E607 {hhmm}:01.000000000 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1048576, "
            "NumelOut=1048576, Timeout(ms)=1800000) ran for 1800043 milliseconds before timing out.\n")


def _failed(code: int, local: int, hhmm: str = "12:00") -> str:
    # torchrun's agent (torch/distributed/elastic/multiprocessing/api.py) of a worker that ended
    return (f"E0607 {hhmm}:06.000000 140 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: "
            f"{code}) local_rank: {local} (pid: 100{local}) of binary: /usr/bin/python\n")


def _remote(rank: int) -> str:
    return (f"[rank{rank}]:[E607 12:00:09.000000000 ProcessGroupNCCL.cpp:1575] [PG ID 0 PG GUID 0(default_pg) "
            f"Rank {rank}] Process group watchdog thread terminated with exception: NCCL error: remote process "
            "exited or there was a network error, NCCL version 2.21.5\n")


def test_a_rank_killed_before_the_others_timeout_is_the_crashed_rank(tmp_path):
    v = decide(text_store(tmp_path, _wd(0) + _wd(1) + _failed(-9, 2)))
    assert v.kind is Kind.CRASHED_RANK and v.rule == "died_before_timeout" and v.ranks == [2]
    assert v.summary.startswith("rank 2 (local rank 2, pid 1002) ended first: exit code -9 (SIGKILL")
    assert "ranks 0-1 then timed out in ALLREDUCE SeqNum=1234" in v.summary and "1800 s" in v.summary


def test_a_raise_before_the_timeout_by_a_launchers_own_clock(tmp_path):
    ds = ("[2024-06-07 12:00:01,200] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', "
          "'train.py', '--local_rank=0'] exits with return code = 1\n")
    v = decide(text_store(tmp_path, _wd(1) + _wd(2) + ds))
    assert v.kind is Kind.CRASHED_RANK and "ended first: exit code 1" in v.summary


def test_an_end_after_the_timeout_or_an_abort_of_a_waiting_rank_is_not_first(tmp_path):
    later = decide(text_store(tmp_path, _wd(0) + _wd(1) + _failed(-9, 2, "13:00")))
    assert later.kind is Kind.UNDECIDED and later.rule == "timed_out"
    assert "rank 2 (local rank 2, pid 1002) ended: exit code -9" in later.summary
    assert "the excerpt does not show" in later.summary
    aborted = decide(text_store(tmp_path, _wd(0) + _wd(1) + _wd(2) + _failed(-6, 0, "12:31"), "b.log"))
    assert aborted.rule == "timed_out"


def test_a_stop_request_is_never_the_first_end(tmp_path):
    v = decide(text_store(tmp_path, _wd(0) + _wd(1) + _failed(-15, 2)))
    assert v.rule != "died_before_timeout"


def test_a_segfault_needs_no_clock(tmp_path):
    text = _wd(1).replace("[E607 12:30:01.000000000 ", "[E ") + "srun: error: node-3: task 0: Segmentation fault\n"
    v = decide(text_store(tmp_path, text))
    assert v.kind is Kind.CRASHED_RANK and v.summary.startswith("srun's task 0 on node-3 ended first")


def test_a_peer_segfault_seen_as_a_remote_error_names_the_srun_task(tmp_path):
    text = _remote(1) + _remote(2) + "srun: error: node-3: task 3: Segmentation fault (core dumped)\n"
    v = decide(text_store(tmp_path, text))
    assert v.kind is Kind.CRASHED_RANK and v.rule == "peer_died_first"
    assert v.summary.startswith("srun's task 3 on node-3 died first") and "SIGSEGV" in v.summary


def _nodes(tmp_path, agent: str, ranks: str) -> list:
    (tmp_path / "node0.log").write_text(agent)
    (tmp_path / "node1.log").write_text(ranks)
    return [tmp_path / "node0.log", tmp_path / "node1.log"]


def test_a_peer_that_raised_before_the_closed_connections_by_the_clocks(tmp_path):
    # (two files: one node's agent, the other node's rank; a file of one rank's lines is that rank's throughout)
    v = decide(ingest(_nodes(tmp_path, _failed(1, 0, "11:59"), _remote(1))))
    assert v.kind is Kind.CRASHED_RANK and v.rule == "peer_died_first" and v.ranks == [0]
    assert v.summary.startswith("rank 0 died first") and "rank 1 then saw its connection" in v.summary
    after = decide(ingest(_nodes(tmp_path, _failed(1, 0, "12:01"), _remote(1))))
    assert after.rule != "peer_died_first"


def test_clock_reads_glog_c10d_and_iso_heads():
    lines = pl.DataFrame({"m": ["E0607 12:00:06.000000 140 api.py:833] x", "[rank0]:[E607 12:30:01.5 P.cpp:1] y",
                                "[2024-06-07 12:00:01,100] [INFO] z", "no clock here"]})
    got = lines.select(ended_first.clock(pl.col("m"))).to_series().to_list()
    assert got == [607 * 100000 + 43206, 607 * 100000 + 45001, 607 * 100000 + 43201, None]


def test_the_one_rank_absent_seen_alive_by_its_clock_in_its_own_file_is_the_deadlock(tmp_path):
    # (a log per rank: rank 3's step line is in its own file, timed after the others' timeout)
    init = ("node1:1200:1300 [0] NCCL INFO comm 0x55d0c0a0 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1000 "
            "commId 0x1234 - Init COMPLETE\n")
    files = []
    for r in range(3):
        (tmp_path / f"r{r}.log").write_text((init if r == 0 else "") + _wd(r))
        files.append(tmp_path / f"r{r}.log")
    step = ("[rank3]: [2024-06-07 {}:10] iteration     1240/    5000 | consumed samples:       158720 | elapsed "
            "time per iteration (ms): 950.1 | lm loss: 2.100E+00 |\n")
    head = ("[rank3]:[W607 12:00:00.000000000 ProcessGroupNCCL.cpp:4000] [PG ID 0 PG GUID 0 Rank 3] using GPU 3 to "
            "perform barrier as devices used by this process are currently unknown.\n")
    (tmp_path / "r3.log").write_text(head + step.format("12:31"))
    v = decide(ingest(files + [tmp_path / "r3.log"]))
    assert v.kind is Kind.DEADLOCK and v.rule == "absent_but_alive" and v.ranks == [3]
    assert v.summary.startswith("rank 3 never joined ALLREDUCE SeqNum=1234")
    (tmp_path / "r3.log").write_text(head + step.format("12:29"))  # (before their timeout: it says nothing)
    assert decide(ingest(files + [tmp_path / "r3.log"])).rule != "absent_but_alive"
