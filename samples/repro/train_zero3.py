"""Continued pre-training of a tiny Qwen3 with DeepSpeed ZeRO-3, parameters and optimizer offloaded
to CPU as ms-swift's ``--deepspeed zero3_offload`` does, in an HF-Trainer-like loop (gradient
accumulation, periodic eval, logged steps). Runs on CPU (gloo) or GPUs (NCCL), under ``tracekit run``.

Model: Qwen3Config scaled down (no downloads); data: random token ids made here. One fault per
TK_SCENARIO, each standing for a cause in ../shared/case/README.md:

healthy        every rank runs every micro-batch and eval batch
divergence     the last rank runs one micro-batch fewer in step 2 (a shorter dataset copy on node 1):
               from there its ZeRO-3 all-gathers and reduce-scatters pair with the wrong ones -> hang
wandb_stall    rank 0 blocks before the first step, the way a wandb.init without network does
               (not with WANDB_MODE=offline, the fix)
crash          the last rank raises at step 2 (a crashed rank on node 1)
slow           TK_SLOW_REPEAT big all-gathers per micro-step (TK_SLOW_NUMEL floats): progresses, slowly
bench          no training: an all_reduce / all_gather sweep over message sizes, printed as
               DeepSpeed's comms logger prints it (time, msg size, algbw, busbw)

Settings: TK_STEPS (8), TK_ACCUM (2), TK_EVAL_EVERY (4), TK_HIDDEN (128), TK_LAYERS (2),
TK_TIMEOUT_S (collective timeout, 60), TK_PROFILE (1: a torch.profiler window of steps 2-3),
TK_ZERO_STAGE (3; 2 drops parameter partitioning and offload: the fix for the slow scenario).
"""

import datetime
import json
import os
import time
from pathlib import Path

import warnings

import torch
import torch.distributed as dist

ENV = os.environ
SCENARIO = ENV.get("TK_SCENARIO", "healthy")
RANK, WORLD = int(ENV["RANK"]), int(ENV["WORLD_SIZE"])
OUT = Path(ENV.get("TRACEKIT_RUN_DIR") or ENV.get("TK_OUT", "."))
GPU = torch.cuda.is_available()
STEPS, ACCUM, EVAL_EVERY = int(ENV.get("TK_STEPS", 8)), int(ENV.get("TK_ACCUM", 2)), int(ENV.get("TK_EVAL_EVERY", 4))
SEQ = 64
warnings.filterwarnings("ignore", category=FutureWarning)  # torch deprecations DeepSpeed triggers per call
CONFIG = Path(__file__).with_name("zero3_offload.json")


def log(obj) -> None:
    if RANK == 0:
        print(obj, flush=True)


def bench() -> None:
    """all_reduce and all_gather from 4 KB to 256 MB (64 MB on CPU), DeepSpeed comms-logger lines."""
    dev = torch.device("cuda", int(ENV.get("LOCAL_RANK", 0))) if GPU else torch.device("cpu")
    top = 28 if GPU else 26
    for op in ("all_reduce", "all_gather"):
        for p in range(12, top + 1, 2):
            n = (1 << p) // 4
            x = torch.ones(n, device=dev)
            outs = [torch.empty_like(x) for _ in range(WORLD)]
            fn = (lambda: dist.all_reduce(x)) if op == "all_reduce" else (lambda: dist.all_gather(outs, x))
            for _ in range(2):
                fn()
            if GPU:
                torch.cuda.synchronize()
            reps = 5
            t = time.perf_counter()
            for _ in range(reps):
                fn()
            if GPU:
                torch.cuda.synchronize()
            ms = (time.perf_counter() - t) * 1000 / reps
            size = n * 4 * (WORLD if op == "all_gather" else 1)
            algbw = size * 8 / (ms / 1000) / 1e9
            factor = 2 * (WORLD - 1) / WORLD if op == "all_reduce" else (WORLD - 1) / WORLD
            log(f"comm op: {op} | time (ms): {ms:.3f} | msg size: {size / 2**20:.3f} MB | "
                f"algbw (Gbps): {algbw:.2f} | busbw (Gbps): {algbw * factor:.2f}")


