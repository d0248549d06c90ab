"""Real ms-swift runs (`swift pt`, DeepSpeed ZeRO-3 offload, tiny Qwen3, CPU gloo ranks) captured
with samples/repro/swift/run.sh under `tracekit run`: 1x4, 2x2 in two network namespaces over
IPv6, 2x2 with `--report_to wandb` on nodes without a network (the reported hang), and its fix."""

import polars as pl

from tests.conftest import ROOT, copy_sample
from tracekit.diff import compare
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide


def load(name):
    return ingest([ROOT / "samples" / name])


def test_swift_2x2_with_wandb_offline_network_is_a_deadlock_on_rank_0_in_wandb_init():
    s = load("swift_2x2_wandb")
    v = decide(s)
    assert v.kind == Kind.DEADLOCK and v.ranks == [0], v.summary
    assert "wandb/" in v.summary  # the innermost frame outside the standard library, not Condition.wait
    assert "ranks 1-3 wait in it" in v.summary
    assert any("wandb_init.py" in e or "wandb.errors" in e for e in v.evidence), v.evidence
    # nobody made a training step: the hang is right after start-up, as reported
    assert s.events.filter(pl.col("kind") == "step").height == 0


def test_swift_runs_that_train_are_healthy_and_log_their_steps():
    for name, nodes in [("swift_1x4_healthy", 1), ("swift_2x2_healthy", 2), ("swift_2x2_wandb_fixed", 2)]:
        s = load(name)
        assert decide(s).kind == Kind.HEALTHY, name
        assert sorted(s.ranks["rank"].drop_nulls().unique().to_list()) == [0, 1, 2, 3], name
        assert s.ranks["node"].drop_nulls().n_unique() == nodes, name
        steps = s.events.filter(pl.col("kind") == "step")
        assert steps.height == 6 and steps["loss"].is_not_null().all(), (name, steps)


def test_swift_diff_2x2_against_1x4_names_the_layout_first():
    d = compare(load("swift_1x4_healthy"), load("swift_2x2_healthy")).differences
    assert (d[0].area, d[0].what, d[0].a, d[0].b) == ("layout", "nodes", "1", "2"), d[:3]
    assert any(x.what == "GLOO_SOCKET_IFNAME" and (x.a, x.b) == ("lo", "eth0") for x in d), d


def test_summary_counts_fake_nodes_that_share_a_host_name():
    from tracekit.reports import summary
    from tracekit.view import Summary

    s = load("swift_2x2_healthy")
    out = Summary.build(s, decide(s))
    assert out.ranks["nodes"] == 2 and out.ranks["hosts"] == ["vm"]
    assert "2 node(s) on 1 host(s): vm" in summary.render(out)


def test_swift_argument_dump_becomes_train_arg_events_and_diff_names_report_to():
    s = load("swift_2x2_wandb")
    args = dict(m.split("=", 1) for m in s.events.filter(pl.col("kind") == "train_arg")["message"].to_list())
    assert args["report_to"] == "['wandb']" and args["ddp_timeout"] == "45" and args["gradient_accumulation_steps"] == "2"
    rank0 = s.files.filter(pl.col("file").str.contains("/rank0."))
    assert rank0["unknown"][0] < rank0["lines"][0] // 3, rank0  # the argument block is understood, not unknown
    # and in a run that trains: HF's [transformers] lines, Python warnings with their source lines too
    healthy = load("swift_2x2_healthy").files.filter(pl.col("file").str.contains("/rank0."))
    assert healthy["unknown"][0] < healthy["lines"][0] // 5, healthy
    d = {(x.area, x.what): (x.a, x.b) for x in compare(load("swift_2x2_wandb_fixed"), s).differences}
    assert ("arguments", "report_to") not in d  # the fix kept report_to wandb (offline mode)
    d = {(x.area, x.what): (x.a, x.b) for x in compare(load("swift_2x2_healthy"), s).differences}
    assert d[("arguments", "report_to")] == ("['none']", "['wandb']")


def test_a_store_written_by_other_parser_code_is_ingested_again(tmp_path):
    
    from click.testing import CliRunner

    from tracekit.cli import main

    run = tmp_path / "run"
    copy_sample("swift_2x2_healthy", run)
    assert CliRunner().invoke(main, ["ingest", str(run)]).exit_code == 0
    store = run / ".tracekit"
    assert (store / "made_by.txt").exists()
    (store / "events.parquet").write_bytes(b"stale")  # as if an older tracekit had written it
    assert CliRunner().invoke(main, ["verdict", str(run)]).exit_code == 2  # same code: the store is used (and broken)
    (store / "made_by.txt").write_text("an older tracekit\n")
    r = CliRunner().invoke(main, ["verdict", str(run)])
    assert r.exit_code == 0 and "HEALTHY" in r.output, r.output
