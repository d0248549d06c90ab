"""The run as a timeline: one process per rank, one track per process group, a slice per
collective, flows tying one collective across ranks, instants where a rank stops. The trace
writers (``perfetto``, ``chrome_json``) only translate this model into their file formats.

``render`` takes a ``view.CollectivesView``: the best timed source (Flight Recorder, else Kineto),
shifted by each host's clock offset, or with no timed source (NCCL COLL lines only) the sequence
number, one millisecond per collective, as ``axis`` says. Where a source records no end (Gloo's Flight
Recorder), a collective is a short enqueue marker, except a rank's last one, which stays open to
the end of the trace unless the verdict says the rank left it (a deadlock's culprit).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from tracekit.outcome import Kind, Verdict
from tracekit.view import CollectivesView


@dataclass
class Slice:
    pid: int
    track: str
    name: str
    start_ns: int
    end_ns: int
    args: dict
    flow: int | None = None
    first_in_flow: bool = False
    last_in_flow: bool = False
    highlight: bool = False


@dataclass
class Instant:
    pid: int
    track: str
    name: str
    ts_ns: int
    args: dict


@dataclass
class Timeline:
    processes: dict[int, str] = field(default_factory=dict)  # pid -> "A host/rank 3"
    tracks: dict[tuple[int, str], int] = field(default_factory=dict)  # (pid, track) -> order
    slices: list[Slice] = field(default_factory=list)
    instants: list[Instant] = field(default_factory=list)
    axis: str = "time"  # "time", "sequence", or "mixed" (two runs, one on each): see AXES
    title: str = ""
    axes: dict[str, str] = field(default_factory=dict)  # run label -> its axis

    def axis_note(self) -> str:
        """What the x axis of this trace is, in words (a run on sequence numbers named as such)."""
        if self.axis != "mixed":
            return AXES[self.axis]
        return "; ".join(f"{label.strip() or 'the run'}: {AXES[a]}" for label, a in self.axes.items())


#: What the x axis means, as ``tracekit trace`` says it and as the trace itself carries it.
AXES = {
    "time": "x is time: each collective at its enqueue time, every host's clock offset removed",
    "sequence": ("x is NOT time: the collective sequence number, 1 ms per collective (no timed source: "
                 "NCCL COLL lines only)"),
    "mixed": ("x differs between the two runs: one on time, the other on sequence numbers (1 ms per "
              "collective)"),
}
SEQUENCE_MARK = " [x = sequence number, not time]"


def render(cv: CollectivesView, verdict: Verdict | None = None, label: str = "", pid_base: int = 0,
           into: Timeline | None = None) -> Timeline:
    """The timeline of one run's collectives (``into`` a timeline that holds another run already,
    its processes numbered from ``pid_base``), the verdict's collectives and ranks marked."""
    tl = into or Timeline()
    coll, axis = cv.collectives, cv.axis
    tl.axis = axis if into is None else (tl.axis if tl.axis == axis else "mixed")
    tl.axes[label] = axis
    if not coll.height:
        return tl
    t0, t1 = coll["start_ns"].min(), coll.select(pl.max_horizontal("start_ns", "end_ns")).to_series().max()
    tail = max((t1 - t0) // 20, 1_000_000)
    mark = max((t1 - t0) // 200, 1_000_000)  # an enqueue whose end is unknown: a short marker
    outside = verdict.ranks if verdict and verdict.kind == Kind.DEADLOCK else []  # they left their last one
    nxt = pl.col("start_ns").shift(-1).over("rank", "pg")
    is_open = pl.col("end_ns").is_null() & nxt.is_null() & ~pl.col("rank").is_in(outside)
    coll = coll.with_columns(
        pl.when(pl.col("end_ns").is_not_null()).then(pl.col("end_ns"))
        .when(is_open).then(pl.lit(t1 + tail))
        .otherwise(pl.min_horizontal(pl.coalesce(nxt, pl.lit(t1 + tail)), pl.col("start_ns") + mark))
        .alias("_end"),
        is_open.alias("_open"),
    ).with_columns(pl.max_horizontal(pl.col("_end"), pl.col("start_ns") + 1000).alias("_end"))
    focus = {(f.pg, f.seq) for f in (verdict.findings if verdict else []) if f.seq is not None and f.op}
    # one flow per collective that more than one rank ran, numbered in the order of the rows (the
    # same ids every time the same run is drawn)
    flows = (coll.group_by("pg", "seq", maintain_order=True).agg(pl.col("rank").n_unique().alias("n"))
             .filter(pl.col("n") > 1).with_row_index("flow", offset=pid_base * 100 + 1))
    coll = coll.join(flows.select("pg", "seq", "flow"), on=["pg", "seq"], how="left").with_columns(
        (pl.col("rank") == pl.col("rank").max().over("pg", "seq")).alias("_last"),
        (pl.col("rank") == pl.col("rank").min().over("pg", "seq")).alias("_first"))
    for rank in sorted(coll["rank"].unique().to_list()):
        pid = pid_base + rank + 1
        tl.processes[pid] = (f"{label}{cv.hosts.get(rank) or '?'}/rank {rank}"
                             + (SEQUENCE_MARK if axis == "sequence" else ""))
    for r in coll.iter_rows(named=True):
        pid = pid_base + r["rank"] + 1
        track = f"pg {r['pg']}" + (f" ({r['pg_desc']})" if r.get("pg_desc") else "")
        tl.tracks.setdefault((pid, track), len(tl.tracks))
        hot = (r["pg"], r["seq"]) in focus
        never = " (never completed)" if r["_open"] and r["state"] not in ("completed",) else ""
        name = ("! " if hot else "") + f"{r['op']} #{r['seq']}{never}"
        args = {"seq": r["seq"], "op": r["op_raw"] or r["op"], "bytes": r["bytes"], "count": r["count"],
                "dtype": r["dtype"], "state": r["state"], "source": r["source"], "file": r["file"]}
        tl.slices.append(Slice(pid, track, name, r["start_ns"], r["_end"], args, flow=r["flow"],
                               first_in_flow=bool(r["_first"]), last_in_flow=bool(r["_last"]), highlight=hot))
    if verdict and verdict.ranks:
        last = (coll.filter(pl.col("rank").is_in(verdict.ranks))
                .group_by("rank").agg(pl.col("_end").max(), pl.col("pg").last()))
        for r in last.iter_rows(named=True):
            pid = pid_base + r["rank"] + 1
            track = next((k[1] for k in tl.tracks if k[0] == pid), f"pg {r['pg']}")
            stops = f"rank {r['rank']} stops here ({verdict.kind.name.lower()})"
            tl.instants.append(Instant(pid, track, stops, min(r["_end"], t1 + tail),
                                       {"verdict": verdict.summary[:300]}))
    if axis == "sequence":  # said in the trace itself, at its start, on the run's first rank
        pid, track = next(k for k in tl.tracks if k[0] > pid_base)
        tl.instants.append(Instant(pid, track, f"{label}x axis: sequence number, not time", t0,
                                   {"axis": AXES["sequence"]}))
    tl.title = (tl.title + " | " if tl.title else "") + f"{label}{verdict.kind.name if verdict else ''}"
    return tl
