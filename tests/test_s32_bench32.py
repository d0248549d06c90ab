"""Session 32, bench32: healthy and slow measurements read the right way round.

Covers rules_nccl_tests._on_socket (a table whose connections NCCL logged over TCP sockets only: the yardstick is
the socket's Ethernet link, whose rate the log does not state: a busbw at what a socket carries is healthy, not
slow under the 10 GB/s of a GPU fabric; far under what 10 GbE carries it is slow), the path the GPUs' names give
as the yardstick before that 10 GB/s floor (a PCIe path at what it gives is not slow; an NVLink one far under it
is), and pace_moves.moves_back asked by rules_bench.pace_trend (a slow eval or save step inside the last third,
or a periodic slow step the last third caught again, is no slowdown; a pace that climbs and stays is), and
tick_bandwidth.said in rules_bench.steady_ticks (a transfer benchmark's progress lines that each print a bandwidth:
the healthy verdict says that figure, the one compared with a link; lines without one say none).
The nccl-tests lines are quoted from /work/shared/corpus/nccl_socket_2node_awsbatch_nccltests_2.11.4.log
(aws-samples/aws-hpc-tutorials: two A10G nodes over eth0, a tutorial's successful run); Megatron's line is the
f-string of megatron/training/training.py training_log, as tests/test_progress_pace.py quotes it.
"""

from __future__ import annotations

import re

import pytest

from tests.factory import make_store, text_store
from tests.test_progress_pace import MEGATRON, progress
from tracekit import pace, pace_moves
from tracekit.verdict import Kind, decide

#: the tutorial's run: NET/Socket over eth0, 8 B - 128 MB, busbw 0.73-0.82 GB/s past 4 MB, 0 wrong values
SOCKET_RUN = """# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid   1465 on ip-10-0-139-244 device  0 [0x00] NVIDIA A10G
#   Rank  1 Pid     46 on ip-10-0-142-242 device  0 [0x00] NVIDIA A10G
ip-10-0-139-244:1465:1465 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.139.244<0>
ip-10-0-139-244:1465:1465 [0] NCCL INFO Using network Socket
ip-10-0-142-242:46:46 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.142.242<0>
ip-10-0-142-242:46:46 [0] NCCL INFO Using network Socket
ip-10-0-142-242:46:51 [0] NCCL INFO Channel 00 : 0[1e0] -> 1[1e0] [receive] via NET/Socket/0
ip-10-0-142-242:46:51 [0] NCCL INFO NET/Socket: Using 2 threads and 8 sockets per thread
ip-10-0-139-244:1465:1471 [0] NCCL INFO Channel 00 : 1[1e0] -> 0[1e0] [receive] via NET/Socket/0
ip-10-0-139-244:1465:1471 [0] NCCL INFO NET/Socket: Using 2 threads and 8 sockets per thread
ip-10-0-142-242:46:51 [0] NCCL INFO Channel 01 : 0[1e0] -> 1[1e0] [receive] via NET/Socket/0
ip-10-0-142-242:46:51 [0] NCCL INFO NET/Socket: Using 2 threads and 8 sockets per thread
ip-10-0-139-244:1465:1471 [0] NCCL INFO Channel 01 : 1[1e0] -> 0[1e0] [receive] via NET/Socket/0
ip-10-0-139-244:1465:1471 [0] NCCL INFO NET/Socket: Using 2 threads and 8 sockets per thread
ip-10-0-142-242:46:51 [0] NCCL INFO Channel 00 : 1[1e0] -> 0[1e0] [send] via NET/Socket/0
ip-10-0-139-244:1465:1471 [0] NCCL INFO Channel 00 : 0[1e0] -> 1[1e0] [send] via NET/Socket/0
ip-10-0-142-242:46:51 [0] NCCL INFO Channel 01 : 1[1e0] -> 0[1e0] [send] via NET/Socket/0
ip-10-0-139-244:1465:1471 [0] NCCL INFO Channel 01 : 0[1e0] -> 1[1e0] [send] via NET/Socket/0
ip-10-0-139-244:1465:1471 [0] NCCL INFO comm 0x7f85a4000fa0 rank 0 nranks 2 cudaDev 0 busId 1e0 - Init COMPLETE
#                                                       out-of-place                       in-place
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
ip-10-0-142-242:46:51 [0] NCCL INFO comm 0x7f7dec000fa0 rank 1 nranks 2 cudaDev 0 busId 1e0 - Init COMPLETE
           8             2     float     sum    172.7    0.00    0.00  0e+00    168.9    0.00    0.00  0e+00
          16             4     float     sum    181.0    0.00    0.00  0e+00    180.8    0.00    0.00  0e+00
          32             8     float     sum    181.3    0.00    0.00  0e+00    178.1    0.00    0.00  0e+00
          64            16     float     sum    176.5    0.00    0.00  0e+00    179.0    0.00    0.00  0e+00
         128            32     float     sum    176.0    0.00    0.00  0e+00    187.5    0.00    0.00  0e+00
         256            64     float     sum    177.5    0.00    0.00  0e+00    174.8    0.00    0.00  0e+00
         512           128     float     sum    177.6    0.00    0.00  0e+00    175.7    0.00    0.00  0e+00
        1024           256     float     sum    187.5    0.01    0.01  0e+00    182.0    0.01    0.01  0e+00
        2048           512     float     sum    196.4    0.01    0.01  0e+00    198.0    0.01    0.01  0e+00
        4096          1024     float     sum    203.6    0.02    0.02  0e+00    218.8    0.02    0.02  0e+00
        8192          2048     float     sum    233.0    0.04    0.04  0e+00    240.9    0.03    0.03  0e+00
       16384          4096     float     sum    300.1    0.05    0.05  0e+00    304.9    0.05    0.05  0e+00
       32768          8192     float     sum    346.6    0.09    0.09  0e+00    346.3    0.09    0.09  0e+00
       65536         16384     float     sum    420.4    0.16    0.16  0e+00    421.2    0.16    0.16  0e+00
      131072         32768     float     sum    521.4    0.25    0.25  0e+00    523.5    0.25    0.25  0e+00
      262144         65536     float     sum    736.7    0.36    0.36  0e+00    657.8    0.40    0.40  0e+00
      524288        131072     float     sum    991.4    0.53    0.53  0e+00   1050.1    0.50    0.50  0e+00
     1048576        262144     float     sum   1762.4    0.59    0.59  0e+00   1704.5    0.62    0.62  0e+00
     2097152        524288     float     sum   2918.4    0.72    0.72  0e+00   2790.1    0.75    0.75  0e+00
     4194304       1048576     float     sum   5208.9    0.81    0.81  0e+00   4886.9    0.86    0.86  0e+00
     8388608       2097152     float     sum    12668    0.66    0.66  0e+00    11719    0.72    0.72  0e+00
    16777216       4194304     float     sum    20366    0.82    0.82  0e+00    20672    0.81    0.81  0e+00
    33554432       8388608     float     sum    43233    0.78    0.78  0e+00    43279    0.78    0.78  0e+00
    67108864      16777216     float     sum    87624    0.77    0.77  0e+00    84776    0.79    0.79  0e+00
   134217728      33554432     float     sum   183560    0.73    0.73  0e+00   174589    0.77    0.77  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.300212
"""


