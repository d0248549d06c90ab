"""Read files and folders of mixed kinds into one ``Store``.

Each file's kind is found from its content, never its name, by the format registry
(``tracekit.formats``): a dump or trace is decoded whole; text goes, many files at once, through
every text parser (one log can hold NCCL, torchrun, trainer and py-spy lines). A file that cannot
be read gets one error row in ``files`` and the run goes on with the rest. Many dumps are decoded
in worker processes (``tracekit.dumps``); ``tracekit.engines`` runs the same on a Ray cluster.
A file with more text than ``pieces.PIECE_BYTES`` is parsed a piece at a time (``tracekit.pieces``),
so that memory is bounded by the piece, not by the file.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from tracekit import dumps, escape, formats, inputs, meanings, own, pieces, schema
from tracekit.identity import resolve_ranks
from tracekit.parsers import Parsed, launcher, nccl
from tracekit.pieces import WHOLE, Piece, in_pieces
from tracekit.store import Store

BATCH_BYTES = 256 << 20  # text parsed in one lines frame (a lines frame takes about 8 times its text)
# With the C scanner, batches of files up to SCANNED_BATCH_BYTES: its COLL rows take a third of their
# text, and the rest of the lines go to the polars parsers in groups of at most BATCH_BYTES of text
# (each group costs ~0.05 s of parsers' fixed cost: 1 GB of COLL lines took 1.47 s in 256 MB batches,
# 1.20 s in one)
SCANNED_BATCH_BYTES = 2 << 30
PROGRESS_BYTES = 64 << 20  # smallest batch when a progress bar is drawn (each batch costs ~0.1 s)
# the same with the C scanner, which reads about 1 GB/s: a step of the bar every half second (in 64 MB
# steps the bar cost a terminal's 1 GB ingest 2.1-2.7 s against 0.7-0.9 s)
SCANNED_PROGRESS_BYTES = 512 << 20
# One process: threads read the files and run the C scanner on every core, polars spreads the rest.
# Worker processes measured 5-8x slower on 16 cores (benchmarks/ingest_nccl.py: 2.27 s against 0.27 s
# for 200 MB, 5.76 s against 1.13 s for 1 GB, one process a batch), so none.


def walk(paths: list[str | Path]) -> inputs.Walk:
    """Every regular file under ``paths`` (``tracekit.inputs.walk``: links only inside the folder,
    FIFOs, devices, loops and unreadable folders as notes), tracekit's own folders and files skipped:
    stores (``.tracekit``, and any written by --out), ``tracekit run``'s bookkeeping and verdicts."""
    return inputs.walk(
        paths, skip_dir=lambda folder, name: name in own.SKIP_DIRS or own.is_store(Path(folder, name)),
        skip_file=lambda folder, name: name.endswith(own.SKIP_ENDINGS) or own.is_ours(Path(folder, name)))


def discover(paths: list[str | Path]) -> list[Path]:
    """Every file under ``paths`` that ingest reads (``walk``), in order, each once."""
    return [Path(f.path) for f in walk(paths).files]


def unreadable() -> pl.Expr:
    """The files of which nothing was read: an error, and no line or entry. A file that has an error
    but was read (a truncated ``.gz`` that still held lines) counts as read, its error a note."""
    return pl.col("error").is_not_null() & (pl.col("lines") == 0) & (pl.col("parsed") == 0)


def parse_file(path: str) -> tuple[dict, list[Parsed]]:
    """Parse one file. Returns its ``files`` row and what each parser made of it."""
    return parse_files([path])[0]


