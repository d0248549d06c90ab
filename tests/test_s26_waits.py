"""Session 26, waits (issue 31): decide where an expert decides and say the fact: a state dump's transfers
waiting on a named rank (rules_apart.waits_on_named_rank), PyTorch's test harness's exit-code check read as
the process's end (parsers/process_end HARNESS_CODE) and a crash verdict that says the signal its process
met (rules_failure._signalled)."""

from __future__ import annotations

from pathlib import Path

from factory import make_store, text_store

from tracekit.ingest import ingest
from tracekit.outcome import Kind
from tracekit.verdict import decide

WILD = Path(__file__).parent.parent / "samples" / "wild"


def _telling(line: int, text: str, where: str = "wait") -> dict:
    return dict(file="job.log", line=line, kind="telling_line", where=where, message=text)


# --- a state dump's transfers waiting on a named rank -------------------------------------------------------

def test_waits_on_named_rank_is_a_deadlock_naming_the_rank():
    st = make_store(events=[_telling(2, "RECV ch=1: base=1150 posted=1 recvd=0    (waiting on rank 3 SEND ch=1)")])
    v = decide(st)
    assert v.kind is Kind.DEADLOCK and v.rule == "waits_on_named_rank"
    assert "waiting on rank 3" in v.summary and "base=1150" in v.summary


def test_waits_on_named_rank_yields_to_a_failure():
    st = make_store(events=[_telling(2, "RECV ch=1: (waiting on rank 3 SEND ch=1)"),
                            dict(file="job.log", line=5, kind="crash", rank=3,
                                 message="RuntimeError: CUDA error: an illegal memory access was encountered")])
    assert decide(st).rule != "waits_on_named_rank"


def test_a_harness_wait_for_a_process_to_end_is_not_a_wait_on_a_rank():
    st = make_store(events=[_telling(2, "AssertionError: Timeout waiting for rank 1 to terminate")])
    assert decide(st).rule != "waits_on_named_rank"


def test_rccl_proxy_state_dump_names_the_rank_waited_on():
    # samples/wild nccl-047 (ROCm/rccl issue: the reporter's proxy state of both ranks at the hang)
    v = decide(ingest([WILD / "nccl-047-rccl-cudagraph-ib-proxy-state-dump.txt"]))
    assert v.kind is Kind.DEADLOCK
    assert "rank 1" in v.summary and "base=1150" in v.summary


# --- the harness's exit-code check: the signal the process met -------------------------------------------

HARNESS = """AssertionError: Scalars are not equal!
Expected 0 but got -11.
Absolute difference: 11
Relative difference: inf
Expected zero exit code but got -11 for pid: 2718941
"""


def test_harness_exit_code_is_a_process_end_by_its_signal(tmp_path):
    v = decide(text_store(tmp_path, HARNESS))
    assert v.kind is Kind.CRASHED_RANK
    assert "-11" in v.summary and "SIGSEGV" in v.summary and "2718941" in v.summary


def test_a_launchers_sigterm_to_the_others_is_not_said_as_the_signal(tmp_path):
    v = decide(text_store(tmp_path, HARNESS.replace("-11", "-15")))
    assert v.kind is Kind.CRASHED_RANK and "SIGTERM" not in v.summary


def test_xpu_pytest_segfault_says_the_signal():
    # samples/wild dv17-033: the XPU distributed tests' harness saw a child exit with -11
    v = decide(ingest([WILD / "dv17-033-xpu-pytest-exit-minus11.txt"]))
    assert v.kind is Kind.CRASHED_RANK and "SIGSEGV" in v.summary and "-11" in v.summary


# --- NCCL opCounts that number no sequence: no mismatch from them -----------------------------------------

def _coll(rank: int, line: int, op: str, count: int, seq: int = 1) -> dict:
    return dict(file="job.log", line=line, rank=rank, pid=100 + rank, source="nccl", pg="nranks=2 communicator",
                comm=f"0x{rank}", nranks=2, seq=seq, op=op, op_raw=op, count=count, dtype="float32",
                state="enqueued")


