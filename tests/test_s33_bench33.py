"""Session 33 (bench33): the NICs' rate a log states is the yardstick of a cross-node nccl-tests run, and a pace
trend is judged against the run's own noise.

Covers: parsers/nccl.py's ``nic_speed`` links (NCCL's ``NET/IB: [0] mlx5_0:uverbs0:1/RoCE ... speed=100000`` and
``Made virtual device``, real lines of dev dv32-002); nic_rates.stated (NCCL's word, then ibstat's ``Rate:``);
rules_nccl_tests: a 16-rank two-host table at what the stated NIC carries is healthy (slow without the rate), an
RDMA run far under the stated rate slow, one at a slow stated RoCE NIC's rate healthy; pace.trend: a time per step
whose end is no higher than an earlier spike is no trend, a real doubling still is.
"""

from __future__ import annotations

import polars as pl

from tests.factory import text_store
from tracekit import nic_rates, pace
from tracekit.evidence import Evidence
from tracekit.outcome import Kind
from tracekit.rules_nccl_tests import nccl_test_result

#: real lines of NCCL 2.27.7's IB plugin (samples/wild dv32-002)
NCCL_NICS = """\
mew0:65704:65723 [1] NCCL INFO NET/IB: [0] mlx5_0:uverbs0:1/RoCE provider=Mlx5 speed=100000 context=0x7f4027bafd40 pciPath=/sys/devices/pci0000:4a/0000:4a:02.0/0000:4b:00.0 ar=0
mew0:65704:65723 [1] NCCL INFO NET/IB : Made virtual device [0] name=mlx5_0 speed=100000 ndevs=1
mew0:65704:65723 [1] NCCL INFO NET/IB: [1] mlx5_1:uverbs1:1/RoCE provider=Mlx5 speed=100000 context=0x7f4027bf13d0 pciPath=/sys/devices/pci0000:4a/0000:4a:02.0/0000:4b:00.0 ar=0
mew0:65704:65723 [1] NCCL INFO NET/IB : Made virtual device [1] name=mlx5_1 speed=100000 ndevs=1
mew0:65704:65723 [1] NCCL INFO NET/IB : Made virtual device [2] name=mlx5_0+mlx5_1 speed=200000 ndevs=2
"""

#: nccl-tests' header of 16 ranks on two hosts (dev dv27-013)
HEADER = "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 " \
    "validation: 1 graph: 0\n#\n# Using devices\n" + "".join(
        f"#  Rank {r:2d} Group  0 Pid {6899 + r:6d} on {'ztan-mig-235z' if r < 8 else 'ztan-mig-gq73'} device  {r % 8} "
        f"[0000:04:00] NVIDIA H100 80GB HBM3\n" for r in range(16)) + """\
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       
"""


def _rows(busbw: float) -> str:
    """nccl-tests' rows (src/common.cu's widths) from 64 MB to 1 GB at ``busbw`` GB/s, 16 ranks (factor 30/16)."""
    out = []
    for size in (2**26, 2**27, 2**28, 2**29, 2**30):
        alg = busbw * 16 / 30
        us = size / alg / 1e3
        out.append(f"{size:12d}  {size // 4:12d}     float     sum      -1  {us:7.1f}  {alg:6.2f}  {busbw:6.2f}      0"
                   f"  {us:7.1f}  {alg:6.2f}  {busbw:6.2f}      0")
    return "\n".join(out) + "\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %g \n#\n" % busbw


#: ibstat's port lines (rdma-core's ibstat: one block per CA and port)
IBSTAT = """\
CA 'mlx5_0'
	CA type: MT4123
	Number of ports: 1
	Port 1:
		State: Active
		Physical state: LinkUp
		Rate: 100
		Link layer: InfiniBand
"""


def _verdict(tmp_path, text: str):
    return nccl_test_result(Evidence.gather(text_store(tmp_path, text)))


def test_nccl_states_each_nic_speed(tmp_path):
    store = text_store(tmp_path, NCCL_NICS)
    said = store.links.filter(pl.col("what") == "nic_speed")
    assert sorted(said.filter(pl.col("channel").is_null())["iface"].to_list()) == ["mlx5_0", "mlx5_1"]
    told = nic_rates.stated(Evidence.gather(store))
    assert told is not None and told.gbs == 25.0 and "100 Gb/s" in told.says


