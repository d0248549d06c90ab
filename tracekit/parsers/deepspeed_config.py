"""DeepSpeed's configuration block, printed by rank 0 at start-up (docs/formats.md, "DeepSpeed").

``DeepSpeedConfig.print`` (deepspeed/runtime/config.py) logs, at INFO, ``DeepSpeedEngine
configuration:`` then one line per setting, ``  name ....... value`` (dots to column 32; a value may
be a JSON object over several lines in older releases), then ``print_user_config``'s ``  json = {``
and the user's JSON over the lines under it::

    [2026-12-04 17:34:05,478] [INFO] [config.py:678:print]   zero_config .................. stage=3
        contiguous_gradients=True reduce_bucket_size=1048576 ... overlap_comm=False ...
        offload_param=DeepSpeedZeroOffloadParamConfig(device='cpu', ..., pin_memory=True) ...
    [2021-05-27 21:32:10,182] [INFO] [config.py:904:print]   zero_config .................. {
        "stage": 3,
        "reduce_bucket_size": 6.710886e+07, ...

What makes a ZeRO run fast or slow becomes one ``deepspeed_config`` event each (``SETTINGS``,
message ``key=value``; the engine's word first, the user's JSON where the engine printed none), which
``tracekit diff`` compares. Only the lines of the block are read in Python (a few hundred, rank 0's).
"""

from __future__ import annotations

import json
import re

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

HEAD = r"DeepSpeedEngine configuration:"
# DeepSpeed's logger header (`[2026-12-04 17:34:05,478] [INFO] [config.py:678:print] `)
HEADER = re.compile(r"^\[[^\]]+\] \[[A-Z]+\] \[config\.py:\d+:print(?:_user_config)?\] ")
ITEM = re.compile(r"^  (?P<key>\w+) \.* ?(?P<value>.*?)\s*$")
USER = re.compile(r"^  json = (?P<value>.*)$")
BLOCK_LINES = 400  # the block (settings and the user's JSON) is well under this
#: what is compared, in this order: name -> (engine items, zero_config keys, user JSON paths)
Z, U = "zero_optimization.", "zero_optimization.offload_"
SETTINGS = {
    "zero_stage": (("zero_optimization_stage",), ("stage",), (Z + "stage",)),
    "optimizer offload": ((), ("offload_optimizer.device", "cpu_offload"),
                          (U + "optimizer.device", Z + "cpu_offload")),
    "optimizer pin_memory": ((), ("offload_optimizer.pin_memory",), (U + "optimizer.pin_memory",)),
    "param offload": ((), ("offload_param.device",), (U + "param.device",)),
    "param pin_memory": ((), ("offload_param.pin_memory",), (U + "param.pin_memory",)),
    "reduce_bucket_size": ((), ("reduce_bucket_size",), (Z + "reduce_bucket_size",)),
    "allgather_bucket_size": ((), ("allgather_bucket_size",), (Z + "allgather_bucket_size",)),
    "prefetch_bucket_size": ((), ("prefetch_bucket_size",), (Z + "stage3_prefetch_bucket_size",)),
    "overlap_comm": ((), ("overlap_comm",), (Z + "overlap_comm",)),
    "contiguous_gradients": ((), ("contiguous_gradients",), (Z + "contiguous_gradients",)),
    "micro_batch": (("train_micro_batch_size_per_gpu",), (), ("train_micro_batch_size_per_gpu",)),
    "grad_accumulation": (("gradient_accumulation_steps",), (), ("gradient_accumulation_steps",)),
    "train_batch_size": (("train_batch_size",), (), ("train_batch_size",)),
    "fp16": (("fp16_enabled", "float16_config.enabled"), (), ("fp16.enabled",)),
    "bf16": (("bfloat16_enabled", "bf16_enabled", "bfloat16_config.enabled"), (),
             ("bf16.enabled", "bfloat16.enabled")),
}
# `key=value` words of a printed pydantic config; a nested one (`X=Config(a=1, b='c')`) as one word
WORD = re.compile(r"(\w+)=(\w+\((?:[^()]|\([^()]*\))*\)|\[[^\]]*\]|'[^']*'|[^\s,]+)")


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("deepspeed-config")
    heads = lines.filter(pl.col("text").str.contains(HEAD, literal=True)).select("file", "line")
    if not heads.height:
        return Parsed("deepspeed-config")
    events, claimed = [], []
    for file, head in heads.unique("file", keep="first").iter_rows():
        block = lines.filter((pl.col("file") == file) & pl.col("line").is_between(head, head + BLOCK_LINES))
        items, user, used = _read(block.sort("line").select("line", "text").rows())
        said = settings(items, user)
        events += [{"file": file, "line": head, "kind": EventKind.DEEPSPEED_CONFIG, "message": f"{k}={v}",
                    "where": "deepspeed"} for k, v in said.items()]
        claimed += [{"file": file, "line": n} for n in used]
    return Parsed("deepspeed-config", {"events": pl.DataFrame(events, schema_overrides={"line": pl.Int64})},
                  pl.DataFrame(claimed, schema={"file": pl.Utf8, "line": pl.Int64}))


