"""A training loop's end, said by its own counters or by a bare end word after its progress (issue 31, s31:
healthy runs read as undecided, "no clean end or progress").

parsers/trainer.py reads the progress lines and the end sentences of the programs it knows; this module reads
two ends no sentence says, from the lines around them, and is called from ``trainer.parse``:

- **the last epoch's counter at its total**: a progress line whose epoch counter is at its stated total
  (``Epoch 3/3``, ``Epoch [2/2]``) and whose step counter is too (tqdm's ``100%|##########| 469/469 [00:20<00:00,
  22.8it/s]``, ``Step [600/600]``): the last epoch's last step completed, the whole loop is done (as Keras' last
  epoch's completed bar, trainer.py ``_keras``). A bar of one epoch at 100% is no end: the next epoch follows,
  and a job that stops there stops at an epoch's end (rules_stall's ``stopped_at_epoch_end``).
- **a bare end word on the last line** (``Done``, ``Finished!``, ``All done.``) right after the program's own
  progress lines: what a script prints once its loop returned. After a set-up's lines it is that set-up's end,
  never the work's: torchvision's dataset download prints ``Downloading ...``, ``Processing...`` then ``Done!``
  (samples/wild/dv17-005: a job silent after it), as many set-up steps end.

Each is a ``program_end`` event, ``where="program"``, the rank its line carries.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import work_done
from tracekit.schema import EventKind

#: an epoch counter and, after it, a step counter, each ``n/total`` (groups: epoch, epochs, step, steps)
EPOCH_AND_STEP = (r"(?i)\bepoch\W{0,3}(\d+)\s*/\s*(\d+)\b\W.*?(?:\bstep\W{0,3}|\|\s*|\[\s*)(\d+)\s*/\s*(\d+)\b")
#: a bare end word, the whole line
BARE_END = r"(?i)^\W{0,3}(?:all )?(?:done|finished|complete|completed|success|succeeded)\W{0,3}$"
#: a set-up's words: a bare end word within ``NEAR`` lines after one is that set-up's end
SET_UP = (r"(?i)\b(?:download\w*|extract\w*|processing|unzip\w*|load\w*|prepar\w*|install\w*|build\w*"
          r"|compil\w*|tokeniz\w*|convert\w*|cach\w*|generating|map)\b")
#: how many lines before a bare end word are read for a set-up's words
NEAR = 5


def events(df: pl.DataFrame, frames: list[pl.DataFrame]) -> list[pl.DataFrame]:
    """The loop ends of ``df`` (``file``, ``line``, ``text``, ``ts``, ``rank``): the last epoch's counter at its
    total, and a bare end word right after a progress line of ``frames`` (the events trainer.py read so far)."""
    t = pl.col("text")
    calm = ~t.str.contains(work_done.FAILED)
    g = [t.str.extract(EPOCH_AND_STEP, i).cast(pl.Int64, strict=False) for i in (1, 2, 3, 4)]
    last_epoch = (g[0] == g[1]) & (g[2] == g[3]) & (g[3] > 0)
    counted = df.filter(t.str.contains(EPOCH_AND_STEP) & last_epoch.fill_null(False) & calm).with_columns(
        pl.format("the last epoch ({}/{}) completed its {} steps: {}", g[0], g[1], g[3], t.str.strip_chars())
        .alias("message"))
    steps = [f.filter(pl.col("kind").is_in([EventKind.STEP, EventKind.PROGRESS])).select("file", "line")
             for f in frames if "kind" in f.columns]
    moved = pl.concat(steps).unique().with_columns(pl.lit(True).alias("_moved")) if steps else None
    said = df.filter(t.str.strip_chars() != "").sort("file", "line")
    set_up = pl.any_horizontal(t.shift(k).over("file").fill_null("").str.contains(SET_UP) for k in range(1, NEAR + 1))
    # (the line before: a progress line trainer.py read, or one with a loop's counter, `Epoch 3: loss=0.37`)
    said = said.with_columns(pl.col("line").shift(1).over("file").alias("_before"), set_up.alias("_set_up"),
                             t.shift(1).over("file").fill_null("").str.contains(work_done.COUNTED).alias("_counted"),
                             (pl.col("line") == pl.col("line").max().over("file")).alias("_last"))
    bare = said.filter(t.str.contains(BARE_END) & pl.col("_last") & ~pl.col("_set_up"))
    if moved is not None:
        bare = bare.join(moved.rename({"line": "_before"}), on=["file", "_before"], how="left")
    else:
        bare = bare.with_columns(pl.lit(None, pl.Boolean).alias("_moved"))
    bare = bare.filter(pl.col("_moved").fill_null(False) | pl.col("_counted")).with_columns(
        pl.format("the program's last line, after its progress: {}", t.str.strip_chars()).alias("message"))
    out = [f.select("file", "line", "ts", "rank", "text", "message").with_columns(
        pl.lit(EventKind.PROGRAM_END).alias("kind"), pl.lit("program").alias("where"))
        for f in (counted, bare) if f.height]
    return out
