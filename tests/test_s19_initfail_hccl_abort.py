"""Issue 31, session 19: torch_npu's ProcessGroupHCCL says "Some HCCL operations have failed or timed out"
(Ascend/pytorch 9e73e708 torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:991, logged by LOG(ERROR) at :994 in
WorkHCCL::handleException, then :998-999 "To avoid data inconsistency, we are taking the entire process
down."), the same either-abort as NCCL's
(meanings.EITHER_ABORT): a consequence that names neither a timeout nor an error; UNDECIDED that names HCCL
and what to collect from it, never a crash or a timeout."""

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

LINES = ("[rank3]:[E ProcessGroupHCCL.cpp:994] [Rank 3] Some HCCL operations have failed or timed out. Due to "
         "the asynchronous nature of ASCEND kernels, subsequent NPU operations might run on "
         "corrupted/incomplete data.\n"
         "[rank3]:[E ProcessGroupHCCL.cpp:999] [Rank 3] To avoid data inconsistency, we are taking the entire "
         "process down.\n")


def test_hccls_either_abort_reads_as_ncclS(tmp_path):
    f = tmp_path / "rank3.log"
    f.write_text(LINES)
    v = decide(ingest([f]))
    assert v.kind == Kind.UNDECIDED and v.rule == "aborted_unexplained"
    assert "after HCCL operations failed or timed out" in v.summary and "HCCL logs" in v.summary
    assert "NCCL_DEBUG" not in v.summary
