"""The formats tracekit reads, as data: how each is recognised, what it parses into, whose word
about a rank counts first; and the reading of one file's bytes into its kind (``classify``).

A file's kind is found from its content, never its name: a gzip stream is opened first, then each
``DECODED`` format's ``looks_like`` is asked in turn (a Flight Recorder dump, pickle or JSON; a
Kineto trace, JSON); a file none of them takes is text, and every ``TEXT`` parser reads it (one log
can hold NCCL, torchrun, trainer and py-spy lines). The formats themselves: docs/formats.md.

To add a format: a module in ``tracekit/parsers/`` (``parse`` returning a ``Parsed``) and one
``Format`` line below, with the ``source`` its rows of ``ranks`` carry and that source's precedence.
"""

from __future__ import annotations

import gzip
import mmap
import os
import time
import zlib
from dataclasses import dataclass, field
from types import ModuleType

from tracekit.parsers import (Parsed, boilerplate, flight_recorder, fr_trace, kineto, launcher, mpi, nccl,
                              nccl_ras, nccl_tests, pyspy, torch_log, trainer)


@dataclass(frozen=True)
class Format:
    """One input format. ``parser``: its module. A decoded format (a whole file is one object) has
    ``looks_like(data)``, ``load(data)`` and ``parse(obj, file)``, and ``entries`` names the list of
    the object whose length counts as the file's parsed entries. A text format's ``parse(lines)``
    takes the lines frame of many files at once. ``tables``: what it parses into (schema.TABLES).
    ``ranks``: the ``source`` its ``ranks`` rows carry, with its precedence (``RANK_SOURCES``).
    ``names_kind``: whether a file it finds something in is of its kind (a launcher prefix or a
    banner says nothing of what a file is)."""

    kind: str
    parser: ModuleType
    tables: tuple[str, ...]
    ranks: dict[str, int] = field(default_factory=dict)
    entries: str | None = None
    names_kind: bool = True


#: whole-file formats, asked in this order (the first whose ``looks_like`` says yes decodes the file)
DECODED = (
    Format("flight-recorder", flight_recorder, ("collectives", "ranks", "groups", "events"), {"fr": 1},
           entries="entries"),
    Format("kineto", kineto, ("collectives", "ranks"), {"kineto": 2}, entries="traceEvents"),
)
#: line formats, each run once over the lines of a batch of text files. NCCL's parser reads every
#: line (and the C scanner's COLL lines), the launcher's every line (its prefixes sit on every kind
#: of line, NCCL's too); the others skip the lines of the plain NCCL shape (most of a big log).
TEXT = (
    Format("nccl", nccl, ("collectives", "ranks", "comms", "links", "events"), {"nccl": 0}),
    Format("launcher", launcher, ("ranks",), {"launcher": 6}, names_kind=False),
    Format("torch", torch_log, ("ranks", "events"), {"tracekit": 3, "torchrun": 5, "c10d": 7}),
    Format("trainer", trainer, ("ranks", "events"), {"deepspeed": 10}),
    Format("py-spy", pyspy, ("events",)),
    Format("nccl-tests", nccl_tests, ("ranks", "events"), {"nccl-tests": 4}),
    Format("fr-trace", fr_trace, ("ranks", "events"), {"fr-trace": 8}),
    Format("nccl-ras", nccl_ras, ("ranks", "events"), {"nccl-ras": 9}),
    Format("mpi", mpi, ("events",)),
    Format("boilerplate", boilerplate, (), names_kind=False),
)
#: the parsers the lines that are not plain NCCL go to
OTHER_TEXT = tuple(f.parser for f in TEXT if f.parser not in (nccl, launcher))
#: the kinds of finds that name no kind of file: a prefix, a traceback's source line, a banner
NO_KIND = frozenset(f.kind for f in TEXT if not f.names_kind)
#: whose word about a process counts first (0 first) where the ``source`` of its ``ranks`` rows
#: differ (NCCL's own log for its version), so that a store does not depend on how files were batched
RANK_SOURCES = dict(sorted(((source, order) for f in DECODED + TEXT for source, order in f.ranks.items()),
                           key=lambda x: x[1]))

MAP_BYTES, SETTLED_S = 1 << 20, 10  # see read
CONTROL = bytes([*range(9), *range(14, 32)])


