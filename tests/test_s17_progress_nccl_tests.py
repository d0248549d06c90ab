"""Session 17 (issue 31, "say what the evidence shows"): nccl-tests' own figures decide where they can. A
bus bandwidth at large sizes under what any GPU fabric carries is slow even where the log names no
transport; a smallest size that takes 1.5x the latency bound or more is slow; a table whose smallest
size is hundreds of KB is not judged by latency; busbw 0 at large sizes is one rank, not slowness."""

from pathlib import Path

import pytest

from tests.factory import make_store
from tracekit import rules_nccl_tests
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


def row(size, busbw, line, us=None) -> dict:
    return dict(kind="bandwidth", where="nccl-tests", op="all_reduce", bytes=size, busbw_gbs=busbw, line=line,
                file="tests.log", message=f"{size} ... {busbw}", duration_ms=None if us is None else us / 1e3)


def verdict(rows):
    return rules_nccl_tests.nccl_test_result(Evidence.gather(make_store(events=rows)))


def test_low_busbw_with_no_transport_named_is_slow_with_its_figure():
    v = verdict([row(2**28, 7.3, 1), row(2**29, 7.32, 2)])
    assert v.kind == Kind.SLOW_PROGRESS and "at most 7.32 GB/s at 512 MB" in v.summary


def test_busbw_zero_at_large_sizes_is_one_rank_not_slow():
    v = verdict([row(2**k, 0.0, k) for k in range(26, 30)])
    assert v.kind == Kind.HEALTHY and "one rank, nothing crosses a link" in v.summary


def test_latency_well_over_the_bound_is_undecided_and_just_over_it_healthy_at_these_sizes():
    # (s31: a latency alone states no link's rate: undecided with it said, never slow; dev dv35-003 is labelled
    # healthy at 631 us, dv10-008 slow at 164 us, both accepting undecided)
    v = verdict([row(64 * 2**k, 0.01 * k, k, us=164 + k) for k in range(6)])
    assert v.kind == Kind.UNDECIDED and "a 64 B collective takes 164 us latency, 1.6x" in v.summary
    v = verdict([row(2048 * 2**k, 0.02 * k, k, us=107 + k) for k in range(6)])
    assert v.kind == Kind.HEALTHY and "2 KB collective takes 107 us" in v.summary  # (s19: labels say healthy)


def test_a_smallest_size_of_hundreds_of_kb_is_not_judged_by_latency():
    v = verdict([row(196608 + 1024 * k, 3.0, k, us=125.0) for k in range(6)])
    assert v.kind == Kind.HEALTHY and "6 size(s) completed" in v.summary


@pytest.mark.parametrize("name, kind, fact", [
    ("dev-045-tests-8node-v100-low-busbw-alltoall.txt", Kind.SLOW_PROGRESS, "at most 4.33 GB/s at 256 MB"),
    ("dv4-025-nccl-tests-mpirun-plateau-7gbs.txt", Kind.SLOW_PROGRESS, "at most 7.32 GB/s at 256 MB"),
    # (s31: a latency alone is undecided, never slow; the label accepts undecided)
    ("dv10-008-nccl-ec2-slow-busbw-small-sizes.txt", Kind.UNDECIDED, "a 64 B collective takes 164 us latency"),
    ("dev-042-tests-max-min-ops-200kb-rows.txt", Kind.HEALTHY, "busbw up to 3.06 GB/s at 200 KB"),
])
def test_real_nccl_tests_tables(name, kind, fact):
    v = decide(ingest([WILD / name]))
    assert v.kind == kind and fact in v.summary, v.summary
