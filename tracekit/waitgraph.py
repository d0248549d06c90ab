"""Who waits on whom, across process groups (issue 33): the rank that holds everyone, and the chain.

A hang in one group stalls the others: rank A waits in group X for rank B, which is not missing but
itself waits in group Y for rank C. The rank to name is C. This module is pure: its input is each
rank's last entry per group (global ranks, the group's members and description, op, sequence number,
state), whether the rank left a record at all and where its stack says it is; its output is data:

- the root(s): a rank that waits in no collective (its stack says where it is), a rank whose record
  is missing (the chain is cut there: the records that would close it are named), or a collective
  that every member joined and that still did not complete (the chain ends in the collective itself);
- the links from the root outward: who waits, in which group's op and sequence number, for whom;
- cycles: ranks that each wait in one group for another that waits in another group for them.

A member "reached" a rank's pending collective ``#s`` of a group when its own last entry in that group
has a sequence number of at least ``s``; a pending communicator init is reached by a member with any
entry in the group. A member with a record and no entry in the group never issued it; a member with
no record "left no record" (it may have, nobody can tell). A group whose members no record lists (a
gloo group still being created: its ranks' stacks are in ``new_group``) is waited on for the ranks that
wait in nothing: the link says it is inferred.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from tracekit.wording import who


class EntryState(Enum):
    """Where a rank's last entry in a group stands."""
    WAITING = "issued, not completed"  # FR scheduled/started, an NCCL COLL line with no completion after it
    COMPLETED = "completed"
    INIT = "communicator init started, not completed"  # an NCCL `Init START` with no `Init COMPLETE`


class RootKind(Enum):
    """Why the chain ends at a root."""
    OUTSIDE = "waits in no collective"  # recorded, and no pending entry: its stack (if any) says where
    NO_RECORD = "left no record"  # the chain is cut: its records would say where it is
    ALL_JOINED = "every member joined, yet the collective did not complete"  # transport, sizes


@dataclass(frozen=True)
class Group:
    """A process group: its id as the sources name it, its members as global ranks (empty: unknown),
    its description."""
    pg: str
    members: tuple[int, ...]
    desc: str | None = None

    @property
    def label(self) -> str:
        """``default_pg``, ``TENSOR_MODEL_PARALLEL_GROUP [0, 1]``, ``group [1, 2, 3]``."""
        members = f"[{', '.join(map(str, self.members))}]" if self.members else "(members unknown)"
        if not self.desc or self.desc == "undefined":
            return f"group {members}"
        return self.desc if self.desc == "default_pg" else f"{self.desc} {members}"


@dataclass(frozen=True)
class Entry:
    """A rank's last entry in one group (global rank); ``seq`` is None for a communicator init."""
    rank: int
    group: Group
    state: EntryState
    seq: int | None = None
    op: str | None = None


@dataclass(frozen=True)
class RankRecord:
    """One rank's side: its last entry per group, its stack's innermost frame of interest
    (``train.py:40 load_shard``) where a stack dump exists, and whether it left any record."""
    rank: int
    entries: tuple[Entry, ...] = ()
    frame: str | None = None
    recorded: bool = True


@dataclass(frozen=True)
class Link:
    """``waiting`` ranks wait in ``op #seq`` (or the communicator init) of ``group`` for ``waits_for``."""
    group: Group
    seq: int | None
    op: str | None
    waiting: tuple[int, ...]
    waits_for: tuple[int, ...]
    inferred: bool = False  # the group's members are unknown: waits_for are the ranks that wait in nothing

    @property
    def what(self) -> str:
        """``all_reduce #12 of TENSOR_MODEL_PARALLEL_GROUP [0, 1]``, ``the init of group [1, 2, 3]``."""
        if self.seq is None:
            return f"the init of {self.group.label}"
        return f"{self.op or 'collective'} #{self.seq} of {self.group.label}"


