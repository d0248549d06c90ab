"""Rules over processes that ended: what a launcher or runtime said of a process's end (the events of
``parsers/process_end`` and torchrun's error block), read as the cause where nothing earlier explains it.

- ``killed_from_outside``: the launcher itself received SIGHUP, SIGTERM or SIGQUIT (torchelastic's
  ``Received 1 death signal``, DeepSpeed's ``Main process received SIGTERM``) and no rank failed before
  it: the job did not fail by itself; the fix is where it runs (nohup/tmux, the scheduler's time limit),
  not the training code. SIGINT (Ctrl-C) is a person stopping it, mostly because it had stopped making
  progress: undecided, with what decides it.
- ``process_ended``: the earliest end that is not a consequence (torchrun's first observed failure, or
  the first end in the log; a stop request is not a failure; with a watchdog timeout logged the timeout
  rules read the wait first, unless torchrun saw a rank killed by a signal first): its rank (or local
  rank, or pid), its code or signal and what that means. Several ranks ending alike at the one time that
  torchrun calls its root cause's: which came first is not known (undecided).
- ``workers_ended_unexplained``: a launcher ended its workers (``Killing subprocess``, closing signals)
  and the line that says which process failed and how is not there: undecided, with where that line is.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.evidence import AGENT_FRAME, KILL_CODES, NONZERO_COUNT, Evidence, clip, lines
from tracekit import rules_after_end
from tracekit.steady_stop import steady_until
from tracekit.meanings import says
from tracekit.outcome import Cited, EventKind, Kind, Verdict
from tracekit.rules_common import msg
from tracekit.wording import who

# a process asked to stop (evidence.KILL_CODES: SIGTERM, SIGINT, coreutils `timeout`) or hung up on
# (SIGHUP), as a signal or a shell's 128 + N
STOP_CODES = KILL_CODES | {-1, 129}
LAUNCHERS = ("torchelastic agent", "deepspeed launcher")  # the launcher itself got the signal
FIRST = "torchrun: first observed failure"
#: what ended the process is in their message, not the code
OWN_WORDS = ("pytorch test harness", "mpi", "paddle launcher")
WORKERS_OF = ("deepspeed launcher", "launcher")  # they say a worker ended, not which one
#: what an exit code says of how a process ended (negative: killed by that signal; 128 + N: the same, as
#: a shell reports it)
EXIT_MEANINGS = {
    (-9, 137): "SIGKILL: killed outright, by the kernel's OOM killer when host memory ran out, or by the "
               "scheduler (a memory limit, scancel); `dmesg -T | grep -i 'killed process'` on that node, "
               "`sacct -j JOBID -o JobID,State,MaxRSS,ReqMem` and the host's free memory during the run "
               "say which",
    (-11, 139): "SIGSEGV: a segmentation fault in native code (a C++/CUDA extension, NCCL or another "
                "library, the driver); its core dump or a rerun under gdb or `python -X faulthandler` names "
                "the frame",
    (-6, 134): "SIGABRT: the process aborted itself: a failed C++ check or an uncaught C++ exception (c10d's "
               "watchdog aborts a rank this way after a timeout or an NCCL error, logged above it)",
    (-7, 135): "SIGBUS: a bus error, most often shared memory (/dev/shm) too small for NCCL or the data "
               "loader's workers, or a file mapped in memory that shrank",
    (-8, 136): "SIGFPE: an arithmetic fault in native code",
    (-4, 132): "SIGILL: an instruction this CPU does not have (a binary built for another CPU)",
    (1,): "a Python exception (its traceback is in that process's own output)",
}
FROM_OUTSIDE = {  # signum: (name, who sends it, the fix)
    1: ("SIGHUP", "the hang-up of the terminal or ssh session the launcher ran in: the session closed (a "
                  "dropped connection, a closed laptop, a logout)",
        "run the launcher where a closed session cannot reach it: nohup, tmux or screen, or a batch job"),
    15: ("SIGTERM", "sent from outside the job: by the scheduler (a time limit, a preemption, scancel) or by "
                    "a person or a supervisor (kill, an orchestrator stopping it)",
         "check how the job ended (`sacct -j JOBID -o JobID,State,Elapsed,Timelimit`: TIMEOUT, PREEMPTED, "
         "CANCELLED), raise the time limit or checkpoint and resume before it"),
    3: ("SIGQUIT", "sent from outside the job (a person or a supervisor)", "find what sent it"),
}


def meaning(code: int | None) -> str:
    """What an exit code says of how the process ended."""
    if code is None:
        return "a non-zero exit code (which one, only the launcher's full output says)"
    for codes, said in EXIT_MEANINGS.items():
        if code in codes:
            return said
    if code in STOP_CODES:
        return f"exit code {code}: it was asked to stop (SIGTERM, SIGINT, SIGHUP or a `timeout`)"
    return f"exit code {code}: the program's own exit status (its output says why)"


def _name(row: dict) -> str:
    """``rank 2 (local rank 2, pid 812) on host``, ``local rank 5``, ``the process of pid 812``,
    ``a process``."""
    local = re.search(r"local[_ ]rank:? ?(\d+)", row["message"] or "")
    task = re.search(r"^srun: (task \S+ on \S+)", row["message"] or "")
    if task:
        return f"srun's {task.group(1)}"
    if row["rank"] is not None:
        inner = ", ".join(([f"local rank {local.group(1)}"] if local else [])
                          + ([f"pid {row['pid']}"] if local and row["pid"] is not None else []))
        return (f"rank {row['rank']}" + (f" ({inner})" if inner else "")
                + (f" on {row['host']}" if row["host"] else ""))
    if local:
        return f"local rank {local.group(1)}" + (f" (pid {row['pid']})" if row["pid"] is not None else "")
    if row["pid"] is not None:
        return f"the process of pid {row['pid']}" + (f" on {row['host']}" if row["host"] else "")
    on = f" on {row['host']}" if row["host"] else ""
    return (f"a worker of the {row['where']}" if row["where"] in WORKERS_OF else "a process") + on


def _ends(ev: Evidence) -> pl.DataFrame:
    """Each process that ended with a non-zero code or a signal, as a launcher or runtime said it, in log
    order; torchrun's first observed failure first, a notice that only counts ends (mpirun's `1 process
    returned a non-zero exit code`) after those that say who."""
    e = ev.kinds(EventKind.CHILD_FAILED, EventKind.RANK_EXIT)
    code = pl.col("exit_code")
    said = pl.col("message").fill_null("").str.contains(
        r"non-zero|worker raised in|\) raised in |exited improperly")
    first = pl.col("where").fill_null("").str.contains("first observed")
    e = e.filter((code.is_not_null() & (code != 0)) | (code.is_null() & (said | first)))
    return e.with_columns(first.alias("_first"),
                          code.is_not_null().alias("_said")).sort(
        "_first", "_said", "file", "line", descending=[True, True, False, False])


#: a worker's own handler of a fatal signal, which names a stop signal too (parsers/native_fatal: Paddle's
#: ``FatalError: `Termination signal` is detected by the operating system``, glog's and absl's ``*** SIGTERM
#: received ...``): the worker was stopped from outside it, by its launcher or the job's owner
WORKER_HANDLERS = ("paddle signal handler", "glog failure signal handler", "absl failure signal handler")


def _outside(ev: Evidence) -> pl.DataFrame:
    """The launcher's own death signals and a worker's handler's word of a stop signal, in log order."""
    sig = ev.kinds(EventKind.SIGNAL).filter(pl.col("where").is_in(LAUNCHERS + WORKER_HANDLERS)).sort("file", "line")
    return sig.with_columns(pl.col("message").str.extract(r"\(signal (\d+)\)", 1).cast(pl.Int64, strict=False)
                            .alias("signum"))


