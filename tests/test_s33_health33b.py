"""Session 33b, health33b: a line that opens on its epoch, then ``| key: number`` fields, read as that epoch.

Covers parsers/series.EPOCH_FIELDS: the PyTorch DDP tutorial's per-rank ``[RANK 3] Epoch 49 | Batchsize: 32 |
Steps: 8`` (multinode.py's ``[GPU{rank}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {len(train_data)}``), printed
once by each rank, is a ``step`` of that rank at the epoch (its ``Steps:`` is the batches of one epoch, never
the step: dv50-006's ``Steps: 60 | Loss: inf`` was read as step 60), and the lines are no longer unknown;
DeepSpeed-Chat's ``epoch: 0|step: 391|...`` printed once keeps its step field's reading (no epoch step).
Lines are quoted from dev excerpts dv28-012 (DDP on Slurm), dv50-006 (progen DDP) and dv33-005 (DeepSpeed-Chat).
"""

from __future__ import annotations

import polars as pl

from tests.factory import events_of, text_store
from tracekit.ingest import unknown_lines
from tracekit.schema import EventKind

#: dv28-012: three ranks' last epoch, one line each
DDP_EPOCHS = ("[RANK 3] Epoch 49 | Batchsize: 32 | Steps: 8\n"
              "[RANK 5] Epoch 49 | Batchsize: 32 | Steps: 8\n"
              "[RANK 4] Epoch 49 | Batchsize: 32 | Steps: 8\n")

#: dv50-006: the tutorial's line with the loss after it, once per rank (its `Steps: 60` no step)
DDP_LOSS = ("[GPU16] Epoch 49 | Batchsize: 4 | Steps: 60 | Loss: inf\n"
            "[GPU17] Epoch 49 | Batchsize: 4 | Steps: 60 | Loss: inf\n")

#: dv33-005: DeepSpeed-Chat's step line, its step a field
DS_CHAT = ("epoch: 0|step: 391|ppo_ep: 1|act_loss: 0.013671875|cri_loss: 0.0109710693359375|"
           "unsuper_loss: 0.0\n")


def _steps(tmp_path, text):
    steps = events_of(text_store(tmp_path, text), EventKind.STEP)
    return sorted(zip(steps["rank"].to_list(), steps["step"].to_list()))


def test_ddp_tutorial_epoch_is_each_ranks_step(tmp_path):
    assert _steps(tmp_path, DDP_EPOCHS) == [(3, 49), (4, 49), (5, 49)]


def test_ddp_tutorial_lines_are_not_unknown(tmp_path):
    path = tmp_path / "job.log"
    path.write_text(DDP_EPOCHS)
    assert unknown_lines([path]).height == 0


def test_steps_field_of_the_tutorial_is_no_step(tmp_path):
    assert _steps(tmp_path, DDP_LOSS) == [(16, 49), (17, 49)]


def test_a_step_field_keeps_its_own_reading(tmp_path):
    steps = events_of(text_store(tmp_path, DS_CHAT), EventKind.STEP)
    assert 0 not in steps.filter(pl.col("step").is_not_null())["step"].to_list()
