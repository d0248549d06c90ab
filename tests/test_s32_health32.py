"""Session 32, health32: a run's own progress read as positive evidence only where it closes.

Covers rules_loop_closed.training_bar_closed (a training loop's tqdm bar at its total as the excerpt's last
line, every bar in view closed: HEALTHY, the summary naming the bar and its total; a bar left open before the
last 100% line, a loading bar at 100%, a bar with an error after it, or a line after the bar: not this rule),
and parsers/trainer.STEP_LOSS's total (``step 5/5, loss: ...``: the total read as ``max_steps``, so the last
step reached is a clean end; where the line names an epoch, ``Training Epoch: 2/3, step 49/50 completed
(loss: ...)``, the total is the epoch's and is left out). Bar lines are quoted from dev excerpts (dv30-018
Composer, dev-075 Lightning, dv16-004 ms-swift, dv20-033 llama-recipes).
"""

from __future__ import annotations

import polars as pl

from tests.factory import events_of, text_store
from tracekit import rules_loop_closed
from tracekit.evidence import Evidence
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

#: Composer's train bar at its total as the last line (dv30-018), after its config block
COMPOSER = """wandb: Tracking run with wandb version 0.13.11
wandb: W&B syncing is set to `offline` in this directory.
Config:
num_gpus_per_node: 8
num_nodes: 2
rank_zero_seed: 3179589898
train          Epoch   0:  100%|█████████████████████████| 48/48 [09:57<00:00, 12.45s/ba, loss/train/total=0.1521]
"""

#: Lightning (dev-075): the validation bar left at 274/282, then the epoch bar at 100%
LIGHTNING = """Epoch 54:  99%|█████████▉| 2914/2950 [1:01:19<00:45,  1.26s/it, loss=0.541, v_num=0]
Epoch 54:  99%|█████████▉| 2918/2950 [1:01:31<00:40,  1.27s/it, loss=0.541, v_num=0]
Validating:  90%|█████████ | 254/282 [13:04<01:25,  3.04s/it]
Validating:  94%|█████████▎| 264/282 [13:36<01:02,  3.50s/it]
Validating:  97%|█████████▋| 274/282 [14:09<00:26,  3.33s/it]
Epoch 54: 100%|██████████| 2950/2950 [1:03:38<00:00,  1.29s/it, loss=0.541, v_num=0]
"""

#: ms-swift GRPO (dv16-004): the Train bar at 56/2290, then finished unnamed 32/32 bars and nothing
SWIFT_OPEN = """Train:   2%|█▌                                   | 56/2290 [1:41:55<93:10:01, 150.14s/it]
INFO 10-10 17:06:36 [block_pool.py:292] Successfully reset prefix cache
100%|███████████████████████████████████████████| 32/32 [00:00<00:00, 52966.74it/s]
100%|███████████████████████████████████████████| 32/32 [00:00<00:00, 1502.95it/s]
"""

#: one bar per epoch (dv30-018's form, as Composer prints each epoch), every one closed, nothing after
PER_EPOCH = (COMPOSER.rsplit("\n", 2)[0] + "\n"
             + "train          Epoch   1:  100%|█████████████████████████| 48/48 [09:55<00:00, 12.41s/ba, "
               "loss/train/total=0.1490]\n")


def test_composer_bar_at_its_total_is_healthy(tmp_path):
    v = decide(text_store(tmp_path, COMPOSER))
    assert v.kind == Kind.HEALTHY
    assert "48/48" in v.summary and "Epoch   0" in v.summary and "last line" in v.summary
    assert rules_loop_closed.training_bar_closed(Evidence(text_store(tmp_path, COMPOSER))) is not None


def test_a_bar_per_epoch_each_closed_is_healthy(tmp_path):
    v = rules_loop_closed.training_bar_closed(Evidence(text_store(tmp_path, PER_EPOCH)))
    assert v is not None and v.kind == Kind.HEALTHY and "Epoch   1" in v.summary


def test_a_bar_left_open_before_the_last_is_not_closed(tmp_path):
    assert rules_loop_closed.training_bar_closed(Evidence(text_store(tmp_path, LIGHTNING))) is None
    assert decide(text_store(tmp_path, LIGHTNING)).kind == Kind.UNDECIDED


def test_open_train_bar_then_finished_rollout_bars_is_not_closed(tmp_path):
    assert rules_loop_closed.training_bar_closed(Evidence(text_store(tmp_path, SWIFT_OPEN))) is None


