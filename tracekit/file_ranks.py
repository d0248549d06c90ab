"""The ranks a file-wide line covers (session 33, issue 31): shared by the rules that read an end or a
pace printed with no rank named.

A line that names no rank (the program's own ``Training completed``, Megatron's ``iteration 20/ 20``
printed by one process for all, a launcher's exit 0) speaks for the process or job whose file it is: it
covers the ranks seen only in such files (a rank named in a sentence of that file, DeepSpeed's
``OVERFLOW! Rank 3 Skipping step``, is one of them), never a rank also seen in a file without such a line.
``rules_progress.clean_but_partial``, ``teardown`` and ``rules_unnamed`` each asked it; this module says it
once.
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence


def ranks_only_in(ev: Evidence, files: set[str]) -> set[int]:
    """The ranks seen (``store.ranks``) in no file outside ``files``: those a rankless line of each of their
    files covers; none where ``files`` is empty."""
    if not files:
        return set()
    seen = ev.store.ranks.filter(pl.col("rank").is_not_null()).group_by("rank").agg(
        pl.col("file").is_in(list(files)).all().alias("_in"))
    return set(seen.filter(pl.col("_in"))["rank"].to_list())


def names_no_rank(ev: Evidence) -> bool:
    """No line of any file names a rank: a rankless line covers every rank of the world, the printing one
    included, so the ranks not seen are no rank's absence."""
    return not ev.coverage.seen
