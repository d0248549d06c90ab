"""Opening runs for the commands (a store, a folder's fresh store, or logs ingested now) and guarding
the files they write."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from tracekit.cli.base import BadInput, Progress
from tracekit.errors import TracekitError


def stdin(*paths: str):
    """Standard input (bytes) where a path is ``-``: a paste, ``kubectl logs POD | tracekit ingest -``."""
    return sys.stdin.buffer if "-" in paths else None


def open_one(path: str, scan: bool = False, pick: int | None = None):
    """One run opened for the commands that analyse it (``load.open_run``: a store, a folder's fresh
    store, or its logs ingested now, no store written); a run with no readable file is bad input."""
    from tracekit.load import open_run

    try:
        with Progress(f"ingest {path}") as bar:
            run = open_run([path], no_store=True, scan=scan, progress=bar if bar.on else None,
                           stdin=stdin(path), pick=pick)
        run.close()
        if (why := run.nothing_read()) is not None:
            raise why
    except TracekitError as e:
        raise BadInput(str(e)) from None
    return run


def load_run(path: str, scan: bool = False, pick: int | None = None):
    """The store of one run; where the logs hold several runs, the latest (or run ``pick``), and
    stderr says so."""
    run = open_one(path, scan, pick)
    if len(run.attempts) > 1 and pick is None:
        latest = run.attempts[0]
        click.echo(f"note: {path} holds {len(run.attempts)} runs; this is run 1, the latest "
                   f"({latest.describe()}); see them: tracekit ingest {path}", err=True)
    return run.store


def names(*paths: str) -> tuple[str, ...]:
    """Short names of runs (their folders' names), told apart by A/B where two are the same."""
    from tracekit.diff import run_name

    short = [run_name(p) for p in paths]
    return tuple(f"{k} {n}" for k, n in zip("AB", short)) if len(set(short)) < len(short) else tuple(short)


@contextlib.contextmanager
def output(path: str, runs: list[str]):
    """Around writing one output file: refuse an input file of the runs (tracekit never changes a
    file it did not write) and turn a missing or unwritable place into one line and exit 2."""
    from tracekit.ingest import discover

    p = Path(path)
    if p.is_dir():
        raise BadInput(f"{path}: is a folder; name a file to write")
    inputs = {f.resolve() for f in discover([r for r in runs if Path(r).exists()])} if p.exists() else set()
    if p.exists() and p.resolve() in inputs:
        raise BadInput(f"{path}: is one of the run's input files; name another file to write")
    if not p.parent.is_dir():
        raise BadInput(f"{path}: no such folder: {p.parent}")
    try:
        yield
    except OSError as e:
        raise BadInput(f"{path}: cannot write: {e.strerror or e}") from None
