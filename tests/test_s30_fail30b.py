"""Session 30, failures (fail30b): the rank the waits leave out, by number, where the group's size is not in
view (``rules_apart.lowest_unseen``, said by ``timed_out``): ranks of the default group that time out in one
collective with exactly one rank below the highest of them not among them name that rank (ranks 1-3 wait,
rank 0 does not; ranks 0, 1 and 3 wait, rank 2 does not); several unseen, or a group's size that counts
more unseen above, name none; a time-out whose line names no op said as `work SeqNum=N` where each rank is
(``situation``), never `? SeqNum`."""

from __future__ import annotations

from pathlib import Path

from tests.factory import text_store
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.outcome import Kind
from tracekit.rules_apart import lowest_unseen
from tracekit.verdict import decide

WILD = Path(__file__).parent.parent / "samples" / "wild"

#: samples/wild dv11-029's three watchdog lines: ranks 3, 1 and 0 in ALLREDUCE SeqNum=2665572, rank 2 absent
RANKS_0_1_3 = "\n".join(
    f"[rank{r}]:[E ProcessGroupNCCL.cpp:523] [Rank {r}] Watchdog caught collective operation timeout: "
    f"WorkNCCL(SeqNum=2665572, OpType=ALLREDUCE, NumelIn=11100676, NumelOut=11100676, Timeout(ms)=600000) ran "
    f"for {ms} milliseconds before timing out." for r, ms in ((3, 601336), (1, 601338), (0, 600851))) + "\n"

#: samples/wild dv8-052's two watchdog lines: ranks 0 and 2 of an all-gather over 4 ranks (NumelOut = 4 x NumelIn)
RANKS_0_2_OF_4 = "\n".join(
    f"[rank{r}]:[E1124 03:56:40.{t} ProcessGroupNCCL.cpp:692] [Rank {r}] Watchdog caught collective operation "
    f"timeout: WorkNCCL(SeqNum=13573, OpType=_ALLGATHER_BASE, NumelIn=54528000, NumelOut=218112000, "
    f"Timeout(ms)=600000) ran for {ms} milliseconds before timing out."
    for r, t, ms in ((0, "319632467", 600045), (2, "340505126", 600066))) + "\n"

#: samples/wild dv14-025's PG-status line of rank 1: the work it waits in, with no op named
STATUS_RANK1 = ("[rank1]:[E516 06:09:16.297295298 ProcessGroupNCCL.cpp:2168] [PG ID 0 PG GUID 0(default_pg) Rank 1]  "
                "failure detected by watchdog at work sequence id: 49296 PG status: last enqueued work: 49296, "
                "last completed work: 49295\n")


def _wild(prefix: str):
    (path,) = sorted(WILD.glob(prefix + "*.txt"))
    return decide(ingest([path]))


def test_the_one_rank_below_the_waiters_is_named_where_the_world_is_not_in_view():
    # (dv34-002: ranks 1-3 time out in BROADCAST SeqNum=1; the label's fact is rank 0, still busy with its data)
    v = _wild("dv34-002-")
    assert v.kind is Kind.UNDECIDED
    assert "rank 0 is the one rank up to rank 3 not seen timing out in BROADCAST SeqNum=1 with ranks 1-3" in v.summary
    assert "unless it was the root" in v.summary  # (a broadcast's root may have finished its part)
    assert "no record shows which rank is missing" not in v.summary


def test_a_gap_between_the_waiters_is_named(tmp_path):
    v = decide(text_store(tmp_path, RANKS_0_1_3))
    assert v.kind is Kind.UNDECIDED
    assert "rank 2 is the one rank up to rank 3 not seen timing out in ALLREDUCE SeqNum=2665572" in v.summary
    assert "unless it was the root" not in v.summary  # (an all-reduce completes on no rank before all joined)


def test_a_group_size_in_view_that_leaves_two_unseen_names_none(tmp_path):
    # (ranks 0 and 2 of an all-gather over 4: ranks 1 and 3 are both unseen, the waits name neither)
    ev = Evidence.gather(text_store(tmp_path, RANKS_0_2_OF_4))
    assert lowest_unseen(ev) == ""
    assert "not seen timing out" not in decide(text_store(tmp_path, RANKS_0_2_OF_4)).summary


def test_waiters_with_several_ranks_unseen_below_them_name_none():
    # (dev-064: ranks 5, 4, 0, 3, 1 of an all-gather over 8: ranks 2, 6 and 7 unseen)
    v = _wild("dev-064-")
    assert v.kind is Kind.UNDECIDED and "not seen timing out" not in v.summary


def test_one_waiter_alone_names_no_other(tmp_path):
    ev = Evidence.gather(text_store(tmp_path, RANKS_0_1_3.splitlines()[0] + "\n"))
    assert lowest_unseen(ev) == ""


def test_a_time_out_with_no_op_is_said_as_work_seqnum(tmp_path):
    v = decide(text_store(tmp_path, STATUS_RANK1))
    assert "rank 1: timed out in work SeqNum=49296" in v.summary
    assert "? SeqNum" not in v.summary
