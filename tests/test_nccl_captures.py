"""The five faults on real NCCL (torch 2.11, NCCL 2.28.9, one H200 as two fake nodes x 2 ranks, under
`tracekit run`: samples/gpu_nccl_*/README.md): their verdicts afterwards, from the NCCL logs alone, and
live, replayed from the files that were there when `tracekit run` printed its verdict."""

import re
import shutil

import polars as pl
import pytest

from tests.conftest import SAMPLES
from tracekit import align, live
from tracekit.align import Match
from tracekit.ingest import ingest
from tracekit.sources import nccl
from tracekit.verdict import Kind, decide


def run(name):
    return SAMPLES / f"gpu_nccl_{name}"


def copy(name, dest, *patterns):
    """The files of a capture that match ``patterns`` (globs; folders copied whole), in ``dest``."""
    dest.mkdir()
    for pattern in patterns:
        for f in run(name).glob(pattern):
            (shutil.copytree if f.is_dir() else shutil.copy)(f, dest / f.name)
    return dest


#: what `tracekit run` had when it printed its live verdict: the dump rounds and the NCCL logs
#: (COLL lines are written at enqueue, all before the hang; the abort lines after it are no collectives)
LIVE = ("procs", "dump.*.request", "fr_rank*.pkl", "pyspy.*.txt", "nccl.*.log")


@pytest.mark.parametrize("name, kind, ranks", [
    ("healthy", Kind.HEALTHY, []),
    ("crash", Kind.CRASHED_RANK, [3]),
    ("mismatch", Kind.MISMATCH, [1]),
])
def test_verdict_afterwards(name, kind, ranks):
    v = decide(ingest([run(name)]))
    assert (v.kind, v.ranks) == (kind, ranks)


def test_slow_is_slow_not_hung():
    assert decide(ingest([run("slow")])).kind == Kind.SLOW_PROGRESS


def test_mismatch_from_the_nccl_logs_alone(tmp_path):
    # NCCL checks no sizes: rank 1 all_reduces 8448 floats at opCount 0x1c, the others 8449, and it hangs
    v = decide(ingest([copy("mismatch", tmp_path / "r", "nccl.*.log")]))
    assert v.kind == Kind.MISMATCH and v.ranks == [1]
    assert "seq 29" in v.summary and "[8449]" in v.summary and "rank 1" in v.summary and "[8448]" in v.summary
    assert any(str(e).endswith("/nccl.vm.1104.log:98") for e in v.evidence)  # rank 1's COLL line
    line = (tmp_path / "r" / "nccl.vm.1104.log").read_text().splitlines()[97]
    assert "opCount 1c " in line and "count 8448 " in line


def test_mismatch_comes_before_the_ranks_that_stopped_after_it():
    found = align.find(ingest([run("mismatch")]), "nccl")
    assert found[0].kind == Match.SIZE and found[0].seq == 29
    later = [f for f in found if f.kind == Match.MISSING]
    assert later and all(f.seq > 29 for f in later)  # rank 0 blocked in a CUDA sync, at seq 31


def test_deadlock_names_the_stuck_rank_in_both_sources():
    # rank 3 never issued seq 29; ranks 1-2 queued on to seq 40 and rank 0 to 30: they are its consequence
    store = ingest([run("deadlock")])
    for source in ("fr", "nccl"):
        f = align.find(store, source)[0]
        assert (f.kind, f.seq, f.missing, f.present) == (Match.MISSING, 29, [3], [0, 1, 2]), source


def test_deadlock_from_the_nccl_logs_alone(tmp_path):
    v = decide(ingest([copy("deadlock", tmp_path / "r", "nccl.*.log")]))
    assert v.kind == Kind.DEADLOCK and v.ranks == [3] and "seq 29" in v.summary
    assert re.fullmatch(r".*/nccl\.vm\.\d+\.log:\d+", str(v.evidence[0]))  # a log line, not "record None"


@pytest.mark.parametrize("name", ["deadlock", "crash", "mismatch", "slow"])
def test_one_collective_one_number(name):
    """The Flight Recorder's seq and NCCL's opCount name one collective alike (seq = opCount + 1)."""
    coll = ingest([run(name)]).collectives
    fr = coll.filter(pl.col("source") == "fr").select("rank", "seq", "op", "count").unique()
    nc = nccl.calls(coll.lazy().filter(pl.col("source") == "nccl")).collect().select(
        "rank", "seq", pl.col("op").alias("nop"), pl.col("count").alias("ncount"))
    both = fr.join(nc, on=["rank", "seq"])
    op = pl.col("op").cast(pl.Utf8)
    same = both.filter((op == pl.col("nop").cast(pl.Utf8)) & (pl.col("count") == pl.col("ncount")))
    assert both.height >= 50 and same.height >= 0.95 * both.filter(op != "other").height


def test_live_deadlock_replayed(tmp_path):
    """The files of the live verdict: the stuck rank named, with its own record of the same dump round."""
    out = copy("deadlock", tmp_path / "r", *LIVE)
    v = live.decide(out)
    assert v.kind == Kind.DEADLOCK and v.ranks == [3] and "seq 29" in v.summary
    own = [str(e) for e in v.evidence if "rank 3's" in str(e)]
    assert any("fr_rank3.vm.681.2.pkl" in e for e in own) and any("opCount 1b" in e for e in own)
    assert "no record of its own" not in v.summary


def test_live_without_the_ranks_own_record_says_so(tmp_path):
    out = copy("deadlock", tmp_path / "r", *LIVE)
    for f in ("fr_rank3.vm.681.2.pkl", "pyspy.vm.681.2.txt", "nccl.vm.681.log"):
        (out / f).unlink()
    v = live.decide(out)
    assert v.ranks == [3] and "rank 3: no record of its own from this dump round" in v.summary


def test_live_mismatch_replayed(tmp_path):
    v = live.decide(copy("mismatch", tmp_path / "r", *LIVE))
    assert v.kind == Kind.MISMATCH and v.ranks == [1] and "[8448]" in v.summary


def test_verdict_txt_claims_agreement_only_when_checked(tmp_path):
    out = copy("crash", tmp_path / "r", "*")
    for f in ("verdict.txt", "verdict.json"):
        (out / f).unlink()
    v = live.decide(out)
    assert live.write(out, v, "exited", 0.0, 2, tmp_path / "scratch")
    assert "gives the same from the logs (checked" in (out / "verdict.txt").read_text()
    assert live.write(out, v, "stalled", 10.0, 2, tmp_path / "scratch")
    assert "gives the same" not in (out / "verdict.txt").read_text()
    # a launcher still running: the logs are not final, nothing to check against
    log = next(out.glob("launcher.*.log"))
    log.write_text("\n".join(x for x in log.read_text().splitlines() if " exit code " not in x) + "\n")
    assert not live.final(out)
    assert live.write(out, v, "exited", 0.0, 2, tmp_path / "scratch")
    assert "gives the same" not in (out / "verdict.txt").read_text()