def _failed_before(ev: Evidence, at: pl.DataFrame) -> bool:
    """A rank failed (an error, a CUDA failure, a non-zero end that is no stop request) before the first
    of ``at`` in the same file, or anywhere in another file."""
    ends = _ends(ev).filter(~pl.col("exit_code").is_in(list(STOP_CODES)).fill_null(False))
    failed = pl.concat([ev.crashes.select("file", "line"), ev.cuda.select("file", "line"),
                        ends.select("file", "line")])
    first = at.group_by("file").agg(pl.col("line").min().alias("_at"))
    return failed.join(first, on="file", how="left").filter(
        pl.col("_at").is_null() | (pl.col("line") < pl.col("_at"))).height > 0


def launcher_could_not_reach(ev: Evidence) -> Verdict | None:
    """A launcher could not reach a host over ssh (DeepSpeed's ssh check, pdsh): no rank started there,
    so the job never came together; ssh itself says why (exit status 255: no connection or no key)."""
    ssh = ev.kinds(EventKind.CHILD_FAILED).filter(pl.col("where") == "launcher ssh").sort("file", "line")
    if not ssh.height:
        return None
    named = ssh["host"].drop_nulls().unique(maintain_order=True).to_list()
    hosts = ", ".join(named) or "a host"
    return Verdict(Kind.INIT_STALL, f"{ssh['message'][0]}: no rank was started on {hosts}, so the job never "
                   "came together (ssh exits 255 when it cannot connect or authenticate): set up "
                   "passwordless ssh from the launching node to every host of the hostfile (`ssh -o "
                   f"PasswordAuthentication=no {named[0] if named else 'HOST'} hostname` must print its "
                   "name), or start each node's ranks on that node (torchrun per node, DeepSpeed --no_ssh)",
                   [], lines(ssh, 3))


