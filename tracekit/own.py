"""The files ``tracekit run`` writes into a run folder that are tracekit's own, not evidence: its
live verdict (``verdict.txt``, ``verdict.json``, known by their first bytes) and its bookkeeping
folder ``procs/``. ``tracekit.live`` writes them; ``tracekit.ingest`` skips them. No polars here:
``tracekit run`` imports it."""

from __future__ import annotations

from pathlib import Path

VERDICT_TXT, VERDICT_JSON = "verdict.txt", "verdict.json"
TXT_MARK, JSON_MARK = "# tracekit live verdict", '{\n  "written_by": "tracekit run"'
#: folders that hold no evidence: tracekit's store and run bookkeeping, Python's and git's
SKIP_DIRS = frozenset({".tracekit", "__pycache__", ".git", "procs"})
#: file endings that are never evidence: a store's tables, ``tracekit run``'s pipes and dump requests
SKIP_ENDINGS = (".pipe", ".parquet", ".request")


def is_ours(path: Path) -> bool:
    """Whether ``path`` is a verdict file tracekit run wrote (its first bytes say so)."""
    mark = {VERDICT_TXT: TXT_MARK, VERDICT_JSON: JSON_MARK}.get(path.name)
    if mark is None:
        return False
    try:
        with open(path, "rb") as f:
            return f.read(len(mark)).decode("utf-8", errors="replace") == mark
    except OSError:
        return False


def is_store(folder: Path) -> bool:
    """A store folder (written anywhere by ``--out``): its tables are not logs to read."""
    return (folder / "made_by.txt").exists() and (folder / "files.parquet").exists()
