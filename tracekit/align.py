"""Align collectives across ranks and name the first mismatched or missing one.

Per process group (FR / torch) or communicator (NCCL commId), every member rank has a *frontier*:
the highest sequence number it enqueued (its last FR entry, or ``pg_status.last_enqueued``, or the
last NCCL ``opCount``). A member behind the group's highest frontier never issued the next
collective, which the others wait in. Of the collectives a rank misses, the first one *in time*
(earliest ``time_created`` on the ranks that issued it) is where it left the others. Ring buffers
wrap, so nothing is inferred from a rank's oldest entries; only frontiers are compared.
"""

from __future__ import annotations

import polars as pl

from tracekit import sources
from tracekit.outcome import SOURCE_NAMES, Cited, Finding, Match, tensor_text  # noqa: F401 (the old names)
from tracekit.sources import clock_offsets, collect  # noqa: F401 (the old names)
from tracekit.sources.fr import group_members  # noqa: F401 (the old name)
from tracekit.store import Store

#: Ops whose per-rank sizes legitimately differ (variable splits), so sizes are not compared.
VARIABLE_SIZE_OPS = ["all_to_all", "coalesced", "other", "gather", "scatter"]


def _entry(r: dict) -> Cited:
    """Where a collective was read: a log line (NCCL) by its line, a Flight Recorder entry by its record."""
    if r["line"] is not None:
        return Cited(r["file"], r["line"])
    return Cited(r["file"], None, record=r["record_id"])


def _line_or_record(r: dict) -> Cited:
    """``_entry`` in the words a mismatch's evidence has always used: ``file:N``, a record's too."""
    if r["line"]:
        return Cited(r["file"], r["line"])
    return Cited(r["file"], None, record=r["record_id"], shown=f"{r['file']}:{r['record_id']}")


def _source(store: Store, source: str) -> pl.LazyFrame:
    """The collectives of one source with a rank, lazily (the table in memory, or scanned from disk),
    as that source numbers and sizes them (NCCL's opCount becomes torch's seq: sources/nccl.py)."""
    coll = store.collectives.lazy().filter((pl.col("source") == source) & pl.col("rank").is_not_null())
    return getattr(sources.source(source), "calls", lambda c: c)(coll)


ALIGNED = pl.col("seq").is_not_null() & ~pl.col("op").is_in(["send", "recv"])  # the calls that line up by seq


def find(store: Store, source: str) -> list[Finding]:
    """Findings for one source kind ("fr", "nccl", "kineto"), most telling first."""
    coll = _source(store, source).filter(ALIGNED)
    # one pass: how far each rank got in each group, and which ranks left any record (send/recv too)
    per = collect(_source(store, source).group_by("rank", "pg").agg(
        pl.col("seq").filter(ALIGNED).max().alias("frontier"), ALIGNED.any().alias("_aligned")))
    frontier = per.filter("_aligned").drop("_aligned")
    if not frontier.height and source != "fr":
        return []
    src = sources.source(source)
    members = src.members(store, frontier.select("pg", "rank"))
    frontier = src.frontier(store, frontier)
    # a member counts as behind only if it left a record in this source (a dump, even an empty one,
    # or a collective in any group); one that left none is unknown, never "behind"
    recorded = src.recorded(store, per["rank"])
    full = members.join(frontier, on=["pg", "rank"], how="left").with_columns(
        pl.col("frontier").fill_null(0), pl.col("rank").is_in(recorded.implode()).alias("recorded"))
    full = full.join(full.group_by("pg").agg(pl.col("frontier").filter(pl.col("recorded")).max().alias("top"),
                                             pl.len().alias("size")), on="pg").filter(pl.col("size") > 1)
    lag = full.filter(pl.col("recorded") & (pl.col("frontier") < pl.col("top"))).with_columns(
        (pl.col("frontier") + 1).alias("seq"))
    missing, mismatched = _missing(coll, full, lag, source), _mismatches(coll, source)
    # a mismatch comes before any "never issued" at a later seq of its group: ranks that stop issuing
    # after a collective whose sizes differ wait on it (samples/gpu_nccl_mismatch: rank 0 at seq 31)
    after = [f for f in missing if any(m.pg == f.pg and m.seq < f.seq for m in mismatched)]
    return ([f for f in missing if f not in after] + mismatched + after) + _silent(full, source)


def recorded_ranks(store: Store, source: str) -> pl.Series:
    """The ranks that left any record in ``source``: a collective of any group, or (FR) a dump."""
    ranks = collect(_source(store, source).select(pl.col("rank").unique()))["rank"]
    return sources.source(source).recorded(store, ranks)


