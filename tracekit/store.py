"""The store: the six tables of one ingested run, as parquet files in one folder.

Written atomically: the tables go to a fresh sibling folder that then replaces the old store in
one rename, so a crash mid-write leaves the old store or none, never half of one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, fields
from pathlib import Path

import polars as pl

from tracekit import schema


from tracekit.errors import StoreError  # noqa: E402,F401 - re-exported: tracekit.store.StoreError


@dataclass
class Store:
    files: pl.DataFrame
    ranks: pl.DataFrame
    comms: pl.DataFrame
    links: pl.DataFrame
    collectives: pl.DataFrame
    events: pl.DataFrame

    def tables(self) -> dict[str, pl.DataFrame]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def write(self, folder: str | Path) -> Path:
        folder = Path(folder)
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
        except OSError as e:
            raise StoreError(f"{folder}: cannot write the store here ({e.strerror or e})") from None
        try:
            for name, df in self.tables().items():
                df.write_parquet(tmp / f"{name}.parquet")
            (tmp / "made_by.txt").write_text(fingerprint() + "\n")
            old = None
            if folder.exists():
                old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
                os.replace(folder, old)
            os.replace(tmp, folder)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except Exception as e:  # noqa: BLE001 - OSError, or polars' own error for a full disk
            shutil.rmtree(tmp, ignore_errors=True)
            why = getattr(e, "strerror", None) or str(e).splitlines()[0] if str(e) else type(e).__name__
            raise StoreError(f"{folder}: writing the store failed ({why}); the old store is untouched") from None
        return folder

    @classmethod
    def read(cls, folder: str | Path) -> "Store":
        folder = Path(folder)
        tables = {}
        for name, sch in schema.TABLES.items():
            path = folder / f"{name}.parquet"
            if not path.exists():
                raise StoreError(f"{path}: missing; re-run `tracekit ingest` on the logs")
            try:
                df = pl.read_parquet(path)
            except Exception as e:  # noqa: BLE001 - polars raises several kinds for a bad file
                raise StoreError(f"{path}: not a readable parquet file ({type(e).__name__}); re-run `tracekit ingest`") from None
            if list(df.columns) != list(sch):
                raise StoreError(f"{path}: columns differ from tracekit's schema; re-run `tracekit ingest`")
            tables[name] = df
        return cls(**tables)


def is_store(folder: str | Path) -> bool:
    return (Path(folder) / "files.parquet").exists()


def fingerprint() -> str:
    """What made a store: a hash of the code that turns logs into tables (parsers, ingest, schema)."""
    here = Path(__file__).parent
    h = hashlib.sha1()
    for f in sorted([*here.glob("parsers/*.py"), here / "ingest.py", here / "schema.py"]):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:16]


def made_by_this_code(folder: str | Path) -> bool:
    """False for a store written by another version of tracekit's parsers: re-ingest it."""
    try:
        return (Path(folder) / "made_by.txt").read_text().strip() == fingerprint()
    except OSError:
        return False
