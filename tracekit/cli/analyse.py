"""The commands that read a run and say what it shows: ``ingest``, ``verdict``, ``diff``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tracekit.cli import options
from tracekit.cli.base import BadInput, Progress
from tracekit.cli.opening import load_run, names, open_one, stdin
from tracekit.cli.render import runs_block, summary_text, verdict_lines, width


@click.command("ingest", short_help="Read a run's logs, dumps and traces; say why it hung or crawled.")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--out", type=click.Path(), help="Store folder: a new folder or an existing store; a folder "
              "holding anything else is refused (default: PATH/.tracekit/ for one folder; none for files or "
              "several paths).")
@options.as_json("the summary", " (stable schema)")
@options.fail_on_hang
@click.option("--no-store", is_flag=True, help="Analyse only; write no parquet store.")
@click.option("--unknown", "list_unknown", is_flag=True, help="Also list the lines no parser understood, "
              "by block (file:line: text; a JSON dump or a traceback as one line; the first 10 of each "
              "file).")
@options.pick_run("Where the logs hold several runs (restarts, attempts): show run N in full "
                  "(1 the latest).")
@click.option("--engine", default="local", show_default=True, metavar="local|ray[:ADDRESS]",
              help="Where the files are parsed: in this process, or on a Ray cluster, one task per batch of "
              "files (ray: a local cluster started for it; ray:ADDRESS: a running one whose nodes see the "
              "same paths; pip install 'tracekit[ray]').")
def ingest_cmd(paths, out, as_json, fail_on_hang, no_store, list_unknown, engine, pick):
    """Read per-rank logs, dumps and traces into parquet tables and print what they show.

    Example: tracekit ingest samples/gloo_2x2_deadlock; kubectl logs POD | tracekit ingest -
    """
    from tracekit.load import open_run

    missing = [p for p in paths if p != "-" and not Path(p).exists()]
    for p in missing:  # the others are read and reported; the exit code says a path was wrong
        click.echo(f"error: {p}: no such file or folder", err=True)
    paths = [p for p in paths if p not in missing]
    if not paths:
        sys.exit(2)
    with Progress("ingest") as bar:  # (a bar costs smaller batches)
        run = open_run(paths, out, no_store, progress=bar if bar.on else None, engine=engine, reuse=False,
                       stdin=stdin(*paths), pick=pick)
    try:
        _report_ingest(run, paths, missing, as_json, fail_on_hang, list_unknown, no_store)
    finally:
        run.close()


def _report_ingest(run, paths, missing, as_json, fail_on_hang, list_unknown, no_store):
    from tracekit import verdict as verdict_mod
    from tracekit.reports import summary
    from tracekit.view import Summary, each_run, unknown_blocks

    for level, file, why in run.notes():  # read with a note, or not read
        click.echo(f"{level}: {file}: {why}", err=True)
    if run.nothing_read() is not None:
        sys.exit(2)
    several = len(run.attempts) > 1
    _say_merged(run, paths, several, no_store)
    picked = verdict_mod.decide(run.store)
    unknown = run.unknown_lines(everything=list_unknown)
    s = Summary.build(run.store, picked, unknown)
    if several:
        s.runs, s.run_shown = each_run(run, picked), run.picked
    run.wait()  # the store, written meanwhile
    if as_json:
        listed = {"unknown_listed": summary.unknown_listing(unknown)} if list_unknown else {}
        click.echo(json.dumps(s.to_dict() | listed, indent=2, default=str))
    else:
        runs = ("\n".join(runs_block(run, s.runs, width())) + f"\n\nrun {run.picked} in full:\n"
                if several else "")
        listed = "\n\n" + summary.render_unknown(unknown_blocks(unknown)) if list_unknown else ""
        click.echo(runs + summary_text(s, width()) + listed)
    if missing:
        sys.exit(2)
    if fail_on_hang and picked.failed:  # a hang or failure verdict, or any failure sign
        sys.exit(1)


def _say_merged(run, paths, several: bool, no_store: bool) -> None:
    """Say on stderr where several paths were read as one run, or no store was written for several."""
    if len(paths) > 1 and not several:
        click.echo(f"note: {len(paths)} paths read as one run (merged): " + ", ".join(paths)
                   + ("" if run.target else "; no store written (give --out DIR to keep the merged store)"),
                   err=True)
    if several and not run.target and not no_store:
        click.echo(f"note: no store written for {len(run.attempts)} runs "
                   "(give --run N --out DIR to keep one)", err=True)


@click.command("verdict", short_help="Print only the verdict of a run, with its evidence.")
@click.argument("run", type=click.Path())
@options.as_json("the verdict")
@options.fail_on_hang
@options.pick_run("Where the logs hold several runs: only run N (1 the latest; ingest lists them).")
def verdict_cmd(run, as_json, fail_on_hang, pick):
    """Print only the verdict for an ingested run (or logs, ingested on the fly). Logs that hold
    several runs (restarts, attempts, runs side by side) get one verdict each, the latest first.

    Example: tracekit verdict samples/gloo_2x2_deadlock
    """
    from tracekit import verdict as verdict_mod
    from tracekit.view import each_run

    # an empty folder is bad input here as for ingest, not an UNDECIDED verdict; a store's collectives
    # are scanned, not read: the verdict of 16,384 ranks x 10,000 collectives streams them
    opened = open_one(run, scan=True, pick=pick)
    v = verdict_mod.decide(opened.store)
    several = len(opened.attempts) > 1 and pick is None
    if several:
        each = each_run(opened, v)
        if as_json:
            listed = [a.to_dict() | {"verdict": w.to_dict()} for a, w in each]
            click.echo(json.dumps({"runs": listed}, indent=2, default=str))
        else:
            click.echo(f"{len(each)} runs in {run}, the latest first (--run N for one)")
            for a, w in each:
                click.echo(f"\nrun {a.number}: {a.describe(w.coverage)}\n" + "\n".join(verdict_lines(w, width())))
    elif as_json:
        click.echo(json.dumps(v.to_dict(), indent=2, default=str))
    else:
        click.echo("\n".join(verdict_lines(v, width())))
    if fail_on_hang and v.failed:  # the latest run's, or the one --run picks
        sys.exit(1)


@click.command("diff", short_help="Compare two runs and say what differs, most telling first.")
@click.argument("run_a", type=click.Path())
@click.argument("run_b", type=click.Path(), required=False)
@options.as_json("the differences")
@click.option("--run", "picks", type=click.IntRange(min=1), multiple=True, help="Where a folder holds "
              "several runs (restarts, attempts): which; given once per path, or twice with one folder to "
              "compare two of its attempts (default with one folder: run 2 against run 1, the latest).")
def diff_cmd(run_a, run_b, as_json, picks):
    """Why A is slower than B, or hung: both verdicts; step time, collectives per second, time in
    collectives, bus bandwidth; then layout, transports, network, collective sequences, versions,
    settings and packages, most telling first. Each run is a store or logs ingested on the fly; one
    folder with several attempts (torchrun restarts) compares two of them.

    Example: tracekit diff samples/zero3_slow_2x2 samples/zero3_slow_fixed_2x2
    """
    from tracekit import diff
    from tracekit.reports import diff as diff_text

    if len(picks) > 2:
        raise BadInput(f"--run given {len(picks)} times: give it once per run (two at most)")
    if run_b is None:  # two attempts of one folder
        picks = picks or (2, 1)
        if len(picks) != 2:
            raise BadInput(f"{run_a}: one path: give --run twice (two of its attempts) or a second path")
        paths = (run_a, run_a)
        shown = (run_a, run_a)
        short = tuple(f"run {n}" for n in picks)
    else:
        picks = tuple(picks) + (None,) * (2 - len(picks))
        paths, shown, short = (run_a, run_b), (run_a, run_b), names(run_a, run_b)
    try:
        a, b = (load_run(p, pick=n) for p, n in zip(paths, picks))
    except BadInput as e:
        if run_b is None and "holds 1 run(s)" in e.message:
            raise BadInput(f"{run_a}: holds one run; give a second run to compare it with") from None
        raise
    c = diff.compare(a, b, names=short)
    click.echo(json.dumps(c.to_dict(), indent=2, default=str) if as_json else diff_text.render(c, *shown))