def _silent(full: pl.DataFrame, source: str) -> list[Finding]:
    """Per group, the members that left no record while others did: a gap in the evidence."""
    out = []
    for (pg,), grp in full.filter(pl.col("top").is_not_null()).group_by(["pg"], maintain_order=True):
        silent = grp.filter(~pl.col("recorded"))["rank"].sort().to_list()
        if silent:
            present = grp.filter(pl.col("recorded"))["rank"].sort().to_list()
            out.append(Finding(kind=Match.NO_RECORD, source=source, pg=pg, pg_desc=None, seq=grp["top"][0],
                               op=None, sizes=None, dtype=None, present=present, missing=silent))
    return sorted(out, key=lambda f: (-len(f.missing), f.pg))


def _missing(coll: pl.LazyFrame, full: pl.DataFrame, lag: pl.DataFrame, source: str) -> list[Finding]:
    if not lag.height:
        return []
    evidence = collect(coll.join(lag.lazy().select("pg", "seq").unique(), on=["pg", "seq"], how="semi")
                       .select("pg", "seq", pl.col("rank").alias("peer"), "op", "op_raw", "sizes", "dtype",
                               "pg_desc", "start_ns", "file", "line", "record_id")).sort("peer")
    cand = (lag.join(evidence, on=["pg", "seq"], how="left")
            .group_by("rank", "pg", "seq", maintain_order=True)
            .agg(pl.col("op_raw", "sizes", "dtype", "pg_desc", "file").drop_nulls().first(),
                 pl.col("line", "record_id").drop_nulls().first(),
                 pl.col("start_ns").min(), pl.col("peer").drop_nulls().len().alias("seen_by"))
            # (ties, such as two groups' next calls that no peer recorded, go to the first group by name)
            .sort(["rank", "seen_by", "start_ns", "pg", "seq"], descending=[False, True, False, False, False],
                  nulls_last=True)
            .group_by("rank", maintain_order=True).first())
    last = (collect(coll.filter(pl.col("rank").is_in(lag["rank"].unique().implode())))
            .sort("start_ns", "record_id", "seq", nulls_last=True).group_by("rank").last()
            .select("rank", pl.format("{} seq {} on process group {}", "op_raw", "seq", "pg").alias("last")))
    cand = cand.join(last, on="rank", how="left")
    out = []
    for key, grp in cand.group_by(["pg", "seq"], maintain_order=True):
        pg, seq = key
        row = grp.row(0, named=True)
        present = full.filter((pl.col("pg") == pg) & (pl.col("frontier") >= seq))["rank"].sort().to_list()
        missing = grp["rank"].sort().to_list()
        absent = full.filter((pl.col("pg") == pg) & pl.col("rank").is_in(missing) & (pl.col("frontier") == 0))
        kind = Match.RANK_ABSENT if absent.height == len(missing) and row["seen_by"] == 0 else Match.MISSING
        out.append(Finding(
            kind=kind, source=source, pg=pg, pg_desc=row["pg_desc"], seq=seq, op=row["op_raw"],
            sizes=row["sizes"], dtype=row["dtype"], present=present, missing=missing,
            last_of_missing={r: (l or "no collective recorded")
                             for r, l in grp.select("rank", "last").iter_rows()},
            evidence=(_entry(row),) if row["file"] else (),
        ))
    # collectives some rank issued are the strongest evidence; then the earliest in time, and where the
    # source has no times (NCCL), the lowest seq: ranks that enqueue ahead of a stuck rank are its
    # consequence (ranks 1-2 at seq 40 while rank 3 never issued seq 29: samples/gpu_nccl_deadlock)
    first = cand.group_by("pg", "seq").agg(pl.col("start_ns").min())
    start = {(p, q): t for p, q, t in first.iter_rows()}
    out.sort(key=lambda f: (not f.op, start.get((f.pg, f.seq)) is None, start.get((f.pg, f.seq)) or 0, f.seq))
    return out