@dataclass(frozen=True)
class Root:
    rank: int | None  # None for ALL_JOINED: the collective, not a rank, is where the chain ends
    kind: RootKind
    frame: str | None = None
    awaited_in: Link | None = None  # the link whose waiters wait for this root

    def sentence(self) -> str:
        where = self.awaited_in.what if self.awaited_in else "its group's collective"
        if self.kind is RootKind.ALL_JOINED:
            link = self.awaited_in
            past = sorted(set(link.group.members) - set(link.waiting))
            if not past:
                return f"{who(list(link.waiting))} all joined {where}, and it never completed"
            verb = "waits" if len(link.waiting) == 1 else "wait"
            return (f"{who(list(link.waiting))} {verb} in {where}, which every member reached "
                    f"({who(past)} went past it)")
        if self.kind is RootKind.NO_RECORD:
            return f"rank {self.rank} left no record, and the others wait for it in {where}"
        place = f"is in {self.frame}" if self.frame else "is in no collective (no stack dump says where)"
        verb = "never started" if self.awaited_in and self.awaited_in.seq is None else "never joined"
        guess = ""
        if self.awaited_in and self.awaited_in.inferred:  # its members unknown: the ranks in no collective
            one = len(self.awaited_in.waits_for) == 1
            guess = ", the only rank in no collective" if one else ", one of the ranks in no collective"
        return f"rank {self.rank} {place} and {verb} {where}{guess}"


@dataclass(frozen=True)
class WaitGraph:
    roots: tuple[Root, ...] = ()
    links: tuple[Link, ...] = ()  # from the roots outward
    cycles: tuple[tuple[Link, ...], ...] = ()
    missing: tuple[int, ...] = ()  # ranks whose records (FR dump, stack, NCCL log) would close a cut chain
    waiting: tuple[int, ...] = field(default=())  # every rank that waits in some collective

    @property
    def decided(self) -> bool:
        """A root that is a rank with a record, or a cycle, and no chain cut by a missing record."""
        return bool(self.roots or self.cycles) and not self.missing

    def sentence(self) -> str:
        """``rank 1 is in train.py:40 and never joined all_reduce #12 of group [0, 1]; rank 0 waits there;
        ranks 2-3 wait for ranks 0-1 in all_reduce #19 of default_pg``."""
        def waits(link: Link) -> str:
            return f"{who(list(link.waiting))} {'waits' if len(link.waiting) == 1 else 'wait'}"

        parts = []
        said = [r.awaited_in for r in self.roots]
        for i, root in enumerate(self.roots):
            parts.append(root.sentence())
            link = root.awaited_in
            if root.kind is not RootKind.ALL_JOINED and link not in said[i + 1:]:  # once, after its last root
                parts.append(f"{waits(link)} there")
        for link in self.links:
            if link not in said and not any(link in c for c in self.cycles):
                parts.append(f"{waits(link)} for {who(list(link.waits_for))} in {link.what}")
        for cycle in self.cycles:
            parts.append("a cycle: " + ", ".join(
                f"{who(list(c.waiting))} in {c.what} for {who(list(c.waits_for))}" for c in cycle))
        if self.missing:
            parts.append(f"the records of {who(list(self.missing))} would close the chain")
        return "; ".join(parts)


def _reached(entry: Entry | None, pending: Entry) -> bool:
    if entry is None:
        return False
    if pending.seq is None:  # an init: reached by any entry in the group
        return True
    return entry.seq is not None and entry.seq >= pending.seq