def main() -> None:
    import deepspeed
    from transformers import Qwen3Config, Qwen3ForCausalLM

    timeout = datetime.timedelta(seconds=float(ENV.get("TK_TIMEOUT_S", 60)))
    deepspeed.init_distributed(dist_backend="nccl" if GPU else "gloo", timeout=timeout)
    if SCENARIO == "bench":
        bench()
        dist.barrier()
        dist.destroy_process_group()
        return
    hidden = int(ENV.get("TK_HIDDEN", 128))
    cfg = Qwen3Config(vocab_size=512, hidden_size=hidden, intermediate_size=hidden * 3, num_hidden_layers=int(ENV.get("TK_LAYERS", 2)),
                      num_attention_heads=4, num_key_value_heads=2, head_dim=hidden // 4, max_position_embeddings=SEQ * 2)
    ds = json.loads(CONFIG.read_text())
    ds.update(train_micro_batch_size_per_gpu=1, gradient_accumulation_steps=ACCUM, train_batch_size=ACCUM * WORLD)
    ds["bf16"] = {"enabled": GPU}
    if ENV.get("TK_ZERO_STAGE") == "2":  # the fix for a slow link: no parameter all-gathers, no param offload
        z = ds["zero_optimization"]
        ds["zero_optimization"] = {"stage": 2, "offload_optimizer": z["offload_optimizer"], "overlap_comm": False,
                                   "contiguous_gradients": True, "reduce_bucket_size": z["reduce_bucket_size"]}
    if not GPU:
        ds["zero_optimization"]["offload_optimizer"]["pin_memory"] = False  # no pinned memory without CUDA
        if "offload_param" in ds["zero_optimization"]:
            ds["zero_optimization"]["offload_param"]["pin_memory"] = False
    if ds["zero_optimization"]["stage"] == 3:
        with deepspeed.zero.Init(config_dict_or_path=ds):
            model = Qwen3ForCausalLM(cfg)
    else:
        model = Qwen3ForCausalLM(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    engine, *_ = deepspeed.initialize(model=model, optimizer=opt, config=ds)
    gen = torch.Generator().manual_seed(RANK)
    batch = lambda: torch.randint(0, cfg.vocab_size, (1, SEQ), generator=gen).to(engine.device)  # noqa: E731
    log(f"***** Running training ***** world_size={WORLD} steps={STEPS} accum={ACCUM} scenario={SCENARIO}")
    if SCENARIO == "wandb_stall" and RANK == 0 and ENV.get("WANDB_MODE") != "offline":
        time.sleep(float(ENV.get("TK_STALL_S", 3600)))  # stands in for wandb.init() with no network
    prof = None
    if ENV.get("TK_PROFILE", "1") == "1":
        acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if GPU else [])
        prof = torch.profiler.profile(activities=acts, schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1))
        prof.start()
    big = torch.ones(int(ENV.get("TK_SLOW_NUMEL", 8 << 20)), device=engine.device) if SCENARIO == "slow" else None
    gathered = torch.empty(big.numel() * WORLD, device=engine.device) if big is not None else None
    for step in range(1, STEPS + 1):
        t0 = time.perf_counter()
        short = SCENARIO == "divergence" and step == 2 and RANK == WORLD - 1
        for _ in range(ACCUM - short):
            ids = batch()
            loss = engine(input_ids=ids, labels=ids).loss
            engine.backward(loss)
            engine.step()
            for _ in range(int(ENV.get("TK_SLOW_REPEAT", 3)) if big is not None else 0):
                dist.all_gather_into_tensor(gathered, big)  # a layer's parameters, as ZeRO-3 gathers them
        if SCENARIO == "crash" and step == 2 and RANK == WORLD - 1:
            raise RuntimeError(f"simulated failure on rank {RANK} at step {step}")
        log({"loss": round(float(loss.detach()), 4), "grad_norm": 0.0, "learning_rate": 1e-4, "epoch": 0.0,
             "global_step/max_steps": f"{step}/{STEPS}", "elapsed_s": round(time.perf_counter() - t0, 3)})
        if step % EVAL_EVERY == 0:
            with torch.no_grad():
                losses = [engine(input_ids=(ids := batch()), labels=ids).loss for _ in range(2)]
                ev = torch.stack(losses).mean().reshape(1)
                dist.all_reduce(ev)
            log({"eval_loss": round(float(ev) / WORLD, 4), "global_step/max_steps": f"{step}/{STEPS}"})
        if prof:
            prof.step()
    if prof:
        prof.stop()
        prof.export_chrome_trace(str(OUT / f"kineto_rank{RANK}.json"))
    dist.barrier()
    log({"train_runtime": 0.0, "global_step/max_steps": f"{STEPS}/{STEPS}"})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