def test_one_opcount_for_different_collectives_is_no_mismatch():
    # every call reads opCount 0 (samples/wild dv22-006): the alignment's pairs are not one point
    rows = [_coll(0, 1, "all_reduce", 1), _coll(1, 2, "all_reduce", 1), _coll(0, 3, "all_gather", 260),
            _coll(1, 4, "all_gather", 260), _coll(0, 5, "all_reduce", 64)]
    v = decide(make_store(collectives=rows))
    assert v.kind is not Kind.MISMATCH


def test_distinct_opcounts_of_different_sizes_stay_a_mismatch():
    rows = [_coll(0, 1, "all_reduce", 1, 1), _coll(1, 2, "all_reduce", 1, 1), _coll(0, 3, "all_reduce", 64, 2),
            _coll(1, 4, "all_reduce", 32, 2)]
    v = decide(make_store(collectives=rows))
    assert v.kind is Kind.MISMATCH and v.rule == "mismatch_aligned"


def test_pixloc_coll_trace_with_one_opcount_is_not_read_a_mismatch():
    v = decide(ingest([WILD / "dv22-006-pixloc-2gpu-nccl-coll-trace-deadlock-after-allreduce.txt"]))
    assert v.kind in (Kind.UNDECIDED, Kind.DEADLOCK)


# --- the consequence is not the cause: spawn's process that raised the CUDA error -----------------------

def test_spawned_oom_is_the_cause_of_the_mismatch_its_error_path_made():
    # issue 31's case, made of the lines torch prints: c10d's DETAIL report of the byte all-reduce against
    # the others' float one (ProcessGroupWrapper.cpp), then spawn's report of process 0's OOM
    # (torch/multiprocessing/spawn.py: `-- Process 0 terminated with the following error:`)
    v = decide(ingest([Path(__file__).parent / "data" / "s26_waits" / "spawn_oom_after_mismatch_report.log"]))
    assert v.kind is Kind.CRASHED_RANK
    assert "process 0 (local rank 0)" in v.summary and "out of memory" in v.summary
    assert "consequence" in v.summary


# --- timeouts: where each rank waits, the ranks behind named ------------------------------------------

def _wd(rank: int, seq: int, op: str) -> dict:
    return dict(file="job.log", line=rank + 1, kind="watchdog_timeout", rank=rank, seq=seq, op=op, pg="0",
                timeout_ms=600000, message=f"[Rank {rank}] Watchdog caught collective operation timeout: "
                f"WorkNCCL(SeqNum={seq}, OpType={op.upper()}, Timeout(ms)=600000) ran for 600073 milliseconds")


def test_timeouts_in_different_collectives_say_where_each_rank_waits():
    # a broadcast's root may finish it before its peers: different SeqNums with a broadcast decide nothing,
    # but the summary must not say rank 0 timed out in the others' all-reduce
    st = make_store(events=[_wd(1, 5, "allreduce"), _wd(2, 5, "allreduce"), _wd(3, 5, "allreduce"),
                            _wd(0, 4, "broadcast")])
    v = decide(st)
    assert v.kind is Kind.UNDECIDED and v.rule == "timed_out"
    assert "ranks 1-3 in ALLREDUCE SeqNum=5" in v.summary
    assert "rank 0 in BROADCAST SeqNum=4" in v.summary and "rank 0 behind" in v.summary


def test_timeouts_in_one_collective_say_it_once():
    st = make_store(events=[_wd(1, 5, "allreduce"), _wd(2, 5, "allreduce")])
    v = decide(st)
    assert v.summary.startswith("ranks 1-2 timed out in ALLREDUCE SeqNum=5") and "behind" not in v.summary


# --- a fatal check of a network call: the transport, not a rank's own error ---------------------------------

