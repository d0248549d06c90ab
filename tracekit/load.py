"""A run opened for analysis: its store read from disk where a fresh one is there, else its logs
ingested now (and the store written where asked). The store-cache policy lives here, not in the CLI.

A folder of logs that was ingested before holds its store in ``FOLDER/.tracekit``; that store is
read instead of the logs while it is fresh: made by this code (``store.made_by_this_code``), from
this folder alone, and no log under the folder changed after it was written.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import polars as pl

from tracekit import runs
from tracekit import store as stores
from tracekit.errors import InputError
from tracekit.ingest import combine, discover, parse_all, unknown_lines, unreadable
from tracekit.runs import Attempt
from tracekit.store import Store

CACHE = ".tracekit"  # a folder's own store, inside it
#: the lines not understood are read again to count them by block where their files hold at most this
#: many lines (a .gz's size says nothing of its text; the text parsers take ~25x their text in memory)
UNKNOWN_REREAD_LINES = 200_000
STDIN = "-"  # the path that means standard input (a paste, `kubectl logs POD | tracekit ingest -`)
STDIN_NAME = "<stdin>"  # how standard input is named in evidence lines: `<stdin>:12: ...`


@dataclass
class Run:
    """An opened run: its ``store``, the ``paths`` it came from, and where its store is being
    written (``target``; None where it is not: read from disk, or no store asked for)."""

    store: Store
    paths: list[str]
    target: Path | None = None
    writing: Future | None = None
    spooled: dict[str, str] | None = None  # standard input: the file it was copied into -> STDIN_NAME
    attempts: list[Attempt] = field(default_factory=list)  # the runs the logs hold, the latest first
    picked: int = 1  # the number of the one ``store`` is

    def store_of(self, attempt: Attempt) -> Store:
        """The store of one of the runs the logs hold (``store`` where it is the picked one)."""
        if attempt.number == self.picked:
            return self.store
        store = combine(attempt.results)
        return Store(**{n: self.named(df) for n, df in store.tables().items()}) if self.spooled else store

    def read_paths(self) -> list[str]:
        """The paths to read the run's files again from (standard input as the copy made of it)."""
        back = {v: k for k, v in (self.spooled or {}).items()}
        return [back.get(STDIN_NAME, p) if p == STDIN else p for p in self.paths]

    def unknown_lines(self, everything: bool = False) -> pl.DataFrame | None:
        """The lines not understood (``file, line, raw``: ``ingest.unknown_lines``, the files read
        again): with ``everything``, of every file of this run; else of the files that have any, where
        they hold at most UNKNOWN_REREAD_LINES lines in all (None where they hold more, or none)."""
        files = self.store.files.filter(pl.col("unknown") > 0)
        if everything:  # (of this run's files, where the logs hold several)
            return self.named(unknown_lines(self.read_paths())).filter(
                pl.col("file").is_in(self.store.files["file"].to_list()))
        if not files.height or (files["lines"].sum() or 0) > UNKNOWN_REREAD_LINES:
            return None
        back = {v: k for k, v in (self.spooled or {}).items()}  # standard input: its copy is read again
        return self.named(unknown_lines([back.get(f, f) for f in files["file"].to_list()]))

    def close(self) -> None:
        """Remove the copy of standard input (once nothing reads the run's files again)."""
        unspool(self.spooled)
        self.spooled = None

    def named(self, df: pl.DataFrame) -> pl.DataFrame:
        """``df`` (of a table with a ``file`` column) with standard input's copy named ``<stdin>``."""
        return renamed(df, self.spooled) if self.spooled else df

    def notes(self) -> list[tuple[str, str, str]]:
        """``(level, file, why)`` of each file read with a note (``note``: a truncated ``.gz`` that
        still held lines) or not read at all (``error``), in file order."""
        files = self.store.files.with_columns(unreadable().alias("unreadable"))
        return [("error" if r["unreadable"] else "note", r["file"], r["error"])
                for r in files.filter(files["error"].is_not_null()).iter_rows(named=True)]

    def nothing_read(self) -> InputError | None:
        """Why nothing of the run could be read (each file an error), or None where something was."""
        bad = self.store.files.filter(unreadable())
        if not bad.height or bad.height < self.store.files.height:
            return None
        name = ", ".join(self.paths)
        f, why = bad["file"][0], bad["error"][0]
        return InputError(f"{name}: {why}" if f == name else f"{name}: no readable file ({f}: {why})")

    def wait(self) -> Path | None:
        """The store folder once written (StoreError where writing failed), or None: none written."""
        if self.writing is not None:
            self.writing.result()
        return self.target if self.writing is not None else None


