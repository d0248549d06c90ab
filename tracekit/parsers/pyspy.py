"""py-spy dumps (FORMATS.md, "py-spy dump"), and the same shape written by ``tracekit run``.

``Process 206450: python train.py`` / ``Thread 206450 (active): "MainThread"`` then frames,
innermost first. Several ``Thread`` lines in a row share the frames below them (the grouped form
people paste into reports). One ``stack`` event per thread: ``where`` is the innermost frame,
``frames`` the whole stack joined by `` <- ``.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of

PROCESS = r"^Process (?P<pid>\d+): (?P<cmd>.*)$"
THREAD = r"^\s*Thread (?P<tid>0x[0-9A-Fa-f]+|\d+) \((?P<state>\w+)(?:[^)]*)\): \"(?P<tname>[^\"]*)\""
FRAME = r"^\s+(?P<func>[^\s(][^(]*?) \((?P<loc>[^()]*:\d+)\)\s*$"
PYTHON = r"^Python v\d"
# faulthandler (what ``tracekit run`` falls back to where py-spy cannot attach)
FH_THREAD = r"^(?:Current thread|Thread) (?P<tid>0x[0-9a-fA-F]+) \(most recent call first\):"
FH_FRAME = r"^\s+File \"(?P<file>[^\"]+)\", line (?P<lineno>\d+) in (?P<func>.+?)\s*$"
RANK_HINT = r"^# tracekit stack dump rank=(?P<rank>\d+)"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("py-spy")
    t = pl.col("text")
    df = lines.select("file", "line", "text").with_columns(
        t.str.extract(PROCESS, 1).cast(pl.Int64, strict=False).alias("pid"),
        t.str.extract(RANK_HINT, 1).cast(pl.Int64, strict=False).alias("rank"),
        t.str.extract_groups(THREAD).alias("_t"),
        t.str.extract(FH_THREAD, 1).alias("_fh_tid"),
        pl.coalesce(t.str.extract(FRAME, 1), t.str.extract(FH_FRAME, 3)).alias("func"),
        pl.coalesce(t.str.extract(FRAME, 2), pl.concat_str(t.str.extract(FH_FRAME, 1), pl.lit(":"), t.str.extract(FH_FRAME, 2))).alias("loc"),
    ).unnest("_t").with_columns(
        pl.coalesce("tid", "_fh_tid").alias("tid"),
        pl.when(pl.col("_fh_tid").is_not_null()).then(pl.lit("dumped")).otherwise(pl.col("state")).alias("state"),
        pl.when(pl.col("_fh_tid").is_not_null()).then(pl.lit("faulthandler")).otherwise(pl.col("tname")).alias("tname"),
    ).drop("_fh_tid")
    if df["tid"].null_count() == df.height:  # a header with no dump under it yet
        head = df.filter(pl.col("rank").is_not_null() | (pl.col("pid").is_not_null() & t.str.starts_with("Process ")))
        return Parsed("py-spy", {}, head.join(df.filter(pl.col("rank").is_not_null()).select("file").unique(), on="file", how="semi").select("file", "line"))
    is_thread = pl.col("tid").is_not_null()
    starts = is_thread & ~is_thread.shift(1, fill_value=False).over("file")
    df = df.with_columns(
        pl.col("pid", "rank").forward_fill().over("file"),
        # a new block starts at a thread line that follows a non-thread line of the same file
        starts.cum_sum().alias("block"),
        starts.cum_sum().over("file").alias("_nth"),
    )
    in_block = pl.col("_nth") > 0
    frames = (
        df.filter(pl.col("func").is_not_null() & in_block)
        .group_by("block", maintain_order=True)
        .agg(
            pl.format("{} ({})", "func", "loc").first().alias("where"),
            pl.format("{} ({})", "func", "loc").str.join(" <- ").alias("frames"),
        )
    )
    threads = df.filter(is_thread).join(frames, on="block", how="left").with_columns(
        pl.lit("stack").alias("kind"),
        pl.format("{} thread {} ({})", "tname", "tid", "state").alias("thread"),
        t.alias("message"),
    )
    used = t.str.contains(any_of(PROCESS, THREAD, FRAME, PYTHON, RANK_HINT, FH_THREAD, FH_FRAME))
    return Parsed("py-spy", {"events": threads.drop("_nth")}, df.filter(used).select("file", "line"))
