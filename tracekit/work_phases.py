"""The phases a training program announces that run outside any collective -- an evaluation, a
checkpoint's save -- as data: each pattern with the code that prints it and what it means.

A program logs a phase as it begins it (`Saving checkpoint. This may take some time.`, `begin validation
on "valid" subset`) and, where its code says so, as it ends it (`Finished saving checkpoint to ...`). While
one rank is in such a phase it issues no collective; ranks that finished theirs wait in the next collective
for it, and time out there if the phase outlasts the timeout. These loggers print on rank 0 alone
(torchtune's ``log_rank_zero``, Megatron's ``print_rank_0``, DeepSpeed's ``log_dist(..., ranks=[0])``,
the HF Trainer's and Lightning's main-process logging and progress bars), so a phase line with no rank
prefix is rank 0's.

``parsers/torch_log`` turns each line into a ``progress`` event whose ``where`` is the phase's name
(``eval``, ``checkpoint``) or, for its end, that name with ``_end``; ``rules_busy`` reads them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    """One line a program prints at a phase's start or end: its pattern, the phase, whether it ends it,
    the code that prints it (repository, path:line at the commit read)."""

    pattern: str
    phase: str  # "eval" or "checkpoint"
    ends: bool
    source: str


PHASES = (
    # --- evaluation begun ---
    # HF transformers Trainer.evaluation_loop / prediction_loop: logger.info(f"\n***** Running {description}
    # *****") with description "Evaluation" (src/transformers/trainer.py)
    Phase(r"\*{5} Running Evaluation \*{5}", "eval", False, "huggingface/transformers "
          "src/transformers/trainer.py (evaluation_loop)"),
    # fairseq: logger.info('begin validation on "{}" subset'.format(subset))
    Phase(r'\bbegin validation on "?\w+"? subset', "eval", False,
          "facebookresearch/fairseq fairseq_cli/train.py:472 (3d262bb2)"),
    # a program's own `Evaluating ...` at the start of its line (mmdet's `Evaluating bbox...`, scripts'
    # `Evaluating the results...`): said before the evaluation, whose result line follows it
    Phase(r"^\s*Evaluating\b[^%|]*$", "eval", False, "programs' own print (mmdet coco_metric.py "
          "`logger.info(f'Evaluating {metric}...')`, training scripts)"),
    # --- evaluation ended ---
    # HF Trainer.log of the evaluation's metrics: `{'eval_loss': 1.87, 'eval_runtime': 14.4, ...}`
    Phase(r"\{'eval_\w+': ", "eval", True, "huggingface/transformers src/transformers/trainer.py "
          "(evaluate -> self.log(output.metrics))"),
    # --- checkpoint begun ---
    # torchtune: "Saving checkpoint. This may take some time. Retrieving full model state dict..."
    # (torchtune/training/checkpointing/_checkpoint_client.py:269, recipes/*_distributed.py before the client;
    # bd2a0fc7c), "Saving checkpoint asynchronously. Retrieving full state dict..." (:157)
    Phase(r"\bSaving checkpoint(?: asynchronously)?\. ", "checkpoint", False,
          "pytorch/torchtune torchtune/training/checkpointing/_checkpoint_client.py:157,269 (bd2a0fc7c)"),
    # fairseq: logger.info(f"Saving checkpoint to {os.path.abspath(filename)}"), and before it
    # logger.info(f"Preparing to save checkpoint for epoch {epoch} @ {updates} updates")
    Phase(r"\bSaving checkpoint to \S|\bPreparing to save checkpoint for epoch \d+", "checkpoint", False,
          "facebookresearch/fairseq fairseq/trainer.py:451, fairseq/checkpoint_utils.py:64 (3d262bb2)"),
    # Megatron-LM: print_rank_0(f'[{datetime}] saving checkpoint at iteration {iteration:7d} to {save_dir}
    # in {ckpt_format} format') (older: `saving checkpoint at iteration {:7d} to {}`)
    Phase(r"\bsaving checkpoint at iteration\s+\d+", "checkpoint", False,
          "NVIDIA/Megatron-LM megatron/training/checkpointing.py:694 (d98e8a64dd)"),
    # DeepSpeed: log_dist(f"[Torch] Checkpoint {info.tag} is about to be saved!", ranks=[0]);
    # log_dist(message=f'Saving model checkpoint: {save_path}', ranks=[0])
    Phase(r"\bCheckpoint \S+ is about to be saved!|\bSaving model checkpoint: \S", "checkpoint", False,
          "deepspeedai/DeepSpeed deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py:27, "
          "deepspeed/runtime/engine.py:5263 (edaa72212)"),
    # HF Trainer._save: logger.info(f"Saving model checkpoint to {output_dir}")
    Phase(r"\bSaving model checkpoint to \S", "checkpoint", False,
          "huggingface/transformers src/transformers/trainer.py (_save)"),
    # accelerate: logger.info(f"Saving current state to {output_dir}") (Accelerator.save_state)
    Phase(r"\bSaving current state to \S", "checkpoint", False,
          "huggingface/accelerate src/accelerate/accelerator.py:3649 (16cb6eb8)"),
    # --- checkpoint ended ---
    # torchtune: "Model checkpoint of size {gib:.2f} GiB saved to {output_path}" (and Adapter, Recipe)
    Phase(r"\b(?:Model|Adapter|Recipe) checkpoint of size [\d.]+ \w+ saved to\b|\bModel checkpoint saved to\b",
          "checkpoint", True, "pytorch/torchtune torchtune/training/checkpointing/_checkpointer.py:309,321,"
          "350,905 (bd2a0fc7c)"),
    # fairseq: logger.info(f"Finished saving checkpoint to {os.path.abspath(filename)}")
    Phase(r"\bFinished saving checkpoint to\b", "checkpoint", True,
          "facebookresearch/fairseq fairseq/trainer.py:461 (3d262bb2)"),
    # Megatron-LM: f'  [{datetime}] successfully saved checkpoint from iteration {iteration:7d} to {save_dir}'
    Phase(r"\bsuccessfully saved checkpoint\b", "checkpoint", True,
          "NVIDIA/Megatron-LM megatron/training/checkpointing.py:1086 (d98e8a64dd)"),
    # DeepSpeed: `[Torch] Checkpoint {tag} is ready now!` (torch_checkpoint_engine.py:42, a comment at
    # edaa72212, printed by the releases before it)
    Phase(r"\bCheckpoint \S+ is ready now!", "checkpoint", True,
          "deepspeedai/DeepSpeed deepspeed/runtime/checkpoint_engine/torch_checkpoint_engine.py:42"),
    # accelerate: logger.info(f"Random states saved in {output_states_file}"), save_state's last line
    Phase(r"\bRandom states saved in\b", "checkpoint", True,
          "huggingface/accelerate src/accelerate/checkpointing.py:179 (16cb6eb8)"),
)

#: progress bars of an evaluation loop, by their description (a ``progress`` event's message):
#: Lightning's `Validation DataLoader 0:` (src/lightning/pytorch/callbacks/progress/progress_bar.py:70 and
#: tqdm_progress.py `f"{desc} DataLoader {dataloader_idx}"`, 7f0c3436cd) and `Validating:` before it
#: (pytorch_lightning/callbacks/progress/tqdm_progress.py:232, before e631a66530); HF's `Evaluating:`
EVAL_BAR = r"^\s*(?:Validation DataLoader \d+|Validating|Evaluating)\s*:"


def where(p: Phase) -> str:
    """The ``where`` of a phase line's event: the phase, or ``<phase>_end`` for its end."""
    return f"{p.phase}_end" if p.ends else p.phase
