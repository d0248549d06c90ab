"""What Slurm's srun says of its tasks, read for their ranks (the launcher parser's part, ``launcher.parse``).

A task's id is Slurm's ``SLURM_PROCID`` (src/srun/srun.c): the job's global rank where each task is one
process of the job (``srun python train.py``, a task per GPU), a node's where a task starts a launcher of
its own (``srun --ntasks-per-node=1 torchrun ...``: its ``[rank3]:`` / ``[default3]:`` tags, the elastic
agent's words, NCCL lines of several processes under one task; torch-039's ``0: `` is the torchrun agent of
node 0). Two of srun's words name tasks: ``--label``'s ``12: `` before each line a task writes
(``task_tag``, ``tasks``), and its error about the tasks that ended badly (``srun: error: node12: tasks 1-3:
Out Of Memory``, src/srun/srun_job.c and launch.c, ``_task_finish``: a host then a task list of ids and
ranges, ``failed``). Horovod's ``Missing ranks:`` list (``0: [HorovodAllreduce_grads_0]``) is its own, read
by ``mpi``.
"""

from __future__ import annotations

import polars as pl

#: a line that shows a launcher below srun's task (the task is then a node, its id no rank)
LAUNCHER_BELOW = r"torch\.distributed\.elastic|torchrun|torch\.distributed\.run|\blocal_rank\b|^\[\w*\d+\]:"
HOROVOD_LIST = r"^\[[^\]]*(?:Horovod|allreduce\.|allgather\.|broadcast\.)"
NCCL_PROC = r"^\s*(?P<host>[\w.\-]+):(?P<pid>\d+):\d+ \["
#: srun's word about tasks that ended badly: `srun: error: HOST: task 1: Exited with exit code 1`, `... tasks
#: 8-13,15: Exited with exit code 1`, `... tasks 1-3: Out Of Memory`, `... task 0: Killed`
FAILED = r"^srun: error: (?P<host>[\w.\-]+): tasks? (?P<tasks>\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*): "


def _below(lines: pl.DataFrame) -> pl.Expr:
    """Whether a line shows a launcher or a launcher's prefix below srun's task."""
    t = pl.col("text")
    named = [pl.col(c).is_not_null() for c in ("launch_rank", "local_tag") if c in lines.columns]
    return pl.any_horizontal(t.str.contains(LAUNCHER_BELOW), *named)


def tasks(lines: pl.DataFrame) -> pl.DataFrame:
    """``file, host, pid, rank`` of each ``--label`` task whose file shows every task to be one process."""
    if "task_tag" not in lines.columns:
        return pl.DataFrame(schema={"file": pl.Utf8, "rank": pl.Int64})
    t = pl.col("text")
    tagged = _padded_apart(lines.filter(pl.col("task_tag").is_not_null() & ~t.str.contains(HOROVOD_LIST)))
    tagged = tagged.select(
        "file", pl.col("task_tag").cast(pl.Int64, strict=False).alias("rank"),
        t.str.extract(NCCL_PROC, 1).alias("host"), t.str.extract(NCCL_PROC, 2).cast(pl.Int64, strict=False)
        .alias("pid"), _below(tagged).alias("_below"))
    if not tagged.height:
        return tagged.select("file", "rank")
    one = tagged.group_by("file", "rank").agg(pl.col("pid").drop_nulls().n_unique().alias("_procs"),
                                              pl.col("_below").any())
    bad = one.filter((pl.col("_procs") > 1) | pl.col("_below")).select("file").unique()
    return (tagged.join(bad, on="file", how="anti").drop("_below")
            .unique(maintain_order=True).with_columns(pl.lit("launcher").alias("source")))


#: srun's `--label` padded to the width of the job's largest task id (` 8: ` beside `12: `)
PADDED = r"^( +)\d{1,5}: "


def _padded_apart(tagged: pl.DataFrame) -> pl.DataFrame:
    """The tagged lines less the padded tags (` 8: `) of a file whose tags are not all one width: srun pads
    every id to the largest one's, a pretty-printed dict's ` 1: 'a',` beside ` 10: 'k'` is no task."""
    if "raw" not in tagged.columns or not tagged["raw"].str.contains(PADDED).any():
        return tagged
    width = (pl.col("raw").str.extract(PADDED, 1).str.len_chars().fill_null(0)
             + pl.col("task_tag").cast(pl.Utf8).str.len_chars())
    padded = pl.col("raw").str.contains(PADDED)
    return tagged.filter(~padded | (width.min().over("file") == width.max().over("file")))


def failed(lines: pl.DataFrame) -> pl.DataFrame:
    """``file, host, rank`` of each task srun's error names (``FAILED``, its ranges spread), in a file that
    shows no launcher below the tasks (``LAUNCHER_BELOW``)."""
    t = pl.col("text")
    hit = lines.filter(t.str.contains(FAILED))
    if not hit.height:
        return pl.DataFrame(schema={"file": pl.Utf8, "host": pl.Utf8, "rank": pl.Int64})
    below = lines.filter(_below(lines)).select("file").unique()
    g = (hit.join(below, on="file", how="anti").select("file", t.str.extract_groups(FAILED).alias("_g"))
         .unnest("_g").with_columns(pl.col("tasks").str.split(",")).explode("tasks")
         .with_columns(pl.col("tasks").str.split("-").list.eval(pl.element().cast(pl.Int64)).alias("_r")))
    # (a range `8-13` is its every task; a list no longer than a job's tasks can be)
    g = g.filter((pl.col("_r").list.last() - pl.col("_r").list.first()).is_between(0, 4095))
    return (g.select("file", "host", pl.int_ranges(pl.col("_r").list.first(), pl.col("_r").list.last() + 1)
                     .alias("rank")).explode("rank")
            .unique(maintain_order=True).with_columns(pl.lit("launcher").alias("source")))