def build(records: list[RankRecord]) -> WaitGraph:
    """The wait-for graph of ``records`` (one per rank; a member of a group with no record here
    counts as a rank that left no record)."""
    by_rank = {r.rank: r for r in records}
    last = {(r.rank, e.group.pg): e for r in records for e in r.entries}
    # one link per pending collective (group, seq): its waiters and the members that have not reached it
    pending: dict[tuple[str, int | None], tuple[Entry, set[int]]] = {}
    for r in records:
        for e in r.entries:
            if e.state is not EntryState.COMPLETED:
                pending.setdefault((e.group.pg, e.seq), (e, set()))[1].add(r.rank)
    waiting = {r for _, w in pending.values() for r in w}
    idle = tuple(sorted(r.rank for r in records if r.rank not in waiting))  # in no collective, or no record
    links = []
    for e, ranks in pending.values():  # the members behind, once per pending collective (16,384 of a world)
        if not e.group.members:
            links.append(Link(e.group, e.seq, e.op, tuple(sorted(ranks)), idle, inferred=True))
            continue
        behind = (m for m in e.group.members
                  if m not in ranks and not _reached(last.get((m, e.group.pg)), e))
        links.append(Link(e.group, e.seq, e.op, tuple(sorted(ranks)), tuple(sorted(behind))))
    edges: dict[int, set[int]] = {}
    for link in links:
        for r in link.waiting:
            edges.setdefault(r, set()).update(link.waits_for)

    roots: list[Root] = []
    for link in links:
        for m in link.waits_for:
            if m in waiting:
                continue
            rec = by_rank.get(m)
            if rec is None or not rec.recorded:
                roots.append(Root(m, RootKind.NO_RECORD, awaited_in=link))
            else:
                roots.append(Root(m, RootKind.OUTSIDE, rec.frame, link))
        if not link.waits_for and not link.inferred:
            roots.append(Root(None, RootKind.ALL_JOINED, awaited_in=link))
    roots = _first_per_rank(roots)
    cycles = _cycles(edges, links)
    links = _outward(links, edges)
    missing = tuple(sorted({r.rank for r in roots if r.kind is RootKind.NO_RECORD}))
    return WaitGraph(tuple(roots), tuple(links), cycles, missing, tuple(sorted(waiting)))


def _first_per_rank(roots: list[Root]) -> list[Root]:
    """One root per rank, in rank order, then the collectives every member joined. A rank awaited in
    several groups is named in the one nearest to it: a group's init before its collectives, then the
    smallest group (where the others wait for it alone; sequence numbers of different groups do not
    compare), then the lowest sequence number."""
    def near(r: Root) -> tuple:
        link = r.awaited_in
        return (link.seq is not None, len(link.group.members), link.seq if link.seq is not None else -1)

    best: dict[int | None, Root] = {}
    for r in roots:
        key = r.rank if r.rank is not None else id(r.awaited_in)
        if key not in best or near(r) < near(best[key]):
            best[key] = r
    ranked = sorted((r for r in best.values() if r.rank is not None), key=lambda r: r.rank)
    return ranked + [r for r in best.values() if r.rank is None]


def _cycles(edges: dict[int, set[int]], links: list[Link]) -> tuple[tuple[Link, ...], ...]:
    """Strongly connected sets of waiting ranks (Tarjan's), each as the links among its ranks."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    out: list[set[int]] = []

    def visit(v: int) -> None:  # recursion depth is at most the number of waiting ranks in one chain
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return tuple(
        tuple(sorted((link for link in links if set(link.waiting) & comp and set(link.waits_for) & comp),
                     key=lambda link: (link.group.pg, link.seq or -1)))
        for comp in sorted(out, key=min))


def _outward(links: list[Link], edges: dict[int, set[int]]) -> list[Link]:
    """The links in the order the hang spread: a link after every link whose waiters it waits for
    (a rank's depth: 0 for a rank that waits in nothing, else one more than the deepest rank it
    waits for); links in a cycle last. Ties by group and sequence number."""
    depth: dict[int, float] = {}

    def of(r: int, seen: frozenset = frozenset()) -> float:
        if r in depth:
            return depth[r]
        if r in seen:
            return float("inf")  # a cycle
        d = 1 + max((of(m, seen | {r}) for m in edges[r]), default=-1) if r in edges else 0
        depth[r] = d
        return d

    def key(link: Link):
        d = max((of(m) for m in link.waits_for), default=0)
        return (d, link.group.pg, link.seq if link.seq is not None else -1)

    return sorted(links, key=key)
