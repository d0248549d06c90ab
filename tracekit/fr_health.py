"""Positive evidence from Flight Recorder dumps alone (``fr_checks.check_store`` asks for it once no
check found anything): a window of collectives every member of a process group dumped alike, every
one of them completed, with pg_status agreeing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from tracekit.outcome import Finding
from tracekit.wording import who


@dataclass
class HealthyWindow:
    """Positive evidence from dumps alone: every member's dump holds the same collectives of ``pg``,
    every one of them completed, and pg_status agrees."""

    pg: str
    pg_desc: str | None
    ranks: list[int]
    first_seq: int
    last_seq: int
    collectives: int
    evidence: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        where = f"process group {self.pg}" + (f" ({self.pg_desc})" if self.pg_desc else "")
        seqs = f"seq {self.first_seq}" + (f"-{self.last_seq}" if self.last_seq != self.first_seq else "")
        last = f"last {self.collectives} collectives" if self.collectives > 1 else "last collective"
        return (f"{where}: healthy in the {last} the dumps hold ({seqs} on {who(self.ranks)}: all completed, "
                f"pg_status agrees)")


def healthy_window(c: pl.DataFrame, pg: str, members: list[int], status: pl.DataFrame | None = None,
                   findings: list[Finding] = ()) -> HealthyWindow | None:
    """The window the dumps show healthy, or None: every member dumped entries of ``pg``, each holds
    the same collectives up to the same last one, every one completed, no rule above fired, and
    pg_status (``status``: rank, last_enqueued, last_completed) says each rank completed all it
    enqueued, the same last collective on every rank. ``c``: the group's ``collectives``."""
    if findings or not c.height or set(c["rank"].unique().to_list()) != set(members):
        return None
    if (c["state"].cast(pl.Utf8) != "completed").any():
        return None
    per = c.group_by("rank").agg(pl.col("seq").min().alias("lo"), pl.col("seq").max().alias("hi"))
    if per["hi"].n_unique() != 1:
        return None
    lo, hi = per["lo"].max(), per["hi"][0]
    window = c.filter(pl.col("seq") >= lo)
    if window.group_by("rank").agg(pl.col("seq").n_unique())["seq"].n_unique() != 1:
        return None
    if status is not None and status.height:
        st = status.filter(pl.col("rank").is_in(members))
        if (st["last_enqueued"] != st["last_completed"]).any() or (st["last_completed"] != hi).any():
            return None
    return HealthyWindow(pg=pg, pg_desc=c["pg_desc"][0], ranks=sorted(members), first_seq=lo, last_seq=hi,
                         collectives=window["seq"].n_unique(),
                         evidence=sorted(c["file"].unique().to_list())[:8])