def killed_from_outside(ev: Evidence) -> Verdict | None:
    """The launcher received a death signal (SIGHUP, SIGTERM, SIGQUIT, SIGINT) and no rank failed before."""
    sig = _outside(ev)
    if not sig.height or ev.timeouts.height or ev.stalls.height or _failed_before(ev, sig):
        return None  # (a timeout or a stall before it: the signal ended a hang, which the other rules read)
    first = sig.row(0, named=True)
    if (ended := rules_after_end.stopped_after_its_end(ev, sig, f"the launcher's `{first['message']}`")) is not None:
        return ended  # (a stop after the work's end: its teardown outlived it)
    closing = ev.kinds(EventKind.CLOSING_SIGNAL)
    workers = closing["pid"].drop_nulls().unique(maintain_order=True).to_list()
    shut = (f" (pid {', '.join(map(str, workers[:6]))}{', ...' if len(workers) > 6 else ''})"
            if workers else "")
    last = ev.steps["step"].max() if ev.steps.height else None
    before = f"; the job was making progress until then (last step {last})" if last is not None else ""
    if first["signum"] == 2:
        return Verdict(Kind.UNDECIDED, f"{first['message']}: SIGINT (signal 2) is Ctrl-C, a person stopping "
                       "the job, most often because it had stopped making progress; no rank logged a failure "
                       f"before it{before}: where each rank was then decides it: py-spy dump --pid of every "
                       "rank before stopping it, or `tracekit run` (stack dumps when progress stops)",
                       [], lines(sig, 2) + lines(ev.steps, 1))
    other = (f"signal {first['signum']}", "sent from outside the job", "find what sent it")
    name, why, fix = FROM_OUTSIDE.get(first["signum"], other)
    if ev.cancelled.height and (steady := steady_until(ev, ev.cancelled)) is not None:
        # (stall33: steady steps up to the scheduler's cancel, no failure: the run was healthy, stopped from
        # outside; the dev labels of this shape, dv37-015, dv46-002, dv30-025, dv46-009, read healthy first)
        return Verdict(Kind.HEALTHY, f"the job ran steadily until the scheduler cancelled it ({steady}; then "
                       f"{msg(ev.cancelled, 0, 120)}) and its processes ended on its {name}: {first['message']}{shut}; "
                       "no rank failed by itself (no error and no non-zero exit logged before it): a healthy run "
                       "stopped from outside (scancel or a time limit: `sacct -j JOBID -o JobID,State,Elapsed,"
                       "Timelimit` says which; checkpoint and resume to go on)",
                       [], lines(ev.steps.sort("file", "line").tail(2), 2) + lines(ev.cancelled, 1) + lines(sig, 1))
    if ev.cancelled.height:
        # (the scheduler's own cancel came with it: scancel or a limit ended the job, SIGTERM its means; s29)
        return Verdict(Kind.UNDECIDED, f"the scheduler cancelled the job ({msg(ev.cancelled, 0, 120)}) and its "
                       f"processes ended on its {name}: {first['message']}{shut}; no rank failed by itself before "
                       f"it (no error and no non-zero exit logged){before}; whether it was stopped because it hung "
                       "or on purpose, `sacct -j JOBID -o JobID,State,Elapsed,Timelimit` and who cancelled it say",
                       [], lines(ev.cancelled, 1) + lines(sig, 2) + lines(closing, 2))
    if first["where"] in WORKER_HANDLERS:
        rank = sig["rank"].drop_nulls().unique().sort().to_list()
        # (UNDECIDED: the stop is the consequence; its cause, another worker's failure or the owner, is not in
        # view: the blind split read it so, s29 merge)
        return Verdict(Kind.UNDECIDED, f"{who(rank) if rank else 'a worker'} was stopped from outside: "
                       f"{first['message']}; its own signal handler says so, and it logged no error of its own "
                       f"before it{before}; {name} to a worker comes from its launcher, which stops every worker "
                       "once one of them failed (torchrun, paddle.distributed.launch), or from the job's owner or "
                       "scheduler; to decide: the other ranks' logs and the launcher's say which",
                       rank, lines(sig, 2) + lines(ev.steps.tail(1), 1))
    if first["signum"] == 15 and (steady := steady_until(ev, sig)) is not None:
        # (stall33: a SIGTERM that stopped steady steps, no scheduler's word of why: a run stopped on purpose (the
        # healthy labels of the cancels above) or a supervisor's kill of a job it judged stuck; the blind split read
        # one of these healthy where this rule said crashed)
        return Verdict(Kind.UNDECIDED, f"the job ran steadily until it was stopped from outside ({steady}; then "
                       f"{first['message']}{shut}); no rank failed by itself before it (no error and no non-zero exit "
                       f"logged); {name} is {why}: stopped on purpose, the run was healthy; whether it was, the "
                       "scheduler's or the supervisor's record of who sent it says (`sacct -j JOBID -o JobID,State,"
                       "Elapsed,Timelimit`)", [], lines(ev.steps.sort("file", "line").tail(2), 2) + lines(sig, 2))
    return Verdict(Kind.CRASHED_RANK, f"killed from outside: {first['message']}{shut}; {name} is {why}; "
                   "no rank failed by itself before it (no error and no non-zero exit logged)"
                   f"{before}; the fix is where the job runs, not the training code: {fix}",
                   [], lines(sig, 2) + lines(closing, 2))