def _read(rows: list[tuple[int, str]]) -> tuple[dict[str, object], dict | None, list[int]]:
    """The block's settings (a multi-line JSON value decoded), the user's JSON, and the lines read."""
    items: dict[str, object] = {}
    user, used = None, [rows[0][0]]
    key, value, depth = None, [], 0
    for n, text in rows[1:]:
        body = HEADER.sub("", text)
        if key is not None:  # inside a JSON value: until its braces close
            value.append(text)
            depth += text.count("{") - text.count("}")
            used.append(n)
            if depth <= 0:
                got = _json("\n".join(value))
                if key == "json":
                    user = got
                else:
                    items[key] = got
                key = None
            continue
        if body == text:  # neither a setting nor inside one: the block ended
            break
        used.append(n)
        m = USER.match(body) or ITEM.match(body)
        if m is None:
            continue
        k = "json" if m.re is USER else m["key"]
        v = m["value"]
        if v.rstrip().endswith("{") and v.count("{") > v.count("}"):
            key, value, depth = k, [v], v.count("{") - v.count("}")
        else:
            items[k] = v
    return items, user, used


def _json(text: str) -> dict | None:
    try:
        got = json.loads(text)
    except ValueError:
        return None
    return got if isinstance(got, dict) else None


def settings(items: dict[str, object], user: dict | None) -> dict[str, str]:
    """``SETTINGS`` from the engine's items (its ``zero_config`` as JSON or as ``key=value`` words),
    else from the user's JSON; values as DeepSpeed means them (``true``, ``cpu``, ``none``, 1048576)."""
    zero = items.get("zero_config")
    zero = zero if isinstance(zero, dict) else _words(zero) if isinstance(zero, str) else {}
    out = {}
    for name, (engine, in_zero, in_user) in SETTINGS.items():
        found = next((v for k in engine if (v := _get(items, k, words=True)) is not None), None)
        if found is None:
            found = next((v for k in in_zero if (v := _get(zero, k)) is not None), None)
        offload = name in ("optimizer offload", "param offload")
        if found is None and offload and zero.get("offload_" + name.split()[0], "") in (None, "None"):
            found = "none"  # the engine's word: no offload (`offload_param=None`; `"offload_param": null`)
        if found is None and user:
            found = next((v for k in in_user if (v := _get(user, k)) is not None), None)
        if found is not None:
            out[name] = _value(name, found)
    return out


def _get(d: dict, path: str, words: bool = False):
    """``d``'s value at a dotted path (``offload_param.device``); a printed config on the way is read
    as its ``key=value`` words."""
    for part in path.split("."):
        if isinstance(d, str) and (words or "(" in d):
            d = _words(d)
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


def _words(text: str) -> dict[str, str]:
    inner = re.sub(r"^\w+\((.*)\)$", r"\1", text.strip())
    return {k: v for k, v in WORD.findall(inner)}


def _value(name: str, v) -> str:
    offload = name.endswith(" offload")
    if offload:
        if v in (None, "None", "null", False, "False", "none"):
            return "none"
        if v is True or v == "True":  # an old `cpu_offload: true`
            return "cpu"
    if v is None or v == "None":
        return "none"
    s = str(v).strip("'\" ")
    if s in ("True", "False", "true", "false"):
        return s.lower()
    try:
        f = float(s)
    except ValueError:
        return s.split(".")[-1].lower() if offload else s  # (`OffloadDeviceEnum.cpu`: cpu)
    return str(int(f)) if f.is_integer() else f"{f:g}"