def _scaled(text: str, by: float) -> str:
    """The same run with every row's times ``by`` times longer and its bandwidths ``by`` times lower."""
    def row(m: re.Match) -> str:
        size, count, us, alg, bus, err, us2, alg2, bus2, err2 = m.group(0).split()[:2] + m.group(0).split()[4:]
        return (f"{size:>12}  {count:>12}     float     sum  {float(us) * by:7.1f}  {float(alg) / by:6.2f}  "
                f"{float(bus) / by:6.2f}  {err}  {float(us2) * by:7.1f}  {float(alg2) / by:6.2f}  "
                f"{float(bus2) / by:6.2f}  {err2}")
    return re.sub(r"(?m)^\s+\d+\s+\d+\s+float\s+sum\s+.*$", row, text)


def test_a_socket_run_at_what_a_socket_carries_is_healthy(tmp_path):
    v = decide(text_store(tmp_path, SOCKET_RUN))
    assert v.kind == Kind.HEALTHY and v.rule == "nccl_test_result"
    assert "0.77 GB/s" in v.summary and "NET/Socket" in v.summary and "TCP socket" in v.summary


def test_a_socket_run_far_under_what_10gbe_carries_is_slow(tmp_path):
    v = decide(text_store(tmp_path, _scaled(SOCKET_RUN, 10)))
    assert v.kind == Kind.SLOW_PROGRESS and v.rule == "nccl_test_result"
    assert "0.08 GB/s" in v.summary and "10 GbE" in v.summary


def test_without_a_transport_a_low_busbw_is_still_slow(tmp_path):
    # (the socket lines gone: nothing says which link carries it, the 10 GB/s floor of a GPU fabric holds)
    bare = "\n".join(ln for ln in SOCKET_RUN.splitlines() if "NCCL INFO" not in ln)
    v = decide(text_store(tmp_path, bare))
    assert v.kind == Kind.SLOW_PROGRESS and "does not name the transport" in v.summary


