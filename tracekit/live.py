"""The live stall detector of ``tracekit run``: when a job has stopped advancing, by its own rhythm.

A job advances when its ranks' collective counters move (the Flight Recorder's ``pg_status``, which
``tracekit.hook`` writes to ``procs/beat.*`` as it changes) or, before the first collective and
without a Flight Recorder, when its logs grow (step lines, NCCL COLL lines). ``Watchdog`` learns the
gaps between advances and calls a gap a stall once it is longer than the job's own history allows:

- the usual gap: ``factor`` times the median of the recent gaps, never under ``floor_s``;
- a long gap the job had before and went back to its rhythm after (a silent eval): 1.25 times it;
- an eval or checkpoint save the logs announce just before the gap (``phase``): at least
  ``phase_s``, or twice the longest such phase so far;
- the first steps (compilation, ZeRO-3 partitioning), before the job has ``warm`` gaps over
  ``2 * floor_s`` seconds: ``cold_s``.

A stall is one episode of dump rounds. Nothing moving through the second round is a hang: the
verdict is printed. Progress during the rounds is one long gap (an unannounced eval, a slow
step); a second long gap right after it is slow progress, and the verdict taken when it moved is
printed then. Progress after a printed verdict prints the verdict again, from fresh dumps.

``Watchdog.tick`` is pure (a clock value in, actions out) so the policy is tested without a job;
``run.run`` takes the dumps and ``decide`` gives the verdict, the same one ``tracekit ingest`` gives.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Callable

from tracekit.own import JSON_MARK, TXT_MARK, VERDICT_JSON, VERDICT_TXT, is_ours  # noqa: F401 - re-exported

PHASES = {  # what a job prints just before a long quiet phase (HF Trainer, DeepSpeed, Lightning, Megatron)
    "eval": re.compile(r"(?i)running evaluation|^\s*evaluat(?:e|ing)\b|validation dataloader"
                       r"|^\s*validat(?:e|ing)\b"),
    "checkpoint": re.compile(r"(?i)sav(?:e|ing)\b.{0,40}checkpoint"
                             r"|checkpoint.{0,60}(?:about to be saved|sav(?:e|ing))"),
}
TAIL_BYTES = 4096
EXITED = re.compile(rb"\[tracekit-run\] [\d-]+ [\d:]+ exit code -?\d+")  # a launcher's last note (run.py)


class Act(Enum):
    """What ``tracekit run`` does on a tick."""

    SUSPECT = "quiet for longer than the job's rhythm allows: first dump round"
    ROUND = "still quiet: another dump round, then the verdict"
    MOVED = ("it moved during the rounds: a dump round now, the verdict kept until the next gap shows "
             "whether it is slow")
    SLOW = "a second long gap right after one that moved: slow progress, the kept verdict is printed"
    RESUMED = "it moved after a printed verdict: a dump round and the verdict again"


@dataclass
class Episode:
    start: float  # when the gap began (the last advance)
    limit: float
    why: str
    rounds: int = 0
    last_round: float = 0.0
    printed: bool = False


@dataclass
class Watchdog:
    floor_s: float = 4.0
    factor: float = 4.0
    cold_s: float = 120.0
    phase_s: float = 60.0
    warm: int = 10
    fixed_s: float | None = None  # --stall: a fixed limit, no learning
    repeat_s: float | None = None  # --repeat: seconds between rounds; default the episode's limit, at most 60
    rounds: int = 2
    gaps: deque = field(default_factory=lambda: deque(maxlen=200))  # between advances, in the job's rhythm
    long_gap: float = 0.0  # the longest gap the job came out of and went back to its rhythm
    phases: dict = field(default_factory=dict)  # announced phase -> its longest gap so far
    first: float | None = None
    last: float | None = None
    episode: Episode | None = None
    kept: float | None = None  # a long gap that ended in progress: slow progress if another follows
    normal_after: int = 0  # gaps in the usual rhythm since then
    _phase: tuple[float, str | None] | None = None  # (gap start, phase), looked up once per gap

    @property
    def warmed(self) -> bool:
        return len(self.gaps) >= self.warm and self.last - self.first >= 2 * self.floor_s

    def usual(self) -> float | None:
        """The median of the recent gaps between advances (None before warm-up)."""
        if not self.warmed:
            return None
        g = sorted(self.gaps)
        return g[len(g) // 2]

    def limit(self, phase: str | None = None) -> tuple[float, str]:
        """How long this job may be quiet now, and why that long."""
        if self.fixed_s is not None:
            return self.fixed_s, f"--stall {self.fixed_s:g}"
        if not self.warmed:
            return self.cold_s, "the job's first steps, no rhythm yet"
        usual = self.usual()
        lim, why = max(self.floor_s, self.factor * usual), f"usual gap {usual:.1f}s"
        if 1.25 * self.long_gap > lim:
            lim, why = 1.25 * self.long_gap, f"it came out of a {self.long_gap:.0f}s gap before"
        if phase:
            seen = self.phases.get(phase, 0.0)
            if max(self.phase_s, 2 * seen) > lim:
                last = f", {seen:.0f}s the last time" if seen else ""
                lim, why = max(self.phase_s, 2 * seen), f"{phase} announced{last}"
        return lim, why

    def tick(self, now: float, advanced: bool, phase: Callable[[], str | None] = lambda: None) -> list[Act]:
        """One look: ``advanced`` says whether any progress signal moved since the last look.
        ``phase`` is asked (it reads log tails) only when a gap outgrows the usual limit."""
        if advanced:
            return self._advance(now)
        if self.last is None:
            return []
        idle, ep = now - self.last, self.episode
        if ep is not None:
            repeat = self.repeat_s if self.repeat_s is not None else min(60.0, ep.limit)
            if ep.rounds < self.rounds and now - ep.last_round >= repeat:
                ep.rounds, ep.last_round = ep.rounds + 1, now
                return [Act.ROUND]
            return []
        lim, why = self.limit()
        if idle < lim:
            return []
        announced = None
        if self.fixed_s is None and self.warmed:
            if self._phase is None or self._phase[0] != self.last:
                self._phase = (self.last, phase())
            announced = self._phase[1]
            lim, why = self.limit(announced)
            if idle < lim:
                return []
        if self.kept is not None and announced is None:
            self.episode = Episode(self.last, lim, "a second long gap in a row", self.rounds, now, True)
            self.kept = None
            return [Act.SLOW]
        self.episode = Episode(self.last, lim, why, 1, now)
        return [Act.SUSPECT]

    def _advance(self, now: float) -> list[Act]:
        acts = []
        ep, self.episode = self.episode, None
        if self.last is None:
            self.first = now
        elif ep is not None:
            gap = now - self.last
            if ep.printed:  # a gap this long is in its rhythm now: no new episode for the next one
                acts.append(Act.RESUMED)
                self.long_gap = max(self.long_gap, gap)
            else:
                acts.append(Act.MOVED)
                self.kept, self.normal_after = gap, 0
        else:
            gap = now - self.last
            announced = self._phase[1] if self._phase and self._phase[0] == self.last else None
            if announced:
                self.phases[announced] = max(self.phases.get(announced, 0.0), gap)
            else:
                self.gaps.append(gap)
            if self.kept is not None:
                self.normal_after += 1
                if self.normal_after >= 5:  # back in its rhythm: that long gap is one of its phases
                    self.long_gap, self.kept = max(self.long_gap, self.kept), None
        self.last = now
        return acts


def phase(logs: list[Path]) -> str | None:
    """The phase the job announced in the last lines it wrote (eval, checkpoint), if any."""
    newest = []
    for f in logs:
        try:
            st = f.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):  # a FIFO named like a log would block the launcher's loop
            newest.append((st.st_mtime, f))
    if not newest:
        return None
    top = max(m for m, _ in newest)
    for _, f in (x for x in newest if x[0] >= top - 2):
        try:
            with open(f, "rb") as fh:
                fh.seek(max(0, fh.seek(0, 2) - TAIL_BYTES))
                tail = fh.read().decode("utf-8", errors="replace")
        except OSError:
            continue
        lines = [x for x in re.split(r"[\r\n]+", tail) if x.strip()][-3:]
        for name, pattern in PHASES.items():
            if any(pattern.search(x) for x in lines):
                return name
    return None


def decide(out: Path):
    """The verdict ``tracekit ingest OUT`` would give now; where it calls ranks "never issued" or
    "behind", with each such rank's own record of its node's latest dump round (``own_records``)."""
    from tracekit import verdict
    from tracekit.ingest import ingest

    store = ingest([out])
    return own_records(out, store, verdict.decide(store))


def dump_round(out: Path, host: str, pid: int) -> int:
    """The latest dump round of the node that runs process ``host:pid`` (its launcher's request file,
    ``dump.HOST.LAUNCHER.request``: ``fr N``), 0 where it took none."""
    for proc in (Path(out) / "procs").glob(f"{host}.*.{pid}"):  # procs/HOST.LAUNCHER.PID
        try:
            words = (Path(out) / f"dump.{host}.{proc.name.split('.')[-2]}.request").read_text().split()
            return int(words[-1])
        except (OSError, ValueError, IndexError):
            continue
    return 0


def own_records(out: Path, store, v):
    """A live verdict that says a rank never issued a collective (or is behind) says so from the other
    ranks' records; it is shown with that rank's own evidence of the same dump round of its node (its
    Flight Recorder dump of that round, its stack of that round, its NCCL log's last COLL line), and
    where it has none, says so in the summary instead of passing the inference off as seen."""
    if not v.ranks or not re.search(r"never issued|\bbehind\b", v.summary):
        return v
    import polars as pl

    from tracekit.outcome import Cited

    named = pl.col("rank").is_in(v.ranks)
    procs = store.ranks.filter(named & pl.col("pid").is_not_null()).unique(["rank", "host", "pid"])
    coll = store.collectives.filter((pl.col("source") == "nccl") & named & pl.col("line").is_not_null())
    lacking = []
    for r in sorted(v.ranks):
        own = []
        for host, pid in procs.filter(pl.col("rank") == r).select("host", "pid").iter_rows():
            n = dump_round(out, host, pid)
            if not n:
                continue
            for name, what in ((f"fr_rank{r}.{host}.{pid}.{n}.pkl", "Flight Recorder dump"),
                               (f"pyspy.{host}.{pid}.{n}.txt", "stack")):
                if (Path(out) / name).exists():
                    own.append(Cited(str(Path(out) / name), None, f"rank {r}'s {what} of dump round {n}"))
        last = coll.filter(pl.col("rank") == r).sort("seq", "line").tail(1)
        for row in last.iter_rows(named=True):
            own.append(Cited(row["file"], row["line"], f"rank {r}'s last NCCL COLL line: {row['op_raw']} "
                                                       f"opCount {row['seq']:x}"))
        v.evidence += own
        if not own:
            lacking.append(r)
    if lacking:
        who = ", ".join(map(str, lacking))
        one = len(lacking) == 1
        v.summary += (f"; rank{'' if one else 's'} {who}: no record of {'its' if one else 'their'}"
                      " own from this dump round (Flight Recorder dump, stack, NCCL COLL line): inferred from"
                      " the other ranks' records only")
        v.notes.append(f"not got: the own evidence of rank(s) {who} for the latest dump round")
    return v


def final(out: Path) -> bool:
    """Whether every launcher of the run folder has exited (its ``launcher.*.log`` ends with its exit
    code): only then are the folder's logs the ones ``tracekit verdict`` will read afterwards."""
    logs = list(Path(out).glob("launcher.*.log"))
    launches = list(Path(out).glob("launch.*.txt"))
    if not logs or len(logs) < len(launches):
        return False
    for f in logs:
        try:
            with open(f, "rb") as fh:
                fh.seek(max(0, fh.seek(0, 2) - TAIL_BYTES))
                if not EXITED.search(fh.read()):
                    return False
        except OSError:
            return False
    return True


def agrees(out: Path, v) -> bool:
    """Checked now: the folder is final (``final``) and ``tracekit verdict`` on it gives ``v``'s kind
    and summary (``v``'s may go on with what ``own_records`` added)."""
    if not final(out):
        return False
    from tracekit import verdict
    from tracekit.ingest import ingest

    again = verdict.decide(ingest([out]))
    return again.kind == v.kind and v.summary.startswith(again.summary)


def write(out: Path, v, state: str, quiet_s: float, rounds: int, scratch: Path) -> bool:
    """Write ``verdict.txt`` and ``verdict.json`` into the run folder, each replaced whole (written
    in ``scratch`` first). False, and nothing written, where a file of that name is not tracekit's."""
    d = v.to_dict()
    at = datetime.now().astimezone().isoformat(timespec="seconds")
    how = {"stalled": f"no progress for {quiet_s:.0f}s, {rounds} dump round{'s' if rounds != 1 else ''}",
           "moving": f"progress again after {quiet_s:.0f}s", "exited": "at exit"}[state]
    same = state == "exited" and agrees(out, v)
    said = ("`tracekit verdict` gives the same from the logs (checked: every launcher exited)" if same else
            "taken from the dumps and logs of that moment; `tracekit verdict` reads them as they end, "
            "and may differ")
    txt = (f"{TXT_MARK} ({how}; {at}); {said}\n"
           f"{d['kind'].upper()}: {d['summary']}\n" + "".join(f"  evidence {e}\n" for e in d["evidence"]))
    body = json.dumps({"written_by": "tracekit run", "at": at, "state": state, "quiet_s": round(quiet_s, 1),
                       "rounds": rounds, "checked_against_verdict": same, "verdict": d},
                      indent=2, default=str)
    files = {VERDICT_TXT: txt, VERDICT_JSON: body}
    if any((out / n).exists() and not is_ours(out / n) for n in files):
        return False
    scratch.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        tmp = scratch / f".{name}.{os.getpid()}"
        tmp.write_text(text)
        os.replace(tmp, out / name)
    return True


def read(out: Path) -> dict | None:
    """The verdict ``tracekit run`` last wrote into ``out``, or None."""
    p = Path(out) / VERDICT_JSON
    if not is_ours(p):
        return None
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None
