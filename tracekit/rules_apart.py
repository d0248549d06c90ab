"""Where the ranks' waits tell them apart: ranks that wait in different collectives (a mismatch seen from
the waits), and a group whose every member but one waits in one collective (the one never joined it).

Each function reads one kind of evidence and is called by the rule of its family (``rules_mismatch``,
``rules_stall``), at that rule's place in ``rules.RULES``:

- ``sequences_diverged``: c10d's watchdogs of one group time out at different SeqNums (a mismatch);
- ``sizes_differ``: c10d's watchdogs name one SeqNum of one group with input sizes a gather cannot have;
- ``horovod_apart``: Horovod's stall report lists ranks each missing a tensor the other submitted;
- ``one_rank_absent``: every rank of a group but one timed out in one collective, the one did not (said
  by ``timed_out``, which stays UNDECIDED: stuck or ended, only that rank's log says); where the group's
  size is not in view, ``lowest_unseen``: the one rank below the highest waiter that is not among them;
- ``model_differs``: DDP's check at construction found the ranks' models differ (a mismatch).
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.evidence import Evidence, clip, lines
from tracekit.facts_in_view import seq_said
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.wording import who

#: collectives that complete on no rank before every rank of the group joined them (c10d's OpType, lowercased)
ALL_JOIN = (r"^_?(?:allreduce|allgather|_?allgather_base|allgather_into_tensor|reduce_scatter"
            r"|_?reduce_scatter_base|reduce_scatter_tensor|alltoall|alltoall_base|barrier|allgather_coalesced"
            r"|allreduce_coalesced)$")
#: c10d's work print (ProcessGroupNCCL.cpp, WorkNCCL's operator<<: `WorkNCCL(SeqNum=49296,
#: OpType=_ALLGATHER_BASE, NumelIn=192, NumelOut=576, Timeout(ms)=1800000)`, torch >= 2.2)
NUMELS = r"NumelIn=(\d+), NumelOut=(\d+)"
#: ops whose output is the group's inputs side by side: NumelOut = group size x NumelIn on every rank
GATHERS = r"(?i)^_?allgather(?:_base|_into_tensor|_coalesced)?$|^coalesced$"


def in_unnamed_group() -> pl.Expr:
    """A watchdog line whose own ``[Rank 0]`` is not its global rank (``[rank2]:[E...] [Rank 0] Watchdog ...``)
    and that names no process group: it is of a sub-group the line does not name, its SeqNums count that
    group's works and compare with no other line's (samples/wild dv32-009: a tensor-parallel group's
    reduce-scatter SeqNum 112 beside another group's allreduce SeqNum 27)."""
    local = pl.col("message").fill_null("").str.extract(r"\[Rank (\d+)\]", 1).cast(pl.Int64, strict=False)
    return pl.col("pg").is_null() & local.is_not_null() & (local != pl.col("rank"))


def _watchdogs(ev: Evidence) -> pl.DataFrame:
    """c10d's watchdog timeouts that name a rank and a SeqNum, with each work's NumelIn and NumelOut where
    printed, the group as "0" where the line names none."""
    wd = ev.kinds(EventKind.WATCHDOG_TIMEOUT).filter(pl.col("seq").is_not_null() & pl.col("rank").is_not_null())
    sizes = pl.col("message").fill_null("").str.extract_groups(NUMELS).struct
    return wd.with_columns(pl.when(in_unnamed_group()).then(pl.format("an unnamed group of rank {}", "rank"))
                           .otherwise(pl.col("pg").fill_null("0")).alias("pg"),
                           sizes.field("1").cast(pl.Int64, strict=False).alias("numel_in"),
                           sizes.field("2").cast(pl.Int64, strict=False).alias("numel_out"))


def size_text(w: dict) -> str:
    """The size of a watchdog's work as c10d prints it (` (NumelIn 192, NumelOut 576: a gather over 3 ranks)`),
    empty where its line prints none (torch < 2.2)."""
    m = re.search(NUMELS, w.get("message") or "")
    if not m:
        return ""
    n_in, n_out = int(m[1]), int(m[2])
    gather = re.search(GATHERS, w.get("op") or "") and n_in and n_out % n_in == 0 and n_out // n_in > 1
    return f" (NumelIn {n_in}, NumelOut {n_out}" + (f": a gather over {n_out // n_in} ranks" if gather else "") + ")"


def _op(df: pl.DataFrame) -> str:
    return f" ({df['op'][0].upper()})" if df["op"][0] else ""


def sequences_diverged(ev: Evidence) -> Verdict | None:
    """The watchdogs of one process group's ranks time out at different SeqNums (`[Rank 0] ...
    WorkNCCL(SeqNum=7559, OpType=_ALLGATHER_BASE` and `[Rank 1] ... WorkNCCL(SeqNum=7561, ...`): a rank's
    oldest unfinished collective is its group's Nth, another's the (N+k)th, so one issued k collectives of
    the group the other did not (a collective called on some ranks only): at one point of the group the
    ranks issued different collectives, a mismatch, and each now waits in one its peers never join."""
    # (only collectives no rank completes before every rank joined: a broadcast's or reduce's root, a send,
    # may finish its part and go on to the next while its peers still wait in it)
    wd = _watchdogs(ev).filter(pl.col("op").fill_null("").str.contains(ALL_JOIN))
    # (c10d's own count of the works each rank enqueued, where it says it, and says it the same: no rank
    # issued more than another)
    said = ev.timeouts.filter(pl.col("last_enqueued").is_not_null() & pl.col("rank").is_not_null())
    if said.height and said["last_enqueued"].n_unique() == 1 and said["rank"].n_unique() > 1:
        return None
    # one SeqNum per rank and group: a rank whose watchdog names several is one of several groups whose
    # lines do not name theirs (torch < 2.2: `[Rank 0]` alone), and SeqNums of different groups do not compare
    per = wd.unique(["pg", "rank", "seq"]).sort("pg", "rank")
    for (pg,), g in per.group_by(["pg"], maintain_order=True):
        low, top = g["seq"].min(), g["seq"].max()
        if g.height < 2 or low == top or g["rank"].n_unique() < g.height:
            continue
        behind, ahead = g.filter(pl.col("seq") == low), g.filter(pl.col("seq") == top)
        b, a = behind["rank"].to_list(), ahead["rank"].to_list()
        return Verdict(Kind.MISMATCH, f"process group {pg}: the ranks' sequences of collectives diverged: "
                       f"{who(b)} timed out in {seq_said(low)}{_op(behind)} while {who(a)} timed out in "
                       f"{seq_said(top)}{_op(ahead)}: {who(a)} had issued {top - low} more collective(s) of the "
                       f"group than {who(b)} (a collective called on some ranks only: a branch on the rank, a "
                       "hook, a log or a checkpoint of rank 0 alone), so each waits in a collective its "
                       "peers never join; TORCH_DISTRIBUTED_DEBUG=DETAIL names the diverging call",
                       sorted(set(b) | set(a)), lines(behind, 2) + lines(ahead, 2))
    return None


def sizes_differ(ev: Evidence) -> Verdict | None:
    """The watchdogs of one group's ranks name one SeqNum of a gather (`OpType=COALESCED, NumelIn=56320,
    NumelOut=450560` on one rank, `NumelIn=107520, NumelOut=860160` on another): every rank's output is the
    group's inputs side by side (NumelOut = group size x NumelIn, the same multiple on each), so the inputs
    must be of one size; ranks whose inputs differ are not in the same collective."""
    wd = _watchdogs(ev).filter(pl.col("numel_in").is_not_null() & (pl.col("numel_in") > 0)
                               & pl.col("op").fill_null("").str.contains(GATHERS))
    wd = wd.with_columns((pl.col("numel_out") // pl.col("numel_in")).alias("_n"),
                         (pl.col("numel_out") % pl.col("numel_in")).alias("_rest"))
    per = wd.unique(["pg", "seq", "rank"], maintain_order=True)
    for (pg, seq), g in per.group_by(["pg", "seq"], maintain_order=True):
        if (g["rank"].n_unique() < 2 or g["numel_in"].n_unique() < 2 or g["_n"].n_unique() != 1
                or g["_n"][0] < 2 or g["_rest"].max() != 0):
            continue
        groups = g.group_by("numel_in", maintain_order=True).agg(pl.col("rank").sort(), pl.col("op").first())
        said = "; ".join(f"{who(r)} gathered {n} element(s) each" for n, r, _ in groups.iter_rows())
        odd = min(groups.iter_rows(), key=lambda x: len(x[1]))[1]
        return Verdict(Kind.MISMATCH, f"process group {pg}: {seq_said(seq)}{_op(g)} is not the same collective "
                       f"on every rank: {said}, in a group of {g['_n'][0]} (NumelOut = {g['_n'][0]} x NumelIn "
                       "on each): a gather's inputs are one size on every rank, so the ranks issued different "
                       "collectives at this point (different parameter groups or buckets); "
                       "TORCH_DISTRIBUTED_DEBUG=DETAIL names the call", odd, lines(g, 4))
    return None


# Horovod's stall report (github:horovod/horovod horovod/common/stall_inspector.cc, CheckForStalledTensors,
# at 0f37436: lines ~53-55 put a tensor under every rank not ready in it, `missing_ranks[rank].insert(name)`;
# lines ~74-90 print `Missing ranks:` then `R: [NAME, NAME ...]` per rank, the names a sorted std::set cut
# after six with ` ...`): a name under rank A and not under rank B is one B submitted and A did not.
NAMES = r"\[([^\]]*)\]"


def _names(message: str) -> tuple[list[str], bool]:
    """The tensor names of one `R: [A, B ...]` line, and whether the list was cut (` ...`)."""
    m = re.search(NAMES, message or "")
    if not m:
        return [], False
    body = m.group(1).strip()
    cut = body.endswith("...")
    return [x.strip() for x in body.removesuffix("...").split(",") if x.strip()], cut


def _submitted(name: str, shown: list[str], cut: bool) -> bool:
    """Whether a rank whose missing list is ``shown`` (cut or not) surely submitted ``name``."""
    return name not in shown and (not cut or (bool(shown) and name < max(shown)))


def _reports(ev: Evidence) -> list[dict[int, tuple[list[str], bool, dict]]]:
    """Horovod's stall reports in order: each a map rank -> (the names it is missing, whether the list was
    cut, its row). A report is the lines after one stall warning of the file (a file without the warning's
    line is one report)."""
    rm = ev.kinds(EventKind.RANK_MISSING).filter((pl.col("where") == "horovod") & pl.col("rank").is_not_null()
                                                 & pl.col("message").fill_null("").str.contains(NAMES))
    heads = ev.stalls.filter(pl.col("where") == "horovod").select("file", "line")
    out: dict[tuple, dict] = {}
    for r in rm.sort("file", "line").iter_rows(named=True):
        starts = heads.filter((pl.col("file") == r["file"]) & (pl.col("line") < r["line"]))["line"]
        key = (r["file"], starts.max() if starts.len() else -1)
        names, cut = _names(r["message"])
        out.setdefault(key, {})[r["rank"]] = (names, cut, r)
    return list(out.values())


def horovod_apart(ev: Evidence) -> Verdict | None:
    """Horovod's stall report lists two ranks each missing a tensor the other submitted (`0:
    [broadcast.bool.sz]`, `1: [allreduce.c_d1.bias, ...]`): rank 0 submitted the allreduce and waits in it,
    rank 1 the broadcast: at one point the ranks submitted different collectives, and each waits for the
    other forever (a mismatch; Horovod's own words: "different ranks are trying to submit different
    tensors"). A rank surely submitted a stalled tensor where a report lists the tensor and not the rank
    (a rank missing nothing is not listed), or lists the rank without it (within the names a cut list shows)."""
    reports = _reports(ev)
    ranks = {r for rep in reports for r in rep}
    if len(ranks) < 2:
        return None
    sent: dict[int, set[str]] = {r: set() for r in ranks}  # a stalled tensor stays submitted until it runs
    for rep in reports:
        stalled = {n for names, _, _ in rep.values() for n in names}
        for r in ranks:
            names, cut, _ = rep.get(r, ([], False, None))
            sent[r] |= {n for n in stalled if _submitted(n, names, cut)}
    last = reports[-1]
    for a in sorted(last):
        for b in sorted(last):
            if a >= b:
                continue
            (na, _, ra), (nb, _, rb) = last[a], last[b]
            x = next((n for n in na if n in sent[b]), None)  # b submitted it, a did not
            y = next((n for n in nb if n in sent[a]), None)  # a submitted it, b did not
            if x and y:
                return Verdict(Kind.MISMATCH, f"the ranks submitted different collectives (Horovod's stall "
                               f"report): rank {a} is missing {x}, which rank {b} submitted, while rank {b} is "
                               f"missing {y}, which rank {a} submitted: each waits in a collective the other "
                               "never joins (a collective called on some ranks only, or in another order: a "
                               "callback's broadcast on one rank while another is in the step's allreduce)",
                               [a, b], lines(pl.DataFrame([ra, rb]), 2) + lines(ev.stalls, 1))
    return None


def _group_size(g: pl.DataFrame, ev: Evidence) -> int | None:
    """The size of the group a gather runs in (NumelOut / NumelIn, one multiple on every rank), else the
    world's where the group is the default one."""
    n = g.filter(pl.col("numel_in") > 0).select((pl.col("numel_out") // pl.col("numel_in")).alias("n"),
                                                (pl.col("numel_out") % pl.col("numel_in")).alias("r"))
    if n.height and n["n"].n_unique() == 1 and n["r"].max() == 0 and g["op"].fill_null("").str.contains(
            GATHERS).all():
        return n["n"][0]
    return ev.coverage.world_size if g["pg"][0] == "0" else None


def one_rank_absent(ev: Evidence) -> str:
    """Every rank of a group but one timed out in the same collective (one SeqNum, an op no rank completes
    before all joined), at least two of them, and the one left no timeout of its own: had it been in the
    collective, its watchdog would have fired with theirs, so it never issued it. Said, not decided: where
    that rank is (stuck in its own work, a deadlock; or ended, a crash) only its own log says, and on dev
    the two are alike (dv14-025: rank 0 stuck talking to a server; dv10-032: rank 0 failed in a checkpoint
    save; neither shows rank 0). Empty where the waits do not show it. (Two ranks of three seen is the
    least: one rank of two seen is as often a paste of one rank's log.)"""
    found = absent_one(ev)
    if found is None:
        return lowest_unseen(ev)
    absent, n, seen, w = found
    size = (f"NumelOut {w['numel_out']} = {n} x NumelIn {w['numel_in']}" if w["numel_in"] and
            w["numel_out"] == n * w["numel_in"] else "the world's size")
    return (f"rank {absent} never joined {(w['op'] or '').upper()} {seq_said(w['seq'])}: {who(seen)} are every "
            f"other rank of the group of {n} ({size}) and rank {absent} did not time out with them; whether it "
            f"is stuck elsewhere (a deadlock) or ended (a crash) only its own log says")


def lowest_unseen(ev: Evidence) -> str:
    """Where the group's size is not in view: two ranks or more of the default group time out in one
    collective and exactly one rank below the highest of them is not among them (ranks 1-3 seen, rank 0
    not; ranks 0, 1 and 3, rank 2 not): that rank exists, and had it been in the collective its watchdog
    would have fired with theirs. Said, not decided (the world may hold more ranks above, unseen as well;
    a broadcast's root may have finished its part): the rank to look at first, by number, which the waits
    alone do not give (samples/wild dv34-002: ranks 1-3 wait in BROADCAST SeqNum 1, rank 0 still busy
    with its dataset). Empty where the waits leave none, or several, unseen."""
    found = unseen_below(ev)
    if found is None:
        return ""
    unseen, seen, w = found
    root = "" if re.search(ALL_JOIN, w["op"] or "") else " (unless it was the root and finished its part)"
    return (f"rank {unseen} is the one rank up to rank {seen[-1]} not seen timing out in {work_said(w)} with "
            f"{who(seen)}: had it been in it, its watchdog would have fired with theirs{root}; whether it is "
            f"stuck elsewhere (a deadlock) or ended (a crash) only its own log says")


def work_said(w: dict) -> str:
    """A time-out's work as c10d names it: ``ALLREDUCE SeqNum=5``, or ``work SeqNum=5`` where no op is said."""
    return f"{w['op'].upper()} {seq_said(w['seq'])}" if w["op"] else f"work {seq_said(w['seq'])}"


def unseen_below(ev: Evidence) -> tuple[int, list[int], dict] | None:
    """``lowest_unseen``'s reading: the one rank unseen, the ranks that timed out and the first of their
    lines; None where the waits leave none, or several, unseen."""
    # (c10d's watchdog lines and its PG-status lines alike: each names the work its rank waits in)
    wd = ev.timeouts.filter(pl.col("seq").is_not_null() & pl.col("rank").is_not_null()).with_columns(
        pl.when(in_unnamed_group()).then(pl.lit("unnamed")).otherwise(pl.col("pg").fill_null("0")).alias("pg"))
    if not wd.height or wd.select("pg", "seq").unique().height != 1 or wd["pg"][0] != "0":
        return None
    seen = sorted(set(wd["rank"].to_list()))
    sized = _watchdogs(ev)
    n = (_group_size(sized, ev) if sized.height else None) or ev.coverage.world_size or 0
    # (a group's size in view counts the ranks above the highest waiter too: dv8-052, ranks 0 and 2 of 4)
    unseen = sorted(set(range(max(seen[-1] + 1, n))) - set(seen))
    if len(seen) < 2 or len(unseen) != 1:
        return None
    return unseen[0], seen, wd.sort("file", "line").row(0, named=True)


def absent_one(ev: Evidence) -> tuple[int, int, list[int], dict] | None:
    """``one_rank_absent``'s reading: the rank absent from the collective, the group's size, the ranks that
    timed out in it and the first of their watchdog lines; None where the waits do not show one."""
    wd = _watchdogs(ev).filter(pl.col("op").fill_null("").str.contains(ALL_JOIN))
    if not wd.height or _watchdogs(ev)["rank"].n_unique() != wd["rank"].n_unique():
        return None
    if wd.select("pg", "seq").unique().height != 1:  # (one collective; several are the other rules')
        return None
    n = _group_size(wd, ev)
    seen = sorted(set(wd["rank"].to_list()))
    if not n or len(seen) != n - 1 or len(seen) < 2 or not set(seen) <= set(range(n)):
        return None
    (absent,) = sorted(set(range(n)) - set(seen))
    return absent, n, seen, wd.sort("file", "line").row(0, named=True)


# DDP's check of the model across ranks at construction (pytorch/pytorch torch/csrc/distributed/c10d/reducer.cpp,
# verify_params_across_processes, at ad78a7b: an allgather of each rank's parameter count, then `DDP expects same
# model across all ranks, but Rank 1 has 212 params, while rank 0 has inconsistent 0 params.`; then a broadcast
# of rank 0's sizes and strides, `[1]: params[3] in this process with sizes [512, 256] appears not to match
# sizes of the same param in process 0.` (`params[3] ... match strides ...`; torch < 1.11 `replicas[0][3] ...`)
DDP_COUNT = (r"DDP expects same model across all ranks, but Rank (?P<rank>\d+) has (?P<n>\d+) params, while rank "
             r"(?P<other>\d+) has inconsistent (?P<m>\d+) params")
DDP_SHAPE = (r"(?:\[(?P<rank>\d+)\]: )?(?:params|replicas\[0\])\[(?P<p>\d+)\] in this process with sizes "
             r"(?P<sizes>\[[^\]]*\]) appears not to match (?P<what>sizes|strides) of the same param in process 0")


def model_differs(ev: Evidence) -> Verdict | None:
    """DDP's own check found the ranks' models differ (another parameter count, or a parameter of another
    size or stride than rank 0's): the ranks would issue gradient all-reduces of different sizes, a mismatch
    caught before the first step."""
    said = pl.col("message").fill_null("")
    hit = ev.store.events.filter(said.str.contains(DDP_COUNT) | said.str.contains(DDP_SHAPE)).sort("file", "line")
    if not hit.height:
        return None
    text = hit["message"][0]
    m = re.search(DDP_COUNT, text)
    if m:
        fact = (f"rank {m['rank']} has {m['n']} params while rank {m['other']} has {m['m']} (DDP expects same "
                "model across all ranks)")
        ranks = sorted({int(m["rank"]), int(m["other"])})
    else:
        m = re.search(DDP_SHAPE, text)
        rank = f"rank {m['rank']}" if m["rank"] else "a rank"
        fact = (f"{rank}'s params[{m['p']}] with sizes {m['sizes']} does not match the {m['what']} of the same "
                "parameter in process 0")
        ranks = [int(m["rank"])] if m["rank"] else []
    return Verdict(Kind.MISMATCH, f"the ranks built different models: {fact} (DDP's check of the model across "
                   "ranks at construction): their gradient all-reduces would not pair up; a model built from "
                   "rank-dependent config, data or a branch on the rank (rank 0 alone loading or creating "
                   "layers)", ranks, lines(hit, 3))


#: a state dump's words of whom a rank's pending transfer waits for: RCCL/NCCL proxy state as people annotate
#: it (`RECV ch=1: base=1150 posted=1 recvd=0 (waiting on rank 1 SEND ch=1)`, samples/wild nccl-047, from a
#: gdb walk of ncclProxyArgs: base/posted/received/transmitted/done are its step counters), or any line that
#: says a rank waits on a peer rank to send or act (`waiting for rank 3`): the rank named is the one behind.
#: Not a harness's or launcher's wait for a process to end or start (`Timeout waiting for rank 1 to
#: terminate`, PyTorch's test harness: that process hung, said by the harness rules)
WAITS_ON = r"(?i)\bwait(?:ing|s)? (?:on|for) (?:rank|peer) ?(?P<rank>\d+)\b"
PROCESS_WAIT = r"(?i)\bwait(?:ing|s)? (?:on|for) (?:rank|peer) ?\d+\s+to (?:terminate|exit|start|join|connect)"
#: the step counter a proxy state line shows (`base=1150`): how far that connection got
STEP = r"\bbase=(\d+)"


def waits_on_named_rank(ev: Evidence) -> Verdict | None:
    """DEADLOCK where a state dump says a rank waits on a named peer rank (``WAITS_ON``) and nothing in the
    evidence says a failure (an error, a crash, a transport error, an exit): the rank named never sent what
    the others' transfers wait for. (A dump that names no rank, or one beside a failure, the other rules read.)"""
    if ev.crashes.height or ev.transport.height or ev.exits.height or ev.cuda.height or ev.finished:
        return None
    said = pl.col("message").fill_null("")
    hit = (ev.kinds(EventKind.TELLING_LINE).filter(said.str.contains(WAITS_ON)
                                                       & ~said.str.contains(PROCESS_WAIT)).sort("file", "line"))
    if not hit.height:
        return None
    named = sorted({int(r) for r in hit["message"].str.extract(WAITS_ON, 1).drop_nulls().to_list()})
    steps = sorted({int(x) for x in ev.kinds(EventKind.TELLING_LINE)["message"].str.extract(STEP, 1)
                    .drop_nulls().to_list()})
    at = (f"; its connections stand at step{'s' if len(steps) > 1 else ''} "
          f"{', '.join(f'base={x}' for x in steps)}" if steps else "")
    return Verdict(Kind.DEADLOCK, f"a state dump shows transfers waiting on {who(named)} "
                   f"(`{clip(hit['message'][0].strip(), 140)}`){at}, and no error, crash or exit is logged: the "
                   f"transfers between the ranks stopped, {who(named)}'s side never posted what the others wait "
                   f"for; {who(named)}'s own state (py-spy dump --native, its proxy state, NCCL_DEBUG=INFO "
                   "with NCCL_DEBUG_SUBSYS=COLL on every rank) says whether it never issued that collective or "
                   "its transfer is stuck", named, lines(hit, 3))
