"""NCCL's result codes say whose fault a failure is (issue 31): ncclInvalidUsage and ncclInvalidArgument
are the program's own call, refused before anything goes over the network (a crash on that rank), while
ncclSystemError and ncclRemoteError are the system's or the network's. The lines are written as NCCL's
WARN() and torch's DistBackendError print them (src/init.cc, src/misc/strongstream.cc, NCCLUtils.hpp)."""

import pytest

from tracekit import nccl_messages
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

HEAD = "node1:2401:2401 [{dev}] NCCL {level} "
RAISED = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
          "invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5\n"
          "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n")


def _decide(tmp_path, text, name="rank0.log"):
    (tmp_path / name).write_text(text)
    s = ingest([tmp_path])
    return s, decide(s)


def test_two_ranks_on_one_gpu_under_last_error_is_the_programs_own_call(tmp_path):
    # NCCL checks it in init (src/init.cc), but it is the launch's placement of its ranks, the program's own
    # error (s29, rules_set_up.MISPLACED: dev labels read it a crash first, 9 of 9)
    _, v = _decide(tmp_path, RAISED + "Last error:\nDuplicate GPU detected : rank 1 and rank 0 both on CUDA "
                   "device 10\n")
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [0, 1]
    assert "Duplicate GPU detected : rank 1 and rank 0" in v.summary and "same device" in v.summary


def test_two_ranks_on_one_gpu_pasted_bare_before_the_error(tmp_path):
    # a WARN pasted without NCCL's head, above the exception (the order a user's paste keeps)
    _, v = _decide(tmp_path, "Duplicate GPU detected : rank 9 and rank 1 both on CUDA device 34000\n"
                   " Last error:\n" + RAISED.splitlines()[1] + "\n" + RAISED.splitlines()[0] + "\n")
    assert v.kind == Kind.CRASHED_RANK and 9 in v.ranks
    assert "rank 9 and rank 1" in v.summary


def test_two_ranks_on_one_gpu_in_an_nccl_log_is_no_bootstrap_stall(tmp_path):
    text = (HEAD.format(dev=0, level="INFO") + "Bootstrap : Using eth0:10.0.0.1<0>\n"
            + "node1:2401:2411 [0] init.cc:749 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA "
            "device 1000\nnode1:2401:2411 [0] NCCL INFO init.cc:1478 -> 5\n")
    _, v = _decide(tmp_path, text)
    # (the program's own placement of its ranks, not the bootstrap's network: s29, its crash)
    assert v.kind == Kind.CRASHED_RANK and "ncclInvalidUsage" in v.summary and "Duplicate GPU" in v.summary
    assert "one GPU per rank" in v.fix  # (the cause's fix, the crash's row of fixes.py)


def test_a_capture_nccl_cannot_take_is_the_programs_not_the_networks(tmp_path):
    text = "".join(f"node1:{pid}:{pid} [{d}] misc/strongstream.cc:53 NCCL WARN NCCL cannot be captured in a graph "
                   "if either it wasn't built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.\n"
                   f"node1:{pid}:{pid} [{d}] NCCL INFO enqueue.cc:1935 -> 5\n" for pid, d in ((100, 0), (101, 1)))
    _, v = _decide(tmp_path, text)
    assert v.kind == Kind.CRASHED_RANK and "enforce-eager" in v.summary


def test_invalid_usage_alone_waits_for_the_warn_that_says_which(tmp_path):
    # NCCL returns ncclInvalidUsage for ranks that disagree too (versions, the world size): only the WARN says
    _, v = _decide(tmp_path, "[rank3]: " + RAISED.splitlines()[0] + "\n")
    assert v.kind == Kind.UNDECIDED and "NCCL_DEBUG" in v.summary


def test_invalid_usage_with_a_network_warn_is_the_networks(tmp_path):
    # the code alone does not outweigh a WARN that names the network's failure
    text = ("node1:2401:2411 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43211> "
            "failed : Software caused connection abort\n" + RAISED)
    _, v = _decide(tmp_path, text)
    assert v.kind == Kind.TRANSPORT_ERROR


