"""The evidence a verdict is reached from, computed once from a store, and how much of the job it covers.

Rules (``tracekit.rules``) read only this object: failures, their consequences, exits, timeouts,
transport errors, benign notes, pending inits, stacks, alignment findings, progress, a clean end, and
the coverage: the world size, the ranks seen, from which sources each rank is seen, and which ranks
left no record at all.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cached_property

import polars as pl

from tracekit import align, pace, sources
from tracekit.meanings import (BENIGN, CONSEQUENCE, CUDA, MISMATCH_TEXT, NCCL_ERROR,  # noqa: F401
                               NETWORK_FAIL, RENDEZVOUS, STORE_BARRIER, TERMINATE, BOOTSTRAP, WIRE_MISMATCH,
                               HEARTBEAT, WATCHDOG_ABORT_SIGNAL, says)
from tracekit.nccl_messages import OWN_FAILURE, UNDECIDED as UNDECIDED_MESSAGE, is_one_of, reads_as
from tracekit.outcome import Cited, Coverage, EventKind, Finding, Match
from tracekit.parsers.pyspy import GDB_WAIT, RAISED
from tracekit.store import Store

NETWORK_SETTINGS = (r"^(?:NCCL_SOCKET_IFNAME|NCCL_SOCKET_FAMILY|GLOO_SOCKET_IFNAME|NCCL_IB_\w+|NCCL_NET\w*"
                    r"|NCCL_P2P_DISABLE|NCCL_SHM_DISABLE)=")
KILL_CODES = {124, 143, -15, -2, 130}  # `timeout`, SIGTERM, SIGINT: someone asked it to stop
SIGKILL_CODES = {-9, 137}  # nobody asks politely with SIGKILL: mostly the kernel's OOM killer
C10D_FRAME = (r"distributed_c10d|deepspeed/comm|torch/distributed/(?:_functional|nn|fsdp|algorithms)|c10d"
              r"|\bnccl(?:AllReduce|AllGather|ReduceScatter|Broadcast|Reduce|Send|Recv|GroupEnd)\b"
              r"|libr?ccl\.so")
# a frame of the standard library: py-spy's `threading.py:327`, faulthandler's `/usr/lib/python3.11/...`
STDLIB_FRAME = (r"\((?:<frozen |(?:" + "|".join(sorted(sys.stdlib_module_names)) + r")(?:\.py)?[/:])"
                r"|/lib/python3\.\d+/(?:[^/]+/)*[^/]+\.py:")
SITE = r"site-packages|dist-packages"


WRONG_VALUES = "wrong values in nccl-tests' results"

#: the event kinds that are not calm: with any of them (not benign), progress alone does not say healthy
TROUBLE = ("crash", "exception", "cuda_error", "watchdog_timeout", "watchdog_status", "watchdog_abort",
           "c10d_error", "collective_mismatch", "gloo_size_mismatch", "child_failed", "rank_exit", "signal",
           "closing_signal", "job_cancelled", "transport_error", "connect_retry", "nccl_warn", "nccl_unwind",
           "stall", "rank_missing")


def own_frame() -> pl.Expr:
    """A stack event's innermost frame of the program or a library (standard-library frames skipped,
    installed packages kept), else its ``where``: a rank waiting in wandb.init reads as wandb, not as
    threading.Condition.wait."""
    stdlib = pl.element().str.contains(STDLIB_FRAME) & ~pl.element().str.contains(SITE)
    # (and a native frame that says only that the thread waits, or an address gdb could not name)
    stdlib = stdlib | pl.element().str.contains(r"^(?:\?\?|0x[0-9a-fA-F]+) \(") | (
        pl.element().str.extract(r"^(\S+) \(", 1).str.contains(GDB_WAIT).fill_null(False))
    own = pl.col("frames").str.split(" <- ").list.eval(pl.element().filter(~stdlib)).list.first()
    return pl.coalesce(own, "where")


def clip(text: str | None, n: int = 200) -> str:
    """``text`` stripped, cut at a word boundary before ``n`` characters with an ellipsis (never mid-word)."""
    text = (text or "").strip()
    if len(text) <= n:
        return text
    cut = text[:n].rsplit(" ", 1)[0]
    return (cut if len(cut) > n // 2 else text[:n]).rstrip(" ,;:(") + " ..."


def lines(df: pl.DataFrame, n: int = 6) -> list[Cited]:
    """Evidence lines (file, line, message) of the first ``n`` rows."""
    return [Cited(r["file"], r["line"], clip(r["message"])) for r in df.head(n).iter_rows(named=True)]


#: how coverage names the sources a rank is seen from
SOURCE_WORDS = {"fr": "Flight Recorder", "nccl": "NCCL log", "kineto": "Kineto", "kineto-gpu": "Kineto",
                "tracekit": "stdout", "deepspeed": "stdout", "log": "stdout", "stacks": "stack dump",
                "torchrun": "torchrun's error block",
                "nccl-count": "NCCL COLL lines (numbered by count, not named)",
                "nccl-tests": "nccl-tests header", "launcher": "launcher prefix",
                "fr-trace": "torchfrtrace report",
                "nccl-ras": "NCCL RAS report", "c10d": "c10d log"}


def coverage(store: Store) -> Coverage:
    ranks, ev = store.ranks, store.events
    # the collectives (the big table, maybe scanned from disk) once: each rank's sources, the largest group
    coll = align.collect(store.collectives.lazy().group_by("rank", "source").agg(pl.col("nranks").max()))
    sizes = [ranks["world_size"].max(), store.comms["nranks"].max(), coll["nranks"].max(),
             align.group_members(store)["members"].list.max().max()]
    world = max((int(s) + (1 if i == 3 else 0) for i, s in enumerate(sizes) if s is not None), default=None)
    src = [coll.select("rank", pl.col("source").cast(pl.Utf8)),
           # (a rank reported missing is spoken of, not seen)
           ev.filter(pl.col("kind") != EventKind.RANK_MISSING)
           .select("rank", pl.when(pl.col("kind") == EventKind.STACK).then(pl.lit("stacks"))
                   .otherwise(pl.lit("log")).alias("source")),
           ranks.select("rank", pl.col("source").str.split(",")).explode("source")]
    per = (pl.concat([s.filter(pl.col("rank").is_not_null()) for s in src], how="vertical_relaxed")
           .with_columns(pl.col("source").replace(SOURCE_WORDS))
           .unique().group_by("rank").agg(pl.col("source").sort()).sort("rank"))
    sources = {r: s for r, s in per.iter_rows()}
    # processes that wrote lines and that no source ties to a rank: counted, never given a guessed rank
    procs = [t.filter(pl.col("rank").is_null() & pl.col("pid").is_not_null())
             .select("host", pl.col("pid").cast(pl.Int64)) for t in (ev, ranks)]
    named = ranks.filter(pl.col("rank").is_not_null() & pl.col("pid").is_not_null()).select(
        "host", pl.col("pid").cast(pl.Int64))
    unranked = pl.concat(procs).unique().join(named, on=["host", "pid"], how="anti", nulls_equal=True).height
    seen = sorted(sources)
    if world is not None and seen and max(seen) >= world:
        world = None  # the sizes logged are of a subgroup: the world's is not known
    return Coverage(world, seen, sources, unranked)


@dataclass
class Evidence:
    """Everything the rules look at, computed once."""

    store: Store
    findings: list[Finding] = field(default_factory=list)
    windows: list = field(default_factory=list)  # FR windows shown healthy (fr_checks.HealthyWindow)

    @classmethod
    def gather(cls, store: Store) -> "Evidence":
        findings = []
        for source in sources.NAMES:
            findings += align.find(store, source)
        # the FR analyzer's checks (fr_checks) after align's: where both see a collective differ, align's
        # finding names each side's tensor; the checks add what align does not compare (output sizes,
        # all_to_all totals, p2p pairs, coalesced groups, state) and the healthy windows
        checked, windows = sources.fr.checks(store)
        return cls(store, findings + checked + align.unranked_mismatches(store), windows)

    def kinds(self, *kinds: str) -> pl.DataFrame:
        return self.store.events.filter(pl.col("kind").is_in(kinds))

    # --- the job's extent -------------------------------------------------------------------
    @cached_property
    def coverage(self) -> Coverage:
        return coverage(self.store)

    # --- alignment --------------------------------------------------------------------------
    @property
    def mismatches(self) -> list[Finding]:
        kinds = (Match.OP_TYPE, Match.DTYPE, Match.SIZE, Match.SHAPE, Match.P2P_SIZE, Match.COALESCED)
        # (a state that differs at the tail, where a rank is missing, is the missing rank's consequence)
        kinds += () if self.missing else (Match.STATE,)
        return [f for f in self.findings if f.op and f.kind in kinds]

    @property
    def missing(self) -> list[Finding]:
        """Recorded ranks behind their group: they never issued a collective the others did."""
        return [f for f in self.findings if f.kind in (Match.MISSING, Match.RANK_ABSENT)]

    @property
    def silent(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == Match.NO_RECORD]

    # --- failures ---------------------------------------------------------------------------
    @cached_property
    def cuda(self) -> pl.DataFrame:
        return self.store.events.filter((pl.col("kind") == EventKind.CUDA_ERROR) | (
            pl.col("kind").is_in([EventKind.CRASH, EventKind.EXCEPTION, EventKind.C10D_ERROR,
                                  EventKind.NCCL_WARN])
            & says("cuda") & ~says("nccl_error"))).sort("line")

    @cached_property
    def consequences(self) -> pl.DataFrame:
        """Lines that report a failure elsewhere: the watchdog's abort, a peer's closed socket."""
        return self.store.events.filter((pl.col("kind") == EventKind.WATCHDOG_ABORT) | (
            pl.col("kind").is_in([EventKind.CRASH, EventKind.EXCEPTION]) & says("consequence")))

    @cached_property
    def crashes(self) -> pl.DataFrame:
        """Primary failures: a crash, a signal that is not a stop request, an exception that is not
        itself a timeout, a consequence, NCCL's error code (its WARN says why) or the rendezvous."""
        ev = self.store.events
        c = ev.filter(
            (pl.col("kind").is_in([EventKind.CRASH, EventKind.CUDA_ERROR])
             | ((pl.col("kind") == EventKind.SIGNAL) & ~says("stop_signal"))
             | (pl.col("kind") == EventKind.EXCEPTION))
            & ~says("consequence") & ~says("nccl_error") & ~says("rendezvous")
            & ~says("mismatch")).sort("line")
        if self.timeouts.height:
            c = c.filter(~says("terminate"))
            # the watchdog aborts a rank whose collective timed out (SIGABRT, exit -6): its own end,
            # a consequence of the wait, never the cause
            waited = self.timeouts["rank"].drop_nulls().unique().implode()
            c = c.filter(~(says("abort_signal")
                           & (pl.col("rank").is_in(waited) | pl.col("rank").is_null())))
        return c

    @cached_property
    def nccl_errors(self) -> pl.DataFrame:
        """NCCL's error codes as the program reports them (the cause is in NCCL's WARN lines)."""
        kinds = [EventKind.CRASH, EventKind.EXCEPTION, EventKind.C10D_ERROR, EventKind.WATCHDOG_ABORT]
        return self.store.events.filter(pl.col("kind").is_in(kinds) & says("nccl_error")).sort("line")

    @cached_property
    def rendezvous(self) -> pl.DataFrame:
        kinds = [EventKind.CRASH, EventKind.EXCEPTION, EventKind.C10D_ERROR]
        return self.store.events.filter(pl.col("kind").is_in(kinds) & says("rendezvous")).sort("line")

    @cached_property
    def exits(self) -> pl.DataFrame:
        """Non-zero exits of ranks (torchrun's error block, `failed (exitcode: N)`)."""
        return self.kinds(EventKind.RANK_EXIT, EventKind.CHILD_FAILED).filter(
            pl.col("exit_code").is_not_null() & (pl.col("exit_code") != 0))

    @cached_property
    def root_cause_rank(self) -> int | None:
        """The rank of torchrun's "Root Cause (first observed failure)" block (printed after the other
        failures' blocks), else the first rank_exit in line order."""
        first = pl.col("where").fill_null("").str.contains("first observed")
        ex = (self.kinds(EventKind.RANK_EXIT).filter(pl.col("rank").is_not_null())
              .sort(first, "file", "line", descending=[True, False, False]))
        return ex["rank"][0] if ex.height else None

    @cached_property
    def timeouts(self) -> pl.DataFrame:
        return self.store.events.filter(
            pl.col("kind").is_in([EventKind.WATCHDOG_TIMEOUT, EventKind.WATCHDOG_STATUS]) | (
                pl.col("kind").is_in([EventKind.EXCEPTION, EventKind.TRANSPORT_ERROR, EventKind.CRASH,
                                      EventKind.WATCHDOG_ABORT])
            & says("timeout")))

    @cached_property
    def benign(self) -> pl.DataFrame:
        warns = self.kinds(EventKind.BENIGN_WARN, EventKind.NCCL_WARN, EventKind.TRANSPORT_ERROR)
        return warns.filter((pl.col("kind") == EventKind.BENIGN_WARN) | says("benign"))

    @cached_property
    def transport(self) -> pl.DataFrame:
        """Transport errors, connect retries and NCCL WARNs that are neither a consequence nor benign
        (a connect that timed out is the network's failure, not a collective's timeout)."""
        t = self.kinds(EventKind.TRANSPORT_ERROR, EventKind.CONNECT_RETRY, EventKind.NCCL_WARN)
        t = t.filter((~says("consequence") | says("network_fail")) & ~says("cuda"))
        # (an NCCL message that alone decides nothing, an address of no network family, is not the network's)
        t = t.filter(~reads_as(UNDECIDED_MESSAGE).fill_null(False))
        # (nor NCCL refusing the program's own call, two ranks on one GPU: the rank's error, not the network)
        t = t.filter(~is_one_of(OWN_FAILURE))
        return t.join(self.benign.select("file", "line"), on=["file", "line"], how="anti")

    @cached_property
    def network_settings(self) -> pl.DataFrame:
        return self.kinds(EventKind.SETTING).filter(pl.col("message").str.contains(NETWORK_SETTINGS))

    @property
    def launched_with(self) -> str:
        """The network settings of the launch, as ``A=1; B=2`` (empty where none was logged)."""
        return "; ".join(sorted(set(self.network_settings["message"].to_list())))

    @cached_property
    def reported_mismatch(self) -> pl.DataFrame:
        return self.store.events.filter(
            pl.col("kind").is_in([EventKind.COLLECTIVE_MISMATCH, EventKind.GLOO_SIZE_MISMATCH]) | (
                pl.col("kind").is_in([EventKind.EXCEPTION, EventKind.CRASH, EventKind.C10D_ERROR])
                & says("mismatch")))

    @cached_property
    def pending(self) -> pl.DataFrame:
        """Communicators whose Init START has no Init COMPLETE."""
        init = self.store.comms.filter(pl.col("state").is_in(["init_start", "init_complete"]))
        return (init.group_by("host", "pid", "comm").agg(
            (pl.col("state") == "init_complete").any().alias("done"),
            pl.coalesce("global_rank", "rank").first().alias("rank"), pl.col("file").first(),
            pl.col("line").first(), pl.col("nranks").first()).filter(~pl.col("done")).sort("file", "line"))

    @cached_property
    def init_started(self) -> list[int]:
        init = self.store.comms.filter(pl.col("state").is_in(["init_start", "init_complete"]))
        return init.select(pl.coalesce("global_rank", "rank"))["global_rank"].drop_nulls().unique().to_list()

    @cached_property
    def stacks(self) -> pl.DataFrame:
        """The main thread's innermost frame of the program or a library per rank (or pid): a rank
        waiting in wandb.init reads as wandb, not as threading.Condition.wait."""
        st = self.store.events.filter((pl.col("kind") == EventKind.STACK) & (pl.col("thread") != RAISED))
        st = st.with_columns(own_frame().alias("where"))
        st = st.with_columns(pl.col("where").str.contains(C10D_FRAME).fill_null(False).alias("in_c10d"),
                             pl.col("thread").str.extract(r"thread (\S+)", 1).alias("tid"))
        main = pl.col("thread").str.starts_with("MainThread")
        # a dump with no main thread named (gdb's threads of a process whose thread 1 was not pasted): its
        # threads that wait in a collective say where the process is
        named = st.filter(main).select("file").unique()
        return pl.concat([st.filter(main), st.join(named, on="file", how="anti").filter(
            pl.col("in_c10d") & ~pl.col("thread").str.starts_with("C++ frames"))])

    @cached_property
    def cancelled(self) -> pl.DataFrame:
        return self.kinds(EventKind.JOB_CANCELLED)

    @cached_property
    def stalls(self) -> pl.DataFrame:
        """Stall markers not followed by progress: tracekit run's own notes, reported hangs."""
        notes = self.kinds(EventKind.RUN_NOTE, EventKind.STALL).sort("file", "line")
        resumed = notes.filter(pl.col("message").str.starts_with("progress again"))
        stalls = notes.filter((pl.col("kind") == EventKind.STALL)
                              | pl.col("message").str.starts_with("stall:"))
        if resumed.height and stalls.height:
            last_resume = resumed.group_by("file").agg(pl.col("line").max().alias("_r"))
            stalls = stalls.join(last_resume, on="file", how="left").filter(
                pl.col("_r").is_null() | (pl.col("line") > pl.col("_r"))).drop("_r")
        return stalls

    # --- progress and a clean end -----------------------------------------------------------
    @cached_property
    def launcher_exits(self) -> list[int]:
        """Exit codes that `tracekit run` launchers recorded."""
        ends = self.kinds(EventKind.RUN_NOTE).filter(
            pl.col("message").str.starts_with("exit code"))["message"]
        return [int(m.split()[-1]) for m in ends.to_list() if m.split()[-1].lstrip("-").isdigit()]

    @cached_property
    def finished(self) -> bool:
        """Every `tracekit run` launcher logged that its job exited with code 0."""
        launchers = self.kinds(EventKind.LAUNCH)["file"].n_unique()
        codes = self.launcher_exits
        return launchers > 0 and len(codes) >= launchers and all(c == 0 for c in codes)

    @cached_property
    def clean_end(self) -> list[str]:
        """Positive signs that the job ended cleanly, as evidence lines."""
        out = []
        if self.finished:
            out.append(f"every launcher exited with code 0 ({len(self.launcher_exits)} launcher(s))")
        said = pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64})
        for kind, what in (("clean_exit", "exit code 0"), (EventKind.TRAIN_END, "training finished"),
                           (EventKind.PROGRAM_END, "the program said it ended"),
                           (EventKind.TEST_PASSED, "nccl-tests passed"),
                           (EventKind.COMM_DESTROYED, "communicator destroyed")):
            rows = self.kinds(kind).join(said, on=["file", "line"], how="anti")  # (a line said once)
            if rows.height:
                out.append(f"{what}: {lines(rows, 1)[0]}")
                said = pl.concat([said, rows.head(1).select("file", "line")])
        destroyed = self.store.comms.filter(pl.col("state") == "destroy_complete")
        if destroyed.height:
            out.append(f"{destroyed.height} communicator(s) destroyed cleanly: "
                       + str(lines(destroyed.with_columns(pl.lit("Destroy COMPLETE").alias("message")),
                                   1)[0]))
        steps = self.kinds(EventKind.STEP, EventKind.PROGRESS).filter(
            pl.col("max_steps").is_not_null() & (pl.col("step") >= pl.col("max_steps")))
        if steps.height:
            out.append(f"last step reached: {lines(steps.sort('step'), 1)[0]}")
        return out

    @cached_property
    def steps(self) -> pl.DataFrame:
        return self.kinds(EventKind.STEP, EventKind.PROGRESS).filter(pl.col("step").is_not_null())

    @cached_property
    def ticks(self) -> pl.DataFrame:
        """The program's own progress lines that print a figure (a throughput or a time per step), with a
        step number or not (``pace.ticks``)."""
        return pace.ticks(self.store.events)

    @cached_property
    def motion(self) -> pl.DataFrame:
        """Per rank with several FR dumps: its frontier in the first, the second-to-last and the last
        dump (ordered by the newest enqueue each holds), the seconds between, the bytes in between."""
        fr = self.store.collectives.lazy().filter((pl.col("source") == "fr") & pl.col("rank").is_not_null())
        per = align.collect(fr.group_by("rank", "file").agg(pl.col("seq").max(),
                                                             pl.col("start_ns").max().alias("t")))
        if not per.height:
            return pl.DataFrame()
        per = per.sort("rank", "t")
        m = per.group_by("rank").agg(
            pl.len().alias("dumps"), pl.col("seq").first().alias("first"),
            pl.col("seq").get(-2, null_on_oob=True).alias("prev"), pl.col("seq").last().alias("last"),
            ((pl.col("t").last() - pl.col("t").first()) / 1e9).alias("dt"),
        ).filter(pl.col("dumps") > 1)
        if not m.height:
            return m
        moved = align.collect(
            fr.join(m.lazy().select("rank", "first", "last"), on="rank")
            .filter((pl.col("seq") > pl.col("first")) & (pl.col("seq") <= pl.col("last")))
            .unique(["rank", "seq"]).group_by("rank").agg(pl.col("bytes").sum().alias("bytes")))
        return m.join(moved, on="rank", how="left").with_columns(pl.col("bytes").fill_null(0))

    @property
    def moving(self) -> bool:
        """Every rank with several dumps advanced between its last two."""
        m = self.motion
        if not m.height:
            return False
        return m.filter(pl.col("prev").is_not_null() & (pl.col("last") > pl.col("prev"))).height == m.height

    @cached_property
    def epochs(self) -> pl.DataFrame:
        """Progress reports with no step number whose epoch (a fraction: HF Trainer's ``{'loss': 1.1,
        'learning_rate': 2e-05, 'epoch': 0.08}``) goes up: each is a logging interval's steps done.
        ``epoch`` per report, in the order written (each epoch once: two ranks echo one report)."""
        st = self.kinds(EventKind.STEP).filter(pl.col("step").is_null()).sort("file", "line").with_columns(
            pl.col("message").str.extract(r"'epoch': ([\d.]+)", 1).cast(pl.Float64, strict=False)
            .alias("epoch"))
        return st.filter(pl.col("epoch").is_not_null()).unique("epoch", keep="first", maintain_order=True)

    @cached_property
    def progressed(self) -> list[str]:
        """Signs that the job moved: steps that advanced, an epoch that went up over several reports,
        FR frontiers that moved between dumps."""
        out = []
        st = self.steps
        if st.height and st["step"].n_unique() > 1:
            out.append(f"steps advanced {st['step'].min()} -> {st['step'].max()}")
        ep = self.epochs
        if not out and ep.height >= 3 and ep["epoch"][-1] > ep["epoch"][0]:
            out.append(f"{ep.height} progress reports as the epoch went {ep['epoch'][0]:g} -> "
                       f"{ep['epoch'][-1]:g}")
        if self.motion.height and self.motion.filter(pl.col("last") > pl.col("first")).height:
            out.append("Flight Recorder frontiers moved between dumps")
        return out

    @cached_property
    def late(self) -> dict | None:
        """The rank that makes the others wait. In a collective every rank completed, the rank that
        arrived last spent least time in it (the others waited for it); each rank's time in it is read
        on its own clock, so no clock join is needed. Its rank, in how many collectives of how many, how
        late (median seconds, against the next rank to arrive), and the first collective it was late in."""
        c, source = sources.best_lazy(
            self.store.collectives.lazy(), sources.DURATIONS,
            pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null() & pl.col("rank").is_not_null()
            & pl.col("seq").is_not_null(), ("rank", "pg", "seq", "op", "start_ns", "end_ns"))
        if not source:
            return None
        c = c.unique(["rank", "pg", "seq"], keep="last").with_columns(
            ((pl.col("end_ns") - pl.col("start_ns")) / 1e9).alias("d"))
        n = c.group_by("pg", "seq").agg(pl.col("rank").n_unique().alias("n"))
        full = c.join(n.filter(pl.col("n") == n["n"].max()), on=["pg", "seq"], how="semi")
        if full["rank"].n_unique() < 2:
            return None
        per = (full.sort("d").group_by("pg", "seq").agg(
            pl.col("rank").first().alias("late"), (pl.col("d").get(1) - pl.col("d").first()).alias("lag_s"),
            pl.col("op").first().cast(pl.Utf8), pl.col("start_ns").first()).sort("seq"))
        hit = per.filter(pl.col("lag_s") >= 0.1)  # scheduling noise is milliseconds; a straggler's lag is not
        if hit.height < 3:
            return None
        top = (hit.group_by("late").agg(pl.len().alias("times"), pl.col("lag_s").median())
               .sort("times", descending=True).row(0, named=True))
        if top["times"] < 0.6 * hit.height:
            return None
        first = hit.filter(pl.col("late") == top["late"]).row(0, named=True)
        return {"rank": top["late"], "times": top["times"], "of": per.height, "lag_s": top["lag_s"],
                "source": source,
                "since_seq": first["seq"], "since_op": first["op"], "pg": first["pg"]}

    @cached_property
    def trouble(self) -> pl.DataFrame:
        """Every line that is not calm: an error, a signal, a closing signal, a stall, a warning that is
        not benign. Progress alone says a run is healthy only where there is none."""
        bad = self.kinds(*TROUBLE)
        # (and a traceback raised whose error line the excerpt cut: a failure, its message missing)
        bad = pl.concat([bad, self.kinds(EventKind.STACK).filter(pl.col("thread") == RAISED)])
        return bad.join(self.benign.select("file", "line"), on=["file", "line"], how="anti")

    @cached_property
    def pace(self) -> dict:
        """How fast the steps went, from what the step lines say (``pace.measure``): ``slow``, ``falling``,
        ``per_step_s``, ``rate``."""
        return pace.measure(self.steps)

    # --- what went wrong, in a word ---------------------------------------------------------
    @cached_property
    def failure_signs(self) -> list[str]:
        """Every sign of failure the evidence holds, whatever the verdict (for --fail-on-hang)."""
        signs = []
        for what, df in (("timeout", self.timeouts), ("crash", self.crashes), ("CUDA error", self.cuda),
                         ("NCCL error", self.nccl_errors), ("rendezvous failed", self.rendezvous),
                         ("non-zero exit", self.exits), ("mismatch", self.reported_mismatch),
                         ("stall", self.stalls if not self.finished else self.stalls.head(0)),
                         ("cancelled by the scheduler", self.cancelled),
                         ("transport error", self.transport), ("init never completed", self.pending)):
            if df.height:
                signs.append(f"{what} ({df.height} line(s))")
        wrong = self.kinds(EventKind.TEST_WRONG)
        if wrong.height:  # nccl-tests' `#wrong` above 0, `Out of bounds values : 3 FAILED`: corrupt results
            signs.append(f"{WRONG_VALUES} ({wrong.height} line(s))")
        if any(c != 0 for c in self.launcher_exits):
            signs.append("a launcher exited with a non-zero code")
        # a finished run's dumps were taken on the way: a rank behind in one was only dumped earlier
        if self.mismatches or (self.missing and not self.finished):
            signs.append("collectives do not line up across ranks")
        return signs
