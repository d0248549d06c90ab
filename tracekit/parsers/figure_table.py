"""A loop's figures printed as a table: a header naming the columns, one of them the loop's counter, then
a row of numbers per interval (issue 31, session 29).

Many programs print their progress not as sentences but as rows under one header, and the header is what
names each figure. The shape is one across programs:

- a metrics CSV (nanotron's benchmark log ``iteration,consumed_tokens,elapsed_time_per_iteration_ms,
  tokens_per_sec,...`` then ``1,4190000.0,48500.0,86500.0,...``, as samples/wild/dv35-011 holds it;
  Lightning's CSVLogger ``metrics.csv``, ``epoch,step,train_loss``, lightning/pytorch/loggers/csv_logs.py);
- a whitespace or tab table (TensorFlow benchmarks' ``Step	Img/sec	total_loss``, scripts' ``Iter  Loss
  Time(s)``), a pipe table (markdown's ``| step | loss | tokens/s |``);
- an ASCII-art table whose rows carry a label (ucx_perftest's ``|    Stage     | # iterations | 50.0%ile |
  average | ...`` then ``[thread 0]   209   0.360  4951.277 ...``, openucx/ucx src/tools/perf/perftest.c
  print_header / print_progress, as samples/wild/dv34-006 holds it).

A header is a line of three fields or more, separated by commas, tabs, pipes or runs of spaces, whose
fields are names (letters in each, none a bare number) and one of them a counter (``COUNTER_NAME``:
iteration, step, epoch, batch, ``# iterations``). The rows are the lines under it (blank lines, lone pipes
and rules between them skipped) that split into as many fields, by any of those separators, with the
counter's field an integer and most of the others numbers. Two rows or more whose counter never falls and
rises once at least are ``step`` events ``where="table"``: ``step`` the counter, ``duration_ms`` a column
that names a time and its unit (``elapsed_time_per_iteration_ms``, ``Time(s)``, ``time (ms)``), the message
the row as ``name: value`` pairs (``iteration: 7, elapsed_time_per_iteration_ms: 113000.0, tokens_per_sec:
37000.0``), so the pace rules read its rate and time as they read any progress line. The header, its
rules and the rows are claimed (known lines), whatever the rows' count.

Not a loop's table: a benchmark's size table (its first column a size: parsers/result_tables.py,
parsers/nccl_tests.py), a header with no counter, rows whose counter falls (two runs pasted one after
the other are two tables, each read from its own header).
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

#: the separators a header's or a row's fields may have, tried in this order
SEPARATORS = (re.compile(r"\s*,\s*"), re.compile(r"\s*\t\s*"), re.compile(r"\s*\|\s*"), re.compile(r"\s{2,}"))
#: a column that counts the loop (its name, the whole field)
COUNTER_NAME = re.compile(r"(?i)^#?\s*(?:global[_ ])?(?:iteration|iter|step|epoch|batch|update|num_updates)s?$"
                          r"|^#\s*iterations$")
#: a field that is a number (a figure, a missing value, a NaN a metrics CSV leaves)
FIGURE = re.compile(r"(?i)^[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?\s*(?:%|[a-z]{1,3})?$|^(?:nan|inf|no log|)$")
#: a field of a header: a name (a letter in it, no sentence: a header field is a few words at most)
NAME = re.compile(r"^[#%\w(/\[][\w .()/\[\]%#-]{0,60}$")
#: lines between a header and its rows or between rows: blank, a lone pipe, a rule of dashes or pluses
BETWEEN = re.compile(r"^[\s|+=\-:]*$")
#: an ASCII-art table's rule between its header's rows (``+------+-----+``)
RULE = re.compile(r"\+[-=+]{3,}\+")
#: a column that names a time per step, group 1 its unit where it says one (else seconds)
TIME_NAME = re.compile(r"(?i)(?:time|elapsed|duration)\w*?(?:[ _(\[]*(ms|msec|us|usec|s|sec|secs|seconds)[)\]]?)?$")
UNIT_MS = {"ms": 1.0, "msec": 1.0, "us": 1e-3, "usec": 1e-3, "s": 1e3, "sec": 1e3, "secs": 1e3, "seconds": 1e3,
           None: 1e3}
#: the lines a header is looked for on (cheap: most lines of a log hold none of these words)
CANDIDATE = r"(?i)\b(?:iter|iteration|step|epoch|batch|update|num_updates)s?\b|#\s*iterations"
#: the fewest rows that make a table of a loop (two points of one loop are progress)
MIN_ROWS = 2
#: how far below its header a table's first row may start, and the most lines between two rows
GAP = 4


def _split(text: str, n: int | None = None) -> list[str] | None:
    """The line's fields by the first separator that gives ``n`` of them (or 3+ where ``n`` is None)."""
    for sep in SEPARATORS:
        fields = [f.strip() for f in sep.split(text.strip().strip("|").strip())]
        if (len(fields) == n) if n else len(fields) >= 3:
            return fields
    return None


