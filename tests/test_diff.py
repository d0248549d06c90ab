"""`tracekit diff` on real runs: verdicts first, then the figures of speed read from the runs' own
lines, then the setup; an empty or unreadable side is bad input."""

import json
import re
import statistics

import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES
from tracekit import diff, figures
from tracekit.reports import diff as diff_text
from tracekit.cli import _load_run, main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def rank0_elapsed(sample):
    """Each step's seconds as the trainer printed them in rank 0's log (``'elapsed_s': 5.115``)."""
    log = next((SAMPLES / sample).glob("rank0.*log"))
    return [float(x) for x in re.findall(r"'elapsed_s': ([\d.]+)", log.read_text())]


def test_slow_against_fixed_says_both_verdicts_then_the_step_times():
    r = run("diff", SAMPLES / "zero3_slow_2x2", SAMPLES / "zero3_slow_fixed_2x2")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("A = zero3_slow_2x2") and lines[1].startswith("B = zero3_slow_fixed_2x2")
    assert max(len(ln) for ln in lines) <= diff_text.WIDTH  # a table for a 100-column terminal
    body = [ln for ln in lines[3:] if ln.strip()]
    assert re.match(r"verdict\s+A SLOW-PROGRESS: ", body[0]) and re.match(r"\s+B HEALTHY: ", body[1])
    slow, fixed = rank0_elapsed("zero3_slow_2x2"), rank0_elapsed("zero3_slow_fixed_2x2")
    assert len(slow) == len(fixed) == 3
    (first, first_b), (median, median_b) = body[2:4], body[4:6]  # each figure: A, then B under it
    assert first.startswith("step time, first step") and median.startswith("step time, median")
    assert f"A {slow[0]:.3g} s (elapsed_s)" in first and first_b.strip() == f"B {fixed[0]:.3g} s (elapsed_s)"
    ratio = statistics.median(slow) / statistics.median(fixed)
    assert f"A {statistics.median(slow):.3g} s" in median and median.endswith(f"A/B {ratio:.3g}x")
    assert median_b.strip().startswith(f"B {statistics.median(fixed):.3g} s")
    assert ratio > 40  # 4.6 s against 0.09 s a step: the answer, not "no differences"
    order = [ln.split("  ")[0] for ln in body[2:2 + 2 * len(diff.FIGURES):2]]
    assert order == [what for what, _ in diff.FIGURES]
    assert "no differences found" not in r.output
    full = json.loads(run("diff", SAMPLES / "zero3_slow_2x2", SAMPLES / "zero3_slow_fixed_2x2", "--json")
                      .output)
    cut = body[0].split("A ", 1)[1]  # cut to the width on the terminal, whole in --json
    assert cut.endswith("…") and f"SLOW-PROGRESS: {full['verdicts']['a']['summary']}".startswith(cut[:-1])


def test_deadlock_against_healthy_leads_with_the_deadlock():
    r = run("diff", SAMPLES / "gloo_2x2_deadlock", SAMPLES / "gloo_2x2_healthy", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert (out["verdicts"]["a"]["kind"], out["verdicts"]["b"]["kind"]) == ("deadlock", "healthy")
    assert "rank 3 never issued it" in out["verdicts"]["a"]["summary"]
    rate = {f["what"]: f for f in out["figures"]}["collectives per second"]
    assert rate["a"]["source"] == rate["b"]["source"] == "fr" and 0 < rate["a"]["value"] < rate["b"]["value"]
    seq = [d for d in out["differences"] if d["area"] == "sequence"]
    assert seq and (seq[0]["a"], seq[0]["b"]) == ("9", "15")


def test_one_rank_has_no_bus_bandwidth():
    r = run("diff", SAMPLES / "gpu_1x1_healthy", SAMPLES / "gpu_2x1_healthy")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("bus bandwidth "))
    assert lines[i].endswith(" A -") and re.match(r"\s+B [\d.]+ GB/s", lines[i + 1])
    why = r"\s+missing\s+bus bandwidth \(A\): one rank: no traffic between ranks"
    assert any(re.match(why, ln) for ln in lines)
    assert "inf" not in r.output and "0.00 GB/s" not in r.output


def test_swift_step_times_come_from_its_running_mean():
    store = _load_run(str(SAMPLES / "swift_2x2_healthy"))
    steps, source = figures.step_times(store)
    log = next((SAMPLES / "swift_2x2_healthy").glob("rank0.*log")).read_text()
    mean = [float(x) for x in re.findall(r"\{'loss': .*'train_speed\(s/it\)': '([\d.]+)'", log)]  # step lines only
    assert source == "ms-swift train_speed(s/it)" and steps.height == len(mean) == 6
    totals = [m * (i + 1) for i, m in enumerate(mean)]
    assert steps["seconds"].to_list() == pytest.approx([totals[0]] + [b - a for a, b in zip(totals, totals[1:])])


@pytest.mark.parametrize("side", ["a", "b"])
def test_an_empty_or_unreadable_side_is_bad_input(tmp_path, side):
    empty = tmp_path / "empty"
    empty.mkdir()
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "rank0.log").write_bytes(bytes(range(256)) * 64)  # binary: not a log
    for bad, what in ((empty, "no logs, dumps or traces found"), (junk, "no readable file")):
        args = [bad, SAMPLES / "gloo_2x2_healthy"] if side == "a" else [SAMPLES / "gloo_2x2_healthy", bad]
        r = run("diff", *args)
        assert r.exit_code == 2, r.output
        assert r.output.strip().splitlines() == [r.output.strip()] and r.output.startswith(f"error: {bad}: {what}")


@pytest.mark.parametrize("a, b", [("gpu_1x1_healthy", "gpu_2x1_healthy"),
                                  ("gpu_2x1_4b_zero2", "gpu_2x1_4b_zero3"),
                                  ("swift_2x2_wandb", "swift_2x2_wandb_fixed"),
                                  ("zero3_iface_2x2", "zero3_iface_fixed_2x2")])
def test_diff_fits_a_100_column_terminal_and_json_keeps_every_value_whole(a, b):
    r = run("diff", SAMPLES / a, SAMPLES / b)
    assert r.exit_code == 0, r.output
    assert max(len(ln) for ln in r.output.splitlines()) <= diff_text.WIDTH
    full = json.loads(run("diff", SAMPLES / a, SAMPLES / b, "--json").output)
    for d in full["differences"]:  # each setup row shows the start of both values, the rest in --json
        label = diff_text._cut(f"{d['area']}: {d['what']}", diff_text.LABEL)
        row = next(ln for ln in r.output.splitlines() if ln.startswith(label))
        shown_a = row[diff_text.LABEL + 3:].split(" | B ")[0].rstrip().rstrip("…")
        assert " ".join(d["a"].split()).startswith(shown_a)
