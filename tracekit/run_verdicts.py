"""The verdicts ``tracekit run`` gives while the job runs (tracekit/run.py): the verdict of the run
folder as ``tracekit ingest`` would give it (``live.decide``), printed by the launcher of rank 0
and written to ``verdict.txt`` / ``verdict.json`` (``live.write``) when the job stalls, moves
again, or exits with an error.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

from tracekit import live


def leads(out: Path, host: str) -> bool:
    """Whether this launcher runs rank 0, or the folder knows of no rank 0 (one folder per node):
    then it prints and writes the verdict."""
    rank0 = []
    for f in (out / "procs").glob("*.*.*"):
        if f.name.startswith(("beat.", "ack.", ".")):
            continue
        try:
            kv = dict(p.split("=", 1) for p in f.read_text().split() if "=" in p)
        except OSError:
            continue
        if kv.get("rank") == "0":
            rank0.append(f.name)
    return not rank0 or any(n.startswith(f"{host}.{os.getpid()}.") for n in rank0)



class Verdicts:
    """The verdict of the run folder as ``tracekit ingest`` gives it, printed by the launcher of
    rank 0 and written to ``verdict.txt`` / ``verdict.json``."""

    def __init__(self, out: Path, host: str, note: Callable[[str], None], say: Callable[[str], None] | None):
        self.out, self.host, self.note, self.say = out, host, note, say
        self.kept = None  # the verdict taken when a long gap ended (slow progress, if another follows)
        self.shown = None  # the last verdict printed

    def _take(self, tries: int = 3):
        if not leads(self.out, self.host):
            return None
        for attempt in range(tries):  # a live folder changes while it is read: try again, a second later
            try:
                return live.decide(self.out)
            except Exception as e:  # noqa: BLE001 - the job goes on whatever the analysis does
                self.note(f"verdict failed (try {attempt + 1} of {tries}): {type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''}")
                time.sleep(1.0)
        return None

    def keep(self, quiet_s: float) -> None:
        self.kept = self._take()
        if self.kept is not None:
            self.note(f"progress again after {quiet_s:.0f}s: one long gap (an eval, a checkpoint, a slow "
                      f"step); if the next gap is long too, the verdict is {self.kept.kind.word}")

    def decide(self, state: str, quiet_s: float, rounds: int, again: bool = False,
               code: int | None = None) -> None:
        v = self._take()
        if v is None:
            return
        if again and self.shown is not None and v.kind == self.shown.kind:
            self._write(v, state, quiet_s, rounds)  # refreshed; said already
            return
        self.show(v, state, quiet_s, rounds, code)

    def show(self, v, state: str, quiet_s: float, rounds: int, code: int | None = None) -> None:
        self.shown = v
        d = v.to_dict()
        how = {"stalled": f"live, no progress for {quiet_s:.0f}s, {rounds} dump round"
                          + ("s" if rounds != 1 else ""),
               "moving": f"progress again after {quiet_s:.0f}s", "exited": f"exit code {code}"}[state]
        # the launcher log gets the kind only: the summary quotes log lines its parsers would read again
        self.note(f"verdict ({how}): {d['kind']}"
                  + (f", ranks {','.join(map(str, v.ranks))}" if v.ranks else ""))
        if self.say:
            self.say(f"tracekit: verdict ({how}): {d['kind'].upper()}: {d['summary']}")
            for e in d["evidence"]:
                self.say(f"  evidence {e}")
        self._write(v, state, quiet_s, rounds)

    def _write(self, v, state: str, quiet_s: float, rounds: int) -> None:
        try:
            ok = live.write(self.out, v, state, quiet_s, rounds, self.out / "procs")
        except OSError as e:
            self.note(f"could not write {live.VERDICT_TXT}: {e.strerror or e}")
            return
        if not ok:
            self.note(f"{live.VERDICT_TXT} or {live.VERDICT_JSON} in {self.out} is not tracekit's: left as "
                      "it is, the verdict only printed")