@pytest.mark.parametrize("text,name", [
    ("ncclInvalidUsage: This usually reflects invalid usage of NCCL library.", "invalid_usage"),
    ("ncclSystemError: System call (e.g. socket, malloc) or external library call failed", "system_error"),
    ("ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
     "remote_error"),
    ("ncclUnhandledCudaError: Call to CUDA function failed.", "cuda_error_code"),
    ("Duplicate GPU detected : rank 3 and rank 2 both on CUDA device e2000", "duplicate_gpu"),
])
def test_the_code_names_read_as_their_code(text, name):
    assert nccl_messages.meaning_of(text)[0].name == name


def test_whose_fault_each_code_is():
    # the program's or the device's: a crash on that rank; the system's or the network's: the transport
    by = nccl_messages.BY_NAME
    for name in ("invalid_usage", "invalid_argument", "cuda_error_code", "duplicate_gpu"):
        assert by[name].points_to[0] == nccl_messages.CRASH
    assert by["system_error"].points_to[0] == nccl_messages.NET
    assert set(nccl_messages.RESULT_CODES.values()) <= set(by)


def test_c10d_abort_after_failed_or_timed_out_is_no_timeout(tmp_path):
    # ProcessGroupNCCL's abort says neither which: no collective is counted as timed out
    s, v = _decide(tmp_path, "[rank1]:[E1121 10:02:11.532] [PG ID 0 PG GUID 0(default_pg) Rank 1] Some NCCL "
                   "operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent "
                   "GPU operations might run on corrupted/incomplete data.\n")
    from tracekit.evidence import Evidence
    assert Evidence.gather(s).timeouts.height == 0
    assert v.kind == Kind.UNDECIDED and "failed or timed out" in v.summary


def test_warns_after_a_communicator_abort_are_the_teardowns(tmp_path):
    # ncclCommAbort closes the communicator's sockets: the proxy thread's `Accept failed` after it is no
    # transport error (NCCL's init.cc `Abort COMPLETE`, proxy.cc's service thread)
    text = ("kasago:1001461:1009571 [1] NCCL INFO comm 0x5575bbed4480 rank 0 nranks 1 cudaDev 1 busId 2d000 - "
            "Abort COMPLETE\nkasago:1001461:1003249 [1] NCCL INFO misc/socket.cc:668 -> 3\n"
            "kasago:1001461:1003249 [1] proxy.cc:1458 NCCL WARN [Service thread] Accept failed Success\n"
            "kasago:1001461:1009778 [1] NCCL INFO comm 0x5575a76127e0 rank 1 nranks 2 cudaDev 1 busId 2d000 - "
            "Abort COMPLETE\n")
    _, v = _decide(tmp_path, text)
    assert v.kind == Kind.UNDECIDED and "aborted 2 communicator(s)" in v.summary and "teardown" in v.summary


def test_a_warn_before_the_abort_is_still_the_networks(tmp_path):
    text = ("node1:2401:2411 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<43211> "
            "failed : Software caused connection abort\n"
            "node1:2401:2401 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Abort COMPLETE\n")
    _, v = _decide(tmp_path, text)
    assert v.kind == Kind.TRANSPORT_ERROR


def test_the_new_causes_carry_their_own_fix(tmp_path):
    text = ("node1:100:100 [0] misc/strongstream.cc:53 NCCL WARN NCCL cannot be captured in a graph if either it "
            "wasn't built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.\n")
    _, v = _decide(tmp_path, text)
    assert "--enforce-eager" in v.fix and "captures" in v.check


def test_an_abort_with_no_warn_is_no_sign_of_failure(tmp_path):
    # c10d also aborts a healthy job's communicators at its end: no WARN, no failure
    text = "node1:2401:2401 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Abort COMPLETE\n"
    _, v = _decide(tmp_path, text)
    assert "aborted" not in v.summary
