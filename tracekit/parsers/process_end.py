"""One decoder of "a process ended", for every launcher and runtime that says so (read by ``torch_log``).

Who ended (rank, pid, host where the line names them), how (an exit code, a signal, an exception) and
what said it (``where``), as ``events`` rows of the kinds that exist for it:

- ``child_failed``: a launcher's word that one of its processes ended with a non-zero code or a signal:
  DeepSpeed's ``[...] exits with return code = -9`` (launch.py ``sigkill_handler``; the command it
  prints is its LAST local rank's, the loop variable, not the failed one's, so no rank is read from it);
  ``CalledProcessError: Command '[...]' died with <Signals.SIGSEGV: 11>`` / ``returned non-zero exit
  status 1`` of ``torch.distributed.launch`` before torchelastic (the first worker in launch order
  that failed, again with the last worker's command) or ``accelerate launch``;
  ``torch.multiprocessing.spawn``'s ``-- Process 0 terminated with the following error:`` (the
  exception that ends the traceback under it is the cause; the process exits with code 1) and
  ``ProcessExitedException: process 1 terminated with signal SIGKILL``; mpirun's ``process rank 0 with
  PID 812 on node n1 exited on signal 11 (Segmentation fault)`` and ``Primary job terminated normally,
  but 1 process returned a non-zero exit code`` (which one: mpirun's ``Process name`` block,
  ``parsers/mpi``); Slurm's ``srun: error: node1: task 3: Exited with exit code 1`` (or ``Killed``,
  ``Segmentation fault``); vLLM's worker ``Error executing method init_device. This might cause
  deadlock in distributed execution.`` (the method raised in that worker; the exception ending its
  traceback, where shown, is the cause).
- ``rank_exit``: torchrun's ChildFailedError summary pasted without its line breaks
  (``rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>``).
- ``signal``: a signal that reached a process: torchelastic's agent ``Received 1 death signal, shutting
  down workers`` (SIGTERM, SIGINT, SIGHUP or SIGQUIT from outside the job: ``where`` = torchelastic
  agent), DeepSpeed's launcher ``Main process received SIGTERM, exiting``, gdb's ``Thread 787 "python"
  received signal SIGBUS, Bus error.`` (with the function of the frame gdb shows next), Slurm's
  ``Detected 1 oom-kill event(s) in StepId=12.0`` (the step's cgroup OOM killer).
- ``child_failed`` of ``where`` = ``launcher ssh``: a launcher that could not reach a host over ssh before
  starting ranks there (DeepSpeed's ssh check, pdsh's `ssh exited with exit code 255`).
- ``child_failed`` of ``where`` = ``paddle launcher``: PaddlePaddle's launcher ``ABORT!!! Out of all 2
  trainers, the trainer process with rank=[0, 1] was aborted. Please check its log.`` (those trainers'
  processes returned non-zero; the row names the first, ``torch_log`` each as a rank of a world of N).
- ``program_end``: a program's own bare word that a rank finished its work (``Rank 4 completed``), read
  only where the line itself names the rank.

Messages name the signal (``SIGKILL (signal 9)``) so that the rules read one wording whatever said it.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.parsers import any_of
from tracekit.schema import EventKind

# Linux's numbers: the logs come from Linux hosts, whatever this machine is
SIGNALS = {"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6, "SIGBUS": 7,
           "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12, "SIGPIPE": 13,
           "SIGALRM": 14, "SIGTERM": 15}
SIGNAL_NAMES = {n: s for s, n in SIGNALS.items()}

# (torch 2.4 prints the signal's enum: `Received Signals.SIGTERM death signal`)
DEATH = r"Received (?:(?P<signum>\d+)|Signals\.(?P<signal>SIG\w+)) death signal, shutting down workers"
# the agent's own exception at the end of its traceback (torch/distributed/elastic/multiprocessing/api.py)
AGENT_SIGNALED = r"SignalException: Process (?P<pid>\d+) got signal: (?P<signum>\d+)"
DS_MAIN = r"Main process received (?P<signal>SIG\w+), exiting"
DS_RETURN = r"exits with return code = (?P<exit_code>-?\d+)"
# the command DeepSpeed's launcher logs as it stops (launch.py: ``cmd = [sys.executable, "-u",
# args.training_script, f"--local_rank={local_rank}"] + ...`` in its launch loop; sigkill_handler's
# ``logger.error(f"{cmd} exits with return code = ...")``): the loop's last command, so its local rank is
# the node's last worker, one the launcher started, not the one that failed
DS_LOCAL = r"sigkill_handler\] \[.*?'--local_rank=(?P<local_rank>\d+)'"
CALLED = (r"CalledProcessError: Command .*(?:died with <Signals\.(?P<signal>SIG\w+): \d+>"
          r"|returned non-zero exit status (?P<exit_code>-?\d+))")
SPAWN_RAISED = r"^-- Process (?P<proc>\d+) terminated with the following error:"
SPAWN_EXITED = (r"process (?P<proc>\d+) terminated with (?:signal (?P<signal>SIG\w+)"
                r"|exit code (?P<exit_code>-?\d+))")
# Open MPI / PRRTE help text (`[orterun:proc-aborted-strsignal]`, `[prun:proc-aborted]`): `%s noticed that
# process rank %lu with PID %lu on node %s exited on signal %d (%s).` (the tool's name first: mpirun,
# mpiexec, orterun, prterun; the signal's name only where strsignal gives one); users mask the pid and
# node before posting (`PID xxxxxx on node xxxxxxxx`): the rank and the signal still say who and how
MPI_SIGNAL = (r"process rank (?P<rank>\d+) with PID (?P<pid>\S+) on node (?P<host>[\w.\-]+) exited on signal "
              r"(?P<signum>\d+)(?: \((?P<what>[^)]+)\))?")
# HPE Cray PALS's mpiexec (Aurora, Polaris): `x1921c7s6b0n0.hostmgmt2000.cm.americas.sgi.com: rank 418 died from
# signal 11` (and `and dumped core`): the rank is the job's global rank, the host its node
PALS_SIGNAL = r"^(?:(?P<host>[\w.\-]+): )?rank (?P<rank>\d+) died from signal (?P<signum>\d+)"
# a rank's own MPI_Abort: Open MPI's help-mpi-api.txt `MPI_ABORT was invoked on rank %d in communicator %s`
# / `with errorcode %d.` (the rank is the communicator's: the global one in MPI_COMM_WORLD); MPICH's
# `application called MPI_Abort(MPI_COMM_WORLD, 1) - process 3`
MPI_ABORT = (r"MPI_ABORT was invoked on rank (?P<rank>\d+) in communicator (?P<comm>[\w.\-]+)"
             r"(?:\s+with errorcode (?P<exit_code>-?\d+))?"
             r"|application called MPI_Abort\((?P<comm2>[\w.\-]+), (?P<code2>-?\d+)\)"
             r" - process (?P<rank2>\d+)")
ERRORCODE = r"^\s*with errorcode (?P<exit_code>-?\d+)\."
# Open MPI's help-orterun.txt `[orterun:proc-exit-no-sync]`: `%s has exited due to process rank %lu with PID
# %lu on` / `node %s exiting improperly.` (the process ended without MPI_Finalize: its own output says why)
MPI_IMPROPER = (r"has exited due to process rank (?P<rank>\d+) with PID (?P<pid>\S+) on"
                r"(?:\s+node (?P<host>[\w.\-]+) exiting improperly)?")
MPI_NONZERO = r"^Primary job\s+terminated normally, but (?P<n>\d+) process(?:es)? returned"
MPI_NONZERO_2 = r"^a non-zero exit code\. Per user-direction, the job has been aborted\."
GDB = r"(?:^Thread \d+ \"[^\"]*\"|^Program) received signal (?P<signal>SIG\w+), (?P<what>[\w ]+)"
GDB_FRAME = r"^(?:#\d+\s+)?0x[0-9a-f]+ in (?P<fn>[\w:~]+)"
VLLM = r"Error executing method (?P<method>\w+)\. This might cause deadlock in distributed execution"
# Slurm: srun's word of each task that ended (a task is a rank where srun starts one per rank, a node's
# launcher where it starts torchrun per node: no rank is read from it; text.py may have taken `srun: ` off
# as a host prefix), and the step's cgroup OOM killer
SRUN = (r"^(?:srun: )?error: (?P<host>[\w.\-]+): tasks? (?P<task>[\d\-,]+): (?P<what>Exited with exit code "
        r"(?P<exit_code>\d+)|Killed|Segmentation fault|Aborted|Terminated|Bus error)")
# a shell's word of a job it ran that a signal ended (bash's job status: `./run.sh: line 190: 30139 Aborted
# (core dumped) python train.py`, `/bin/bash: line 1:  4242 Killed  python train.py`: the status padded to
# its column, then the command): that process's end
SHELL = (r"(?:^|\s|: )line \d+:\s+(?P<pid>\d+) (?P<what>Killed|Segmentation fault|Aborted|Bus error|Terminated"
         r"|Floating point exception|Illegal instruction)(?: +\(core dumped\)\s+|\s{2,})(?P<cmd>\S.*)$")
SRUN_CODES = {"Killed": -9, "Segmentation fault": -11, "Aborted": -6, "Terminated": -15, "Bus error": -7,
              "Floating point exception": -8, "Illegal instruction": -4}
# Horovod's gloo launcher (horovod/runner/gloo_run.py, _exec_command: `Process {idx} exit with status code {ec}.`,
# idx the slot's rank): that rank's end, a shell's code (134: SIGABRT) (stall33)
HOROVOD_EXIT = r"(?:^|\]\s*|>:\s*)Process (?P<rank>\d+) exit with status code (?P<exit_code>-?\d+)\b"
CGROUP_OOM = r"Detected \d+ oom[-_]kill event(?:s|\(s\))? in (?:StepId=|step )?(?P<step>[\w.]+)"
FLAT_CHILD = (r"rank\s*:?\s*(?P<rank>\d+)\s*\(local[_ ]rank:\s*(?P<local_rank>\d+)\)\s*exitcode\s*:\s*"
              r"(?P<exit_code>-?\d+)\s*\(pid:\s*(?P<pid>\d+)\)")
# a launcher's check that it reaches a host over ssh before it starts ranks there failing: DeepSpeed's
# runner.py (`ssh -o PasswordAuthentication=no HOST hostname` under check_call, then `host=HOST was not
# reachable via ssh`) and pdsh (`pdsh@node1: node2: ssh exited with exit code 255`)
SSH = (r"CalledProcessError: Command '(?:ssh|pdsh)\b[^']*?(?P<host>[\w.\-]+) hostname' returned non-zero "
       r"exit status (?P<exit_code>\d+)|host=(?P<host2>[\w.\-]+) was not reachable via ssh"
       r"|pdsh@[\w.\-]+: (?P<host3>[\w.\-]+): ssh exited with exit code (?P<code3>\d+)")
# PyTorch's distributed test harness (torch/testing/_internal/common_distributed.py; test_distributed.py
# before it): test process N is rank N; error code 10 is its exit on an exception in the test body
HARNESS_EXIT = (r"Process(?:es)? (?P<procs>\d+(?: \d+)*) exited with error code (?P<exit_code>\d+)")
# its check of the first process's exit code (MultiProcessTestCase._check_return_codes: ``msg=f"Expected zero
# exit code but got {first_process.exitcode} for pid: {first_process.pid}"``, under its AssertionError
# ``Scalars are not equal!``): a negative code is the signal that ended that process (multiprocessing's
# exitcode ``-N``)
HARNESS_CODE = r"Expected zero exit code but got (?P<exit_code>-?\d+) for pid: (?P<pid>\d+)"
HARNESS_HUNG = (r"Process (?P<proc>\d+) (?:terminated or )?timed out after (?P<secs>[\d.]+) seconds"
                r"|Timeout waiting for rank (?P<rank>\d+) to terminate")
# a program's own word that a rank finished its work, in the bare form `Rank 4 completed` (a ``program_end``
# of that rank; trainer.py reads the longer forms, `Rank 0: End of workload.`): only where the line itself
# names the rank (a bare `done` under a launcher's prefix ends a step as often as a program)
# PaddlePaddle's launcher (paddle/distributed/utils/launch_utils.py, fleet/launch_utils.py
# watch_local_trainers): the trainers whose process returned non-zero, and the number of all trainers
PADDLE_ABORT = (r"ABORT!!! Out of all (?P<n>\d+) trainers, the trainer process with "
                r"rank=\[(?P<ranks>[\d,\s]*)\] was aborted")
PROGRAM_END = r"^\[?[Rr]ank[ _]?(?P<rank>\d+)\]?:?\s+(?:[Cc]ompleted|[Ff]inished)\s*[.!]?\s*$"
# a traceback's frame: `  File "/x/train2.py", line 685, in compute_loss`
FRAME = r"^\s*File \"([^\"]+)\", line \d+, in (\S+)"
# the end of a Python traceback: the exception a spawned process raised
RAISED = r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Interrupt)\b:?"

#: every line this decoder understands
ANY = any_of(DEATH, AGENT_SIGNALED, DS_MAIN, DS_RETURN, CALLED, SPAWN_RAISED, SPAWN_EXITED, MPI_SIGNAL,
             PALS_SIGNAL, MPI_ABORT, MPI_IMPROPER, SHELL,
             MPI_NONZERO, MPI_NONZERO_2, GDB, VLLM, FLAT_CHILD, SRUN, CGROUP_OOM, PROGRAM_END, SSH,
             HARNESS_EXIT, HARNESS_CODE, HARNESS_HUNG, PADDLE_ABORT, HOROVOD_EXIT)
#: lines whose exception text is this decoder's (``torch_log`` reads no exception from them)
NOT_EXCEPTIONS = any_of(CALLED, SPAWN_EXITED, AGENT_SIGNALED, r"ProcessRaisedException:\s*$", HARNESS_EXIT,
                        HARNESS_HUNG)


def _sig(name: pl.Expr) -> pl.Expr:
    """``SIGKILL`` -> ``SIGKILL (signal 9)``."""
    num = name.replace_strict(SIGNALS, default=None, return_dtype=pl.Int64)
    return pl.format("{} (signal {})", name, num.cast(pl.Utf8).fill_null("?"))


def decode(lines: pl.DataFrame) -> pl.DataFrame | None:
    """``events`` rows (file, line, ts, rank, pid, host, kind, exit_code, message, where) of every
    process end the lines tell; None where they tell none."""
    t = pl.col("text")
    lines = lines.with_columns(pl.lit(None, pl.Int64).alias(c) for c in ("rank", "ray_pid")
                               if c not in lines.columns)
    lines = lines.with_columns(pl.lit(None, pl.Utf8).alias(c) for c in ("ray_ip", "pdsh_host")
                               if c not in lines.columns)
    # (Open MPI's notices go on on the next line: `with errorcode 1.`, `node gpu07 exiting improperly.`)
    lines = lines.with_columns(t.shift(-1).over("file").alias("_next"))
    mine = lines.filter(t.str.contains(ANY))
    if not mine.height:
        return None
    out = []

    def rows(pattern: str, kind: str, where: str, message: pl.Expr, unless: str | None = None,
             **cols: pl.Expr) -> None:
        sub = mine.filter(t.str.contains(pattern) & (~t.str.contains(unless) if unless else pl.lit(True)))
        if sub.height:
            g = t.str.extract_groups(pattern).struct
            sub = sub.with_columns(g.field(n).alias(f"_{n}") for n in re.compile(pattern).groupindex)
            # a launcher's line is the launcher's, not a rank's: a rank only where the line names one (its
            # host where pdsh's prefix names it)
            cols = {"rank": pl.lit(None, pl.Int64), "host": pl.col("pdsh_host"), **cols}
            out.append(sub.with_columns(pl.lit(kind).alias("kind"), pl.lit(where).alias("where"),
                                        message.alias("message"), **cols))

    signum = pl.col("_signum").cast(pl.Int64, strict=False)
    by_number = signum.replace_strict(SIGNAL_NAMES, default=None, return_dtype=pl.Utf8)
    named = pl.coalesce("_signal", by_number)
    rows(DEATH, EventKind.SIGNAL, "torchelastic agent",
         pl.format("the torchrun agent received {} from outside the job and shut its workers down",
                   pl.when(named.is_not_null()).then(_sig(named))
                   .otherwise(pl.format("signal {}", "_signum"))))
    rows(AGENT_SIGNALED, EventKind.SIGNAL, "torchelastic agent",
         pl.format("the torchrun agent (pid {}) received {} from outside the job and shut its workers down",
                   "_pid", pl.when(by_number.is_not_null()).then(_sig(by_number))
                   .otherwise(pl.format("signal {}", "_signum"))),
         pid=pl.col("_pid").cast(pl.Int64, strict=False))
    rows(DS_MAIN, EventKind.SIGNAL, "deepspeed launcher",
         pl.format("the DeepSpeed launcher received {} from outside the job and killed its workers",
                   _sig(pl.col("_signal"))))
    rows(DS_RETURN, EventKind.CHILD_FAILED, "deepspeed launcher",
         pl.format("the DeepSpeed launcher: a local rank exited with return code {}", "_exit_code"),
         exit_code=pl.col("_exit_code").cast(pl.Int64, strict=False))
    by_signal = -pl.col("_signal").replace_strict(SIGNALS, default=None, return_dtype=pl.Int64)
    called_code = pl.coalesce(by_signal, pl.col("_exit_code").cast(pl.Int64, strict=False))
    rows(SSH, EventKind.CHILD_FAILED, "launcher ssh",
         pl.format("the launcher could not reach {} over ssh{}", pl.coalesce("_host", "_host2", "_host3"),
                   pl.when(pl.coalesce("_exit_code", "_code3").is_not_null())
                   .then(pl.format(" (exit status {})", pl.coalesce("_exit_code", "_code3")))
                   .otherwise(pl.lit(""))),
         host=pl.coalesce("_host", "_host2", "_host3"),
         exit_code=pl.coalesce("_exit_code", "_code3").cast(pl.Int64, strict=False))
    rows(CALLED, EventKind.CHILD_FAILED, "launcher",
         pl.when(pl.col("_signal").is_not_null())
         .then(pl.format("a launched worker died with {} (CalledProcessError)", _sig(pl.col("_signal"))))
         .otherwise(pl.format("a launched worker returned non-zero exit status {} (CalledProcessError)",
                              "_exit_code")),
         unless=SSH, exit_code=called_code)
    rows(SPAWN_EXITED, EventKind.CHILD_FAILED, "torch.multiprocessing.spawn",
         pl.when(pl.col("_signal").is_not_null())
         .then(pl.format("torch.multiprocessing.spawn: process {} (local rank {}) was ended by {}", "_proc",
                         "_proc", _sig(pl.col("_signal"))))
         .otherwise(pl.format("torch.multiprocessing.spawn: process {} (local rank {}) exited with code {}",
                              "_proc", "_proc", "_exit_code")),
         exit_code=called_code)
    masked = pl.col("_pid").cast(pl.Int64, strict=False).is_null()  # (`PID xxxxxx on node xxxxxxxx`)
    rows(MPI_SIGNAL, EventKind.CHILD_FAILED, "mpirun",
         pl.format("mpirun: rank {}{} ended by {}{}", "_rank",
                   pl.when(masked).then(pl.lit("")).otherwise(pl.format(" (pid {}) on {}", "_pid", "_host")),
                   pl.when(by_number.is_not_null()).then(_sig(by_number))
                   .otherwise(pl.format("signal {}", "_signum")),
                   pl.when(pl.col("_what").is_not_null()).then(pl.format(" ({})", "_what"))
                   .otherwise(pl.lit(""))),
         rank=pl.col("_rank").cast(pl.Int64), pid=pl.col("_pid").cast(pl.Int64, strict=False),
         host=pl.when(masked).then(pl.lit(None, pl.Utf8)).otherwise(pl.col("_host")), exit_code=-signum)
    rows(PALS_SIGNAL, EventKind.CHILD_FAILED, "mpiexec",
         pl.format("mpiexec: rank {}{} ended by {}", "_rank",
                   pl.when(pl.col("_host").is_not_null()).then(pl.format(" on {}", "_host")).otherwise(pl.lit("")),
                   pl.when(by_number.is_not_null()).then(_sig(by_number)).otherwise(pl.format("signal {}", "_signum"))),
         rank=pl.col("_rank").cast(pl.Int64), host=pl.col("_host"), exit_code=-signum)
    host = pl.coalesce("_host", pl.col("_next").str.extract(r"^\s*node ([\w.\-]+) exiting improperly", 1))
    rows(MPI_IMPROPER, EventKind.CHILD_FAILED, "mpirun",
         pl.format("mpirun: rank {}{} exited improperly (it ended without MPI_Finalize: its own output says "
                   "why)", "_rank", pl.when(host.is_not_null()).then(pl.format(" on {}", host))
                   .otherwise(pl.lit(""))),
         rank=pl.col("_rank").cast(pl.Int64), pid=pl.col("_pid").cast(pl.Int64, strict=False), host=host)
    code = pl.coalesce("_exit_code", "_code2", pl.col("_next").str.extract(ERRORCODE, 1)).cast(pl.Int64,
                                                                                              strict=False)
    comm = pl.coalesce("_comm", "_comm2")
    rows(MPI_ABORT, EventKind.CHILD_FAILED, "mpi",
         pl.format("rank {} of {} called MPI_Abort with error code {} (the program's own abort: the error it "
                   "printed before says why)", pl.coalesce("_rank", "_rank2"), comm,
                   code.cast(pl.Utf8).fill_null("?")),
         rank=pl.when(comm == "MPI_COMM_WORLD").then(pl.coalesce("_rank", "_rank2").cast(pl.Int64)),
         exit_code=code)
    rows(MPI_NONZERO, EventKind.CHILD_FAILED, "mpirun",
         pl.format("mpirun: {} process(es) returned a non-zero exit code and mpirun aborted the job", "_n"))
    rows(SRUN, EventKind.CHILD_FAILED, "srun",
         pl.format("srun: task {} on {} ended: {}", "_task", "_host", "_what"), host=pl.col("_host"),
         exit_code=pl.coalesce(
             pl.col("_exit_code").cast(pl.Int64, strict=False),
             pl.col("_what").replace_strict(SRUN_CODES, default=None, return_dtype=pl.Int64)))
    rows(SHELL, EventKind.CHILD_FAILED, "shell",
         pl.format("the shell's job {} ({}) ended: {}", "_pid", pl.col("_cmd").str.slice(0, 80), "_what"),
         pid=pl.col("_pid").cast(pl.Int64, strict=False),
         exit_code=pl.col("_what").replace_strict(SRUN_CODES, default=None, return_dtype=pl.Int64))
    rows(HOROVOD_EXIT, EventKind.CHILD_FAILED, "horovod launcher",
         pl.format("horovodrun: rank {} exited with status code {}", "_rank", "_exit_code"),
         rank=pl.col("_rank").cast(pl.Int64), exit_code=pl.col("_exit_code").cast(pl.Int64, strict=False))
    rows(CGROUP_OOM, EventKind.SIGNAL, "slurm",
         pl.format("slurm: the cgroup OOM killer of step {} killed a process with SIGKILL (signal 9): the "
                   "job's host memory ran out", "_step"))
    rows(FLAT_CHILD, EventKind.RANK_EXIT, "torchrun",
         pl.format("rank {} (local_rank {}) exited with code {}", "_rank", "_local_rank", "_exit_code"),
         rank=pl.col("_rank").cast(pl.Int64), pid=pl.col("_pid").cast(pl.Int64),
         exit_code=pl.col("_exit_code").cast(pl.Int64))
    # (the exception that ends the traceback under it, where the excerpt holds it, is the cause)
    rows(VLLM, EventKind.CHILD_FAILED, "vllm worker",
         pl.format("a vLLM worker raised in its method {} (Error executing method {}; vLLM: this might "
                   "cause a deadlock)", "_method", "_method"),
         rank=pl.col("rank"), pid=pl.col("ray_pid").cast(pl.Int64, strict=False), host=pl.col("ray_ip"))
    rows(HARNESS_EXIT, EventKind.CHILD_FAILED, "pytorch test harness",
         pl.format("the test harness: process(es) {} (rank {}) exited with error code {} (an exception in "
                   "the test body; its traceback is in that process's output)", "_procs",
                   pl.col("_procs").str.split(" ").list.first(), "_exit_code"),
         rank=pl.col("_procs").str.split(" ").list.first().cast(pl.Int64, strict=False),
         exit_code=pl.col("_exit_code").cast(pl.Int64, strict=False))
    code = pl.col("_exit_code").cast(pl.Int64, strict=False)
    by_code = (-code).replace_strict(SIGNAL_NAMES, default=None, return_dtype=pl.Utf8)
    rows(HARNESS_CODE, EventKind.CHILD_FAILED, "pytorch test harness",
         pl.format("the test harness: a test process (pid {}) ended with exit code {}{}", "_pid", "_exit_code",
                   pl.when(by_code.is_not_null()).then(pl.format(", killed by {}", _sig(by_code)))
                   .otherwise(pl.lit(""))),
         pid=pl.col("_pid").cast(pl.Int64, strict=False), exit_code=code)
    hung = pl.coalesce("_proc", "_rank").cast(pl.Int64, strict=False)
    rows(HARNESS_HUNG, EventKind.STALL, "pytorch test harness",
         pl.format("the test harness: rank {} never ended (it waited for the process and timed out{}): that "
                   "process hung", hung, pl.when(pl.col("_secs").is_not_null())
                   .then(pl.format(" after {} s", "_secs")).otherwise(pl.lit(""))), rank=hung)
    listed = pl.col("_ranks").str.replace_all(r"\s", "")
    rows(PADDLE_ABORT, EventKind.CHILD_FAILED, "paddle launcher",
         pl.format("the Paddle launcher: the trainer process(es) of rank(s) {} (of {} trainers) returned "
                   "non-zero and were aborted", listed, "_n"),
         rank=listed.str.split(",").list.first().cast(pl.Int64, strict=False))
    rows(PROGRAM_END, EventKind.PROGRAM_END, "program", t.str.strip_chars(),
         rank=pl.col("_rank").cast(pl.Int64, strict=False))
    gdb = _gdb(lines, mine)
    if gdb is not None:
        out.append(gdb)
    spawned = _spawn_raised(lines, mine)
    if spawned is not None:
        out.append(spawned)
    if not out:
        return None
    ev = pl.concat(out, how="diagonal_relaxed")
    ev = ev.with_columns(pl.lit(None, pl.Int64).alias(c) for c in ("pid", "exit_code") if c not in ev.columns)
    return ev.drop([c for c in ev.columns if c.startswith("_") or c == "text"])


def _gdb(lines: pl.DataFrame, mine: pl.DataFrame) -> pl.DataFrame | None:
    """gdb's ``received signal`` line, with the function of the frame it shows within the next lines."""
    t = pl.col("text")
    hit = mine.filter(t.str.contains(GDB))
    if not hit.height:
        return None
    frames = lines.filter(t.str.contains(GDB_FRAME)).select(
        "file", pl.col("line").alias("_at"), t.str.extract(GDB_FRAME, 1).alias("_fn")).sort("file", "_at")
    g = t.str.extract_groups(GDB).struct
    hit = hit.with_columns(g.field("signal").alias("_signal"), g.field("what").alias("_what"))
    hit = hit.sort("file", "line")
    hit = hit.join_asof(frames, left_on="line", right_on="_at", by="file", strategy="forward", tolerance=4,
                        check_sortedness=False)
    where = pl.when(pl.col("_fn").is_not_null()).then(pl.format(" in {}", "_fn")).otherwise(pl.lit(""))
    return hit.with_columns(pl.lit(EventKind.SIGNAL).alias("kind"), pl.lit("gdb").alias("where"),
                            pl.format("gdb: a thread received {} ({}){}", _sig(pl.col("_signal")), "_what",
                                      where).alias("message"))


