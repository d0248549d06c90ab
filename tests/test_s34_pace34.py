"""Session 34 (pace34): slow or healthy from the figures a run prints.

Covers: parsers/minmax_timers.py (Megatron's ``(min, max) time across ranks (ms):`` report, megatron/core/timers.py
``_get_global_min_max_time_string``: one ``phase_times`` event ``where="across_ranks"`` per timer, a user's ``<---``
mark and a launcher's host prefix allowed); rules_spread.input_spread: an iteration whose input phases
(batch-generator, broadcast-data) take a large, uneven share of the step is slow (real lines of dev dv38-011),
a report with even input phases, or only set-up timers (dev dv48-007's lines), decides nothing; the full verdict
of such a report.
"""

from __future__ import annotations

import polars as pl

from tests.factory import text_store
from tracekit.evidence import Evidence
from tracekit.outcome import EventKind, Kind
from tracekit.rules_spread import input_spread
from tracekit.verdict import decide

#: Megatron's per-iteration timers across ranks, as posted (samples/wild dv38-011, the user's `<---` marks kept)
UL2 = """\
    forward-backward ...............................: (5164.84, 5177.15)
    forward-compute ................................: (2584.92, 2735.66)
    backward-compute ...............................: (2423.13, 2586.40)
    batch-generator ................................: (408.98, 817.78)  <---
    data-iterator ..................................: (3.90, 43.10)
    broadcast-data .................................: (395.41, 776.42)  <---
    layernorm-grads-all-reduce .....................: (0.02, 0.03)
    embedding-grads-all-reduce .....................: (0.03, 0.04)
    grads-all-reduce ...............................: (193.33, 193.63)
    optimizer-copy-to-main-grad ....................: (10.61, 10.67)
    optimizer ......................................: (72.92, 73.13)
"""

#: the same report with the input phases even and small (the data keeps up)
EVEN = (UL2.replace("(408.98, 817.78)  <---", "(40.98, 41.78)")
        .replace("(395.41, 776.42)  <---", "(39.41, 40.42)"))

#: set-up timers only, behind a launcher's host prefix (samples/wild dv48-007)
SET_UP = """\
192.168.205.202:     model-and-optimizer-setup ......................: (36461.26, 36543.67)
192.168.205.202:     train/valid/test-data-iterators-setup ..........: (172.25, 437.43)
"""


def _timers(store) -> pl.DataFrame:
    return store.events.filter((pl.col("kind") == EventKind.PHASE_TIMES) & (pl.col("where") == "across_ranks"))


def test_minmax_rows_become_events(tmp_path):
    ev = _timers(text_store(tmp_path, "(min, max) time across ranks (ms):\n" + UL2))
    assert ev.height == 11
    row = ev.filter(pl.col("message").str.starts_with("batch-generator")).row(0, named=True)
    assert row["message"] == "batch-generator: (408.98, 817.78)" and row["duration_ms"] == 817.78
    assert _timers(text_store(tmp_path, SET_UP, "setup.log"))["message"].to_list() == [
        "model-and-optimizer-setup: (36461.26, 36543.67)", "train/valid/test-data-iterators-setup: (172.25, 437.43)"]


def test_uneven_input_phases_are_slow(tmp_path):
    v = input_spread(Evidence.gather(text_store(tmp_path, UL2)))
    assert v is not None and v.kind == Kind.SLOW_PROGRESS
    assert "batch-generator 408.98-817.78 ms (2.0x" in v.summary and "broadcast-data 395.41-776.42" in v.summary
    assert "grads-all-reduce is even across ranks (193.33-193.63 ms)" in v.summary


def test_even_input_or_set_up_timers_decide_nothing(tmp_path):
    assert input_spread(Evidence.gather(text_store(tmp_path, EVEN))) is None
    assert input_spread(Evidence.gather(text_store(tmp_path, SET_UP, "setup.log"))) is None


def test_verdict_of_the_report(tmp_path):
    v = decide(text_store(tmp_path, UL2))
    assert v.kind == Kind.SLOW_PROGRESS and "batch-generator" in v.summary
    assert decide(text_store(tmp_path, EVEN, "even.log")).kind != Kind.SLOW_PROGRESS


