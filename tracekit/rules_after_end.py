"""A stop from outside read against what the job said before it (issue 31, fail31b).

A signal the launcher received (torchelastic's ``Received 15 death signal, shutting down workers``) or
the scheduler's cancel (slurmstepd's ``CANCELLED AT ... DUE TO TIME LIMIT``) is a kill from outside only
where the job was still at work when it came and nothing else explains it. Two shapes say otherwise:

- the program said its work ended before it (its own end line, ``END``: `Training completed`, `Rank 3:
  finished`, Megatron's `[after training is done]`, the HF Trainer's `{'train_runtime': ...}`, torchelastic's
  `worker group successfully finished`): no rank failed and the stop
  ended a process that outlived its work (its teardown), not the run (a progress bar at 100% is not such a
  line: it may be one epoch's);
- the scheduler's time limit with no progress logged (no step past the first): a time limit ends a job
  that hung as often as one that was slow, and the lines do not say which.

Both are UNDECIDED here, saying what is seen and what decides it, never CRASHED_RANK.
"""

from __future__ import annotations

import polars as pl

from tracekit import last_run
from tracekit.evidence import Evidence, clip, lines
from tracekit.wording import who
from tracekit.outcome import Cited, Kind, Verdict

#: a program's own word that its work ended (``last_run.END``, defined there, where the rules that read it are not
#: imported)
END = last_run.END


def work_ended_before(ev: Evidence, at: pl.DataFrame) -> pl.DataFrame:
    """The program's own end lines before the first of ``at`` in the same file, in log order."""
    first = at.group_by("file").agg(pl.col("line").min().alias("_at"))
    done = last_run.job_ends(ev, ev.kinds(*END).select("file", "line", "message"))
    return done.join(first, on="file").filter(pl.col("line") < pl.col("_at")).sort("file", "line")


def stopped_after_its_end(ev: Evidence, at: pl.DataFrame, stop: str) -> Verdict | None:
    """UNDECIDED where the program said its work ended (``work_ended_before``) before the stop ``at``
    (``stop``: how the stop is said): the process did not exit in time; no rank failed."""
    done = work_ended_before(ev, at)
    if not done.height:
        return None
    e = done.row(-1, named=True)
    return Verdict(Kind.UNDECIDED, f"the program said its work ended ({clip(e['message'], 100)}) before "
                   f"{stop}: the process did not exit in time (its teardown: a profiler's shutdown, "
                   "destroy_process_group, data loader workers, a checkpoint's write, a hub upload); no rank "
                   "failed; py-spy dump --pid of a rank after its end line says where it waits", [],
                   [Cited(e["file"], e["line"], e["message"])] + lines(at, 1))


def time_limit_without_progress(ev: Evidence, cancel: pl.DataFrame) -> Verdict | None:
    """UNDECIDED where the scheduler's cancel is its time limit and no progress is logged (no step past the
    first: `running step 1/10` is where it started, not that it advanced): whether the job hung (the limit
    then ends a hang: which rank stopped is the fact) or was still working is not in the lines."""
    advanced = (last_run.last_steps(ev)["step"].drop_nulls().max() or 0) > 1
    if advanced or not cancel["message"].str.contains("DUE TO TIME LIMIT").any():
        return None
    last = ev.store.events.filter((pl.col("file") == cancel["file"][0]) & (pl.col("line") < cancel["line"][0])
                                  & pl.col("message").is_not_null()).sort("line").tail(1)
    said = f"; the last line before it: `{clip(last['message'][0], 120)}`" if last.height else ""
    if (unstarted := last_run.earlier_ranks(ev)):
        return _never_started(ev, cancel, unstarted)
    return Verdict(Kind.UNDECIDED, "the scheduler ended the job at its time limit "
                   f"({clip(cancel['message'][0], 120)}); no rank failed before it, and no progress logged (no "
                   f"step past the first) shows whether the job was still working or hung until the limit{said}; "
                   "a time limit reached by a job that stopped "
                   "advancing is a hang: each rank's last step line (which ranks never reached the last step "
                   "the others did), py-spy dump --pid of every rank before the limit, or `tracekit run` "
                   "(stack dumps when progress stops) decide it", [], lines(cancel, 2) + lines(last, 1))


def raised_then_ended(ev: Evidence, first: pl.DataFrame, name: str) -> Verdict | None:
    """UNDECIDED where the program said its work ended (``END``) after the first failure
    ``first`` in the same file: the exception did not end the run (a callback's or a logger's error
    printed and caught, a warning with an error word, a retry that then worked); whether the processes then
    exited cleanly is what decides it, not the exception."""
    row = first.row(0, named=True)
    done = ev.kinds(*END).filter((pl.col("file") == row["file"]) & (pl.col("line") > row["line"])).sort("line")
    if not done.height:
        return None
    e = done.row(-1, named=True)
    return Verdict(Kind.UNDECIDED, f"{name} raised ({clip(row['message'], 160)}), but the program said its work "
                   f"ended after it ({clip(e['message'], 100)}): the exception did not end the run (caught and "
                   "printed by a callback or a logger, a retry that then worked, a warning with an error word); "
                   "each rank's exit code (0 for all: healthy) decides it",
                   [], lines(first, 1) + [Cited(e["file"], e["line"], e["message"])])


def _never_started(ev: Evidence, cancel: pl.DataFrame, unstarted: list[int]) -> Verdict:
    """DEADLOCK where the job ran its work again (``last_run``: its step count starts again after an end),
    the ranks ``unstarted`` stepped in an earlier run and never logged a step of the last one, the others
    logged its first step and no further, and the scheduler's time limit ended it: the others wait at that
    step's first collective for ranks that never issued it."""
    steps = last_run.last_steps(ev).filter(pl.col("rank").is_not_null())
    began = steps["rank"].unique().sort().to_list()
    return Verdict(Kind.DEADLOCK, f"{who(unstarted)} never started the last run: the job ran its work again "
                   f"after an end (its step count starts again), {len(began)} rank(s) logged its first step "
                   f"(`{clip(steps['message'][0], 80)}`) and no further, and {who(unstarted)}, which stepped in "
                   f"the run before, logged none of it; the scheduler ended the job at its time limit "
                   f"({clip(cancel['message'][0], 120)}): the others waited at the first step's collective for "
                   f"{who(unstarted)}; py-spy dump --pid of {who(unstarted)} (or `tracekit run`) says where "
                   "they stopped before it", unstarted, lines(steps, 2) + lines(cancel, 1))
