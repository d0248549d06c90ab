"""Session 32, bench32b: the yardstick of a busbw measured across an RDMA fabric NCCL names (fabric_rates).

Covers fabric_rates.of and .judge as rules_nccl_tests.nccl_test_result asks them: a table under the 10 GB/s
floor over EFA (``via NET/AWS Libfabric``) or InfiniBand (``via NET/IB``) is measured against the lowest rate of
the links it crosses (the fabric's 100 Gb/s, the GPU's own PCIe link where it is a PCIe board): at a third of it
or more healthy, saying both links; under a third slow; a table cut short undecided, never healthy; a
socket run keeps its own yardstick (rules_nccl_tests._on_socket). Inputs are dev dv49-004's real lines (nccl-tests
scatter_perf on 2 nodes of 4 T4 GPUs over aws-ofi-nccl 1.5.0, 6.58 GB/s at 2 GB, labelled healthy), whole or with
its figures scaled, its fabric's channel lines renamed, or its end cut.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.factory import text_store
from tracekit.verdict import Kind, decide

DV49 = (Path(__file__).parent.parent / "samples/wild/dv49-004-nccl-tests-scatter-2node-t4-efa.txt").read_text()
ROW = re.compile(r"^(0:\s+\d+\s+\d+\s+float\s+none\s+0\s+)(.*)$", re.M)


def _slower(text: str, by: float) -> str:
    """The run with every row's times ``by`` times longer and its bandwidths ``by`` times lower."""
    def row(m: re.Match) -> str:
        us, alg, bus, err, us2, alg2, bus2, err2 = m.group(2).split()
        return (f"{m.group(1)}{float(us) * by:.1f}  {float(alg) / by:.2f}  {float(bus) / by:.2f}  {err}  "
                f"{float(us2) * by:.1f}  {float(alg2) / by:.2f}  {float(bus2) / by:.2f}  {err2}")
    return ROW.sub(row, text)


def _verdict(tmp_path, text: str):
    return decide(text_store(tmp_path, text))


def test_efa_run_of_t4_gpus_at_what_their_links_give_is_healthy(tmp_path):
    v = _verdict(tmp_path, DV49)
    assert v.kind == Kind.HEALTHY, v.summary
    assert "6.58 GB/s" in v.summary and "EFA" in v.summary and "PCIe Gen3" in v.summary


def test_efa_run_far_under_its_lowest_link_is_slow(tmp_path):
    v = _verdict(tmp_path, _slower(DV49, 4))  # (1.65 GB/s: under a third of the T4's ~10 GB/s PCIe link)
    assert v.kind == Kind.SLOW_PROGRESS, v.summary
    assert "under a third of the lowest rate" in v.summary and "EFA" in v.summary


def test_infiniband_run_is_measured_against_infiniband(tmp_path):
    text = DV49.replace("via NET/AWS Libfabric", "via NET/IB")
    assert "InfiniBand" in _verdict(tmp_path, text).summary
    (tmp_path / "slow").mkdir()
    v = _verdict(tmp_path / "slow", _slower(text, 4))
    assert v.kind == Kind.SLOW_PROGRESS and "InfiniBand" in v.summary


def test_nvlink_gpus_over_efa_are_held_to_the_fabric_alone(tmp_path):
    text = DV49.replace("Tesla T4", "NVIDIA A100-SXM4-40GB")
    v = _verdict(tmp_path, text)
    assert v.kind == Kind.HEALTHY and "PCIe" not in v.summary and "12.5 GB/s" in v.summary


def test_a_cut_table_is_not_judged_healthy_by_the_fabric(tmp_path):
    cut = DV49.split("0:    268435456")[0]  # (rows to 128 MB of the 2 GB asked, no end line)
    v = _verdict(tmp_path, cut)
    assert v.kind == Kind.UNDECIDED and "does not reach the largest size asked" in v.summary


def test_a_socket_run_keeps_its_own_yardstick(tmp_path):
    text = DV49.replace("via NET/AWS Libfabric", "via NET/Socket")
    v = _verdict(tmp_path, text)
    assert "lowest rate of the links" not in v.summary and "socket" in v.summary.lower()


def test_a_table_without_its_end_at_the_fabric_rate_is_undecided(tmp_path):
    ended = DV49.split("2: compute-gpu-dy-distributed-ml-1:11547:11547 [2] NCCL INFO comm 0x555befcabfd0 rank 2 nranks 8 "
                       "cudaDev 2 busId 1d0 - Destroy")[0].replace("maxBytes 2147483648", "maxBytes 4294967296")
    v = _verdict(tmp_path, ended)  # (rows to 2 GB of the 4 GB the header now asks, no end line)
    assert v.kind == Kind.UNDECIDED and "no end line" in v.summary
