"""Tables pasted with pipes: markdown's (``| size | count | type |``, ``|---|---|``) and those a tool prints
with pipes between its cells (hccl_test: hicann/oam-tools src/hccl_test/common/src/
hccl_opbase_rootinfo_base.cc print_execution_time ``"%-17llu | %-14.2f | %-20.5f | success"``), read as the
column gaps the table readers split on (parsers/result_tables.py, parsers/nccl_tests.py)."""

from __future__ import annotations

import re

import polars as pl

#: a table pasted with pipes (markdown's ``| size | count |``, hccl_test's ``%-17llu | %-14.2f | %-20.5f |
#: success``): two pipes or more between cells; markdown's rule under its header (``|---|:---:|``)
PIPED = re.compile(r"^\s*\|?[^|]+\|[^|]+\|")
PIPE_RULE = re.compile(r"^\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*(?::?-{3,}:?)?\s*$")
#: a piped table's header: a size column and a bandwidth or time column, in any order (``| op | size | time
#: (ms) | busbw (GB/s) |``)
PIPED_HEAD = (r"(?i)^\s*\|?(?:[^|]*\|)*[^|]*\b(?:size|bytes|msg_?size|data_size)\b[^|]*\|.*\|"
              r"|^\s*\|?(?:[^|]*\|)*[^|]*(?:bw|bandwidth|throughput|lat|time)\b[^|]*\|.*\b(?:size|bytes)\b")
#: what a piped row's pipes become: a column gap
GAP = "   "


def depipe(text: str) -> str:
    """A row pasted with pipes as one with column gaps (``| 8 | 2 |`` -> ``8    2``); others as they are
    (a progress bar's ``45%|####|`` stays: its pipes hold no cells of numbers)."""
    if "%|" in text or not PIPED.search(text):
        return text
    return re.sub(r"\s*\|\s*", GAP, text.strip().strip("|")).strip()


def depiped(t: pl.Expr) -> pl.Expr:
    """``depipe`` over a column of lines."""
    return (pl.when(t.str.contains(PIPED.pattern) & ~t.str.contains("%|", literal=True))
            .then(t.str.strip_chars().str.strip_chars("|").str.replace_all(r"\s*\|\s*", GAP)).otherwise(t))
