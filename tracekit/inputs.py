"""The input layer: every file tracekit reads comes through here, found by ``walk`` and read by ``read``.

A run folder is whatever the job, the cluster and the user left in it, and some of it is hostile by
accident or on purpose. What this layer guarantees, each case a ``Note`` (a value, never an exception):
- only regular files are read: a FIFO (which would block the open forever), a device (``/dev/zero``
  never ends), a socket are skipped with a note;
- a symbolic link is followed only to a file inside the folder being read; one that leads out of
  it, that loops or that leads nowhere is a note; a folder or file that cannot be opened
  (EACCES) is a note and the rest is read;
- a name that is not UTF-8, or holds a newline or a control character, is read under its own
  bytes and shown escaped (``Found.name``, ``escape.name``): it can never print a line of its own;
- a file is read up to ``Limits.file_bytes``, a gzip stream decompressed as a stream up to
  ``Limits.gzip_bytes`` (a 1 MB bomb of 256 MB stops at the limit, never in memory whole; what it
  held is in one anonymous map, never copied), and a line past ``Limits.line_bytes`` is cut there:
  each cut is a note;
- NUL bytes (a crashed node's log ends in preallocated zeros) are noise: taken out, counted in a note;
- a big settled file is mapped (the fast path: no copy) only under a read lease, which makes any
  other process's open for writing or truncation wait until tracekit is done with the map (a file
  truncated under a map kills the reader with SIGBUS); without a lease (a writer holds the file
  open, another user's file, a filesystem without leases) it is read. A file that shrinks while it
  is read gives what it held, and a note.
"""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import signal
import stat
import time
import weakref
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from tracekit import escape

MAP_BYTES, SETTLED_S = 1 << 20, 10  # a file this big, unwritten this long, is mapped (under a lease)
# the signal a lease break sends: SIGURG, whose default is to be ignored (SIGIO's default kills)
LEASE_SIGNAL = signal.SIGURG
CHUNK = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class Limits:
    file_bytes: int = 16 << 30  # bytes read of one file (a big log is mapped: its text costs no copy)
    # bytes decompressed from one .gz, held once (an anonymous map) and parsed in ingest's pieces
    # (pieces.PIECE_BYTES): the 0.9 MB of 256 MB of c10d warnings, 0.83 GB resident in all
    gzip_bytes: int = 256 << 20
    line_bytes: int = 1 << 20  # a line past this is cut here


DEFAULT = Limits()


@dataclass(frozen=True)
class Note:
    """What happened to one input: ``name`` as shown (escaped), ``line`` where a line is meant."""

    name: str
    what: str
    line: int | None = None
    skipped: bool = False  # nothing of it read

    def __str__(self) -> str:
        return f"{self.name}{f':{self.line}' if self.line else ''}: {self.what}"


@dataclass(frozen=True)
class Found:
    """A regular file to read: ``path`` opens it (a name's undecodable bytes kept as surrogates),
    ``name`` shows it (valid UTF-8, control characters escaped: what tables and reports hold)."""

    path: str
    name: str


@dataclass
class Walk:
    files: list[Found] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


def _why(e: OSError, link: bool = False) -> str:
    if link and e.errno == errno.ENOENT:
        return "a symbolic link that leads nowhere"
    return {errno.ELOOP: "a symbolic link loop", errno.ENOENT: "no such file",
            errno.EACCES: "permission denied"}.get(e.errno, e.strerror or str(e))


