"""A verdict says a collective as its source prints it: NCCL's opCount in hex beside torch's seq, and c10d's
mismatch report read whole where a paste put each fingerprint on the line after its rank."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tests.conftest import SAMPLES
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def test_a_mismatch_from_real_nccl_logs_names_the_opcount_its_lines_print():
    # the real NCCL 2.28.9 capture: rank 1 all_reduces 8448 floats at `opCount 1c`, the others 8449 (torch's
    # seq 29 = opCount + 1, sources/nccl.py); the verdict names both numbers, so the line can be found
    v = decide(ingest(sorted((SAMPLES / "gpu_nccl_mismatch").glob("nccl.*.log"))))
    assert v.kind == Kind.MISMATCH
    assert "seq 29 (opCount 1c)" in v.summary


def test_processes_no_init_line_names_are_compared_at_the_opcount_they_print():
    # RCCL's COLL lines of one node's 4 processes, no Init line: ranks 0, 1, 3 AllReduce at `opCount 28c`,
    # the process on device 2 AllGather (NCCL's INFO format, enqueue.cc: `%s: opCount %lx sendbuff ...`)
    v = decide(ingest([WILD / "dv15-045-rccl-rank2-allgather-vs-allreduce-opcount-28c.txt"]))
    assert v.kind == Kind.MISMATCH
    assert "opCount 28c:" in v.summary and "ran AllGather" in v.summary


def test_c10d_mismatch_report_with_each_fingerprint_on_the_next_line():
    # ProcessGroupWrapper.cpp's report, posted wrapped: `... Rank 0 is running collective:` then
    # `CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20, 10], ...`, and `but Rank 1 is running
    # collective:` then `CollectiveFingerPrint(OpType=REDUCE, ...`
    v = decide(ingest([WILD / "dv16-018-pytorch-pgwrapper-rank0-allreduce-vs-rank1-reduce.txt"]))
    assert v.kind == Kind.MISMATCH
    assert "rank 0 runs ALLREDUCE (shape [20, 10], Float) while rank 1 runs REDUCE" in v.summary


def test_a_fingerprint_on_its_own_line_after_another_rank_line_is_not_joined(tmp_path):
    # the join needs the fingerprint itself on the next line: an ordinary line after is left alone
    log = tmp_path / "w.log"
    log.write_text("Detected mismatch between collectives on ranks. Rank 0 is running collective:\n"
                   "something else entirely\n")
    v = decide(ingest([log]))
    assert v.kind == Kind.MISMATCH and "runs" not in v.summary


def test_c10d_nccl_error_inside_a_programs_own_error_line_is_read_from_its_own_words(tmp_path):
    # c10d's message (NCCLUtils.hpp: `NCCL error in: <file>:<line>, <ncclGetErrorString>, NCCL version <v>`)
    # re-raised by a worker framework into its own log line; ncclRemoteError's string (nccl src/misc/...:
    # "remote process exited or there was a network error")
    log = tmp_path / "worker.log"
    log.write_text("20250404-10:47:52.251 worker ERROR: Worker encountered error NCCL error in: /opt/pytorch/torch/"
                   "csrc/distributed/c10d/NCCLUtils.hpp:275, remote process exited or there was a network error, "
                   "NCCL version 2.22.3\n")
    v = decide(ingest([log]))
    assert "(NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:275, remote process exited" \
           in v.summary
    assert "worker ERROR" not in v.summary


def test_ucx_verbs_set_up_errors_are_the_transports_and_a_ud_warning_is_not(tmp_path):
    # UCX's logger (`[time] [host:pid:thread]  file.c:line  UCX  LEVEL msg`): dc_mlx5.c's `ibv_modify_qp(DCI,
    # RTR) failed : %m` and rc_iface.c's `failed to create qp: %m` at ERROR are the transport's own set-up
    # failing; the same words at WARN (a UD QP, printed by jobs that then run) are no failure
    from tracekit.schema import EventKind
    log = tmp_path / "ucx.log"
    log.write_text("[1665103135.306110] [hpap13n2:7391 :0]         dc_mlx5.c:456  UCX  ERROR ibv_modify_qp(DCI, "
                   "RTR) failed : Invalid argument\n"
                   "[1530549338.249536] [clx-hercules-007:20543:0]       rc_iface.c:966  UCX  ERROR failed to create "
                   "qp: Invalid argument\n"
                   "[1530549338.249537] [clx-hercules-007:20544:0]       ud_iface.c:200  UCX  WARN  failed to create "
                   "qp: Invalid argument\n")
    ev = ingest([log]).events.filter(pl.col("kind") == EventKind.TRANSPORT_ERROR)
    assert sorted(ev["line"].to_list()) == [1, 2]