def parse_files(paths: list[str], workers: bool = True) -> list[tuple[dict, list[Parsed]]]:
    """Parse a batch of files, in order: dumps and traces one by one, all text in one lines frame
    (a polars call costs the same for one line as for a million, so small files are read together).
    Many dumps are decoded in worker processes (``workers``; dumps.decode_dumps)."""
    done: dict[str, tuple[dict, list[Parsed]]] = {}  # by the name a file's row gives it (escape.name)
    texts = []
    if workers and len(paths) >= dumps.DUMPS_FOR_WORKERS and dumps.cores() > 1:
        # many dumps, by their first byte: the workers read them (this process reading them too
        # cost 0.6 s of 7 at 1,024 dumps)
        decoded = [p for p in paths if formats.may_be_decoded(p)]
        if len(decoded) >= dumps.DUMPS_FOR_WORKERS:
            done.update((escape.name(p), r) for p, r in dumps.decode_dumps(decoded).items())
    rest = [p for p in paths if escape.name(p) not in done]
    # read on every core (reading releases the GIL), then classify in this thread: decoding a
    # dump is Python that threads would only make wait for each other
    with ThreadPoolExecutor(min(len(rest), os.cpu_count() or 1) or 1) as pool:
        contents = list(pool.map(formats.read, rest))
    for path, read in zip(rest, contents):
        row, got = formats.classify_safely(path, read)
        if isinstance(got, (bytes, mmap.mmap)):
            texts.append((row, got))
        else:
            done[row["file"]] = (row, got)
    try:
        done.update(_parse_texts(texts))
    except Exception:  # noqa: BLE001 - find the file that breaks the batch, keep the rest
        for one in texts:
            try:
                done.update(_parse_texts([one]))
            except Exception as e:  # noqa: BLE001
                done[one[0]["file"]] = (formats.error_row(one[0]["file"], e), [])
    return [done[escape.name(p)] for p in paths]


def _claims(texts: list[tuple[dict, bytes]], scans: list[tuple] | None = None, piece: Piece = WHOLE):
    """Every text parser run once over the lines of all ``texts``: the lines frame, the scanner's
    COLL lines, what each parser found, and the non-blank lines and the lines some parser claimed.
    ``scans``: the C scanner's reading of ``texts`` where already made (``nccl.scan_many``);
    ``piece``: where this text sits in its file, for a piece of one (``pieces.in_pieces``)."""
    lines, scanned = nccl.read_many([(row["file"], data) for row, data in texts], scans)
    if piece != WHOLE:
        lines = lines.with_columns(piece.numbered("line"), piece.numbered("cont_of"))
        if scanned is not None:
            scanned = nccl.Coll(scanned.rows.with_columns(piece.numbered("line")),
                                scanned.streams.with_columns(piece.numbered("line")), scanned.ops)
    # Lines of the plain NCCL shape are the NCCL parser's alone: the others skip them (most of a big log).
    plain_nccl = pl.col("text").str.contains(nccl.FAST_HEAD)
    others = lines.filter(~plain_nccl)
    # launcher prefixes sit on every kind of line, NCCL's too
    parsed = [p for p in [nccl.parse(lines, scanned), launcher.parse(lines)]
              + [m.parse(others) for m in formats.OTHER_TEXT] if p.found]
    nonblank = lines.filter(~pl.col("blank")).select("file", "line")
    claimed = pl.concat([p.claimed for p in parsed]).unique() if parsed else nonblank.clear()
    # a hard-wrapped line's continuations are understood when the line they continue is
    cont = lines.filter(pl.col("cont_of").is_not_null()).select("file", "line", "cont_of")
    if cont.height:
        followed = cont.join(claimed.rename({"line": "cont_of"}), on=["file", "cont_of"], how="semi")
        claimed = pl.concat([claimed, followed.select("file", "line")]).unique()
    if piece.head or piece.context:  # the lines read with the piece are counted with their own pieces
        lines, nonblank, claimed = piece.own(lines), piece.own(nonblank), piece.own(claimed)
        parsed = [p for p in map(piece.parsed, parsed) if p.found]
        if scanned is not None:
            scanned = nccl.Coll(piece.own(scanned.rows), scanned.streams, scanned.ops)
    # then the fallback over what no parser claimed: it claims nothing, it only tells the telling lines
    told = formats.FALLBACK.parser.parse(lines, nonblank.join(claimed, on=["file", "line"], how="anti"))
    return lines, scanned, parsed + ([told] if told.found else []), nonblank, claimed


