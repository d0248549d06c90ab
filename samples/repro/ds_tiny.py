"""A tiny model under DeepSpeed on CPU (gloo): its start-up prints DeepSpeedEngine's configuration block."""
import json
import os
import sys

import torch
import deepspeed
from deepspeed.utils.logging import set_log_level_from_string

set_log_level_from_string("info")  # DeepSpeed 0.17+ logs at WARNING by default: its configuration is INFO

cfg = json.load(open(sys.argv[1]))
model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Linear(16, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
engine, *_ = deepspeed.initialize(model=model, optimizer=opt, config=cfg)
x = torch.randn(2, 16)
for step in range(2):
    loss = engine(x.to(engine.device, dtype=next(engine.parameters()).dtype)).float().pow(2).mean()
    engine.backward(loss)
    engine.step()
print("done", flush=True)

# samples/ds_zero3_offload_1x2 and samples/ds_zero2_1x2 were made with (torch 2.13 CPU, DeepSpeed 0.19.8):
#   DS_ACCELERATOR=cpu torchrun --nproc-per-node=2 ds_tiny.py ds_tiny_zero3_offload.json > torchrun.log 2>&1
#   DS_ACCELERATOR=cpu torchrun --nproc-per-node=2 ds_tiny.py ds_tiny_zero2.json > torchrun.log 2>&1
