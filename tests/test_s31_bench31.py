"""Session 31, bench31: a collective's figures printed outside nccl-tests.

Covers parsers/rank_blocks.py (a rank's own line over its figures, BigScience's all_reduce_bench.py: the
figures get that rank, the rank and ``ignore me`` lines are claimed, the ranks are seen), the script-name fix
of parsers/result_tables.SCRIPT (an installed module's path in a warning is no script run), and
rules_collective.collective_measured (a collective's figures printed by rank 0 alone or by every rank: healthy
where the ranks agree and no yardstick says slow; left to the other rules where the figure is under what any
GPU interconnect carries, where ranks disagree, where a figure is no collective's, where an error follows).
Also parsers/bw_checks.py and rules_bw_check.bandwidth_check (a health check's own tally against the threshold it
states, OCI ncclscout's lines in dev dv30-024: none under it, healthy; some under it, undecided), nccl-tests'
tables cut past the large sizes (healthy so far), a latency alone (undecided, never slow) and rows saved as CSV.
Lines are quoted from /work/shared/corpus/bigscience (all_reduce_bench-32gb-n4.txt) and from the f-strings
of deepspeed/utils/comms_logging.py (CommsLogger.append) as installed.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from tests.factory import events_of, ranks_of, text_store
from tracekit import rules_collective
from tracekit.evidence import Evidence
from tracekit.ingest import unknown_lines
from tracekit.parsers import result_tables
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

CORPUS = Path("/work/shared/corpus/bigscience")

#: two ranks' blocks as BigScience's all_reduce_bench.py prints them (lines of all_reduce_bench-32gb-n4.txt)
BLOCKS = """ignore me 447779
1:
 duration: 0.7080 sec
 algo throughput: 90397847806.5952 bps, 90.3978 Gbps
 busbw: 84.7480  Gbps
ignore me 447779
7:
 duration: 0.7083 sec
 algo throughput: 90360919482.0588 bps, 90.3609 Gbps
 busbw: 84.7134  Gbps
"""

#: DeepSpeed's comms logger with verbose on: rank 0 logs each op (comms_logging.py CommsLogger.append)
DS_LOG = """[2024-03-11 10:21:04,118] [INFO] [logging.py:96:log_dist] [Rank 0] comm op: all_reduce | time (ms): 9.46 | msg size: 678.86 MB | algbw (Gbps): 1204.52 | busbw (Gbps): 2107.91
[2024-03-11 10:21:04,131] [INFO] [logging.py:96:log_dist] [Rank 0] comm op: all_reduce | time (ms): 9.41 | msg size: 678.86 MB | algbw (Gbps): 1210.88 | busbw (Gbps): 2119.04
[2024-03-11 10:21:04,150] [INFO] [logging.py:96:log_dist] [Rank 0] comm op: all_reduce | time (ms): 9.50 | msg size: 678.86 MB | algbw (Gbps): 1199.44 | busbw (Gbps): 2099.02
"""


def _rule(store):
    return rules_collective.collective_measured(Evidence.gather(store))


def test_rank_blocks_give_each_figure_its_rank(tmp_path):
    s = text_store(tmp_path, BLOCKS)
    bw = events_of(s, EventKind.BANDWIDTH).filter(pl.col("where") == "benchmark")
    busbw = bw.filter(pl.col("message").str.contains("busbw")).sort("line")
    assert busbw["rank"].to_list() == [1, 7]
    assert busbw["busbw_gbs"].round(3).to_list() == [10.594, 10.589]  # (84.748 Gb/s is 10.594 GB/s)
    assert ranks_of(s) == [1, 7]
    # (the rank lines and the ``ignore me`` lines are the benchmark's own: none unknown)
    unknown = unknown_lines([tmp_path / "job.log"])
    assert not unknown.filter(pl.col("raw").str.contains(r"^\s*\d+:\s*$|ignore me")).height


def test_rank_blocks_healthy_when_every_rank_agrees(tmp_path):
    v = decide(text_store(tmp_path, BLOCKS))
    assert v.kind == Kind.HEALTHY and v.rule == "collective_measured"
    assert "ranks 1,7" in v.summary or "ranks 1, 7" in v.summary
    assert "84.748" in v.summary or "10.59" in v.summary


def test_rank_0_alone_prints_a_collective_figure(tmp_path):
    """DeepSpeed's comms logger logs on rank 0 only: the all_reduce completed on every rank of its group."""
    v = decide(text_store(tmp_path, DS_LOG))
    assert v.kind == Kind.HEALTHY and v.rule == "collective_measured"
    assert "rank 0" in v.summary and "every rank of its group" in v.summary
    assert "264.9 GB/s" in v.summary  # (its busbw, 2119.04 Gb/s, not its algbw)


