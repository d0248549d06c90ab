"""py-spy dumps (docs/formats.md, "py-spy dump"), and the same shape written by ``tracekit run``.

``Process 206450: python train.py`` / ``Thread 206450 (active): "MainThread"`` then frames,
innermost first. Several ``Thread`` lines in a row share the frames below them (the grouped form
people paste into reports). One ``stack`` event per thread: ``where`` is the innermost frame,
``frames`` the whole stack joined by `` <- ``. Also read: faulthandler's dump, gdb's ``thread apply all
bt`` (``where`` its innermost frame that is not a wait in libc), torch's C++ ``frame #N:`` lines. A
dump's rank: ``tracekit run``'s header, or a person's header right above it (``The stack for rank0:``),
a ``ranks`` row of source ``stacks``.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of
from tracekit.schema import EventKind

PROCESS = r"^Process (?P<pid>\d+): (?P<cmd>.*)$"
# a thread py-spy could not name reads `Thread 8287 (active)`; --native adds frames of C/C++ code whose place
# is
# a library (`gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)`)
THREAD = r"^\s*Thread (?P<tid>0x[0-9A-Fa-f]+|\d+) \((?P<state>\w+)(?:[^)]*)\)(?:: \"(?P<tname>[^\"]*)\")?\s*$"
FRAME = r"^\s+(?P<func>[^\s(][^(]*?) \((?P<loc>[^()]*:\d+|[\w.+\-]+\.so[\w.]*)\)\s*$"
PYTHON = r"^Python v\d"
# faulthandler (what ``tracekit run`` falls back to where py-spy cannot attach)
FH_THREAD = r"^(?:Current thread|Thread) (?P<tid>0x[0-9a-fA-F]+) \(most recent call first\):"
FH_FRAME = r"^\s+File \"(?P<file>[^\"]+)\", line (?P<lineno>\d+) in (?P<func>.+?)\s*$"
RANK_HINT = r"^# tracekit stack dump rank=(?P<rank>\d+)"
# the C++ frames torch prints under an error (`frame #8: c10d::ProcessGroupNCCL::broadcastUniqueNCCLID(...)
# + 0x1d2 (0x7f in /…/libtorch_cuda.so)`): one stack per run of them, its `where` the first frame that is
# not the error's own
CPP_FRAME = (r"^\s*frame #(?P<n>\d+): (?P<sym>.+?)(?: \+ 0x[0-9a-fA-F]+)?"
             r"(?: \(0x[0-9a-fA-F]+ in (?P<lib>[^)]+)\))?\s*$")
CPP_NOISE = (r"^(?:c10::Error::|c10::detail::torchCheckFail|c10::detail::torchInternalAssertFail"
             r"|<unknown function>|c10::ValueError)")
# a header a person wrote over a pasted dump (`The stack for rank0:`, `Rank 3 stack:`, `rank 1 (node 2):`):
# the rank of the dump that starts within HINT_LINES lines under it
SAID_RANK = r"(?i)^[^:]{0,60}?\brank\s*#?(\d+)\b[^:]{0,40}:\s*(?:```\s*)?$"
HINT_LINES = 3
# Python's traceback (traceback.py: `  File "x.py", line 12, in func`, its code under it), innermost last;
# the frames of one traceback are at most TB_GAP lines apart (the code and caret lines between)
TB_FRAME = r'^\s*File "(?P<src>[^"]+)", line (?P<lineno>\d+), in (?P<func>\S.*?)\s*$'
TB_GAP = 3
# the same frames as rich prints them in its boxed traceback (Textualize/rich 42899d8a
# rich/traceback.py:809-823 ``Traceback._render_stack``: ``Text.assemble(frame.filename, ":",
# str(frame.lineno), " in ", frame.name)``, or ``in name:lineno`` where the file does not exist, inside the
# panel of :662 ``Traceback (most recent call last)`` whose left border is ``│``; parsers/text takes the
# borders off, the raw line keeps them), innermost last; each frame's code (``1292 │ ...``, ``❱`` at its
# line) sits between two frames, so they are at most RICH_GAP lines apart
RICH_FRAME = (r"^\s*(?:(?P<src>\S+\.py):(?P<lineno>\d+) in (?P<func>[\w.<>]+)"
              r"|in (?P<func2>[\w.<>]+):(?P<lineno2>\d+))\s*$")
RICH_BOX = "│"
RICH_GAP = 14
TB_INTERRUPT = r"^\s*KeyboardInterrupt\b"
#: the thread of a traceback that was raised and whose error line the excerpt cut: where a failure was, its
#: message missing (evidence counts it as trouble, never as a stack of where a process waits)
RAISED = "traceback raised, its error line cut"
TB_HEAD = r"\bTraceback \(most recent call last\):\s*$"  # (a logger's words may come before it)
# what ends a traceback of a failure: the exception (`RuntimeError: ...`, `torch.OutOfMemoryError`), or a
# chain
TB_ERROR = (r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception|Exit|Failure|Interrupt|Warning)\b|[A-Za-z_][\w.]*: "
            r"|The above exception|During handling|Traceback \(most recent)")
# gdb's `thread apply all bt` (gdb/thread.c: `Thread 2 (Thread 0x7f.. (LWP 69796) "python"):`; stack.c
# print_frame: `#N  0xADDR in FUNC (ARGS) at FILE:LINE` or `from LIB`); gdb's thread 1 is the main thread
# (stall34: a named thread's name is inside the parentheses, gdb/thread.c thread_target_id_str `"%s \"%s\""`:
# `Thread 1 (Thread 0x7fc5.. (LWP 10683) "sglang::schedul"):`, as dv22-002 pasted it)
GDB_THREAD = (r"^Thread (?P<n>\d+) \(Thread (?P<tid>0x[0-9a-fA-F]+) \(LWP (?P<lwp>\d+)\)(?: \"[^\"]*\")?\)"
              r"(?: \"[^\"]*\")?:\s*$")
GDB_FRAME = (r"^#\d+\s+(?:0x[0-9a-fA-F]+ in )?(?P<func>[^\s(]+) \(.*?\)"
             r"(?: at (?P<at>\S+:\d+)| from (?P<lib>\S+))?\s*$")
# frames that say only that a thread waits (libc, pthread, an unnamed address): the frame above says on what
GDB_WAIT = (r"^(?:pthread_\w+|__GI_\w+|__lll_\w+|__pthread\w*|__futex\w*|sem_\w+|syscall|poll|epoll_wait|"
            r"nanosleep|futex\w*|do_futex\w*|__libc_\w+|select|recv|read)(?:@.*)?$")


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("py-spy")
    t = pl.col("text")
    g_tid, g_n, g_lwp = (pl.col("_g").struct.field(f) for f in ("tid", "n", "lwp"))
    gdb = t.str.extract_groups(GDB_FRAME).struct
    gdb_loc = pl.coalesce(gdb.field("at"), gdb.field("lib").str.extract(r"([^/]+)$", 1), pl.lit("?"))
    # (a dump each line of which a launcher prefixed with its global rank, `[rank2]: Thread 2003 (active)`: that rank)
    prefixed = (pl.col("launch_rank").cast(pl.Int64, strict=False) if "launch_rank" in lines.columns
                else pl.lit(None, pl.Int64))
    df = lines.select("file", "line", "text", prefixed.alias("_prefixed")).with_columns(
        t.str.extract(PROCESS, 1).cast(pl.Int64, strict=False).alias("pid"),
        pl.coalesce(t.str.extract(RANK_HINT, 1).cast(pl.Int64, strict=False),
                    pl.when(t.str.contains(any_of(PROCESS, THREAD))).then(pl.col("_prefixed"))).alias("rank"),
        t.str.extract_groups(THREAD).alias("_t"),
        t.str.extract(FH_THREAD, 1).alias("_fh_tid"),
        t.str.extract_groups(GDB_THREAD).alias("_g"),
        pl.coalesce(t.str.extract(FRAME, 1), t.str.extract(FH_FRAME, 3), gdb.field("func")).alias("func"),
        pl.coalesce(t.str.extract(FRAME, 2), pl.concat_str(t.str.extract(FH_FRAME, 1), pl.lit(":"),
                                                           t.str.extract(FH_FRAME, 2)),
                    pl.when(gdb.field("func").is_not_null()).then(gdb_loc)).alias("loc"),
        # a gdb frame that says only that the thread waits (the frame above it says on what)
        (gdb.field("func").str.contains(GDB_WAIT).fill_null(False)).alias("_wait"),
        t.str.extract(SAID_RANK, 1).cast(pl.Int64, strict=False).alias("_said"),
    ).unnest("_t").with_columns(
        pl.coalesce("tid", "_fh_tid", g_tid).alias("tid"),
        pl.when(pl.col("_fh_tid").is_not_null()).then(pl.lit("dumped"))
        .when(g_tid.is_not_null()).then(pl.format("LWP {}", g_lwp))
        .otherwise(pl.col("state")).alias("state"),
        pl.when(pl.col("_fh_tid").is_not_null()).then(pl.lit("faulthandler"))
        .when(g_n == "1").then(pl.lit("MainThread"))
        .when(g_n.is_not_null()).then(pl.format("gdb thread {}", g_n))
        .otherwise(pl.col("tname")).alias("tname"),
    ).drop("_fh_tid", "_g", "_prefixed")
    if df["tid"].null_count() == df.height:  # a header with no dump under it yet
        head = df.filter(pl.col("rank").is_not_null()
                         | (pl.col("pid").is_not_null() & t.str.starts_with("Process ")))
        cpp = pl.concat([_cpp_stacks(lines), _tracebacks(lines)], how="diagonal_relaxed")
        return Parsed("py-spy", {"events": cpp} if cpp.height else {}, pl.concat([
            head.join(df.filter(pl.col("rank").is_not_null()).select("file").unique(), on="file", how="semi")
            .select("file", "line"),
            df.filter(t.str.contains(CPP_FRAME)).select("file", "line")]))
    is_thread = pl.col("tid").is_not_null()
    starts = is_thread & ~is_thread.shift(1, fill_value=False).over("file")
    df = df.with_columns(
        pl.col("pid", "rank").forward_fill().over("file"),
        # a new block starts at a thread line that follows a non-thread line of the same file
        starts.cum_sum().alias("block"),
        starts.cum_sum().over("file").alias("_nth"),
        _said_rank(is_thread).alias("_said"),
    ).with_columns(pl.coalesce("rank", "_said").alias("rank"))
    in_block = pl.col("_nth") > 0
    frame = pl.format("{} ({})", "func", "loc")
    frames = (
        df.filter(pl.col("func").is_not_null() & in_block)
        .group_by("block", maintain_order=True)
        .agg(
            pl.coalesce(frame.filter(~pl.col("_wait") & (pl.col("func") != "??")).first(),
                        frame.filter(~pl.col("_wait")).first(), frame.first()).alias("where"),
            frame.str.join(" <- ").alias("frames"),
        )
    )
    threads = df.filter(is_thread).join(frames, on="block", how="left").with_columns(
        pl.lit(EventKind.STACK).alias("kind"),
        # an unnamed thread whose id is its process's is the main thread (Linux: the first thread's tid is the
        # pid)
        pl.format("{} thread {} ({})",
                  pl.coalesce("tname", pl.when(pl.col("tid") == pl.col("pid").cast(pl.Utf8))
                              .then(pl.lit("MainThread")), pl.lit("unnamed")),
                  "tid", "state").alias("thread"),
        t.alias("message"),
    )
    used = (t.str.contains(any_of(PROCESS, THREAD, FRAME, PYTHON, RANK_HINT, FH_THREAD, FH_FRAME, CPP_FRAME,
                                  GDB_THREAD, GDB_FRAME))
            | (pl.col("_said").is_not_null() & t.str.contains(SAID_RANK)))
    # the ranks a dump names (tracekit run's header, a person's `The stack for rank0:`): seen in a stack
    ranks = (threads.filter(pl.col("rank").is_not_null()).select("file", "pid", "rank")
             .unique(maintain_order=True))
    return Parsed("py-spy", {"events": pl.concat([threads.drop("_nth", "_wait", "_said"), _cpp_stacks(lines),
                                                  _tracebacks(lines)], how="diagonal_relaxed"),
                             "ranks": ranks.with_columns(pl.lit("stacks").alias("source"))},
                  df.filter(used).select("file", "line"))


def _said_rank(is_thread: pl.Expr) -> pl.Expr:
    """The rank a person's header names (``SAID_RANK``) for every line of the dump that starts within
    HINT_LINES lines under it, up to the next header or ``Process`` line; null elsewhere."""
    said = pl.col("_said").is_not_null() | pl.col("text").str.contains(PROCESS)
    part = said.cum_sum().over("file")
    at = pl.when(said).then(pl.col("line")).forward_fill().over("file")
    first_thread = pl.when(is_thread).then(pl.col("line")).min().over("file", part)
    near = (first_thread - at) <= HINT_LINES
    return pl.when(near).then(pl.col("_said").forward_fill().over("file", part))


def _tracebacks(lines: pl.DataFrame) -> pl.DataFrame:
    """One ``stack`` event (thread ``MainThread traceback``) per run of Python's traceback frames that
    says where a process was, not where it failed: one a person stopped (``KeyboardInterrupt`` under it:
    Python raises it in the main thread, in the call it was waiting in) or the file's one traceback,
    pasted alone with no exception under it. A traceback that ends in an error is the error's
    (``parsers/torch_log.py``); one whose header says it was raised and whose error line is not in the
    excerpt (it ends the file) is a ``stack`` event of thread ``RAISED``: a failure there, its message cut."""
    t = pl.col("text")
    boxed = (pl.col("raw").str.contains(RICH_BOX, literal=True).fill_null(False) if "raw" in lines.columns
             else t.str.contains(RICH_BOX, literal=True))
    rich = t.str.contains(RICH_FRAME) & boxed
    fr = lines.filter(t.str.contains(TB_FRAME) | rich)
    if not fr.height:
        return pl.DataFrame()
    g = t.str.extract_groups(TB_FRAME).struct
    r = t.str.extract_groups(RICH_FRAME).struct
    # an error line between two frames ends one traceback (a chained one, another process's, follows)
    errs = lines.select("file", "line", (t.str.contains(TB_ERROR) & ~t.str.contains(TB_FRAME)
                                         & ~boxed).cast(pl.Int32)
                        .cum_sum().over("file").alias("_errs"))
    fr = fr.join(errs, on=["file", "line"], how="left").sort("file", "line").with_columns(
        pl.coalesce(g.field("func"), r.field("func"), r.field("func2")).alias("_func"),
        pl.when(rich & r.field("src").is_null()).then(pl.format("?:{}", r.field("lineno2")))
        .otherwise(pl.format("{}:{}", pl.coalesce(g.field("src"), r.field("src")),
                             pl.coalesce(g.field("lineno"), r.field("lineno")))).alias("_loc"),
        (((pl.col("line") - pl.col("line").shift(1).over("file"))
          > pl.when(rich).then(RICH_GAP).otherwise(TB_GAP))
         | (pl.col("_errs") != pl.col("_errs").shift(1).over("file"))).fill_null(True)
        .cum_sum().over("file").alias("_tb"))
    frame = pl.format("{} ({})", "_func", "_loc")
    blocks = fr.group_by("file", "_tb", maintain_order=True).agg(
        pl.col("line").first(), pl.col("line").last().alias("_last"), frame.last().alias("where"),
        frame.reverse().str.join(" <- ").alias("frames"), pl.col("text").first().alias("message"),
        *([pl.col("launch_rank").drop_nulls().first().cast(pl.Int64, strict=False).alias("rank")]
          if "launch_rank" in lines.columns else []))
    # the first line under each block that is not its code (indented), a caret line or blank
    code = (r"^\s*$|^\s{2,}|^\s*[\^~]+\s*$|^\[Previous line repeated|^\s*```|^\s*[│╰]"
            r"|^\s*(?:❱\s*)?\d+ │")  # (rich's code lines, their borders taken off)
    later = (lines.select("file", pl.col("line").alias("_at"), "text")
             .join(blocks.select("file", "_tb", "_last"), on="file")
             .filter((pl.col("_at") > pl.col("_last")) & ~t.str.contains(code)).sort("_at"))
    after = later.filter(pl.col("_at") <= pl.col("_last") + TB_GAP + 2).group_by("file", "_tb").agg(
        pl.col("text").first().alias("_after"))
    # a traceback that ends the file (nothing but its code, or a fence, under it): the paste was cut there
    ends = blocks.select("file", "_tb").join(later.select("file", "_tb").unique(), on=["file", "_tb"],
                                             how="anti")
    ends = ends.with_columns(pl.lit(True).alias("_ends"))
    # the traceback's own header right above its first frame: an exception was raised
    headed = (lines.filter(t.str.contains(TB_HEAD)).select("file", (pl.col("line") + 1).alias("line"))
              .with_columns(pl.lit(True).alias("_headed")))
    blocks = (blocks.join(after, on=["file", "_tb"], how="left").join(headed, on=["file", "line"], how="left")
              .join(ends, on=["file", "_tb"], how="left"))
    after_t = pl.col("_after")
    interrupted = after_t.str.contains(TB_INTERRUPT).fill_null(False)
    # raised, and the excerpt ends under it (its error line cut): a failure whose message is missing
    cut = (blocks.filter(pl.col("_headed").fill_null(False) & ~interrupted
                         & pl.col("_ends").fill_null(False))
           .with_columns(pl.lit(EventKind.STACK).alias("kind"), pl.lit(RAISED).alias("thread"),
                         pl.format("Traceback (most recent call last): raised in {} (its error line is not "
                                   "in the excerpt)", "where").alias("message")))
    blocks = blocks.filter(~pl.col("_headed").fill_null(False) | interrupted)
    # a stack pasted alone: the file's one traceback (interleaved tracebacks of several processes, cut
    # before their errors, are no stacks of where each waits)
    alone = (pl.len().over("file") == 1) & (after_t.is_null() | ~after_t.str.contains(TB_ERROR))
    keep = interrupted | alone
    return pl.concat([cut, blocks.filter(keep).with_columns(
        pl.lit(EventKind.STACK).alias("kind"),
        pl.when(after_t.str.contains(TB_INTERRUPT).fill_null(False))
        .then(pl.lit("MainThread traceback (interrupted)"))
        .otherwise(pl.lit("MainThread traceback")).alias("thread"))],
        how="diagonal_relaxed").drop("_tb", "_last", "_after", "_headed", "_ends")


def _cpp_stacks(lines: pl.DataFrame) -> pl.DataFrame:
    """One ``stack`` event (thread ``C++ frames``) per run of torch's ``frame #N:`` lines."""
    t = pl.col("text")
    f = lines.select("file", "line", "text").filter(t.str.contains(CPP_FRAME))
    if not f.height:
        return pl.DataFrame()
    g = t.str.extract_groups(CPP_FRAME).struct
    f = f.with_columns(g.field("n").cast(pl.Int64).alias("_n"), g.field("sym").alias("_sym"))
    # a run restarts at frame #0 or after a gap of lines
    start = (pl.col("_n") == 0) | (pl.col("line") - pl.col("line").shift(1).over("file") > 2).fill_null(True)
    f = f.with_columns(start.cast(pl.Int32).cum_sum().over("file").alias("_run"))
    return f.group_by("file", "_run", maintain_order=True).agg(
        pl.col("line").first(), pl.col("text").first().alias("message"),
        pl.col("_sym").filter(~pl.col("_sym").str.contains(CPP_NOISE)).first().alias("where"),
        pl.col("_sym").str.join(" <- ").alias("frames"),
    ).with_columns(pl.lit(EventKind.STACK).alias("kind"), pl.lit("C++ frames").alias("thread")).drop("_run")
