"""The evidence a verdict is reached from, computed once from a store, and how much of the job it covers.

Rules (``tracekit.rules``) read only this object: failures, their consequences, exits, timeouts,
transport errors, benign notes, pending inits, stacks, alignment findings, a clean end, progress (its
half in ``tracekit.evidence_progress``) and the coverage (``tracekit.coverage``): the world size, the ranks
seen, from which sources each rank is seen, and which ranks left no record at all.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from functools import cached_property

import polars as pl

from tracekit import align, sources, start_up_returned
from tracekit.coverage import SOURCE_WORDS, coverage  # noqa: F401 - read from here by others
from tracekit.evidence_progress import Progress
from tracekit.meanings import (BENIGN, CONSEQUENCE, CUDA, MISMATCH_TEXT, NCCL_ERROR,  # noqa: F401
                               NETWORK_FAIL, RENDEZVOUS, STORE_BARRIER, TERMINATE, BOOTSTRAP, WIRE_MISMATCH,
                               HEARTBEAT, WATCHDOG_ABORT_SIGNAL, says)
from tracekit.nccl_messages import OWN_FAILURE, UNDECIDED as UNDECIDED_MESSAGE, is_one_of, reads_as
from tracekit.outcome import Cited, Coverage, EventKind, Finding, Match
from tracekit.parsers.pyspy import GDB_WAIT, RAISED
from tracekit.parsers.runtimes.ray import death_message
from tracekit.parsers.torch_patterns import CUT_TRACEBACK
from tracekit.store import Store

#: a collective's timeout in the watchdog's words, even in a line cut short
WATCHDOG_WORDS = r"Watchdog caught collective|[Ww]atchdog.*[Tt]ime ?out|Timeout\(ms\)=|timed out"

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
# torchrun's own agent (the launcher, not a worker): torch/distributed/run.py, launcher/api.py, elastic/...
AGENT_FRAME = r"torch/distributed/(?:run\.py|launcher/|elastic/)"


WRONG_VALUES = "wrong values in nccl-tests' results"
#: the events that say a process or the job ended cleanly, with how ``clean_end`` says each
CLEAN_ENDS = ((EventKind.CLEAN_EXIT, "exit code 0"), (EventKind.TRAIN_END, "training finished"),
              (EventKind.PROGRAM_END, "the program said it ended"), (EventKind.TEST_PASSED, "nccl-tests passed"),
              (EventKind.COMM_DESTROYED, "communicator destroyed"))

#: the event kinds that are not calm: with any of them (not benign), progress alone does not say healthy
TROUBLE = (EventKind.CRASH, EventKind.EXCEPTION, EventKind.CUDA_ERROR, EventKind.WATCHDOG_TIMEOUT,
           EventKind.WATCHDOG_STATUS, EventKind.WATCHDOG_ABORT, EventKind.C10D_ERROR,
           EventKind.COLLECTIVE_MISMATCH, EventKind.GLOO_SIZE_MISMATCH, EventKind.CHILD_FAILED,
           EventKind.RANK_EXIT, EventKind.SIGNAL, EventKind.CLOSING_SIGNAL, EventKind.JOB_CANCELLED,
           EventKind.TRANSPORT_ERROR, EventKind.CONNECT_RETRY, EventKind.NCCL_WARN, EventKind.NCCL_UNWIND,
           EventKind.STALL, EventKind.RANK_MISSING)


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


# mpirun's notice that counts the processes that failed, naming none (parsers/mpi, parsers/process_end)
NONZERO_COUNT = ((pl.col("where") == "mpirun") & pl.col("message").fill_null("")
                 .str.contains(r"process\(es\) returned a non-zero exit code"))


@dataclass
class Evidence(Progress):
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
        # (a cut traceback raised in torchrun's own agent is the launcher's, not a rank's:
        # rules_exit.agent_raised)
        agent = self.raised_cut.filter(pl.col("where").str.contains(AGENT_FRAME)).select("file").unique()
        c = pl.concat([c.join(agent, on="file", how="anti"),
                       c.join(agent, on="file").filter(pl.col("message") != CUT_TRACEBACK)]).sort("line")
        c = self._without_bare_counts(c)
        if not self.timeouts.height:
            c = pl.concat([c, self._ray_deaths()], how="diagonal_relaxed").sort("line")
        else:
            c = c.filter(~says("terminate"))
            # the watchdog aborts a rank whose collective timed out (SIGABRT, exit -6): its own end,
            # a consequence of the wait, never the cause
            waited = self.timeouts["rank"].drop_nulls().unique().implode()
            c = c.filter(~(says("abort_signal")
                           & (pl.col("rank").is_in(waited) | pl.col("rank").is_null())))
        return c

    def _without_bare_counts(self, c: pl.DataFrame) -> pl.DataFrame:
        """Without mpirun's bare count of failed processes (`Primary job terminated normally, but 1 process
        returned a non-zero exit code`) where its file says more: an error of a rank, NCCL's error code, or
        a launcher's word that names the process and how it ended (`process rank 1 ... exited on signal 9`):
        the count is only mpirun's word that the job ended because of those."""
        bare = NONZERO_COUNT & pl.col("rank").is_null()
        ends = self.kinds(EventKind.CHILD_FAILED, EventKind.RANK_EXIT).filter(
            pl.col("rank").is_not_null() | pl.col("exit_code").is_not_null())
        more = pl.concat([c.filter(~bare).select("file"), self.nccl_errors.select("file"),
                          ends.select("file")]).unique()
        return pl.concat([c.filter(~bare), c.filter(bare).join(more, on="file", how="anti")]).sort("line")

    def _ray_deaths(self) -> pl.DataFrame:
        """Ray's word that a worker died (the raylet's, the core worker's; no exit code): that worker's crash
        where no collective timed out, not even in a watchdog line cut short (else it may be the timeout's
        end: Ray's log dedup reorders lines, so the timeout may print after it)."""
        waited = self.store.events.filter(pl.col("message").fill_null("").str.contains(WATCHDOG_WORDS))
        if waited.height:
            return self.store.events.clear()
        died = self.kinds(EventKind.CHILD_FAILED)
        raw = died.filter(pl.col("where") == "ray")  # (torch_log's reading: the line's own text)
        deaths = pl.concat([died.filter(pl.col("where") == "ray (raylet)"),
                            raw.with_columns(death_message(pl.col("message")).alias("message"))])
        # (the core worker's `The actor is dead` names no worker: where the raylet's report of a death in
        # the same log names one, that is the death the caller saw, told with its worker)
        named = deaths.filter(pl.col("pid").is_not_null()).select("file").unique()
        return pl.concat([deaths.filter(pl.col("pid").is_not_null()),
                          deaths.filter(pl.col("pid").is_null()).join(named, on="file", how="anti")])

    @cached_property
    def raised_cut(self) -> pl.DataFrame:
        """Python tracebacks raised whose error line the excerpt cut (``parsers/pyspy``: a ``stack`` of thread
        ``RAISED``), in files where nothing else says what went wrong (no error, signal, exit, timeout or
        warning that is not benign, but torch_log's word of that cut traceback): the weakest word of a
        failure, which never outranks one that says more."""
        cut = self.kinds(EventKind.STACK).filter(pl.col("thread") == RAISED)
        said = self.kinds(*TROUBLE).join(self.benign.select("file", "line"), on=["file", "line"], how="anti")
        said = said.filter(pl.col("message") != CUT_TRACEBACK)
        return cut.join(said.select("file").unique(), on="file", how="anti").sort("file", "line")

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
        # (nor NCCL refusing the program's own call, two ranks on one GPU, nor its ncclInvalidUsage: the
        # program's error or its ranks disagreeing, never the network's)
        t = t.filter(~is_one_of((*OWN_FAILURE, "invalid_usage")))
        # (nor what a process's WARNs say after it aborted its communicators: ncclCommAbort closes their
        # sockets, and its proxy thread's `Accept failed` and socket errors are the teardown's)
        first = self.aborted.group_by("file", "pid").agg(pl.col("line").min().alias("_abort"))
        torn = t.join(first, on=["file", "pid"]).filter(pl.col("line") > pl.col("_abort"))
        # (s31: nor a start-up's connect retried that its file shows start-up got past: start-up under way)
        past = start_up_returned.went_past(self.store.events, t).select("file", "line")
        return t.join(pl.concat([self.benign.select("file", "line"), torn.select("file", "line"), past]),
                      on=["file", "line"], how="anti")

    @cached_property
    def aborted(self) -> pl.DataFrame:
        """Communicators aborted (NCCL's `Abort COMPLETE`: ncclCommAbort, which c10d calls after an error or a
        timeout, or the program itself)."""
        return self.store.comms.filter(pl.col("state") == "abort_complete").sort("file", "line")

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

    # --- a clean end (progress: ``evidence_progress.Progress``) ------------------------------
    @cached_property
    def clean_end(self) -> list[str]:
        """Positive signs that the job ended cleanly, as evidence lines."""
        out = []
        if self.finished:
            out.append(f"every launcher exited with code 0 ({len(self.launcher_exits)} launcher(s))")
        said = pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64})
        for kind, what in CLEAN_ENDS:
            rows = self.kinds(kind).join(said, on=["file", "line"], how="anti")  # (a line said once)
            if rows.height:
                out.append(f"{what}: {lines(rows, 1)[0]}")
                said = pl.concat([said, rows.head(1).select("file", "line")])
        destroyed = self.store.comms.filter(pl.col("state") == "destroy_complete")
        if destroyed.height:
            out.append(f"{destroyed.height} communicator(s) destroyed cleanly: "
                       + str(lines(destroyed.with_columns(pl.lit("Destroy COMPLETE").alias("message")),
                                   1)[0]))
        steps = self.kinds(EventKind.STEP).filter(
            pl.col("max_steps").is_not_null() & (pl.col("step") >= pl.col("max_steps")))
        if steps.height:
            out.append(f"last step reached: {lines(steps.sort('step'), 1)[0]}")
        return out

    @cached_property
    def trouble(self) -> pl.DataFrame:
        """Every line that is not calm: an error, a signal, a closing signal, a stall, a warning that is
        not benign. Progress alone says a run is healthy only where there is none."""
        bad = self.kinds(*TROUBLE)
        # (and a traceback raised whose error line the excerpt cut: a failure, its message missing)
        bad = pl.concat([bad, self.kinds(EventKind.STACK).filter(pl.col("thread") == RAISED)])
        return bad.join(self.benign.select("file", "line"), on=["file", "line"], how="anti")

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
        failed = wrong.filter(pl.col("where") == "tests_failed")  # a test runner's own fail (test_reports)
        if wrong.height > failed.height:  # nccl-tests' `#wrong` above 0, `Out of bounds values : 3 FAILED`
            signs.append(f"{WRONG_VALUES} ({wrong.height - failed.height} line(s))")
        if failed.height:
            signs.append(f"a test failed ({failed.height} line(s))")
        if any(c != 0 for c in self.launcher_exits):
            signs.append("a launcher exited with a non-zero code")
        # a finished run's dumps were taken on the way: a rank behind in one was only dumped earlier
        if self.mismatches or (self.missing and not self.finished):
            signs.append("collectives do not line up across ranks")
        return signs