def _spawn_raised(lines: pl.DataFrame, mine: pl.DataFrame) -> pl.DataFrame | None:
    """``-- Process N terminated with the following error:`` and the exception that ends the traceback
    under it: that process's cause (it then exits with code 1)."""
    t = pl.col("text")
    hit = mine.filter(t.str.contains(SPAWN_RAISED))
    if not hit.height:
        return None
    raised = lines.filter(t.str.contains(RAISED) & ~t.str.starts_with("Traceback")).select(
        "file", pl.col("line").alias("_at"), t.alias("_exc")).sort("file", "_at")
    hit = hit.with_columns(t.str.extract(SPAWN_RAISED, 1).alias("_proc")).sort("file", "line")
    hit = hit.join_asof(raised, left_on="line", right_on="_at", by="file", strategy="forward", tolerance=200,
                        check_sortedness=False)
    # where the exception is cut: the innermost frame the excerpt shows (the file's last), when it is the
    # program's own and not spawn's `_wrap` (then where it raised is known, only not what)
    frame = lines.filter(t.str.contains(FRAME)).group_by("file").agg(
        pl.col("line").max().alias("_fl"), t.sort_by("line").last().str.extract(FRAME, 2).alias("_fn"),
        t.sort_by("line").last().str.extract(FRAME, 1).str.extract(r"([^/]+)$", 1).alias("_ff"))
    hit = hit.join(frame, on="file", how="left")
    inner = pl.col("_exc").is_null() & (pl.col("_fl") > pl.col("line")) & (pl.col("_fn") != "_wrap")
    return hit.with_columns(
        pl.lit(EventKind.CHILD_FAILED).alias("kind"), pl.lit("torch.multiprocessing.spawn").alias("where"),
        # (spawn's child exits with code 1 after the exception; one the excerpt cuts says nothing more)
        pl.when(pl.col("_exc").is_not_null()).then(pl.lit(1, pl.Int64)).alias("exit_code"),
        pl.when(inner).then(pl.format("torch.multiprocessing.spawn: process {} (local rank {}) raised in {} "
                                      "({}); its exception is cut from the excerpt", "_proc", "_proc", "_fn",
                                      "_ff"))
        .otherwise(pl.format("torch.multiprocessing.spawn: process {} (local rank {}) raised {}", "_proc",
                             "_proc",
                             pl.col("_exc").fill_null("an exception its traceback does not show here")))
        .alias("message"))