def read(path: str) -> bytes | mmap.mmap | OSError:
    """A file's bytes, or why they could not be read. A big file that nobody wrote to in the last
    SETTLED_S seconds is mapped, not copied (a fifth of ingest's time on 200 MB of logs); a live
    one is read, since a file that shrinks under a map kills the process (SIGBUS)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if st.st_size >= MAP_BYTES and time.time() - st.st_mtime > SETTLED_S:
                try:
                    return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                except (OSError, ValueError):  # a filesystem that cannot map: read it
                    pass
            return f.read()
    except OSError as e:
        return e


def first_byte(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(1)
    except OSError:
        return b""


def may_be_decoded(path: str) -> bool:
    """Whether a file's first byte lets it be a dump or a trace (pickle or JSON), not only text."""
    return first_byte(path) in (b"\x80", b"{")


def _gunzip(data: bytes) -> tuple[bytes, str | None]:
    """Decompress, keeping what a truncated stream still holds."""
    try:
        return gzip.decompress(data), None
    except (EOFError, OSError, zlib.error):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = d.decompress(data)
        except zlib.error as e:
            return b"", f"corrupt gzip stream ({e})"
        return out, ("truncated gzip stream: read what it held" if out
                     else "truncated gzip stream: nothing in it to read")


def _is_binary(data: bytes) -> bool:
    head = data[:8192]
    if not head:
        return False
    if b"\x00" in head:
        return True
    ctrl = len(head) - len(head.translate(None, CONTROL))
    return ctrl > len(head) * 0.1


def _plain_text_head(head: bytes) -> bool:
    """Whether a file starting so can be nothing but text (a torchrun prefix is not JSON)."""
    first = head.lstrip()[:1]
    return first not in (b"\x1f", b"\x80", b"{", b"[") or head.startswith((b"[rank", b"[default"))


def error_row(path: str, e: Exception) -> dict:
    """The ``files`` row of a file whose parsing failed: the run goes on with the rest."""
    return {"file": path, "kind": "error", "size_bytes": None, "lines": 0, "blank": 0, "parsed": 0,
            "unknown": 0, "error": f"tracekit could not parse it: {type(e).__name__}: {e}".splitlines()[0]}


Classified = tuple[dict, list[Parsed] | bytes | mmap.mmap]  # a file's row, and its tables or its text


def classify_safely(path: str, data: bytes | mmap.mmap | OSError) -> Classified:
    """``classify``, with any failure one error row (one bad file must not stop the run)."""
    try:
        return classify(path, data)
    except Exception as e:  # noqa: BLE001 - one bad file must not stop the run
        return error_row(path, e), []


def classify(path: str, data: bytes | mmap.mmap | OSError) -> Classified:
    """A file's ``files`` row and either its decoded dump or trace or its text (``data``: its bytes,
    or why they could not be read), for the text parsers."""
    row = {"file": path, "kind": None, "size_bytes": None, "lines": 0, "blank": 0, "parsed": 0, "unknown": 0,
           "error": None}
    if isinstance(data, OSError):
        row["error"] = f"cannot read: {data.strerror or data}"
        return row, []
    row["size_bytes"] = len(data)
    if isinstance(data, mmap.mmap) and not _plain_text_head(data[:64]):
        data = data[:]  # gzip, pickle or JSON maybe: the decoders want bytes (text stays mapped)
    if data[:2] == b"\x1f\x8b":
        data, row["error"] = _gunzip(data)
    try:
        for f in DECODED:
            if f.parser.looks_like(data):
                obj = f.parser.load(data)
                parsed = [f.parser.parse(obj, path)]
                row.update(kind=f.kind, parsed=len(obj.get(f.entries) or []))
                return row, parsed
    except Exception as e:  # noqa: BLE001 - any decoding failure is reported per file
        if data[:64].lstrip()[:1] in (b"\x80", b"{"):
            what = "pickle" if data[:1] == b"\x80" else "JSON"
            row["error"] = f"unreadable {what}: {type(e).__name__}: {e}".splitlines()[0]
            row["kind"] = "flight-recorder" if what == "pickle" else "json"
            return row, []
    if _is_binary(data):
        row["error"] = "binary file, not a log" + (f" ({row['error']})" if row["error"] else "")
        row["kind"] = "binary"
        return row, []
    return row, data