def test_fatal_check_of_a_socket_call_is_a_transport_error():
    # samples/wild dv19-011: the UCCL net plugin's glog CHECK on bind() aborts the process
    v = decide(ingest([WILD / "dv19-011-uccl-plugin-bind-failure-abort.txt"]))
    assert v.kind is Kind.TRANSPORT_ERROR and "bind" in v.summary


def test_fatal_check_of_another_call_stays_a_crash():
    st = make_store(events=[dict(file="job.log", line=1, kind="crash", where="glog FATAL", rank=2,
                                 message="a FATAL log at foo.cc:10 ended the process (SIGABRT): Check failed: "
                                 "ptr != nullptr")])
    v = decide(st)
    assert v.kind is Kind.CRASHED_RANK and "rank 2" in v.summary


# --- a native stack in the C++ terminate path: the process is ending on an uncaught exception --------------

def test_native_stack_in_the_terminate_handler_is_a_crash(tmp_path):
    text = ("/usr/lib/x86_64-linux-gnu/libstdc++.so.6(+0xae20c) [0x7f5abc6ae20c] "
            "__gnu_cxx::__verbose_terminate_handler()\n"
            "/usr/lib/libtorch_python.so(+0x759cc8) [0x7f5a50dfbcc8] THPVariable_clear()\n")
    v = decide(text_store(tmp_path, text))
    assert v.kind is Kind.CRASHED_RANK and "__verbose_terminate_handler" in v.summary


def test_ray_worker_terminate_handler_frames_are_a_crash():
    # samples/wild dv16-002: a vLLM RayWorker's native stack from ray::TerminateHandler()
    v = decide(ingest([WILD / "dv16-002-vllm-rayworker-terminate-handler-frames.txt"]))
    assert v.kind is Kind.CRASHED_RANK and "TerminateHandler" in v.summary


# --- a peer's death read as a network error: the rank killed first is the cause --------------------------

DATA = Path(__file__).parent / "data" / "s26_waits"


def test_peer_killed_first_is_the_cause_of_the_closed_connections():
    v = decide(ingest([DATA / "peer_killed_then_socket_closed.log"]))
    assert v.kind is Kind.CRASHED_RANK and v.rule == "peer_died_first"
    assert v.summary.startswith("rank 3 died first") and "SIGKILL" in v.summary and "closed the connection" in v.summary


def _closed(rank: int | None = 0) -> dict:
    return dict(file="job.log", line=2, kind="nccl_warn", rank=rank, where="transport/net_socket.cc:506",
                message="NET/Socket : peer 10.0.0.2<45678> closed the connection")


def _killed(rank: int, code: int) -> dict:
    return dict(file="job.log", line=9, kind="rank_exit", rank=rank, exit_code=code,
                where="torchrun: first observed failure", message=f"rank {rank} exited with code {code}")


def test_a_peer_that_raised_is_not_read_as_the_cause():
    # exit code 1 is an exception, which the closed connection itself raises on the rank that saw it
    v = decide(make_store(events=[_closed(), _killed(3, 1)]))
    assert v.rule != "peer_died_first"


def test_the_rank_that_saw_the_closure_is_not_its_own_dead_peer():
    v = decide(make_store(events=[_closed(3), _killed(3, -9)]))
    assert v.rule != "peer_died_first"


def test_a_segfaulted_peer_is_the_cause():
    v = decide(make_store(events=[_closed(1), _killed(2, -11)]))
    assert v.kind is Kind.CRASHED_RANK and "rank 2 died first" in v.summary


# --- the stacks of every process: the one outside the collective, and the collective the others wait in ----

def test_stacks_name_the_process_outside_and_the_collective_the_others_wait_in():
    v = decide(ingest([DATA / "pyspy_two_processes_one_in_dataloader.log"]))
    assert v.kind is Kind.DEADLOCK
    assert "pid 1235" in v.summary and "dataloader" in v.summary and "all_reduce" in v.summary
