"""A program's own timing lines printed again and again, read as the ticks of its progress (issue 31, s30).

Training and benchmark scripts time their own work and print it in their own words: DeepSpeed-Inference's
benchmark ``Length :32, inference time:0.020939748287200927`` (one line per run), a script's
``finish 885000, taken 20619.887254806003 seconds``, ``Epoch 0: 6843.771 seconds``, ``iteration 12 took
1.1s``, ``elapsed: 12.3 sec``, DeepSpeed-Chat's ``|E2E latency=3.74s |Gather latency=0.00s ...``. None names
a step or a rate that ``parsers/series.py`` knows (its ``TIMES`` read a field named ``time`` only after a
separator, never ``inference time``), so the lines stayed unknown and a run that printed its pace on every
iteration was read as one that logged nothing.

What they share: one template (the line with its numbers masked, ``series.template``) printed again and
again in a file, each line with a figure of time (``TIMED``: a figure with its unit after a key or a word,
or after a word that says time, ``took``/``elapsed``/``latency``/``time``). ``MIN_LINES`` of one template
or more are ``progress`` events ``where="timings"``, the figure in ``duration_ms`` (the first the line
prints: the whole before its parts). A template printed fewer times is a measurement, not progress: its
lines stay as they were. A template with an error, warning, retry or wait word (``series.NOT_PROGRESS``),
a progress bar's, and a line of NCCL's own are never read. pace.py judges the figures: steady or growing;
``cumulative`` (pace.py) tells a timer that counts up since the start, and ``COUNTS_UP`` names the keys of
one (``elapsed``, ``total``, ``taken``, ``so far``): such a figure that rises at every line is no time per
tick (``counting_up``).
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import any_of, series
from tracekit.schema import EventKind

FIGURE = r"(\d+(?:\.\d+)?)"
UNIT = r"(ms|msec|s|sec|secs|seconds?)\b"
#: a figure of time on a line (group 1 the figure, group 2 its unit, seconds where none is said): a key's
#: figure with its unit (``op: 0.237 seconds``, ``E2E latency=3.74s``), a word that says time then its
#: figure (``inference time:0.0209``, ``elapsed 12.3``, ``took 1.1s``, ``taken 20619.88 seconds``), the
#: figure a time word follows (``Epoch 0: 6843.771 seconds`` is the first)
TIMED = (
    rf"(?i)\b(?:took|taken|takes|elapsed|duration|latency|time|runtime)\b\s*[:=]?\s*{FIGURE}"
    rf"(?:\s*{UNIT}|\s*[,;|)\]}}]|\s*$)",
    rf"(?i)[:=]\s*{FIGURE}\s*{UNIT}",
    rf"(?i)\b(?:in|after)\s+{FIGURE}\s*{UNIT}",
    # a figure with its unit as a field of a `|`-separated line or in brackets (``Epoch 1 | 12.3s | ...``,
    # ``epoch 3 done (41.2 s)``)
    rf"(?i)(?:\|\s*|\(){FIGURE}\s*{UNIT}\s*(?:\||\)|$)",
)
#: the keys of a timer that counts up since its start, not the time of one tick
COUNTS_UP = r"(?i)\b(?:elapsed|total|taken|so far|since|wall|cumulative|overall)\b"
#: lines never read here: NCCL's own, a shell's ``time`` (``real 1m37.676s``), a test's verdict
#: (``FAILED [15.9430s] test_...``, ``PASSED``), a rank's pending wait
NOT_TIMING = r"\bNCCL\b|^\s*(?:real|user|sys)\s|\b(?:PASSED|FAILED|SKIPPED|ERROR)\b|\bup to\b"
#: a phase that runs once per process, timed (DeepSpeed's ``Time to load fused_adam op: 0.69 seconds``,
#: Megatron's ``loaded indexed file in 0.008 seconds``, ezpz's ``Took: 0.18 seconds to setup torch``), or a
#: total over the run (``Total Training with validation: 1526.16 secs``): each process prints it once, so
#: several of them are processes, not the ticks of a loop
ONCE_PER_PROCESS = (r"(?i)\b(?:load(?:s|ed|ing)?|init\w*|build\w*|buil[dt]|set ?up|compil\w*|import\w*"
                    r"|download\w*|install\w*|creat\w*|start\w*|warm\w*|total|overall|in all)\b"
                    # (a phase's end, pycocotools' `DONE (t=0.73s)` after loading, indexing, evaluating)
                    r"|(?i)^\W*(?:\[[^\]]*\]\W*)*(?:done|finished|completed?)\b")
#: the ``where`` of the progress events this module makes
WHERE = "timings"
#: the fewest lines of one template (of one rank, where the lines name theirs) that make a series (fewer are
#: a measurement)
MIN_LINES = 3


def is_timing() -> pl.Expr:
    """An event of a program's own timing line, as this module makes it (``where == WHERE``)."""
    return pl.col("where").fill_null("") == WHERE


