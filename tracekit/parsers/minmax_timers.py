"""Megatron's timers reported across ranks: the fastest and the slowest rank's time of each phase (session 34).

Megatron-LM's ``Timers.log`` with ``--timing-log-option minmax`` (the default) gathers every rank's elapsed time
of each timer and prints, on the last rank, the smallest and the largest (megatron/core/timers.py
``_get_global_min_max_time_string``)::

    output_string = '(min, max) time across ranks (ms):'
    ...
        output_string += '\\n    {}: ({:.2f}, {:.2f})'.format((name + ' ').ljust(48, '.'), min_time, max_time)

so a report is ``    forward-backward ...............................: (5164.84, 5177.15)``, one per timer,
with a launcher's prefix in front where one tags the lines (``v100x16-2:``) and, in posts, a user's mark after
(``<---``). In training, ``training_log`` reports the iteration's timers normalised per iteration
(forward-backward, forward-compute, backward-compute, batch-generator, broadcast-data, grads-all-reduce,
optimizer...); at set-up and at saves, one-off timers (model-and-optimizer-setup, load-checkpoint,
save-checkpoint, evaluate).

Each row is a ``phase_times`` event ``where="across_ranks"``: the message ``name: (min, max)``, ``duration_ms``
the largest (the slowest rank's time). The rows are not claimed (parsers/program_output.py claims Megatron's
``name .... value`` lines already); rules_spread reads how far apart the ranks' times of a phase are.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

#: one timer of the report: its name, the fastest rank's time and the slowest's, in ms
ROW = (r"(?:^|\s)(?P<name>[A-Za-z][\w\-/]*) \.{3,}: \((?P<lo>\d+(?:\.\d+)?), (?P<hi>\d+(?:\.\d+)?)\)"
       r"\s*(?:<-+)?\s*$")
WHERE = "across_ranks"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("minmax_timers")
    t = pl.col("text")
    g = t.str.extract_groups(ROW).struct
    rows = lines.filter(t.str.contains(ROW)).with_columns(
        g.field("name").alias("_name"), g.field("lo").cast(pl.Float64).alias("_lo"),
        g.field("hi").cast(pl.Float64).alias("_hi"))
    if not rows.height:
        return Parsed("minmax_timers")
    events = rows.select(
        "file", "line", pl.lit(EventKind.PHASE_TIMES).alias("kind"),
        pl.format("{}: ({}, {})", "_name", "_lo", "_hi").alias("message"),
        pl.col("_hi").alias("duration_ms"), pl.lit(WHERE).alias("where"),
        pl.lit(None, pl.Int64).alias("rank"))  # (the report is every rank's, printed by the last one)
    return Parsed("minmax_timers", {"events": events})
