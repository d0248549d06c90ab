"""The first missing or mismatched collective: real FR dumps, real gloo runs, and small factories."""

import pytest

from tests.factory import fr_store, one
from tracekit import align, wording
from tracekit.align import Match
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

REFERENCE = {  # reference_output.txt of each folder: (pg, op, size, dtype, missing ranks)
    "gpu_error_1st": [("74", "nccl:all_to_all", "4027x5120", "BFloat16", [12])],
    "gpu_error_2nd": [("72", "nccl:all_to_all", "2048x5120", "BFloat16", [9, 14])],
    "lock_gil_1st": [("72", "nccl:all_to_all", "2048x5120", "BFloat16", [9, 14])],
    "lock_gil_2nd": [("73", "nccl:all_to_all", "4096x5120", "BFloat16", [10]),
                     ("74", "nccl:all_to_all", "4096x5120", "BFloat16", [15])],
}


@pytest.mark.parametrize("scenario", sorted(REFERENCE))
def test_matches_nvrx_reference(corpus, scenario):
    ref_text = (corpus / "nvrx_fr" / scenario / "reference_output.txt").read_text()
    store = ingest([corpus / "nvrx_fr" / scenario])
    found = [f for f in align.find(store, "fr") if f.op]
    got = [(f.pg, f.op, f.sizes, f.dtype, f.missing) for f in found[: len(REFERENCE[scenario])]]
    assert sorted(got) == sorted(REFERENCE[scenario])
    for pg, op, size, dtype, missing in REFERENCE[scenario]:
        assert f"{pg}     | EXPERT_MODEL_PARALLEL_GROUP" in ref_text and size in ref_text
    assert decide(store).kind == Kind.DEADLOCK


def test_missing_rank_and_its_last_collective():
    s = fr_store({0: [one("0", 1), one("0", 2)], 1: [one("0", 1), one("0", 2)], 2: [one("0", 1)]})
    f = align.find(s, "fr")[0]
    assert (f.kind, f.seq, f.missing, f.present) == (Match.MISSING, 2, [2], [0, 1])
    assert "seq 1" in f.last_of_missing[2]


def test_size_dtype_and_op_mismatch():
    s = fr_store({0: [one("0", 1, sizes="8")], 1: [one("0", 1, sizes="9")]})
    assert [f.kind for f in align.find(s, "fr")] == [Match.SIZE]
    s = fr_store({0: [one("0", 1, dtype="Float")], 1: [one("0", 1, dtype="BFloat16")]})
    assert [f.kind for f in align.find(s, "fr")] == [Match.DTYPE]
    s = fr_store({0: [one("0", 1, op="all_reduce")], 1: [one("0", 1, op="broadcast")]})
    assert [f.kind for f in align.find(s, "fr")] == [Match.OP_TYPE]
    assert decide(s).kind == Kind.MISMATCH


def test_all_to_all_sizes_may_differ():
    s = fr_store({0: [one("0", 1, op="all_to_all", sizes="4027x5120")], 1: [one("0", 1, op="all_to_all", sizes="4007x5120")]})
    assert align.find(s, "fr") == []


def test_rank_with_empty_dump_is_absent():
    s = fr_store({0: [one("0", 1)], 1: [one("0", 1)], 2: []}, members=[0, 1, 2])
    f = align.find(s, "fr")[0]
    assert f.missing == [2] and f.seq == 1


def test_ring_buffer_truncation_is_not_a_miss():
    # rank 1's buffer wrapped: it holds only seq 5..6, rank 0 holds 1..6: same frontier, no finding
    s = fr_store({0: [one("0", i) for i in range(1, 7)], 1: [one("0", i) for i in range(5, 7)]})
    assert align.find(s, "fr") == []


def test_first_in_time_wins():
    s = fr_store({0: [one("a", 1, t=50), one("b", 1, t=10)], 1: [], 2: [one("a", 1, t=51), one("b", 1, t=11)]},
                 members=[0, 1, 2])
    assert align.find(s, "fr")[0].pg == "b"


def test_fmt_ranks():
    assert wording.fmt_ranks([5, 0, 1, 2, 9, 10]) == "0-2,5,9-10"
