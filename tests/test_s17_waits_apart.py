"""Where the ranks' waits tell them apart (issue 31, tracekit/rules_apart.py): ranks that wait in different
collectives are a mismatch (watchdogs at different SeqNums of one group, a gather's inputs of different sizes,
Horovod's stall report of ranks each missing what the other submitted, DDP's model check), and every rank of a
group but one timing out names the one that never joined (said, still UNDECIDED)."""

from pathlib import Path

from tests.factory import text_store
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


def _wild(name: str):
    return decide(ingest([WILD / name]))


def _watchdog(rank: int, seq: int, op: str = "_ALLGATHER_BASE", numels: tuple[int, int] | None = None) -> str:
    sizes = f", NumelIn={numels[0]}, NumelOut={numels[1]}" if numels else ""
    return (f"[rank{rank}]:[E318 07:39:53.713449198 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}{sizes}, Timeout(ms)=600000) ran "
            "for 600007 milliseconds before timing out.\n")


def test_watchdogs_at_different_seqnums_are_a_mismatch():
    v = _wild("dv2-064-llamafactory-rank0-1516-vs-rank1-1517-allreduce.txt")
    assert v.kind == Kind.MISMATCH and v.ranks == [0, 1]
    assert "rank 0 timed out in SeqNum=1516 (ALLREDUCE) while rank 1 timed out in SeqNum=1517" in v.summary


def test_watchdogs_at_different_seqnums_written_anew(tmp_path):
    v = decide(text_store(tmp_path, _watchdog(0, 7559) + _watchdog(1, 7561)))
    assert v.kind == Kind.MISMATCH and "sequences of collectives diverged" in v.summary


def test_gather_inputs_of_different_sizes_are_a_mismatch(tmp_path):
    v = _wild("dv13-036-diffsynth-lightning-coalesced-610-different-sizes.txt")
    assert v.kind == Kind.MISMATCH
    assert "SeqNum=610 (COALESCED) is not the same collective" in v.summary
    assert "56320" in v.summary and "107520" in v.summary and "group of 8" in v.summary
    # inputs of one size: one collective
    same = _watchdog(1, 610, "COALESCED", (56320, 450560)) + _watchdog(7, 610, "COALESCED", (56320, 450560))
    assert decide(text_store(tmp_path, same)).kind == Kind.UNDECIDED
    # (NumelOut not one multiple of NumelIn on every rank: not a gather of one group, nothing to compare)
    odd = _watchdog(1, 610, "COALESCED", (56320, 450560)) + _watchdog(7, 610, "COALESCED", (107520, 107520))
    assert decide(text_store(tmp_path, odd, "odd.log")).kind == Kind.UNDECIDED


def test_horovod_ranks_each_missing_what_the_other_submitted_are_a_mismatch():
    v = _wild("dv14-056-lightning-horovod-stall-inspector-broadcast-vs-allreduce.txt")
    assert v.kind == Kind.MISMATCH and v.ranks == [0, 1]
    assert "rank 0 is missing broadcast.bool.sz, which rank 1 submitted" in v.summary
    assert "rank 1 is missing allreduce.c_d1.bias, which rank 0 submitted" in v.summary
    # one rank missing what the others submitted: behind them, a deadlock as before
    v = _wild("nccl-013-horovod-broadcast-stall-missing-rank1.txt")
    assert v.kind == Kind.DEADLOCK and "rank 1 never joined" in v.summary


def test_horovod_cut_list_proves_nothing_past_its_last_name(tmp_path):
    # rank 1's list is cut after six names (` ...`): broadcast.x sorts after them, so rank 1 may be missing it
    # too, and with no earlier report nothing shows rank 1 submitted it
    head = ("[2020-12-29 16:50:57.724380: W horovod/common/stall_inspector.cc:105] One or more tensors were "
            "submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of "
            "ranks for more than 60 seconds. This may indicate that different ranks are trying to submit different "
            "tensors or that only subset of ranks is submitting tensors, which will cause deadlock.\n"
            "Missing ranks:\n")
    text = head + "0: [broadcast.x]\n1: [allreduce.a, allreduce.b, allreduce.c, allreduce.d, allreduce.e, " \
                  "allreduce.f ...]\n"
    assert decide(text_store(tmp_path, text)).kind != Kind.MISMATCH
    # an earlier report where rank 1 was not listed while broadcast.x stalled: rank 1 had submitted it
    v = decide(text_store(tmp_path, head + "0: [broadcast.x]\n" + text, "two.log"))
    assert v.kind == Kind.MISMATCH and "rank 0 is missing broadcast.x, which rank 1 submitted" in v.summary


def test_ddp_model_check_is_a_mismatch():
    v = _wild("dv9-003-stream-of-search-ddp-param-count-mismatch.txt")
    assert v.kind == Kind.MISMATCH and v.ranks == [0, 1]
    assert "rank 1 has 212 params while rank 0 has 0" in v.summary


def test_every_rank_but_one_timed_out_names_the_one_undecided(tmp_path):
    # dv14-025 is labelled deadlock (rank 0 stuck with a server), dv10-032 crashed-rank (rank 0 failed in a
    # checkpoint save): the excerpts show neither, so both stay UNDECIDED and say which rank never joined
    v = _wild("dv14-025-open-r1-grpo-vllm-serve-ranks1-2-allgather-49296-timeout.txt")
    assert v.kind == Kind.UNDECIDED
    assert "rank 0 never joined _ALLGATHER_BASE SeqNum=49296" in v.summary
    assert "group of 3 (NumelOut 576 = 3 x NumelIn 192)" in v.summary
    v = _wild("dv10-032-torchtune-epoch-end-allgather-base-timeout.txt")
    assert v.kind == Kind.UNDECIDED and "rank 0 never joined _ALLGATHER_BASE SeqNum=15037" in v.summary
    # one rank of two seen: as often a paste of one rank's log, no rank named
    v = decide(text_store(tmp_path, _watchdog(1, 77, numels=(8, 16))))
    assert v.kind == Kind.UNDECIDED and "never joined" not in v.summary
