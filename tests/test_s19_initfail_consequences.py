"""Issue 31, session 19 ("a consequence is not the cause"): an out-of-memory of a size no device holds is a
size read from garbage (most often a size a peer sent that differs from the one this rank posted), not
memory that ran out: UNDECIDED naming it, never CRASHED_RANK; an out-of-memory of a real size stays a
crash."""

from pathlib import Path

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def _decide(tmp_path, text: str):
    f = tmp_path / "rank0.log"
    f.write_text(text)
    return decide(ingest([f]))


def test_an_absurd_allocation_is_no_out_of_memory(tmp_path):
    # the user's words of it in the excerpt (2-node broadcast whose sizes differ)
    v = decide(ingest([WILD / "dv2-065-nccl2205-2node-rank0-broadcast-opcount-truncated.txt"]))
    assert v.kind == Kind.UNDECIDED and "allocation no device holds" in v.summary
    # PyTorch's caching allocator's own message (c10/cuda/CUDACachingAllocator.cpp), raised as
    # torch.OutOfMemoryError, against the same line with a real size
    absurd = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory.\n"
    real = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
            "capacity of 79.10 GiB of which 3.12 MiB is free.\n")
    assert [_decide(tmp_path, t).kind for t in (absurd, real)] == [Kind.UNDECIDED, Kind.CRASHED_RANK]


def test_a_runtime_watchdog_then_its_kill_is_a_hang_not_a_crash(tmp_path):
    # SGLang's scheduler on every TP rank: `Watchdog timeout (self.watchdog_timeout=300)` (Scheduler.watchdog_thread:
    # logger.error(f"Watchdog timeout ({self.watchdog_timeout=})") then SIGQUIT to its parent), then the server's
    # `Received sigquit from a child proces` and `Killed`: the kill is the watchdog's consequence
    v = decide(ingest([WILD / "dv16-032-sglang-scheduler-watchdog-timeout-tp0-7-killed.txt"]))
    assert v.kind == Kind.UNDECIDED and v.rule == "crashed_by_words"
    assert "watchdog fired" in v.summary and "300 s" in v.summary
    # the same sigquit line after a scheduler's own error, no watchdog line: the child failed, a crash
    text = ("[2025-03-09 00:57:15 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
            "[2025-03-09 00:57:15 TP0] RuntimeError: CUDA error: an illegal instruction was encountered\n"
            "[2025-03-09 00:57:20] Received sigquit from a child process. It usually means the child failed.\n")
    assert _decide(tmp_path, text).kind == Kind.CRASHED_RANK