def test_sixteen_ranks_at_the_stated_nic_rate_is_healthy(tmp_path):
    plain = _verdict(tmp_path, "$ mpirun -np 16 ./build/all_reduce_perf -b 8 -e 1G\n" + HEADER + _rows(11.5))
    assert plain.kind == Kind.SLOW_PROGRESS  # (no rate said: under what a node of 8 GPUs is built for)
    told = _verdict(tmp_path, IBSTAT + "$ mpirun -np 16 ./build/all_reduce_perf -b 8 -e 1G\n" + HEADER + _rows(11.5))
    assert told.kind == Kind.HEALTHY, told.summary


def test_far_under_the_stated_nccl_rate_is_slow_and_at_a_slow_nic_healthy(tmp_path):
    def nics(mbps: int) -> str:
        return "".join(f"{h}:6899:6950 [0] NCCL INFO NET/IB: [0] mlx5_0:uverbs0:1/RoCE provider=Mlx5 speed={mbps} "
                       "context=0x7f4027bafd40 pciPath=/sys/devices/pci0000:4a/0000:4a:02.0/0000:4b:00.0 ar=0\n"
                       f"{h}:6899:6950 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.{i}<0>\n"
                       f"{h}:6899:6950 [0] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/0\n"
                       for i, h in enumerate(("ztan-mig-235z", "ztan-mig-gq73")))
    slow = _verdict(tmp_path, nics(400000) + HEADER + _rows(12.0))
    assert slow.kind == Kind.SLOW_PROGRESS and "400 Gb/s" in slow.summary, slow.summary
    fits = _verdict(tmp_path, nics(25000) + HEADER + _rows(2.8))
    assert fits.kind == Kind.HEALTHY and "25 Gb/s" in fits.summary, fits.summary


def _megatron(ms: list[float]) -> str:
    """A Megatron run's progress lines (dev excerpts' ``elapsed time per iteration (ms)``), read into ticks."""
    text = "".join(f" iteration {i + 1:8d}/  250000 | consumed samples: {1024 * (i + 1):12d} | elapsed time per "
                   f"iteration (ms): {t:.1f} | learning rate: 1.365E-05 | global batch size:  1024 | lm loss: "
                   "2.382640E+00 | loss scale: 1.0 | grad norm: 0.227 | number of skipped iterations:   0 | number of "
                   "nan iterations:   0 |\n" for i, t in enumerate(ms))
    return text


def test_a_trend_within_the_runs_own_spikes_is_noise(tmp_path):
    # (three to five lines: the last third is one line; an earlier one as slow says the pace spikes by itself)
    noisy = Evidence.gather(text_store(tmp_path, _megatron([900, 810, 1700, 805, 1690])))
    assert pace.trend(noisy.ticks) is None
    slower = Evidence.gather(text_store(tmp_path, _megatron([900, 810, 820, 805, 1690])))
    assert pace.trend(slower.ticks) is not None
    # (a pace that doubled and stayed there has no spike it came back from: the trend, not noise)
    stayed = Evidence.gather(text_store(tmp_path, _megatron([900, 810, 1700, 1650, 1690])))
    assert pace.trend(stayed.ticks) is not None


def test_an_all_to_all_across_nodes_is_judged_by_one_gpus_share(tmp_path):
    nics = "".join(f"{h}:6899:6950 [0] NCCL INFO NET/IB : Using " + " ".join(f"[{i}]mlx5_{i}:1/IB" for i in range(8))
                   + f" ; OOB ib0:192.168.11.{k}<0>\n" for k, h in enumerate(("ztan-mig-235z", "ztan-mig-gq73")))
    rows = _rows(11.5).replace("     sum", "    none")
    a2a = _verdict(tmp_path, nics + "$ mpirun -np 16 ./build/alltoall_perf -b 8 -e 1G\n" + HEADER + rows)
    assert a2a.kind == Kind.HEALTHY, a2a.summary
    ar = _verdict(tmp_path, nics + "$ mpirun -np 16 ./build/all_reduce_perf -b 8 -e 1G\n" + HEADER + _rows(11.5))
    assert ar.kind == Kind.SLOW_PROGRESS, ar.summary  # (8 NICs of 100 Gb/s and up: an all-reduce gives far more)
