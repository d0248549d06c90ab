"""What a job's programs print about its environment: the versions and the world size they report
(issue 31, round 3), as ``ranks`` rows of the file (no process named: they hold for the job).

- torch's ``collect_env`` (torch/utils/collect_env.py: ``PyTorch version: 2.1.0+cu121``), NVIDIA's
  container banner (``PyTorch Version 2.4.0a0+3bcc3cd``), DeepSpeed's ``ds_report``
  (deepspeed/env_report.py: ``torch version .... 2.1.0+cu121``, ``deepspeed info .... 0.12.3, unknown,
  unknown``) and the console script setuptools wrote (``load_entry_point('torch==2.4.0', 'console_scripts',
  'torchrun')`` in a traceback) name the torch and DeepSpeed versions.
- accelerate's state (accelerate/state.py: ``Num processes: 8`` under ``Distributed environment:``),
  Lightning's registration (lightning/fabric/utilities/distributed.py: ``All distributed processes
  registered. Starting with 8 processes``), Ray Train's process group (ray/train/torch/config.py:
  ``Setting up process group for: env://... [rank=0, world_size=4]``) and LLaMA-Factory's
  (llamafactory/hparams/parser.py: ``Process rank: 0, world size: 8, device: ...``) name the world size.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of

VERSION = r"[\d]+\.[\d]+(?:\.[\w.+\-]+)?"
TORCH = (rf"^PyTorch [Vv]ersion:? (?P<torch>{VERSION})\s*$|^torch version \.{{3,}} (?P<torch2>{VERSION})\s*$"
         rf"|load_entry_point\('torch==(?P<torch3>{VERSION})'")
DEEPSPEED = (rf"^deepspeed info \.{{3,}} (?P<ds>{VERSION}),"
             rf"|load_entry_point\('deepspeed==(?P<ds2>{VERSION})'")
WORLD = (r"^Num processes: (?P<w1>\d+)\s*$|^All distributed processes registered\. Starting with (?P<w2>\d+) "
         r"processes|^Setting up process group for: \S+ \[rank=\d+, world_size=(?P<w3>\d+)\]"
         r"|^Process rank: \d+, world size: (?P<w4>\d+),")
#: accelerate's `Num processes:` counts only under its `Distributed environment:` line (a few lines above)
ACCELERATE = r"^Distributed environment: \w+"
CHEAP = r"(?i)version|load_entry_point|deepspeed info|processes|world.size"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("environment")
    t = pl.col("text")
    under_accelerate = pl.when(t.str.contains(ACCELERATE)).then(pl.col("line")).forward_fill().over("file")
    df = lines.select("file", "line", t,
    (pl.col("line") - under_accelerate <= 4).fill_null(False).alias("_acc"))
    df = df.filter(t.str.contains(CHEAP))
    df = df.filter(t.str.contains(any_of(TORCH, DEEPSPEED, WORLD)))
    df = df.filter(~t.str.starts_with("Num processes") | pl.col("_acc"))
    if not df.height:
        return Parsed("environment")
    g = df.with_columns(t.str.extract_groups(TORCH).alias("_t"), t.str.extract_groups(DEEPSPEED).alias("_d"),
                        t.str.extract_groups(WORLD).alias("_w")).unnest("_t", "_d", "_w")
    ranks = g.select(
        "file", pl.coalesce("torch", "torch2", "torch3").alias("torch_version"),
        pl.coalesce("ds", "ds2").alias("deepspeed_version"),
        pl.coalesce("w1", "w2", "w3", "w4").cast(pl.Int64, strict=False).alias("world_size"),
        pl.lit("environment").alias("source"))
    return Parsed("environment", {"ranks": ranks}, df.select("file", "line"))
