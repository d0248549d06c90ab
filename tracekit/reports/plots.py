"""Plots a person would rather look at than read (matplotlib, pure writers: store in, file out).

- ``progress``: one lane per rank, the collective sequence number over time (clock offsets
  removed); a stuck rank's line ends early, a slow run's lines all rise slowly.
- ``last_collective``: a heat strip, ranks x process groups, coloured by how far behind the
  group's frontier each rank's last collective is; the cell text is the op and sequence number.
- ``bandwidth``: bus bandwidth against message size for one or more runs on one chart.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from tracekit import align, diff  # noqa: E402
from tracekit.store import Store  # noqa: E402


def _timed(store: Store) -> tuple[pl.DataFrame, str]:
    coll = store.collectives.filter(pl.col("rank").is_not_null() & pl.col("seq").is_not_null())
    for source in ("fr", "kineto", "nccl"):
        sub = coll.filter(pl.col("source") == source)
        if sub.height:
            break
    else:
        return coll, "none"
    if sub["start_ns"].is_not_null().any():
        off = align.clock_offsets(sub)
        sub = sub.join(off, on="host", how="left").with_columns(
            (pl.col("start_ns") - pl.col("offset_ns").fill_null(0)).alias("t"))
        return sub.filter(pl.col("t").is_not_null()), source
    return sub.with_columns(pl.col("line").cast(pl.Int64).alias("t")), source + " (file order)"


def progress(store: Store, path: str | Path, title: str = "") -> Path:
    df, source = _timed(store)
    fig, ax = plt.subplots(figsize=(10, 4.8))
    if df.height:
        main_pg = df.group_by("pg").len().sort("len", descending=True)["pg"][0]
        df = df.filter(pl.col("pg") == main_pg).sort("rank", "t")
        t0 = df["t"].min()
        unit, scale = ("s", 1e9) if "file order" not in source else ("line", 1)
        top = df["seq"].max()
        ranks = sorted(df["rank"].unique().to_list())
        cmap = plt.get_cmap("tab10" if len(ranks) <= 10 else "viridis")
        for i, r in enumerate(ranks):
            d = df.filter(pl.col("rank") == r)
            behind = d["seq"].max() < top
            ax.step((d["t"] - t0) / scale, d["seq"], where="post", lw=4 if behind else 1.3, alpha=0.55 if behind else 1,
                    color="crimson" if behind else cmap(i % 10 if len(ranks) <= 10 else i / max(len(ranks) - 1, 1)),
                    label=f"rank {r}" + (f" (stops at {d['seq'].max()})" if behind else ""), zorder=1 if behind else 2)
            if behind:
                ax.plot([(d["t"].max() - t0) / scale], [d["seq"].max()], "X", color="crimson", ms=11, zorder=4)
        ax.set_xlabel(f"time ({unit}, clocks aligned)" if unit == "s" else "position in the log")
        ax.set_ylabel(f"collective sequence number (pg {main_pg})")
        ax.legend(loc="upper left", fontsize=8, ncol=max(1, len(ranks) // 8))
    else:
        ax.text(0.5, 0.5, "no collectives with ranks in this run", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(title or f"progress per rank ({source})")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def last_collective(store: Store, path: str | Path, title: str = "") -> Path:
    coll = store.collectives.filter(pl.col("rank").is_not_null() & pl.col("seq").is_not_null())
    last = (coll.sort("seq").group_by("rank", "pg").agg(pl.col("seq").last(), pl.col("op").last())
            .with_columns((pl.col("seq").max().over("pg") - pl.col("seq")).alias("behind")))
    ranks = sorted(last["rank"].unique().to_list())
    pgs = last.group_by("pg").agg(pl.len()).sort("len", descending=True)["pg"].head(12).to_list()
    fig, ax = plt.subplots(figsize=(max(7.5, 1.2 * len(pgs) + 4), max(2.8, 0.32 * len(ranks) + 1.6)))
    if ranks and pgs:
        grid = [[None] * len(pgs) for _ in ranks]
        for r in last.filter(pl.col("pg").is_in(pgs)).iter_rows(named=True):
            grid[ranks.index(r["rank"])][pgs.index(r["pg"])] = r
        vals = [[(c["behind"] if c else float("nan")) for c in row] for row in grid]
        im = ax.imshow(vals, aspect="auto", cmap="Reds", vmin=0, vmax=max(1, last["behind"].max()))
        for i, row in enumerate(grid):
            for j, c in enumerate(row):
                if c:
                    ax.text(j, i, f"{c['op']} #{c['seq']}", ha="center", va="center", fontsize=7,
                            color="white" if c["behind"] > 0 else "black")
        ax.set_yticks(range(len(ranks)), [f"rank {r}" for r in ranks], fontsize=8)
        ax.set_xticks(range(len(pgs)), [f"pg {p}"[:18] for p in pgs], rotation=30, ha="right", fontsize=8)
        fig.colorbar(im, ax=ax, label="behind the frontier")
    else:
        ax.text(0.5, 0.5, "no collectives with ranks in this run", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(title or "last collective per rank and process group")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def bandwidth(runs: dict[str, Store], path: str | Path, title: str = "") -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.8))
    drawn = 0
    for (name, store), marker in zip(runs.items(), "os^dv"):
        bw = diff.bandwidth(store)
        for op in bw["op"].unique().sort().to_list():
            d = bw.filter(pl.col("op") == op).sort("size")
            ax.plot(d["size"], d["busbw_gbs"], marker=marker, label=f"{name}: {op}")
            drawn += 1
    if drawn:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.legend(fontsize=8)
    else:
        ax.text(0.5, 0.5, "no bandwidth measurements or timed collectives", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(title or "bus bandwidth by message size")
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)
