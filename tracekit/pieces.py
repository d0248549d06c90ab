"""A big text file parsed a piece at a time (``ingest``): its lines cut into pieces of at most
PIECE_BYTES, each parsed alone and numbered on from the one before, only the parsed rows kept, so
that memory is bounded by the piece, not by the file (64 MB of c10d warnings took 1.63 GB resident
parsed whole, 0.41 GB in pieces of 8 MB, 0.53 GB in 16 MB: a piece costs ~30x its text at its peak,
half of it the lines as Python strings on their way to polars).

What a parser takes from a whole file stays the same where it comes from the file's head (its rank
named by tracekit's header or a `[PG ID 0 ...]` line, a communicator's init, a version), from an
NCCL line that names a communicator anywhere before (CARRY), or from the lines just before (a shift
or a forward fill of a few lines): each piece is read after them and what they give is dropped.
Pieces are cut between two lines that start alike (inside a run of one kind of line, the bulk of any
big log), never before an indented line (inside a traceback, a stack, an args block). A fact of the
whole file that comes from none of these (a per-file count or first value, a block longer than a
piece) is the piece's own: tests/test_hostile.py compares the stores.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.parsers import Parsed, nccl

PIECE_BYTES = 8 << 20
HEAD_BYTES, HEAD_LINES, CONTEXT_LINES = 64 << 10, 256, 8  # what each piece is read with
# NCCL's lines that name a communicator, its size and a rank in it (`comm 0x.. rank 3 nranks 8 ...`,
# `... nRanks 8 ...`): which process group and rank the COLL lines of every later piece belong to
CARRY, CARRY_BYTES = (b" nranks ", b" nRanks "), 1 << 20
ALIKE_BYTES, ALIKE_LOOK = 12, 1 << 20  # lines alike: the same first bytes; looked for this far back
OPEN = (b"", b"\n", b"\r", b" ", b"\t")  # an indented line is inside a block (a traceback, a stack, args)


@dataclass(frozen=True)
class Piece:
    """Where a piece of a file (``in_pieces``) sits in it: ``after`` lines come before it, of which
    its text starts with the file's first ``head`` lines and the ``context`` lines just before it
    (read with it, so that what a parser takes from a file's header or from the line before stays
    the same; what they give is dropped: they are counted with the pieces they belong to)."""

    after: int = 0
    head: int = 0
    context: int = 0

    def numbered(self, col: str) -> pl.Expr:
        """Line ``col`` of the piece's text as the line of the file it is."""
        c = pl.col(col)
        shift = self.after - self.context - self.head
        return pl.when(c <= self.head).then(c).otherwise(c + shift).alias(col)

    def own(self, df: pl.DataFrame) -> pl.DataFrame:
        """The rows of ``df`` from the piece's own lines (a row of no line is kept)."""
        return df.filter(pl.col("line").is_null() | (pl.col("line") > self.after))

    def parsed(self, p: Parsed) -> Parsed:
        return Parsed(p.kind, {name: df if df is None or "line" not in df.columns else self.own(df)
                               for name, df in p.tables.items()}, self.own(p.claimed))


WHOLE = Piece()


def in_pieces(groups):
    """``_text_groups``' groups as ``(group, scans, piece)``, a file alone with more than PIECE_BYTES
    of text for the polars parsers cut into pieces (``_pieces``), each read with the file's head and
    the lines before it (``Piece``). Each piece is read anew by the scanner: the cost of a piece is
    its own, whatever the size of its file."""
    for group, scans in groups:
        row, data = group[0]
        if len(group) > 1 or (nccl.rest_bytes(scans[0]) if scans is not None else len(data)) <= PIECE_BYTES:
            yield group, scans, WHOLE
            continue
        if scans is not None:
            scans.clear()  # the file's reading as a whole (~24 bytes a line): each piece is read anew
        after, head_end, carried = 0, _head_end(data), []
        for start, end in _pieces(data, PIECE_BYTES):
            text, piece = _with_context(data, start, end, after, head_end, carried)
            yield [(dict(row), text)], None, piece
            after += text.count(b"\n", len(text) - (end - start))  # the piece's own lines
            _carry(data, max(start, head_end), end, carried)


