"""DeepSpeed's configuration block (parsers/deepspeed_config.py) and `tracekit diff` comparing it, on real
start-ups: DeepSpeed 0.19.8 on CPU (samples/ds_zero3_offload_1x2, samples/ds_zero2_1x2, made by
samples/repro/ds_tiny.py) and DeepSpeed of 2021 in BigScience's Megatron-DeepSpeed logs (the corpus)."""

import json

import polars as pl
import pytest
from click.testing import CliRunner

from tests.conftest import SAMPLES
from tracekit import schema
from tracekit.cli import main
from tracekit.parsers import deepspeed_config, text


def settings_of(path):
    lines = text.lines_frames([text.raw(str(path), path.read_text(errors="replace"))])
    parsed = deepspeed_config.parse(lines)
    ev = schema.conform(parsed.tables["events"], schema.EVENTS)
    assert set(ev["kind"].cast(pl.Utf8)) == {"deepspeed_config"}
    return dict(m.split("=", 1) for m in ev["message"]), parsed


def test_the_printed_pydantic_config_of_deepspeed_0_19():
    said, parsed = settings_of(SAMPLES / "ds_zero3_offload_1x2" / "torchrun.log")
    assert said == {"zero_stage": "3", "optimizer offload": "cpu", "optimizer pin_memory": "true",
                    "param offload": "cpu", "param pin_memory": "true", "reduce_bucket_size": "1048576",
                    "allgather_bucket_size": "500000000", "prefetch_bucket_size": "943718", "overlap_comm": "false",
                    "contiguous_gradients": "true", "micro_batch": "2", "grad_accumulation": "4",
                    "train_batch_size": "16", "fp16": "false", "bf16": "true"}
    # every line of the block is claimed: its head, each setting, the user's JSON to its closing brace
    lines = (SAMPLES / "ds_zero3_offload_1x2" / "torchrun.log").read_text().splitlines()
    head = next(i for i, ln in enumerate(lines, 1) if "DeepSpeedEngine configuration:" in ln)
    user = next(i for i, ln in enumerate(lines, 1) if ln.endswith("  json = {"))
    end = next(i for i, ln in enumerate(lines, 1) if i > user and ln == "}")
    assert set(parsed.claimed["line"]) == set(range(head, end + 1))
    zero2, _ = settings_of(SAMPLES / "ds_zero2_1x2" / "torchrun.log")
    assert zero2["zero_stage"] == "2" and zero2["optimizer offload"] == zero2["param offload"] == "none"
    assert "optimizer pin_memory" not in zero2  # no offload: nothing pinned to say


def test_the_json_valued_config_of_2021(corpus):
    said, _ = settings_of(corpus / "bigscience" / "meg_ds_zero_gpt2_perf_n16-1999616.out")
    assert said["zero_stage"] == "3" and said["optimizer offload"] == "none" and said["fp16"] == "true"
    assert said["reduce_bucket_size"] == "67108860"  # as DeepSpeed printed it: 6.710886e+07
    assert said["micro_batch"] == "48" and said["train_batch_size"] == "768" and said["overlap_comm"] == "true"
    three_d, _ = settings_of(corpus / "bigscience" / "meg_ds_3d_gpt2_perf_n16.out")
    assert three_d["zero_stage"] == "0" and three_d["grad_accumulation"] == "256"


def test_diff_compares_zero_stage_offload_buckets_and_batch():
    a, b = SAMPLES / "ds_zero3_offload_1x2", SAMPLES / "ds_zero2_1x2"
    r = CliRunner().invoke(main, ["diff", str(a), str(b)])
    assert r.exit_code == 0, r.output
    rows = {ln[:35].strip(): ln[35:] for ln in r.output.splitlines() if ln.startswith("deepspeed: ")}
    assert rows["deepspeed: zero_stage"].split() == ["A", "3", "|", "B", "2"]
    assert rows["deepspeed: optimizer offload"].split() == ["A", "cpu", "|", "B", "none"]
    assert rows["deepspeed: overlap_comm"].split() == ["A", "false", "|", "B", "true"]
    assert rows["deepspeed: reduce_bucket_size"].split() == ["A", "1048576", "|", "B", "500000000"]
    assert "deepspeed: bf16 true" in r.output.replace("\n" + " " * 35, " ")  # the same in both
    c = json.loads(CliRunner().invoke(main, ["diff", str(a), str(b), "--json"]).output)
    ds = {d["what"]: (d["a"], d["b"]) for d in c["differences"] if d["area"] == "deepspeed"}
    assert ds["micro_batch"] == ("2", "4") and ds["grad_accumulation"] == ("4", "2")


@pytest.mark.parametrize("sample", ["ds_zero3_offload_1x2", "ds_zero2_1x2"])
def test_the_block_leaves_no_line_of_it_unknown(sample):
    from tracekit.ingest import unknown_lines

    unknown = unknown_lines([SAMPLES / sample])
    assert not unknown.filter(pl.col("raw").str.contains(r"config\.py:\d+:print|^    \"|^\}$")).height