def test_figure_under_what_tcp_gives_is_not_called_healthy(tmp_path):
    """A collective's bus bandwidth under 1 GB/s (5.2 Gb/s: TCP through the kernel at best): not this rule's."""
    low = re.sub(r"busbw \(Gbps\): \d+\.\d+", "busbw (Gbps): 5.20", DS_LOG)
    store = text_store(tmp_path, low)
    assert _rule(store) is None
    assert decide(store).kind != Kind.HEALTHY


def test_ranks_that_disagree_are_left_to_the_rank_rules(tmp_path):
    slow = BLOCKS.replace("busbw: 84.7134  Gbps", "busbw: 21.1000  Gbps").replace(
        "90.3609 Gbps", "22.6000 Gbps")
    store = text_store(tmp_path, slow)
    assert _rule(store) is None
    assert decide(store).kind != Kind.HEALTHY


def test_figure_of_no_collective_is_not_this_rules(tmp_path):
    """DeepEP's dispatch line (tests/test_low_latency.py) names no collective nor a bus bandwidth."""
    store = text_store(tmp_path, "[rank 3] Dispatch bandwidth: 24.67 GB/s, avg_t=304.43 us | Combine "
                                 "bandwidth: 24.72 GB/s, avg_t=588.12 us\n")
    assert _rule(store) is None


def test_error_after_the_figures_is_never_healthy(tmp_path):
    text = DS_LOG + ("[rank0]:[E311 10:31:04.150000 140 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
                     "collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, "
                     "NumelOut=1, Timeout(ms)=600000) ran for 600058 milliseconds before timing out.\n")
    store = text_store(tmp_path, text)
    assert _rule(store) is None
    assert decide(store).kind != Kind.HEALTHY


def test_script_is_not_an_installed_modules_path():
    warn = ("/gpfswork/rech/six/commun/conda/hf-prod/lib/python3.8/site-packages/torch/distributed/launch.py:178: "
            "FutureWarning: The module torch.distributed.launch is deprecated")
    assert result_tables._tool([warn]) == "a benchmark"
    assert result_tables._tool(["$ python -u -m torch.distributed.run --nproc_per_node=8 all_reduce_bench.py"]
                               ) == "all_reduce_bench.py"


@pytest.mark.skipif(not CORPUS.exists(), reason="the shared corpus is not on this machine")
def test_corpus_blocks_read_per_rank(tmp_path):
    """all_reduce_bench-32gb-n4.txt: 16 ranks over 4 nodes, each printing its trials in blocks."""
    from tracekit.ingest import ingest
    s = ingest([CORPUS / "all_reduce_bench-32gb-n4.txt"])
    bw = events_of(s, EventKind.BANDWIDTH).filter(pl.col("where") == "benchmark")
    assert bw["rank"].drop_nulls().n_unique() == 16
    unknown = unknown_lines([CORPUS / "all_reduce_bench-32gb-n4.txt"])
    assert not unknown.filter(pl.col("raw").str.contains(r"^\s*\d+:\s*$|ignore me")).height
    v = decide(s)
    # (each rank's figures agree past the first trial, which warms up on all of them: 46 -> 84.7 Gb/s; dev
    # dv46-007, the same benchmark on 32 Jean Zay ranks at ~5 GB/s, is labelled healthy)
    assert v.kind == Kind.HEALTHY and v.rule == "collective_measured"
    assert "ranks 0-15" in v.summary and "busbw: 84." in v.summary


