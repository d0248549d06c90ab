"""Steps that start again after an end: a new run in the same file (issue 31, stall33b).

A job that runs its work several times in one allocation (a reproducer's trials, a sweep's runs, a script
that trains again after an evaluation) prints an end line for each run (`RANK 27: COMPLETE!`, `Training
completed`) and then its step count starts again (`RANK 22: running step 1/10` after step 10). Such an end
covers only the run before it, not the job: the verdict is about the last run, and what decides it is read
from that run's steps (which ranks never reached its first step).

A run starts again where a step line after an end (``rules_after_end.END``, each rank's own) goes back to
the first step of the same count before the end (a line of the same words, its numbers aside: no higher than
the lowest step of that count) while that count went past it. A count that goes on (a resume at step 101), a
step repeated in a final summary, or another loop's count after the end (an evaluation's `Evaluating iter
1/1` after training) is no restart.
"""

from __future__ import annotations

import polars as pl

from tracekit.evidence import Evidence
from tracekit.outcome import EventKind

#: a program's own word that its work ended: its end line, the HF Trainer's final metrics, a launcher's word that
#: the workers exited 0 (a progress bar at 100% is none: it may be one epoch's); ``rules_after_end.END`` is this
END = (EventKind.PROGRAM_END, EventKind.TRAIN_END, EventKind.CLEAN_EXIT)


def restarts(ev: Evidence) -> pl.DataFrame:
    """Per file, the line where its last run starts (``_from``): the first step line after its last end that
    a new step count follows (none where the file's steps never start again after an end)."""
    steps = ev.steps.filter(pl.col("step").is_not_null()).select(
        "file", "line", "step", pl.col("message").fill_null("").str.replace_all(r"\d+", "#").alias("_shape"))
    done = ev.kinds(*END).select("file", pl.col("line").alias("_end"))
    if not steps.height or not done.height:
        return pl.DataFrame(schema={"file": pl.Utf8, "_from": pl.Int64})
    pairs = done.join(steps, on="file")
    # (a count of another shape after the end, an evaluation's `Evaluating iter 1/1`, is another loop's)
    before = pairs.filter(pl.col("line") < pl.col("_end")).group_by("file", "_end", "_shape").agg(
        pl.col("step").min().alias("_low"), pl.col("step").max().alias("_high"))
    after = pairs.filter(pl.col("line") > pl.col("_end")).join(before, on=["file", "_end", "_shape"])
    again = after.filter((pl.col("_high") > pl.col("_low")) & (pl.col("step") <= pl.col("_low")))
    return (again.filter(pl.col("_end") == pl.col("_end").max().over("file"))
            .group_by("file").agg(pl.col("line").min().alias("_from")))


def job_ends(ev: Evidence, done: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``done`` (end lines: file, line) that may be the job's end: those no new run follows."""
    start = restarts(ev)
    if not start.height or not done.height:
        return done
    return (done.join(start, on="file", how="left")
            .filter(pl.col("_from").is_null() | (pl.col("line") > pl.col("_from"))).drop("_from"))


def last_steps(ev: Evidence) -> pl.DataFrame:
    """``ev.steps`` of each file's last run (all of them where no run starts again)."""
    start = restarts(ev)
    if not start.height:
        return ev.steps
    return (ev.steps.join(start, on="file", how="left")
            .filter(pl.col("_from").is_null() | (pl.col("line") >= pl.col("_from"))).drop("_from"))


def earlier_ranks(ev: Evidence) -> list[int]:
    """The ranks that logged a step in a run before the last one and none in the last (they never started
    it): empty where no run starts again."""
    start = restarts(ev)
    if not start.height:
        return []
    s = ev.steps.join(start, on="file").filter(pl.col("rank").is_not_null())
    before = set(s.filter(pl.col("line") < pl.col("_from"))["rank"].to_list())
    last = set(s.filter(pl.col("line") >= pl.col("_from"))["rank"].to_list())
    return sorted(before - last) if last else []
