"""One module per input format. Text parsers take the lines frame of ``text.lines_frame`` and
return a ``Parsed``; binary and JSON parsers take the decoded object."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl


@dataclass
class Parsed:
    """What one parser made of one file: tables by name, and the lines it understood."""

    kind: str
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    claimed: pl.Series = field(default_factory=lambda: pl.Series("line", [], dtype=pl.Int64))

    @property
    def found(self) -> bool:
        return self.claimed.len() > 0 or any(t is not None and t.height for t in self.tables.values())


def any_of(*patterns: str) -> str:
    """One regex matching any of ``patterns``, their named groups made anonymous."""
    return "|".join("(?:" + re.sub(r"\(\?P<\w+>", "(?:", p) + ")" for p in patterns)
