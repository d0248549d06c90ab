"""A program's block of measured figures that closes its output, with no banner over it (issue 31, s34: healthy
runs read as undecided because nothing in them was decoded).

A benchmark or a script that has done its work prints what it measured, one figure a line, and stops:
vLLM's benchmarks/benchmark_latency.py ``print(f"Avg latency: {np.mean(latencies)} seconds")`` then
``print(f"{percentage}% percentile latency: {percentile} seconds")`` per percentile, torch.utils.benchmark's
``Measurement.__repr__`` (torch/utils/benchmark/utils/common.py: ``  Median: 1.23 ms`` / ``  IQR:    0.02 ms
(1.22 to 1.24)``), an inference script's ``Prefill time: 0.234 s`` / ``Decode time: 3.456 s`` / ``Throughput:
74.1 tokens/s``. parsers/work_done.py reads such figures under a banner (``BANNER``: ``==== Serving Benchmark
Result ====``) and one summary sentence (``SUMMARY``, ``TOOK``); a block without either stayed unknown, and an
excerpt that is only its output was read as one that logged nothing.

What makes such a block a result, not a settings dump or a start-up's timings: ``MIN_LINES`` or more lines in a
row, each one key and one figure (``FIGURE_LINE``), each key once (a series repeats its key: parsers/timings.py
reads that), ``MIN_MEASURED`` or more of them a time or a rate (``MEASURED``: ``0.45 s``, ``12.3 ms``, ``45.6
tokens/s``), no key of a setting (``SETTING``: a timeout, an interval, a port) and not only a set-up's
(``SET_UP``: ``Time to load model``), no failure word, and it is the last thing its file says: a program's
figures over work it has finished. Each block is one ``program_end`` event ``where="result"`` at its first line
(the rank its lines name, where they name one); every line of it is claimed.
"""

from __future__ import annotations

import polars as pl

from tracekit.schema import EventKind

#: a line that is one key and one figure: ``Avg latency: 1.5123 seconds``, ``  Median: 1.23 ms``, ``IQR:    0.02 ms
#: (1.22 to 1.24)``, ``Tokens per second = 45.6``; group ``key`` the key, ``unit`` the unit after the figure
FIGURE_LINE = (r"^\W{0,3}(?P<key>[A-Za-z%\d][\w %()/.,@\-]{0,60}?)\s*[:=]\s*[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"
               r"\s*(?P<unit>[A-Za-zµμ%]*(?:/[A-Za-z]+)?)?\s*(?:\([^()]*\))?\s*$")
#: (the same as a row of a two-column table: ``| latency   | 1.23 s   |``, prettytable's and markdown's)
TABLE_ROW = (r"^\W{0,3}\|\s*(?P<key>[A-Za-z%][\w %()/.,@\-]{0,60}?)\s*\|\s*[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"
             r"\s*(?P<unit>[A-Za-zµμ%]*(?:/[A-Za-z]+)?)?\s*\|\s*$")
#: lines inside a block that are no figure and do not end it: a table's rule (``+------+------+``, ``|---|---|``) or
#: header row (``| metric | value |``), torch.utils.benchmark's trailer (``100 measurements, 10 runs per
#: measurement, 1 thread``: common.py ``Measurement.__repr__``)
NEUTRAL = (r"^\s*[+|][\s+\-=|:]*$|^\s*\|[^\d|]*\|[^\d|]*\|\s*$"
           r"|^\s*\d+ measurements?, \d+ runs? (?:per measurement, )?\d+ threads?\s*$")
#: a figure of time or of a rate: its unit (``s``, ``ms``, ``seconds``, ``tokens/s``, ``GB/s``, ``it/s``), or a key
#: that says it measured one (``Throughput: 812.3``, ``Tokens per second: 45.6``)
TIME_UNIT = r"(?i)^(?:ns|us|µs|μs|usec|ms|msec|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|[A-Za-z]*/s(?:ec)?)$"
RATE_KEY = r"(?i)\b(?:throughput|per second|/s|tflops|mfu|bandwidth|speed|latency|qps|rps)\b|/s\b"
#: a key of a setting, never a measurement (``timeout: 1800 s``, ``log interval: 10 s``, ``port: 29500``)
SETTING = (r"(?i)\b(?:timeout|time ?out|interval|sleep|wait\w*|heartbeat|ttl|deadline|limit|port|seed|retr(?:y|ies)"
           r"|patience|schedule\w*|frequency|every|lr|learning rate|warm-?up)\b")
#: a key that names a rank (FlagScale's straggler report ``    Rank 1: 10.12ms``, samples/wild torch-043): one
#: process's table of every rank's figure, not its own result (parsers/work_done.py reads such tables)
RANK_KEY = r"(?i)^(?:rank|gpu|device|node|worker|proc(?:ess)?)\s*#?\d+$"
#: a set-up's timing (``Time to load model``, ``Model loaded in``, ``Compile time``): a block of only these is a
#: start-up, not a result
SET_UP = (r"(?i)\b(?:load\w*|init\w*|build\w*|compil\w*|import\w*|download\w*|install\w*|set ?up|start ?up"
          r"|warm\w*|creat\w*|alloc\w*)\b")
