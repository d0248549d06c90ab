"""An HF Trainer run on CPU: a tiny Qwen3 (built from a config, no downloads) trained data-parallel
over gloo on random token ids, with gradient accumulation. Used to check the profiler callback:
under ``tracekit run --profile-steps WAIT:ACTIVE -- torchrun ... hf_trainer.py`` each rank writes
a Kineto trace of its steps without a line of this script knowing.

Env: TK_STEPS (default 8) optimizer steps, TK_OUT the output folder (default the run folder).
"""

import os

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM, Trainer, TrainingArguments

SEQ = 32


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 512, (n, SEQ), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def main():
    steps = int(os.environ.get("TK_STEPS", 8))
    world = int(os.environ.get("WORLD_SIZE", 1))
    cfg = Qwen3Config(vocab_size=512, hidden_size=64, intermediate_size=192, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=SEQ * 2)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(cfg)
    out = os.environ.get("TK_OUT") or os.environ.get("TRACEKIT_RUN_DIR") or "hf-out"
    args = TrainingArguments(output_dir=os.path.join(out, "trainer"), per_device_train_batch_size=2,
                             gradient_accumulation_steps=2, max_steps=steps, learning_rate=1e-4, logging_steps=1,
                             save_strategy="no", report_to="none", use_cpu=True, ddp_backend="gloo",
                             dataloader_num_workers=0, disable_tqdm=True)
    Trainer(model=model, args=args, train_dataset=Tokens(4 * 2 * world * steps)).train()
    if torch.distributed.is_initialized():  # else gloo's threads may abort the exit (SIGABRT)
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
