"""The mismatch rules: the ranks issued different collectives at one point of a process group, seen
in the aligned records, reported by the runtime, in the watchdogs' lines, or on NCCL's wire. They
come first in ``RULES``: a mismatch makes ranks crash and the others time out."""

from __future__ import annotations

import re

import polars as pl

from tracekit import nccl_messages, rules_apart
from tracekit.evidence import BOOTSTRAP, WIRE_MISMATCH, Evidence, lines
from tracekit.facts_in_view import seq_said
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.rules_common import last_open, msg, rank_of
from tracekit.wording import who


def _cuda_first(ev: Evidence, ranks: list[int]) -> bool:
    """A CUDA failure (out of memory, illegal access) on a rank of a mismatch, or on a rank unknown:
    the failing rank's error path (a barrier in its handler, a smaller tensor) made the mismatch, so
    the failure is the cause and the mismatch its consequence."""
    if not ev.cuda.height:
        return False
    failed = set(ev.cuda["rank"].drop_nulls().to_list())
    return not failed or not ranks or bool(failed & set(ranks))


# one side of c10d's DETAIL check (ProcessGroupWrapper.cpp, CollectiveFingerPrint's operator<<): torch >= 1.13
# prints both, `Rank 2 is running collective: CollectiveFingerPrint(SequenceNumber=32, OpType=ALLREDUCE,
# TensorShape=[], TensorDtypes=Float, ...), but Rank 3 is running collective: CollectiveFingerPrint(
# SequenceNumber=0OpType=GATHER)` (the peer's print lacks the comma and the tensors when it carries none);
# torch 1.10-1.12 only its own, `Rank 1 is running inconsistent collective: CollectiveFingerPrint(
# OpType=ALLREDUCE, TensorShape=[25], TensorDtypes=[Float], ...`
FINGERPRINT = (r"Rank (?P<rank>\d+) is running (?:inconsistent )?collective: CollectiveFingerPrint\("
               r"(?:SequenceNumber=(?P<seq>\d+),? ?)?OpType=(?P<op>\w+)"
               r"(?:, TensorShape=(?P<shape>\[[^\]]*\]))?(?:, TensorDtypes=(?P<dtype>\[[^\]]*\]|\w+))?")


def fingerprints(text: str) -> list[dict]:
    """Each side of a DETAIL mismatch report: rank, seq, op, shape, dtype (None where not printed)."""
    return [m.groupdict() for m in re.finditer(FINGERPRINT, text or "")]


def _side(f: dict) -> str:
    """``rank 2 runs ALLREDUCE seq 32 (shape [25], Float)``."""
    shape = f"shape {f['shape']}" if f["shape"] else ""
    tensor = ", ".join(x for x in (shape, (f["dtype"] or "").strip("[]")) if x)
    return (f"rank {f['rank']} runs {f['op']}" + (f" seq {f['seq']}" if f["seq"] is not None else "")
            + (f" ({tensor})" if tensor else ""))


def _sides_text(rep: pl.DataFrame) -> str:
    """The two sides of the first DETAIL report that prints them, said in the field's words (empty where
    no report names a fingerprint)."""
    # (one line holds both sides, or each side has its own line where the report was posted wrapped)
    sides = list({(f["rank"], f["seq"], f["op"]): f for text in rep["message"].to_list()
                  for f in fingerprints(text)}.values())
    if len(sides) >= 2:
        return f"{_side(sides[0])} while {_side(sides[1])}"
    if sides:
        return f"{_side(sides[0])}, and another rank runs another collective at that point"
    return ""


def _numbering_repeats(ev: Evidence, f) -> bool:
    """NCCL's COLL lines of one rank that give one opCount to different collectives of one communicator
    (not a zero-count call, which NCCL logs without counting): there the opCount numbers no sequence (samples/wild
    dv22-006, a trace whose every call reads `opCount 0`), so calls the alignment paired by it need not be
    the same point of the ranks' programs, and their differences are no mismatch."""
    if f.source != "nccl":
        return False
    calls = ev.store.collectives.filter((pl.col("source") == "nccl") & (pl.col("pg") == f.pg)
                                        & (pl.col("state") != "no-op") & pl.col("seq").is_not_null())
    if not calls.height:
        return False
    # (calls of one group, ncclGroupStart/End, may share an opCount: send/recv pairs, coalesced calls of one
    # op; two different collectives at one opCount are no group of those)
    calls = calls.filter(~pl.col("op").cast(pl.Utf8).is_in(["send", "recv"]))
    who_col = "rank" if calls["rank"].null_count() < calls.height else "pid"
    return calls.group_by(who_col, "comm", "seq").agg(pl.col("op").n_unique().alias("ops")).filter(
        pl.col("ops") > 1).height > 0


def mismatch_aligned(ev: Evidence) -> Verdict | None:
    """Ranks issued different ops, dtypes or sizes at one sequence number of a group -- not where NCCL's
    opCounts number no sequence (``_numbering_repeats``)."""
    if not ev.mismatches:
        return None
    f = ev.mismatches[0]
    if _numbering_repeats(ev, f):
        return None
    if _cuda_first(ev, f.missing + f.present):
        return None  # cuda_failure says it
    return Verdict(Kind.MISMATCH, f.message, f.missing, f.evidence)


def _wire_sizes(rep: pl.DataFrame) -> str:
    """NCCL's network transport's word that a peer sent more than this rank posted (`NET/Socket : peer
    A<p> message truncated : receiving N bytes instead of M`, net_socket.cc), as ``the peer A sent N bytes
    where M were posted to receive``; empty where no line says so."""
    for text in rep["message"].fill_null("").to_list():
        said = nccl_messages.meaning_of(text)
        if said and said[0].name == "socket_truncated":
            g = said[1]
            return (f"{'the peer ' + g['peer'] if 'peer' in g else 'a peer'} sent {g['got']} bytes where "
                    f"{g['expected']} were posted to receive")
    return ""


