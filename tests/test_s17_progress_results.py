"""Session 17 (issue 31, "say what the evidence shows"): a benchmark's own RDMA figure (DeepEP's
tests/legacy/test_internode.py `N GB/s (RDMA)`) under what one 100 Gb/s NIC carries is slow, said with the
figure; PaddlePaddle's `ips:` is the rate its progress lines print, not `samples: N` (the batch)."""

from pathlib import Path

from tests.factory import make_store
from tracekit import pace, rules_results
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


def result(line: int, rdma: float, nvl: float) -> dict:
    return dict(kind="bandwidth", where="benchmark", file="ep.log", line=line, rank=0, busbw_gbs=rdma,
                message=f"[tuning] SMs 24, NVL chunk 4, RDMA chunk {4 * line}: {rdma:.2f} GB/s (RDMA), "
                        f"{nvl:.2f} GB/s (NVL)")


def test_rdma_bandwidth_under_one_slow_nic_is_slow_and_over_it_is_not():
    v = rules_results.benchmark_result(Evidence.gather(make_store(events=[result(1, 1.2, 2.4),
                                                                          result(2, 2.4, 4.8)])))
    assert v.kind == Kind.SLOW_PROGRESS and "RDMA bandwidth is at most 2.4 GB/s over 2 result line(s)" in v.summary
    v = rules_results.benchmark_result(Evidence.gather(make_store(events=[result(1, 41.0, 150.0),
                                                                          result(2, 42.0, 151.0)])))
    assert v is None or v.kind != Kind.SLOW_PROGRESS


def test_deepep_internode_tuning_at_2_gbs_rdma_is_slow():
    v = decide(ingest([WILD / "dv13-023-deepep-internode-4node-tuning-low-rdma-bandwidth.txt"]))
    assert v.kind == Kind.SLOW_PROGRESS and "at most 2.41 GB/s" in v.summary


def test_paddle_ips_is_the_rate_not_the_batch():
    line = ("[2021/10/19 11:34:41] root INFO: epoch: [48/100], iter: 253, lr: 0.001013, loss: 4.284441, "
            "reader_cost: 0.01747 s, batch_cost: 2.66951 s, samples: 512, ips: 191.79578")
    t = pace.ticks(make_store(events=[dict(kind="step", file="t.log", line=1, step=253, message=line)]).events)
    assert t["rate"].to_list() == [191.79578]


def test_ms_swift_logging_jsonl_step_reports_are_steps():
    """ms-swift writes its step report to logging.jsonl as JSON (swift/trainers/callback.py append_to_jsonl),
    double-quoted, as well as printing it as a dict: both are its steps."""
    v = decide(ingest([WILD / "dv12-038-ms-swift-dpo-multinode-jsonl-steps-1-5.txt"]))
    assert v.kind == Kind.HEALTHY and "steps advanced 1 -> 5" in v.summary