def _header(text: str) -> tuple[list[str], list[int]] | None:
    """A header's names and the indexes of its counter columns, else None. An ASCII-art header whose lines the
    reader joined into one (its rows of ``|`` cells between ``+----+`` rules) is read by its last row of
    names: the one under the units, where the counter is named."""
    cells = [c for c in RULE.split(text) if c.strip()]
    for part, sep in ((part, sep) for part in reversed(cells or [text]) for sep in SEPARATORS):
        names = [f.strip() for f in sep.split(part.strip().strip("|").strip())]
        if len(names) < 3 or not all(NAME.match(f) and re.search(r"[A-Za-z]", f) for f in names):
            continue
        counters = [i for i, f in enumerate(names) if COUNTER_NAME.match(f)]
        if counters:
            return names, counters
    return None


def _rows(texts: list[str], start: int, names: list[str], at: int) -> list[tuple[int, list[str]]]:
    """The rows under a header: (index in ``texts``, fields), up to the first line that is none."""
    rows, gap, i = [], 0, start
    while i < len(texts) and gap <= GAP:
        t = texts[i]
        if BETWEEN.match(t):
            gap, i = gap + 1, i + 1
            continue
        fields = _split(t, len(names))
        if fields is None or not re.fullmatch(r"\d+", fields[at].replace(",", "")):
            break
        # (the fields other than the counter all figures, but for a label in the first column (ucx_perftest's
        # `[thread 0]`): a row with words among its figures is a sentence, parsers/series.py's)
        rest = [f for j, f in enumerate(fields) if j != at and (j > 0 or at == 0)]
        if not all(FIGURE.match(f) for f in rest) or len(rest) < 2:
            break
        rows.append((i, fields))
        gap, i = 0, i + 1
    return rows


def _rises(rows: list[tuple[int, list[str]]], at: int) -> bool:
    """Whether the counter never falls from row to row and rises once at least."""
    counts = [int(f[at].replace(",", "")) for _, f in rows]
    return all(b >= a for a, b in zip(counts, counts[1:])) and len(set(counts)) > 1


def _took_ms(names: list[str], fields: list[str]) -> float | None:
    """The time per step a row's time column holds, in ms (the first column whose name says a time)."""
    for name, value in zip(names, fields):
        m = TIME_NAME.search(name)
        if m and not re.search(r"(?i)data|eta|total|since|wall|avg_", name):
            try:
                return float(value.replace(",", "")) * UNIT_MS[m.group(1) and m.group(1).lower()]
            except (ValueError, KeyError):
                return None
    return None


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height or not lines["text"].str.contains(CANDIDATE).any():
        return Parsed("figure_table")
    events, claimed = [], []
    for (file,), g in lines.sort("file", "line").group_by("file", maintain_order=True):
        if not g["text"].str.contains(CANDIDATE).any():
            continue
        texts, nums = g["text"].fill_null("").to_list(), g["line"].to_list()
        ts = g["ts"].cast(pl.Utf8).to_list() if "ts" in g.columns else [None] * g.height
        tags = [c for c in ("rank_tag", "mpi_rank", "launch_rank") if c in g.columns]
        ranks = (g.select(pl.coalesce(*tags).cast(pl.Int64, strict=False)).to_series().to_list() if tags
                 else [None] * g.height)
        i = 0
        while i < len(texts):
            head = _header(texts[i]) if re.search(CANDIDATE, texts[i]) else None
            # (the first counter column whose cells are whole numbers that rise: a model card's `| Training
            # Loss | Epoch | Step |` counts its epochs in fractions, its steps whole)
            found = [(at, rows) for at in (head[1] if head else [])
                     if len(rows := _rows(texts, i + 1, head[0], at)) >= MIN_ROWS and _rises(rows, at)]
            if not found:
                i += 1
                continue
            names, (at, rows) = head[0], found[0]
            counts = [int(f[at].replace(",", "")) for _, f in rows]
            claimed += [(file, nums[k]) for k in range(i, rows[-1][0] + 1)]
            for (k, fields), step in zip(rows, counts):
                said = ", ".join(f"{n}: {v}" for n, v in zip(names, fields) if v)
                events.append({"file": file, "line": nums[k], "ts": ts[k], "rank": ranks[k], "kind": EventKind.STEP,
                               "message": said, "step": step, "duration_ms": _took_ms(names, fields),
                               "where": "table"})
            i = rows[-1][0] + 1
    if not events:
        return Parsed("figure_table")
    frame = pl.DataFrame(events, schema={"file": pl.Utf8, "line": pl.Int64, "ts": pl.Utf8, "rank": pl.Int64,
                                         "kind": pl.Utf8, "message": pl.Utf8, "step": pl.Int64,
                                         "duration_ms": pl.Float64, "where": pl.Utf8})
    frame = frame.with_columns(pl.lit(None, pl.Int64).alias("max_steps"))
    return Parsed("figure_table", {"events": frame},
                  pl.DataFrame(claimed, schema={"file": pl.Utf8, "line": pl.Int64}, orient="row"))
