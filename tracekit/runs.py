"""Runs and attempts told apart: what one ingest read, split into the runs it holds.

A folder often holds more than one run: torchrun's restarts (``--max-restarts``), elastic attempts, a
job re-submitted into the same log folder, a Slurm requeue, or a folder of unrelated runs side by
side. Read as one, they make one confident and wrong verdict (a world of 256 ranks on 73 nodes).
Each file is given to one run here, before ranks are resolved across files (``ingest.combine``),
from what its parsed rows say, in this order:

0. the launcher's word first: torchrun's run id and restart count (its agent's ``Rendezvous complete
   ... restart_count=N`` blocks, ``parsers/elastic.py``, and its log folder ``RUNID_xxxxxxxx/attempt_N/``):
   files of one run id and restart count are one attempt, of two restart counts never one; a launcher
   log that holds several attempts is cut at each ``Rendezvous'ing worker group`` into one part each;
1. a process (its pid, within one folder) or an NCCL communicator id (random, 64 bits: anywhere)
   that two files share puts them in one run;
2. files of one folder are one run unless their ranks collide: one rank held by two different
   processes (pids), or one rank's two Flight Recorder dumps whose collectives do not overlap in
   time; the earliest in time are placed first;
3. runs in sibling folders (``node0/``, ``node1/``) are one run where they are of one world size,
   overlap in time (or say nothing of time), and a rank both name is one process in both.

No union is made that would make two processes one rank. Each run has its files, ranks, hosts,
processes and time span (Flight Recorder times, else the files' modification times), the latest first.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from tracekit.outcome import LOCAL_NUMBER
from tracekit.parsers import Parsed
from tracekit.runs_launcher import AGENT_CLOCK, PART, agent_spans, cut_parts, launcher_word, real
from tracekit.store import Store
from tracekit.wording import who

#: pids this close are of one launch (a launcher forks its ranks one after another)
NEAR_PIDS = 64
PID_IN_NAME = re.compile(r"(?<![0-9])[0-9]{3,7}(?![0-9])")
Results = list[tuple[dict, list[Parsed]]]  # ingest.parse_files: each file's row and what parsers made


@dataclass
class Piece:
    """Files told to be one run so far, and what they say about who and when."""

    files: list[str]
    folders: set[str]
    pids: dict[int, set[int]]  # rank -> the pids that held it
    # rank -> (latest first, earliest last) ns of its Flight Recorder dumps: two dumps are apart in time
    # where one's first record is after the other's last, so these two ends say whether any two are
    dumps: dict[int, tuple[int, int]]
    world: set[int]
    ranks: set[int]
    t0: int | None = None
    t1: int | None = None
    attempt: tuple[str | None, int] | None = None  # torchrun's (run id, restart count), where it says
    agent: tuple[int, int] | None = None  # ns of torchrun's agent's first and last line, on its clock

    def collides(self, other: Piece) -> bool:
        """Whether one rank would be two processes: different pids, or dumps apart in time; or two
        attempts by the launcher's word (other restart counts, or other run ids)."""
        if self.attempt is not None and other.attempt is not None:
            (run_a, k_a), (run_b, k_b) = self.attempt, other.attempt
            if k_a != k_b or (run_a and run_b and run_a != run_b):
                return True
        for r in self.ranks & other.ranks:
            a, b = self.pids.get(r), other.pids.get(r)
            if a and b and not a & b:
                return True
            (e0, e1), (f0, f1) = self.dumps.get(r, (None, None)), other.dumps.get(r, (None, None))
            if e0 is not None and f0 is not None and (e0 > f1 or f0 > e1):
                return True
        return False

    def take(self, other: Piece) -> None:
        self.files += other.files
        self.folders |= other.folders
        self.ranks |= other.ranks
        self.world |= other.world
        for r, p in other.pids.items():
            self.pids.setdefault(r, set()).update(p)
        for r, (d0, d1) in other.dumps.items():
            e0, e1 = self.dumps.get(r, (d0, d1))
            self.dumps[r] = (max(e0, d0), min(e1, d1))
        times = [t for t in (self.t0, other.t0) if t is not None]
        self.t0 = min(times) if times else None
        times = [t for t in (self.t1, other.t1) if t is not None]
        self.t1 = max(times) if times else None
        if self.attempt is None or (other.attempt is not None and self.attempt[0] is None):
            self.attempt = other.attempt
        spans = [x for x in (self.agent, other.agent) if x is not None]
        self.agent = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else None