#: the end of a 2-node torchrun all-reduce test over NCCL's sockets (samples/wild dv38-007, its README's output)
SOCKET_TEST = """\
lsp-ws1:7650:7708 [0] NCCL INFO NET/IB : No device found.
lsp-ws1:7650:7708 [0] NCCL INFO NET/Socket : Using [0]eth0:10.168.3.28<0> [1]eth1:10.168.3.28<0>
lsp-ws1:7650:7708 [0] NCCL INFO Using network Socket
lsp-ws1:7650:7708 [0] NCCL INFO Channel 00/0 : 9[51000] -> 0[4b000] [receive] via NET/Socket/0
lsp-ws1:7650:7708 [0] NCCL INFO Channel 00/0 : 0[4b000] -> 8[4b000] [send] via NET/Socket/0
lsp-ws1:7650:7708 [0] NCCL INFO comm 0x37c6a330 rank 0 nranks 16 cudaDev 0 busId 4b000 - Init COMPLETE
time spent for each trial: 1.650430393218994
param all-reduce speed: 2.4236102391439927 GB/s
communication bandwidth (estimated): 38.77776382630388 Gb/s
answer: 7864320.0
lsp-ws1:7650:7729 [0] NCCL INFO [Service thread] Connection closed by localRank 0
lsp-ws1:7655:7655 [0] NCCL INFO comm 0x4d2d12d0 rank 5 nranks 16 cudaDev 5 busId 92000 - Abort COMPLETE
lsp-ws1:7650:7650 [0] NCCL INFO comm 0x37c6a330 rank 0 nranks 16 cudaDev 0 busId 4b000 - Abort COMPLETE
lsp-ws1:7653:7653 [0] NCCL INFO comm 0x4b0155b0 rank 3 nranks 16 cudaDev 3 busId 6f000 - Abort COMPLETE
lsp-ws1:7654:7654 [0] NCCL INFO comm 0x4a488b20 rank 4 nranks 16 cudaDev 4 busId 8d000 - Abort COMPLETE
lsp-ws1:7652:7652 [0] NCCL INFO comm 0x4caa9e20 rank 2 nranks 16 cudaDev 2 busId 6a000 - Abort COMPLETE
lsp-ws1:7651:7651 [0] NCCL INFO comm 0x4ab5f330 rank 1 nranks 16 cudaDev 1 busId 51000 - Abort COMPLETE
lsp-ws1:7657:7657 [0] NCCL INFO comm 0x4bbd4880 rank 7 nranks 16 cudaDev 7 busId cf000 - Abort COMPLETE
lsp-ws1:7656:7656 [0] NCCL INFO comm 0x4afb1b30 rank 6 nranks 16 cudaDev 6 busId c9000 - Abort COMPLETE
"""


def test_a_collective_speed_and_a_worded_bandwidth_are_results(tmp_path):
    bw = text_store(tmp_path, SOCKET_TEST).events.filter(
        (pl.col("kind") == EventKind.BANDWIDTH) & (pl.col("where") == "benchmark")).sort("line")
    assert bw["busbw_gbs"].round(3).to_list() == [2.424, 4.847]
    # (a link's own speed is no result: ethtool's `Speed:`, NCCL's `speed=`)
    link = text_store(tmp_path, "\tSpeed: 100000Mb/s\nport speed: 100 Gb/s\n", "nic.log").events
    assert not link.filter(pl.col("where") == "benchmark").height


def test_results_then_the_sockets_closing_at_exit_are_healthy(tmp_path):
    v = decide(text_store(tmp_path, SOCKET_TEST))
    assert v.kind == Kind.HEALTHY and "peak bandwidth 4.847 GB/s" in v.summary
    assert "NCCL's connections go over NET/Socket" in v.summary
    # (the same close between two results is inside the measurement, not the exit after it: not healthy by them)
    early = SOCKET_TEST.replace("lsp-ws1:7650:7729 [0] NCCL INFO [Service thread] Connection closed by localRank 0\n", "")
    early = early.replace("communication bandwidth", "lsp-ws1:7650:7729 [0] NCCL INFO [Service thread] Connection "
                          "closed by localRank 0\ncommunication bandwidth")
    assert decide(text_store(tmp_path, early, "early.log")).rule != "measured_results"


def _header(hosts: list[str], per_host: int) -> str:
    """nccl-tests' header (src/common.cu; the lines of dev dv27-013) with ``per_host`` ranks on each host."""
    ranks = "".join(f"#  Rank {r:2d} Group  0 Pid {6899 + r:6d} on {hosts[r // per_host]} device  {r % per_host} "
                    f"[0000:04:00] NVIDIA A100-SXM4-40GB\n" for r in range(per_host * len(hosts)))
    return ("# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
            "validation: 1 graph: 0\n#\n# Using devices\n" + ranks)


def test_busbw_of_nodes_of_four_gpus_is_not_held_to_an_hgx_node(tmp_path):
    from tests.test_s33_bench33 import _rows
    from tracekit.rules_nccl_tests import nccl_test_result
    four = nccl_test_result(Evidence.gather(text_store(tmp_path, _header(["x3005c0s7b0n0", "x3005c0s7b1n0",
                                                                          "x3006c0s13b0n0", "x3005c0s37b1n0"], 4)
                                                      + _rows(18.7))))
    assert four.kind == Kind.HEALTHY and "the header puts 4 ranks on a host" in four.summary
    eight = nccl_test_result(Evidence.gather(text_store(tmp_path, _header(["ztan-mig-235z", "ztan-mig-gq73"], 8)
                                                       + _rows(18.7), "hgx.log")))
    assert eight.kind == Kind.SLOW_PROGRESS and "4-8 such NICs" in eight.summary


def test_a_pipeline_stage_that_loads_no_data_is_no_wait(tmp_path):
    # (a middle stage's batch-generator stops at once: (0.02, 817.78) is the layout, not ranks waiting on data)
    staged = EVEN.replace("(40.98, 41.78)", "(0.02, 817.78)")
    assert input_spread(Evidence.gather(text_store(tmp_path, staged))) is None
