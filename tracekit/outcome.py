"""Every type an analysis answers with, in one place (as the Flight Recorder analyzer keeps its
``MatchState`` and types in one ``types.py``): the verdict's ``Kind`` and ``Verdict``, an alignment
``Finding`` and its ``Match``, the ``Coverage`` of the job, each rank's ``RankSituation``, an evidence
line ``Cited`` (file, line, text) and ``EventKind``, the event kinds of ``schema.EVENT_KINDS`` as an
Enum whose values are the stored strings.

Nothing here reads a store: the analysis (``evidence``, ``rules``, ``align``) makes these, the
renderers (``reports/``, ``cli``) print them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from tracekit.schema import SEQ_FROM_OPCOUNT, EventKind  # noqa: F401 (the outcome model names EventKind)
from tracekit.wording import fmt_ranks, who



class Kind(Enum):
    DEADLOCK = "a rank never issues the collective the others wait in"
    MISMATCH = "ranks issued different collectives at the same point"
    INIT_STALL = "a communicator started init on some ranks and never completed it"
    TRANSPORT_ERROR = "the network transport reported errors"
    CRASHED_RANK = "a rank exited or was killed; the others wait for it"
    SLOW_PROGRESS = "not hung: collectives still advance, slowly"
    STRAGGLER = "one rank consistently arrives last"
    HEALTHY = "a clean end or progress on every rank seen, and no sign of a stall"
    UNDECIDED = "the evidence does not decide it"

    @property
    def word(self) -> str:
        """``slow-progress``: how the JSON and the pages name the kind."""
        return self.name.lower().replace("_", "-")


#: the kinds that are a hang or a failure (``--fail-on-hang`` exits 1 on these, and on any failure sign)
FAILED = {Kind.DEADLOCK, Kind.MISMATCH, Kind.INIT_STALL, Kind.TRANSPORT_ERROR, Kind.CRASHED_RANK}


class Match(Enum):
    """How the ranks of one process group disagree, worst first."""

    MISSING = "a rank never issued a collective its group's other ranks issued"
    RANK_ABSENT = "a rank's record (an empty dump) holds no collective of a group its peers used"
    NO_RECORD = "a member of the group left no record in this source: nothing is known of it"
    OP_TYPE = "ranks issued different collectives at the same sequence number"
    DTYPE = "ranks issued the collective with different dtypes"
    SIZE = "ranks issued the collective with different sizes"
    STATE = "the collective completed on some ranks and not on others"
    # the Flight Recorder analyzer's checks (tracekit/fr_checks.py)
    COALESCED = "ranks ran a different number of ops in one coalesced group"
    P2P_SIZE = "a send and the recv that takes it have different sizes"
    SHAPE = "one rank's entry breaks its collective's own rule (an all_gather's output is not input x group)"


#: how a finding names the source it was aligned in
SOURCE_NAMES = {"fr": "Flight Recorder", "nccl": "NCCL COLL", "kineto": "Kineto"}


class Cited(str):
    """One piece of evidence: where it was read (``file`` and ``line``, or ``record``, the record_id
    of a Flight Recorder entry; no file where it is a figure worked out from many lines) and what it
    says (``text``; empty where the place is the evidence: a collective's record). Renderers read
    the fields. It is also the string the verdict always printed (``file:line: text``, ``file: record
    N``), so callers that read evidence as text (benchmarks/wild_accuracy.py, live.py) still work;
    ``shown`` keeps an older wording of that string where one must stay."""

    file: str | None
    line: int | None
    text: str
    record: int | None

    def __new__(cls, file: str | None, line: int | None, text: str = "", record: int | None = None,
                shown: str | None = None) -> "Cited":
        if shown is None:
            where = None if file is None else _where(file, line, record)
            shown = text if where is None else f"{where}: {text}" if text else where
        self = super().__new__(cls, shown)
        self.file, self.line, self.text, self.record = file, line, text, record
        return self

    def __getnewargs__(self) -> tuple:  # (a copy or a pickle makes it again from its fields)
        return self.file, self.line, self.text, self.record, str(self)

    @property
    def where(self) -> str:
        """``file:line``, ``file: record N``, ``file``; empty for a figure worked out from many lines."""
        return "" if self.file is None else _where(self.file, self.line, self.record)


def _where(file: str, line: int | None, record: int | None) -> str:
    if line is not None:
        return f"{file}:{line}"
    return f"{file}: record {record}" if record is not None else file


def tensor_text(sizes: str | None, dtype: str | None) -> str:
    """`` (BFloat16 tensor of shape [4027x5120])`` from FR's sizes and dtype; empty when neither is known."""
    if not sizes and not dtype:
        return ""
    shape = f" of shape [{sizes.replace(';', '], [')}]" if sizes else ""
    return f" ({dtype + ' ' if dtype else ''}tensor{'s' if sizes and ';' in sizes else ''}{shape})"


@dataclass
class Finding:
    kind: Match
    source: str
    pg: str
    pg_desc: str | None
    seq: int | None
    op: str | None
    sizes: str | None
    dtype: str | None
    present: list[int]
    missing: list[int]
    last_of_missing: dict[int, str] = field(default_factory=dict)
    evidence: tuple[Cited, ...] = ()  # the records or lines that show it (a plain string: a Cited text)
    label: str | None = None  # the message, where ranks are unknown (processes named host:pid instead)
    snapshot: bool = False  # the dumps were taken on the way of a run that moved on: behind, not stuck

    def __post_init__(self) -> None:
        self.evidence = tuple(_cited(e) for e in self.evidence)

    @property
    def message(self) -> str:
        if self.label:
            return self.label
        where = f"process group {self.pg}" + (f" ({self.pg_desc})" if self.pg_desc else "")
        # (NCCL's COLL lines number a communicator's calls by opCount, in hex, from 0: the seq is torch's,
        # opCount + 1 (schema.SEQ_FROM_OPCOUNT); said with the opCount its lines print, to find them by)
        seq = (f"seq {self.seq} (opCount {self.seq - SEQ_FROM_OPCOUNT:x})"
               if self.source == "nccl" and isinstance(self.seq, int) else f"seq {self.seq}")
        what = f"{self.op or '?'} {seq}" + tensor_text(self.sizes, self.dtype)
        if self.kind == Match.NO_RECORD:
            source = SOURCE_NAMES.get(self.source, self.source)
            return (f"{where}: {who(self.missing)} left no {source} record; "
                    f"{who(self.present)} reached {seq}")
        if self.kind in (Match.MISSING, Match.RANK_ABSENT) and self.snapshot:
            return (f"{where}: {what}: {who(self.missing)} had not issued it yet when dumped; the run moved "
                    "on (a dump taken on the way, not a hang)")
        if self.kind in (Match.MISSING, Match.RANK_ABSENT):
            return (f"{where}: {what}: {who(self.missing)} never issued it; {who(self.present)} "
                    f"{'waits' if len(self.present) == 1 else 'wait'} in it")
        if self.last_of_missing:
            other = "; ".join(f"rank {r}: {v}" for r, v in sorted(self.last_of_missing.items())[:4])
            return f"{where}: {seq}: {self.kind.value}: {who(self.present)} issued {what}; {other}"
        return f"{where}: {what}: {self.kind.value}"

    def to_dict(self) -> dict:
        return {
            "kind": self.kind.name.lower(), "message": self.message, "source": self.source, "pg": self.pg,
            "pg_desc": self.pg_desc, "seq": self.seq, "op": self.op, "sizes": self.sizes, "dtype": self.dtype,
            "present_ranks": self.present, "missing_ranks": self.missing,
            "last_of_missing": {str(k): v for k, v in self.last_of_missing.items()},
            "evidence": [str(e) for e in self.evidence],
        }


#: the coverage's word for a rank numbered by its local rank on a job no line shows the node count of
LOCAL_NUMBER = "local rank"
#: the coverage's word for a rank DeepSpeed's launcher names as it stops (launch.py: the loop's last command)
LAUNCHER_COMMAND = "DeepSpeed launcher's command (its last worker's)"


@dataclass
class Coverage:
    """How much of the job the evidence covers."""

    world_size: int | None
    seen: list[int]
    sources: dict[int, list[str]]
    unranked: int  # processes that wrote lines with no rank tied to them

    @property
    def missing(self) -> list[int]:
        """Ranks of the world that left no file or line at all."""
        return sorted(set(range(self.world_size)) - set(self.seen)) if self.world_size else []

    @property
    def complete(self) -> bool:
        return bool(self.seen) and self.world_size is not None and not self.missing

    def describe(self) -> str:
        if not self.seen and self.unranked:  # processes seen whose ranks no line names
            return (f"{self.unranked} process{'es' if self.unranked > 1 else ''}, ranks not named"
                    + (f" (world size {self.world_size})" if self.world_size else ""))
        if not self.seen:
            return "no rank identified" + (f" of world size {self.world_size}" if self.world_size else "")
        local = [r for r in self.seen if LOCAL_NUMBER in self.sources.get(r, [])]
        # (DeepSpeed's launcher names a local rank only in the command of its last worker, not the failed one's)
        last = [r for r in local if LAUNCHER_COMMAND in self.sources.get(r, [])]
        numbered = (f"; {who(local)} numbered by {LOCAL_NUMBER}"
                    + (f" ({who(last)} from the DeepSpeed launcher's last command: its last worker,"
                       " not always the one that ended)" if last else "")
                    + ", no line showing a second node" if local else "")
        if self.world_size is None:
            return f"{len(self.seen)} rank(s) seen ({fmt_ranks(self.seen)}{numbered}), world size not logged"
        text = f"{len(self.seen)} of {self.world_size} rank{'s' if self.world_size > 1 else ''} seen"
        return text + (f": {who(self.missing)} left no record" if self.missing else "") + numbered

    def to_dict(self) -> dict:
        return {"world_size": self.world_size, "seen": self.seen, "missing": self.missing,
                "sources": {str(k): v for k, v in self.sources.items()}, "unranked_processes": self.unranked,
                "complete": self.complete, "text": self.describe()}


def _cited(e: Cited | str) -> Cited:
    return e if isinstance(e, Cited) else Cited(None, None, e)


@dataclass
class Verdict:
    kind: Kind
    summary: str
    ranks: list[int] = field(default_factory=list)
    evidence: list[Cited] = field(default_factory=list)  # a plain string is taken as a Cited text
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    coverage: dict = field(default_factory=dict)
    failure_signs: list[str] = field(default_factory=list)
    rule: str = ""
    fix: str = ""  # what fixes the cause (tracekit.fixes), and how to check the fix took
    check: str = ""

    def __post_init__(self) -> None:
        self.evidence = [_cited(e) for e in self.evidence]

    @property
    def failed(self) -> bool:
        """A hang or failure verdict, or any failure sign in the evidence whatever the verdict."""
        return self.kind in FAILED or bool(self.failure_signs)

    def to_dict(self) -> dict:
        return {
            "kind": self.kind.word, "meaning": self.kind.value, "summary": self.summary,
            "ranks": self.ranks, "evidence": [str(e) for e in self.evidence], "notes": self.notes,
            "coverage": self.coverage, "failure_signs": self.failure_signs, "failed": self.failed,
            "rule": self.rule, "findings": [f.to_dict() for f in self.findings],
            "fix": self.fix, "check": self.check,
        }


@dataclass
class RankSituation:
    """Where one rank is: its last collective on the main process group (op, sequence number,
    process group, size, the source that says so), its state there, since when (seconds from the
    earliest timed collective), the frame its main thread is in where a dump shows one, its last
    step, and whether the verdict names it."""

    rank: int
    state: str
    pg: str | None = None
    op: str | None = None
    seq: int | None = None
    size: int | None = None
    source: str | None = None
    since_s: float | None = None
    where: str | None = None
    step: int | None = None
    named: bool = False


@dataclass
class Situation:
    """Every rank's situation, the world's ranks that left no record, and the main process group."""

    ranks: list[RankSituation]
    not_seen: list[int] = field(default_factory=list)
    pg: str | None = None
