"""Session 24, bench: any communication benchmark's result tables and lines (parsers/result_tables.py) and
their verdict (rules_measured.measured_results). Factory tests for the rule; parser tests on real outputs
under tests/data/s24_bench/ (each file says where it was posted)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.factory import make_store
from tracekit.evidence import Evidence
from tracekit.ingest import ingest, unknown_lines
from tracekit import result_lines
from tracekit.parsers import result_tables
from tracekit.rules_measured import measured_results
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

DATA = Path(__file__).parent / "data" / "s24_bench"
WILD = Path(__file__).parent.parent / "samples" / "wild"


def _row(line: int, size: int | None, gbs: float | None, ms: float | None = None, tool: str = "perftest",
         file: str = "b.log") -> dict:
    return dict(file=file, line=line, kind="bandwidth", where="benchmark", bytes=size, busbw_gbs=gbs,
                duration_ms=ms, message=f"{tool}: {size} 1000 {gbs}")


def _rule(events: list[dict]):
    return measured_results(Evidence.gather(make_store(events=events)))


# --- the rule, on factory events ---

def test_rows_that_advance_are_healthy_with_tool_sizes_peak_and_latency():
    v = _rule([_row(1, 8, 0.01, 0.002), _row(2, 1024, 0.9, 0.003), _row(3, 65536, 11.2, 0.01),
               dict(file="b.log", line=4, kind="program_end", message="done")])
    assert v.kind == Kind.HEALTHY
    assert "perftest" in v.summary and "3 size(s) (8 B - 64 KB)" in v.summary
    assert "peak bandwidth 11.2 GB/s at 64 KB" in v.summary and "latency 2 us at 8 B" in v.summary


def test_far_below_the_stated_link_rate_is_slow_with_both_figures():
    link = dict(file="b.log", line=1, kind="bandwidth", where="link_rate", busbw_gbs=100 / 8,
                message="Rate: 100")
    v = _rule([link, _row(2, 2**20, 1.1), _row(3, 2**23, 1.2)])
    assert v.kind == Kind.SLOW_PROGRESS
    assert "1.2 GB/s" in v.summary and "100 Gb/s" in v.summary and "Rate: 100" in v.summary


def test_near_the_stated_link_rate_is_healthy():
    link = dict(file="b.log", line=1, kind="bandwidth", where="link_rate", busbw_gbs=100 / 8,
                message="Rate: 100")
    assert _rule([link, _row(2, 2**20, 11.0), _row(3, 2**23, 11.7),
                  dict(file="b.log", line=4, kind="program_end", message="done")]).kind == Kind.HEALTHY


def test_a_table_cut_past_one_mb_with_nothing_after_is_undecided_saying_where():
    v = _rule([_row(1, 2**20, 9.0), _row(2, 2**21, 10.0)])
    assert v.kind == Kind.UNDECIDED and "stop at 2 MB" in v.summary


def test_a_failure_line_after_the_first_row_leaves_it_to_the_failure_rules():
    crash = dict(file="b.log", line=3, kind="telling_line", where="error", message="Segmentation fault")
    assert _rule([_row(1, 8, 0.01), _row(2, 16, 0.02), crash]) is None


def test_rank_figures_without_a_size_are_not_this_rules():
    deepep = dict(file="b.log", line=1, kind="bandwidth", where="benchmark", rank=0, busbw_gbs=24.6,
                  duration_ms=0.3, message="[rank 0] Dispatch bandwidth: 24.6 GB/s, avg_t=304.43 us")
    assert _rule([deepep]) is None


# --- the reader's units ---

@pytest.mark.parametrize("unit, gbs", [("MB/sec", 1e-3), ("Gb/sec", 0.125), ("Gbps", 0.125), ("GBps", 1.0),
                                       ("Gbits/sec", 0.125), ("GiB/s", 2**30 / 1e9), ("Mbits/sec", 1.25e-4)])
def test_rate_units(unit, gbs):
    assert result_tables.rate_gbs(unit) == pytest.approx(gbs)


# --- real outputs ---

def _bw(store) -> pl.DataFrame:
    e = store.events
    return e.filter((e["kind"] == EventKind.BANDWIDTH) & (e["where"] == "benchmark")).sort("line")


def test_perftest_table_every_line_decoded():
    # (the table's lines, the CPU-frequency note perftest prints inside it and its banner)
    store = ingest([DATA / "perftest_ib_send_bw_roce.txt"])
    assert unknown_lines([DATA / "perftest_ib_send_bw_roce.txt"]).height == 0
    rows = _bw(store)
    assert rows["bytes"].to_list() == [4096] and rows["busbw_gbs"][0] == pytest.approx(11.28812)
    v = decide(store)
    assert v.kind == Kind.HEALTHY and "perftest" in v.summary and "11.29 GB/s at 4 KB" in v.summary


def test_iperf3_intervals_and_receiver_summary():
    store = ingest([DATA / "iperf3_server_19gbits.txt"])
    assert unknown_lines([DATA / "iperf3_server_19gbits.txt"]).height == 0
    rows = _bw(store)
    assert rows.height == 8 and rows["busbw_gbs"].max() == pytest.approx(19.5 / 8)
    v = decide(store)
    assert v.kind == Kind.HEALTHY and "iperf" in v.summary and "19.1 Gb/s" in v.summary


def test_deepspeed_comm_benchmark_row_in_gbps_bits():
    store = ingest([DATA / "deepspeed_comm_all_reduce_polaris.txt"])
    rows = _bw(store)
    assert rows.height == 1
    r = rows.row(0, named=True)
    assert r["bytes"] == int(31.67 * 2**30) and r["duration_ms"] == pytest.approx(3176.62)
    assert r["busbw_gbs"] == pytest.approx(149.863 / 8) and r["op"] == "all_reduce"
    v = decide(store)
    assert v.kind == Kind.HEALTHY and "DeepSpeed's communication benchmark" in v.summary


def test_p2p_matrix_rows_read_off_the_diagonal():
    store = ingest([DATA / "p2p_bandwidth_matrix_p9.txt"])
    assert unknown_lines([DATA / "p2p_bandwidth_matrix_p9.txt"]).height == 0
    rows = _bw(store)
    assert rows["busbw_gbs"].to_list() == [68.46, 68.51, 69.24, 69.24]
    v = decide(store)
    assert v.kind == Kind.HEALTHY and "p2pBandwidthLatencyTest" in v.summary and "69.24" in v.summary


def test_mpi_pingpong_after_ud_warnings_is_healthy():
    # dv18-022: both ranks print `Failed to modify UD QP to INIT` at start, then the ping-pong table runs
    store = ingest([WILD / "dv18-022-ucx-ud-qp-init-warning-pingpong-ok.txt"])
    v = decide(store)
    assert v.kind == Kind.HEALTHY
    assert "5 size(s) (8 B - 128 B)" in v.summary and "before its first result" in v.summary


# --- link rates the excerpt states ---

IBSTAT_THEN_WRITE_BW = """\
CA 'mlx5_0'
	CA type: MT4123
	Port 1:
		State: Active
		Physical state: LinkUp
		Rate: 100
