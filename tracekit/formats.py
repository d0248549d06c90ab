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

import mmap
import os
import stat
from dataclasses import dataclass, field
from types import ModuleType

from tracekit import inputs
from tracekit.parsers import (Parsed, boilerplate, flight_recorder, fr_trace, kineto, launcher, mpi, nccl,
                              nccl_ras, nccl_tests, pyspy, torch_log, trainer)
from tracekit.parsers import deepspeed_config, elastic  # branch cli
from tracekit.parsers import environment, program_output, rank_prose, rank_words  # branch unknown
from tracekit.parsers import printouts  # branch shape
from tracekit.parsers import salient  # branch salient
from tracekit.parsers import runtimes  # branch identity: other runtimes' own lines (UCX, Ray, XLA, Slurm)
from tracekit.parsers import series  # branch progress
from tracekit.parsers import figure_table  # health (s29): a loop's figures as a table under a header
from tracekit.parsers import minmax_timers  # pace (s34): Megatron's timers as (min, max) across ranks
from tracekit.parsers import bench_results  # branch progress: a benchmark's result lines
from tracekit.parsers import start_up  # startup (s18): start-up lines no other parser decodes
from tracekit.parsers import gdb_backtrace  # stall34: a bare gdb/pstack backtrace (no thread header)


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
    Format("launcher", launcher, ("ranks",), {"launcher": 6, launcher.LOCAL_TAG: 19}, names_kind=False),
    Format("torch", torch_log, ("ranks", "events"),
           {"tracekit": 3, "torchrun": 5, "c10d": 7, "deepspeed-launcher": 16}),
    Format("trainer", trainer, ("ranks", "events"), {"deepspeed": 10}),
    Format("py-spy", pyspy, ("events", "ranks"), {"stacks": 12}),  # branch progress: a dump's said rank
    Format("gdb-backtrace", gdb_backtrace, ("events",)),  # stall34: a bare `bt` pyspy counts, no stack made
    Format("nccl-tests", nccl_tests, ("ranks", "events"), {"nccl-tests": 4}),
    Format("benchmark", bench_results, ("events",)),  # result lines and tables of any benchmark (s24)
    Format("fr-trace", fr_trace, ("ranks", "events"), {"fr-trace": 8}),
    Format("nccl-ras", nccl_ras, ("ranks", "events"), {"nccl-ras": 9}),
    Format("mpi", mpi, ("events", "ranks"), {"mpi": 15}),  # branch identity: Open MPI heads name a process
    Format("runtimes", runtimes, ("ranks", "events"), {"runtimes": 14}),  # branch identity
    Format("torchrun-agent", elastic, ("events", "ranks"), {"torchrun-agent": 11},  # branch cli: restarts
           names_kind=False),
    Format("start-up", start_up, ("events",), names_kind=False),  # startup (s18): a runtime's start-up words
    Format("deepspeed-config", deepspeed_config, ("events",), names_kind=False),  # branch cli: ZeRO settings
    Format("boilerplate", boilerplate, (), names_kind=False),
    Format("program-output", program_output, (), names_kind=False),  # branch unknown: programs' fixed output
    Format("printouts", printouts, (), names_kind=False),  # branch shape: dumps, reprs, argument sections
    Format("series", series, ("events",), names_kind=False),  # branch progress: progress lines by shape
    Format("figure-table", figure_table, ("events",), names_kind=False),  # health (s29): a loop's figures as a table
    Format("minmax-timers", minmax_timers, ("events",), names_kind=False),  # pace (s34): (min, max) across ranks
    Format("environment", environment, ("ranks",), {"environment": 13}, names_kind=False),  # branch unknown
    Format("rank-words", rank_words, ("ranks",), {"rank-words": 17}, names_kind=False),  # (s23) ranks named in words
    # (s28) ranks only a log's prose names, counted last (identity._prose_last)
    Format("rank-prose", rank_prose, ("ranks",), {rank_prose.SOURCE: 18}, names_kind=False),
)
#: the reader of the lines no ``TEXT`` parser claimed, run after them all (``ingest``): it claims none
#: (they stay unknown lines) and only tells the verdict which of them read as a crash, a transport failure,
#: a wait or an error (``parsers/salient.py``)
FALLBACK = Format("salient", salient, ("events",), names_kind=False)
#: the parsers the lines that are not plain NCCL go to
OTHER_TEXT = tuple(f.parser for f in TEXT if f.parser not in (nccl, launcher))
#: the kinds of finds that name no kind of file: a prefix, a traceback's source line, a banner
NO_KIND = frozenset(f.kind for f in TEXT + (FALLBACK,) if not f.names_kind)
#: whose word about a process counts first (0 first) where the ``source`` of its ``ranks`` rows
#: differ (NCCL's own log for its version), so that a store does not depend on how files were batched
RANK_SOURCES = dict(sorted(((source, order) for f in DECODED + TEXT for source, order in f.ranks.items()),
                           key=lambda x: x[1]))