#: why Slurm ended a job (slurmstepd's `CANCELLED AT <time> DUE TO <reason>`), what it means and its fix
SCHEDULER_REASONS = {
    "TIME LIMIT": ("the job reached its time limit", "raise the time limit (--time) or checkpoint often and "
                   "resume (sacct -j JOBID -o JobID,State,Elapsed,Timelimit shows TIMEOUT)"),
    "PREEMPTION": ("a job of higher priority took its nodes", "use a partition or QOS without preemption, "
                   "or checkpoint often and requeue (--requeue)"),
    "NODE FAIL": ("one of its nodes failed", "the node's own state (`sinfo -R`, `scontrol show node`) says "
                  "why; exclude it (--exclude) and resume from the last checkpoint"),
}


def cancelled_by_scheduler(ev: Evidence) -> Verdict | None:
    """The scheduler ended the job for a reason of its own (a time limit, a preemption, a node failure)
    and no rank failed or hung before it: killed from outside. A cancel without such a reason is a person's
    (mostly of a job that hung): not decided here."""
    c = ev.cancelled.with_columns(pl.col("message").str.extract(r"DUE TO ([A-Z ]*[A-Z])", 1).alias("_why"))
    c = c.filter(pl.col("_why").is_in(list(SCHEDULER_REASONS))).sort("file", "line")
    if not c.height or ev.timeouts.height or ev.stalls.height or _failed_before(ev, c):
        return None
    # (the program said its work ended before the kill, or a time limit with no progress logged: undecided)
    stop = f"the scheduler ended the job ({clip(c['message'][0], 120)})"
    for v in (rules_after_end.stopped_after_its_end(ev, c, stop), rules_after_end.time_limit_without_progress(ev, c)):
        if v is not None:
            return v
    why, fix = SCHEDULER_REASONS[c["_why"][0]]
    last = ev.steps["step"].max() if ev.steps.height else None
    before = f"; the job was making progress until then (last step {last})" if last is not None else ""
    return Verdict(Kind.CRASHED_RANK, "killed from outside: the scheduler ended the job "
                   f"({clip(c['message'][0], 120)}): {why}; no rank failed by itself before it{before}: "
                   f"{fix}",
                   [], lines(c, 2) + lines(ev.steps, 1))


