"""Issue 31, session 18: a rank busy outside any collective while the others time out in one. The program's
last word before c10d's watchdogs fired began an evaluation or a checkpoint save (tracekit/work_phases.py:
the lines read from the code that prints them) and nothing ended it: the rank in the phase (rank 0, whose
loggers print these) never issued the collective: DEADLOCK naming it. Dev excerpts of samples/wild, and
lines built in the runtimes' own formats."""

from pathlib import Path

import pytest

from tests.factory import text_store
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


@pytest.mark.parametrize("name, said", [
    # `Evaluating the results...`, then ranks 1-3 time out in ALLREDUCE SeqNum 4178
    ("dv11-031-ufld-evaluating-ranks123-allreduce-4178-timeout.txt", "SeqNum=4178"),
    # torchtune's `Saving checkpoint. This may take some time.`, then rank 4 times out in SeqNum 9387
    ("dv4-038-torchtune-lora-llama4-ckpt-save-allreduce-timeout.txt", "SeqNum=9387"),
    # Lightning's `Validating:  83%| 5/6`, then ranks 2-3 time out in a BROADCAST
    ("dv16-028-lightning-sharded-consolidate-broadcast-timeout-ranks-2-3.txt", "BROADCAST"),
])
def test_a_phase_begun_before_the_timeouts_names_the_rank_in_it(name, said):
    v = decide(ingest([WILD / name]))
    assert v.kind == Kind.DEADLOCK
    assert said in v.summary and "rank 0 never issued" in v.summary
    assert v.ranks == [0]


# c10d's watchdog line as torch 2.4-2.6 prints it (ProcessGroupNCCL.cpp:632 in dv4-038's own lines: WorkNCCL's
# operator<< `WorkNCCL(SeqNum=, OpType=, NumelIn=, NumelOut=, Timeout(ms)=)` and checkTimeout's `ran for N
# milliseconds before timing out.`)
WATCHDOG = ("[rank{r}]:[E430 05:09:48.828088908 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
            "ran for 600005 milliseconds before timing out.\n")
# Megatron-LM's save (megatron/training/checkpointing.py:694 and :1086 at d98e8a64dd): print_rank_0 at its
# start, `successfully saved checkpoint from iteration` at its end
MEGATRON_BEGIN = "[2025-01-02 10:00:00.000000] saving checkpoint at iteration     500 to /ckpt in torch_dist format\n"
MEGATRON_END = "  [2025-01-02 10:03:00.000000] successfully saved checkpoint from iteration     500 to /ckpt\n"


def test_megatron_save_begun_and_never_ended_and_one_that_ended(tmp_path):
    waits = WATCHDOG.format(r=1) + WATCHDOG.format(r=2)
    v = decide(text_store(tmp_path, MEGATRON_BEGIN + waits, "begun.log"))
    assert v.kind == Kind.DEADLOCK
    assert v.ranks == [0] and "SeqNum=812" in v.summary and "save" in v.summary
    # the save's own end before the timeouts: it was not what held rank 0
    assert decide(text_store(tmp_path, MEGATRON_BEGIN + MEGATRON_END + waits, "ended.log")).kind == Kind.UNDECIDED


def test_the_rank_in_the_phase_that_also_timed_out_is_not_missing(tmp_path):
    # fairseq's `begin validation on "valid" subset` (fairseq_cli/train.py:472 at 3d262bb2): without a prefix
    # it is rank 0's (its logger prints on rank 0 alone), with rank 1's own prefix it is rank 1's, and rank 1
    # is among the ranks that timed out: it reached the collective
    said = '2025-01-02 10:00:00 | INFO | fairseq_cli.train | begin validation on "valid" subset\n'
    waits = WATCHDOG.format(r=1) + WATCHDOG.format(r=2)
    v = decide(text_store(tmp_path, said + waits, "bare.log"))
    assert v.kind == Kind.DEADLOCK and v.ranks == [0] and "an evaluation" in v.summary
    assert decide(text_store(tmp_path, "[rank1]: " + said + waits, "own.log")).kind == Kind.UNDECIDED


# --- the one rank of the group not in the collective, seen alive while the others wait -------------------------

# dv14-025's own watchdog lines (torch 2.6: ProcessGroupNCCL.cpp:629, `NumelIn=192, NumelOut=576`: a gather
# over 3 ranks), ranks 1 and 2 of 3
GATHER = ("[rank{r}]:[E516 06:09:16.295666043 ProcessGroupNCCL.cpp:629] [Rank {r}] Watchdog caught collective "
          "operation timeout: WorkNCCL(SeqNum=49296, OpType=_ALLGATHER_BASE, NumelIn=192, NumelOut=576, "
          "Timeout(ms)=1800000) ran for 1800076 milliseconds before timing out.\n")
# the HF Trainer's log of a step (Trainer.log: `{'loss': ..., 'learning_rate': ..., 'epoch': ...}`)
STEP = "[rank0]:{'loss': 0.4312, 'grad_norm': 1.2, 'learning_rate': 1e-05, 'epoch': 0.31}\n"


def test_the_absent_rank_alive_after_the_timeouts_is_the_deadlock(tmp_path):
    v = decide(text_store(tmp_path, GATHER.format(r=1) + GATHER.format(r=2) + STEP))
    assert v.kind == Kind.DEADLOCK
    assert v.ranks == [0] and "rank 0 never joined _ALLGATHER_BASE SeqNum=49296" in v.summary
    assert "a gather over 3 ranks" in v.summary


def test_the_absent_rank_not_seen_stays_undecided_and_named(tmp_path):
    v = decide(text_store(tmp_path, GATHER.format(r=1) + GATHER.format(r=2)))
    assert v.kind == Kind.UNDECIDED
    assert "rank 0 never joined _ALLGATHER_BASE SeqNum=49296" in v.summary
    assert "(NumelIn 192, NumelOut 576: a gather over 3 ranks)" in v.summary