def unknown_lines(paths: list[str | Path]) -> pl.DataFrame:
    """The lines no parser understood, ``file, line, raw`` in file order (the store keeps only how
    many each file has): the text files under ``paths`` are read and parsed again, a batch at a time."""
    files = [str(p) for p in discover(paths)]
    found = [pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64, "raw": pl.Utf8})]
    for batch in batches(files, 1, total_size(files)):
        texts = [(row, got) for row, got in (formats.classify_safely(f, formats.read(f)) for f in batch)
                 if isinstance(got, (bytes, mmap.mmap))]
        for group, scans, piece in in_pieces(_text_groups(texts)):
            lines, _, _, nonblank, claimed = _claims(group, scans, piece)
            unclaimed = nonblank.join(claimed, on=["file", "line"], how="anti")
            found.append(lines.join(unclaimed, on=["file", "line"], how="semi").select("file", "line", "raw"))
    return pl.concat(found).sort("file", "line", maintain_order=True)


def _text_groups(texts: list[tuple[dict, bytes]]):
    """``texts`` in groups of files, each with the C scanner's reading of them (None without it),
    that leave at most BATCH_BYTES of text to the polars parsers (a file with more, or with more than
    pieces.PIECE_BYTES, is a group alone: ``pieces.in_pieces`` parses it a piece at a time)."""
    scans = nccl.scan_many([(row["file"], data) for row, data in texts]) if texts else []
    if scans is None:  # no scanner: the batch is small already (BATCH_BYTES), but for its big files
        big = [len(data) > pieces.PIECE_BYTES for _, data in texts]
        if not all(big):
            yield [t for t, b in zip(texts, big) if not b], None
        yield from (([t], None) for t, b in zip(texts, big) if b)
        return
    start, size = 0, 0
    for i, got in enumerate(scans + [None]):
        n = nccl.rest_bytes(got) if got is not None else 0
        if i > start and (got is None or size + n > BATCH_BYTES or n > pieces.PIECE_BYTES
                          or size > pieces.PIECE_BYTES):
            group = scans[start:i]
            if size > pieces.PIECE_BYTES:  # a file read again a piece at a time: this reading let go
                scans[start] = None
            yield texts[start:i], group
            start, size = i, 0
        size += n


def _parse_texts(texts: list[tuple[dict, bytes]]) -> dict[str, tuple[dict, list[Parsed]]]:
    """Run every text parser once over the lines of each group of ``texts`` (``_text_groups``);
    account for each file's lines."""
    out: dict[str, tuple[dict, list[Parsed]]] = {}
    for group, scans, piece in in_pieces(_text_groups(texts)):
        for f, (row, parsed) in _parse_group(group, scans, piece).items():
            out[f] = _add_piece(out[f], row, parsed) if f in out else (row, parsed)
    return out


KIND_ORDER = {f.kind: i for i, f in enumerate(formats.TEXT)}


def _add_piece(got: tuple[dict, list[Parsed]], row: dict, parsed: list[Parsed]) -> tuple[dict, list[Parsed]]:
    """A file's row and finds with those of its next piece added: its lines counted on, its kinds
    joined (in the parsers' order, as one piece gives them), its tables after the ones before."""
    first, before = got
    kinds = {k for r in (first, row) for k in r["kind"].split(",") if k != "text"}
    first = {**first, "kind": ",".join(sorted(kinds, key=KIND_ORDER.get)) or "text",
             **{c: first[c] + row[c] for c in ("lines", "blank", "parsed", "unknown")},
             **{c: row.get(c) or first.get(c) for c in ("last_line", "last_text")}}
    return first, before + parsed


