"""A bare gdb or pstack backtrace: ``#0  0x... in FUNC (ARGS) from LIB`` frames with no ``Thread N (Thread
0x.. (LWP n)):`` header above them (``(gdb) bt`` of the current thread, a backtrace pasted without its header).

``parsers/pyspy.py`` reads ``thread apply all bt`` (each thread under its header); the frames of a bare ``bt``
it counts but makes no ``stack`` of, so an excerpt whose one fact is where a hung process sits (oneCCL's
``ccl_allgather`` under ``ccl_executor::wait``, Open MPI's ``MPI_Gather`` under ``opal_progress``) read as
nothing at all. gdb prints a frame as ``#N  0xADDR in FUNC (ARGS) at FILE:LINE`` or ``... from LIB``
(gdb/stack.c ``print_frame``), the address left out where the pc is at a line's start, and a long frame wraps
its ``from LIB`` / ``at FILE:LINE`` onto the next line (as pasted in dv13-012 and dev-102). One ``stack`` event
per backtrace (a run of frames from ``#0``), thread ``gdb backtrace``: ``where`` its innermost frame that is
not a wait in libc, ``frames`` the whole stack joined by `` <- `` (the shape ``parsers/pyspy`` writes); its rank
the one a person's header right above it names (``Rank 3 backtrace:``, pyspy's ``SAID_RANK``).
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.parsers.pyspy import GDB_WAIT, HINT_LINES, SAID_RANK
from tracekit.schema import EventKind

#: a frame of gdb's backtrace: an address and ``in``, or a function with its source place or library after it
FRAME = r"^\s*#(?P<n>\d+)\s+(?:(?P<addr>0x[0-9a-fA-F]+) in )?(?P<func>[^\s(]+) ?\("
#: where the frame is: its source line or its library, last on the line (a frame cut mid-arguments has neither)
AT, FROM = r" at (\S+:\d+)\s*$", r"\) from (\S+)\s*$"
#: the wrapped tail of a long frame (``   from /usr/lib/libccl.so.1``, ``    at bits/socket2.h:44``)
WRAPPED = r"^\s+(?:from (?P<lib>\S+)|at (?P<at>\S+:\d+))\s*$"
#: the header of a thread's frames (gdb's ``Thread 2 (Thread 0x7f.. (LWP 4)):``, py-spy's): pyspy reads those
HEADED = r"^\s*Thread \S+ \("
THREAD = "gdb backtrace"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("gdb-backtrace")
    t = pl.col("text")
    f = t.str.extract_groups(FRAME).struct
    w = t.str.extract_groups(WRAPPED).struct
    df = lines.select("file", "line", "text").sort("file", "line").with_columns(
        f.field("n").cast(pl.Int64, strict=False).alias("n"), f.field("func").alias("func"),
        pl.coalesce(t.str.extract(AT, 1), t.str.extract(FROM, 1).str.extract(r"([^/]+)$", 1)).alias("loc"),
        (f.field("addr").is_not_null() | t.str.contains(AT) | t.str.contains(FROM)).alias("_sure"),
        pl.coalesce(w.field("at"), w.field("lib").str.extract(r"([^/]+)$", 1)).alias("_tail"),
        t.str.contains(HEADED).alias("_head"),
        # (a person's header over the backtrace, `Rank 3 backtrace:`, as parsers/pyspy reads one: its rank)
        t.str.extract(SAID_RANK, 1).cast(pl.Int64, strict=False).alias("_said"))
    df = df.with_columns(pl.col("_said").forward_fill().over("file").alias("_rank"),
                         pl.when(pl.col("_said").is_not_null()).then(pl.col("line")).forward_fill().over("file")
                         .alias("_said_at"))
    is_f = pl.col("n").is_not_null()
    # (a frame with neither address nor place, `#2  ncclSocketProgressOpt (sock=...`, under another frame)
    under = (is_f | pl.col("_tail").is_not_null()).shift(1).over("file").fill_null(False)
    frame = is_f & (pl.col("_sure") | under)
    wrapped = pl.col("_tail").is_not_null() & is_f.shift(1).over("file").fill_null(False)
    df = df.filter(frame | wrapped | pl.col("_head")).with_columns(
        # (a run starts at a `#0` frame; a frame belongs to it while the lines are adjacent)
        # (a `#0` right under a thread header stays in the header's run: pyspy's)
        ((pl.col("n").eq(0).fill_null(False) & ~pl.col("_head").shift(1).over("file").fill_null(False))
         | (pl.col("line") - pl.col("line").shift(1).over("file")).fill_null(99).gt(2)
         | pl.col("_head")).cum_sum().over("file").alias("_run"),
        # (the place of a frame whose `from LIB` or `at FILE:LINE` gdb wrapped onto the next line)
        pl.col("_tail").shift(-1).over("file").alias("_next_tail"))
    runs = df.with_columns(
        pl.col("_head").any().over("file", "_run").alias("_headed"),
        pl.col("n").first().over("file", "_run").alias("_first"))
    bare = runs.filter(~pl.col("_headed") & (pl.col("_first") == 0))
    frames = bare.filter(pl.col("n").is_not_null()).with_columns(
        pl.format("{} ({})", "func", pl.coalesce("loc", "_next_tail", pl.lit("?"))).alias("_f"),
        pl.col("func").str.contains(GDB_WAIT).fill_null(False).alias("_wait"))
    if not frames.height:
        return Parsed("gdb-backtrace")
    own = ~pl.col("_wait") & (pl.col("func") != "??")
    stacks = frames.group_by("file", "_run", maintain_order=True).agg(
        pl.col("line").first(), pl.col("text").first().str.strip_chars().alias("message"),
        pl.when(pl.col("line").first() - pl.col("_said_at").first() <= HINT_LINES)
        .then(pl.col("_rank").first()).alias("rank"),
        pl.coalesce(pl.col("_f").filter(own).first(), pl.col("_f").first()).alias("where"),
        pl.col("_f").str.join(" <- ").alias("frames"),
    ).select("file", "line", "rank", pl.lit(EventKind.STACK).alias("kind"), pl.lit(THREAD).alias("thread"),
             pl.lit("dumped").alias("state"), "where", "frames", "message")
    return Parsed("gdb-backtrace", {"events": stacks}, bare.select("file", "line"))

