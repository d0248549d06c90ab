"""The checks PyTorch's Flight Recorder analyzer makes, as tracekit's own, over one process group.

The analyzer (torch/distributed/flight_recorder/components/types.py, ``Op.match``; utils.py,
``error_analysis``) compares each rank's entry of a collective with the first rank's: type, input and
output sizes, dtypes, state; each op's own shape rule (an all_gather's output is its input x group
size); the ops of a coalesced group one by one; a send with its recv. Here the same rules are column
expressions over every rank's entries of one group at once, keyed by ``(seq, position)`` (an entry's
place among its rank's entries of that sequence number: a coalesced group is several entries under one
sequence number, and its end marker carries no tensors). Where the analyzer's answer differs on purpose,
the function says why: the odd rank is the one the majority disagrees with (the analyzer blames every
rank that differs from whichever rank it read first); totals, not a first tensor, carry the shape rules
(a list all_gather has one output per rank); ``recv 1<-?`` (gloo's any-source recv) is paired, not a
crash.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from tracekit.fr_health import HealthyWindow, healthy_window
from tracekit.outcome import Cited, Finding, Match, tensor_text
from tracekit.wording import who

__all__ = ["HealthyWindow", "across_ranks", "check_group", "check_store", "collectives", "healthy_window",
           "p2p_pairs", "per_entry"]


#: Ops whose inputs differ by rank by design (a scatter's root alone has the inputs), and outputs.
FREE_INPUTS = ["all_to_all", "scatter", "other"]
FREE_OUTPUTS = ["all_to_all", "gather", "other"]
#: Ops whose dtypes are not compared: inputs (a scatter's or broadcast's non-root), outputs (a gather's).
FREE_IN_TYPES = ["scatter", "broadcast"]
FREE_OUT_TYPES = ["gather"]
#: Ops that read one dtype and write another by design (the root's side only holds tensors).
TYPE_CHANGING = ["scatter", "gather", "broadcast"]
STATE_ORDER = {"scheduled": 0, "started": 1, "completed": 2}


def _entries(entries: pl.DataFrame) -> pl.DataFrame:
    """One row per (rank, record), in record order per rank: a rank dumped twice keeps its most advanced
    state of each record. (Rows come in file order, one dump's records in order: no sort then.)"""
    if entries["file"].n_unique() <= entries["rank"].n_unique():  # (one dump a rank: nothing to merge)
        rank, record = pl.col("rank").diff(), pl.col("record_id").diff()
        if entries.select(((rank > 0) | (rank == 0) & (record > 0)).fill_null(True).all()).item():
            return entries
        return entries.sort("rank", "record_id")
    advanced = pl.col("state").cast(pl.Utf8).replace_strict(STATE_ORDER, default=-1)
    return (entries.sort(pl.col("rank"), pl.col("record_id"), advanced)
            .unique(["rank", "record_id"], keep="last").sort("rank", "record_id"))


def _first(sizes: str) -> pl.Expr:
    """Whether an entry's first tensor has a shape (the analyzer's ``input_sizes[0]``: ``[[]]`` has none)."""
    return pl.col(sizes).is_not_null() & (pl.col(sizes) != "") & ~pl.col(sizes).str.starts_with(";")


def _type_set(c: pl.DataFrame, col: str) -> pl.Expr:
    """An entry's dtypes as a set (``"Half;Float;Half"`` -> ``"Float;Half"``), mapped from the few
    distinct lists (splitting 200,000 entries' lists took a second)."""
    seen = c[col].drop_nulls().unique().to_list()
    return pl.col(col).replace_strict({v: ";".join(sorted(set(v.split(";")))) for v in seen}, default=None,
                                      return_dtype=pl.Utf8)


def collectives(entries: pl.DataFrame) -> pl.DataFrame:
    """The group's non-p2p entries, each with its ``pos`` under its sequence number and ``n_ops``, the
    number of entries its rank recorded there (more than one: a coalesced group)."""
    c = _entries(entries.filter(~pl.col("op").is_in(["send", "recv"]) & pl.col("seq").is_not_null()))
    # a rank's entries of one sequence number are consecutive (in record order): their runs, with no
    # hashing (a window .over("rank", "seq") on 2 M entries took 4 s)
    run, row = pl.struct("rank", "seq").rle_id(), pl.int_range(pl.len())
    starts = pl.when(run != run.shift(1, fill_value=-1)).then(row).forward_fill()
    ends = pl.when(run != run.shift(-1, fill_value=-1)).then(row).backward_fill()
    return c.with_columns((row - starts).alias("pos"), (ends - starts + 1).alias("n_ops"))


def _keys(c: pl.DataFrame) -> pl.DataFrame:
    """The values the cross-rank rules compare, as columns."""
    # (all_gather on one rank, _all_gather_base on another: one NCCL op, compared by element counts)
    variants = pl.col("op_raw").n_unique().over("seq", "pos") > 1
    if c.select(pl.col("op_raw").n_unique() == pl.col("op").n_unique()).item():
        variants = pl.lit(False)  # (each op is written one way: no variants to compare by counts)
    return c.with_columns(
        pl.when(variants).then(pl.format("{} elements", "count")).otherwise(pl.col("sizes").fill_null(""))
        .alias("_in"),
        pl.when(variants).then(pl.format("{} elements", "out_count"))
        .otherwise(pl.col("out_sizes").fill_null("")).alias("_out"),
        pl.when(_first("sizes")).then(_type_set(c, "dtypes")).alias("_in_types"),
        pl.when(_first("out_sizes")).then(_type_set(c, "out_dtypes")).alias("_out_types"),
        pl.col("state").cast(pl.Utf8).alias("_state"), pl.col("op").cast(pl.Utf8).alias("_op"))


#: What an entry is, for the cross-rank rules (a sequence number whose entries all hash alike passes them)
SIGNATURE = ["op", "op_raw", "sizes", "out_sizes", "dtypes", "out_dtypes", "state"]


#: The cross-rank rules in the analyzer's order: the first that holds names a (seq, position).
RULES = [
    (Match.OP_TYPE, "_op", None),
    (Match.SIZE, "_in", FREE_INPUTS),
    (Match.SIZE, "_out", FREE_OUTPUTS),
    (Match.DTYPE, "_in_types", FREE_IN_TYPES),
    (Match.DTYPE, "_out_types", FREE_OUT_TYPES),
    (Match.STATE, "_state", None),
]
WHAT = {"_op": "collectives", "_in": "input sizes", "_out": "output sizes", "_in_types": "input dtypes",
        "_out_types": "output dtypes", "_state": "states"}


def across_ranks(c: pl.DataFrame, pg: str, group_size: int | None) -> list[Finding]:
    """Type, size, dtype and state of each collective (``c``: ``collectives``) compared across the ranks
    that recorded it, and the length of each coalesced group; the first disagreement of each kind."""
    # only sequence numbers where entries differ, coalesced groups and all_to_alls need a closer look
    # (at scale, nearly none: 1,024 ranks x 2,000 entries)
    h = pl.struct(SIGNATURE).hash()
    look = c.group_by("seq").agg((h.min() != h.max()) | (pl.col("n_ops").max() > 1)
                                 | (pl.col("op") == "all_to_all").any()).filter("op")["seq"]
    c = _keys(c.filter(pl.col("seq").is_in(look.implode())))
    uneven = c.group_by("seq").agg(pl.col("n_ops").n_unique() > 1).filter("n_ops")["seq"].implode()
    out = _uneven_groups(c.filter(pl.col("seq").is_in(uneven)), pg)
    c = c.filter(~pl.col("seq").is_in(uneven) & ~pl.col("coalesced_end"))
    seen: set[tuple] = set()  # (one finding per collective: the first rule that holds)
    varied = [(pl.col(col).drop_nulls().n_unique() > 1) & (~pl.col("_op").is_in(free).any() if free else True)
              for _, col, free in RULES]
    flags = [f"_v{i}" for i in range(len(RULES))]
    at = (c.group_by("seq", "pos").agg(*[v.alias(f) for v, f in zip(varied, flags)], pl.col("start_ns").min(),
                                       pl.col("rank").n_unique().alias("_n"))
          .filter((pl.col("_n") > 1) & pl.any_horizontal(flags))
          .sort("start_ns", "seq", "pos", nulls_last=True))
    for i, (kind, col, _) in enumerate(RULES):
        if kind in {f.kind for f in out}:
            continue
        bad = at.filter(flags[i])
        for seq, pos in [k for k in bad.select("seq", "pos").iter_rows() if k not in seen][:1]:
            seen.add((seq, pos))
            rows = c.filter((pl.col("seq") == seq) & (pl.col("pos") == pos) & pl.col(col).is_not_null())
            out.append(_disagreement(kind, col, rows, pg))
    # (a state that differs is the weakest sign: at the tail, dumps taken moments apart differ so)
    return [f for f in out if f.kind != Match.STATE] + _all_to_all(c, pg, group_size) + [
        f for f in out if f.kind == Match.STATE]


def _disagreement(kind, col: str, rows: pl.DataFrame, pg: str) -> Finding:
    """The majority's value against the odd ranks' (a tie: the lowest rank's value is the reference)."""
    values = dict(zip(rows["rank"].to_list(), rows[col].to_list()))
    names = dict(zip(rows["rank"].to_list(), rows["op_raw"].to_list()))  # (the op as each rank named it)
    counts = Counter(values.values())
    ref = max(counts, key=lambda v: (counts[v], -min(r for r, x in values.items() if x == v)))
    if col == "_state" and "completed" in counts:  # (the ranks named are those it has not completed on)
        ref = "completed"
    odd = sorted(r for r, v in values.items() if v != ref)
    first = rows.filter(pl.col(col) == ref).row(0, named=True)
    said = "; ".join(f"{who([r])}: {names[r] if col == '_op' else _show(col, values[r])}" for r in odd[:4])
    same = sorted(set(values) - set(odd))
    label = (f"{_at(pg, first)}: {WHAT[col]} differ: {who(same)}: "
             f"{first['op_raw'] if col == '_op' else _show(col, ref)}; {said}")
    return Finding(kind=kind, source="fr", pg=pg, pg_desc=first["pg_desc"], seq=first["seq"],
                   op=first["op_raw"], sizes=first["sizes"], dtype=first["dtype"],
                   present=same, missing=odd,
                   last_of_missing={r: f"{WHAT[col]}: {_show(col, values[r])}" for r in odd},
                   evidence=_evidence(rows), label=label)


def _show(col: str, value) -> str:
    if col in ("_in", "_out") and not value.endswith(" elements"):
        return f"[{value.replace(';', '], [')}]"
    return str(value)


def _desc(row: dict) -> str:
    return f" ({row['pg_desc']})" if row.get("pg_desc") else ""


def _at(pg: str, row: dict) -> str:
    """``process group 0 (default_pg): nccl:all_reduce seq 3``, and the op's place in a coalesced group."""
    return f"process group {pg}{_desc(row)}: {row['op_raw']} seq {row['seq']}{_nth(row)}"


def _nth(row: dict) -> str:
    return f", op {row['pos'] + 1} of its coalesced group" if row.get("n_ops", 1) > 1 else ""


def _evidence(rows: pl.DataFrame) -> tuple[Cited, ...]:
    """The first eight entries of ``rows``, each its dump's file and record."""
    return tuple(Cited(f, None, record=r) for f, r in rows.select("file", "record_id").iter_rows())[:8]


def _uneven_groups(c: pl.DataFrame, pg: str) -> list[Finding]:
    """A sequence number under which ranks recorded a different number of ops: a coalesced group some
    ranks ran longer (the analyzer reports the extra ops as "not all ranks joining")."""
    out = []
    for (seq,), g in c.group_by(["seq"], maintain_order=True):
        per = g.group_by("rank").agg(pl.len().alias("n"), pl.col("op_raw").str.join(", ")).sort("rank")
        counts, first = Counter(per["n"].to_list()), dict(zip(per["n"].reverse(), per["rank"].reverse()))
        ref = max(counts, key=lambda n: (counts[n], -first[n]))  # (a tie: the lowest rank's count)
        odd = per.filter(pl.col("n") != ref)
        said = "; ".join(f"rank {r}: {n} ({ops})" for r, n, ops in odd.iter_rows())
        first, same = g.row(0, named=True), per.filter(pl.col("n") == ref)["rank"].to_list()
        out.append(Finding(
            kind=Match.COALESCED, source="fr", pg=pg, pg_desc=first["pg_desc"], seq=seq, op=first["op_raw"],
            sizes=None, dtype=None, present=same,
            missing=odd["rank"].to_list(),
            last_of_missing={r: f"{n} ops: {ops}" for r, n, ops in odd.iter_rows()},
            evidence=_evidence(g),
            label=f"process group {pg}{_desc(first)}: seq {seq}: ranks ran different numbers of ops under "
                  f"one sequence number (a coalesced group): {who(same)}: {ref}; {said}"))
    return out


def _all_to_all(c: pl.DataFrame, pg: str, group_size: int | None) -> list[Finding]:
    """An all_to_all's ranks may send different sizes, but what all send is what all receive (the
    analyzer's ``check_size_alltoall``), where every member recorded it. Named: the ranks whose own
    sending and receiving differ (with even splits, the one that sent more or less than the rest)."""
    if not group_size:
        return []
    a = c.filter(pl.col("op") == "all_to_all").group_by("seq", "pos").agg(
        pl.col("count").sum().alias("sent"), pl.col("out_count").sum().alias("received"),
        pl.col("out_count").is_not_null().all().alias("_known"), pl.col("start_ns").min(),
        pl.struct("rank", "count", "out_count", "file", "record_id").alias("_ranks"),
        pl.col("op_raw", "pg_desc", "sizes", "dtype").first())
    bad = a.filter(pl.col("_known") & (pl.col("_ranks").list.len() == group_size)
                   & (pl.col("sent") != pl.col("received"))).sort("start_ns", nulls_last=True)
    out = []
    for row in bad.head(1).iter_rows(named=True):
        ranks = sorted(row["_ranks"], key=lambda r: r["rank"])
        odd = [r for r in ranks if r["count"] != r["out_count"]] or ranks
        said = "; ".join(f"rank {r['rank']} sends {r['count']} and receives {r['out_count']}"
                         for r in odd[:4])
        out.append(Finding(
            kind=Match.SIZE, source="fr", pg=pg, pg_desc=row["pg_desc"], seq=row["seq"], op=row["op_raw"],
            sizes=row["sizes"], dtype=row["dtype"], missing=[r["rank"] for r in odd],
            present=[r["rank"] for r in ranks if r not in odd],
            evidence=tuple(Cited(r["file"], None, record=r["record_id"]) for r in odd + ranks)[:8],
            label=f"{_at(pg, row)}: the group sends {row['sent']} elements in all and receives "
                  f"{row['received']}: {said}"))
    return out


def per_entry(c: pl.DataFrame, pg: str, group_size: int | None) -> list[Finding]:
    """Each op's own rule on one rank's entry: an all_reduce writes what it reads; an all_gather's
    output is its input x group size (a list all_gather: one output per rank), a reduce_scatter's input
    its output x group size (SHAPE); an op reads and writes one dtype (DTYPE). The first of each rank.
    (The rules read only an entry's op, shapes and dtypes: they run on the few distinct ones.)"""
    c = c.filter(~pl.col("coalesced_end"))
    kinds = c.select(ENTRY).unique()
    kinds = kinds.with_columns(
        pl.when(_first("sizes")).then(_type_set(kinds, "dtypes")).alias("_in_types"),
        pl.when(_first("out_sizes")).then(_type_set(kinds, "out_dtypes")).alias("_out_types"))
    parts = pl.col("out_sizes").fill_null("").str.split(";").list.len()
    op, n = pl.col("op").cast(pl.Utf8), pl.lit(group_size)
    known = pl.col("out_sizes").is_not_null() & _first("sizes") & _first("out_sizes")
    sized = known & (group_size is not None)  # (a group whose pg_config lists no members: size unknown)
    shape = (
        pl.when(known & (op == "all_reduce") & (pl.col("sizes") != pl.col("out_sizes")))
        .then(pl.format("reads [{}] but writes [{}]", "sizes", "out_sizes"))
        .when(sized & (op == "all_gather") & (parts > 1) & (parts != (group_size or 0)))
        .then(pl.format("gathers into {} tensors in a group of {}", parts, n))
        .when(sized & (op == "all_gather") & (pl.col("out_count") != pl.col("count") * n))
        .then(pl.format("gathers {} elements from each of {} ranks into {}", "count", n, "out_count"))
        .when(sized & (op == "reduce_scatter") & (pl.col("count") != pl.col("out_count") * n))
        .then(pl.format("scatters {} elements to {} ranks, {} each", "count", n, "out_count")))
    dtype = (pl.when(known & ~op.is_in(TYPE_CHANGING) & (pl.col("_in_types") != pl.col("_out_types")))
             .then(pl.format("reads {} but writes {}", "_in_types", "_out_types")))
    kinds = (kinds.with_columns(pl.coalesce(shape, dtype).alias("_why"), shape.is_not_null().alias("_shape"))
             .filter(pl.col("_why").is_not_null()))
    if not kinds.height:
        return []
    bad = (c.join(kinds, on=ENTRY, nulls_equal=True).sort("rank", "start_ns", "record_id", nulls_last=True)
           .unique("rank", keep="first", maintain_order=True))
    return [Finding(
        kind=Match.SHAPE if row["_shape"] else Match.DTYPE, source="fr", pg=pg, pg_desc=row["pg_desc"],
        seq=row["seq"], op=row["op_raw"], sizes=row["sizes"], dtype=row["dtype"], present=[],
        missing=[row["rank"]], last_of_missing={row["rank"]: row["_why"]},
        evidence=(Cited(row["file"], None, record=row["record_id"]),),
        label=f"{_at(pg, row)}: rank {row['rank']}'s entry {row['_why']}")
        for row in bad.iter_rows(named=True)]


#: What the per-entry rules read of an entry
ENTRY = ["op", "sizes", "out_sizes", "count", "out_count", "dtypes", "out_dtypes"]


def p2p_pairs(entries: pl.DataFrame, pg: str, members: list[int], wrapped: list[int] = ()) -> list[Finding]:
    """Each send with the recv that takes it: the k-th send from one rank to another with the k-th recv
    of the one from the other (NCCL and gloo keep a pair's order); a ``recv 1<-?`` (any source) takes,
    in order, the sends to its rank that no exact recv took. Sizes must agree (send's input, recv's
    output). A rank whose ring buffer wrapped (``wrapped``: its dump's first record is not 0) is not
    paired: its k-th is not the peer's k-th."""
    glob = dict(enumerate(sorted(members)))
    p = _entries(entries.filter(pl.col("op").is_in(["send", "recv"])))
    if not p.height:
        return []
    p = p.filter(~pl.col("rank").is_in(list(wrapped))).with_columns(
        pl.col("p2p_src").replace_strict(glob, default=None).alias("_src"),
        pl.col("p2p_dst").replace_strict(glob, default=None).alias("_dst"),
        pl.coalesce("out_sizes", "sizes").alias("_got"), pl.col("rank").alias("_me"))
    sends = p.filter(pl.col("op") == "send").with_columns(
        pl.int_range(pl.len()).over("rank", "_dst").alias("k"))
    exact = p.filter((pl.col("op") == "recv") & pl.col("_src").is_not_null()).with_columns(
        pl.int_range(pl.len()).over("rank", "_src").alias("k"))
    on = dict(left_on=["rank", "_dst", "k"], right_on=["_src", "rank", "k"])
    paired = sends.join(exact, how="inner", suffix="_r", **on)
    left = sends.join(exact, how="anti", **on).sort("start_ns", "record_id", nulls_last=True).with_columns(
        pl.int_range(pl.len()).over("_dst").alias("k"))
    anyone = p.filter((pl.col("op") == "recv") & pl.col("_src").is_null()).with_columns(
        pl.int_range(pl.len()).over("rank").alias("k"))
    took = left.join(anyone, left_on=["_dst", "k"], right_on=["rank", "k"], suffix="_r")
    paired = pl.concat([paired, took], how="diagonal_relaxed")
    bad = paired.filter(pl.col("sizes") != pl.col("_got_r")).sort("start_ns", nulls_last=True)
    return [Finding(
        kind=Match.P2P_SIZE, source="fr", pg=pg, pg_desc=row["pg_desc"], seq=row["seq"], op=row["op_raw"],
        sizes=row["sizes"], dtype=row["dtype"], present=[row["rank"]], missing=[row["_me_r"]],
        last_of_missing={row["_me_r"]: f"{row['op_raw_r']}{tensor_text(row['_got_r'], row['out_dtypes_r'])}"},
        evidence=(Cited(row["file"], None, record=row["record_id"]),
                  Cited(row["file_r"], None, record=row["record_id_r"])),
        label=f"process group {pg}{_desc(row)}: rank {row['rank']}'s {row['op_raw']} (p2p seq {row['seq']}) "
              f"sends [{row['sizes']}]; rank {row['_me_r']}'s {row['op_raw_r']} (p2p seq {row['seq_r']}) "
              f"takes it into [{row['_got_r']}]") for row in bad.head(1).iter_rows(named=True)]


def check_group(entries: pl.DataFrame, pg: str, members: list[int], wrapped: list[int] = ()) -> list[Finding]:
    """Every rule over one process group's entries of all ranks (the ``collectives`` rows of ``pg``)."""
    c = collectives(entries)
    return (across_ranks(c, pg, len(members)) + per_entry(c, pg, len(members))
            + p2p_pairs(entries, pg, members, wrapped))


def check_store(store) -> tuple[list[Finding], list[HealthyWindow]]:
    """Every group of a store's FR collectives: findings, and the windows shown healthy (none unless
    every group with collectives shows one and nothing was found). A group is a
    name and its members (each rank's own pg_config): ``split_group`` can give two groups one name.
    (Entries carry a hash of their group's members, not the list: 1,024 ranks' lists on 200,000
    entries were 200 M values to join.)"""
    groups = (store.groups.lazy().select("rank", "pg", "members", "last_enqueued", "last_completed")
              .with_columns(pl.col("members").list.sort().hash().alias("_group")).collect())
    lists = groups.unique(["pg", "_group"]).select("pg", "_group", "members")
    # (the FR rows only, from a table in memory or scanned from disk)
    coll = (store.collectives.lazy().filter((pl.col("source") == "fr") & pl.col("rank").is_not_null())
            .with_columns(pl.col("rank").cast(pl.Int64))
            .join(groups.lazy().select("rank", "pg", "_group").unique(["rank", "pg"]), on=["rank", "pg"],
                  how="left", maintain_order="left").collect(engine="streaming"))
    first = coll.group_by("rank").agg(pl.col("record_id").min())
    wrapped = first.filter(pl.col("record_id") > 0)["rank"].to_list()  # (their dumps lost the oldest records)
    findings, windows, groups_seen = [], [], 0
    for (pg, key), entries in coll.group_by("pg", "_group", maintain_order=True):
        listed = lists.filter((pl.col("pg") == pg) & pl.col("_group").eq_missing(key))["members"]
        listed = sorted(listed[0]) if len(listed) and listed[0] is not None else []
        # (gloo's default group lists no members: its ranks are those seen, its size unknown)
        seen = sorted(entries["rank"].unique().to_list())
        members, size = (listed, len(listed)) if listed else (seen, None)
        c = collectives(entries)
        groups_seen += c.height > 0
        got = across_ranks(c, pg, size) + per_entry(c, pg, size) + p2p_pairs(entries, pg, members, wrapped)
        status = groups.filter((pl.col("pg") == pg) & pl.col("_group").eq_missing(key)
                               & pl.col("last_enqueued").is_not_null())
        window = healthy_window(c, pg, members, status, got)
        findings += got
        windows += [window] if window else []
    # a window is evidence of health only where every group of the dumps shows one
    return findings, windows if len(windows) == groups_seen and not findings else []