def _parse_group(texts: list[tuple[dict, bytes]], scans: list[tuple] | None, piece: Piece = WHOLE
                 ) -> dict[str, tuple[dict, list[Parsed]]]:
    """One group: every text parser over its lines once; each file's row, the group's tables with its
    first file (``piece``: as ``_claims``')."""
    lines, scanned, parsed, nonblank, claimed = _claims(texts, scans, piece)
    # the COLL lines read apart are all claimed by the NCCL parser
    streams = scanned.streams if scanned is not None else pl.DataFrame(schema=nccl.STREAMS)
    coll_counts = streams.group_by("file").agg(pl.col("lines").sum().alias("coll"))
    if scanned is not None and (piece.head or piece.context):  # (its streams count the lines read with it)
        coll_counts = pl.DataFrame({"file": [texts[0][0]["file"]], "coll": [scanned.rows.height]},
                                   schema={"file": pl.Utf8, "coll": pl.Int64})
    counts = (
        lines.group_by("file").agg(pl.len().alias("lines"), pl.col("blank").sum().alias("blank"))
        .join(nonblank.join(claimed, on=["file", "line"], how="semi").group_by("file").agg(
            pl.len().alias("parsed")), on="file", how="left")
        .join(coll_counts, on="file", how="full", coalesce=True)
        .with_columns(pl.col("lines", "blank", "parsed", "coll").fill_null(0))
        .with_columns(pl.col("lines") + pl.col("coll"), pl.col("parsed") + pl.col("coll"))
    )
    counts = {r["file"]: r for r in counts.iter_rows(named=True)}
    said = _last_said(lines)
    # a file's kinds are the formats of the lines in it that were decoded (a prefix alone names none)
    kinds = {p.kind: p.files() for p in parsed if p.kind not in formats.NO_KIND}
    out = {}
    for row, _ in texts:
        f = row["file"]
        c = counts.get(f, {"lines": 0, "blank": 0, "parsed": 0})
        n_parsed = c["parsed"] or 0
        row.update(kind=",".join(k for k, fs in kinds.items() if f in fs) or "text", lines=c["lines"],
                   blank=c["blank"], parsed=n_parsed, unknown=c["lines"] - c["blank"] - n_parsed,
                   **said.get(f, {}))
        out[f] = (row, parsed if len(texts) == 1 else [])
    if len(texts) > 1 and parsed:  # the batch's tables travel with its first file
        first = texts[0][0]["file"]
        out[first] = (out[first][0], parsed)
    return out


#: a terminal box's borders and gutters (rich's tracebacks), no words of the line
BOX = r"[│┃║❱]"


def _last_said(lines: pl.DataFrame) -> dict[str, dict]:
    """file -> ``last_line, last_text``: its last line that says something (three letters in a row), as
    the lines frame reads it (prefixes off, a progress bar's last redraw, a box's gutters taken off),
    among its last 64 lines that are not blank and not NCCL's own."""
    t = (pl.col("text").str.replace(r"^.*\r", "").str.replace_all(BOX, " ")
         .str.replace_all(r"\s+", " ").str.strip_chars())
    # (NCCL's lines of the plain shape are left out: the C scanner takes its COLL lines apart unread, so
    # both ways of reading a file agree on its last line)
    last = (lines.filter(~pl.col("blank") & ~pl.col("text").str.contains(nccl.FAST_HEAD))
            .select("file", "line", "text").group_by("file").tail(64)
            .select("file", "line", t.alias("_t"))
            .filter(pl.col("_t").str.contains(r"\w{3}"))
            .group_by("file").agg(pl.col("line").max().alias("last_line"),
                                  pl.col("_t").sort_by("line").last().alias("last_text")))
    return {r["file"]: {"last_line": r["last_line"], "last_text": r["last_text"]}
            for r in last.iter_rows(named=True)}


