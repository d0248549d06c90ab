"""Event kinds are named through ``schema.EventKind``, never as string literals (issue 28).

The test walks the AST of every module of tracekit/ and fails, naming file:line, on a string constant
equal to an event kind, outside ``schema.EVENT_KINDS``'s own declaration. Docstrings and comments are
not constants that count; a log's own text is a longer string and does not match. What is not a kind
although it reads as one: a column or key *name* (``pl.col("step")``, ``row["step"]``, ``.alias("step")``,
a record's key that is a column of schema.TABLES), a piece of an f-string, and the few ordinary words
of WORDS below.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tracekit.schema import EVENT_KINDS, TABLES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tracekit"
KINDS = set(EVENT_KINDS)
COLUMNS = {c for table in TABLES.values() for c in table}

#: Modules that other branches of session 13 convert at the same time and that still name kinds as
#: literals on this branch. The lead empties this set after merging those branches.
PENDING = {
}

#: Methods whose string arguments name a column, a field or a key, never a kind's value.
NAMING = {"col", "sort", "unique", "select", "group_by", "alias", "get", "field", "drop", "rename",
          "drop_nulls", "over", "pivot", "explode", "struct", "with_row_index"}

#: Ordinary words that happen to be a kind's name, by module: (module, word) -> what the word is there.
WORDS = {
    ("traffic.py", "step"): "the unit traffic is counted per (per run, per step, per micro-step)",
    ("cli/outputs.py", "bandwidth"): "the file name of the bandwidth chart",
    ("live.py", "stack"): "the word in a citation: rank 1's stack of dump round 2",
    ("diff.py", "bandwidth"): "a field of the comparison's JSON (Comparison.bandwidth)",
    ("evidence.py", "crash"): "a failure sign's name in words (Evidence.failure_signs)",
    ("evidence.py", "stall"): "a failure sign's name in words (Evidence.failure_signs)",
    ("parsers/trainer.py", "step"): "a column cast to Int64 (the event's `step` and `max_steps` columns)",
    ("parsers/salient.py", "crash"): "a telling line's class (Telling.CRASH, its event's `where`), no kind",
}


def _skipped(tree: ast.Module) -> set[int]:
    """Ids of the constants that are not code: docstrings, EVENT_KINDS's declaration, f-string parts."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
            out.add(id(body[0].value))
        declared = (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EVENT_KINDS"
                                                           for t in node.targets))
        if declared or isinstance(node, ast.JoinedStr):
            out |= {id(n) for n in ast.walk(node.value if declared else node)}
    return out


def _names_a_column(node: ast.Constant, parents: dict[int, ast.AST]) -> bool:
    """The constant names a column, field or key: an index, a naming method's argument (or an item of a
    list or tuple given to one), or a record's key that is a column of the schema."""
    parent = parents.get(id(node))
    if isinstance(parent, (ast.List, ast.Tuple)) and isinstance(parents.get(id(parent)), ast.Call):
        node, parent = parent, parents[id(parent)]
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return True
    if isinstance(parent, ast.Call) and node in parent.args:
        func = parent.func
        return isinstance(func, ast.Attribute) and func.attr in NAMING
    if isinstance(parent, ast.Dict) and node in parent.keys:
        return isinstance(node, ast.Constant) and node.value in COLUMNS
    return False


def literals(source: str, module: str = "") -> list[tuple[int, str]]:
    """(line, kind) of every event-kind string literal in ``source`` that names a kind."""
    tree = ast.parse(source)
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    skipped = _skipped(tree)
    return sorted((n.lineno, n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in KINDS
                  and id(n) not in skipped and (module, n.value) not in WORDS
                  and not _names_a_column(n, parents))


def modules() -> list[str]:
    return sorted(str(f.relative_to(PACKAGE)) for f in PACKAGE.rglob("*.py") if "build" not in f.parts)


def test_no_module_names_an_event_kind_as_a_string():
    found = [f"tracekit/{m}:{line}: {kind!r} (EventKind.{kind.upper()})"
             for m in modules() if m not in PENDING
             for line, kind in literals((PACKAGE / m).read_text(), m)]
    assert not found, "event kinds named as strings; use schema.EventKind:\n" + "\n".join(found)


def test_pending_modules_still_hold_literals():
    """PENDING lists only modules that still need converting: one that no longer names a kind as a
    string leaves the set."""
    done = [m for m in sorted(PENDING) if not literals((PACKAGE / m).read_text(), m)]
    assert not done, f"these modules name no kind as a string any more; take them out of PENDING: {done}"


def test_the_finder_sees_a_kind_in_every_place_a_kind_is_named():
    code = '''
"""crash: a docstring is prose."""
import polars as pl
x = events.filter(pl.col("kind") == "crash")                  # 4: compared
y = events.filter(pl.col("kind").is_in(["step", "progress"]))  # 5: two kinds in a list
z = {"file": f, "kind": "exception", "message": m}             # 6: a record's kind
rule("watchdog_timeout", r"Watchdog caught collective operation timeout")  # 7
SINGLE = {"elastic_stop": STOPPING}                            # 8: a kind as a key
w = pl.lit("signal").alias("kind")                             # 9: a kind as a value
'''
    assert literals(code) == [(4, "crash"), (5, "progress"), (5, "step"), (6, "exception"),
                              (7, "watchdog_timeout"), (8, "elastic_stop"), (9, "signal")]


def test_the_finder_leaves_names_and_words_alone():
    code = '''
s = events.filter(pl.col("step").is_not_null()).sort("step").unique(["rank", "step"])
t = s["step"].max(); u = {"step": pl.Int64}; v = row.get("version"); w = f"progress{suffix}"
m = re.compile(r"crash at step (\\d+)")  # a pattern is a longer string
'''
    assert literals(code) == []
    assert literals('unit = "step"', "traffic.py") == []
    assert literals('unit = "step"', "figures.py") == [(1, "step")]


def test_the_declaration_is_the_only_home_of_the_names():
    """schema.py declares the kinds once: outside EVENT_KINDS it names none as a string."""
    assert literals((PACKAGE / "schema.py").read_text(), "schema.py") == []
