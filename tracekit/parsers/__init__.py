"""One module per input format. Text parsers take the lines frame of ``text.lines_frame`` (the
lines of one or many files: every key is ``(file, line)``) and return a ``Parsed``; binary and
JSON parsers take the decoded object."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl


@dataclass
class Parsed:
    """What one parser made of its input: tables by name, and the ``(file, line)`` it understood."""

    kind: str
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    claimed: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64}))

    @property
    def found(self) -> bool:
        return self.claimed.height > 0 or any(t is not None and t.height for t in self.tables.values())

    def files(self) -> set[str]:
        """The files this parser found something in. A text parser's rows come from lines it
        claimed, so its claimed lines name them all; a dump's parser claims none: its tables do."""
        seen = set(self.claimed["file"].unique())
        if seen:
            return seen
        for t in self.tables.values():
            if t is not None and t.height and "file" in t.columns:
                seen |= set(t["file"].drop_nulls().unique())
        return seen


def any_of(*patterns: str) -> str:
    """One regex matching any of ``patterns``, their named groups made anonymous."""
    return "|".join("(?:" + re.sub(r"\(\?P<\w+>", "(?:", p) + ")" for p in patterns)
