"""The progress half of the evidence: the steps, progress figures and Flight Recorder frontiers that say
a job moved, how fast, and the rank that makes the others wait; the exit codes `tracekit run` recorded.
``tracekit.evidence.Evidence`` inherits it (the rules read one object)."""

from __future__ import annotations

from functools import cached_property

import polars as pl

from tracekit import align, pace, sources
from tracekit.outcome import EventKind
from tracekit.store import Store


#: a process's start-up: a rank that logs one after the progress lines of its file started (or started again)
#: after them (parsers/trainer.py's train_start and server_up, launcher.py's elastic events, rank_joined,
#: c10d's ProcessGroupNCCL creation, DeepSpeed's configuration block)
START_UP = (EventKind.TRAIN_START, EventKind.RANK_JOINED, EventKind.ELASTIC_LAUNCH, EventKind.ELASTIC_RENDEZVOUS,
            EventKind.ELASTIC_REJOIN, EventKind.DEEPSPEED_CONFIG, EventKind.SERVER_UP, EventKind.PG_COMM)
#: the fewest progress reports with no step number (HF Trainer's loss dicts, transformers trainer.py ``log``:
#: ``{'loss': 1.23, ..., 'epoch': 0.5}`` each ``logging_steps``) whose epoch goes up that say the job moved
#: (s23: two reports of one loop are two points of it, as two counted lines of a series are; was 3)
MIN_REPORTS = 2


class Progress:
    """What says a job moved, computed once (mixed into ``Evidence``: it reads its ``store``)."""

    store: Store

    def kinds(self, *kinds: str) -> pl.DataFrame:
        return self.store.events.filter(pl.col("kind").is_in(kinds))

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
    def agent_finished(self) -> set[int]:
        """(s27) The ranks a file shows whose torchrun agent said its worker group succeeded
        (torch/distributed/elastic/agent/server/api.py _invoke_run: ``[default] worker group successfully
        finished. Waiting 300 seconds for other agents to finish.``, logged once every local worker exited
        0), where no rank's line comes after it: they ended with it."""
        agent = self.kinds(EventKind.CLEAN_EXIT).filter(pl.col("where") == "torchrun agent")
        if not agent.height:
            return set()
        end = agent.group_by("file").agg(pl.col("line").min().alias("_end"))
        later = self.store.events.filter(pl.col("rank").is_not_null()).join(end, on="file").filter(
            pl.col("line") > pl.col("_end"))["file"]
        shown = self.store.ranks.join(end.filter(~pl.col("file").is_in(later.to_list())), on="file", how="semi")
        return set(shown["rank"].drop_nulls().to_list())

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
    def loss_reports(self) -> pl.DataFrame:
        """(s26) A loss reported again and again with no counter and no pace (parsers/series.py's
        ``where="loss_reports"``), in the order written: each report is a logging interval's steps done."""
        st = self.kinds(EventKind.STEP)
        if "where" not in st.columns:
            return st.clear()
        return st.filter((pl.col("where") == "loss_reports") & pl.col("step").is_null()).sort("file", "line")

    @cached_property
    def progressed(self) -> list[str]:
        """Signs that the job moved: steps that advanced, an epoch that went up over several reports,
        FR frontiers that moved between dumps."""
        out = []
        st = self.steps
        if st.height and st["step"].n_unique() > 1:
            out.append(f"steps advanced {st['step'].min()} -> {st['step'].max()}")
        ep = self.epochs
        if not out and ep.height >= MIN_REPORTS and ep["epoch"][-1] > ep["epoch"][0]:
            out.append(f"{ep.height} progress reports as the epoch went {ep['epoch'][0]:g} -> "
                       f"{ep['epoch'][-1]:g}")
        lr = self.loss_reports
        if not out and lr.height >= MIN_REPORTS + 1:
            said = lr["message"].str.extract(r"(?i)\bloss\b\W{0,3}(?:loss=)?([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)", 1)
            out.append(f"{lr.height} loss reports, the loss going {said[0]} -> {said[-1]}")
        if self.motion.height and self.motion.filter(pl.col("last") > pl.col("first")).height:
            out.append("Flight Recorder frontiers moved between dumps")
        return out

    @cached_property
    def started_after_progress(self) -> dict | None:
        """The first start-up line (``START_UP``: an NCCL communicator's init, a rank joining its group, a
        trainer's or a server's start) that comes after the last progress line of its own file: a process
        that started, or started again, after the steps seen (a second rank's log that shows only its
        start-up, a restart), so the progress seen is not every process's. ``file``, ``line``, ``message``;
        None where no file has progress lines or none has a start-up after them."""
        prog = pl.concat([self.steps.select("file", "line"), self.ticks.select("file", "line"),
                          self.kinds(EventKind.STEP).select("file", "line")])
        if not prog.height:
            return None
        last = prog.group_by("file").agg(pl.col("line").max().alias("last"))
        comms = self.store.comms.filter(pl.col("state").is_in(["init_start", "init_complete"]))
        starts = pl.concat([self.kinds(*START_UP).select("file", "line", "message"),
                            comms.select("file", "line", pl.lit("NCCL communicator init").alias("message"))])
        after = (starts.join(last, on="file").filter(pl.col("line") > pl.col("last"))
                 .sort("file", "line"))
        return after.row(0, named=True) if after.height else None

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
    def pace(self) -> dict:
        """How fast the steps went, from what the step lines say (``pace.measure``): ``slow``, ``falling``,
        ``per_step_s``, ``rate``."""
        return pace.measure(self.steps)
