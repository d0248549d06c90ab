"""The store: the seven tables of one ingested run (``schema.TABLES``), as parquet files in one folder.

Written atomically: the tables go to a fresh sibling folder that then replaces the old store in
one rename, so a crash mid-write leaves the old store or none, never half of one. The sibling is
named for the process writing it (``.OUT.tmp-<pid>-*``): what a killed write left is removed by the
next write beside it, once its process is gone.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, fields
from pathlib import Path

import polars as pl

from tracekit import schema
from tracekit.errors import StoreError  # noqa: F401 - re-exported: tracekit.store.StoreError


@dataclass
class Store:
    files: pl.DataFrame
    ranks: pl.DataFrame
    comms: pl.DataFrame
    links: pl.DataFrame
    collectives: pl.DataFrame
    events: pl.DataFrame
    groups: pl.DataFrame

    def tables(self) -> dict[str, pl.DataFrame]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def write(self, folder: str | Path, inputs: list[str | Path] = ()) -> Path:
        """Write the store into ``folder``: a new folder, or one that holds only a store's files.
        A folder with anything else in it is refused (StoreError) and nothing is touched:
        tracekit never deletes or changes a file it did not write."""
        folder = Path(folder).resolve()
        check_target(folder)
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            _clean_stale(folder)
            tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-{os.getpid()}-", dir=folder.parent))
        except OSError as e:
            raise StoreError(f"{folder}: cannot write the store here ({e.strerror or e})") from None
        try:
            for name, df in self.tables().items():
                df.write_parquet(tmp / f"{name}.parquet")
            (tmp / "made_by.txt").write_text(fingerprint() + "\n" + "".join(
                f"input {Path(p).resolve()}\n" for p in inputs))
        except Exception as e:  # noqa: BLE001 - OSError, or polars' own error for a full disk
            shutil.rmtree(tmp, ignore_errors=True)
            raise StoreError(f"{folder}: writing the store failed ({_why(e)}); "
                             "the old store is untouched") from None
        old = None
        try:
            if folder.exists():
                old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
                os.replace(folder, old)
            os.replace(tmp, folder)
            if old is not None:
                _remove_store(old)
        except OSError as e:
            if old is not None and not folder.exists():
                os.replace(old, folder)
            shutil.rmtree(tmp, ignore_errors=True)
            raise StoreError(f"{folder}: replacing the store failed ({_why(e)}); "
                             "the old store is untouched") from None
        return folder

    @classmethod
    def read(cls, folder: str | Path, lazy: tuple[str, ...] = ()) -> "Store":
        """The store in ``folder``; the tables named in ``lazy`` stay on disk (LazyFrames over their
        parquet files: ``scan``). A missing, unreadable or foreign table is a StoreError."""
        folder = Path(folder)
        tables: dict[str, pl.DataFrame | pl.LazyFrame] = {}
        for name, sch in schema.TABLES.items():
            path = folder / f"{name}.parquet"
            if not path.exists():
                raise StoreError(f"{path}: missing; re-run `tracekit ingest` on the logs")
            try:
                table = pl.scan_parquet(path) if name in lazy else pl.read_parquet(path)
                got = dict(table.collect_schema())
            except Exception as e:  # noqa: BLE001 - polars raises several kinds for a bad file
                raise StoreError(f"{path}: not a readable parquet file ({type(e).__name__}); "
                                 "re-run `tracekit ingest`") from None
            if got != sch:
                raise StoreError(f"{path}: columns differ from tracekit's schema; re-run `tracekit ingest`")
            tables[name] = table
        return cls(**tables)


#: the tables a scanned store leaves on disk: a row per collective, and a group's members per rank
#: (every one of 16,384 dumps lists the world: 268 M members)
LAZY = ("collectives", "groups")


def scan(folder: str | Path) -> Store:
    """A store on disk whose big tables stay there (``LAZY``), the others (a row per rank, process,
    communicator or event) read. The verdict takes it as it takes a store in memory
    (``tracekit.verdict.decide``): its group-bys over the collectives run streaming, a piece of the
    file at a time, so memory holds the answers, not the table."""
    return Store.read(folder, lazy=LAZY)


def _why(e: Exception) -> str:
    return getattr(e, "strerror", None) or (str(e).splitlines()[0] if str(e) else type(e).__name__)


def _clean_stale(folder: Path) -> None:
    """Remove the temporary and old folders that writes of ``folder`` killed before they finished
    left beside it (``.OUT.tmp-<pid>-*``, ``.OUT.old-<pid>``), where process <pid> is gone: only
    a store's own files, and the folder once empty."""
    for p in folder.parent.glob(f".{glob.escape(folder.name)}.*-*"):
        tail = p.name[len(folder.name) + 2:]
        kind, _, rest = tail.partition("-")
        pid = rest.split("-", 1)[0]
        ours = kind in ("tmp", "old") and pid.isdigit() and p.is_dir() and not p.is_symlink()
        if ours and not _alive(int(pid)):
            _remove_store(p)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


def _remove_store(folder: Path) -> None:
    """Delete a store's own files and then its folder; a file someone else put there stays."""
    for name in STORE_FILES:
        (folder / name).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        pass


#: every file a store folder may hold; anything else in it means it is not (only) ours
STORE_FILES = frozenset({*(f"{name}.parquet" for name in schema.TABLES), "made_by.txt"})


def check_target(folder: Path) -> None:
    """Refuse to write a store over a file, or into a folder that holds anything but a store."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise StoreError(f"{folder}: not a folder; name a new folder (or an existing store) for the store")
    if not folder.exists():
        return
    try:
        other = sorted(p.name for p in folder.iterdir() if p.name not in STORE_FILES)
    except OSError as e:
        raise StoreError(f"{folder}: cannot read the folder ({e.strerror or e})") from None
    if other:
        raise StoreError(f"{folder}: holds files that are not a tracekit store ({other[0]}"
                         + (f" and {len(other) - 1} more" if len(other) > 1 else "")
                         + "); nothing was written: name a new folder for the store")


def is_store(folder: str | Path) -> bool:
    return (Path(folder) / "files.parquet").exists()


def inputs(folder: str | Path) -> list[Path]:
    """The paths a store was ingested from, as its ``made_by.txt`` records them."""
    try:
        lines = (Path(folder) / "made_by.txt").read_text().splitlines()
    except OSError:
        return []
    return [Path(x[len("input "):]) for x in lines[1:] if x.startswith("input ")]


def fingerprint() -> str:
    """What made a store: a hash of the code that turns logs into tables (parsers, formats, ingest,
    dumps, schema, meanings and the vocabularies the parsers read)."""
    here = Path(__file__).parent
    h = hashlib.sha1()
    made = [here / name for name in ("ingest.py", "formats.py", "dumps.py", "schema.py", "meanings.py",
                                     "nccl_messages.py", "hccl_messages.py", "runtime_failures.py",
                                     "start_up_messages.py", "start_up_frames.py", "progress_messages.py", "work_phases.py")]
    for f in sorted([*here.glob("parsers/**/*.py"), *made]):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:16]


def made_by_this_code(folder: str | Path) -> bool:
    """False for a store written by another version of tracekit's parsers: re-ingest it."""
    try:
        return (Path(folder) / "made_by.txt").read_text().split("\n", 1)[0].strip() == fingerprint()
    except OSError:
        return False
