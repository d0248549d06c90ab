"""Multi-line printouts a program makes of its own objects, known by their structure (issue 31).

A training log carries, besides what the runtimes say, what the program prints of its objects as it
starts: a JSON or dict dump of a config (``json.dumps(cfg, indent=2)``, ``pprint``), a model's
``print(model)`` (``Qwen2ForCausalLM(`` ... ``(layers): ModuleList(`` ... ``(0-27): 28 x
Qwen2DecoderLayer(`` ... ``)``), an argparse ``Namespace(...)`` or a dataclass's repr
(``TrainingArguments(`` ... ``)``), and argument sections between a titled rule and its ``end of``
rule (Megatron's ``---- arguments ----`` ... ``---- end of arguments ----``). None of it says where a
rank is or why a job failed, and it is no program's own shape: the lines are known by how they are
built, never by which program printed them:

- a bracketed block: a line that ends opening a bracket (``{``, ``[``, ``(``) and the lines down to
  the one that balances it, every one of them an item of a printout (``"key": value,``, ``key=value,``,
  ``(name): Module(``, a value, a closing bracket); one line that is anything else (a traceback, a log
  record, a sentence) and the block is not a printout;
- JSON items without their opening line (an excerpt that starts inside a dump): a run of two or more
  ``"key": value`` lines, with the closing brackets around them (a telling line ends the run);
- a one-line repr of an argument object: ``Namespace(key=value, ...)``, ``XArguments(key=value, ...)``;
- a titled section: the lines between ``--- title ---`` and ``--- end of title ---``;
- a YAML dump (OmegaConf's ``to_yaml``, a config printed at start-up): a run of three or more ``key:
  value`` and ``- item`` lines in which a ``key:`` with no value heads more indented lines (a run of
  flat ``key: value`` lines, an error's fields, is not taken: it may say what failed).

What another parser decodes stays its own: a line that reads as a traceback, an NCCL line, an
exception or a rank's log record (``TELLING``) is never claimed, and a bracketed block holding one is
not a printout at all. This parser makes no rows; its lines are known, not counted unknown.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed

#: what a printout never holds: a traceback or a native stack's frame (gdb's `#5  0x... in f (`), an
#: NCCL or c10d record, an exception, a rank's log line
TELLING = (r"Traceback \(most recent call last\)|^\s*File \"|^\s*(?:frame )?#\d+\s|"
           r"\bNCCL (?:INFO|WARN|ERROR)\b|\b[A-Z]\w*(?:Error|Exception)\b:|\[[Rr]ank ?\d+\]|Watchdog|"
           r"\bSIG[A-Z]{3,}\b")
#: a line that ends opening a bracket: a printout's head (`Namespace(`, `Model(`, `config = {`, `{`), or
#: pprint's first line, its first item beside the bracket (`{'architectures': ['LlamaForCausalLM'],`)
OPENS = r"^(?:.*?[\w:=>]\s*)?[\{\[\(]+\s*$|^\s*[\{\[]\s*(?:'[^']*'|\"[^\"]*\")\s*:.*,\s*$"
#: one item of a printout: a key and its value, a named sub-module, a value, closing brackets
VALUE = r"(?:\"[^\"]*\"|'[^']*'|[-+]?[\d.]+(?:[eE][-+]?\d+)?|True|False|None|null|true|false)"
ITEM = (r"^\s*,?\s*(?:"
        r"(?:\"[^\"]*\"|'[^']*')\s*:\s*.*"  # "key": value  /  'key': value
        r"|[A-Za-z_]\w*\s*[=:]\s*\S.*"  # key=value, key: value
        r"|\([\w.\-]+\):\s*\S.*"  # (layers): ModuleList(
        r"|[A-Za-z_][\w.]*\((?:[^()]|\([^()]*\))*\)?,?"  # Linear(in_features=8, ...), a nested repr
        r"|" + VALUE + r",?"  # a value of a list
        r"|[\)\]\}]+[\)\]\},\s]*"  # closing brackets
        r")\s*$")
#: a key-value line of JSON: the mark of a dump whose opening line an excerpt cut off
JSON_ITEM = r"^\s*\"[^\"]+\"\s*:\s*\S"
CLOSES = r"^\s*[\)\]\}]+[\)\]\},\s]*$"
#: a one-line repr of an argument object
REPR = r"(?:^|[\s:=])(?:Namespace|[A-Z]\w*(?:Arguments|Args|Config))\(\w+=.*\)\s*$"
#: a titled rule and the rule that ends its section
RULE = r"^\s*[-=*]{3,}\s*(?P<title>[\w][\w .]*?)\s*[-=*]{3,}\s*$"
END = r"^\s*[-=*]{3,}\s*end of (?P<title>[\w][\w .]*?)\s*[-=*]{3,}\s*$"
#: a line of a YAML dump: ``key: value``, ``key:`` (a mapping follows, indented), ``- item``
YAML = r"^\s*(?:[A-Za-z_][\w.\-]*:(?:\s+\S.*)?|- \S.*)$"
YAML_HEAD = r"^\s*[A-Za-z_][\w.\-]*:\s*$"
MAX_LINES = 5000  # a printout longer than this (a 70B model's print is ~1,300 lines) is not taken whole
QUOTED = r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("printouts")
    t = pl.col("text")
    bare = t.str.replace_all(QUOTED, "")
    df = lines.select(
        "file", "line", (t.str.strip_chars() == "").alias("blank"),
        t.str.contains(TELLING).fill_null(False).alias("telling"),
        t.str.contains(ITEM).fill_null(False).alias("item"),
        (t.str.contains(OPENS) & ~t.str.contains(r"^\s*(?:File |at |from )")).fill_null(False).alias("opens"),
        (bare.str.count_matches(r"[\{\[\(]").cast(pl.Int64) - bare.str.count_matches(r"[\}\]\)]"))
        .alias("depth"),
        t.str.contains(JSON_ITEM).fill_null(False).alias("json"),
        t.str.contains(CLOSES).fill_null(False).alias("closes"),
        (t.str.contains(REPR) & (bare.str.count_matches(r"\(") == bare.str.count_matches(r"\)")))
        .fill_null(False).alias("repr"),
        t.str.extract(RULE, 1).alias("rule"), t.str.extract(END, 1).alias("end"),
        t.str.contains(YAML).fill_null(False).alias("yaml"), t.str.contains(YAML_HEAD).fill_null(False)
        .alias("yaml_head"), (t.str.len_chars() - t.str.strip_chars_start().str.len_chars()).alias("indent"),
    ).sort("file", "line")
    found = [df.filter(pl.col("repr") & ~pl.col("telling")).select("file", "line"), _json_runs(df)]
    if df["yaml_head"].any():
        found.append(_yaml_runs(df))
    if df["opens"].any():
        found.append(_blocks(df))
    if df["end"].is_not_null().any():
        found.append(_sections(df))
    claimed = pl.concat(found).unique()
    keep = df.filter(~pl.col("blank") & ~pl.col("telling")).select("file", "line")
    return Parsed("printouts", {}, claimed.join(keep, on=["file", "line"], how="semi").sort("file", "line"))


def _blocks(df: pl.DataFrame) -> pl.DataFrame:
    """The lines of every bracketed block whose lines are all items of a printout."""
    out: list[tuple[str, int]] = []
    for (file,), rows in df.partition_by("file", as_dict=True, maintain_order=True).items():
        if not rows["opens"].any():
            continue
        line, opens, depth, item = (rows[c].to_list() for c in ("line", "opens", "depth", "item"))
        blank, telling = rows["blank"].to_list(), rows["telling"].to_list()
        i, n = 0, rows.height
        while i < n:
            if not opens[i] or telling[i] or depth[i] <= 0:
                i += 1
                continue
            level, j = depth[i], i + 1
            while j < n and level > 0 and j - i < MAX_LINES and line[j] == line[j - 1] + 1:
                if telling[j] or not (item[j] or blank[j]):
                    break
                level += depth[j]
                j += 1
            if level <= 0 and j - i >= 2:  # closed, with a line between its head and its end
                out += [(file, ln) for ln in line[i:j]]
                i = j
            else:
                i += 1
    return pl.DataFrame(out, schema={"file": pl.Utf8, "line": pl.Int64}, orient="row")


def _json_runs(df: pl.DataFrame) -> pl.DataFrame:
    """Runs of consecutive JSON items and closing brackets holding two items or more (a telling line
    ends a run)."""
    fits = (pl.col("json") | pl.col("closes")) & ~pl.col("telling")
    step = (pl.col("line") - pl.col("line").shift(1).over("file")).fill_null(0)
    run = ((fits != fits.shift(1).over("file")) | (step != 1)).fill_null(True).cum_sum().over("file")
    runs = df.with_columns(run.alias("_run")).filter(fits)
    many = pl.col("json").sum().over("file", "_run") >= 2
    return runs.filter(many).select("file", "line")


def _yaml_runs(df: pl.DataFrame) -> pl.DataFrame:
    """Runs of three or more consecutive YAML lines in which a ``key:`` heads more indented lines."""
    fits = pl.col("yaml") & ~pl.col("telling")
    step = (pl.col("line") - pl.col("line").shift(1).over("file")).fill_null(0)
    run = ((fits != fits.shift(1).over("file")) | (step != 1)).fill_null(True).cum_sum().over("file")
    runs = df.with_columns(run.alias("_run")).filter(fits)
    nests = pl.col("yaml_head") & (pl.col("indent").shift(-1).over("file", "_run") > pl.col("indent"))
    many = (pl.len().over("file", "_run") >= 3) & nests.fill_null(False).any().over("file", "_run")
    return runs.filter(many).select("file", "line")


def _sections(df: pl.DataFrame) -> pl.DataFrame:
    """The lines of each titled section, from its rule to its ``end of`` rule (the same title)."""
    out: list[tuple[str, int]] = []
    marks = df.filter(pl.col("rule").is_not_null() | pl.col("end").is_not_null())
    for file, title, end, head in marks.select("file", "rule", "end", "line").iter_rows():
        if end is None:
            continue
        opened = marks.filter((pl.col("file") == file) & (pl.col("rule") == end) & (pl.col("line") < head)
                              & (pl.col("line") >= head - MAX_LINES))
        if opened.height:
            first = opened["line"].max()
            out += [(file, ln) for ln in range(first, head + 1)]
    return pl.DataFrame(out, schema={"file": pl.Utf8, "line": pl.Int64}, orient="row")