@dataclass
class Attempt:
    """One run (or attempt) of what was read: its number (1 the latest), its files and what they say."""

    number: int
    files: list[str]
    ranks: list[int]
    world_size: int | None
    hosts: list[str]
    start_ns: int | None
    end_ns: int | None
    timed_by: str  # "flight recorder" or "file times"
    launch: tuple[str | None, int] | None = None  # torchrun's (run id, restart count), where it says
    results: Results = field(repr=False, default_factory=list)
    store: Store | None = field(repr=False, default=None)  # already combined (a Ray ingest), else None

    def span(self) -> str:
        if self.start_ns is None or self.end_ns is None:
            return "time unknown"
        a, b = (datetime.fromtimestamp(t / 1e9, timezone.utc) for t in (self.start_ns, self.end_ns))
        end = b.strftime("%H:%M:%S" if a.date() == b.date() else "%Y-%m-%d %H:%M:%S")
        zone = "" if self.timed_by == AGENT_CLOCK else " UTC"  # (glog writes the node's local time)
        return f"{a:%Y-%m-%d %H:%M:%S} - {end}{zone} ({self.timed_by})"

    def folder(self) -> str:
        """The folder that holds all its files (their common parent)."""
        parents = {str(Path(f).parent) for f in self.files}
        return str(Path(*_common([Path(p).parts for p in parents]))) if parents else "."

    def describe(self, coverage: dict | None = None) -> str:
        """``2026-12-03 16:16:42 - 16:16:46 UTC (flight recorder): ranks 0-3 of 4 on vm, 14 files in
        logs/attempt1``: what a user tells runs apart by. Given its verdict's coverage (``Coverage.to_dict``),
        the ranks numbered by their local rank once its files were read together are said too."""
        sources = (coverage or {}).get("sources", {})
        local = [r for r in (coverage or {}).get("seen", [])
                 if r not in self.ranks and LOCAL_NUMBER in sources.get(str(r), [])]
        ranks = (who(self.ranks) if self.ranks else "" if local
                 else "no rank named" if not self.world_size else "a world")
        if local:
            ranks += f"{', ' if self.ranks else ''}{who(local)} numbered by {LOCAL_NUMBER}"
        world = f" of {self.world_size}" if self.world_size else ""
        more = " ..." if len(self.hosts) > 3 else ""
        hosts = f" on {', '.join(self.hosts[:3])}{more}" if self.hosts else ""
        said = ""
        if self.launch is not None:
            run_id, k = self.launch
            said = f"torchrun {'run ' + run_id + ' ' if run_id else ''}restart {k}: "
        return f"{said}{self.span()}: {ranks}{world}{hosts}, {len(self.files)} file(s) in {self.folder()}"

    def to_dict(self) -> dict:
        return {"run": self.number, "files": len(self.files), "folder": self.folder(), "ranks": self.ranks,
                "world_size": self.world_size, "hosts": self.hosts, "start_ns": self.start_ns,
                "end_ns": self.end_ns, "timed_by": self.timed_by,
                "torchrun_run_id": self.launch[0] if self.launch else None,
                "restart_count": self.launch[1] if self.launch else None}


def whole(store: Store) -> Attempt:
    """A store read as one run (what a Ray ingest gives: it is not split)."""
    ranks = store.ranks["rank"].drop_nulls().unique().sort().to_list()
    world = store.ranks["world_size"].drop_nulls()
    return Attempt(1, store.files["file"].to_list(), ranks, int(world.max()) if world.len() else None,
                   store.ranks["host"].drop_nulls().unique().sort().to_list(), None, None, "", store=store)


def _common(parts: list[tuple[str, ...]]) -> tuple[str, ...]:
    out = []
    for level in zip(*parts):
        if len(set(level)) > 1:
            break
        out.append(level[0])
    return tuple(out) or (".",)


def _rows(results: Results) -> pl.DataFrame:
    """``file, host, pid, rank, comm_id, world_size, fr_ns`` of every parsed row that names any."""
    cols = {"file": pl.Utf8, "host": pl.Utf8, "pid": pl.Int64, "rank": pl.Int64, "comm_id": pl.Utf8,
            "world_size": pl.Int64, "fr_ns": pl.Int64}
    frames = [pl.DataFrame(schema=cols)]
    for _, parsed in results:
        for p in parsed:
            for name, df in p.tables.items():
                if df is None or not df.height or "file" not in df.columns:
                    continue
                fr = (pl.col("start_ns") if name == "collectives" and "start_ns" in df.columns
                      and "source" in df.columns else None)
                # a rank only as the ranks table names it: a file's own rank (a communicator's rank in
                # `comms`, or a rank a message speaks of, is not the process's)
                frames.append(df.select(
                    pl.col("file").cast(pl.Utf8),
                    *[(pl.col(c) if c in df.columns and (c != "rank" or name == "ranks") else pl.lit(None))
                      .cast(t).alias(c) for c, t in cols.items() if c not in ("file", "fr_ns")],
                    (pl.when(pl.col("source").cast(pl.Utf8) == "fr").then(fr) if fr is not None
                     else pl.lit(None)).cast(pl.Int64).alias("fr_ns")))
    return pl.concat(frames)