def total_size(files: list[str]) -> int:
    return sum(os.path.getsize(f) for f in files if os.path.isfile(f))


def batches(files: list[str], parts: int, total: int) -> list[list[str]]:
    """Files in batches of about ``total / parts`` bytes (at most BATCH_BYTES, or SCANNED_BATCH_BYTES
    with the C scanner), kept in order."""
    cap = max(1, min(BATCH_BYTES if nccl._scan is None else SCANNED_BATCH_BYTES, total // max(parts, 1) + 1))
    out, cur, size = [], [], 0
    for f in files:
        n = os.path.getsize(f) if os.path.isfile(f) else 0
        if cur and size + n > cap:
            out.append(cur)
            cur, size = [], 0
        cur.append(f)
        size += n
    return out + [cur] if cur else out


def ingest(paths: list[str | Path], progress: Callable[[int, int], None] | None = None) -> Store:
    """Parse every file under ``paths`` into one store. ``progress(done_bytes, total_bytes)`` is
    called as batches of files finish (for a progress bar; the library itself draws nothing). What
    the walk did not read (a FIFO, a link out of the folder, a folder without permission) is a row
    of ``files`` of its own, kind ``skipped``, with why."""
    results, skipped = parse_all(paths, progress)
    return combine(results + skipped)


def parse_all(paths: list[str | Path], progress: Callable[[int, int], None] | None = None
              ) -> tuple[list[tuple[dict, list[Parsed]]], list[tuple[dict, list[Parsed]]]]:
    """Every file under ``paths`` parsed (``parse_files``' answer, in file order), and a ``files`` row
    of kind ``skipped`` for each entry the walk did not read; ``progress`` as ``ingest``'s."""
    found = walk(paths)
    files = [f.path for f in found.files]
    total = total_size(files)
    # With a progress bar, batches small enough that it moves (about 20 steps, 64 MB at least).
    results, done = [], 0
    step = PROGRESS_BYTES if nccl._scan is None else SCANNED_PROGRESS_BYTES
    for batch in batches(files, min(20, total // step) if progress else 1, total):
        results += parse_files(batch)
        done += total_size(batch)
        if progress:
            progress(done, total)
    return results, [(formats.skipped_row(n), []) for n in found.notes]


#: the small tables of rows that each come from a line (the collectives, the bulk, come in file order
#: already), with the columns that order the rows of one line (two parsers' events on one line came out in
#: either order, as the files were batched: now in one)
IN_LINE_ORDER = {"events": ("kind", "where", "rank", "message"), "comms": ("comm", "rank", "state"),
                 "links": ("what", "rank", "channel", "src", "dst")}


def combine(results: list[tuple[dict, list[Parsed]]]) -> Store:
    """One store from what ``parse_files`` returned, however the files were split into batches
    (one batch per task of a distributed engine, say: docs/scale.md); ranks are resolved here,
    across all of them."""
    gathered: dict[str, list[pl.DataFrame]] = {name: [] for name in schema.TABLES}
    gathered["files"].append(pl.DataFrame([row for row, _ in results], schema=schema.FILES))
    for _, parsed in results:
        for p in parsed:
            for name, df in p.tables.items():
                if df is not None:
                    gathered[name].append(df)
    tables = {name: schema.concat(frames, schema.TABLES[name]) for name, frames in gathered.items()}
    tables = resolve_ranks(tables)
    tables = {name: schema.conform(df, schema.TABLES[name]) for name, df in tables.items()}
    tables["events"] = meanings.with_says(tables["events"])  # what each message says, decoded once
    # a line's rows in file and line order, however the files were batched (each parser gives its
    # rows for a whole batch): the same store from one process or many tasks
    for name, ties in IN_LINE_ORDER.items():
        df = tables[name]
        tables[name] = df.sort(["file", "line", *(pl.col(c).cast(pl.Utf8) for c in ties)],
                               nulls_last=True, maintain_order=True)
    return Store(**tables)
