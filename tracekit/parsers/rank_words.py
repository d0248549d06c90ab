"""The ranks a program's own sentences name: a process that says which rank it is, or a report that names
the ranks it compares, where no prefix or NCCL line says so (issue 31, rank identity).

Each entry of ``RANK_WORDS`` is one sentence of one runtime, read from the code that prints it, and what its
number is: the writer's global rank, its local rank (global only where nothing shows a second node:
``identity._local_as_global``), or the ranks a report names. A number that is a group-local rank (c10d's
``[PG 5 Rank 1]``), a node's rank (``--machine-rank``, SkyPilot's ``(worker1, rank=1)``) or a peer a line
waits on is no entry: the rank it names is not one whose lines are seen.
"""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from tracekit.parsers import Parsed, any_of


class RankWord(NamedTuple):
    pattern: str  # the named groups: rank, other (a second rank named), local, world
    source: str  # where the runtime prints it
    meaning: str


RANK_WORDS = (
    RankWord(r"Rank (?P<rank>\d+) is running (?:inconsistent )?collective:",
             "pytorch torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp (TORCH_DISTRIBUTED_DEBUG=DETAIL's "
             "fingerprint check: `Detected mismatch between collectives on ranks. Rank {} is running collective: "
             "{}, but Rank {} is running collective: {}`)",
             "each side of the report is the collective one global rank issued"),
    RankWord(r"DDP expects same model across all ranks, but Rank (?P<rank>\d+) has \d+ params, while rank "
             r"(?P<other>\d+) has",
             "pytorch torch/csrc/distributed/c10d/reducer.cpp (verify_params_across_processes)",
             "the two global ranks whose parameter counts it compared"),
    RankWord(r"\bProcess rank: (?P<local>\d+), device: ",
             "transformers examples/pytorch/*/run_*.py (`Process rank: {training_args.local_rank}, device: "
             "{training_args.device}, n_gpu: ...`)",
             "the writer's local rank"),
    RankWord(r"\bProcess rank: (?P<rank>\d+), world size: (?P<world>\d+)",
             "LLaMA-Factory llamafactory/hparams/parser.py (`Process rank: {training_args.process_index}, "
             "world size: {training_args.world_size}, ...`)",
             "the writer's global rank and the world's size"),
    RankWord(r"\binit nccl context nranks: (?P<world>\d+) local rank: (?P<rank>\d+)(?:\s|$)",
             "Paddle paddle/fluid/imperative/nccl_context.cc (`init nccl context nranks: {nranks_} local rank: "
             "{local_rank_}`; ParallelStrategy's local_rank_ is the trainer's id over all nodes)",
             "the writer's global rank and the world's size"),
    RankWord(r"\bHcclCommInitRootInfo fail, error:\d+, rank:(?P<rank>\d+), rankSize:(?P<world>\d+)",
             "MindIE's hccl_runner (its own log line, as the Ascend runtime prints it)",
             "the writer's rank in the world HCCL initialises"),
    RankWord(r"\bGlobal Checkpoint Save : Rank: (?P<rank>\d+) :",
             "NeMo nemo/utils/callbacks/dist_ckpt_io.py (`Global Checkpoint Save : Rank: "
             "{torch.distributed.get_rank()} : Iteration: ...`)",
             "the writer's global rank"),
)
ANY = any_of(*(w.pattern for w in RANK_WORDS))
CHEAP = r"(?i)rank"


def parse(lines: pl.DataFrame) -> Parsed:
    """``ranks`` rows of the ranks the lines' sentences name (``source`` ``rank-words``); claims no line
    (the sentence is another parser's to read, or an unknown line)."""
    if not lines.height:
        return Parsed("rank-words")
    t = pl.col("text")
    df = lines.filter(t.str.contains(CHEAP)).filter(t.str.contains(ANY))
    if not df.height:
        return Parsed("rank-words")
    rows = []
    for w in RANK_WORDS:
        hit = df.filter(t.str.contains(w.pattern))
        if not hit.height:
            continue
        # (every sentence of a line: a report pasted flat names both sides on one line)
        g = (hit.select("file", t.str.extract_all(w.pattern).alias("_m")).explode("_m")
             .select("file", pl.col("_m").str.extract_groups(w.pattern).alias("_g")).unnest("_g"))
        for col, as_ in (("rank", "rank"), ("other", "rank"), ("local", "local_rank")):
            if col in g.columns:
                rows.append(g.select("file", pl.col(col).cast(pl.Int64, strict=False).alias(as_),
                                     *([pl.col("world").cast(pl.Int64, strict=False).alias("world_size")]
                                       if "world" in g.columns and col != "other" else [])))
    ranks = (pl.concat(rows, how="diagonal_relaxed").unique(maintain_order=True)
             .with_columns(pl.lit("rank-words").alias("source")))
    return Parsed("rank-words", {"ranks": ranks})