def _pieces(results: Results) -> tuple[list[Piece], pl.DataFrame]:
    """One piece per file: the ranks its rows name (with their pids), its world size, its Flight
    Recorder span."""
    rows = _rows(results)
    own = pl.col("rank").is_not_null() & pl.col("pid").is_not_null()
    per = {f: r for f, *r in rows.group_by("file").agg(
        pl.col("rank").drop_nulls().unique(), pl.struct("rank", "pid").filter(own).unique().alias("held"),
        pl.col("world_size").drop_nulls().unique(), pl.col("fr_ns").min().alias("t0"),
        pl.col("fr_ns").max().alias("t1")).iter_rows()}
    pieces = []
    for row, _ in results:
        f = row["file"]
        ranks, held, world, t0, t1 = per.get(f, ([], [], [], None, None))
        pids: dict[int, set[int]] = {}
        for x in held:
            pids.setdefault(x["rank"], set()).add(x["pid"])
        dumps = {r: (t0, t1) for r in ranks} if t0 is not None else {}  # (a dump's ranks row: who wrote it)
        pieces.append(Piece([f], {str(Path(f).parent)}, pids, dumps, set(world),
                            set(ranks) if (pids or dumps) else set(), t0, t1))
    return pieces, rows


def _links(rows: pl.DataFrame, files: list[str]) -> list[list[str]]:
    """Groups of files that share a process (pid, within one folder) or a communicator id."""
    folder = pl.col("file").str.replace(r"[^/]*$", "")
    keyed = rows.select(
        "file",
        pl.when(pl.col("pid").is_not_null()).then(
            pl.concat_str(folder, pl.lit("|pid "), pl.col("pid").cast(pl.Utf8))).alias("proc"),
        pl.when(pl.col("comm_id").is_not_null()).then(pl.lit("comm ") + pl.col("comm_id")).alias("comm"))
    # a pid in the file's name (`tracekit run`'s names: rank0.node0.17044.log, fr_rank0.node0.17044.1.pkl)
    named = pl.DataFrame({"file": files}, schema={"file": pl.Utf8}).with_columns(
        pl.col("file").str.extract_all(r"\.\d{2,}\.").list.eval(pl.element().str.strip_chars(".")).alias("n")
    ).explode("n").drop_nulls().select(
        "file", pl.concat_str(folder, pl.lit("|pid "), pl.col("n")).alias("key"))
    keys = pl.concat([keyed.select("file", key=c) for c in ("proc", "comm")] + [named]).drop_nulls().unique()
    groups = keys.group_by("key").agg(pl.col("file").unique().sort())["file"].to_list()
    return [g for g in groups if len(g) > 1]


def split(results: Results) -> list[Attempt]:
    """The runs in ``results`` (``ingest.parse_files``' answer for every file read), the latest
    first. One run where nothing tells two apart."""
    said, parts = launcher_word(results)
    results = cut_parts(results, parts)
    pieces, rows = _pieces(results)
    owner = {p.files[0]: p for p in pieces}
    agent = agent_spans(results)
    for p in pieces:
        p.attempt, p.agent = said.get(p.files[0]), agent.get(p.files[0])

    def join(a: Piece, b: Piece) -> None:
        if a is b or a.collides(b):
            return
        a.take(b)
        for f in b.files:
            owner[f] = a

    attempts: dict[tuple[str | None, int], list[Piece]] = {}
    for p in pieces:  # 0: one attempt by the launcher's word, where it names the run
        if p.attempt is not None and p.attempt[0]:
            attempts.setdefault(p.attempt, []).append(p)
    for ps in attempts.values():
        for p in ps[1:]:
            join(owner[ps[0].files[0]], p)
    for group in _links(rows, [row["file"] for row, _ in results]):
        for f in group[1:]:
            join(owner[group[0]], owner[f])
    live = lambda: list({id(p): p for p in owner.values()}.values())  # noqa: E731 - each piece once
    order = lambda p: (p.t0 is None, p.t0 or 0, min(p.files))  # noqa: E731 - earliest first
    by_folder: dict[str, list[Piece]] = {}
    for p in sorted(live(), key=order):
        by_folder.setdefault(min(p.folders), []).append(p)
    for ps in by_folder.values():  # 2: a folder is one run unless its ranks collide
        runs: list[Piece] = []
        for p in ps:  # where several runs could take it: the one whose file names it shares most
            fit = [r for r in runs if not r.collides(p)]
            into = max(fit, key=lambda r: _kin(r, p)) if len(fit) > 1 else fit[0] if fit else None
            if into is None:
                runs.append(p)
            else:
                join(into, p)
    siblings: dict[str, list[Piece]] = {}
    for p in sorted(live(), key=order):  # 3: node folders of one run
        siblings.setdefault(str(Path(min(p.folders)).parent), []).append(p)
    for ps in siblings.values():
        for i, a in enumerate(ps):
            for b in ps[i + 1:]:
                if owner[a.files[0]] is a and owner[b.files[0]] is b and _nodes_of_one_run(a, b):
                    join(a, b)
    return _attempts(live(), results, rows)


