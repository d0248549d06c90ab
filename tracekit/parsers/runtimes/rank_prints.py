"""A program's own per-rank prints of the tensor each rank passes to a collective, where the sizes differ:
``# Rank 0 tensor before allreduce: torch.Size([409600]) 1.0`` while ``# Rank 7 tensor before allreduce:
torch.Size([32768000]) 1.0`` (NVIDIA/nccl#1417: users print each rank's tensor before the call to find a
hang). NCCL checks no size: ranks that pass different sizes to one all_reduce, broadcast, reduce or
all_gather are a mismatch (some finish with wrong data, the others wait for bytes that never come).

One ``collective_mismatch`` event per collective whose printed sizes differ, at the first line of the rank
with the odd size, naming every rank's size (rules_mismatch.mismatch_reported decides on it). The lines
are not claimed: the launcher's reading of their rank labels stays.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind
from tracekit.wording import who

#: a rank's print of its tensor before a collective, with its shape (torch's `torch.Size([...])`, a `shape`)
PRINTED = (r"(?i)\brank\s*(?P<rank>\d+)\b.{0,80}?\bbefore\s+(?:the\s+|calling\s+)?"
           r"(?P<op>all_?reduce|all_?gather|broadcast|reduce)\b.{0,60}?"
           r"(?:torch\.Size\(\[(?P<size>[\d, ]+)\]\)|\bshape\s*[:=]?\s*[\[(]?(?P<shape>\d[\d, ]*))")


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("rank-prints")
    t = pl.col("text")
    hit = lines.filter(t.str.contains(PRINTED)).select("file", "line", "text")
    if not hit.height:
        return Parsed("rank-prints")
    g = t.str.extract_groups(PRINTED).struct
    said = hit.with_columns(
        g.field("rank").cast(pl.Int64).alias("rank"), g.field("op").str.to_lowercase().str.replace("_", "").alias("op"),
        pl.coalesce(g.field("size"), g.field("shape")).str.replace_all(r"\s", "").str.strip_chars(",").alias("size"))
    out = []
    for (op,), per in said.unique(["op", "rank"], keep="first", maintain_order=True).group_by("op", maintain_order=True):
        sizes = per.group_by("size", maintain_order=True).agg(pl.col("rank").sort(), pl.col("file").first(),
                                                             pl.col("line").min())
        if sizes.height < 2 or per["rank"].n_unique() < 2:
            continue
        odd = min(sizes.iter_rows(named=True), key=lambda s: (len(s["rank"]), s["line"]))
        each = "; ".join(f"{who(s['rank'])} with shape [{s['size']}]" for s in sizes.iter_rows(named=True))
        out.append({"file": odd["file"], "line": odd["line"], "kind": EventKind.COLLECTIVE_MISMATCH,
                    "rank": odd["rank"][0] if len(odd["rank"]) == 1 else None, "op": op,
                    "where": "the program's own prints",
                    "message": f"the program's own prints: the ranks passed {op} tensors of different sizes: {each}"})
    if not out:
        return Parsed("rank-prints")
    return Parsed("rank-prints", {"events": pl.DataFrame(out)})