#: a failure's word on a figure's line (``failed requests: 3``, ``errors: 2``): no clean result
FAILURE = r"(?i)\b(?:errors?|fail\w*|exceptions?|traceback|abort\w*|killed|timed? ?out|refused|oom|out of memory)\b"
#: the fewest lines of a block, and the fewest of them that carry a time or a rate
MIN_LINES = 3
MIN_MEASURED = 2
#: a block's lines: one file's, one rank's where its lines name one (``_who``: the rank, -1 where none)
WHO = ["file", "_who"]
#: where the events go
WHERE = "result"


def _blocks(df: pl.DataFrame) -> pl.DataFrame:
    """The lines of ``df`` (``file, line, text, rank``; said lines only) in the run of figure lines (and
    ``NEUTRAL`` lines among them) that closes each file's (each rank's, where they name one), with ``_fig`` (a figure's line), ``_block`` (how many
    figures), ``_keys`` (distinct keys), ``_measured``, ``_setting`` (a setting's or a rank's key), ``_set_up`` (how many figures of each) and
    ``_failed`` (lines with a failure's word) over that run."""
    t = pl.col("text")
    line, row = t.str.extract_groups(FIGURE_LINE).struct, t.str.extract_groups(TABLE_ROW).struct
    said = pl.coalesce(line.field("key"), row.field("key"))  # (a key is never empty: null where neither matched)
    key = said.str.strip_chars().str.to_lowercase()
    unit = pl.coalesce(line.field("unit"), row.field("unit")).fill_null("")
    fig = said.is_not_null() & ~t.str.contains(r"\bNCCL\b")
    neutral = t.str.contains(NEUTRAL)
    # (each rank's own lines apart where the lines name theirs: interleaved ranks each close with their block)
    df = df.sort("file", "line").with_columns(pl.col("rank").fill_null(-1).alias("_who"), fig.alias("_fig"),
                                              key.alias("_key"),
                                              (unit.str.contains(TIME_UNIT) | key.fill_null("").str.contains(RATE_KEY))
                                              .alias("_m"))
    # (a run of figure lines closing the file or the rank's lines in it: no line that is not one after it)
    df = df.with_columns((~pl.col("_fig") & ~neutral).cast(pl.Int32).cum_sum().over(WHO).alias("_run"),
                         neutral.alias("_neutral"))
    df = df.with_columns(pl.col("_run").max().over(WHO).alias("_last_run"))
    closing = df.filter(pl.col("_run") == pl.col("_last_run"))
    # (the first line of the last run is the line that ended the run before it, unless the file starts with figures)
    closing = closing.filter(pl.col("_fig") | pl.col("_neutral"))
    f = pl.col("_fig")
    k = pl.col("_key").fill_null("").filter(f)
    return closing.with_columns(f.sum().over(WHO).alias("_block"), k.n_unique().over(WHO).alias("_keys"),
                                pl.col("_m").filter(f).sum().over(WHO).alias("_measured"),
                                (k.str.contains(SETTING) | k.str.contains(RANK_KEY)).sum().over(WHO).alias("_setting"),
                                k.str.contains(SET_UP).sum().over(WHO).alias("_set_up"),
                                t.str.contains(FAILURE).sum().over(WHO).alias("_failed"))


def events(df: pl.DataFrame) -> tuple[list[pl.DataFrame], pl.DataFrame | None]:
    """The ``program_end`` events of the closing figure blocks of ``df`` (``file``, ``line``, ``text``, ``ts``,
    ``rank``), and the ``file, line`` of every line of those blocks (claimed), or ``([], None)``."""
    said = df.filter(pl.col("text").str.strip_chars() != "")
    if "_tag" in said.columns:  # (trainer.parse's launcher tag, torchrun's `[default3]:`: the writer's rank too)
        said = said.with_columns(pl.coalesce("rank", "_tag").alias("rank"))
    if not said.height:
        return [], None
    closing = _blocks(said)
    whole = closing.filter((pl.col("_block") >= MIN_LINES) & (pl.col("_keys") == pl.col("_block"))
                        & (pl.col("_measured") >= MIN_MEASURED) & (pl.col("_setting") == 0)
                        & (pl.col("_set_up") < pl.col("_block")) & (pl.col("_failed") == 0))
    block = whole.filter(pl.col("_fig"))
    if not block.height:
        return [], None
    t = pl.col("text").str.strip_chars()
    first = block.with_columns(t.alias("_t")).group_by(WHO, maintain_order=True).agg(
        pl.col("line").first(), pl.col("ts").first(), pl.col("rank").first(), pl.col("text").first(),
        pl.col("_t").head(3).alias("_shown"), pl.len().alias("_n"))
    got = first.with_columns(
        pl.format("the program's closing block of {} measured figures: {}", "_n",
                  pl.col("_shown").list.join("; ")).alias("message"),
        pl.lit(EventKind.PROGRAM_END).alias("kind"), pl.lit(WHERE).alias("where"))
    return ([got.select("file", "line", "ts", "rank", "text", "message", "kind", "where")],
            whole.select("file", "line"))