def all_timing(df: pl.DataFrame) -> bool:
    """Whether every row of ``df`` (events with or without a ``where`` column) is a timing line's, and it has one."""
    return "where" in df.columns and df.height > 0 and bool(df.select(is_timing().all()).item())


def without(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` (events) without the timing lines' (a frame with no ``where`` column has none)."""
    return df.filter(~is_timing()) if "where" in df.columns else df


def figure(t: pl.Expr) -> pl.Expr:
    """Milliseconds of the first ``TIMED`` figure on the line (seconds where no unit is said), or null."""
    got = []
    for p in TIMED:
        g = t.str.extract_groups(p)
        v = g.struct.field("1").cast(pl.Float64, strict=False)
        unit = g.struct.field("2").str.to_lowercase()
        got.append(pl.when(unit.is_in(["ms", "msec"])).then(v).otherwise(v * 1e3))
    return pl.coalesce(*got)


def parse(lines: pl.DataFrame) -> pl.DataFrame:
    """The ``progress`` events of the timing lines in ``lines`` (``file, line, text, ts, rank``): those of a
    template printed ``MIN_LINES`` times or more in one file, each with its figure in ``duration_ms``."""
    t = pl.col("text")
    said = t.str.replace(series.LEVEL, "").str.replace_all(series.MEASURED_ERROR, "")
    got = (lines.filter(t.str.contains(r"\d") & t.str.contains(any_of(*TIMED)))
           .filter(~said.str.contains(series.NOT_PROGRESS) & ~t.str.contains(NOT_TIMING)
                   & ~t.str.contains(ONCE_PER_PROCESS))
           .with_columns(figure(t).alias("duration_ms"),
                         series.template(t).str.slice(0, series.KEY).alias("_tmpl")))
    got = got.filter(pl.col("duration_ms").is_not_null())
    # (a template each rank prints once or twice is each rank's measurement: MIN_LINES of one rank's)
    got = got.filter(pl.len().over("file", "_tmpl", "rank") >= MIN_LINES)
    return got.select("file", "line", "ts", "rank", "text", pl.lit(EventKind.PROGRESS).alias("kind"),
                      pl.lit(None, pl.Int64).alias("step"), pl.lit(None, pl.Int64).alias("max_steps"),
                      "duration_ms", pl.lit(WHERE).alias("where"))


def counting_up(ticks: pl.DataFrame) -> bool:
    """Whether the timing lines among ``ticks`` (``where="timings"``) may be a timer that counts up: a figure
    higher at every line, with a key that says so (``COUNTS_UP``), or on three lines that double."""
    if "where" not in ticks.columns:
        return False
    own = ticks.filter(is_timing())
    if own.height < 2 or not bool((own["took"].diff().drop_nulls() > 0).all()):
        return False
    if own["message"].fill_null("").str.contains(COUNTS_UP).all():
        return True
    # (three that double with no key saying so, `time: 100 s`, `time: 210 s`, `time: 330 s`, are as much a timer
    # since the start as a slowing loop: pace.cumulative needs four to tell; left unread, never a trend)
    return own.height < 4 and own["took"][-1] >= 2 * own["took"][0]