def mismatch_reported(ev: Evidence) -> Verdict | None:
    """The runtime caught the mismatch itself (TORCH_DISTRIBUTED_DEBUG=DETAIL, gloo's size check)."""
    rep = ev.reported_mismatch.sort("line")
    if not rep.height:  # (DDP's check of the model across ranks at construction)
        return rules_apart.model_differs(ev)
    r = rank_of(rep, ev)
    if _cuda_first(ev, r):
        return None
    at = rep.filter(pl.col("seq").is_not_null())
    named = rep.filter(pl.col("op").is_not_null())  # (a check that names the op alone: HCCL's tag, Horovod's)
    what = (f"{at['op'][0]} seq {at['seq'][0]}" if at.height else named["op"][0] if named.height
            else last_open(ev, r))
    unnamed = ("; no record here names the collective: a Flight Recorder dump (tracekit run) "
               "or TORCH_DISTRIBUTED_DEBUG=DETAIL names it")
    sides = _sides_text(rep)
    wire = _wire_sizes(rep)
    if wire:  # NCCL's own check of a receive's size: the two sizes and the peer are the fact
        return Verdict(Kind.MISMATCH, f"{who(r) + ': ' if r else ''}{wire} ({msg(rep, 0, 160)}): the ranks "
                       "called the collective or send/recv with different sizes (all_to_all splits, a "
                       "send/recv pair, NCCL_PROTO/NCCL_ALGO set differently), not a network fault"
                       + ("" if what else unnamed), r, lines(rep) + lines(ev.crashes, 2))
    if sides:  # c10d's own check printed each rank's collective: that is the fact
        return Verdict(Kind.MISMATCH, f"the ranks issued different collectives at one point: {sides} "
                       "(TORCH_DISTRIBUTED_DEBUG=DETAIL's check)", r, lines(rep) + lines(ev.crashes, 2))
    return Verdict(Kind.MISMATCH, f"{who(r) + ': ' if r else ''}the ranks' collectives no longer pair up"
                   + (f" at {what}" if what else "") + f" ({msg(rep, 0, 160)})" + ("" if what else unnamed),
                   r, lines(rep) + lines(ev.crashes, 2))


def mismatch_from_watchdog(ev: Evidence) -> Verdict | None:
    """Watchdog lines of several ranks name the same SeqNum of one group with different ops or sizes:
    the ranks are not in the same collective."""
    known = pl.col("seq").is_not_null() & pl.col("op").is_not_null() & pl.col("rank").is_not_null()
    wd = ev.kinds(EventKind.WATCHDOG_TIMEOUT).filter(known).with_columns(pl.col("pg").fill_null("0"))
    if wd.select("rank").n_unique() < 2:
        return None
    per = wd.group_by("pg", "seq").agg(pl.col("op").n_unique().alias("ops"),
                                       pl.col("numel").n_unique().alias("sizes"),
                                       pl.col("rank").n_unique().alias("n"),
                                       pl.col("op").first().alias("op0"))
    # ranks of an alltoall, gather or scatter may each send another number of elements; not those of
    # the flat-tensor forms (_ALLGATHER_BASE, _REDUCE_SCATTER_BASE: all_gather_into_tensor and
    # reduce_scatter_tensor), whose input and output are the same size on every rank
    flat = pl.col("op0").str.contains("(?i)_base$|into_tensor|scatter_tensor")
    sized = ~pl.col("op0").str.contains("(?i)alltoall|gather|scatter|coalesced") | flat
    bad = per.filter((pl.col("n") > 1) & ((pl.col("ops") > 1) | ((pl.col("sizes") > 1) & sized)))
    if not bad.height:  # (a gather's inputs of different sizes, its group size from NumelOut / NumelIn)
        v = rules_apart.sizes_differ(ev)
        return None if v is None or _cuda_first(ev, v.ranks) else v
    pg, seq = bad.row(0)[:2]
    at = wd.filter((pl.col("pg") == pg) & (pl.col("seq") == seq)).unique("rank", maintain_order=True)
    groups = at.group_by("op", "numel", maintain_order=True).agg(pl.col("rank").sort())
    said = "; ".join(f"{who(r)} ran {op.upper()} of {n} element(s)" for op, n, r in groups.iter_rows())
    odd = min(groups.iter_rows(), key=lambda g: len(g[2]))[2]
    if _cuda_first(ev, odd):
        return None
    return Verdict(Kind.MISMATCH,
                   f"process group {pg}: {seq_said(seq)} is not the same collective on every rank: {said}",
                   odd, lines(at, 6))


def mismatch_on_the_wire(ev: Evidence) -> Verdict | None:
    """NCCL's network transport saw a peer send another size than this rank posted (`collective
    mismatch error, local size A remote size B`, `message truncated: receiving A bytes instead of B`):
    the ranks issued different collectives, a mismatch seen from the wire, not a network fault."""
    t = ev.transport.filter(pl.col("message").str.contains(WIRE_MISMATCH)
                            & ~pl.col("where").fill_null("").str.contains(BOOTSTRAP)
                            & ~pl.col("message").str.contains(BOOTSTRAP)).sort("line")
    if not t.height:
        return None
    r = t["rank"].drop_nulls().unique().sort().to_list()
    return Verdict(Kind.MISMATCH, f"{who(r) if r else 'a rank'} received another size than it posted: "
                   f"{msg(t, 0, 160)}: the ranks issued different collectives (a size or op mismatch seen "
                   "by NCCL's network transport); TORCH_DISTRIBUTED_DEBUG=DETAIL or a Flight Recorder dump "
                   "names the collective", r, lines(t, 4))
