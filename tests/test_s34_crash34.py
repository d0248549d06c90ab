"""Session 34 (crash34): nccl-tests' lone ncclRemoteError, and torchrun's exit line without its pid.

Covers (real lines of samples/wild excerpts):
- ``remote_error.nccl_tests_network``: nccl-tests' `Test NCCL failure common.cu:401 'remote process exited or
  there was a network error / '` of rank 0 of 8 ranks listed on two hosts, no other rank reporting (dv33-003,
  dv48-001, labelled transport-error) -> TRANSPORT_ERROR naming rank 0 and its host; the same listing on one
  host, or with another rank's own `Test CUDA failure`, -> not TRANSPORT_ERROR.
- ``torch_patterns.CHILD_EXIT``: torchrun's failure block whose `exitcode` line has no pid (dv12-008's
  `  exitcode  : 1`) -> the rank's exit with code 1 is read, and the verdict says the exit code.
"""

from __future__ import annotations

from tests.factory import events_of, text_store
from tracekit.outcome import Kind
from tracekit.schema import EventKind
from tracekit.verdict import decide

def _nccl_tests(hosts: tuple[str, str]) -> str:
    """dv33-003's alltoall_perf header, device table (ranks 0-3 on the first host, 4-7 on the second) and rank
    0's failure, as nccl-tests prints them."""
    pids = (614292, 491988)
    rows = "".join(f"#  Rank {r:>2} Group  0 Pid {pids[r // 4] + r % 4:>6} on {hosts[r // 4]} device  {r % 4} "
                   f"[0000:9d:00] NVIDIA H100 80GB HBM3\n" for r in range(8))
    return ("# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807\n"
            "# Collective test starting: alltoall_perf\n"
            "# nThread 1 nGpus 1 minBytes 33554432 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 "
            "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n" + rows + "#\n"
            f"{hosts[0]}: Test NCCL failure common.cu:401 'remote process exited or there was a network error / '\n"
            f" .. {hosts[0]} pid 614292: Test failure common.cu:519\n"
            f" .. {hosts[0]} pid 614292: Test failure common.cu:695\n"
            f" .. {hosts[0]} pid 614292: Test failure alltoall.cu:348\n")


def test_nccl_tests_remote_error_of_one_process_on_two_hosts_is_the_network(tmp_path):
    v = decide(text_store(tmp_path, _nccl_tests(("cnode2-001", "cnode2-016"))))
    assert v.kind is Kind.TRANSPORT_ERROR
    assert v.summary.startswith("rank 0 (cnode2-001 pid 614292) failed with NCCL's ncclRemoteError")
    assert "remote process exited or there was a network error" in v.summary
    assert "8 ranks nccl-tests lists on 2 hosts" in v.summary


def test_nccl_tests_remote_error_on_one_host_is_not_the_network(tmp_path):
    v = decide(text_store(tmp_path, _nccl_tests(("cnode2-001", "cnode2-001"))))
    assert v.kind is not Kind.TRANSPORT_ERROR


def test_nccl_tests_remote_error_after_a_peers_own_failure_is_not_the_network(tmp_path):
    # a peer's own failure, as nccl-tests' CUDACHECK prints it (dev-066: ` .. gpu5: Test failure common.cu:393`
    # after its `Test CUDA failure`)
    peer = "cnode2-016: Test CUDA failure common.cu:1015 'an illegal memory access was encountered'\n"
    v = decide(text_store(tmp_path, _nccl_tests(("cnode2-001", "cnode2-016")) + peer))
    assert v.kind is not Kind.TRANSPORT_ERROR


# dv12-008's torchrun block, the exitcode line without its pid, as posted
CHILD_FAILED_NO_PID = (
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    "============================================================\n"
    "train_gemini_opt.py FAILED\n"
    "------------------------------------------------------------\n"
    "Failures:\n"
    "  <NO_OTHER_FAILURES>\n"
    "------------------------------------------------------------\n"
    "Root Cause (first observed failure):\n"
    "[0]:\n"
    "  time      : 2023-03-07_06:11:16\n"
    "  host      : zztf-gpu02\n"
    "  rank      : 0 (local_rank: 0)\n"
    "  exitcode  : 1\n"
    "  error_file: <N/A>\n"
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
    "============================================================\n"
)


def test_child_exit_without_pid_is_read(tmp_path):
    store = text_store(tmp_path, CHILD_FAILED_NO_PID)
    ends = events_of(store, EventKind.RANK_EXIT)
    assert ends.select("rank", "exit_code").rows() == [(0, 1)]
    v = decide(store)
    assert v.kind is Kind.CRASHED_RANK
    assert "exit code 1" in v.summary
