"""``tracekit watch``: a live verdict on a running job's folder.

Each ``snapshot`` reads the folder (as ``tracekit ingest`` does, without writing a store) and keeps
what tells progress: per rank, the highest collective sequence number on the main group and the
last step logged, when the job last wrote a log (tracekit's own dumps and verdicts are not the
job's writes), and the verdict. ``describe`` compares two snapshots: collectives per second and
steps per second while they advance; once nothing moves, how long it has been still, where each
rank is, and the verdict: the one ``tracekit run`` printed for this stall (``verdict.json``), else
the one ``tracekit ingest`` gives now.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from tracekit import live
from tracekit import verdict as verdict_mod
from tracekit.ingest import discover, ingest
from tracekit.outcome import EventKind
from tracekit.wording import fmt_ranks

# not the job's log lines
OWN_FILES = re.compile(r"^(?:fr_rank|pyspy\.|stacks_rank|faulthandler\.|launch\.|launcher\.)")
RECENT_S = 10.0  # a first look within this long of the last write sees a running job
QUIET_KINDS = {"healthy", "undecided"}


@dataclass
class Snapshot:
    at: float  # wall clock
    last_write: float  # newest mtime of the job's logs (any file where it has none)
    files: int = 0
    frontier: dict[int, int] = field(default_factory=dict)  # rank -> highest seq on the main group
    where: dict[int, str] = field(default_factory=dict)  # rank -> "all_reduce #9"
    step: int | None = None
    max_steps: int | None = None
    kind: str = ""  # the verdict's kind: "deadlock", "healthy", ...
    verdict: str = ""  # "DEADLOCK: process group 0 ..."
    live: str | None = None  # how tracekit run reached the verdict of this stall, when it did
    finished: str | None = None  # "exit code 0" once every launcher (tracekit run) has ended

    @property
    def collectives(self) -> int:
        return sum(self.frontier.values())


def snapshot(path: str | Path) -> Snapshot:
    files = [f for f in discover([path]) if f.is_file()]
    logs = [f for f in files if not OWN_FILES.match(f.name)] or files
    last = max((f.stat().st_mtime for f in logs), default=0.0)
    s = Snapshot(at=time.time(), last_write=last, files=len(files))
    if not files:
        return s
    store = ingest([path])
    coll = store.collectives.filter(pl.col("rank").is_not_null() & pl.col("seq").is_not_null())
    if coll.height:
        source = coll.group_by("source").len().sort("len", descending=True)["source"][0]
        coll = coll.filter(pl.col("source") == source)
        pg = coll.group_by("pg").len().sort("len", descending=True)["pg"][0]
        top = (coll.filter(pl.col("pg") == pg).sort("seq").group_by("rank")
               .agg(pl.col("seq").last(), pl.col("op").last()))
        s.frontier = dict(top.select("rank", "seq").iter_rows())
        s.where = {r: f"{op} #{seq}" for r, seq, op in top.iter_rows()}
    steps = store.events.filter((pl.col("kind") == EventKind.STEP) & pl.col("step").is_not_null())
    if steps.height:
        s.step = steps["step"].max()
        m = (steps["message"].str.extract(r"'global_step/max_steps': '\d+/(\d+)'", 1)
             .cast(pl.Int64, strict=False).drop_nulls())
        s.max_steps = m.max() if m.len() else None
    notes = store.events.filter(pl.col("kind") == EventKind.RUN_NOTE)["message"].drop_nulls()
    launchers = store.events.filter(pl.col("kind") == EventKind.LAUNCH)["file"].n_unique()
    ends = notes.filter(notes.str.starts_with("exit code"))
    if launchers and ends.len() >= launchers:
        s.finished = ", ".join(sorted(set(ends.to_list())))
    said = live.read(Path(path))
    written = (Path(path) / live.VERDICT_JSON).stat().st_mtime if said else 0.0
    if said and said.get("state") == "stalled" and written >= last and not s.finished:
        d = said["verdict"]
        s.kind, s.verdict = d["kind"], f"{d['kind'].upper()}: {d['summary']}"
        s.live = f"tracekit run, {said.get('rounds', '?')} dump round{'s' if said.get('rounds') != 1 else ''}"
        return s
    d = verdict_mod.decide(store).to_dict()
    s.kind, s.verdict = d["kind"], f"{d['kind'].upper()}: {d['summary']}"
    return s


def describe(prev: Snapshot | None, cur: Snapshot) -> str:
    if not cur.files:
        return "waiting: nothing in the folder yet"
    still = max(0.0, cur.at - cur.last_write)
    step = f"step {cur.step}" + (f"/{cur.max_steps}" if cur.max_steps else "") if cur.step is not None else ""
    if prev is not None and cur.at > prev.at:
        dt = cur.at - prev.at
        dc = cur.collectives - prev.collectives
        ds = (cur.step or 0) - (prev.step or 0)
        if dc > 0 or ds > 0:
            rate = [f"{dc / dt:.1f} collectives/s" if dc > 0 else "",
                    f"{ds / dt:.2f} steps/s" if ds > 0 else ""]
            lag = ""
            if cur.frontier:
                low = min(cur.frontier.values())
                behind = [r for r, v in cur.frontier.items() if v == low]
                if low < max(cur.frontier.values()):
                    lag = f"; slowest rank(s) {fmt_ranks(sorted(behind))} at {cur.where[behind[0]]}"
            return "progressing: " + ", ".join(x for x in rate if x) + (f", {step}" if step else "") + lag
    if cur.finished:
        return f"finished ({cur.finished})" + (f", {step}" if step else "") + f"; verdict: {cur.verdict}"
    groups: dict[str, list[int]] = {}
    for r, w in sorted(cur.where.items()):
        groups.setdefault(w, []).append(r)
    at = "; ".join(f"{'rank' if len(rs) == 1 else 'ranks'} {fmt_ranks(rs)} at {w}"
                   for w, rs in groups.items())
    place = (f" ({step})" if step else "") + (f": {at}" if at else "")
    if cur.live:
        return f"stalled: no progress for {still:.0f}s{place}; verdict ({cur.live}): {cur.verdict}"
    if prev is None and still < RECENT_S:
        return f"running: last write {still:.0f}s ago{place}; the rate needs a second look"
    if not cur.frontier and cur.step is None and cur.kind in QUIET_KINDS:
        return f"waiting: no collective or step logged yet; last write {still:.0f}s ago"
    return f"no write for {still:.0f}s{place}; verdict: {cur.verdict}"