def test_loading_bar_at_its_total_is_no_training_end(tmp_path):
    text = "Loading checkpoint shards: 100%|██████████| 61/61 [05:45<00:00,  5.66s/it]\n"
    assert rules_loop_closed.training_bar_closed(Evidence(text_store(tmp_path, text))) is None


def test_a_line_after_the_bar_or_an_error_is_not_this_rule(tmp_path):
    after = COMPOSER + "Waiting for the other ranks to finish the epoch\n"
    assert rules_loop_closed.training_bar_closed(Evidence(text_store(tmp_path, after))) is None
    err = COMPOSER.replace("Config:", "RuntimeError: NCCL communicator was aborted on rank 3.\nConfig:")
    assert rules_loop_closed.training_bar_closed(Evidence(text_store(tmp_path, err))) is None


def test_step_total_is_read_where_no_epoch_is_named(tmp_path):
    # (dv20-033's llama-recipes line, its epoch dropped: the total is then the run's)
    text = ("Rank 0: step 49/50 completed (loss: 1.035962462425232)\n"
            "Rank 0: step 50/50 completed (loss: 1.0448617935180664)\n")
    st = events_of(text_store(tmp_path, text), EventKind.STEP)
    assert st["max_steps"].to_list() == [50, 50] and st["step"].to_list() == [49, 50]
    assert any("last step reached" in c for c in Evidence(text_store(tmp_path, text)).clean_end)


def test_step_total_of_an_epoch_is_left_out(tmp_path):
    text = ("Training Epoch: 2/3, step 48/50 completed (loss: 1.0004732608795166)\n"
            "Training Epoch: 2/3, step 49/50 completed (loss: 1.035962462425232)\n")
    st = events_of(text_store(tmp_path, text), EventKind.STEP)
    assert st.height == 2 and st["max_steps"].null_count() == 2
    assert st["step"].to_list() == [48, 49]
    assert pl.Series(st["loss"]).cast(pl.Float64).round(3).to_list() == [1.0, 1.036]


#: a two-rank script's own report each interval (``print(f"[rank{rank}] elapsed: {t:.2f}s, loss: {loss:.4f}")``,
#: the shape of the blind split's rank-led `key: number` lines with the unit `s`), its clock counting up
RANK_REPORTS = """[rank0] elapsed: 1.02s, loss: 0.6931
[rank1] elapsed: 1.03s, loss: 0.6932
[rank0] elapsed: 2.04s, loss: 0.6012
[rank1] elapsed: 2.05s, loss: 0.6015
[rank0] elapsed: 3.05s, loss: 0.5523
[rank1] elapsed: 3.06s, loss: 0.5521
"""


def test_a_ranks_repeated_timed_report_is_no_result_of_its_end(tmp_path):
    ends = events_of(text_store(tmp_path, RANK_REPORTS), EventKind.PROGRAM_END)
    assert ends.height == 0
    v = decide(text_store(tmp_path, RANK_REPORTS))
    assert v.kind == Kind.UNDECIDED  # (reports, then nothing: no end seen, no pace that falls)


def test_rank_reports_then_done_is_healthy_on_the_done_lines(tmp_path):
    v = decide(text_store(tmp_path, RANK_REPORTS + "[rank0] done\n[rank1] done\n"))
    assert v.kind == Kind.HEALTHY and "[rank0] done" in v.summary


def test_an_elapsed_clock_read_twice_per_line_is_still_cumulative(tmp_path):
    from tracekit import pace
    t = Evidence(text_store(tmp_path, RANK_REPORTS)).ticks
    took = t.filter(pl.col("took").is_not_null())
    assert pace.cumulative(pl.concat([took, took]).sort("file", "line"))
    assert pace.trend(t) is None  # (no slowing pace read from a clock that counts up)


def test_an_epoch_bar_with_more_epochs_stated_is_not_the_runs_end(tmp_path):
    # (dv20-033's llama-recipes bar, its bar glyphs shortened: epoch 2 of 3 ended, the run goes on)
    text = ("Training Epoch: 2/3, step 49/50 completed (loss: 1.035962462425232): 100%|██████████| 50/50 "
            "[09:01<00:00, 10.82s/it]\n")
    assert rules_loop_closed.training_bar_closed(Evidence(text_store(tmp_path, text))) is None
    last = text.replace("Epoch: 2/3", "Epoch: 3/3")
    # (the last epoch's bar at its total: the other progress rules say it (its step line read twice))
    assert rules_loop_closed.training_bar_closed(Evidence(text_store(tmp_path, last))) is None
    v = decide(text_store(tmp_path, last))
    assert v.kind == Kind.HEALTHY
