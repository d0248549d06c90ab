"""Text logs as one polars frame of lines, launcher prefixes taken off.

Every text parser works on the frame this module builds: ``file``, ``line`` (1-based, as an
editor counts), ``raw`` and ``text`` (the line without its launcher prefix, after the last
carriage return so a tqdm bar does not hide the message behind it), plus the rank, host or
pid a launcher prefix names (``launch_rank`` a global rank, ``local_tag`` a local one, ``world_tag``
a world's size; ``pdsh_host`` where a file has the prefix on several lines, ``host_said`` for any
``host: `` taken off), and the level of a logger header taken off (``log_level``). A prefix no list
holds is learned from the file that carries it (``_learned``). The regex work runs in polars (Rust),
never in a Python loop per line.

A message that a terminal hard-wrapped at a fixed width (pasted from a console: many lines of
exactly the widest length, each continued on the next) is joined back onto its first line; the
lines that continued it keep their numbers, with an empty ``text`` and ``cont_of`` naming the
line they continue, so each is counted as understood exactly when that line is.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers.prefixes import (ANSI, ERROR_CODE, LEVELS, MAYBE_PREFIX, PDSH_OVER_CODE, PREFIX,
                                      STAMPS, TAGS, TIMESTAMP)

# a tqdm bar a message was written after, on the same line (no carriage return between): the message counts
BAR_THEN = r"^[^|]*\d+%\|[^|]*\|\s*[\d.]+[kMG]?/[\d.?]+[kMG]? \[[^\]]*\]\s*(?P<rest>\S.*)$"
# a line that starts a record of its own (a prefixed log line, a traceback), never a wrapped tail
RECORD_HEAD = r"^(?:\[|\(|[\w.\-]+:\d+:\d+ |\d{4}-\d\d-\d\d|[IWEF]\d{4} |Traceback|\s+File \")"
MIN_WRAP = 70  # narrower "widths" are short lines that happen to be alike


def lines_frame(file: str, text: str) -> pl.DataFrame:
    """Split ``text`` into the lines frame; one row per line, none dropped."""
    return lines_frames([raw(file, text)])


def raw(file: str, text: str | list[str], numbers=None) -> pl.DataFrame:
    """``file, line, raw``: the lines of ``text``, or the lines ``text`` already cut, numbered
    ``numbers`` (1-based; default 1, 2, ...)."""
    parts = text.split("\n") if isinstance(text, str) else text
    if isinstance(text, str) and parts and parts[-1] == "":
        parts.pop()
    df = pl.DataFrame({"raw": pl.Series("raw", parts, dtype=pl.Utf8)})
    df = df.with_row_index("line", offset=1) if numbers is None else df.with_columns(
        pl.Series("line", numbers, dtype=pl.Int64))
    return df.select(pl.col("line").cast(pl.Int64), "raw", pl.lit(file).alias("file"))


def _head6(s: pl.Expr) -> pl.Expr:
    """A line's first six characters with its digits masked: records that count (`    3 4.36 s run`,
    `    4 4.40 s run`) start alike."""
    return s.str.slice(0, 6).str.replace_all(r"\d", "0")


def _unwrap(df: pl.DataFrame) -> pl.DataFrame:
    """Join lines a terminal hard-wrapped back onto the line they continue (see the module's doc).
    A file is wrapped at width W when at least 3 of its lines are exactly W characters long as written
    (the terminal wrapped the prefix too) and none is longer than W + 1 (a paste's quote mark or backtick
    adds one), rule lines (``-----``) left out; a line of W or W + 1 continues on the next unless it ends
    in padding (two spaces or more), the next line starts a record of its own or starts as this one does
    (digits aside), and unless fewer than two lines continue so."""
    cr = pl.col("raw").str.contains("\r", literal=True)
    n = pl.when(cr).then(pl.col("text").str.len_chars()).otherwise(
        pl.col("raw").str.strip_chars_end("\n").str.len_chars())
    # (NCCL's COLL lines are whole records, and the C scanner may have taken them out of this frame:
    # they count neither way, so the frame reads the same with the scanner and without)
    whole = pl.col("text").str.contains(": opCount ", literal=True)
    rule = pl.col("text").str.contains(r"^\s*(-+|=+|\*+|_+|#+|~+)\s*$")  # a rule line is no wrapped text
    counts = df.filter(~whole & ~rule).group_by("file", n.alias("_w")).agg(pl.len().alias("_k"))
    widest = counts.group_by("file").agg(pl.col("_w").max().alias("_max"))
    # W: the longest width at least 3 lines have, where no line is longer by more than the paste's one
    wrapped = (counts.filter((pl.col("_k") >= 3) & (pl.col("_w") >= MIN_WRAP)).sort("_w")
               .group_by("file").agg(pl.col("_w").last()).join(widest, on="file")
               .filter(pl.col("_max") <= pl.col("_w") + 1).drop("_max"))
    df = df.with_columns(pl.lit(None, pl.Int64).alias("cont_of"))
    if not wrapped.height:
        return df
    t = pl.col("text")
    # only the lines of width W or more in the files that look wrapped are looked at, with the line after
    # each
    cand = (df.select("file", "line", "text", "raw")
            .join(wrapped.select("file", "_w"), on="file", how="inner")
            .filter((n >= pl.col("_w")) & ~whole & ~rule))
    nxt = df.select("file", (pl.col("line") - 1).alias("line"), t.alias("_nxt"),
                    pl.col("raw").alias("_nraw")).join(
        cand.select("file", "line"), on=["file", "line"], how="semi")
    cand = cand.join(nxt, on=["file", "line"], how="left")
    nx = pl.col("_nxt")
    # (a log line repeated at the widest length is not wrapped: the next line starts as it does)
    joins = (~nx.str.contains(": opCount ", literal=True) & ~t.str.ends_with("  ") & nx.is_not_null()
             & (nx.str.strip_chars() != "") & ~nx.str.contains(RECORD_HEAD)
             & ~pl.col("_nraw").str.contains(RECORD_HEAD)  # (a logger's header taken off the next line)
             & (_head6(pl.col("_nraw")) != _head6(pl.col("raw"))) & (_head6(nx) != _head6(t))).fill_null(False)
    cand = cand.filter(joins)
    cand = cand.filter(pl.len().over("file") >= 2)
    if not cand.height:
        return df
    # a line continues its predecessor when the predecessor joins; chains of them end at a line that does not
    joined = cand.select("file", "line").with_columns(pl.lit(True).alias("_j"))
    ends = pl.concat([joined, joined.with_columns(pl.col("line") + 1)]).unique(["file", "line"])
    sub = (df.select("file", "line", "text")
           .join(ends.select("file", "line"), on=["file", "line"], how="semi")
           .join(joined, on=["file", "line"], how="left").sort("file", "line"))
    prev_joins = (pl.col("_j").shift(1).over("file").fill_null(False)
                  & (pl.col("line").shift(1).over("file") == pl.col("line") - 1)).fill_null(False)
    sub = sub.with_columns(prev_joins.alias("_cont"))
    sub = sub.with_columns((~pl.col("_cont")).cum_sum().over("file").alias("_chain"))
    heads = sub.group_by("file", "_chain").agg(pl.col("line").first().alias("_head"),
                                               t.str.join("").alias("_joined"))
    sub = sub.join(heads, on=["file", "_chain"], how="left").select(
        "file", "line", pl.when(pl.col("_cont")).then(pl.lit("")).otherwise(pl.col("_joined")).alias("_text"),
        pl.when(pl.col("_cont")).then(pl.col("_head")).alias("_cont_of"))
    return df.join(sub, on=["file", "line"], how="left", maintain_order="left").with_columns(
        pl.coalesce("_text", "text").alias("text"), pl.coalesce("_cont_of", "cont_of").alias("cont_of")
    ).drop("_text", "_cont_of")


HEAD_LINES = 50  # lines of a file's head that show whether the whole of it is indented


def _dedent(df: pl.DataFrame, again=None) -> pl.DataFrame:
    """A paste indented as a whole (a code block inside a list item, a quoted mail, a log viewer's margin)
    reads as its lines do: each file's common margin of blanks is taken off every line (Python's
    ``textwrap.dedent``: the deepest margin every non-blank line has). A traceback's tail (`  File "..."`
    at the margin, its code two blanks deeper) keeps the two blanks Python prints before a frame. ``again(lines)``
    reads the prefixes the margin hid (``file, line, raw, text`` in; the same with its tags out)."""
    t = pl.col("text")
    filled = t.str.strip_chars() != ""
    # (a file whose head has a line at the margin has none: only the others are looked at whole)
    head = df.filter(pl.col("line") <= HEAD_LINES).filter(filled)
    indented = head.group_by("file").agg(t.str.contains(r"^[ \t]").all().alias("_all")).filter("_all")
    if not indented.height:
        return df
    lead = t.str.len_chars() - t.str.strip_chars_start(" \t").str.len_chars()
    margin = (df.join(indented, on="file", how="semi").filter(filled).with_columns(lead.alias("_lead"))
              .group_by("file").agg(pl.col("_lead").min().alias("_m"),
                                     (t.filter(pl.col("_lead") == pl.col("_lead").min())
                                      .str.contains(r"^[ \t]*  File \"").any()
                                      & (pl.col("_lead") == pl.col("_lead").min() + 2).any()).alias("_frame"))
              .select("file", (pl.col("_m") - pl.when("_frame").then(2).otherwise(0)).alias("_m"))
              .filter(pl.col("_m") > 0))
    if not margin.height:
        return df
    df = (df.join(margin, on="file", how="left", maintain_order="left")
          .with_columns(pl.when(pl.col("_m").is_not_null()).then(t.str.slice(pl.col("_m"))).otherwise(t)
                        .alias("text")).drop("_m"))
    if again is None:
        return df
    moved = df.join(margin.select("file"), on="file", how="semi").select("file", "line", "raw", "text")
    return df.update(again(moved), on=["file", "line"])


def _rewrite(df: pl.DataFrame, where: pl.Expr, text: pl.Expr) -> pl.DataFrame:
    """``text`` as the new text of the lines ``where`` holds; nothing computed when it holds on none."""
    mask = df.select(where.fill_null(False)).to_series()
    if not mask.any():
        return df
    return df.with_columns(pl.when(mask).then(text).otherwise(pl.col("text")).alias("text"))


# A prefix the list does not know, learned from the file that carries it.
#
# Real logs pass through wrappers no list can hold (a test runner's `E       `, a job tool's
# `B-job/0 [w1] `, a site's own `node12 | `); one such prefix hides every line under it from every
# parser. Where a file's lines carry a recurring leading prefix before text a parser knows (an NCCL
# header, `Traceback`, `File "`, a c10d `[E...]` line, an `XError: ` line, torchrun's `[rank3]:`), the
# prefix is learned from those lines, its digits aside (`node12 | ` and `node3 | ` are one prefix), and
# taken off every line of the file that starts with it. A learned prefix names no rank, host or pid:
# only a known template says which of its numbers is the rank (``_PARTS``).
#
# The prefix is learned from the first ``LEARN_LINES`` lines of each file (a wrapper writes it on every
# line, so a file's head shows it), and the pattern runs only over the files that have one: the cost on
# a large log is one regex over its head.

# text a parser knows at the start of a line, the leftmost found ending the prefix: an NCCL header
# (`host:pid:tid [dev] NCCL INFO`, `... [dev] file.cc:12 NCCL WARN`), a Python traceback, its frame or
# its exception, c10d's glog header (`[E1202 12:00:00.1 ...`, `[E ProcessGroupNCCL.cpp:828]`), torchrun's
# `[rank3]:` / `[default3]:`, MPI's `[1,3]<stdout>:`, a logging.basicConfig header
HEADS = (
    r"[\w.\-]+:\d+:\d+ \[\d+\] (?:\S+:\d+ )?NCCL (?:INFO|WARN|ERROR|TRACE|ABORT)"
    r"|Traceback \(most recent call last\)|File \""
    r"|\b(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt): "
    r"|\[[EWIF]\d{4} \d\d:\d\d|\[[EWIF] [\w.]+\.(?:cpp|cc|h|hpp):\d+\]|\[rank\d+\]:|\[default\d+\]:"
    r"|\[\d+,\d+\]<std(?:out|err)>:|(?:INFO|WARNING|ERROR|CRITICAL):[\w.]+:"
)
# (the lead ends at a word's edge: `host1:2:3 [0] NCCL` has no lead `h` before a header `ost1:2:3 [0] NCCL`)
LEAD = r"^(.{0,%d}?[^\w.\-])(?:%s)"
LONGEST = 80  # characters: a longer lead is the message's own words
LEARN_LINES = 2000
MIN_LINES = 2  # lines that show the prefix before a known head


def _learned(df: pl.DataFrame) -> pl.DataFrame:
    """``file, pattern``: the prefix each file's lines carry (a regex anchored at the line's start that
    takes the prefix and the padding after it, or the whole of a line that is the prefix alone)."""
    t = pl.col("text")
    head = df.select("file", "text").filter(pl.int_range(pl.len()).over("file") < LEARN_LINES)
    lead = t.str.extract(LEAD % (LONGEST, HEADS), 1)
    cand = head.select("file", lead.alias("_lead")).drop_nulls("_lead")
    if not cand.height:
        return pl.DataFrame(schema={"file": pl.Utf8, "pattern": pl.Utf8})
    core = pl.col("_lead").str.strip_chars_end()
    pad = pl.col("_lead").str.len_chars() - core.str.len_chars()
    cand = cand.with_columns(core.alias("_core"), pad.alias("_pad"))
    # a lead that starts with blanks is indentation, one with quotes the message's words, one with a known
    # head a line of its own run together with this one (NCCL's interleaved lines)
    c = pl.col("_core")
    cand = cand.filter(c.str.contains(r"^[^\s\"']") & ~c.str.contains(r"[\"']") & ~c.str.contains(HEADS))
    shape = pl.col("_core").str.escape_regex().str.replace_all(r"\d+", r"\d+")
    seen = cand.group_by("file").agg(pl.len().alias("_of"))
    best = (cand.group_by("file", shape.alias("_shape")).agg(pl.len().alias("_n"), pl.col("_pad").min())
            .join(seen, on="file").filter((pl.col("_n") >= MIN_LINES) & (2 * pl.col("_n") >= pl.col("_of")))
            .sort("_n", descending=True).unique("file", keep="first"))
    return best.select("file", pl.format("^{}(?:\\s{{{}}}|\\s*$)", "_shape", "_pad").alias("pattern"))


def _take_learned(df: pl.DataFrame, again) -> pl.DataFrame:
    """``df`` with each file's learned prefix taken off the lines that carry it; ``again(lines)`` reads
    the known prefixes under it (``file, line, raw, text`` in; the same with its tags out)."""
    found = _learned(df)
    if not found.height:
        return df
    t = pl.col("text")
    # one regex a file (a pattern read from a column is compiled again on every row)
    subs = [part.with_columns(t.str.extract(part["pattern"][0], 0).str.len_chars().alias("_cut"))
            for part in df.select("file", "line", "raw", "text").join(found, on="file", how="inner")
            .partition_by("file", maintain_order=True)]
    # a line that starts with a known head carries no prefix, whatever its first characters share
    sub = pl.concat(subs).filter(pl.col("_cut").is_not_null() & ~t.str.contains(f"^(?:{HEADS})"))
    if not sub.height:
        return df
    sub = sub.select("file", "line", "raw", t.str.slice(pl.col("_cut")).alias("text"))
    return df.update(again(sub), on=["file", "line"])


def _take_prefixes(df: pl.DataFrame) -> pl.DataFrame:
    """The known prefixes (``PREFIX``) taken off ``text``, what they name in columns (``TAGS``), and the
    line's wall-clock ``ts`` where a prefix or the line's start gives one."""
    # Capture groups are slow: run them only on lines that can carry a prefix or a timestamp.
    maybe = pl.col("text").str.contains(MAYBE_PREFIX)
    tagged = df.filter(maybe).with_columns(pl.col("text").str.extract_groups(PREFIX).alias("_p")).unnest("_p")
    if not tagged.height:
        return df.with_columns(*[pl.lit(None, pl.Utf8).alias(c) for c in (*TAGS, "ts") if c not in STAMPS])
    t = pl.col("text")
    tagged = tagged.with_columns(t.str.replace(PREFIX, "").str.replace_all(ANSI, "").alias("text"))
    tagged = tagged.with_columns(pl.coalesce(*STAMPS, t.str.extract(TIMESTAMP, 1)).alias("ts")).drop(STAMPS)
    return pl.concat([df.filter(~maybe), tagged], how="diagonal").sort("file", "line", maintain_order=True)


def lines_frames(raws: list[pl.DataFrame]) -> pl.DataFrame:
    """The lines of many files (frames of ``raw``) as one frame, so every regex runs once over all of them."""
    df = pl.concat(raws) if raws else raw("", "")
    cr = pl.col("raw").str.contains("\r", literal=True)
    # CRLF ends a line; any other carriage return (a tqdm bar) hides what came before it
    last = pl.col("raw").str.strip_suffix("\r").str.replace(r"^.*\r", "")
    df = _dedent(df.with_columns(pl.when(cr).then(last).otherwise(pl.col("raw")).alias("text")))
    # a terminal UI's box (`│ text   │`, k8s dashboards, rich panels): its borders and padding are no text
    # (each rewrite runs only where some line needs it: a when/then computes its branch on every line)
    df = _rewrite(df, pl.col("text").str.contains(r"[│┃║]"),
                  pl.col("text").str.replace(r"^\s*[│┃║]\s?", "")
                  .str.replace(r"\s*[│┃║]\s*$", ""))
    df = _rewrite(df, pl.col("text").str.contains("%|", literal=True),
                  pl.coalesce(pl.col("text").str.extract(BAR_THEN, 1), pl.col("text")))
    # (and again under a quote's or a wrapper's prefix: `>     text`)
    df = _dedent(_take_learned(_take_prefixes(df), _take_prefixes), _take_prefixes)
    df = df.with_columns(pl.coalesce(*LEVELS).alias("log_level")).drop(LEVELS)
    # Ray's log dedup mark says nothing of the line
    df = _rewrite(df, pl.col("text").str.contains(" across cluster]", literal=True),
                  pl.col("text").str.replace(r"\s*\[repeated \d+x across cluster\]\s*$", ""))
    # a `host: ` prefix is pdsh's only where the file has it on more than one line (`mlx5: ...` once is a
    # message), and never an error code's shape (Ascend CANN's `EH9999: Inner Error!`, `EI0006: ...`, under
    # pdsh's own `worker-1: `: no prefix, it names no host and stays the message's first word; pdsh's before
    # it does name one)
    code = pl.col("pdsh_host").str.contains(ERROR_CODE)
    if df.select(code.any()).item():  # (the code is the message's first word: it goes back on its text)
        df = df.with_columns(pl.when(code).then(pl.format("{}: {}", "pdsh_host", "text"))
                             .otherwise(pl.col("text")).alias("text"),
                             pl.when(code).then(pl.col("raw").str.extract(PDSH_OVER_CODE, 1))
                             .otherwise(pl.col("pdsh_host")).alias("pdsh_host"))
    said = df.filter(pl.col("pdsh_host").is_not_null()).group_by("file", "pdsh_host").agg(
        pl.len().alias("_said"))
    df = df.with_columns(pl.col("pdsh_host").alias("host_said"))
    if said.height:
        df = df.join(said, on=["file", "pdsh_host"], how="left", maintain_order="left").with_columns(
            pl.when(pl.col("_said") > 1).then(pl.col("pdsh_host")).alias("pdsh_host")).drop("_said")
    # SkyPilot's node (`(head, rank=0, pid=..) `, `(worker1, rank=1, pid=.., ip=..) `; `(node-1 pid=..) `
    # before it named them by number): one host each, by the name SkyPilot gives it (the head's has no ip)
    sky = pl.col("sky_rank").is_not_null() | pl.col("ray_actor").str.contains(r"^node-\d+$")
    df = df.with_columns(pl.when(sky.fill_null(False)).then(pl.col("ray_actor"))
                         .otherwise(pl.col("pdsh_host")).alias("pdsh_host"),
                         pl.coalesce("ray_ip", "sky_ip").alias("ray_ip")).drop("sky_rank", "sky_ip")
    df = _unwrap(df)
    ints = ("rank_tag", "tmpl_rank", "local_tag", "tmpl_local", "mpi_rank", "task_tag", "bare_tag",
            "word_tag", "ray_pid", "actor_rank", "slash_rank", "slash_world", "comp_rank", "comp_pid",
            "trt_rank", "parlai_rank")
    # vLLM's worker process names its ranks in its groups (v1/executor/multiproc_executor.py: `Worker`, then
    # `_DP{dp}` / `_PP{pp}` / `_TP{tp}` where that group has more than one rank): with no data-parallel and no
    # pipeline rank past the first, its tensor-parallel rank is the global one (`(Worker_TP2 pid=967) `)
    # (its names of mid-2025, `VllmWorker TP2`, `VllmWorker PP1_TP0`, read as `Worker_TP2`, `Worker_PP1_TP0`)
    named = pl.when(pl.col("vllm_groups").is_not_null()).then(pl.format("Worker_{}", "vllm_groups")).otherwise(
        pl.col("ray_actor"))
    vllm = pl.coalesce(named.str.extract(r"^Worker(?:_PP0)?_TP(\d+)(?:_EP\d+)?$", 1),
                       named.str.extract(r"^Worker_PP(\d+)(?:_EP\d+)?$", 1))
    df = df.with_columns(pl.coalesce("actor_rank", vllm).alias("actor_rank"),
                         pl.coalesce("ray_pid", "comp_pid").alias("ray_pid")).drop("vllm_groups")
    df = df.with_columns(pl.col("line").cast(pl.Int64),
                         *[pl.col(c).cast(pl.Int64, strict=False) for c in ints],
                         pl.coalesce("pdsh_host", "arrow_host", "std_host", "sys_host").alias("pdsh_host"))
    # (a line that is `[3]:` alone is no worker's: torchrun's ChildFailedError numbers its failures so)
    df = df.with_columns(pl.when(pl.col("raw").str.contains(r"^\[\d+\]:\s*$")).then(None)
                         .otherwise(pl.coalesce("local_tag", "tmpl_local")).alias("local_tag"))
    # `[1757] `, `[1758] `, ... a line apart each: a viewer's line numbers, not ranks; `[3] NCCL INFO ...`:
    # NCCL's own CUDA device field of a line whose `host:pid:tid` was cut off, not a rank
    # (at least 3 tags the same distance from their line numbers: a mode of distinct steps is any of them)
    step = (pl.col("bare_tag") - pl.col("line")).alias("_step")
    numbered = ((step.is_not_null() & (pl.col("bare_tag").count().over("file", step) >= 3))
                | pl.col("text").str.contains(r"^(?:\S+:\d+ )?NCCL (?:INFO|WARN|TRACE|ERROR) ")
                | pl.col("raw").str.contains(SHELL_JOB))
    df = df.with_columns(pl.when(numbered.fill_null(False)).then(None).otherwise(pl.col("bare_tag"))
                         .alias("bare_tag"))
    df = _pid_tags(_viewer_numbers(df))
    return df.with_columns(
        # the global rank a launcher's prefix names (torchrun, a torchelastic template's ${rank}, MPI, vLLM's
        # `(VllmWorker rank=1 pid=..)`, icefall's `(1/8)`, a script's own tag); the world's size one names
        pl.coalesce("rank_tag", "tmpl_rank", "mpi_rank", "actor_rank", "slash_rank", "comp_rank", "trt_rank",
                    "parlai_rank", "bare_tag", "word_tag").alias("launch_rank"),
        pl.col("slash_world").alias("world_tag"),
        (pl.col("text").str.strip_chars() == "").alias("blank") & pl.col("cont_of").is_null(),
    ).drop("arrow_host", "std_host", "sys_host", "tmpl_local", "tmpl_rank", "actor_rank", "slash_rank",
           "slash_world", "comp_rank", "comp_pid", "trt_rank", "parlai_rank")


#: a shell's word about its job, whose `[N]` is the job's number, no rank: zsh's (Src/jobs.c: spawnjob's
#: `[%d]` then each pid, `[1] 143628`; printjob's `[1]    143628 exit 1     python train.py`, or `done`,
#: `killed`, ...) and bash's (`[1] 12345`; `[1]+  Exit 1    python train.py`, `Done`, `Killed`, ...)
SHELL_JOB = (r"^\s*\[\d+\][+-]?\s+(?:[+-]\s+)?(?:\d{3,}(?:\s+\d+)*\s*$"
             r"|\d+\s+(?:exit \d+|done|killed|terminated|suspended|running|segmentation fault|abort|hangup"
             r"|interrupt)\b|(?:Exit \d+|Done|Killed|Terminated|Stopped|Running|Segmentation fault|Aborted"
             r"|Hangup|Interrupt)\b)")


#: a process id a line states (`(PID:285, Device:4, RankID:-1)`, `[PID: 285]`, `pid=285`, `(pid: 285)`)
PID_SAID = r"(?i)\bpid\s*[:=]?\s*(\d+)\b"


def _pid_tags(df: pl.DataFrame) -> pl.DataFrame:
    """A bare tag (`[285] `) whose number is a process id the same file states elsewhere (torch_npu's
    `(PID:285, Device:4, RankID:-1)`) is that process's pid, not a rank."""
    tagged = df.filter(pl.col("bare_tag").is_not_null())
    if not tagged.height:
        return df
    said = (df.join(tagged.select("file").unique(), on="file", how="semi")
            .filter(pl.col("text").str.contains(PID_SAID))
            .select("file", pl.col("text").str.extract_all(PID_SAID).alias("_p")).explode("_p")
            .select("file", pl.col("_p").str.extract(r"(\d+)$", 1).cast(pl.Int64).alias("bare_tag"))
            .unique().with_columns(pl.lit(True).alias("_pid")))
    if not said.height:
        return df
    return (df.join(said, on=["file", "bare_tag"], how="left", maintain_order="left")
            .with_columns(pl.when(pl.col("_pid").fill_null(False)).then(None).otherwise(pl.col("bare_tag"))
                          .alias("bare_tag")).drop("_pid"))


def _viewer_numbers(df: pl.DataFrame) -> pl.DataFrame:
    """A code viewer's line numbers copied on lines of their own (`24`, then the line it numbers, `25`,
    ...): at least 3 lines of a number alone, each one more than the one before, are no text."""
    alone = df.filter(pl.col("text").str.contains(r"^\s*\d{1,6}\s*$")).select(
        "file", "line", pl.col("text").str.strip_chars().cast(pl.Int64).alias("_n"))
    if alone.height < 3:
        return df
    n = pl.col("_n")
    counts = ((n - n.shift(1).over("file") == 1) | (n.shift(-1).over("file") - n == 1)).fill_null(False)
    alone = alone.filter(counts).filter(pl.len().over("file") >= 3)
    if not alone.height:
        return df
    return df.join(alone.select("file", "line", pl.lit(True).alias("_v")), on=["file", "line"], how="left",
                   maintain_order="left").with_columns(
        pl.when(pl.col("_v")).then(pl.lit("")).otherwise(pl.col("text")).alias("text")).drop("_v")


def claimed(df: pl.DataFrame, mask: pl.Expr) -> pl.DataFrame:
    """Lines a parser has understood, as ``(file, line)`` rows, for accounting."""
    return df.filter(mask).select("file", "line")
