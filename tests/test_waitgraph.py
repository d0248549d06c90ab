"""The wait-for graph across process groups (tracekit/waitgraph.py), on entries built by a tiny factory."""

from __future__ import annotations

from tracekit.waitgraph import Entry, EntryState, Group, RankRecord, RootKind, build

WORLD4 = Group("0", (0, 1, 2, 3), "default_pg")
W, C, I = EntryState.WAITING, EntryState.COMPLETED, EntryState.INIT


def at(rank: int, group: Group, seq: int | None, state: EntryState = W, op: str = "all_reduce") -> Entry:
    return Entry(rank, group, state, seq, op)


def rank(r: int, *entries: Entry, frame: str | None = None, recorded: bool = True) -> RankRecord:
    return RankRecord(r, tuple(entries), frame, recorded)


def test_two_groups_root_with_a_stack():
    """The issue's first case: rank 1 never joins its tensor group's all_reduce; rank 0 waits there,
    ranks 2-3 go on to the world's all_reduce and wait for ranks 0-1."""
    tp01 = Group("1", (0, 1), "TENSOR_MODEL_PARALLEL_GROUP")
    tp23 = Group("2", (2, 3), "TENSOR_MODEL_PARALLEL_GROUP")
    g = build([
        rank(0, at(0, WORLD4, 18, C), at(0, tp01, 12)),
        rank(1, at(1, WORLD4, 18, C), at(1, tp01, 11, C), frame="train.py:40 load_shard"),
        rank(2, at(2, WORLD4, 19), at(2, tp23, 12, C)),
        rank(3, at(3, WORLD4, 19), at(3, tp23, 12, C)),
    ])
    assert [(r.rank, r.kind) for r in g.roots] == [(1, RootKind.OUTSIDE)]
    assert g.roots[0].awaited_in.group is tp01 and g.roots[0].awaited_in.seq == 12
    assert [(link.group.pg, link.seq, link.waiting, link.waits_for) for link in g.links] == [
        ("1", 12, (0,), (1,)), ("0", 19, (2, 3), (0, 1))]
    assert g.decided and not g.cycles and not g.missing
    assert g.sentence() == (
        "rank 1 is in train.py:40 load_shard and never joined "
        "all_reduce #12 of TENSOR_MODEL_PARALLEL_GROUP [0, 1]; "
        "rank 0 waits there; ranks 2-3 wait for ranks 0-1 in all_reduce #19 of default_pg")


def test_chain_of_four_groups_names_the_last_rank():
    """0 waits in A for 1, 1 in B for 2, 2 in C for 3, 3 in D for 4; 4 is elsewhere: 4 is the root, and
    the links run from it outward."""
    groups = [Group(str(i), (i, i + 1), f"G{i}") for i in range(4)]
    g = build([rank(i, at(i, groups[i], 5)) for i in range(4)] + [rank(4, frame="data.py:7 next_batch")])
    assert [r.rank for r in g.roots] == [4]
    assert [link.group.desc for link in g.links] == ["G3", "G2", "G1", "G0"]
    assert g.sentence().startswith(
        "rank 4 is in data.py:7 next_batch and never joined all_reduce #5 of G3 [3, 4]")


def test_chain_of_three_groups_members_ahead_are_not_waited_for():
    """A member that already reached the sequence number (its last entry is later) is not waited for."""
    a, b, c = Group("a", (0, 1, 2)), Group("b", (1, 2)), Group("c", (2, 3))
    g = build([
        rank(0, at(0, a, 7)),
        rank(1, at(1, a, 7), at(1, b, 3, C)),  # 1 joined a#7 (waits there with 0) and finished b
        rank(2, at(2, a, 6, C), at(2, b, 4), at(2, c, 9, C)),
        rank(3, at(3, c, 9, C), frame="train.py:88 save_checkpoint"),
    ])
    links = {(link.group.pg, link.seq): (link.waiting, link.waits_for) for link in g.links}
    assert links[("a", 7)] == ((0, 1), (2,))
    assert links[("b", 4)] == ((2,), (1,))
    # 2 waits in b for 1, which waits in a for 2: a cycle of two groups, and no rank outside it
    assert not g.roots and len(g.cycles) == 1
    assert {(link.group.pg, link.seq) for link in g.cycles[0]} == {("a", 7), ("b", 4)}
    assert "a cycle: " in g.sentence()
    assert g.decided


