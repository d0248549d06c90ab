"""The reporter's 2x2 on H20 projected from the Qwen3-4B runs measured on one H200 (samples/gpu_*4b*).

Measured (printed first): the bytes each op moved per micro-step and per optimizer step (tracekit.traffic
on the NCCL COLL lines; ZeRO-3's forward all-gathers told apart from its backward ones by the order of the
calls), the time of a micro-step's forward and backward at 32768 tokens with the GPU to one rank alone
(1x1), the CPU optimizer, start-up, and NET/Socket's bus bandwidth between the two fake nodes.

Projected (the table), per optimizer step of the report's settings (accumulation 8, 32768 tokens):
- compute: the H200's forward+backward time scaled by the two chips' dense bf16 peaks (989 / 148
  TFLOP/s, datasheets): the same share of peak on the H20, an assumption, not a measurement;
- communication over the link between the two nodes: 2x2 is a ring of 4 ranks with 2 of its edges
  between the nodes, so each node's link carries (n-1)/n = 3/4 of every collective's data each way
  (all-reduce twice that); at the link's rate this is a lower bound (NCCL's sockets rarely reach line
  rate; the measured row uses what they reached here, over loopback);
- ZeRO-2 (ms-swift's zero2_offload, measured: an all-reduce of every gradient per micro-step and one
  all-gather of the parameters per optimizer step) and ZeRO++ hpZ (zero_hpz_partition_size 2: the
  backward all-gathers stay inside a node, DeepSpeed's ZeRO++ tutorial says; the forward all-gathers
  and the reduce-scatters still cross) from the same measured bytes;
- no overlap of compute and communication (ms-swift's configs set overlap_comm false).
1x4 keeps every collective inside one node (NVLink on H20): its communication is left out.

Usage: python samples/repro/project_2x2.py
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tracekit import traffic  # noqa: E402
from tracekit.ingest import ingest  # noqa: E402

SAMPLES = ROOT / "samples"
H200_BF16, H20_BF16 = 989.0, 148.0  # dense bf16 TFLOP/s, datasheets
ACCUM, RANKS_2X2 = 8, 4
LINKS = [("sockets, 1 Gbit/s (a management port)", 1), ("sockets, 25 Gbit/s", 25), ("sockets, 100 Gbit/s", 100),
         ("sockets, 200 Gbit/s", 200), ("RDMA, 400 Gbit/s", 400)]


def rank0_lines(sample: str) -> list[str]:
    return next((SAMPLES / sample).glob("rank0.*log")).read_text().splitlines()


def harness(sample: str) -> dict:
    """The harness's own figures from rank 0's log: micro-step and step lines, start-up, peak memory."""
    lines = rank0_lines(sample)
    micro = [dict(re.findall(r"'(\w+)': ([\d.]+)", ln)) for ln in lines if ln.startswith("{'micro_step'")]
    steps = [dict(re.findall(r"'(\w+)': '?([\d.]+)", ln)) for ln in lines if ln.startswith("{'loss'")]
    peak = re.search(r"peak GPU memory allocated ([\d.]+) GiB.*?resident host memory ([\d.]+) GiB", "\n".join(lines))
    params = int(re.search(r"Number of trainable parameters = (\d+)", "\n".join(lines)).group(1))
    init = float(re.search(r"deepspeed.initialize .*?since start ([\d.]+) s", "\n".join(lines)).group(1))
    return {"fwd_bwd": [float(m["fwd_bwd_s"]) for m in micro], "since": [float(m["since_start_s"]) for m in micro],
            "step_s": [float(s["elapsed_s"]) for s in steps], "opt_s": [float(s["cpu_optimizer_s"]) for s in steps],
            "step_at": [float(s["since_start_s"]) for s in steps], "gpu_gib": float(peak.group(1)),
            "rss_gib": float(peak.group(2)), "params": params, "init_s": init}


def zero3_phases(sample: str) -> dict[str, float]:
    """ZeRO-3 data bytes per micro-step, from rank 0's calls in order: the all-gathers before the
    micro-step's first gradient reduce-scatter (the forward, and the backward's first layer), the
    all-gathers after it (the rest of the backward), the reduce-scatters; start-up (every call before
    the first forward) apart. A forward is a run of all-gathers of at least half the model that a
    reduce-scatter follows."""
    s = ingest([SAMPLES / sample])
    c = s.collectives.filter((pl.col("source") == "nccl") & (pl.col("rank") == 0)).sort("seq")
    c = c.with_columns(pl.when(pl.col("op").is_in(["all_gather", "reduce_scatter"])).then(pl.col("bytes") * pl.col("nranks"))
                       .otherwise("bytes").alias("data"),
                       (pl.col("op") != pl.col("op").shift(1)).fill_null(True).cum_sum().alias("run"))
    runs = c.group_by("run", maintain_order=True).agg(pl.col("op").first(), pl.col("data").sum(), pl.col("seq").first())
    model = harness(sample)["params"] * 2
    forwards = runs.filter((pl.col("op") == "all_gather") & (pl.col("data") >= model / 2)
                           & (pl.col("op").shift(-1) == "reduce_scatter"))
    first, n_micro = forwards["seq"].min(), forwards.height
    train = c.filter(pl.col("seq") >= first)
    ag = train.filter(pl.col("op") == "all_gather")["data"].sum()
    return {"micro_steps": n_micro, "model": model, "startup": c.filter(pl.col("seq") < first)["data"].sum(),
            "fwd_ag": forwards["data"].sum() / n_micro, "bwd_ag": (ag - forwards["data"].sum()) / n_micro,
            "rs": train.filter(pl.col("op") == "reduce_scatter")["data"].sum() / n_micro,
            "other": train.filter(~pl.col("op").is_in(["all_gather", "reduce_scatter"]))["data"].sum() / n_micro}


def zero2_bytes(sample: str) -> dict[str, float]:
    t = traffic.measure(ingest([SAMPLES / sample]))
    data = dict(zip(t.by_op["op"], t.by_op["data_bytes"]))
    return {"ar_per_micro": data["all_reduce"] / t.micro_steps, "ag_per_step": data["all_gather"] / t.steps,
            "startup": data.get("broadcast", 0.0)}


def socket_busbw(sample: str) -> float:
    """Bus bandwidth (GB/s) of the largest all_gather the bench ran, from its comms-logger line."""
    best = [ln for ln in rank0_lines(sample) if ln.startswith("comm op: all_gather")][-1]
    return float(re.search(r"busbw \(Gbps\): ([\d.]+)", best).group(1)) / 8


def minutes(s: float) -> str:
    return f"{s / 60:.1f} min"


def main() -> None:
    one = harness("gpu_1x1_4b_zero3")
    two = harness("gpu_2x1_4b_zero3")
    ph = zero3_phases("gpu_2x1_4b_zero3")
    z2 = zero2_bytes("gpu_2x1_4b_zero2")
    bw = socket_busbw("gpu_2x1_4b_bench")
    gb = 1e9
    steady = statistics.median(one["fwd_bwd"][1:])
    print("measured on one H200 (Qwen3-4B shapes, ZeRO-3 offload, bf16, 32768 tokens, accumulation 8):")
    print(f"  model {one['params'] / 1e9:.2f} B parameters, {ph['model'] / gb:.2f} GB in bf16")
    print(f"  1x1: forward+backward {steady:.2f} s per micro-step (first {one['fwd_bwd'][0]:.2f} s); optimizer steps "
          f"{', '.join(f'{s:.1f}' for s in one['step_s'])} s; CPU optimizer {', '.join(f'{s:.2f}' for s in one['opt_s'])} s; "
          f"start-up {one['init_s']:.0f} s; first micro-step done at {one['since'][0]:.0f} s, first optimizer step "
          f"at {one['step_at'][0]:.0f} s; peak GPU {one['gpu_gib']:.1f} GiB, host RSS {one['rss_gib']:.1f} GiB")
    print(f"  2x1 over NET/Socket (two ranks on one GPU): {statistics.median(two['fwd_bwd'][1:]):.1f} s per micro-step, "
          f"optimizer steps {', '.join(f'{s:.0f}' for s in two['step_s'])} s, first optimizer step at "
          f"{two['step_at'][0]:.0f} s")
    print(f"  ZeRO-3 data per micro-step: forward all-gathers {ph['fwd_ag'] / gb:.2f} GB, backward all-gathers "
          f"{ph['bwd_ag'] / gb:.2f} GB, reduce-scatters {ph['rs'] / gb:.2f} GB ({ph['micro_steps']} micro-steps); "
          f"start-up {ph['startup'] / gb:.2f} GB")
    print(f"  ZeRO-2 data: all-reduce {z2['ar_per_micro'] / gb:.2f} GB per micro-step, all-gather "
          f"{z2['ag_per_step'] / gb:.2f} GB per optimizer step")
    print(f"  NET/Socket bus bandwidth between the fake nodes (lo, 512 MiB all_gather): {bw:.2f} GB/s")
    share = (RANKS_2X2 - 1) / RANKS_2X2
    cross = {  # bytes each way over one node's link per optimizer step
        "ZeRO-3": ACCUM * share * (ph["fwd_ag"] + ph["bwd_ag"] + ph["rs"] + ph["other"]),
        "ZeRO-2": ACCUM * 2 * share * z2["ar_per_micro"] + share * z2["ag_per_step"],
        "ZeRO++ hpZ": ACCUM * share * (ph["fwd_ag"] + ph["rs"] + ph["other"]),
    }
    compute = ACCUM * steady * H200_BF16 / H20_BF16 + statistics.median(one["opt_s"][1:] or one["opt_s"])
    print()
    print(f"projected, 2x2 H20, one optimizer step (8 micro-steps of 32768 tokens): compute {minutes(compute)} "
          f"(H200 time x {H200_BF16 / H20_BF16:.1f}), plus the link's share")
    print(f"  bytes each way over a node's link per optimizer step: "
          + ", ".join(f"{k} {v / gb:.0f} GB" for k, v in cross.items()))
    head = f"  {'link between the nodes':<40}" + "".join(f"{k:>14}" for k in cross)
    print(head)
    rows = [(f"sockets as measured here ({bw:.2f} GB/s)", bw * gb)] + [(name, g * 1e9 / 8) for name, g in LINKS]
    for name, rate in rows:
        print(f"  {name:<40}" + "".join(f"{minutes(compute + v / rate):>14}" for v in cross.values()))
    print(f"  {'1x4 inside one node (NVLink)':<40}" + "".join(f"{minutes(compute):>14}" for _ in cross))
    # FLOPs of a micro-step with recomputation: 8 x parameters x tokens in the matrix products, 4 x 2 T^2 d per
    # layer in causal attention over the whole 32768 tokens (forward, recompute, backward twice)
    t, d, layers = 32768, 32 * 128, 36
    dense, attention = 8 * one["params"] * t, 4 * 2 * t * t * d * layers
    short = compute * dense / (dense + attention)
    print(f"  with packing of short documents the attention's quadratic part ({attention / (dense + attention):.0%} of "
          f"the FLOPs at 32768) mostly goes: compute about {minutes(short)}, ZeRO-3 over 25 Gbit/s "
          f"{minutes(short + cross['ZeRO-3'] / (25e9 / 8))}, over 1 Gbit/s {minutes(short + cross['ZeRO-3'] / (1e9 / 8))}")


if __name__ == "__main__":
    main()