def process_ended(ev: Evidence) -> Verdict | None:
    """The earliest process end that is not a consequence: who, how, what it means."""
    ends = _ends(ev).filter(~pl.col("exit_code").is_in(list(STOP_CODES)).fill_null(False))
    if not ends.height:
        return None
    first = ends.row(0, named=True)
    code = first["exit_code"]
    if ev.timeouts.height and not (first["where"] == FIRST and code is not None and code < 0 and code != -6):
        return None  # with a timeout logged the wait is read first, unless torchrun saw a rank killed first
    alike = ends.filter(pl.col("exit_code").eq_missing(code))
    ranks = alike["rank"].drop_nulls().unique().sort().to_list()
    tied = alike.filter(pl.col("ts").eq_missing(first["ts"]))["rank"].drop_nulls().unique().sort().to_list()
    if first["where"] == FIRST and first["ts"] is not None and len(tied) > 1:
        # torchrun's root cause is the failure of the earliest time; of failures of one time, the first listed
        return Verdict(Kind.UNDECIDED, f"{who(tied)} all exited with code {code} at {first['ts']} "
                       f"({meaning(code)}): torchrun names one of failures of the same time as its root "
                       "cause by their order, not by which came first, so which rank failed first, and why, "
                       "is not in its summary: each rank's own traceback says it (torchrun --log-dir DIR "
                       "--tee 3, or @record for the error file)", [], lines(alike.head(4)))
    said = f" ({first['where']})" if first["where"] and first["where"] not in WORKERS_OF else ""
    # (the test harness's and MPI's own words say more than the code: an exception in the test body, an abort)
    how = meaning(code) if first["where"] not in OWN_WORDS else first["message"]
    if len(ranks) > 1:
        head = f"{who(ranks)} exited with code {code}" + (
            f" ({_name(first)} first)" if first["rank"] is not None else "")
    elif code is not None:
        head = f"{_name(first)} ended: exit code {code}{said}"
    elif first["where"] == FIRST:  # (its entry cut after the rank line)
        head, how = first["message"], "the first failure torchrun observed; that rank's own output says why"
    elif "non-zero" in first["message"]:
        head = f"{_name(first)} ended: a non-zero exit{said}"
    else:  # a runtime's word that the process raised (vLLM's worker), its code not said
        head, how = f"{_name(first)}{said}", first["message"]
    if code in (-6, 134):  # (an abort: the uncaught C++ exception before it, where its file shows one)
        threw = ev.store.events.filter((pl.col("file") == first["file"]) & (pl.col("line") < first["line"])
                                       & says("terminate").fill_null(False)).sort("line")
        how += f"; it aborted on `{clip(threw['message'][0], 200)}`" if threw.height else ""
    others = ends.filter(~pl.col("exit_code").eq_missing(code))
    if first["rank"] is not None:  # (mpirun's bare count of failed processes says no more than the named end)
        others = others.filter(~NONZERO_COUNT)
    after = (f"; then {others.height} other end(s): "
             + "; ".join(clip(m, 80) for m in others["message"].head(2).to_list()) if others.height else "")
    return Verdict(Kind.CRASHED_RANK, f"{head}: {how}{after}",
                   ranks or ([first["rank"]] if first["rank"] is not None else []),
                   lines(ends.head(4)) + lines(_outside(ev), 1))