def store_target(paths: list[str], out: str | Path | None, no_store: bool) -> Path | None:
    """Where ingest writes its store: ``out``, else ``PATH/.tracekit`` for one folder. Several
    paths (a merged run) or a single file get a store only where ``out`` names one."""
    if no_store:
        return None
    if out:
        return Path(out)
    if len(paths) == 1 and Path(paths[0]).is_dir():
        return Path(paths[0]) / CACHE
    return None


def newer_than(folder: Path, store: Path) -> bool:
    """Whether any log under ``folder`` changed after ``store`` was written (then ingest again)."""
    written = max((f.stat().st_mtime for f in store.iterdir()), default=0.0)
    return any(f.stat().st_mtime > written for f in discover([folder]) if f.is_file())


def stored(path: str | Path) -> Path | None:
    """The store to read for ``path`` instead of ingesting it: ``path`` itself where it is a store,
    its fresh ``.tracekit`` where it is a folder that holds one; else None."""
    p = Path(path)
    if stores.is_store(p):
        return p
    cached = p / CACHE
    if (stores.is_store(cached) and stores.made_by_this_code(cached)
            and stores.inputs(cached) == [p.resolve()] and not newer_than(p, cached)):
        return cached
    return None


def spool(stream: BinaryIO) -> Path:
    """Standard input copied into a fresh temporary folder (removed with ``unspool``), so that it is
    read as a file is: its kind found from its content (a gzip too), its launcher and rank prefixes
    (``[rank3]:``, ``srun --label``'s ``3: ``, ``(RayTrainWorker pid=...)``) taken off as from files."""
    folder = Path(tempfile.mkdtemp(prefix="tracekit-stdin-"))
    with open(folder / "stdin", "wb") as f:
        shutil.copyfileobj(stream, f, 1 << 20)
    return folder / "stdin"


def unspool(spooled: dict[str, str] | None) -> None:
    for copy in spooled or {}:
        shutil.rmtree(Path(copy).parent, ignore_errors=True)


def renamed(df: pl.DataFrame, names: dict[str, str]) -> pl.DataFrame:
    """``df`` with the ``file`` values in ``names`` replaced (the spooled copy of standard input)."""
    if "file" not in df.columns:
        return df
    file = pl.col("file")
    return df.with_columns(file.replace(names) if df.schema["file"] == pl.Utf8
                           else file.cast(pl.Utf8).replace(names).cast(df.schema["file"]))


Progress = Callable[[int, int], None]  # progress(done_bytes, total_bytes), as ingest.ingest takes it


def parse(paths: list[str], engine: str = "local", progress: Progress | None = None) -> list[Attempt]:
    """The runs in ``paths`` (``runs.split``: the latest first; one where nothing tells two apart),
    ingested by ``engine``: ``local`` (this machine), ``ray`` (a local Ray cluster started for it) or
    ``ray:ADDRESS`` (a running one, read as one run); ``progress`` as ``ingest.ingest``'s."""
    if engine == "local":
        results, skipped = parse_all(paths, progress)  # skipped: what the walk did not read
        found = runs.split(results) or [runs.whole(combine(results + skipped))]
        if len(found) == 1:  # (the store ingest.ingest makes, from every file in its order)
            found[0].results = results + skipped
        else:  # each run says what was not read beside it
            for run in found:
                run.results = run.results + skipped
        return found
    if engine == "ray" or engine.startswith("ray:"):
        from tracekit.engines import parse_on_ray

        return [runs.whole(parse_on_ray(paths, address=engine[len("ray:"):] or None))]
    raise InputError(f"--engine {engine}: not an engine; give local, ray or ray:ADDRESS")