MAP_BYTES, SETTLED_S = inputs.MAP_BYTES, inputs.SETTLED_S  # see read

#: control bytes that do not occur in text (tab, newline, vertical tab, form feed and carriage return
#: do; NUL is noise that a log of a crashed node holds, taken out by the input layer)
CONTROL = bytes([*range(1, 9), *range(14, 32)])


def read(path: str) -> inputs.Read:
    """A file's bytes through the input layer (``tracekit.inputs``): a regular file only, within
    the byte limits, a .gz inflated as a stream, a big settled file mapped under a lease (a file
    truncated under a plain map killed the process with SIGBUS); what happened, as notes."""
    return inputs.read(path, map_bytes=MAP_BYTES, settled_s=SETTLED_S)


def first_byte(path: str) -> bytes:
    """The first byte of a regular file (b"" for anything else: a FIFO is never opened to wait)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        return os.pread(fd, 1, 0) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)


def may_be_decoded(path: str) -> bool:
    """Whether a file's first byte lets it be a dump or a trace (pickle or JSON), not only text."""
    return first_byte(path) in (b"\x80", b"{")


def _is_binary(data) -> bool:
    """Whether the head of ``data`` is not text: more than a tenth of its bytes, NUL bytes aside
    (noise in a log, taken out before the parsers see it), are control bytes."""
    head = bytes(data[:8192]).replace(b"\x00", b"")
    if not head:
        return False
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


def classify_safely(path: str, got: inputs.Read) -> Classified:
    """``classify``, with any failure one error row (one bad file must not stop the run)."""
    try:
        return classify(path, got)
    except Exception as e:  # noqa: BLE001 - one bad file must not stop the run
        return error_row(got.found.name, e), []


def skipped_row(note: inputs.Note) -> dict:
    """The ``files`` row of an entry the input layer did not read (a FIFO, a link out of the
    folder, a folder it could not list): counted, with why."""
    return {"file": note.name, "kind": "skipped", "size_bytes": None, "lines": 0, "blank": 0, "parsed": 0,
            "unknown": 0, "error": note.what}


def classify(path: str, got: inputs.Read) -> Classified:
    """A file's ``files`` row and either its decoded dump or trace or its text (``got``: what the
    input layer read of it), for the text parsers. The row names the file as ``got.found.name``
    (control characters and bytes that are not UTF-8 escaped: what tables and reports show)."""
    name = got.found.name
    row = {"file": name, "kind": None, "size_bytes": None, "lines": 0, "blank": 0, "parsed": 0, "unknown": 0,
           "error": None}
    if got.data is None:
        row.update(kind="unreadable", error=got.error or "cannot read")
        return row, []
    data = got.data
    row["size_bytes"] = got.size

    def note() -> str | None:
        return "; ".join(n.what for n in got.notes) or None
    row["error"] = note()
    if isinstance(data, mmap.mmap) and not _plain_text_head(data[:64]):
        data = data[:]  # pickle or JSON maybe: the decoders want bytes (text stays mapped)
    try:
        for f in DECODED:
            if f.parser.looks_like(data):
                obj = f.parser.load(data)
                parsed = [f.parser.parse(obj, name)]
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
    got.data = data
    got = inputs.text(got)  # NUL bytes out, lines past 1 MB cut: each a note
    row["error"] = note()
    return row, got.data
