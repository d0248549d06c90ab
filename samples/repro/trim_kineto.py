"""Trim a Kineto trace to what tracekit reads, for committing as a sample:
``python samples/repro/trim_kineto.py IN.json OUT.json.gz``. Keeps the header (distributedInfo,
deviceProperties, ...), metadata events, communication CPU ops (``nccl:*``, ``gloo:*``,
``c10d::*``, ``record_param_comms``), NCCL kernels, ProfilerStep and user annotations."""

import gzip
import json
import re
import sys

KEEP = re.compile(r"^(?:nccl:|gloo:|c10d::|record_param_comms|ProfilerStep)|nccl", re.I)


def keep(e: dict) -> bool:
    return e.get("ph") == "M" or e.get("cat") in ("user_annotation", "gpu_user_annotation") or bool(KEEP.search(e.get("name", "")))


if __name__ == "__main__":
    src, dst = sys.argv[1:3]
    d = json.load(open(src))
    before = len(d["traceEvents"])
    d["traceEvents"] = [e for e in d["traceEvents"] if keep(e)]
    with gzip.open(dst, "wt") as f:
        json.dump(d, f)
    print(f"{src}: kept {len(d['traceEvents'])} of {before} events -> {dst}")