def test_cycle_of_two_ranks_in_two_groups():
    """Rank 0 is in group X's #4 waiting for 1; rank 1 is in group Y's #2 waiting for 0 (issue order
    differs between them): a cycle, named as such, no root."""
    x, y = Group("x", (0, 1), "X"), Group("y", (0, 1), "Y")
    g = build([rank(0, at(0, x, 4), at(0, y, 1, C)), rank(1, at(1, x, 3, C), at(1, y, 2))])
    assert not g.roots
    assert [[(link.group.pg, link.waiting, link.waits_for) for link in c] for c in g.cycles] == [
        [("x", (0,), (1,)), ("y", (1,), (0,))]]
    assert g.sentence() == ("a cycle: rank 0 in all_reduce #4 of X [0, 1] for rank 1, "
                            "rank 1 in all_reduce #2 of Y [0, 1] for rank 0")


def test_root_with_no_record_cuts_the_chain():
    """Rank 3 waits in the world for rank 2; rank 2 is a member of the world but left no record: the
    chain is cut there, and rank 2's records would close it."""
    g = build([rank(0, at(0, WORLD4, 9, C)), rank(1, at(1, WORLD4, 9, C)), rank(3, at(3, WORLD4, 10))])
    assert [(r.rank, r.kind) for r in g.roots] == [(0, RootKind.OUTSIDE), (1, RootKind.OUTSIDE),
                                                  (2, RootKind.NO_RECORD)]
    assert g.missing == (2,) and not g.decided
    assert g.sentence().endswith("the records of rank 2 would close the chain")


def test_root_with_no_record_behind_a_waiting_rank():
    """0 waits in A for 1; 1 waits in B for 2, which is listed but recorded nothing: rank 2 is the first
    rank of the chain whose record is missing."""
    a, b = Group("a", (0, 1), "A"), Group("b", (1, 2), "B")
    g = build([rank(0, at(0, a, 3)), rank(1, at(1, a, 2, C), at(1, b, 8)), rank(2, recorded=False)])
    assert [(r.rank, r.kind) for r in g.roots] == [(2, RootKind.NO_RECORD)]
    assert [link.group.pg for link in g.links] == ["b", "a"]
    assert g.sentence() == ("rank 2 left no record, and the others wait for it in all_reduce #8 of B [1, 2]; "
                            "rank 1 waits there; rank 0 waits for rank 1 in all_reduce #3 of A [0, 1]; "
                            "the records of rank 2 would close the chain")


def test_pending_init_names_the_member_that_never_started():
    """A group made mid-run: ranks 1-2 started its communicator init, rank 3 never did (no entry in the
    group); rank 0, not a member, waits in the world for ranks 1-3."""
    late = Group("5", (1, 2, 3), "EXPERT_PARALLEL_GROUP")
    g = build([
        rank(0, at(0, WORLD4, 31)),
        rank(1, at(1, WORLD4, 30, C), at(1, late, None, I)),
        rank(2, at(2, WORLD4, 30, C), at(2, late, None, I)),
        rank(3, at(3, WORLD4, 30, C), frame="train.py:51 load_shard"),
    ])
    assert [r.rank for r in g.roots] == [3]
    assert g.sentence() == (
        "rank 3 is in train.py:51 load_shard and never started "
        "the init of EXPERT_PARALLEL_GROUP [1, 2, 3]; "
        "ranks 1-2 wait there; rank 0 waits for ranks 1-3 in all_reduce #31 of default_pg")


