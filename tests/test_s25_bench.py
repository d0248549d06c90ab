"""Session 25, bench: a measured figure against what the hardware gives (link_rates), a size begun and never
finished (nccl-tests' BEGUN_ROW), and result shapes not read before (tables pasted with pipes, hccl_test,
mscclpp-test). Factory tests for each rule; real outputs under tests/data/s25_bench/ (README.md there says
where each was posted) and dev excerpts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factory import make_store
from tracekit import link_rates, rules_nccl_tests
from tracekit.evidence import Evidence
from tracekit.ingest import ingest, unknown_lines
from tracekit.parsers import piped
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

DATA = Path(__file__).parent / "data" / "s25_bench"
WILD = Path(__file__).parent.parent / "samples" / "wild"
MB = 2**20


def _row(line: int, size: int, busbw: float, op: str = "all_reduce") -> dict:
    return dict(file="t.log", line=line, kind="bandwidth", where="nccl-tests", op=op, bytes=size,
                busbw_gbs=busbw, message=f"{size} ... {busbw}")


def _gpu(line: int, name: str) -> dict:
    return dict(file="t.log", line=line, kind="bandwidth", where="device", message=name)


def _rank(r: int, host: str = "h1") -> dict:
    return dict(file="t.log", host=host, rank=r, world_size=2, source="nccl-tests")


def _rule(events: list[dict], ranks: list[dict] | None = None):
    return rules_nccl_tests.nccl_test_result(Evidence.gather(make_store(
        events=events, ranks=ranks or [_rank(0), _rank(1)])))


def _ended(line: int) -> dict:
    return dict(file="t.log", line=line, kind="test_passed", message="# Out of bounds values : 0 OK")


# --- the table of what a path gives ---

@pytest.mark.parametrize("name, path, low", [
    ("NVIDIA A100-SXM4-80GB", "NVLink 3", 200.0),
    ("NVIDIA H100 80GB HBM3", "NVLink 4", 360.0),
    ("NVIDIA H800", "NVLink of 8 links", 150.0),
    ("Tesla V100-SXM2-32GB", "NVLink 2", 40.0),
    ("NVIDIA A100-PCIE-40GB", "PCIe Gen4", 20.0),
    ("NVIDIA H100 PCIe", "PCIe Gen5", 40.0),
    ("Tesla V100-PCIE-16GB", "PCIe Gen3", 10.0),
    ("NVIDIA GeForce RTX 4090", "PCIe Gen4", 20.0),
])
def test_a_gpu_name_gives_its_path_and_figure(name, path, low):
    p = link_rates.path_of(name)
    assert p is not None and p.name.startswith(path) and p.low == low


def test_a_gpu_the_table_does_not_hold_gives_no_path():
    assert link_rates.path_of("AMD Instinct MI300X") is None


# --- nccl-tests against what the one-host path gives ---

def test_far_below_the_nvlink_figure_on_one_host_is_slow_naming_both_and_the_path():
    v = _rule([_gpu(1, "NVIDIA A100-SXM4-80GB"), _gpu(2, "NVIDIA A100-SXM4-80GB"),
               _row(3, 256 * MB, 30.0), _row(4, 1024 * MB, 31.5), _ended(5)])
    assert v.kind == Kind.SLOW_PROGRESS
    assert "31.5 GB/s" in v.summary and "NVLink 3" in v.summary and "~200-240 GB/s" in v.summary
    assert "A100-SXM4-80GB" in v.summary and "via P2P/NVL" in v.summary


def test_near_the_path_figure_is_healthy_saying_it_is_what_the_path_gives():
    v = _rule([_gpu(1, "NVIDIA A100-SXM4-80GB"), _row(2, 256 * MB, 196.3), _row(3, 1024 * MB, 227.8),
               _ended(4)])
    assert v.kind == Kind.HEALTHY
    assert "227.8 GB/s busbw at large sizes is what the path gives" in v.summary and "NVLink 3" in v.summary


def test_an_unknown_gpu_keeps_todays_wording_and_no_slow():
    v = _rule([_gpu(1, "AMD Instinct MI300X"), _row(2, 256 * MB, 30.0), _row(3, 1024 * MB, 31.5), _ended(4)])
    assert v.kind == Kind.HEALTHY and "what the path gives" not in v.summary


def test_an_all_to_all_is_not_judged_against_the_all_reduce_figure():
    v = _rule([_gpu(1, "NVIDIA H100 80GB HBM3"), _row(2, 256 * MB, 60.0, op="all_to_all"),
               _row(3, 1024 * MB, 70.0, op="all_to_all"), _ended(4)])
    assert v.kind == Kind.HEALTHY


def test_a_socket_transport_is_not_judged_against_nvlink():
    ev = Evidence.gather(make_store(
        events=[_gpu(1, "NVIDIA A100-SXM4-80GB"), _row(2, 256 * MB, 30.0), _row(3, 1024 * MB, 31.5), _ended(4)],
        ranks=[_rank(0), _rank(1)],
        links=[dict(file="t.log", line=1, rank=0, what="channel", transport="NET/Socket/0",
                    transport_kind="NET/Socket")]))
    assert link_rates.one_host_path(ev, rules_nccl_tests.transport_logged(ev)) is None


def test_across_hosts_the_one_host_path_is_not_used():
    v = _rule([_gpu(1, "NVIDIA A100-SXM4-80GB"), _row(2, 256 * MB, 30.0), _row(3, 1024 * MB, 31.5), _ended(4)],
              ranks=[_rank(0, "a"), _rank(1, "b")])
    assert "NVLink" not in v.summary


def test_a_cut_table_at_what_the_path_gives_is_healthy_so_far():
    asked = dict(file="t.log", line=1, kind="test_sizes", bytes=2048 * MB, message="maxBytes 2147483648")
    v = _rule([asked, _gpu(2, "NVIDIA GeForce RTX 4090"), _row(3, 256 * MB, 25.7), _row(4, 1024 * MB, 25.9)])
    assert v.kind == Kind.HEALTHY and "healthy so far" in v.summary and "PCIe Gen4" in v.summary
    assert "1 GB of the 2 GB asked" in v.summary


def test_a_cut_table_under_what_the_path_gives_stays_undecided():
    asked = dict(file="t.log", line=1, kind="test_sizes", bytes=2048 * MB, message="maxBytes 2147483648")
    v = _rule([asked, _gpu(2, "NVIDIA A100-SXM4-80GB"), _row(3, 256 * MB, 90.0), _row(4, 1024 * MB, 95.0)])
    assert v.kind == Kind.UNDECIDED and "the table stops at 1 GB" in v.summary


# --- a size begun and never finished: never healthy ---

def test_a_row_begun_after_the_last_finished_one_is_undecided_naming_the_size():
    begun = dict(file="t.log", line=4, kind="bandwidth", where="nccl-tests-begun", bytes=512 * MB,
                 message="536870912 134217728 float sum -1")
    v = _rule([_row(2, 128 * MB, 150.0), _row(3, 256 * MB, 160.0), begun])
    assert v.kind == Kind.UNDECIDED
    assert "the row of 512 MB begins and never gets its figures" in v.summary and "160 GB/s" in v.summary


def test_a_begun_row_followed_by_the_end_lines_is_no_stop():
    begun = dict(file="t.log", line=4, kind="bandwidth", where="nccl-tests-begun", bytes=512 * MB,
                 message="536870912 134217728 float sum -1")
    v = _rule([_row(2, 128 * MB, 150.0), _row(3, 256 * MB, 160.0), begun, _ended(5)])
    assert v.kind == Kind.HEALTHY


def test_a_begun_row_in_real_text_is_read_and_stops_the_table(tmp_path):
    text = (DATA / "nccl_tests_8xa100_sxm4_one_host.txt").read_text().split("  1073741824")[0]
    p = tmp_path / "cut.log"
    p.write_text(text + "  1073741824     268435456     float     sum      -1\n")
    v = decide(ingest([p]))
    assert v.kind == Kind.UNDECIDED and "the row of 1 GB begins" in v.summary
    assert unknown_lines([p]).height == 0


# --- result shapes: pipes, hccl_test, mscclpp-test ---

def test_depipe_reads_cells_and_leaves_progress_bars():
    assert piped.depipe("| 8 | 2 | float |") == "8   2   float"
    assert piped.depipe(" 45%|####      | 9/20 [00:01<00:02]") == " 45%|####      | 9/20 [00:01<00:02]"


def test_a_markdown_nccl_tests_table_is_read_with_its_figures(tmp_path):
    p = tmp_path / "md.log"
    p.write_text("| size (B) | count | type | redop | root | time (us) | algbw (GB/s) | busbw (GB/s) | #wrong |\n"
                 "|---|---|---|---|---|---|---|---|---|\n"
                 "| 8 | 2 | float | sum | -1 | 40.12 | 0.00 | 0.00 | 0 |\n"
                 "| 1073741824 | 268435456 | float | sum | -1 | 8247.6 | 130.19 | 227.83 | 0 |\n")
    store = ingest([p])
    rows = store.events.filter((store.events["kind"] == EventKind.BANDWIDTH)
                               & (store.events["where"] == "nccl-tests"))
    assert rows.height == 2 and rows["busbw_gbs"].max() == 227.83
    assert unknown_lines([p]).height == 0
    assert decide(store).kind == Kind.HEALTHY


def test_a_markdown_table_with_a_wrong_count_is_never_healthy(tmp_path):
    p = tmp_path / "md.log"
    p.write_text("| size | count | type | redop | root | time | algbw | busbw | #wrong |\n"
                 "| 1048576 | 262144 | float | sum | -1 | 52.61 | 19.93 | 34.88 | 0 |\n"
                 "| 2097152 | 524288 | float | sum | -1 | 59.30 | 35.37 | 61.89 | 7 |\n")
    v = decide(ingest([p]))
    assert v.kind != Kind.HEALTHY and "wrong values" in v.summary


def test_hccl_test_real_output_is_healthy_up_to_the_size_asked():
    v = decide(ingest([DATA / "hccl_test_allreduce_8npu.txt"]))
    assert v.kind == Kind.HEALTHY
    assert "hccl_test" in v.summary and "14 size(s) (8 KB - 64 MB)" in v.summary
    assert "23.76 GB/s at 64 MB" in v.summary and "up to the 64 MB it was asked" in v.summary
    assert unknown_lines([DATA / "hccl_test_allreduce_8npu.txt"]).height == 0


def test_hccl_test_failed_check_is_never_healthy(tmp_path):
    lines = (DATA / "hccl_test_allreduce_8npu.txt").read_text().splitlines()
    lines[-1] = lines[-1].replace("success", "failed")
    lines.insert(-1, "local rank_id 3, check result failed, 67108864          | 2630.20        | 23.76245"
                     "             | failed")
    p = tmp_path / "hccl.log"
    p.write_text("\n".join(lines) + "\n")
    v = decide(ingest([p]))
    assert v.kind == Kind.UNDECIDED and "check result failed" in v.summary


def test_hccl_test_cut_below_the_size_asked_is_undecided(tmp_path):
    lines = (DATA / "hccl_test_allreduce_8npu.txt").read_text().splitlines()[:-3]
    p = tmp_path / "hccl.log"
    p.write_text("\n".join(lines) + "\n")
    v = decide(ingest([p]))
    assert v.kind == Kind.UNDECIDED and "stop at 8 MB" in v.summary


def test_mscclpp_test_real_output_is_read_with_its_gpus_and_figure():
    v = decide(ingest([DATA / "mscclpp_test_allreduce_8xa100_1g.txt"]))
    assert v.kind == Kind.HEALTHY and "110.41 GB/s" in v.summary and "ranks 0-7" in v.summary
    assert unknown_lines([DATA / "mscclpp_test_allreduce_8xa100_1g.txt"]).height == 0


def test_real_a100_one_host_table_is_what_nvlink_gives():
    v = decide(ingest([DATA / "nccl_tests_8xa100_sxm4_one_host.txt"]))
    assert v.kind == Kind.HEALTHY and "232.44 GB/s busbw at large sizes is what the path gives" in v.summary
    assert "NVLink 3" in v.summary and "ranks 0-7 on host thanos" in v.summary


def test_real_a100_table_made_slow_reads_slow(tmp_path):
    text = (DATA / "nccl_tests_8xa100_sxm4_one_host.txt").read_text()
    for big in ("196.34", "203.03", "227.83", "230.13", "232.44", "168.86", "179.99"):
        text = text.replace(f"  {big}  ", "   41.20  ")
    p = tmp_path / "slow.log"
    p.write_text(text)
    v = decide(ingest([p]))
    assert v.kind == Kind.SLOW_PROGRESS and "41.2 GB/s" in v.summary and "NVLink 3" in v.summary


# --- dev excerpts ---

def test_dev_4090_p2p_rows_cut_at_1gb_are_healthy_at_what_pcie_gives():
    v = decide(ingest([WILD / "dv22-001-nccltests-4x4090-p2p-steady-rows.txt"]))
    assert v.kind == Kind.HEALTHY and "25.95 GB/s" in v.summary and "PCIe Gen4" in v.summary
    assert "ranks 0-3 on host 7773x" in v.summary


def test_a_piped_table_whose_size_is_not_its_first_column_is_read(tmp_path):
    p = tmp_path / "bench.md"
    p.write_text("| Collective | Size | Time (ms) | AlgBW (GB/s) | BusBW (GB/s) |\n"
                 "|------------|------|-----------|--------------|--------------|\n"
                 "| all_reduce | 64 MB | 0.52 | 129.1 | 225.9 |\n"
                 "| all_reduce | 1 GB | 7.80 | 137.7 | 240.9 |\n")
    v = decide(ingest([p]))
    assert v.kind == Kind.HEALTHY and "240.9 GB/s at 1 GB" in v.summary and "2 size(s) (64 MB - 1 GB)" in v.summary
    assert unknown_lines([p]).height == 0


def test_a_piped_collective_table_far_under_any_fabric_is_slow(tmp_path):
    p = tmp_path / "bench.md"
    p.write_text("| op | size | time (ms) | busbw (GB/s) |\n"
                 "| all_reduce | 256 MB | 60.1 | 4.2 |\n"
                 "| all_reduce | 1 GB | 240.3 | 4.4 |\n")
    v = decide(ingest([p]))
    assert v.kind == Kind.SLOW_PROGRESS and "4.4 GB/s at 1 GB" in v.summary


def test_a_scripts_result_lines_that_end_the_output_are_healthy(tmp_path):
    # (a script prints no end line and says no largest size: where its output ends, no stop is seen)
    p = tmp_path / "bench.log"
    p.write_text("[rank0]: size=1.00 GB  time=12.31 ms  algbw=81.23 GB/s  busbw=142.15 GB/s\n"
                 "[rank0]: size=2.00 GB  time=24.10 ms  algbw=82.98 GB/s  busbw=145.22 GB/s\n")
    v = decide(ingest([p]))
    assert v.kind == Kind.HEALTHY and "145.2 GB/s at 2 GB" in v.summary and "prints no end line" in v.summary
