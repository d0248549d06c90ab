"""What a renderer is given: a run analysed once, so the renderers (``reports/report.py``,
``reports/timeline.py`` and the trace writers after it) read a model and never the Store.

- ``RunView``: the verdict, the coverage in words (which ranks left which kinds of file), and each
  rank's situation (``situation.situation``) with the ranks in one place as one row.
- ``CollectivesView``: the collectives a timeline draws, on one axis: the best timed source
  (Flight Recorder, else Kineto) on one clock (``sources.on_one_clock``), else the sequence number.
- ``ChartData``: what the charts draw (each rank's timed collectives, the main group, the groups by
  what they are, the waits, the dumps' newest entries, the last collective per rank and group,
  bus bandwidth), for ``reports/plots.py``.
- ``Summary``: what ``tracekit ingest`` says of a run (files, ranks, versions, network, transports,
  communicators, last collectives, errors, lines not understood, traffic, the verdict), counted
  once, for ``reports/summary.py``; ``to_dict`` is its JSON. ``unknown_blocks``: the lines no
  parser understood, as blocks (``ingest --unknown``).

Each is built by its ``build`` from a store and its verdict; a renderer takes the model. The
comparison of two runs is ``diff.Comparison`` (``diff.compare``), rendered the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from tracekit import diff, figures, sources, traffic
from tracekit import verdict as verdicts
from tracekit import situation as rank_state
from tracekit.meanings import says
from tracekit.outcome import EventKind, Situation, Verdict
from tracekit.load import Run
from tracekit.runs import Attempt
from tracekit.store import Store
from tracekit.wording import fmt_ranks


def coverage(store: Store, verdict: Verdict) -> list[str]:
    """Which ranks the record covers (the verdict's own coverage: who left no file), from which kinds
    of file, and the files tied to no rank."""
    files = store.files.select("file", "kind")
    tables = [store.collectives, store.events, store.comms, store.links]
    direct = pl.concat([store.ranks.select("rank", "file")] + [t.select("rank", "file") for t in tables],
                       how="vertical_relaxed")
    # a rank's own log names no rank on most lines: its host and pid tie it to the rank
    processes = pl.concat([t.select("file", "host", "pid") for t in tables], how="vertical_relaxed")
    by_pid = (processes.drop_nulls().unique()
              .join(store.ranks.select("host", "pid", "rank").drop_nulls().unique(), on=["host", "pid"])
              .select("rank", "file"))
    per = (pl.concat([direct, by_pid], how="vertical_relaxed").drop_nulls().unique()
           .join(files, on="file", how="left"))
    kinds = per.group_by("rank").agg(pl.col("kind").drop_nulls().unique().sort().str.join(", ")).sort("rank")
    out = [f"{verdict.coverage['text']}; {store.files.height} file(s) read, "
           f"{store.files['error'].is_not_null().sum()} unreadable"]
    by_kind: dict[str, list[int]] = {}
    for r, k in kinds.iter_rows():
        by_kind.setdefault(k or "no file of a known kind", []).append(r)
    out += [f"rank{'s' if len(rs) > 1 else ''} {fmt_ranks(rs)}: {k}" for k, rs in by_kind.items()]
    unattributed = store.files.join(per.select("file").unique(), on="file", how="anti")
    if unattributed.height:
        out.append(f"{unattributed.height} file(s) hold no row tied to a rank (launcher logs, a rank's log "
                   "with nothing rank-specific in it): " + ", ".join(
                       f"{k} x{n}" for k, n in unattributed.group_by("kind").len().sort("kind").iter_rows()))
    return out


def places(sit: Situation) -> pl.DataFrame:
    """Ranks with the same last collective, state and main thread as one row (a 1,024-rank hang is
    a few rows: the ranks that wait, and the ones that do not)."""
    return (rank_state.table(sit).group_by("pg", "op", "seq", "state", "where", "named", maintain_order=True)
            .agg(pl.col("rank").sort(), pl.col("t_s").min())
            .sort("named", pl.col("rank").list.first(), descending=[True, False]))


@dataclass
class RunView:
    """One run as the report shows it."""

    name: str
    path: str
    verdict: Verdict
    coverage: list[str]
    situation: Situation
    places: pl.DataFrame  # ranks, last collective, state, main thread (ranks in one place share a row)

    @classmethod
    def build(cls, store: Store, verdict: Verdict, name: str = "", path: str = "") -> RunView:
        sit = rank_state.situation(store, verdict)
        return cls(name, path, verdict, coverage(store, verdict), sit, places(sit))


@dataclass
class CollectivesView:
    """The collectives a timeline draws, one row per (rank, process group, sequence number, start):
    ``start_ns`` and ``end_ns`` on one clock where ``axis`` is "time"; where it is "sequence" (no
    timed source: NCCL COLL lines only), ``start_ns`` is the sequence number in milliseconds and
    ``end_ns`` is null. ``hosts``: each rank's host."""

    collectives: pl.DataFrame
    axis: str
    hosts: dict[int, str] = field(default_factory=dict)

    @classmethod
    def build(cls, store: Store) -> CollectivesView:
        coll = store.collectives.filter(pl.col("rank").is_not_null())
        sub, source = sources.best(coll, sources.TIMED, pl.col("start_ns").is_not_null())
        if source:
            coll, axis = sources.on_one_clock(sub, {"start_ns": "start_ns", "end_ns": "end_ns"}), "time"
        else:
            by_seq = ((pl.col("seq") * 1_000_000).alias("start_ns"), pl.lit(None, pl.Int64).alias("end_ns"))
            coll, axis = coll.filter(pl.col("seq").is_not_null()).with_columns(*by_seq), "sequence"
        coll = (coll.unique(["rank", "pg", "seq", "start_ns"], maintain_order=True)
                .sort("rank", "pg", "start_ns"))
        hosts = dict(store.ranks.select("rank", "host").drop_nulls("rank").unique("rank").iter_rows())
        return cls(coll, axis, hosts)


@dataclass
class ChartData:
    """What the charts of ``reports/plots.py`` draw, worked out from the store once.

    ``timed``/``source``: each rank's collectives of the best timed source, ``t`` on one clock
    (``situation.timed``); ``main_pg``: the verdict's group, else the busiest; ``labels``: each group
    by what it is; ``ranks``: the situation table; ``waits``: how long a rank is known to have waited
    in its last collective; ``stall_note``: tracekit run's own record of the stall; ``dump_ends``: each
    Flight Recorder dump's newest entry per rank on the main group (``rank, file, seq, t``);
    ``last``: each rank's last collective per group (``rank, pg, seq, op, behind``); ``lateness``:
    how late each rank enters each shared collective (``figures.lateness``); ``bandwidth``:
    ``figures.bandwidth``; ``world_size``: ``figures.world_size``."""

    verdict: Verdict | None
    timed: pl.DataFrame
    source: str
    main_pg: str | None
    labels: dict[str, str]
    ranks: pl.DataFrame
    waits: dict[int, tuple[float, str]]
    stall_note: str | None
    dump_ends: pl.DataFrame
    last: pl.DataFrame
    lateness: pl.DataFrame
    bandwidth: pl.DataFrame
    world_size: int | None

    @classmethod
    def build(cls, store: Store, verdict: Verdict | None) -> ChartData:
        tm, source = rank_state.timed(store)
        pg = rank_state.main_group(tm, verdict) if tm.height else None
        coll = store.collectives.filter(pl.col("rank").is_not_null() & pl.col("seq").is_not_null()
                                        & ~pl.col("op").is_in(["send", "recv"]))
        # (in rank and group order: a chart drawn from it is the same file every time)
        last = (coll.sort("seq").group_by("rank", "pg")
                .agg(pl.col("seq").last(), pl.col("op").cast(pl.Utf8).last())
                .with_columns((pl.col("seq").max().over("pg") - pl.col("seq")).alias("behind"))
                .sort("rank", "pg"))
        return cls(verdict, tm, source, pg, rank_state.group_labels(store),
                   rank_state.table(rank_state.situation(store, verdict)), rank_state.waits(store),
                   rank_state.stall_note(store), _dump_ends(store, pg), last, figures.lateness(store)[0],
                   figures.bandwidth(store),
                   figures.world_size(store))


def report_views(a: Store, b: Store | None, names: tuple[str, ...], path: str = ""
                 ) -> tuple[RunView, dict[str, ChartData], diff.Comparison | None]:
    """What ``tracekit report`` shows of run ``a`` (named ``names[0]``, read from ``path``) and, where
    given, its comparison with run ``b``: ``a``'s view, each run's chart data by name, and the
    comparison (None without ``b``). Each verdict is decided once."""
    va = verdicts.decide(a)
    vb = verdicts.decide(b) if b is not None else None
    charts = {names[0]: ChartData.build(a, va)}
    if b is not None:
        charts[names[1]] = ChartData.build(b, vb)
    comparison = (diff.compare(a, b, verdict_a=va, verdict_b=vb, names=tuple(names)) if b is not None
                  else None)
    return RunView.build(a, va, names[0], path), charts, comparison


def _dump_ends(store: Store, pg: str | None) -> pl.DataFrame:
    """Each Flight Recorder dump's newest entry per rank on group ``pg``, on one clock (``t``): the
    points a slow run is seen to move through."""
    none = pl.DataFrame(schema={"rank": pl.Int64, "file": pl.Utf8, "seq": pl.Int64, "t": pl.Int64})
    if pg is None:
        return none
    fr = store.collectives.filter((pl.col("source") == "fr") & (pl.col("pg") == pg)
                                  & pl.col("rank").is_not_null())
    ends = (fr.sort("seq").group_by("rank", "file").agg(pl.col("seq").last(), pl.col("start_ns").last())
            .drop_nulls())
    if ends.height < 2:
        return none
    ends = ends.join(fr.select("rank", "host").unique("rank"), on="rank")
    # in rank and file order: the points a chart draws from it are drawn alike every time (a group-by's
    # order changes from one process to the next, and with it the chart)
    return sources.on_one_clock(ends, {"start_ns": "t"}, fr).sort("rank", "file")


# --- the summary of tracekit ingest ----------------------------------------------------------

#: kinds of error line that follow a failure elsewhere; lines of other kinds do where their message says
#: "knock_on" (meanings.SAYS: a consequence, torchrun's `failed (exitcode: 1) local_rank: 1`)
KNOCK_ON = [EventKind.RANK_EXIT, EventKind.CHILD_FAILED, EventKind.CLOSING_SIGNAL, EventKind.WATCHDOG_ABORT,
            EventKind.SIGNAL]
ERROR_KINDS = [EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR, EventKind.CONNECT_RETRY,
               EventKind.WATCHDOG_TIMEOUT, EventKind.CRASH, EventKind.EXCEPTION, EventKind.RANK_EXIT,
               EventKind.COLLECTIVE_MISMATCH, EventKind.C10D_ERROR, EventKind.JOB_CANCELLED]
#: the kinds of NCCL's network lines the summary shows (``links.what``)
NETWORK_LINES = ["network", "bootstrap", "ib_not_found", "socket_devices", "ib_devices"]
SLOW_BOOTSTRAP_S = 10.0  # NCCL's bootstrap takes well under a second when every rank is there
ERRORS_LISTED = 50  # error lines the summary holds (``errors_total`` counts them all)


def last_collectives(c: pl.DataFrame) -> pl.DataFrame:
    """Each rank's last collective of each source (by start time, record id, then line; a null
    counts as the latest), Kineto's GPU kernels aside. The rows are found on their keys alone, then
    gathered: the strings of a million rows are never copied."""
    keys = [pl.col(k).cast(pl.Int64).fill_null(2**63 - 1).alias(k) for k in ("start_ns", "record_id", "line")]
    ranked = pl.col("rank").is_not_null() & (pl.col("source") != "kineto-gpu")
    at = (c.lazy().with_row_index("_i").filter(ranked)
          .select("_i", "rank", "source", *keys).group_by("rank", "source")
          .agg(pl.col("_i").sort_by("start_ns", "record_id", "line", maintain_order=True).last()).collect())
    return c[at["_i"].sort()].sort("rank", "source").select(
        "rank", "source", "pg", "seq", pl.coalesce("op_raw", pl.col("op").cast(pl.Utf8)).alias("op"))


def _transports(store: Store) -> pl.DataFrame:
    """Connections by host pair (sender -> receiver) and transport: ``host_pair, transport_kind, len``."""
    conn = store.links.filter(pl.col("what") == "connection")
    hosts = store.ranks.select("rank", "host").drop_nulls()
    # a [receive] line is written by the receiver: its host is the pair's second, the sender's (src) the first
    recv = pl.col("direction") == "receive"
    pair = (pl.when(recv.fill_null(False)).then(pl.format("{} -> {}", "peer_host", "host"))
            .otherwise(pl.format("{} -> {}", "host", "peer_host")))
    return (conn.with_columns(pl.when(recv).then("src").otherwise("dst").alias("_peer"))
            .join(hosts.rename({"rank": "_peer", "host": "peer_host"}), on="_peer", how="left")
            .with_columns(pl.coalesce("peer_host", pl.lit("?")).alias("peer_host"))
            .with_columns(pair.alias("host_pair"))
            .group_by("host_pair", "transport_kind").len().sort("host_pair", "transport_kind"))


def _network(links: pl.DataFrame) -> pl.DataFrame:
    """NCCL's network lines, one row each of what they say: ``host, what, value``."""
    what = pl.col("what")
    # the IB line's iface:addr is its out-of-band interface: the devices are its value
    ib = pl.coalesce(pl.format("{} (OOB {}:{})", "value", "iface", "addr"), "value")
    other = pl.coalesce(pl.format("{}:{} ({})", "iface", "addr", "family"), "value")
    return (links.filter(what.is_in(NETWORK_LINES))
            .select("host", "what", pl.when(what == "ib_devices").then(ib).otherwise(other).alias("value"))
            .unique(maintain_order=True))


def _errors(events: pl.DataFrame) -> pl.DataFrame:
    """The error lines, the causes first and their consequences (a peer that closed, torchrun's
    child failed, an abort) under them: ``file, line, kind, message, consequence``."""
    knock_on = pl.col("kind").is_in(KNOCK_ON) | says("knock_on").fill_null(False)
    return (events.filter(pl.col("kind").is_in(ERROR_KINDS)).with_columns(knock_on.alias("consequence"))
            .sort("consequence", "file", "line").select("file", "line", "kind", "message", "consequence"))


def _ranks(store: Store) -> dict:
    """``count, world_size, nodes, hosts``. Nodes: the node index (torchrun's GROUP_RANK) where printed:
    fake nodes (network namespaces) share a host name, and NCCL's own count (``nNodes 4``), which can
    exceed the host names a paste shows."""
    r, c = store.ranks, store.comms
    nodes = max(r["host"].drop_nulls().n_unique(),
                r["node"].drop_nulls().n_unique() if "node" in r.columns else 0, c["nnodes"].max() or 0)
    return {"count": r["rank"].drop_nulls().n_unique(), "world_size": r["world_size"].max(),
            "nodes": nodes, "hosts": sorted(r["host"].drop_nulls().unique().to_list())}


@dataclass
class Summary:
    """What ``tracekit ingest`` says of a run, counted once (``build``) and rendered by
    ``reports/summary.py``. ``to_dict`` is the JSON (``schema_version`` 1; its fields are listed in
    ``reports/summary.py``). The rows are the JSON's: lists of dicts. ``runs``: where the logs hold
    several runs, each run (``runs.Attempt.to_dict``) with its verdict, and ``run_shown`` the one
    summarised."""

    verdict: Verdict
    files: list[dict]  # file, kind, lines, parsed, unknown, error
    files_by_kind: dict[str, int]
    ranks: dict  # count, world_size, nodes, hosts
    versions: dict[str, list[str]]  # nccl, torch, deepspeed
    transports: list[dict]  # host_pair, transport, n
    network: list[dict]  # host, what, value
    bootstrap: list[dict]  # host, rank, seconds: the slowest bootstrap, where slow
    communicators: dict  # total, init_complete, pending
    last_collective: list[dict]  # rank, source, pg, seq, op
    errors: list[dict]  # file, line, kind, message, consequence: the first ERRORS_LISTED
    errors_total: int
    unknown_lines: dict[str, int]  # file -> lines not understood
    unknown_blocks: list[dict] | None  # kind, blocks, lines (None: not counted)
    traffic: traffic.Traffic | None
    runs: list[tuple[Attempt, Verdict]] | None = None
    run_shown: int | None = None

    @classmethod
    def build(cls, store: Store, verdict: Verdict, unknown: pl.DataFrame | None = None) -> Summary:
        """The summary; ``unknown``: the lines not understood (``ingest.unknown_lines``), counted
        by block where given."""
        f, lk = store.files, store.links
        done = (pl.col("state") == "init_complete").any().alias("done")
        init = (store.comms.filter(pl.col("state").is_in(["init_start", "init_complete"]))
                .group_by("host", "pid", "comm").agg(done))
        seconds = pl.col("value").cast(pl.Float64, strict=False).alias("s")
        boot = lk.filter(pl.col("what") == "bootstrap_s").with_columns(seconds)
        slow_boot = boot.sort("s", descending=True).head(1).filter(pl.col("s") >= SLOW_BOOTSTRAP_S)
        errors = _errors(store.events)
        r = store.ranks
        versions = {k: sorted(v for v in r[f"{k}_version"].drop_nulls().unique().to_list() if v)
                    for k in ("nccl", "torch", "deepspeed")}
        return cls(
            verdict=verdict,
            files=f.select("file", "kind", "lines", "parsed", "unknown", "error").to_dicts(),
            files_by_kind=dict(f.group_by("kind").len().sort("kind").iter_rows()),
            ranks=_ranks(store), versions=versions,
            transports=[{"host_pair": a, "transport": b, "n": n}
                        for a, b, n in _transports(store).iter_rows()],
            network=_network(lk).to_dicts(),
            bootstrap=slow_boot.select("host", "rank", pl.col("s").alias("seconds")).to_dicts(),
            communicators={"total": init.height, "init_complete": init["done"].sum(),
                           "pending": init.height - init["done"].sum()},
            last_collective=last_collectives(store.collectives).to_dicts(),
            errors=errors.head(ERRORS_LISTED).to_dicts(), errors_total=errors.height,
            unknown_lines=dict(f.filter(pl.col("unknown") > 0).select("file", "unknown").iter_rows()),
            unknown_blocks=None if unknown is None else block_counts(unknown_blocks(unknown)),
            traffic=traffic.measure(store))

    def to_dict(self) -> dict:
        t = self.traffic
        out = {
            "schema_version": 1, "files_by_kind": self.files_by_kind, "files": self.files,
            "ranks": self.ranks,
            "versions": self.versions, "transports": self.transports, "network": self.network,
            "bootstrap": self.bootstrap, "communicators": self.communicators,
            "last_collective": self.last_collective, "errors": self.errors, "errors_total": self.errors_total,
            "unknown_lines": self.unknown_lines, "unknown_blocks": self.unknown_blocks,
            "coverage": self.verdict.coverage,
            "traffic": None if t is None else t.to_dict() | {"text": traffic.lines(t)},
            "verdict": self.verdict.to_dict(),
        }
        if self.runs is not None:
            out |= {"runs": [a.to_dict() | {"verdict": v.to_dict()} for a, v in self.runs],
                    "run_shown": self.run_shown}
        return out


def each_run(run: Run, verdict: Verdict) -> list[tuple[Attempt, Verdict]]:
    """The verdict of each run the logs hold (``Run.attempts``, the latest first): ``verdict`` for
    the one opened (``Run.picked``), the others decided from their own stores."""
    return [(a, verdict if a.number == run.picked else verdicts.decide(run.store_of(a)))
            for a in run.attempts]


#: what a line not understood looks like, for the kind of block it sits in (a JSON or Python dict dump:
#: braces, brackets, `"key": value` lines; a traceback: its header, frames, carets, the exception)
LINE_KINDS = {
    "JSON dump": r"^\s*(?:[{}\[\]],?\s*$|[{\[]\s*[\"'{\[]|[\"'][^\"']+[\"']\s*:\s*|\}\s*,?\s*$)",
    "traceback": (r"^(?:Traceback \(most recent call last\)|\s+File \"|\s+[~^]+\s*$"
                  r"|[\w.]+(?:Error|Exception): )"),
    # print(model): `(embed): Embedding(`
    "model printout": r"^\s*(?:\([\w.]+\): [\w.]+\(|\)\s*$|[A-Z]\w+\($)",
}


def unknown_blocks(lines: pl.DataFrame) -> pl.DataFrame:
    """Lines not understood (``file, line, raw``) as blocks: each run of consecutive lines of one
    file is one, of the kind most of its lines look like (``LINE_KINDS``, else text): ``file, first,
    last, lines, kind, raw`` (its lines' text, in order)."""
    kind = pl.lit("text block")
    for name, pattern in reversed(LINE_KINDS.items()):
        kind = pl.when(pl.col("raw").fill_null("").str.contains(pattern)).then(pl.lit(name)).otherwise(kind)
    block = pl.col("line") - pl.int_range(pl.len()).over("file")
    return (lines.sort("file", "line", maintain_order=True)
            .with_columns(kind.alias("_k"), block.alias("_b"))
            .group_by("file", "_b", maintain_order=True)
            .agg(pl.col("line").first().alias("first"), pl.col("line").last().alias("last"),
                 pl.len().alias("lines"), pl.col("_k").mode().sort().first().alias("kind"), pl.col("raw"))
            .drop("_b"))


def block_counts(blocks: pl.DataFrame) -> list[dict]:
    """``[{kind, blocks, lines}]``, the kind with the most lines first."""
    counted = blocks.group_by("kind").agg(pl.len().alias("blocks"), pl.col("lines").sum())
    return counted.sort("lines", "kind", descending=[True, False]).to_dicts()
