"""Continued pre-training of a Qwen3-4B-shaped model as ms-swift's ``swift pt --deepspeed zero3_offload``
runs it, without ms-swift: the settings its HF Trainer would hand DeepSpeed, resolved here.

- Model: Qwen3-4B's shapes (36 layers, hidden 2560, intermediate 9728, 32 heads, 8 KV heads of 128,
  vocab 151936, tied embeddings, rope theta 1e6), random weights built from the config under
  ``deepspeed.zero.Init`` (no download), sdpa attention, bf16.
- DeepSpeed: ms-swift's zero3_offload settings (parameters and optimizer offloaded to pinned CPU
  memory, overlap_comm false, contiguous gradients, sub_group_size 1e9, max live parameters and reuse
  distance 1e9, steps_per_print 2000), the ``auto`` entries resolved as transformers resolves them
  (reduce bucket hidden^2, prefetch bucket 0.9 hidden^2, persistence threshold 10 hidden, gradient
  clipping from max_grad_norm 1.0). TK_ZERO_STAGE=2: ms-swift's zero2_offload instead.
- Optimizer: HF's AdamW (decay / no-decay groups, lr 1e-5, weight decay 1e-4), which accelerate
  replaces by DeepSpeedCPUAdam (adamw mode) when the optimizer is offloaded; torch's AdamW where
  DeepSpeed's CPU Adam cannot be built (printed).
- Gradient checkpointing as ms-swift sets it with DeepSpeed: reentrant, inputs requiring grad,
  use_cache off. Micro batch 1, gradient accumulation TK_ACCUM (8), TK_STEPS optimizer steps, random
  token ids of TK_SEQ (32768) tokens; no eval before step 10 (the report evaluates every 10 steps).

Prints HF's training banner, one line per micro-step (time since this process started, forward and
backward, engine.step) and one ms-swift-style log line per optimizer step, with the time spent in the
CPU optimizer, and at the end the peak GPU memory and resident host memory of this rank.
"""

import time

T0 = time.time()  # before torch and DeepSpeed are imported: time to first step counts from here

import datetime  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import warnings  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

ENV = os.environ
RANK, WORLD = int(ENV["RANK"]), int(ENV["WORLD_SIZE"])
STEPS, ACCUM, SEQ = int(ENV.get("TK_STEPS", 2)), int(ENV.get("TK_ACCUM", 8)), int(ENV.get("TK_SEQ", 32768))
STAGE = int(ENV.get("TK_ZERO_STAGE", 3))
GPU = torch.cuda.is_available()
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning, module="torch.utils.checkpoint")

# Qwen3-4B(-Base) config.json; TK_LAYERS / TK_HIDDEN / TK_VOCAB shrink it for a CPU check of this script
QWEN3_4B = dict(vocab_size=151936, hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                num_attention_heads=32, num_key_value_heads=8, head_dim=128, tie_word_embeddings=True,
                rope_theta=1000000.0, rms_norm_eps=1e-6, max_position_embeddings=40960)


def log(obj) -> None:
    if RANK == 0:
        print(obj, flush=True)


def since() -> float:
    return round(time.time() - T0, 2)


