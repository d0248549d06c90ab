"""ingest.combine: the rows of one line (two parsers' events on one line) come out in one order, however the
files were batched and whichever parser ran first."""

from pathlib import Path

import polars as pl

from tracekit.ingest import combine, discover, parse_files

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def test_events_of_one_line_come_out_in_one_order_whatever_the_batching():
    files = [str(p) for p in discover([SAMPLES / "gpu_nccl_alltoall"])]
    whole = combine(parse_files(files, workers=False))
    # one batch per file, and the batches given in the reverse order
    split = combine([r for f in reversed(files) for r in parse_files([f], workers=False)])
    shared = whole.events.group_by("file", "line").len().filter(pl.col("len") > 1)
    assert shared["len"].max() >= 3  # lines that several parsers read (kinds differ)
    for name in ("events", "comms", "links"):
        a, b = (getattr(s, name).drop("says", strict=False) for s in (whole, split))
        assert a.equals(b), name


def test_the_events_of_a_line_are_ordered_by_kind():
    files = [str(p) for p in discover([SAMPLES / "gpu_nccl_alltoall"])]
    ev = combine(parse_files(files, workers=False)).events
    order = ev.with_columns(pl.col("kind").cast(pl.Utf8)).group_by("file", "line", maintain_order=True).agg(
        (pl.col("kind") == pl.col("kind").sort()).all().alias("sorted"))
    assert order["sorted"].all()
