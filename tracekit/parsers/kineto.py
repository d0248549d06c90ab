"""torch.profiler (Kineto) Chrome JSON traces (docs/formats.md, "PyTorch", torch.profiler).

Collectives are read, by preference, from ``record_param_comms`` ops that carry ``Collective
name`` (newer traces: process group, element counts, dtype, ``Seq``), else from the ``c10d::*``
CPU ops and ``gloo:*`` annotations, numbered per rank in trace order. NCCL GPU kernels
(``ncclKernel_*`` / ``ncclDevKernel_*``) become rows of source ``kineto-gpu`` with their times.
"""

from __future__ import annotations

import json

import polars as pl

from tracekit.parsers import Parsed
from tracekit.parsers.flight_recorder import DTYPE_BYTES, canonical_op

KERNEL_OPS = {"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
              "Broadcast": "broadcast", "Reduce": "reduce", "SendRecv": "send", "AllToAll": "all_to_all"}


def looks_like(data: bytes) -> bool:
    return data[:64].lstrip()[:1] in (b"{", b"[") and b'"traceEvents"' in data


def _kernel_op(name: str) -> str:
    core = name.split("(")[0].replace("ncclDevKernel_", "").replace("ncclKernel_", "")
    return KERNEL_OPS.get(core.split("_")[0], "other")


def parse(obj: dict, file: str) -> Parsed:
    info = obj.get("distributedInfo") or {}
    rank = info.get("rank")
    events = obj.get("traceEvents") or []
    rows = {k: [] for k in ("source", "pg", "seq", "op", "op_raw", "count", "dtype", "start_ns", "end_ns",
                            "nranks")}

    def add(source, pg, seq, op, raw, count, dtype, ts, dur, nranks=None):
        rows["source"].append(source)
        rows["pg"].append(pg)
        rows["seq"].append(seq)
        rows["op"].append(op)
        rows["op_raw"].append(raw)
        rows["count"].append(count)
        rows["dtype"].append(dtype)
        start = int(float(ts) * 1000) if ts is not None else None
        rows["start_ns"].append(start)
        rows["end_ns"].append(start + int(float(dur) * 1000)
                              if start is not None and dur is not None else None)
        rows["nranks"].append(nranks)

    x = [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]
    rpc = [e for e in x
           if e.get("name") == "record_param_comms" and "Collective name" in (e.get("args") or {})]
    gpu_rpc = [e for e in rpc
               if e.get("cat") == "kernel" or str(e.get("args", {}).get("stream", "")).isdigit()
               and e.get("cat") != "cpu_op"]
    cpu_rpc = [e for e in rpc if e not in gpu_rpc]

    def _int(v):
        try:
            return int(v)
        except (TypeError, ValueError):
            return None

    if cpu_rpc:
        order: dict[str, int] = {}
        for e in sorted(cpu_rpc, key=lambda e: e.get("ts", 0)):
            a = e["args"]
            pg = str(a.get("Process Group Name", "0"))
            order[pg] = order.get(pg, 0) + 1
            name = str(a.get("Collective name"))
            if name in ("", "None", "wait", "init"):
                continue
            add("kineto", pg, _int(a.get("Seq")) or order[pg], canonical_op(name), name,
                _int(a.get("In msg nelems")), a.get("dtype"), e.get("ts"), e.get("dur"),
                _int(a.get("Group size")))
    else:
        order = 0
        for e in sorted(x, key=lambda e: e.get("ts", 0)):
            name = str(e.get("name", ""))
            if name.startswith("c10d::") or (name.startswith("gloo:") and e.get("cat") != "cpu_op"):
                base = name.split("::", 1)[-1].rstrip("_") if name.startswith("c10d::") else name
                op = canonical_op(base)
                if op == "other":
                    continue
                order += 1
                add("kineto", "0", order, op, name, None, None, e.get("ts"), e.get("dur"))
    for e in x:
        name = str(e.get("name", ""))
        if name.startswith(("ncclKernel_", "ncclDevKernel_")):
            a = e.get("args") or {}
            add("kineto-gpu", str(a.get("Process Group Name", "0")), _int(a.get("Seq")), _kernel_op(name),
                name, _int(a.get("In msg nelems")), a.get("dtype"), e.get("ts"), e.get("dur"),
                _int(a.get("Group size")))
    coll = pl.DataFrame(rows, schema_overrides={"seq": pl.Int64, "count": pl.Int64, "start_ns": pl.Int64,
                                                "end_ns": pl.Int64, "nranks": pl.Int64, "pg": pl.Utf8,
                                                "dtype": pl.Utf8}).with_columns(
        pl.lit(file).alias("file"), pl.lit(rank, pl.Int64).alias("rank"), pl.lit("completed").alias("state"),
        (pl.col("count") * pl.col("dtype").replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Int64))
        .alias("bytes"))
    ranks = pl.DataFrame({
        "file": [file], "rank": [rank], "world_size": [info.get("world_size")],
        "nccl_version": [info.get("nccl_version")], "source": ["kineto"],
    }, schema_overrides={"rank": pl.Int64, "world_size": pl.Int64, "nccl_version": pl.Utf8})
    return Parsed("kineto", {"collectives": coll, "ranks": ranks})


def load(data: bytes) -> dict:
    obj = json.loads(data)
    if isinstance(obj, list):
        obj = {"traceEvents": obj}
    return obj
