"""One verdict on what kind of stall a run is in, fused from every source, with its evidence.

``decide`` computes the evidence once (``tracekit.evidence``), walks the ordered rules
(``tracekit.rules``: the order is the order of causation) and says how much of the job the
evidence covers. A verdict never claims more than that: HEALTHY needs positive evidence from every
rank, and a rank that left no record is said to have left none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from tracekit.align import Finding
from tracekit.store import Store


class Kind(Enum):
    DEADLOCK = "a rank never issues the collective the others wait in"
    MISMATCH = "ranks issued different collectives at the same point"
    INIT_STALL = "a communicator started init on some ranks and never completed it"
    TRANSPORT_ERROR = "the network transport reported errors"
    CRASHED_RANK = "a rank exited or was killed; the others wait for it"
    SLOW_PROGRESS = "not hung: collectives still advance, slowly"
    STRAGGLER = "one rank consistently arrives last"
    HEALTHY = "a clean end or progress on every rank, and no sign of a stall"
    UNDECIDED = "the evidence does not decide it"


#: the kinds that are a hang or a failure (``--fail-on-hang`` exits 1 on these, and on any failure sign)
FAILED = {Kind.DEADLOCK, Kind.MISMATCH, Kind.INIT_STALL, Kind.TRANSPORT_ERROR, Kind.CRASHED_RANK}


@dataclass
class Verdict:
    kind: Kind
    summary: str
    ranks: list[int] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    coverage: dict = field(default_factory=dict)
    failure_signs: list[str] = field(default_factory=list)
    rule: str = ""

    @property
    def failed(self) -> bool:
        """A hang or failure verdict, or any failure sign in the evidence whatever the verdict."""
        return self.kind in FAILED or bool(self.failure_signs)

    def to_dict(self) -> dict:
        return {
            "kind": self.kind.name.lower().replace("_", "-"), "meaning": self.kind.value, "summary": self.summary,
            "ranks": self.ranks, "evidence": self.evidence, "notes": self.notes,
            "coverage": self.coverage, "failure_signs": self.failure_signs, "failed": self.failed, "rule": self.rule,
            "findings": [f.to_dict() for f in self.findings],
        }


def decide(store: Store) -> Verdict:
    from tracekit import rules
    from tracekit.evidence import Evidence

    ev = Evidence.gather(store)
    name, v = rules.first(ev)
    cov = ev.coverage
    if not cov.complete and v.kind != Kind.UNDECIDED and cov.describe() not in v.summary:
        v.summary += f" ({cov.describe()})"
    v.evidence = list(dict.fromkeys(v.evidence))  # each line once
    v.findings, v.rule = ev.findings, name
    v.notes = v.notes + [n for n in rules.notes(ev) if n not in v.notes]
    v.coverage, v.failure_signs = cov.to_dict(), ev.failure_signs
    return v