def _mismatches(coll: pl.LazyFrame, source: str) -> list[Finding]:
    # Only sequence numbers where the calls differ at all need a closer look (at scale, nearly none).
    # (one hash of each call's op, dtype and sizes; a sequence number varies where min != max)
    varied = collect(coll.with_columns(pl.struct("op", "dtype", "sizes").hash().alias("_h"))
                     .group_by("pg", "seq").agg((pl.col("_h").min() != pl.col("_h").max()).alias("_v"))
                     .filter(pl.col("_v")).select("pg", "seq"))
    if not varied.height:
        return []
    coll = collect(coll.join(varied.lazy(), on=["pg", "seq"], how="semi"))
    # Each rank's signature at a sequence number: every call it logged there (NCCL logs a zero-count
    # call under the next call's opCount, FR dumps repeat entries), so ranks are compared as wholes.
    sig = coll.group_by("pg", "seq", "rank").agg(
        pl.col("op").unique().sort().str.join("+"),
        pl.col("dtype").drop_nulls().unique().sort().str.join("+"),
        pl.col("sizes").drop_nulls().unique().sort().str.join("+"), pl.col("start_ns").min())
    at = sig.group_by("pg", "seq").agg(
        pl.col("op").n_unique().alias("ops"), pl.col("dtype").n_unique().alias("dtypes"),
        pl.col("sizes").n_unique().alias("nsizes"), pl.col("op").first().alias("op0"),
        pl.col("start_ns").min(), pl.col("rank").n_unique().alias("nranks"),
    ).filter(pl.col("nranks") > 1)
    bad = at.with_columns(
        pl.when(pl.col("ops") > 1).then(pl.lit("OP_TYPE"))
        .when(pl.col("dtypes") > 1).then(pl.lit("DTYPE"))
        .when((pl.col("nsizes") > 1) & ~pl.col("op0").is_in(VARIABLE_SIZE_OPS)).then(pl.lit("SIZE"))
        .alias("why")
    ).filter(pl.col("why").is_not_null()).sort("start_ns", "seq", nulls_last=True)
    out = []
    for row in bad.group_by("pg", maintain_order=True).first().iter_rows(named=True):
        rows = (coll.filter((pl.col("pg") == row["pg"]) & (pl.col("seq") == row["seq"])).sort("rank")
                .unique("rank", maintain_order=True))
        first = rows.row(0, named=True)
        odd = rows.filter(pl.col("op").ne_missing(pl.lit(first["op"], pl.Utf8))
                          | pl.col("dtype").ne_missing(pl.lit(first["dtype"], pl.Utf8))
                          | pl.col("sizes").ne_missing(pl.lit(first["sizes"], pl.Utf8)))["rank"].to_list()
        out.append(Finding(
            kind=Match[row["why"]], source=source, pg=row["pg"], pg_desc=first["pg_desc"], seq=row["seq"],
            op=first["op_raw"], sizes=first["sizes"], dtype=first["dtype"],
            present=[r for r in rows["rank"].to_list() if r not in odd], missing=odd,
            last_of_missing={r["rank"]: f"{r['op_raw']}{tensor_text(r['sizes'], r['dtype'])}" for r in
                             rows.filter(pl.col("rank").is_in(odd)).iter_rows(named=True)},
            evidence=tuple(_line_or_record(r) for r in rows.head(8).iter_rows(named=True)),
        ))
    return out


def unranked_mismatches(store: Store) -> list[Finding]:
    """NCCL COLL lines of processes whose rank no line names (no Init line was logged): streams of one
    size of communicator (``[nranks=N]``), at most N of them, are taken as one communicator, and the
    first opCount where they ran different ops is a mismatch between processes named ``host:pid``."""
    c = collect(store.collectives.lazy().filter(
        (pl.col("source") == "nccl") & pl.col("rank").is_null() & pl.col("seq").is_not_null()
        & pl.col("nranks").is_not_null() & pl.col("pid").is_not_null()
        & ~pl.col("op").is_in(["send", "recv"]) & (pl.col("state") != "no-op")))
    out = []
    for (n,), g in c.group_by(["nranks"], maintain_order=True):
        streams = g.select("host", "pid", "comm").unique()
        if not 2 <= streams.height <= n:
            continue
        sig = g.group_by("host", "pid", "comm", "seq").agg(
            pl.col("op").cast(pl.Utf8).unique().sort().str.join("+"), pl.col("file").first(),
            pl.col("line").min(), pl.col("op_raw").first())
        varied = sig.group_by("seq").agg(pl.col("op").n_unique().alias("ops"), pl.len().alias("n")).filter(
            (pl.col("ops") > 1) & (pl.col("n") > 1)).sort("seq")
        if not varied.height:
            continue
        seq = varied["seq"][0]
        at = sig.filter(pl.col("seq") == seq).sort("host", "pid")
        said = "; ".join(f"{r['host']}:{r['pid']} ran {r['op_raw']}" for r in at.iter_rows(named=True))
        out.append(Finding(
            kind=Match.OP_TYPE, source="nccl", pg=f"nranks={n}", pg_desc=None, seq=seq, op=at["op_raw"][0],
            sizes=None, dtype=None, present=[], missing=[],
            evidence=tuple(Cited(r["file"], r["line"]) for r in at.head(8).iter_rows(named=True)),
            label=f"a {n}-rank communicator (no Init line names ranks; {streams.height} processes log "
                  f"[nranks={n}]): opCount {seq:x}: ranks issued different collectives: {said}"))
    return out
