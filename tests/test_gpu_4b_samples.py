"""The Qwen3-4B runs on one H200 (samples/repro/gpu_capture_4b.sh, ZeRO-3 / ZeRO-2 offload as ms-swift
sets them, NCCL 2.28.9): their verdicts, and the collective traffic per step tracekit computes from the
NCCL COLL lines, checked against the same lines read here with a plain regex and against what ZeRO
must move for a model of the size the run printed."""

import gzip
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT, SAMPLES
from tracekit import traffic
from tracekit.cli import main
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

RUNS = ["gpu_1x1_4b_zero3", "gpu_2x1_4b_zero3", "gpu_2x1_4b_zero3_seq16k", "gpu_2x1_4b_zero2", "gpu_2x1_4b_bench"]
ELEMENT = {0: 1, 1: 1, 2: 4, 3: 4, 4: 8, 5: 8, 6: 2, 7: 4, 8: 8, 9: 2}  # ncclDataType_t -> bytes
COLL = re.compile(r"NCCL INFO (\w+): opCount \w+ sendbuff \S+ recvbuff \S+ count (\d+) datatype (\d+) .*\[nranks=(\d+)\]")


def coll_data(sample):
    """Data bytes by op summed over the ranks' NCCL logs, read here without tracekit."""
    total = {}
    for log in (SAMPLES / sample).glob("nccl.*.log.gz"):
        for op, count, dtype, nranks in COLL.findall(gzip.decompress(log.read_bytes()).decode()):
            size = int(count) * ELEMENT[int(dtype)] * (int(nranks) if op in ("AllGather", "ReduceScatter") else 1)
            total[op] = total.get(op, 0) + size
    return total


def rank0_log(sample):
    return next((SAMPLES / sample).glob("rank0.*log")).read_text()


def model_bytes(sample):
    return int(re.search(r"Number of trainable parameters = (\d+)", rank0_log(sample)).group(1)) * 2  # bf16


@pytest.mark.parametrize("sample", RUNS)
def test_every_4b_run_is_healthy(sample):
    v = decide(ingest([SAMPLES / sample]))
    assert v.kind == Kind.HEALTHY, v.summary


def test_zero3_traffic_is_the_coll_lines_per_step_and_moves_the_model_three_times_a_micro_step():
    t = traffic.measure(ingest([SAMPLES / "gpu_2x1_4b_zero3"]))
    assert (t.steps, t.accumulation, t.ranks, t.nranks) == (2, 8, 2, 2)  # from the log's step lines and HF banner
    raw = coll_data("gpu_2x1_4b_zero3")
    data = dict(zip(t.by_op["op"], t.by_op["data_bytes"]))
    names = {"all_gather": "AllGather", "reduce_scatter": "ReduceScatter", "broadcast": "Broadcast", "all_reduce": "AllReduce"}
    assert {op: round(v * t.ranks) for op, v in data.items()} == {op: raw[names[op]] for op in data}
    model = model_bytes("gpu_2x1_4b_zero3")
    per_micro = {op: v / t.micro_steps for op, v in data.items()}
    # every micro-step reduce-scatters each bf16 gradient once and gathers the parameters in forward and
    # backward (start-up gathers and broadcasts them once more, spread over the 16 micro-steps here)
    assert per_micro["reduce_scatter"] == pytest.approx(model, rel=0.01)
    assert 2.0 * model < per_micro["all_gather"] < 2.2 * model
    # with two ranks a ring sends half of every all-gather and reduce-scatter
    sent = dict(zip(t.by_op["op"], t.by_op["sent_bytes"]))
    assert sent["all_gather"] == pytest.approx(data["all_gather"] / 2)


def test_traffic_does_not_depend_on_the_sequence_length():
    a = traffic.measure(ingest([SAMPLES / "gpu_2x1_4b_zero3"]))
    b = traffic.measure(ingest([SAMPLES / "gpu_2x1_4b_zero3_seq16k"]))
    assert "seq 32768" in rank0_log("gpu_2x1_4b_zero3") and "seq 16384" in rank0_log("gpu_2x1_4b_zero3_seq16k")
    assert a.by_op.sort("op").to_dicts() == b.by_op.sort("op").to_dicts()


def test_zero2_offload_all_reduces_every_gradient_each_micro_step():
    t = traffic.measure(ingest([SAMPLES / "gpu_2x1_4b_zero2"]))
    assert (t.steps, t.accumulation) == (1, 8)
    data = dict(zip(t.by_op["op"], t.by_op["data_bytes"]))
    model = model_bytes("gpu_2x1_4b_zero2")
    assert data["all_reduce"] / t.micro_steps == pytest.approx(model, rel=0.01)
    assert data["all_gather"] == pytest.approx(model, rel=0.01)  # the updated parameters, once a step
    assert "reduce_scatter" not in data


def test_one_rank_sends_nothing():
    t = traffic.measure(ingest([SAMPLES / "gpu_1x1_4b_zero3"]))
    assert t.nranks == 1 and t.by_op["sent_bytes"].sum() == 0 and t.by_op["data_bytes"].sum() > 0


def test_summary_and_diff_print_the_traffic_per_step():
    r = CliRunner().invoke(main, ["ingest", str(SAMPLES / "gpu_2x1_4b_zero3"), "--no-store"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("traffic"))
    assert "per rank per micro-step (2 optimizer step(s) x 8 micro-steps" in lines[head]
    assert re.match(r"\s+all_gather\s+429\.8 calls\s+16\.7 GB data\s+8\.37 GB sent, 66\.9 GB sent per optimizer step",
                    lines[head + 1]), lines[head + 1]
    r = CliRunner().invoke(main, ["diff", str(SAMPLES / "gpu_2x1_4b_zero2"), str(SAMPLES / "gpu_2x1_4b_zero3")])
    assert r.exit_code == 0, r.output
    row = next(ln for ln in r.output.splitlines() if ln.startswith("collective traffic per step"))
    za = traffic.measure(ingest([SAMPLES / "gpu_2x1_4b_zero2"]))
    zb = traffic.measure(ingest([SAMPLES / "gpu_2x1_4b_zero3"]))
    ratio = (za.by_op["sent_bytes"].sum() / za.steps) / (zb.by_op["sent_bytes"].sum() / zb.steps)
    assert "A 72.4 GB sent per rank (all_reduce 64.4 GB" in row and f"A/B {ratio:.3g}x" in row


def test_a_run_without_coll_lines_has_no_traffic_and_says_why():
    s = ingest([SAMPLES / "zero3_healthy_2x2"])  # gloo on CPU: no NCCL
    assert traffic.measure(s) is None
    assert traffic.per_step(s).value is None and "COLL" in traffic.per_step(s).detail


def test_the_projection_script_prints_what_the_case_page_quotes():
    out = subprocess.run([sys.executable, str(ROOT / "samples/repro/project_2x2.py")], capture_output=True, text=True,
                         check=True).stdout
    page = (ROOT / "docs/case-ms-swift-6867.md").read_text()
    quoted = page.split("python samples/repro/project_2x2.py\n", 1)[1].split("```", 1)[0].strip()
    assert quoted and out.strip() == quoted
