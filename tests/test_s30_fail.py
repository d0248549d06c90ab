"""Session 30, failures (fail30): the facts in view as the log says them (``facts_in_view``): a time-out's
``SeqNum=N`` as c10d writes it, an error's own words past C++'s ``what():``, c10d's watchdog preamble and a
source path's folders; an exception whose type stands alone on its line said with the words below it
(crashed_rank and the facts in view alike); and a failure line that only traces NCCL's error code unwinding
(nccl-tests' ``Test failure common.cu:519`` under ``Test NCCL failure``) left to the rules of NCCL's codes."""

from __future__ import annotations

from pathlib import Path

from tests.factory import make_store, text_store
from tracekit.evidence import Evidence
from tracekit.facts_in_view import _core, in_view, seq_said, words_below
from tracekit.ingest import ingest
from tracekit.outcome import Kind
from tracekit.rules_nccl_own import unwinds_nccl_code
from tracekit.verdict import decide

WILD = Path(__file__).parent.parent / "samples" / "wild"


def _wild(prefix: str):
    (path,) = sorted(WILD.glob(prefix + "*.txt"))
    return decide(ingest([path]))


# --- the facts in view, as the log says them ---------------------------------------------------------

def test_a_timeout_is_said_with_seqnum_as_c10d_writes_it():
    st = make_store(events=[dict(file="a.log", line=3, kind="watchdog_timeout", seq=1, op="allgather", pg="0",
                                 rank=1, timeout_ms=1800000, message="Watchdog caught collective operation timeout")])
    assert seq_said(1) == "SeqNum=1"
    assert "ALLGATHER SeqNum=1 of process group 0 timed out on rank 1 after 1800 s" in in_view(
        Evidence.gather(st), "a summary that says nothing of it")
    # (said once: a summary that holds c10d's SeqNum=1 gets no second copy)
    assert in_view(Evidence.gather(st), "rank 1 timed out in ALLGATHER SeqNum=1") == ""


def test_the_wrappers_and_folders_around_an_error_are_dropped_before_clipping():
    # (dev-052's line: the error is past C++'s what() and c10d's watchdog preamble)
    line = ("  what():  [PG 1 Rank 0] Process group watchdog thread terminated with exception: CUDA error: "
            "device-side assert triggered")
    assert _core(line) == "[PG 1 Rank 0] CUDA error: device-side assert triggered"
    line = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
            "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5")
    assert "NCCL error in: NCCLUtils.hpp:275, invalid usage" in _core(line)
    # (two folders or fewer stay: NCCL's transport names and /dev/shm are facts)
    assert _core("NET/IB : failed on /dev/shm/nccl-abc") == "NET/IB : failed on /dev/shm/nccl-abc"


def test_a_long_path_no_longer_clips_the_error_away():
    st = make_store(events=[dict(file="a.log", line=3, kind="exception", rank=0, message=(
        "torch.distributed.DistBackendError: NCCL error in: /opt/conda/conda-bld/pytorch_1656352465323/work/torch/"
        "csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.10.3"))])
    assert "unhandled system error" in in_view(Evidence.gather(st), "nothing yet")


# --- an exception's type alone on its line: its words are below it -------------------------------------

PADDLE = """Traceback (most recent call last):
  File "/ssd1/zhangbin41/miniconda3/envs/paddle_env/lib/python3.8/site-packages/paddle/distributed/communication/group.py", line 332, in barrier
    task = group.process_group.barrier(device_id)
RuntimeError: 

--------------------------------------
C++ Traceback (most recent call last):
--------------------------------------
0   paddle::distributed::ProcessGroupNCCL::Barrier(paddle::distributed::BarrierOptions const&)

----------------------
Error Message Summary:
----------------------
ResourceExhaustedError: 

Out of memory error on GPU 3. Cannot allocate 256.000000B memory on GPU 3, 127.337851TB memory has been allocated and available memory is only 0.000000B.
"""


def test_an_empty_exception_is_said_with_the_words_below_it(tmp_path):
    st = text_store(tmp_path, PADDLE)
    ev = Evidence.gather(st)
    first = ev.crashes.sort("line").row(0, named=True)
    assert first["message"].strip() == "RuntimeError:"
    assert words_below(ev, first).startswith("Out of memory error on GPU 3")
    v = decide(st)
    assert v.kind is Kind.CRASHED_RANK and "RuntimeError: Out of memory error on GPU 3" in v.summary


def test_an_exception_with_words_of_its_own_takes_none_from_below(tmp_path):
    st = text_store(tmp_path, PADDLE.replace("RuntimeError: \n", "RuntimeError: barrier failed\n"))
    ev = Evidence.gather(st)
    assert words_below(ev, ev.crashes.sort("line").row(0, named=True)) == ""


def test_the_paddle_excerpt_says_its_out_of_memory():
    v = _wild("dv37-019-")
    assert v.kind is Kind.CRASHED_RANK and "Out of memory error on GPU 3" in v.summary


# --- a failure line that traces NCCL's error code: the code decides ---------------------------------------

TESTS = """cnode2-001: Test NCCL failure common.cu:401 'remote process exited or there was a network error / '
 .. cnode2-001 pid 614292: Test failure common.cu:519
 .. cnode2-001 pid 614292: Test failure common.cu:695
 .. cnode2-001 pid 614292: Test failure alltoall.cu:348
"""


def test_nccl_tests_unwinding_under_an_nccl_code_is_not_a_crash_of_its_own(tmp_path):
    v = decide(text_store(tmp_path, TESTS))
    assert v.kind is not Kind.CRASHED_RANK and "remote process exited or there was a network error" in v.summary