def open_run(paths: list[str | Path], out: str | Path | None = None, no_store: bool = False,
             scan: bool = False, progress: Progress | None = None, engine: str = "local",
             reuse: bool = True, stdin: BinaryIO | None = None, pick: int | None = None) -> Run:
    """Open the run at ``paths`` (its logs, or a store). ``reuse``: one path that is a store, or a
    folder with a fresh store of its own, is read from disk (``scan``: its big tables stay there,
    ``store.scan``); otherwise the logs are ingested (``parse``) and, unless ``no_store``, the store
    is written (``store_target``) in a thread while the caller goes on (``Run.wait``). A path ``-``
    is ``stdin`` (read as one file named ``<stdin>``; its copy is removed by ``unspool``). Logs that
    hold several runs (``runs.split``) open the latest, or run number ``pick`` (1 the latest), and
    write no store unless ``out`` names one. Raises
    InputError for a path that does not exist or a run with no file at all; a run whose files are
    all unreadable is opened (its ``notes`` say why) and writes no store."""
    paths = [str(p) for p in paths]
    if paths.count(STDIN) > 1:
        raise InputError("-: standard input named twice; give - once")
    if STDIN in paths and stdin is None:
        raise InputError("-: standard input is not available here")
    found = stored(paths[0]) if reuse and len(paths) == 1 and paths != [STDIN] else None
    if found is not None:
        if pick not in (None, 1):
            raise InputError(f"--run {pick}: {found} is one run's store; give the folder of logs to pick a "
                             "run")
        run = Run(stores.scan(found) if scan else Store.read(found), paths)
    else:
        for p in paths:
            if p != STDIN and not Path(p).exists():
                raise InputError(f"{p}: no such file or folder")
        copy = spool(stdin) if STDIN in paths else None
        spooled = {str(copy): STDIN_NAME} if copy else None
        if copy is not None and not copy.stat().st_size:
            unspool(spooled)
            raise InputError("-: standard input is empty; pipe logs into it "
                             "(kubectl logs POD | tracekit ingest -)")
        try:
            attempts = parse([str(copy) if p == STDIN else p for p in paths], engine, progress)
        except BaseException:
            unspool(spooled)
            raise
        if pick is not None and not 1 <= pick <= len(attempts):
            unspool(spooled)
            raise InputError(f"--run {pick}: {', '.join(paths)} holds {len(attempts)} run(s); "
                             f"give 1 to {len(attempts)}")
        chosen = attempts[(pick or 1) - 1]
        store = chosen.store if chosen.store is not None else combine(chosen.results)
        if spooled:
            store = Store(**{name: renamed(df, spooled) for name, df in store.tables().items()})
        run = Run(store, paths, spooled=spooled, attempts=attempts, picked=chosen.number)
    if not run.store.files.height:
        raise InputError(", ".join(paths) + ": no logs, dumps or traces found")
    # a folder of several runs keeps no store of its own (it would stand for one of them); --out does
    several = len(run.attempts) > 1 and not out
    target = store_target(paths, out, no_store) if found is None and not several else None
    if target is not None and run.nothing_read() is None:
        # written beside the caller's analysis (polars writes without the GIL)
        pool = ThreadPoolExecutor(1)
        inputs = [p for p in paths if p != STDIN]
        run.target, run.writing = target, pool.submit(run.store.write, target, inputs=inputs)
        pool.shutdown(wait=False)
    return run
