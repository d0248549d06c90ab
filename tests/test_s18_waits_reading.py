"""Issue 31, session 18: the watchdog's line read whole where a terminal or a paste wraps it after its head,
and the work's size said (c10d's WorkNCCL print: `NumelIn=192, NumelOut=576` is a gather over 3 ranks)."""

from tests.factory import events_of, text_store
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

# ProcessGroupNCCL's checkTimeout prints `[Rank N] Watchdog caught collective operation timeout: ` then the
# work (WorkNCCL's operator<<, torch >= 2.2: `WorkNCCL(SeqNum=, OpType=, NumelIn=, NumelOut=, Timeout(ms)=)`)
# and ` ran for N milliseconds before timing out.`: dv14-025's lines (ProcessGroupNCCL.cpp:629 of its build),
# wrapped after the head as a terminal breaks them
HEAD = "[E516 06:09:16.295666043 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught collective operation timeout:\n"
WORK = ("WorkNCCL(SeqNum=49296, OpType=_ALLGATHER_BASE, NumelIn=192, NumelOut=576, Timeout(ms)=1800000) ran for "
        "1800076 milliseconds before timing out.\n")


def test_a_watchdog_line_wrapped_after_its_head_keeps_its_rank(tmp_path):
    store = text_store(tmp_path, HEAD.format(r=1) + WORK + HEAD.format(r=2) + WORK)
    wd = events_of(store, EventKind.WATCHDOG_TIMEOUT)
    assert wd["rank"].to_list() == [1, 2] and wd["seq"].to_list() == [49296, 49296]
    v = decide(store)
    assert v.kind == Kind.UNDECIDED
    # ranks 1 and 2 of a gather over 3: rank 0 is the one that never joined it
    assert v.summary.startswith("ranks 1-2 timed out in _ALLGATHER_BASE SeqNum=49296 (NumelIn 192, NumelOut 576: "
                                "a gather over 3 ranks) after 1800 s")
    assert "rank 0 never joined _ALLGATHER_BASE SeqNum=49296" in v.summary


def test_a_timeout_after_the_training_ended_is_said_and_its_abort_is_not_a_crash():
    # Lightning's rank_zero_info(f"`Trainer.fit` stopped: `max_epochs={self.max_epochs!r}` reached.")
    # (src/lightning/pytorch/loops/fit_loop.py:191 at 7f0c3436cd), then rank 0's watchdog line wrapped over
    # three lines with its work cut (`WorkNCCL(..., OpType=ALLREDUCE, ...)`), then srun's `Aborted (core
    # dumped)`: the watchdog's own SIGABRT, not a crash that explains the wait (dv17-041 accepts deadlock or
    # undecided, not crashed-rank)
    from pathlib import Path

    from tracekit.ingest import ingest
    wild = Path(__file__).resolve().parent.parent / "samples" / "wild"
    store = ingest([wild / "dv17-041-autocast-postfit-rank0-allreduce-timeout.txt"])
    wd = events_of(store, EventKind.WATCHDOG_TIMEOUT)
    assert wd["rank"].to_list() == [0] and wd["op"].to_list() == ["allreduce"]
    v = decide(store)
    assert v.kind == Kind.UNDECIDED
    assert v.summary.startswith("rank 0 timed out in ALLREDUCE (NumelIn 1, NumelOut 1) after its training had ended")
    assert "is the watchdog's own" in v.summary


# torch_npu's ProcessGroupHCCL (github:Ascend/pytorch torch_npu/csrc/distributed/ProcessGroupHCCL.cpp at
# 9e73e708a): checkTimeout's `[Rank N] Watchdog caught collective operation timeout: ` + operator<<'s
# `WorkHCCL(SeqNum=, OpType=, NumelIn=, NumelOut=, Timeout(ms)=)` + ` ran for N milliseconds before timing out.`
# (:645-659, :904-911); the monitor's logPrefix() `[PG 0 Rank 3] ` (:1994-1996) + `Received a dump signal from
# this local rank and will start to dump the debug info. Last enqueued HCCL work: N, last completed HCCL work:
# M.` (:1703-1710); `Some HCCL operations have failed or timed out. ...` (:991)
HCCL = ("[E1212 12:10:10.131512730 ProcessGroupHCCL.cpp:907] [Rank {r}] Watchdog caught collective operation timeout: "
        "WorkHCCL(SeqNum=2048, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=1800000) ran for 1800125 "
        "milliseconds before timing out.\n")
HCCL_STATUS = ("[E1212 12:10:11.000000000 ProcessGroupHCCL.cpp:1705] [PG 0 Rank 3] Received a dump signal from this "
               "local rank and will start to dump the debug info. Last enqueued HCCL work: 2049, last completed HCCL "
               "work: 2047.\n")
HCCL_ABORT = ("[E1212 12:10:12.000000000 ProcessGroupHCCL.cpp:991] Some HCCL operations have failed or timed out. Due "
              "to the asynchronous nature of ASCEND kernels, subsequent NPU operations might run on "
              "corrupted/incomplete data.\n")


def test_torch_npu_hccl_watchdog_lines_are_read_as_c10d_s(tmp_path):
    store = text_store(tmp_path, HCCL.format(r=3) + HCCL.format(r=1) + HCCL_STATUS + HCCL_ABORT)
    wd = events_of(store, EventKind.WATCHDOG_TIMEOUT)
    assert wd["rank"].to_list() == [3, 1] and wd["seq"].to_list() == [2048, 2048]
    st = events_of(store, EventKind.WATCHDOG_STATUS)
    assert st["last_enqueued"].to_list() == [2049] and st["last_completed"].to_list() == [2047]
    assert events_of(store, EventKind.WATCHDOG_ABORT).height == 1
    v = decide(store)
    assert v.kind == Kind.UNDECIDED
    # rank 3's status line `[PG 0 Rank 3]` names its group (the default one), read since e43e388 by PG_TAG
    assert v.summary.startswith("ranks 1,3 timed out in ALLREDUCE SeqNum=2048 on process group 0 (NumelIn 4096, "
                                "NumelOut 4096) after 1800 s")


# PaddlePaddle's comm task watchdog (paddle/phi/core/distributed/comm_task_manager.cc CommTaskLoop at 05ba5e51:
# `Find timeout start but not finish task:` + nccl_comm_task.cc GetTraceMsg at 00816fcb), under glog's prefix
PADDLE = ("W1205 10:00:00.000000 1234{r} comm_task_manager.cc:170] Find timeout start but not finish task:group_key:0,"
          "group_ranks:[0, 1, 2, 3],global_rank:{r},local_rank:{r},comm_count:3187,op:ALLREDUCE,started:1,completed:0,"
          "numel:1024,nranks:4\n")


def test_paddle_comm_task_timeouts_are_watchdog_timeouts(tmp_path):
    store = text_store(tmp_path, PADDLE.format(r=1) + PADDLE.format(r=2))
    wd = events_of(store, EventKind.WATCHDOG_TIMEOUT)
    assert wd["rank"].to_list() == [1, 2] and wd["seq"].to_list() == [3187, 3187]
    assert wd["op"].to_list() == ["allreduce", "allreduce"]
    v = decide(store)
    assert v.kind == Kind.UNDECIDED and v.summary.startswith("ranks 1-2 timed out in ALLREDUCE SeqNum=3187")