$ ib_write_bw -d mlx5_0 -a 10.0.0.2
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 1048576    5000             1530.11            1528.40            0.001458
 2097152    5000             1531.20            1529.87            0.000729
---------------------------------------------------------------------------------------
"""


def test_perftest_far_below_ibstat_rate_is_slow_with_both_figures(tmp_path):
    # ibstat (infiniband-diags src/ibstat.c `Rate: %d`), then perftest's table (perftest_parameters.h)
    f = tmp_path / "ib.log"
    f.write_text(IBSTAT_THEN_WRITE_BW)
    v = decide(ingest([f]))
    assert v.kind == Kind.SLOW_PROGRESS
    assert "perftest" in v.summary and "1.53 GB/s" in v.summary and "100 Gb/s" in v.summary


def test_nccl_speed_is_a_link_rate_only_beside_a_benchmark(tmp_path):
    line = ("node1:1:1 [0] NCCL INFO NET/IB: [0] mlx5_0:uverbs0:1/IB provider=Mlx5 speed=400000 context=0x1 "
            "pciPath=/sys/devices/pci0000:00 ar=0\n")
    alone = tmp_path / "alone.log"
    alone.write_text(line)
    e = ingest([alone]).events
    assert not e.filter(e["where"] == "link_rate").height
    rows = result_tables.read(pl.DataFrame({"file": ["x"] * 2, "line": [1, 2],
                                            "text": [line, "all_reduce_perf -b 8 -e 8G -g 1"]}))
    link = rows.filter(pl.col("where") == "link_rate")
    assert link["busbw_gbs"].to_list() == [50.0]


def _nccl_row(line: int, size: int, busbw: float) -> dict:
    return dict(file="t.log", line=line, kind="bandwidth", where="nccl-tests", op="all_reduce", bytes=size,
                busbw_gbs=busbw, duration_ms=1.0, message=f"{size} ... {busbw}")


def test_nccl_tests_across_nodes_far_below_a_stated_link_is_slow():
    from tracekit.rules_measured import nccl_tests_below_link
    link = dict(file="t.log", line=1, kind="bandwidth", where="link_rate", busbw_gbs=50.0,
                message="NET/IB: [0] mlx5_0:1/IB speed=400000")
    avg = dict(file="t.log", line=9, kind="test_avg_busbw", busbw_gbs=9.5,
               message="# Avg bus bandwidth : 9.5")
    ranks = [dict(file="t.log", rank=r, host=f"h{r // 8}", source="nccl-tests") for r in range(16)]
    ev = Evidence.gather(make_store(events=[link, _nccl_row(2, 2**30, 9.8), _nccl_row(3, 2**31, 9.9), avg],
                                    ranks=ranks))
    v = nccl_tests_below_link(ev)
    assert v.kind == Kind.SLOW_PROGRESS and "9.5 GB/s" in v.summary and "400000 Gb/s" not in v.summary
    assert "400 Gb/s" in v.summary
    one_host = [dict(r, host="h0") for r in ranks]
    assert nccl_tests_below_link(Evidence.gather(make_store(
        events=[link, _nccl_row(2, 2**30, 9.8), avg], ranks=one_host[:8]))) is None


def test_megatron_allreduce_script_table_cut_at_its_last_line(tmp_path):
    # IBM/pytorch-communication-benchmarks#1: the script's own table, its first 11 rows as stored
    store = ingest([DATA / "torch_megatron_allreduce_h100.txt"])
    rows = _bw(store)
    assert rows.height == 10 and rows["busbw_gbs"].max() == pytest.approx(14.41)
    assert rows["duration_ms"][0] == pytest.approx(0.2277)
    v = decide(store)
    # (s25: a script prints no end line and says no largest size, so where its output ends no stop is seen:
    # healthy with its figures, as a table of results with no error reads)
    assert v.kind == Kind.HEALTHY and "megatron-allreduce.py" in v.summary and "prints no end line" in v.summary


def test_iperf3_client_reverse_every_line_decoded(tmp_path):
    store = ingest([DATA / "iperf3_client_reverse_403mbits.txt"])
    assert unknown_lines([DATA / "iperf3_client_reverse_403mbits.txt"]).height == 0
    v = decide(store)
    assert v.kind == Kind.HEALTHY and "0.403 Gb/s" in v.summary


def test_cuda_bandwidthtest_three_tables_each_direction_and_its_pass(tmp_path):
    path = DATA / "cuda_bandwidthtest_a100_pcie.txt"
    assert unknown_lines([path]).height == 0
    store = ingest([path])
    rows = _bw(store)
    assert rows["op"].to_list() == ["Host to Device", "Device to Host", "Device to Device"]
    assert rows["busbw_gbs"].to_list() == pytest.approx([8.8, 8.7, 1162.6])
    v = decide(store)
    assert v.kind == Kind.HEALTHY and "CUDA bandwidthTest" in v.summary and "(Device to Device)" in v.summary


def test_cuda_sample_result_fail_is_the_runs_own_word_never_healthy(tmp_path):
    f = tmp_path / "bw.log"
    text = (DATA / "cuda_bandwidthtest_a100_pcie.txt").read_text()
    f.write_text(text.replace("Result = PASS", "Result = FAIL"))
    v = decide(ingest([f]))
    assert v.kind == Kind.UNDECIDED and "Result = FAIL" in v.summary


def test_osu_bw_rows_in_mb_per_second(tmp_path):
    path = DATA / "osu_bw_cuda_internode_cxi.txt"
    rows = _bw(ingest([path]))
    assert rows.height == 15 and rows["bytes"].max() == 16384
    assert rows["busbw_gbs"].max() == pytest.approx(13.64637)
    v = decide(ingest([path]))
    assert v.kind == Kind.HEALTHY and "OSU micro-benchmarks" in v.summary
    assert "15 size(s) (1 B - 16 KB)" in v.summary


def test_an_error_after_the_results_is_no_healthy_run():
    # dv13-014: allreduce verified for sizes 0-4096, then UCX ERROR and an assertion: the failure decides
    store = ingest([WILD / "dv13-014-ucx-rocm-ipc-create-failed-rndv-assertion-after-allreduce.txt"])
    assert _bw(store).height == 5
    assert decide(store).kind == Kind.TRANSPORT_ERROR


@pytest.mark.parametrize("line", [
    "INFO:root:[step 20999]  mlm_loss=1.41707  nsp_loss= 0.02   throughput=16.2K tks/s  time=13229.62, "
    "latency=13229.6 ms/batch",
    "WorkNCCL(OpType=ALLREDUCE, SeqNum=458) ran for 1800600 ms before timing out.",
    "model.safetensors: 100%|██████████| 1.2G/1.2G [00:10<00:00, 120MB/s]",
])
def test_progress_timeouts_and_downloads_are_no_measured_transfer(line):
    assert result_lines.line_event(line, "a benchmark", False) is None


@pytest.mark.parametrize("line, size, ms, gbs", [
    ("allreduce 1GB: 12.3 ms, 81 GB/s", 2**30, 12.3, 81.0),
    ("[rank0] allreduce size=1073741824 time=12.3ms algbw=87.1GB/s busbw=152.4GB/s", 2**30, 12.3, 152.4),
    ("Verified allreduce for size 256 (94.3108 us per iteration)", 256, 0.0943108, None),
])
def test_timed_transfer_lines(line, size, ms, gbs):
    ev = result_lines.line_event(line, "a benchmark", False)
    assert ev["bytes"] == size and ev["duration_ms"] == pytest.approx(ms)
    assert ev["busbw_gbs"] == (pytest.approx(gbs) if gbs else None)


def test_a_collective_under_the_slowest_gpu_interconnect_at_large_sizes_is_slow():
    rows = [dict(_row(1, 2**30, 2.6, 412.3, tool="bench.py"),
                 message="bench.py: allreduce 1GB: 412.3 ms, 2.6 GB/s"),
            dict(file="b.log", line=2, kind="program_end", message="done")]
    v = _rule(rows)
    assert v.kind == Kind.SLOW_PROGRESS and "2.6 GB/s at 1 GB" in v.summary and "bench.py" in v.summary
    fast = [dict(rows[0], busbw_gbs=81.0), rows[1]]
    assert _rule(fast).kind == Kind.HEALTHY
    # (a point-to-point tool's rows are no collective: its rate is the link's question)
    assert _rule([_row(1, 2**30, 2.6), rows[1]]).kind == Kind.HEALTHY


def test_nvbandwidth_matrices_by_testcase():
    path = DATA / "nvbandwidth_rtx3050_laptop.txt"
    assert unknown_lines([path])["line"].to_list() == [8]  # (the poster's own stray word)
    store = ingest([path])
    rows = _bw(store)
    assert rows["op"].to_list() == ["host_to_device_memcpy_ce", "device_to_host_memcpy_ce"]
    assert rows["busbw_gbs"].to_list() == [12.98, 13.17]
    v = decide(store)
    assert v.kind == Kind.HEALTHY and "nvbandwidth" in v.summary and "13.17 GB/s" in v.summary


def test_odd_lines_never_raise():
    odd = ["# Size  Bandwidth (MB/s)", "1.2.3   4..5", "8  1e400", "Bandwidth Matrix (GB/s)", "   D\\D 0 1",
           "   0 1.2.3 4", "copy 3 TiB at 2 TiB/s", "allreduce 12 µs", "size=9999999999999999999999 bandwidth 1 GB/s", "# Size  Bandwidth (MB/s)", "99999999999999999999999 5",
           "[ ID] Interval", "[  5] 0.00-1.00 sec 1 Bytes 1 bits/sec", "Rate: 100", "\t\t", ""]
    df = pl.DataFrame({"file": ["f"] * len(odd), "line": list(range(1, len(odd) + 1)), "text": odd})
    out = result_tables.read(df)
    assert out is not None and set(out["file"]) == {"f"}