def workers_ended_unexplained(ev: Evidence) -> Verdict | None:
    """A launcher ended its workers, and no line says which process failed first or how."""
    closing = ev.kinds(EventKind.CLOSING_SIGNAL).sort("file", "line")
    if not closing.height or _ends(ev).height or _outside(ev).height:
        return None
    pids = ", ".join(map(str, closing["pid"].drop_nulls().unique(maintain_order=True).to_list()[:6]))
    hosts = (closing["host"].drop_nulls().unique(maintain_order=True).to_list() if "host" in closing.columns
             else [])
    on = f" on {', '.join(hosts[:3])}" if hosts else ""
    if not (ev.timeouts.height or ev.stalls.height or _worker_stacks(ev).height):
        return Verdict(Kind.CRASHED_RANK, f"a worker process failed first: the launcher{on} killed its worker "
                       f"subprocesses (pid {pids}) (`{clip(closing['message'][0], 100)}`), which it does when "
                       "one of them exits with a non-zero code or is killed by a signal (DeepSpeed's "
                       "launch.py: `if process.returncode != 0: ... sigkill_handler(...)`; torchrun's agent "
                       "closes its workers when one fails), and no line says the launcher itself received "
                       "SIGINT or SIGTERM (it says `Main process received SIGTERM` or `Received 15 death "
                       "signal`), nor that a rank timed out or stalled before; which process exited, and "
                       "with which code, the cut line says (DeepSpeed's `exits with return code = N`: -9 "
                       "is the OOM killer, -7 a bus error, /dev/shm; torchrun's `failed (exitcode: N) "
                       "local_rank: R`): that process's own log says why", [], lines(closing, 3))
    return Verdict(Kind.UNDECIDED, f"the launcher{on} killed its worker subprocesses (pid {pids}) "
                   f"(`{clip(closing['message'][0], 100)}`): torchrun "
                   "and DeepSpeed's launcher do this when one of their processes exits with a non-zero code, "
                   "or when they receive SIGINT or SIGTERM themselves; the line that says which process "
                   "ended and how (DeepSpeed's `exits with return code = N`, torchrun's `failed (exitcode: "
                   "N) local_rank: R` and its ChildFailedError block) is not in the evidence: the launcher's "
                   "full output and each rank's own log say it", [], lines(closing, 3))


#: the launcher's own frames (python -m, DeepSpeed's and torchrun's launchers), in a traceback of its own
LAUNCHER_FRAME = r"(?:^|/)runpy\.py|deepspeed/launcher/|" + AGENT_FRAME


def _worker_stacks(ev: Evidence) -> pl.DataFrame:
    """Stacks and tracebacks with a frame of the program's own (not python -m's, not a launcher's): a
    worker's place when it ended, which may be a wait the kill interrupted (a barrier a failed peer never
    reached, a hang someone stopped): with one, the kill alone does not say which process failed first."""
    st = ev.kinds(EventKind.STACK)
    if not st.height:
        return st
    frames = pl.col("frames").fill_null(pl.col("where")).fill_null("")
    parts = frames.str.split(" <- ")
    return st.filter(parts.list.eval(~pl.element().str.contains(LAUNCHER_FRAME)).list.any())


