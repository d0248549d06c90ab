"""Plots that agree with the verdict (matplotlib; pure writers: a ``view.ChartData`` in, a file out).

- ``progress``: the main group's sequence number per rank over one clock, the idle stretches cut
  out of the time axis (a broken axis); below it, in a hang, the end of the record rank by rank:
  the last collectives and what each rank did after its last one (waited in a collective, or was
  elsewhere); for a straggler, how late each rank enters the collectives. Only a hang marks ranks
  as stopped; a slow run's ranks whose records end early are said to have older dumps.
- ``last_collective``: ranks x process groups (by what they are, not by hash), each cell the
  rank's last collective, coloured by a category with its legend.
- ``bandwidth``: bus bandwidth against message size (KB/MB/GB) for one or more runs.

Each raises ``Nothing`` with the reason instead of writing an empty chart.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

from tracekit import figures  # noqa: E402
from tracekit import situation as rank_state  # noqa: E402
from tracekit.view import ChartData  # noqa: E402
from tracekit.wording import fmt_ranks  # noqa: E402

STOPPED, WAITING, ELSEWHERE, EARLIER, AT_FRONT = "#c0392b", "#e67e22", "#7f8c8d", "#f5cba7", "#d5dbdb"


class Nothing(Exception):
    """Nothing to draw; the message says why (the caller writes no file)."""


def _save(fig, path: str | Path) -> Path:
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def _segments(x: list[float], most: int = 2) -> list[tuple[float, float]]:
    """Stretches of the time axis worth drawing: the record cut at its idle gaps (a gap longer
    than a quarter of the span and 20x the typical one), at most ``most`` cuts."""
    x = sorted(set(x))
    span = x[-1] - x[0]
    if len(x) < 3 or span <= 0:
        return [(x[0], x[-1])]
    gaps = sorted(((b - a, a, b) for a, b in zip(x, x[1:])), reverse=True)
    typical = sorted(g for g, _, _ in gaps)[len(gaps) // 2]
    cuts = sorted((a, b) for g, a, b in gaps[:most] if g > 0.25 * span and g > 20 * max(typical, 1e-9))
    bounds, lo = [], x[0]
    for a, b in cuts:
        bounds.append((lo, a))
        lo = b
    bounds.append((lo, x[-1]))
    return bounds


PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]  # no red


def _styles(n: int, i: int) -> dict:
    """Rank ``i`` of ``n``: its colour (never the verdict's red), and for a few ranks a width that
    shrinks by rank, drawn widest first, so lines that coincide still each show as a coloured band."""
    color = PALETTE[i % len(PALETTE)] if n <= len(PALETTE) else plt.get_cmap("viridis")(i / max(n - 1, 1))
    return {"color": color, "lw": 1.3 + (1.5 * (n - 1 - i) if 1 < n <= 6 else 0)}


def short_frame(where: str | None) -> str:
    """``next_batch_stuck (/work/main/samples/repro/train.py:35)``
    -> ``next_batch_stuck (repro/train.py:35)``."""
    if not where:
        return "-"
    fn, _, loc = where.partition(" (")
    loc = loc.rstrip(")").split("-packages/")[-1]
    return f"{fn} ({'/'.join(loc.split('/')[-2:]) if loc.startswith('/') else loc})" if loc else fn


def progress(c: ChartData, path: str | Path, name: str = "") -> Path:
    tm, source, verdict = c.timed, c.source, c.verdict
    if not tm.height:
        raise Nothing("no collective with a time (Flight Recorder or Kineto; NCCL COLL lines have none)")
    pg = c.main_pg
    df = tm.filter(pl.col("pg") == pg).sort("rank", "t")
    t0 = df["t"].min()
    df = df.with_columns(((pl.col("t") - t0) / 1e9).alias("x"))
    label = c.labels.get(pg, f"pg {pg}")
    table = c.ranks
    hang = rank_state.is_hang(verdict)
    kind = verdict.kind.name if verdict is not None else ""
    named = set(verdict.ranks) if verdict is not None else set()
    segs = _segments(df["x"].to_list())
    lower = "hang" if hang else "straggler" if kind == "STRAGGLER" and named else None
    ranks = sorted(df["rank"].unique().to_list())
    below = 0.42 * min(len(_lanes(table)), 12) + 1.2 if lower == "hang" else 2.6 if lower else 0
    fig = plt.figure(figsize=(11, 5.2 + below))
    widths = [max(b - a, 0.22 * (segs[-1][1] - segs[0][0]) / len(segs), 1e-3) for a, b in segs]
    if hang:
        widths[-1] *= 1.35  # room for the wait after the last collective
    grid = fig.add_gridspec(2 if lower else 1, len(segs), width_ratios=widths, wspace=0.06,
                            height_ratios=[3, 1.6 if lower == "hang" else 1.3] if lower else None)
    axes = [fig.add_subplot(grid[0, k]) for k in range(len(segs))]
    for k in range(1, len(axes)):
        axes[k].sharey(axes[0])
    top = df["seq"].max()
    for i, r in enumerate(ranks):
        d = df.filter(pl.col("rank") == r)
        st = _styles(len(ranks), i)
        behind = d["seq"].max() < top
        tag = f"rank {r}"
        if r in named and hang:
            st = {"color": STOPPED, "lw": max(st["lw"], 2.4)}
            tag += f": stops at #{d['seq'].max()}"
            tag += f", never issued #{d['seq'].max() + 1}" if behind else ""
        elif r in named and kind == "STRAGGLER":
            st = {"color": STOPPED, "lw": max(st["lw"], 2.4)}
            tag += ": the straggler"
        elif behind:
            tag += f": its last dump ends at #{d['seq'].max()}"
        for ax in axes:
            ax.step(d["x"], d["seq"], where="post", label=tag if ax is axes[0] else None,
                    zorder=2 + i / len(ranks), **st)
        if hang:
            last = d.tail(1).row(0, named=True)
            end = segs[-1][1] + 0.33 * widths[-1] / 1.35
            axes[-1].plot([last["x"], end], [last["seq"]] * 2, ls=":", lw=1.6, color=st["color"], zorder=1)
            axes[-1].plot([end], [last["seq"]], marker=">", color=st["color"], ms=7, zorder=4)
            if r in named:
                axes[-1].plot([last["x"]], [last["seq"]], "X", color=STOPPED, ms=11, zorder=5)
    for k, (ax, (a, b)) in enumerate(zip(axes, segs)):
        pad = 0.04 * (b - a) + 1e-3
        right = b + (0.33 * widths[-1] / 1.35 + 2 * pad if hang and k == len(axes) - 1 else pad)
        ax.set_xlim(a - pad, right)
        ax.grid(alpha=0.3)
        if k:
            ax.tick_params(labelleft=False)
            ax.spines["left"].set_visible(False)
        if k < len(axes) - 1:
            ax.spines["right"].set_visible(False)
            kw = dict(transform=ax.transAxes, color="k", clip_on=False, lw=1)
            ax.plot((1 - 0.012, 1 + 0.012), (-0.02, 0.02), **kw)
            ax.plot((1 - 0.012, 1 + 0.012), (0.98, 1.02), **kw)
    if kind == "SLOW_PROGRESS":
        _dumps(axes, c, t0)
    axes[0].set_ylabel(f"sequence number on {label}")
    cut = (f"; {len(segs) - 1} idle stretch{'es' if len(segs) > 2 else ''} cut out (//)"
           if len(segs) > 1 else "")
    xlabel = f"seconds since the first collective ({source}, clocks aligned{cut})"
    if hang:
        axes[-1].text(0.99, 0.02, "dotted: after its last collective, until the dump",
                      transform=axes[-1].transAxes,
                      ha="right", va="bottom", fontsize=7, color="#555")
    widest = axes[max(range(len(axes)), key=lambda k: widths[k])]
    widest.legend(*axes[0].get_legend_handles_labels(), loc="best", fontsize=8, ncol=max(1, len(ranks) // 8),
                  framealpha=0.9)
    title = f"{name}: " if name else ""
    axes[0].set_title(f"{title}progress per rank, {kind.lower().replace('_', ' ') or 'no verdict'}",
                      loc="left", fontsize=11)
    if lower == "hang":
        _wait_lanes(fig.add_subplot(grid[1, :]), df.filter(pl.col("x") >= segs[-1][0]), table, c)
    elif lower == "straggler":
        _lateness(fig.add_subplot(grid[1, :]), c, pg, named, verdict)
    fig.subplots_adjust(left=0.07, right=0.98, top=0.93, bottom=0.08 if lower else 0.1,
                        hspace=0.5 if lower else 0.2)
    box = axes[0].get_position()
    fig.text(0.5 * (box.x0 + axes[-1].get_position().x1), box.y0 - 0.055 * 5.2 / fig.get_figheight(), xlabel,
             ha="center", va="top", fontsize=9)
    return _save(fig, path)


def _dumps(axes, c: ChartData, t0: int) -> None:
    """Each Flight Recorder dump's newest entry per rank: the points a slow run is seen to move through."""
    ends = c.dump_ends.with_columns(((pl.col("t") - t0) / 1e9).alias("x"))
    if not ends.height:
        return
    for ax in axes:
        ax.plot(ends["x"], ends["seq"], "o", mfc="none", mec="black", ms=8, zorder=6,
                label="a dump's newest entry: the run moved between dumps" if ax is axes[0] else None)


def _lanes(table: pl.DataFrame) -> pl.DataFrame:
    """Ranks in the same place (same last collective, state and main-thread frame) share a lane."""
    return (table.with_columns(pl.col("where").fill_null("-"), pl.col("seq").fill_null(-1))
            .group_by("seq", "state", "where", "named")
            .agg(pl.col("rank").sort(), pl.col("t_s").min())
            # (ties in the lowest rank's order: a group-by's own order changes from one process to the next)
            .sort("named", "seq", pl.col("rank").list.first(), descending=[True, False, False]).head(12))


def _wait_lanes(ax, df: pl.DataFrame, table: pl.DataFrame, c: ChartData) -> None:
    """The end of the record, one lane per group of ranks: their last few collectives (ticks, with
    the sequence number) and a bar from the last one on: waiting in it, or elsewhere."""
    lanes = _lanes(table)
    top = df["seq"].max()
    recent = df.filter(pl.col("seq") >= top - 4)
    frontier = df["x"].max()
    lo = recent["x"].min()
    width = max(frontier - lo, 1e-3)
    hi = frontier + 0.8 * width
    waits = c.waits
    for y, lane in enumerate(lanes.iter_rows(named=True)):
        rs = lane["rank"]
        mine = recent.filter(pl.col("rank") == rs[0])
        ax.plot(mine["x"], [y] * mine.height, "|", ms=14, mew=2, color="#34495e")
        if not mine.height:
            continue
        end = mine.sort("x").tail(1).row(0, named=True)
        ax.annotate(f"{end['op']} #{end['seq']}", (end["x"], y), xytext=(-4, 10), textcoords="offset points",
                    ha="right", fontsize=7.5)
        start = end["x"]
        waiting = "not completed" in lane["state"]
        color = WAITING if waiting else STOPPED if lane["named"] else ELSEWHERE
        ax.barh(y, hi - start, left=start, height=0.5, color=color, alpha=0.55 if waiting else 0.35,
                hatch=None if waiting else "//", edgecolor=color)
        known = [waits[r] for r in rs if r in waits]
        what = lane["state"] if waiting else f"{lane['state']}; main thread in {short_frame(lane['where'])}"
        if known:
            what += f"; {max(known)[1]}"
        ax.text(start + 0.01 * width, y, what[:110], fontsize=7.5, va="center")
    names = [f"rank{'s' if len(r) > 1 else ''} {fmt_ranks(r)}" for r in lanes["rank"]]
    ax.set_yticks(range(lanes.height), names, fontsize=8)
    ax.set_ylim(lanes.height - 0.4, -0.7)
    ax.set_xlim(lo - 0.05 * width, hi)
    ax.axvline(frontier, color="#555", lw=0.8, ls="--")
    note = c.stall_note
    ax.set_title("the end of the record: each rank's last collectives, and after its last one"
                 + (f" ({note})" if note else " (until the dump; its time is not recorded)"),
                 loc="left", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    ax.legend(handles=[Patch(color=WAITING, alpha=0.55, label="in a collective that never completed"),
                       Patch(facecolor="white", edgecolor=STOPPED, hatch="//",
                             label="not in a collective (the verdict's rank)"),
                       Patch(facecolor="white", edgecolor=ELSEWHERE, hatch="//",
                             label="not in a collective")],
              fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, frameon=False)


def _lateness(ax, c: ChartData, pg: str, named: set[int], verdict) -> None:
    """How late each rank enters the collectives its group shares, as ``figures.lateness`` and
    ``figures.rank_lateness`` measure it (the verdict quotes the same figures): ms after the median rank."""
    lag = c.lateness.filter(pl.col("pg") == pg)
    per = {r["rank"]: r for r in figures.rank_lateness(lag).iter_rows(named=True)}
    ranks = sorted(per)
    texts = []
    for y, r in enumerate(ranks):
        d, x = lag.filter(pl.col("rank") == r)["late_ms"], per[r]
        color = STOPPED if r in named else "#5d6d7e"
        ax.plot(d, [y + 0.18 * ((i % 5) - 2) / 2 for i in range(d.len())], "o", ms=3, alpha=0.5, color=color)
        ax.plot([x["late_ms"]] * 2, [y - 0.35, y + 0.35], color=color, lw=2.5)
        when = (f"; {x['times_late']} of {x['of']} over {figures.NOISE_MS:g} ms "
                f"(median {x['late_when_late_ms']:.1f})" if x["times_late"] else "")
        texts.append(ax.text(0.995, y, f"rank {r}: last in {x['times_last']} of {x['of']}, "
                             f"median {x['late_ms']:.1f} ms{when}",
                             transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=7.5,
                             color=color, bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8}))
    _room_right(ax, texts)
    ax.set_yticks(range(len(ranks)), [f"rank {r}" for r in ranks], fontsize=8)
    ax.set_xlabel("ms after the median rank entered the same collective", fontsize=8)
    ax.set_title(verdict.summary[:150], loc="left", fontsize=8.5)
    ax.grid(alpha=0.3, axis="x")
    ax.invert_yaxis()


def _room_right(ax, texts) -> None:
    """Widen the x axis on the right so the labels written against its right edge cover no point:
    the points end where the widest label begins (the axes only widen once the figure is laid out)."""
    if not texts:
        return
    renderer = ax.figure.canvas.get_renderer()
    taken = max(t.get_window_extent(renderer).width for t in texts) / ax.get_window_extent(renderer).width
    if taken < 0.85:  # (a narrower axes than its labels: leave it as drawn)
        lo, hi = ax.get_xlim()
        ax.set_xlim(lo, lo + (hi - lo) / (1 - taken - 0.02))


def last_collective(c: ChartData, path: str | Path, name: str = "") -> Path:
    last = c.last
    if not last.height:
        raise Nothing("no collective with a rank and a sequence number")
    labels = c.labels
    hang = rank_state.is_hang(c.verdict)
    ranks = sorted(last["rank"].unique().to_list())
    pgs = (last.group_by("pg").agg(pl.len()).sort(["len", "pg"], descending=[True, False])["pg"]
           .head(8).to_list())
    cats = {"at": (AT_FRONT, "at the group's last collective"),
            "stuck": (STOPPED, "behind: never issued the next one"),
            "earlier": (EARLIER, "behind: its record ends earlier (the run went on)")}
    fig, ax = plt.subplots(figsize=(max(6.5, 2.3 * len(pgs) + 3), max(2.6, 0.34 * len(ranks) + 1.9)))
    used = set()
    for row in last.filter(pl.col("pg").is_in(pgs)).iter_rows(named=True):
        cat = "at" if row["behind"] == 0 else "stuck" if hang else "earlier"
        used.add(cat)
        x, y = pgs.index(row["pg"]), ranks.index(row["rank"])
        ax.add_patch(plt.Rectangle((x - 0.5, y - 0.5), 1, 1, color=cats[cat][0], ec="white", lw=1.5))
        ax.text(x, y, f"{row['op']} #{row['seq']}", ha="center", va="center", fontsize=7.5,
                color="white" if cat == "stuck" else "black")
    ax.set_xlim(-0.5, len(pgs) - 0.5)
    ax.set_ylim(len(ranks) - 0.5, -0.5)
    ax.set_yticks(range(len(ranks)), [f"rank {r}" for r in ranks], fontsize=8)
    ax.set_xticks(range(len(pgs)), [labels.get(p, f"pg {p}") for p in pgs], fontsize=8)
    ax.tick_params(length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    ax.legend(handles=[Patch(color=cats[c][0], label=cats[c][1]) for c in cats if c in used],
              loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3, fontsize=8, frameon=False)
    ax.set_title(f"{name + ': ' if name else ''}last collective per rank and process group",
                 loc="left", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def size_label(n: float, _pos=None) -> str:
    for unit, f in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{n:g} B"


MIN_BYTES = 1024


def bandwidth(runs: dict[str, ChartData], path: str | Path, title: str = "") -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.6))
    drawn, why = 0, []
    for (name, c), marker in zip(runs.items(), "os^dv"):
        bw = c.bandwidth.filter(pl.col("busbw_gbs").is_not_null() & (pl.col("size") >= MIN_BYTES))
        if not bw.height:
            why.append(f"{name}: " + ("one rank, no traffic between ranks" if c.world_size == 1
                                      else "no bandwidth lines or Kineto-timed collectives of "
                                      f"{size_label(MIN_BYTES)} or more"))
        for op in bw["op"].unique().sort().to_list():
            d = bw.filter(pl.col("op") == op).sort("size")
            ax.plot(d["size"], d["busbw_gbs"], marker=marker, label=f"{name}: {op}")
            drawn += 1
    if not drawn:
        plt.close(fig)
        raise Nothing("; ".join(why))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel(f"message size (under {size_label(MIN_BYTES)}: latency, not bandwidth; left out)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.legend(fontsize=8)
    ax.set_title((title or "bus bandwidth by message size") + "".join(f"\nnot drawn: {w}" for w in why),
                 loc="left", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return _save(fig, path)