def test_an_unhandled_system_error_of_nccl_tests_is_the_transport(tmp_path):
    v = _wild("dv36-001-")
    assert v.kind is Kind.TRANSPORT_ERROR and "unhandled system error" in v.summary


def test_a_crash_with_its_own_error_after_an_nccl_code_stays_a_crash(tmp_path):
    text = TESTS.replace(" .. cnode2-001 pid 614292: Test failure common.cu:519",
                         "RuntimeError: CUDA error: an illegal memory access was encountered")
    st = text_store(tmp_path, text)
    assert Evidence.gather(st).crashes.height
    ev = Evidence.gather(st)
    assert not unwinds_nccl_code(ev, ev.crashes.sort("line").head(1))


# --- a launcher's word of a rank's death by a signal ------------------------------------------------------

def test_pals_mpiexec_says_which_rank_died_from_which_signal(tmp_path):
    # (dv33-008's lines: HPE Cray PALS's mpiexec after oneCCL's KVS connections reset)
    st = text_store(tmp_path, "2024:03:30-04:56:09:(57428) |CCL_ERROR| internal_kvs_server.hpp:109 get: read/write "
                    "error: Connection reset by peer\n"
                    "x1921c7s6b0n0.hostmgmt2000.cm.americas.sgi.com: rank 418 died from signal 11\n"
                    "x1921c7s6b0n0.hostmgmt2000.cm.americas.sgi.com: rank 414 died from signal 15\n")
    ends = Evidence.gather(st).exits.sort("line")
    assert ends["rank"].to_list() == [418, 414] and ends["exit_code"].to_list() == [-11, -15]
    v = decide(st)
    assert v.kind is Kind.CRASHED_RANK and v.ranks == [418] and "SIGSEGV" in v.summary


def test_a_timeout_without_seqnum_is_said_by_its_op(tmp_path):
    # (dv4-007's line: torch before 1.10 names no SeqNum)
    st = text_store(tmp_path, "[E ProcessGroupNCCL.cpp:485] [Rank 6] Watchdog caught collective operation timeout: "
                    "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802246 milliseconds before timing out.\n")
    ev = Evidence.gather(st)
    assert in_view(ev, "nothing yet").startswith("ALLREDUCE timed out on rank 6")
    assert in_view(ev, "rank 6 timed out in ALLREDUCE after 1800 s") == ""


def test_a_crash_is_not_crowded_out_by_several_timeouts():
    st = make_store(events=[
        dict(file="a.log", line=n, kind="watchdog_timeout", seq=s, op="allreduce", pg=pg, rank=0, timeout_ms=600000,
             message="Watchdog caught collective operation timeout") for n, (s, pg) in
        enumerate(((5, "0"), (7, "1"), (9, "2")), 1)] + [
        dict(file="b.log", line=9, kind="child_failed", rank=3, exit_code=-9, message="failed (exitcode: -9) local_rank: 3")])
    said = in_view(Evidence.gather(st), "nothing yet")
    assert "SeqNum=5" in said and "rank 3 killed by signal 9 (SIGKILL)" in said


def test_an_abort_after_an_nccl_error_stays_the_process_crash(tmp_path):
    # (dv19-018's lines: the abort is the process's end, its own fact)
    v = decide(text_store(tmp_path, "terminate called after throwing an instance of 'std::runtime_error'\n"
                          "what():   NCCL Error 1: unhandled cuda error\nAborted (core dumped)\n"))
    assert v.kind is Kind.CRASHED_RANK and "unhandled cuda error" in v.summary


# --- NCCL's failed call to NVML is the rank's GPU, not the network ------------------------------------------

def test_an_nvml_call_under_last_error_is_the_ranks_own_failure(tmp_path):
    # (dv32-005's lines: a system error whose reason is NVML's lookup of the GPU by its bus id)
    v = decide(text_store(tmp_path, "ncclSystemError: System call (e.g. socket, malloc) or external library call "
                          "failed or device error.\nLast error:\nnvmlDeviceGetHandleByPciBusId() failed: Not Found\n"))
    assert v.kind is Kind.CRASHED_RANK and "nvmlDeviceGetHandleByPciBusId() failed" in v.summary


# --- a program's own per-rank prints of the tensor it passes to a collective --------------------------------

PRINTS = """    # rank 0 shape is 409600, rank != 0 shape is 32768000 will hang
        # Rank 7 tensor before allreduce: torch.Size([32768000]) 1.0
        # Rank 0 tensor before allreduce: torch.Size([409600]) 1.0
        # Rank 1 tensor before allreduce: torch.Size([32768000]) 1.0
        # Rank 0 tensor after allreduce: torch.Size([409600]) 8.0 8.0 8.0 8.0
"""


def test_per_rank_prints_of_different_sizes_are_a_mismatch(tmp_path):
    # (nccl-028's lines: NCCL checks no size; rank 0's all_reduce is of another size than the others')
    v = decide(text_store(tmp_path, PRINTS))
    assert v.kind is Kind.MISMATCH and v.ranks == [0]
    assert "rank 0 with shape [409600]" in v.summary and "ranks 1,7 with shape [32768000]" in v.summary


def test_per_rank_prints_of_one_size_say_no_mismatch(tmp_path):
    st = text_store(tmp_path, PRINTS.replace("409600", "32768000"))
    assert not Evidence.gather(st).reported_mismatch.height
    assert decide(st).kind is not Kind.MISMATCH