def model_config():
    from transformers import Qwen3Config

    shape = dict(QWEN3_4B)
    for key, env in (("num_hidden_layers", "TK_LAYERS"), ("hidden_size", "TK_HIDDEN"), ("vocab_size", "TK_VOCAB")):
        if env in ENV:
            shape[key] = int(ENV[env])
    if "TK_HIDDEN" in ENV:
        shape.update(intermediate_size=shape["hidden_size"] * 3, head_dim=shape["hidden_size"] // 32)
    return Qwen3Config(**shape, use_cache=False, attn_implementation="sdpa")


def ds_config(hidden: int) -> dict:
    """ms-swift's zero3_offload (or zero2_offload), with HF's resolution of its ``auto`` entries."""
    offload = {"device": "cpu", "pin_memory": GPU}  # no pinned memory without CUDA
    if STAGE == 3:
        zero = {"stage": 3, "offload_optimizer": offload, "offload_param": dict(offload), "overlap_comm": False,
                "contiguous_gradients": True, "sub_group_size": 1e9, "reduce_bucket_size": hidden * hidden,
                "stage3_prefetch_bucket_size": int(0.9 * hidden * hidden),
                "stage3_param_persistence_threshold": 10 * hidden, "stage3_max_live_parameters": 1e9,
                "stage3_max_reuse_distance": 1e9, "stage3_gather_16bit_weights_on_model_save": True}
        if ENV.get("TK_HPZ"):
            zero["zero_hpz_partition_size"] = int(ENV["TK_HPZ"])
    else:
        zero = {"stage": 2, "offload_optimizer": offload, "allgather_partitions": True, "allgather_bucket_size": 2e8,
                "overlap_comm": False, "reduce_scatter": True, "reduce_bucket_size": 2e8, "contiguous_gradients": True}
    return {"bf16": {"enabled": GPU}, "zero_optimization": zero, "gradient_accumulation_steps": ACCUM,
            "gradient_clipping": 1.0, "steps_per_print": 2000, "train_micro_batch_size_per_gpu": 1,
            "train_batch_size": ACCUM * WORLD, "wall_clock_breakdown": False, "zero_allow_untested_optimizer": True}


def optimizer(model, ds: dict):
    """HF Trainer's AdamW groups; accelerate swaps in DeepSpeedCPUAdam when the optimizer is offloaded."""
    decay = [p for n, p in model.named_parameters() if p.requires_grad and "norm" not in n and "bias" not in n]
    rest = [p for n, p in model.named_parameters() if p.requires_grad and ("norm" in n or "bias" in n)]
    groups = [{"params": decay, "weight_decay": 1e-4}, {"params": rest, "weight_decay": 0.0}]
    torch_adamw = torch.optim.AdamW(groups, lr=1e-5, weight_decay=1e-4)
    if ENV.get("TK_OPTIMIZER", "ds_cpu_adam") == "ds_cpu_adam":
        t = time.time()
        try:
            from deepspeed.ops.adam import DeepSpeedCPUAdam

            opt = DeepSpeedCPUAdam(torch_adamw.param_groups, lr=1e-5, weight_decay=1e-4, adamw_mode=True)
            log(f"[tk] optimizer DeepSpeedCPUAdam (adamw_mode), built/loaded in {time.time() - t:.1f} s")
            return opt
        except Exception as e:  # no compiler or headers: the reporter's would have built; say so
            log(f"[tk] optimizer DeepSpeedCPUAdam unavailable ({type(e).__name__}: {str(e)[:200]}); torch AdamW")
    ds["zero_force_ds_cpu_optimizer"] = False
    log("[tk] optimizer torch.optim.AdamW")
    return torch_adamw


class Timed:
    """Wraps an optimizer's step to add up the seconds spent in it (the CPU optimizer under offload)."""

    def __init__(self, opt):
        self.total, self.step = 0.0, opt.step

        def step(*args, **kwargs):
            t = time.perf_counter()
            try:
                return self.step(*args, **kwargs)
            finally:
                self.total += time.perf_counter() - t

        opt.step = step


def main() -> None:
    import deepspeed
    from transformers import Qwen3ForCausalLM

    timeout = datetime.timedelta(seconds=float(ENV.get("TK_TIMEOUT_S", 1800)))
    deepspeed.init_distributed(dist_backend="nccl" if GPU else "gloo", timeout=timeout)
    cfg = model_config()
    ds = ds_config(cfg.hidden_size)
    t = time.time()
    if STAGE == 3:
        with deepspeed.zero.Init(config_dict_or_path=ds):
            model = Qwen3ForCausalLM(cfg)
    else:
        with torch.device(f"cuda:{int(ENV.get('LOCAL_RANK', 0))}" if GPU else "cpu"):  # built where it trains
            model = Qwen3ForCausalLM(cfg).to(torch.bfloat16 if GPU else torch.float32)
    n_params = sum(getattr(p, "ds_numel", p.numel()) for p in model.parameters())
    log(f"[tk] model Qwen3 {cfg.num_hidden_layers} layers hidden {cfg.hidden_size}: {n_params / 1e9:.3f} B parameters, "
        f"built in {time.time() - t:.1f} s (since start {since()} s)")
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    model.enable_input_require_grads()
    opt = optimizer(model, ds)
    timed = Timed(opt)
    t = time.time()
    engine, *_ = deepspeed.initialize(model=model, optimizer=opt, config=ds)
    log(f"[tk] deepspeed.initialize {time.time() - t:.1f} s (since start {since()} s), ZeRO stage {STAGE}, "
        f"world size {WORLD}, seq {SEQ}")
    gen = torch.Generator().manual_seed(RANK)
    log("***** Running training *****")
    log(f"  Gradient Accumulation steps = {ACCUM}")
    log(f"  Total optimization steps = {STEPS}")
    log(f"  Number of trainable parameters = {n_params}")
    micro = 0
    for step in range(1, STEPS + 1):
        t_step, opt_before = time.perf_counter(), timed.total
        for _ in range(ACCUM):
            ids = torch.randint(0, cfg.vocab_size, (1, SEQ), generator=gen).to(engine.device)
            t = time.perf_counter()
            loss = engine(input_ids=ids, labels=ids).loss
            engine.backward(loss)
            t_bwd = time.perf_counter()
            engine.step()
            if GPU:
                torch.cuda.synchronize()
            micro += 1
            log({"micro_step": micro, "fwd_bwd_s": round(t_bwd - t, 3), "engine_step_s": round(time.perf_counter() - t_bwd, 3),
                 "since_start_s": since()})
        norm = engine.get_global_grad_norm()
        log({"loss": round(float(loss.detach()), 4), "grad_norm": round(float(norm or 0.0), 4), "learning_rate": 1e-5,
             "epoch": 0.0, "global_step/max_steps": f"{step}/{STEPS}", "elapsed_s": round(time.perf_counter() - t_step, 2),
             "cpu_optimizer_s": round(timed.total - opt_before, 3), "since_start_s": since()})
    peak = torch.cuda.max_memory_allocated() / 2**30 if GPU else 0.0
    reserved = torch.cuda.max_memory_reserved() / 2**30 if GPU else 0.0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    print(f"[tk] rank {RANK} peak GPU memory allocated {peak:.1f} GiB, reserved {reserved:.1f} GiB; "
          f"peak resident host memory {rss:.1f} GiB; cpu optimizer {timed.total:.1f} s in {STEPS} step(s)", flush=True)
    dist.barrier()
    log({"train_runtime": round(time.time() - T0, 1), "global_step/max_steps": f"{STEPS}/{STEPS}"})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