def test_collective_every_member_joined_ends_the_chain_in_itself():
    """Every member issued #4 and none completed it: no rank holds it (a transport or a size mismatch)."""
    g = build([rank(r, at(r, WORLD4, 4)) for r in range(4)])
    assert [(r.rank, r.kind) for r in g.roots] == [(None, RootKind.ALL_JOINED)]
    assert g.sentence() == "ranks 0-3 all joined all_reduce #4 of default_pg, and it never completed"


def test_nobody_waits_nothing_to_say():
    g = build([rank(r, at(r, WORLD4, 4, C)) for r in range(4)])
    assert not g.roots and not g.links and not g.decided


def test_root_without_a_stack_says_so():
    g = build([rank(0, at(0, WORLD4, 2)), rank(1, at(1, WORLD4, 1, C))])
    assert g.roots[0].frame is None
    assert g.sentence().startswith("rank 1 is in no collective (no stack dump says where) and never joined")


def test_group_in_creation_with_unknown_members_points_at_the_rank_in_no_collective():
    """The gloo capture's shape (samples/gloo_1x4_groups_late): ranks 1-2 are in new_group for a group no
    dump lists yet; rank 0 waits in its tensor group for rank 1; rank 3 is in load_shard."""
    tp01 = Group("1", (0, 1), "TENSOR_MODEL_PARALLEL_GROUP_0")
    late = Group("new_group@groups_job.py:54", (), "EXPERT_PARALLEL_GROUP")
    g = build([
        rank(0, at(0, WORLD4, 4, C), at(0, tp01, 3)),
        rank(1, at(1, WORLD4, 4, C), at(1, tp01, 2, C), at(1, late, None, I)),
        rank(2, at(2, WORLD4, 4, C), at(2, late, None, I)),
        rank(3, at(3, WORLD4, 4, C), frame="groups_job.py:33 load_shard"),
    ])
    assert [(r.rank, r.kind) for r in g.roots] == [(3, RootKind.OUTSIDE)]
    assert g.roots[0].awaited_in.inferred and g.decided
    assert g.sentence() == (
        "rank 3 is in groups_job.py:33 load_shard and never started the init of "
        "EXPERT_PARALLEL_GROUP (members unknown), the only rank in no collective; ranks 1-2 wait there; "
        "rank 0 waits for rank 1 in all_reduce #3 of "
        "TENSOR_MODEL_PARALLEL_GROUP_0 [0, 1]")


def test_nccl_rank_enqueued_in_two_groups_the_roots_link_comes_first():
    """Real NCCL's shape (samples/gpu_nccl_subgroup): rank 0 enqueued both its small group's #30 and the
    world's #30 before blocking; rank 1 is in next_batch_stuck at #29 of both."""
    tp01 = Group("1", (0, 1))
    g = build([
        rank(0, at(0, tp01, 30), at(0, WORLD4, 30)),
        rank(1, at(1, tp01, 29, C), at(1, WORLD4, 29, C), frame="next_batch_stuck (gpu_nccl_groups.py:47)"),
        rank(2, at(2, Group("2", (2, 3)), 30, C), at(2, WORLD4, 30)),
        rank(3, at(3, Group("2", (2, 3)), 30, C), at(3, WORLD4, 30)),
    ])
    assert [r.rank for r in g.roots] == [1]
    assert g.sentence() == (
        "rank 1 is in next_batch_stuck (gpu_nccl_groups.py:47) and never joined "
        "all_reduce #30 of group [0, 1]; "
        "rank 0 waits there; ranks 0,2-3 wait for rank 1 in all_reduce #30 of default_pg")


def test_a_rank_left_in_a_collective_the_others_went_past():
    """sizes that differ (an all_to_all of other splits): rank 0 still waits in #32 that ranks 1-3
    completed; no rank holds it, the collective itself does."""
    others = [rank(r, at(r, WORLD4, 32, C)) for r in (1, 2, 3)]
    g = build([rank(0, at(0, WORLD4, 32, op="all_to_all"))] + others)
    assert [(r.rank, r.kind) for r in g.roots] == [(None, RootKind.ALL_JOINED)]
    assert g.sentence() == ("rank 0 waits in all_to_all #32 of default_pg, which every member reached "
                            "(ranks 1-3 went past it)")