def _one_host(gpu: str) -> str:
    """The tutorial's table on one host of two ``gpu`` GPUs, no NCCL line: the GPUs' names give the path."""
    head = ["# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1",
            "#", "# Using devices", f"#   Rank  0 Pid   1465 on node1 device  0 [0x1a] {gpu}",
            f"#   Rank  1 Pid   1466 on node1 device  1 [0x1b] {gpu}"]
    rows = [ln for ln in SOCKET_RUN.splitlines() if not ln.startswith(("# nThread", "#   Rank", "# Using", "#\n"))
            and "NCCL INFO" not in ln and ln != "#"]
    return "\n".join(["all_reduce_perf -b 8 -e 128M -f 2 -g 1", *head, *rows]) + "\n"


def test_a_pcie_path_at_what_it_gives_is_not_slow(tmp_path):
    # (9.5x the tutorial's figures: 7.3 GB/s at 64 MB, over a third of PCIe Gen4's 20 GB/s: what it gives)
    v = decide(text_store(tmp_path, _scaled(_one_host("NVIDIA GeForce RTX 3090"), 1 / 9.5)))
    assert v.kind == Kind.HEALTHY and v.rule == "nccl_test_result", v.summary


def test_an_nvlink_path_far_under_what_it_gives_is_slow(tmp_path):
    v = decide(text_store(tmp_path, _scaled(_one_host("NVIDIA A100-SXM4-80GB"), 1 / 9.5)))
    assert v.kind == Kind.SLOW_PROGRESS and v.rule == "nccl_test_result"
    assert "NVLink 3" in v.summary


def _megatron(ms: tuple[float, ...]):
    lines = [MEGATRON.format(i=10 * (k + 1), c=80 * (k + 1), ms=m) for k, m in enumerate(ms)]
    return decide(make_store(events=progress(lines, "step", steps=[10 * (k + 1) for k in range(len(ms))], rank=0)))


#: a save or an evaluation timed in two intervals of the last third, then the loop's own pace again
SAVE_INSIDE = (950.1, 812.0, 820.4, 815.3, 818.6, 2900.4, 3100.2, 819.5)
#: an evaluation every other line, the last line one of them
PERIODIC = (812.0, 2400.5, 815.3, 2450.8)


@pytest.mark.parametrize("ms", [SAVE_INSIDE, PERIODIC])
def test_a_pace_that_moves_and_comes_back_is_no_trend(ms, monkeypatch):
    v = _megatron(ms)
    assert v.rule != "pace_trend" and "grew" not in v.summary
    # (the gates are what keep it out: without them, pace_trend reads these lines as a slowdown; s33: pace.trend's
    # own check of a one-line last third against an earlier spike is the second)
    monkeypatch.setattr(pace_moves, "moves_back", lambda ticks: False)
    monkeypatch.setattr(pace, "_within_noise", lambda *a: False)
    v = _megatron(ms)
    assert v.rule == "pace_trend" and "the time per step grew" in v.summary


def test_a_pace_that_climbs_and_stays_is_still_slow():
    v = _megatron((950.1, 812.0, 820.4, 815.3, 1300.8, 1650.2, 1702.9, 1760.3))
    assert v.kind == Kind.SLOW_PROGRESS and v.rule == "pace_trend"


#: MXNet's tools/bandwidth/measure.py on two GPUs (samples/wild dv34-005, its iteration lines as printed)
MEASURE = """python measure.py --kv-store device --gpus 0,1 --network resnet --depth 200
INFO:root:num of arrays = 205, total size = 257.991328 MB
INFO:root:iter 1, 0.113931 sec, 2.264454 GB/sec per gpu, error 0.000000
INFO:root:iter 2, 0.113200 sec, 2.279076 GB/sec per gpu, error 0.000000
INFO:root:iter 3, 0.115689 sec, 2.230041 GB/sec per gpu, error 0.000000
INFO:root:iter 4, 0.110764 sec, 2.329203 GB/sec per gpu, error 0.000000
INFO:root:iter 5, 0.110690 sec, 2.330758 GB/sec per gpu, error 0.000000
"""


def test_steady_ticks_say_the_bandwidth_a_transfer_benchmark_measures(tmp_path):
    v = decide(text_store(tmp_path, MEASURE))
    assert v.kind == Kind.HEALTHY and v.rule == "steady_ticks"
    assert "2.23-2.33 GB/sec per gpu on 5 lines" in v.summary and "link" in v.summary


def test_steady_ticks_without_a_bandwidth_say_none(tmp_path):
    # (the same lines with the bandwidth column gone: the pace alone, no bandwidth invented)
    v = decide(text_store(tmp_path, re.sub(r" [\d.]+ GB/sec per gpu,", "", MEASURE)))
    assert v.rule == "steady_ticks" and "GB/sec" not in v.summary and "bandwidth each line" not in v.summary