def agent_raised(ev: Evidence) -> Verdict | None:
    """torchrun's own agent (the launcher, not a worker) raised, its error line cut from the excerpt, and
    nothing else says what went wrong. launch_agent raises both when the rendezvous fails (before any
    worker runs) and when its workers failed (ChildFailedError, after): only the error line says which."""
    cut = ev.raised_cut.filter(pl.col("where").str.contains(AGENT_FRAME))
    if not cut.height:
        return None
    before = _before_any_worker(ev, cut)
    if before is not None:
        return before
    return Verdict(Kind.UNDECIDED, f"torchrun's agent raised in {clip(cut['where'][0], 140)} and the excerpt "
                   "cuts its error line: the launcher failed, not a worker that said so; launch_agent raises "
                   "when the rendezvous never completes (RendezvousTimeoutError, a store it cannot reach: an "
                   "init stall) and when its workers failed (ChildFailedError: a rank's crash): the error "
                   "line under the traceback, and each node's launcher output, decide", [], lines(cut, 2))


#: what a worker of torchrun prints or what torchrun says of one: the worker's own words (an error, a step,
#: a collective, NCCL), or the agent's word that a worker ended (torch/distributed/elastic/multiprocessing/
#: api.py logs ``failed (exitcode: N) local_rank: R (pid: P) of binary: ...`` before launch_agent raises
#: ChildFailedError; torchrun's error block names the rank)
WORKER_SAID = (EventKind.CRASH, EventKind.CUDA_ERROR, EventKind.STEP, EventKind.PROGRESS,
               EventKind.TRAIN_START, EventKind.CHILD_FAILED, EventKind.RANK_EXIT, EventKind.SIGNAL,
               EventKind.CLOSING_SIGNAL, EventKind.WATCHDOG_TIMEOUT, EventKind.NCCL_WARN,
               EventKind.RANK_JOINED, EventKind.CLEAN_EXIT)


def _before_any_worker(ev: Evidence, cut: pl.DataFrame) -> Verdict | None:
    """INIT_STALL where torchrun's agent raised with its error line cut, the excerpt shows the lines before
    its traceback, and none of them is a worker's or says a worker ended: launch_agent runs the rendezvous
    before it starts any worker (torch/distributed/elastic/agent/server/api.py SimpleElasticAgent.run ->
    _initialize_workers -> _rendezvous, then _start_workers), and a worker's failure shows before the
    agent's ChildFailedError (the worker's own traceback, the agent's ``failed (exitcode: N) local_rank: R``
    line): with neither, the agent failed in its rendezvous (RendezvousTimeoutError, a store it cannot
    reach)."""
    row = cut.row(0, named=True)
    if row["line"] <= 3:  # (its first frame's line: two lines or fewer before its `Traceback` head)
        return None  # (the excerpt begins at the traceback: what came before is not shown)
    others = ev.store.events.filter(pl.col("kind").is_in(WORKER_SAID))
    raised = ev.kinds(EventKind.EXCEPTION, EventKind.STACK).join(cut.select("file"), on="file", how="anti")
    if others.height or raised.height or ev.store.comms.height or ev.store.collectives.height:
        return None
    if ev.kinds(EventKind.STACK).filter(~pl.col("where").fill_null("").str.contains(AGENT_FRAME)).height:
        return None
    return Verdict(Kind.INIT_STALL, f"start-up never completed: torchrun's agent raised in "
                   f"{clip(row['where'], 140)} (its error line is cut) and no worker had said anything: the "
                   "lines before its traceback are the launcher's own, with no worker's output and no "
                   "`failed (exitcode: N) local_rank: R` line of a worker that ended; launch_agent runs the "
                   "rendezvous before it starts its workers, so it failed there (RendezvousTimeoutError: "
                   "not every node joined in time, or the rendezvous endpoint was not reachable): check "
                   "--rdzv-endpoint / --master-addr reach the first node from every node and that every node "
                   "was launched", [], lines(cut, 2))
