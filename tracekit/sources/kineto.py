"""Kineto (torch.profiler) traces as a source of collectives: each op's CPU-side times (and its GPU
kernel's, as ``kineto-gpu``), the sequence number where the profiler recorded one. A group's members
are the ranks that appear in it: a trace names no group configuration."""

from __future__ import annotations

import polars as pl

from tracekit.store import Store

NAME = "kineto"
TIMED = True


def members(store: Store, seen: pl.DataFrame) -> pl.DataFrame:
    """(pg, rank): who appears."""
    return seen


def recorded(store: Store, ranks: pl.Series) -> pl.Series:
    return ranks.unique().sort()


def frontier(store: Store, entries: pl.DataFrame) -> pl.DataFrame:
    return entries