def _kind(mode: int) -> str | None:
    """What a file is when it is not a regular one (None when it is)."""
    for test, what in ((stat.S_ISREG, None), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def walk(paths: Iterable[str | os.PathLike], skip_dir=None, skip_file=None) -> Walk:
    """Every regular file under ``paths``, in sorted order, each once. A path named here is read
    whatever it is a link to; under a folder, links are followed only inside that folder.
    ``skip_dir(folder, name)`` and ``skip_file(folder, name)`` leave out what the caller does not read."""
    out, found = Walk(), []  # found: (path, real path, through a link)

    def add(path: str, real: str, link: bool = False) -> None:
        found.append((path, real, link))

    for p in map(os.fspath, paths):
        try:
            st = os.stat(p)
        except OSError as e:
            out.notes.append(Note(escape.name(p), f"cannot read: {_why(e)}", skipped=True))
            continue
        if stat.S_ISDIR(st.st_mode):
            _walk_folder(p, os.path.realpath(p), out, add, skip_dir, skip_file, set())
        elif (what := _kind(st.st_mode)) is None:
            add(p, os.path.realpath(p))
        else:
            out.notes.append(Note(escape.name(p), f"{what}, not a file: skipped", skipped=True))
    # each file once, under its own name where it has one (a link to it is not read again)
    direct = {real for _, real, link in found if not link}
    seen: set[str] = set()
    for path, real, link in found:
        if real not in seen and not (link and real in direct):
            seen.add(real)
            out.files.append(Found(path, escape.name(path)))
    return out


def _walk_folder(folder: str, root: str, out: Walk, add, skip_dir, skip_file, inside: set) -> None:
    real = os.path.realpath(folder)
    if real in inside:  # reached again through a link
        return
    inside.add(real)
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as e:
        out.notes.append(Note(escape.name(folder), f"cannot list the folder: {_why(e)}", skipped=True))
        return
    subdirs = []
    for e in entries:
        path = os.path.join(folder, e.name)
        shown = escape.name(path)
        try:
            if e.is_symlink():
                try:
                    target = os.path.realpath(path, strict=True)
                    st = os.stat(target)
                except OSError as err:
                    out.notes.append(Note(shown, f"{_why(err, link=True)}: skipped", skipped=True))
                    continue
                if not _inside(target, root):
                    out.notes.append(Note(shown, f"a symbolic link out of the folder ({escape.name(target)})"
                                                 ": not followed", skipped=True))
                    continue
            else:
                target, st = path, e.stat(follow_symlinks=False)
        except OSError as err:
            out.notes.append(Note(shown, f"cannot read: {_why(err)}", skipped=True))
            continue
        if stat.S_ISDIR(st.st_mode):
            if not _skips(skip_dir, folder, e.name):
                subdirs.append(path)
            continue
        if _skips(skip_file, folder, e.name):
            continue
        what = _kind(st.st_mode)
        if what is None:
            add(path, os.path.realpath(target), e.is_symlink())
        else:
            out.notes.append(Note(shown, f"{what}, not a file: skipped", skipped=True))
    for d in subdirs:
        _walk_folder(d, root, out, add, skip_dir, skip_file, inside)


def _skips(skip, folder: str, name: str) -> bool:
    """``skip(folder, name)``; False where it cannot tell (a folder it cannot look into is read, and
    its own note says why)."""
    try:
        return bool(skip and skip(folder, name))
    except OSError:
        return False


@dataclass
class Read:
    """One file's content (``data``: bytes, or a map of the file that holds its read lease while it
    lives: ``_map``; None when nothing could be read),
    its size on disk and what happened while reading it."""

    found: Found
    data: bytes | mmap.mmap | None
    size: int | None
    notes: list[Note] = field(default_factory=list)
    gzip: bool = False

    @property
    def error(self) -> str | None:
        """The first note, as a ``files`` row's error column has it (None when there is none)."""
        return self.notes[0].what if self.notes else None


def read(found: Found | str, limits: Limits | None = None, gunzip: bool = True, map_bytes: int = MAP_BYTES,
         settled_s: float = SETTLED_S) -> Read:
    """``found``'s content within ``limits`` (see the module docstring); never raises for the file's
    sake. ``gunzip=False``: a gzip file's own bytes, not decompressed. A file of ``map_bytes`` or
    more, unwritten for ``settled_s``, is mapped where a lease is granted."""
    limits = limits or DEFAULT
    if isinstance(found, str):
        found = Found(found, escape.name(found))
    try:
        # O_NONBLOCK: a file swapped for a FIFO since the walk does not block the open
        fd = os.open(found.path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        return Read(found, None, None, [Note(found.name, f"cannot read: {_why(e)}", skipped=True)])
    keep = False
    try:
        st = os.fstat(fd)
        if (what := _kind(st.st_mode)) is not None:
            return Read(found, None, None, [Note(found.name, f"{what}, not a file: skipped", skipped=True)])
        notes: list[Note] = []
        head = os.pread(fd, 2, 0)
        if head == GZIP_MAGIC and gunzip:
            data = _gunzip(fd, found.name, limits, notes, map_bytes)
            return Read(found, data, st.st_size, notes, gzip=True)
        data = _map(fd, st, limits, map_bytes, settled_s) if head else None
        if data is not None:
            keep = True  # the map owns the descriptor (and its lease) now
        else:
            data = _read_all(fd, min(st.st_size, limits.file_bytes), found.name, notes)
        if st.st_size > limits.file_bytes:
            notes.append(Note(found.name, f"cut at {_mb(limits.file_bytes)} of {_mb(st.st_size)}: "
                                          "the rest not read"))
        return Read(found, data, st.st_size, notes)
    except OSError as e:
        return Read(found, None, None, [Note(found.name, f"cannot read: {_why(e)}", skipped=True)])
    finally:
        if not keep:
            os.close(fd)


def _mb(n: int) -> str:
    return f"{n / (1 << 30):.1f} GB" if n >= 1 << 30 else f"{n / (1 << 20):.1f} MB"


def _map(fd: int, st: os.stat_result, limits: Limits, map_bytes: int, settled_s: float) -> mmap.mmap | None:
    """The settled file mapped under a read lease, or None (read it) where no lease is granted. The
    map owns ``fd`` from here: it is closed, and the lease with it, when the map is garbage (no other
    process can truncate the file under it before: the truncation waits)."""
    if st.st_size < map_bytes or time.time() - st.st_mtime <= settled_s:
        return None
    try:
        fcntl.fcntl(fd, fcntl.F_SETSIG, LEASE_SIGNAL)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)  # EAGAIN: a writer has it open; EACCES: not ours
    except OSError:
        return None
    if os.fstat(fd).st_size < st.st_size:  # shrank before the lease: read what it holds
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        return None
    try:
        m = mmap.mmap(fd, min(st.st_size, limits.file_bytes), access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # a filesystem that cannot map
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        return None
    weakref.finalize(m, os.close, fd)
    return m


def _read_all(fd: int, size: int, name: str, notes: list[Note]) -> bytes:
    """Up to ``size`` bytes; fewer, and a note, when the file shrank while it was read. One read
    where the kernel gives it all (the bytes object is the buffer: no copy)."""
    data = os.read(fd, size) if size else b""
    if len(data) < size:  # a read stops at 2 GB, or the file shrank
        parts = [data]
        got = len(data)
        while got < size and (more := os.read(fd, min(size - got, 1 << 30))):
            parts.append(more)
            got += len(more)
        data = b"".join(parts)
        if got < size:
            notes.append(Note(name, f"shrank while read ({size:,} -> {got:,} bytes): read what it held"))
    return data


def _gunzip(fd: int, name: str, limits: Limits, notes: list[Note], map_bytes: int = MAP_BYTES
            ) -> bytes | mmap.mmap:
    """The decompressed stream (every member), read and inflated a chunk at a time up to
    ``limits.gzip_bytes``: a truncated or corrupt stream gives what it held, and a note. Past
    ``map_bytes`` the chunks are moved into an anonymous map (``_joined``): the text is held once."""
    out: list[bytes] = []
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pos, left = 0, limits.gzip_bytes

    def held() -> bool:
        return left < limits.gzip_bytes
    while True:
        chunk = os.pread(fd, CHUNK, pos)
        if not chunk:
            if not d.eof and pos:
                notes.append(Note(name, "truncated gzip stream: read what it held" if held()
                                  else "truncated gzip stream: nothing in it to read"))
            out.append(d.flush()[:max(left, 0)])
            return _joined(out, map_bytes)
        pos += len(chunk)
        while chunk:
            try:
                got = d.decompress(chunk, min(left + 1, CHUNK))
            except zlib.error as e:
                what = f"corrupt gzip stream ({e})" + (": read what it held" if held() else "")
                notes.append(Note(name, what))
                return _joined(out, map_bytes)
            out.append(got[:left])
            left -= len(got)
            if left < 0:
                notes.append(Note(name, f"cut at {_mb(limits.gzip_bytes)} decompressed: the rest not read"))
                return _joined(out, map_bytes)
            chunk = d.unconsumed_tail
            if d.eof:  # a next member, or trailing bytes
                rest = d.unused_data
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                if not rest.startswith(GZIP_MAGIC):
                    return _joined(out, map_bytes)
                chunk = rest


def _joined(chunks: list[bytes], map_bytes: int) -> bytes | mmap.mmap:
    """``chunks`` as one text: under ``map_bytes`` joined, else moved (each chunk freed as it is
    copied) into an anonymous map of their size, so the text is never held twice (joining 256 MB of
    chunks held 512 MB at once, and ``bytes()`` of the buffer they were gathered in another 256 MB)."""
    n = sum(map(len, chunks))
    if n < map_bytes or not n:
        return b"".join(chunks)
    m = mmap.mmap(-1, n)
    chunks.reverse()
    while chunks:
        m.write(chunks.pop())
    m.seek(0)
    return m


def text(got: Read, limits: Limits | None = None) -> Read:
    """``got`` as text, for the line parsers (a dump or a trace is read as it is): NUL bytes taken out
    and lines past ``limits.line_bytes`` cut, each a note. On an ordinary log (the fast path) both
    checks cost a few memchr calls and the bytes are left as they are: a map stays a map."""
    got.data = _clean(got.data, got.found.name, limits or DEFAULT, got.notes)
    return got


def _clean(data, name: str, limits: Limits, notes: list[Note]):
    if data is None or not len(data):
        return data
    if data.find(b"\x00") >= 0:
        before = len(data)
        data = bytes(data).replace(b"\x00", b"")
        notes.append(Note(name, f"{before - len(data):,} NUL byte(s) taken out as noise"))
    long = _long_lines(data, limits.line_bytes)
    if not long:
        return data
    data = bytes(data)
    pieces, pos = [], 0
    for start, end in long:
        line = data.count(b"\n", 0, start) + 1
        what = f"a line of {end - start:,} bytes cut at {_mb(limits.line_bytes)}"
        notes.append(Note(name, what, line=line))
        pieces += [data[pos:start + limits.line_bytes], b"\n"]
        pos = end + 1
    pieces.append(data[pos:])
    return b"".join(pieces)


def _long_lines(data, most: int) -> list[tuple[int, int]]:
    """(start, end) of each line longer than ``most`` bytes (end: its newline, or the end). Tiles of
    ``most // 2`` bytes are checked for a newline, one memchr each, and only a tile without one is
    looked at further: any line of ``most`` bytes covers a whole tile."""
    tile, n, found = max(1, most // 2), len(data), []
    pos = 0
    while pos < n:
        end = min(pos + tile, n)
        if end - pos == tile and data.find(b"\n", pos, end) < 0:
            start = data.rfind(b"\n", 0, pos) + 1
            stop = data.find(b"\n", end)
            stop = n if stop < 0 else stop
            if stop - start > most:
                found.append((start, stop))
            pos = stop + 1
            continue
        pos = end
    return found
