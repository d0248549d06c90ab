"""Issue 33's rule on real runs: the rank that holds everyone across process groups, and the chain."""

from __future__ import annotations

import pytest

from tests.conftest import SAMPLES
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.outcome import Kind
from tracekit.rules import first
from tracekit.rules_wait import waiting_across_groups
from tracekit.verdict import decide


@pytest.mark.parametrize("sample, kind, ranks, says", [
    # gloo, 4 ranks under tracekit run (samples/repro/groups_job.py): rank 1 never joins its tensor group's
    # all_reduce; rank 0 waits there, ranks 2-3 go on to the world's and wait there (main read: DEADLOCK of
    # default_pg naming ranks 0-1)
    ("gloo_1x4_groups_small", Kind.DEADLOCK, [1],
     "rank 1 is in load_shard (groups_job.py:33) and never joined all_reduce #3 of "
     "TENSOR_MODEL_PARALLEL_GROUP_0 [0, 1]; rank 0 waits there; ranks 2-3 wait for ranks 0-1 in "
     "all_reduce #5 of default_pg"),
    # gloo: rank 3 never makes new_group([1, 2, 3]); ranks 1-2 wait in its creation, rank 0 in its tensor
    # group (main read: INIT-STALL, the rendezvous never completed)
    ("gloo_1x4_groups_late", Kind.INIT_STALL, [3],
     "rank 3 is in load_shard (groups_job.py:33) and never started the init of the group created at main "
     "(groups_job.py:54) (members unknown), the only rank in no collective; ranks 1-2 wait there; "
     "rank 0 waits for rank 1 in all_reduce #3 of TENSOR_MODEL_PARALLEL_GROUP_0 [0, 1]"),
    # real NCCL 2.28.9, four fake nodes on an H200 (samples/gpu_nccl_subgroup/README.md): main read
    # CRASHED-RANK of rank 2, the watchdog's SIGABRT
    ("gpu_nccl_subgroup", Kind.DEADLOCK, [1],
     "rank 1 is in next_batch_stuck (gpu_nccl_groups.py:47) and never joined all_reduce #30 of group [0, 1]; "
     "rank 0 waits there; ranks 0,2-3 wait for rank 1 in all_reduce #30 of default_pg"),
    # real NCCL: the new communicator's init started on global ranks 1-2 (its ranks 0-1), never on rank 3
    # (main read: INIT-STALL on ranks 0-1, the numbers inside the communicator)
    ("gpu_nccl_newgroup", Kind.INIT_STALL, [3],
     "rank 3 is in next_batch_stuck (gpu_nccl_groups.py:47) and never started the init of communicator "
     "0x9fedc9a7b5144dc1 (members unknown), the only rank in no collective; ranks 1-2 wait there; "
     "rank 0 waits for ranks 1-3 in all_reduce #30 of default_pg"),
])
def test_the_rank_that_holds_everyone_across_groups(sample, kind, ranks, says):
    name, v = first(Evidence.gather(ingest([SAMPLES / sample])))
    assert (name, v.kind, v.ranks) == ("waiting_across_groups", kind, ranks), v.summary
    assert v.summary.startswith(says)
    assert any(f"rank {ranks[0]} main thread in " in line for line in v.evidence)  # the root's stack


@pytest.mark.parametrize("sample", ["gloo_2x2_deadlock", "gpu_2x1_initstall", "gloo_2x2_crash",
                                    "gpu_nccl_alltoall", "gloo_1x4_healthy"])
def test_a_hang_inside_one_group_or_a_cause_of_its_own_is_left_to_the_other_rules(sample):
    """One group (the plain deadlock and init rules say it), a crash (its record says why), a size
    mismatch (the collective itself holds the others), a healthy run: this rule stays silent."""
    assert waiting_across_groups(Evidence.gather(ingest([SAMPLES / sample]))) is None


def test_a_size_mismatch_between_ranks_reads_as_a_mismatch_not_the_network():
    """Real NCCL (samples/gpu_nccl_alltoall): an all_to_all whose splits differ between ranks; NCCL's WARN
    `message truncated : receiving 64 bytes instead of 32` (main read: TRANSPORT-ERROR). The Flight
    Recorder's all_to_all totals name the rank whose splits differ (rank 2: sends 40, receives 32);
    NCCL's WARN is a mismatch sign, not a transport error."""
    v = decide(ingest([SAMPLES / "gpu_nccl_alltoall"]))
    assert v.kind == Kind.MISMATCH and v.ranks == [2] and "rank 2 sends 40 and receives 32" in v.summary, v.summary
    assert any(s.startswith("mismatch") for s in v.failure_signs), v.failure_signs
    assert not any(s.startswith("transport error") for s in v.failure_signs), v.failure_signs
