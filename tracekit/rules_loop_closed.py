"""A training loop's progress bar that reached its total, the last thing the excerpt holds (issue 31, s32).

What it reads: the tqdm-style bars a trainer prints (Composer's ``Epoch   0:  100%|███| 48/48 [09:57<00:00,
12.45s/ba, loss/train/total=0.1521]``, Lightning's ``Epoch 54: 100%|██| 2950/2950 [...]``, a plain
``Train: 100%|██| 2353/2353``), each bar named by the words before its percentage. Where every bar the
excerpt shows ends at its total (``n/n``, 100%), the last of them is a training loop's (its name or its
postfix says epoch, train or loss), it is the last event of its file, and nothing but calm lines are
logged, the loop ran to its end: HEALTHY for what is seen (LABELS.md: "a clean end ... and no failure"),
the summary saying the bar and its total and how many ranks are seen. Never where the bar states its epoch
and more to come (``Training Epoch: 2/3 ... 100%``: an epoch ended, the run did not).

Why: ``progress_to_the_end`` leaves a bar at 100% alone (a loop that ended and nothing after it is where
a job may stop), and ``clean_but_partial`` reads only a step at ``max_steps`` as an end, never a bar; so a
run whose last line is its training bar at 100% was read UNDECIDED by ``nothing``. A bar left open (a
``Train`` bar at 56/2290 before three finished 32/32 rollout bars; a ``Validating`` bar at 274/282 before
the epoch bar's 100%) is a loop that did not end in view: never here. A bar that loads or captures
(``Loading checkpoint shards``) is no training loop: never here.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit import pace
from tracekit.evidence import Evidence, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.rules_common import calm, last_per_file

#: the words before a bar's percentage: its name (``Epoch   0:``, ``Train:``; empty for a bare bar)
BAR_NAME = r"^(.*?)\s*\d{1,3}%\s*\|"
#: a training loop's bar: its name or its postfix says so (not ``Loading checkpoint shards``, ``Capturing``)
TRAINING = r"(?i)\b(?:epoch|train\w*|training|steps?|iter\w*)\b|\bloss\b|\bloss[/=]"
#: an epoch and the run's count of them on the bar's line (llama-recipes' ``Training Epoch: 2/3, step 49/50``)
EPOCH_OF = r"(?i)\bepoch\W{0,3}(?P<k>\d+)\s*/\s*(?P<n>\d+)"
NOT_TRAINING = r"(?i)\b(?:load\w*|captur\w*|download\w*|shards?|compil\w*|warm\w*|map|tokeniz\w*)\b"


def _bars(ev: Evidence) -> pl.DataFrame:
    """The bar readings (progress lines with a percentage, a count and its total), with each bar's name:
    the name's digits dropped (``Epoch 0``, ``Epoch 1``: one loop, one bar per epoch)."""
    st = ev.steps.filter((pl.col("kind") == EventKind.PROGRESS) & pl.col("step").is_not_null()
                         & pl.col("max_steps").is_not_null())
    name = pl.col("message").fill_null("").str.extract(BAR_NAME, 1)
    return (st.with_columns(name.alias("bar"))
            .filter(pl.col("bar").is_not_null())
            .with_columns(pl.col("bar").str.replace_all(r"\d+", "#").str.replace_all(r"\s+", " ")
                          .str.strip_chars(" :").alias("bar"))
            .sort("file", "line"))


def training_bar_closed(ev: Evidence) -> Verdict | None:
    """HEALTHY where every bar's last reading is at its total, the excerpt's last event in each file is a
    training loop's bar at its total, and nothing but calm lines are logged."""
    if (ev.pace["slow"] or ev.pace["falling"] or ev.clean_end
            or not calm(ev, init_done=True, nothing_looked_at=True)):
        return None  # (a clean end said otherwise: the rules over it decide)
    bars = _bars(ev)
    if not bars.height:
        return None
    ends = bars.group_by("file", "bar", maintain_order=True).last()
    if not (ends["step"] >= ends["max_steps"]).all():
        return None  # (a loop left open in view: it did not end where the excerpt shows)
    last = last_per_file(ev.store.events.filter(pl.col("kind") != EventKind.PHASE_TIMES))
    closing = last.join(bars.select("file", "line", "bar"), on=["file", "line"], how="inner")
    if closing.height != last.height:
        return None  # (a file that ends on something else: where it stopped is that)
    closing = closing.filter(pl.col("step") >= pl.col("max_steps"))
    said = pl.col("message").fill_null("")
    training = said.str.contains(TRAINING) & ~pl.col("bar").str.contains(NOT_TRAINING)
    if closing.height != last.height or not closing.select(training.all()).item():
        return None
    if not closing.select(pace.at_loop_end().all()).item():
        return None
    of = closing["message"].fill_null("").str.extract_groups(EPOCH_OF)
    k, n = of.struct.field("k").cast(pl.Int64), of.struct.field("n").cast(pl.Int64)
    if (k < n).any():
        return None  # (an epoch's bar at its end, more epochs stated to come: `Training Epoch: 2/3 ... 100%`)
    row = closing.row(-1, named=True)
    raw = (re.search(BAR_NAME, row["message"] or "") or [None, ""])[1].strip(" :")
    name = f"'{raw}' " if raw else ""
    loops = bars.select("file", "bar").unique().height
    return Verdict(Kind.HEALTHY, f"the training bar {name}reached its total, {row['step']}/{row['max_steps']} "
                   f"(100%), on the last line seen, every bar in view ended at its total ({loops} loop(s)) and "
                   "no error, signal or stall is logged: the loop ran to its end, and a synchronous job's "
                   f"steps advance only while every rank takes part; for what is seen: {ev.coverage.describe()}",
                   [], lines(closing, 1))