def _kin(a: Piece, b: Piece) -> tuple[int, int]:
    """How alike the file names of two pieces are: first how near the pids their names carry are
    (a launcher and the ranks it started: ``launcher.node0.16077.log``, ``rank0.node0.16086.log``),
    then the longest start two names share (one attempt's files side by side share a prefix:
    ``attempt2_rank0.log``, ``attempt2_fr_rank0.pkl``)."""
    names = lambda p: {Path(f).name for f in p.files}  # noqa: E731
    pids = lambda p: {int(n) for f in names(p) for n in PID_IN_NAME.findall(f)}  # noqa: E731
    near = min((abs(x - y) for x in pids(a) for y in pids(b)), default=None)
    prefix = max((len(os.path.commonprefix([x, y])) for x in names(a) for y in names(b)), default=0)
    return (-near if near is not None and near <= NEAR_PIDS else -(1 << 30)), prefix


def _nodes_of_one_run(a: Piece, b: Piece) -> bool:
    """Pieces in sibling folders are one run's nodes where they are of one world size, overlap in time
    (or say nothing of it), and any rank both name is the same process in both."""
    apart = a.t0 is not None and b.t0 is not None and (a.t1 < b.t0 or b.t1 < a.t0)
    same = all(a.pids.get(r, set()) & b.pids.get(r, set()) for r in a.ranks & b.ranks)
    return bool(len(a.world) == 1 and a.world == b.world and a.ranks and b.ranks and a.ranks != b.ranks
                and same and not apart and a.folders.isdisjoint(b.folders))


def _attempts(pieces: list[Piece], results: Results, rows: pl.DataFrame) -> list[Attempt]:
    order = {row["file"]: i for i, (row, _) in enumerate(results)}
    out = []
    for p in pieces:
        files = sorted(p.files, key=order.__getitem__)
        timed_by = "flight recorder"
        t0, t1 = p.t0, p.t1
        if t0 is None and p.agent is not None:
            (t0, t1), timed_by = p.agent, AGENT_CLOCK
        if t0 is None:
            times = [Path(real(f)).stat().st_mtime_ns for f in files if Path(real(f)).is_file()]
            t0, t1, timed_by = (min(times), max(times), "file times") if times else (None, None, "")
        hosts = rows.filter(pl.col("file").is_in(files))["host"].drop_nulls().unique().sort().to_list()
        out.append(Attempt(0, list(dict.fromkeys(map(real, files))), sorted(p.ranks),
                           min(p.world) if p.world else None, hosts, t0, t1, timed_by, p.attempt,
                           _only(results, files)))
    out.sort(key=lambda a: (a.end_ns is None, -(a.end_ns or 0), a.files[0]))  # the latest first
    for run_id in {a.launch[0] for a in out if a.launch and a.launch[0]}:  # of one torchrun run: its word
        at = [i for i, a in enumerate(out) if a.launch and a.launch[0] == run_id]
        for i, a in zip(at, sorted((out[i] for i in at), key=lambda a: -a.launch[1])):
            out[i] = a
    for n, a in enumerate(out, 1):
        a.number = n
    return out


def _only(results: Results, files: list[str]) -> Results:
    """The parse results of ``files`` alone, for ``ingest.combine``: their ``files`` rows, and every
    parsed row of theirs (a batch's text rows all sit on its first file's result) on the first."""
    wanted = set(files)
    keep = pl.col("file").cast(pl.Utf8).is_in(files)

    def only(df: pl.DataFrame | None) -> pl.DataFrame | None:
        if df is None or "file" not in df.columns:
            return df
        df = df.filter(keep)  # (a part of an agent log named back as its file)
        named = pl.col("file").cast(pl.Utf8).str.replace(f"{PART}.*$", "")
        return df.with_columns(named.cast(df.schema["file"]))

    parsed = [Parsed(p.kind, tables={n: only(df) for n, df in p.tables.items()}, claimed=only(p.claimed))
              for _, ps in results for p in ps]
    rows = [row | {"file": real(row["file"])} for row, _ in results if row["file"] in wanted]
    return [(rows[0], parsed)] + [(row, []) for row in rows[1:]]