WILD = Path(__file__).parent.parent / "samples" / "wild"
#: a clean 16-rank table over two H100 hosts (dev excerpt), its header, rank lines and rows
CLEAN = WILD / "dv27-013-nccl-tests-allreduce-16rank-two-h100-hosts-clean.txt"


def _cut(tmp_path, last_size: int, name: str = "cut.log"):
    """The dev table's own lines up to the row of ``last_size``, its end lines dropped: a paste cut short."""
    kept = []
    for line in CLEAN.read_text().splitlines():
        kept.append(line)
        if line.split()[:1] == [str(last_size)]:
            break
    return text_store(tmp_path, "\n".join(kept) + "\n", name)


@pytest.mark.skipif(not CLEAN.exists(), reason="dev excerpts are not on this machine")
def test_a_table_cut_past_the_large_sizes_is_healthy_so_far(tmp_path):
    v = decide(_cut(tmp_path, 268435456))
    assert v.kind == Kind.HEALTHY and v.rule == "nccl_test_result"
    assert "256 MB of the 8 GB asked" in v.summary and "healthy so far" in v.summary
    assert "213.19 GB/s" in v.summary


@pytest.mark.skipif(not CLEAN.exists(), reason="dev excerpts are not on this machine")
def test_a_table_cut_below_the_large_sizes_stays_undecided(tmp_path):
    v = decide(_cut(tmp_path, 16777216, "short.log"))
    assert v.kind == Kind.UNDECIDED and "the table stops at 16 MB" in v.summary


@pytest.mark.skipif(not CLEAN.exists(), reason="dev excerpts are not on this machine")
def test_rows_written_as_csv_are_read_as_rows(tmp_path):
    rows = [ln.split() for ln in CLEAN.read_text().splitlines() if ln.strip()[:1].isdigit()]
    csv = "size,count,type,redop,root,time,algbw,busbw,wrong\n" + "\n".join(",".join(r[:9]) for r in rows) + "\n"
    s = text_store(tmp_path, csv, "allreduce.csv")
    bw = events_of(s, EventKind.BANDWIDTH).filter(pl.col("where") == "nccl-tests")
    assert bw.height == len(rows) and bw["busbw_gbs"].max() == 338.82
    v = decide(s)
    assert v.kind == Kind.HEALTHY and "338.82 GB/s at 8 GB" in v.summary


def test_a_latency_alone_is_undecided_never_slow(tmp_path):
    """Small sizes only at hundreds of microseconds (dev dv35-003's shape: 8 p3dn nodes over EFA): the latency is
    said, and the sizes that measure bandwidth decide."""
    rows = [f"{2**k:>12} {2**k // 4:>12}     float     sum    {630.0 + k:6.1f}    0.00    0.00  2e-07    "
            f"{631.0 + k:6.1f}    0.00    0.00  2e-07" for k in range(3, 16)]
    v = decide(text_store(tmp_path, "\n".join(rows) + "\n", "tests.log"))
    assert v.kind == Kind.UNDECIDED and "633 us latency" in v.summary and "GB/s" in v.summary


#: OCI ncclscout's tally (dev dv30-024's lines)
TALLY = """Testing h100-ord01-03-14 <-> h100-ord01-03-294... 448.35 GB/s
│       ├── Good nodes (≥ 440.0 GB/s): 3
│       └── Bad nodes (< 440.0 GB/s or failed): {bad}
"""


def test_a_checks_tally_with_none_under_its_threshold_is_healthy(tmp_path):
    s = text_store(tmp_path, TALLY.format(bad=0))
    checks = events_of(s, EventKind.BANDWIDTH).filter(pl.col("where") == "bandwidth_check").sort("line")
    assert checks["op"].to_list() == ["at", "under"] and checks["numel"].to_list() == [3, 0]
    assert checks["busbw_gbs"].to_list() == [440.0, 440.0]
    v = decide(s)
    assert v.kind == Kind.HEALTHY and v.rule == "bandwidth_check" and "threshold of 440 GB/s" in v.summary


def test_a_checks_tally_with_some_under_it_is_never_healthy(tmp_path):
    v = decide(text_store(tmp_path, TALLY.format(bad=1)))
    assert v.kind == Kind.UNDECIDED and "1 under its threshold of 440 GB/s" in v.summary