def _carry(data, start: int, end: int, carried: list[bytes]) -> None:
    """Add to ``carried`` the lines of ``data[start:end]`` that name a communicator (CARRY), within
    CARRY_BYTES in all."""
    found = set()
    for mark in CARRY:
        at = data.find(mark, start, end)
        while at >= 0:
            first = data.rfind(b"\n", start, at) + 1 or start
            found.add(first)
            nl = data.find(b"\n", at, end)
            at = data.find(mark, nl, end) if nl >= 0 else -1
    room = CARRY_BYTES - sum(map(len, carried))
    for first in sorted(found):
        nl = data.find(b"\n", first, end)
        line = data[first:end if nl < 0 else nl + 1]
        if len(line) > room:
            return
        carried.append(line if line.endswith(b"\n") else line + b"\n")
        room -= len(line)


def _head_end(data) -> int:
    """Where the file's head ends: after its first HEAD_LINES lines, within HEAD_BYTES."""
    end = 0
    for _ in range(HEAD_LINES):
        nl = data.find(b"\n", end, HEAD_BYTES)
        if nl < 0:
            break
        end = nl + 1
    return end


def _with_context(data, start: int, end: int, after: int, head_end: int, carried: list[bytes]
                  ) -> tuple[bytes, Piece]:
    """The text of the piece ``data[start:end]`` (``after`` lines before it) as it is read: after the
    file's head (``data[:head_end]``), the lines ``carried`` from the pieces before and its
    CONTEXT_LINES lines before (a copy of these alone: of a map, what it reads, read now). The
    carried lines are numbered on from the head (their own numbers are not kept: what they give is
    dropped), so the head and they must number fewer than the lines before the context."""
    if not start:
        return data[start:end], WHOLE
    ctx = start
    for _ in range(CONTEXT_LINES):
        ctx = data.rfind(b"\n", 0, ctx - 1) + 1
        if ctx <= head_end:
            return data[:end], Piece(after, 0, after)  # the head runs into the context: from the start
    head, context = data[:head_end], data[ctx:start].count(b"\n")
    if head.count(b"\n") + len(carried) > after - context:
        carried = []
    head += b"".join(carried)
    return head + data[ctx:end], Piece(after, head.count(b"\n"), context)


def _pieces(data, most: int) -> list[tuple[int, int]]:
    """``(start, end)`` of the pieces ``data`` is cut into: each of at most ``most`` bytes (but for a
    line longer than that, whole in its piece) and ending at the end of a line; where one is near, at
    a line between two lines that start alike (within a run of one kind of line, the bulk of a big
    log: no block of lines a parser reads together, such as a traceback, is cut apart)."""
    n, out, start = len(data), [], 0
    while n - start > most:
        end = data.rfind(b"\n", start, start + most) + 1
        if end <= start:  # one line longer than a piece
            end = data.find(b"\n", start + most)
            end = n if end < 0 else end + 1
        else:
            end = _between_alike(data, start, end)
        out.append((start, end))
        start = end
    return out + [(start, n)] if start < n else out


def _between_alike(data, start: int, end: int) -> int:
    """The end of a line at or before ``end`` (a line's end) and after ``start`` whose line and the
    next start with the same ALIKE_BYTES bytes, not indented, looked for up to ALIKE_LOOK bytes back;
    else the end of the last line before one not indented; else ``end``."""
    nxt, stop, plain = end, max(start, end - ALIKE_LOOK), None
    while nxt > stop:
        prev = data.rfind(b"\n", stop, nxt - 1) + 1
        if prev <= stop:
            break
        if data[nxt:nxt + 1] not in OPEN:
            if data[prev:prev + ALIKE_BYTES] == data[nxt:nxt + ALIKE_BYTES]:
                return nxt
            plain = plain or nxt
        nxt = prev
    return plain or end
