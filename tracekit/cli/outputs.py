"""The commands that write something to look at: ``trace`` (Perfetto), ``open`` (serve it to the
Perfetto UI), ``plot`` (charts), ``report`` (one shareable page)."""

from __future__ import annotations

from pathlib import Path

import click

from tracekit.cli import options
from tracekit.cli.base import BadInput, Existing
from tracekit.cli.opening import load_run, names, output


@click.command("trace", short_help="Write a Perfetto trace of a run's collectives, one track per rank.")
@click.argument("run", type=click.Path())
@click.option("-o", "--out", "out", default="run.pftrace", show_default=True, type=click.Path(dir_okay=False),
              help="Perfetto trace to write.")
@options.second_run("A second run, drawn in the same trace (processes B:...).")
@click.option("--json-out", type=click.Path(dir_okay=False),
              help="Also write Chrome trace-event JSON (legacy viewers).")
def trace_cmd(run, out, run_b, json_out):
    """Write a Perfetto trace: a track per rank and process group, a slice per collective, flows
    linking each collective across ranks, the verdict's collective marked, instants where ranks stop.

    \b
    The x axis ("axis" in the output):
      time      each collective at its enqueue time (Flight Recorder or Kineto), host clocks aligned
      sequence  no timed source (NCCL COLL lines only): x is the collective sequence number, 1 ms
                per collective, NOT time; each rank's name in the trace ends in
                "[x = sequence number, not time]" and an instant at the start says so
      mixed     with --diff, one run on time and the other on sequence numbers

    Example: tracekit trace samples/gloo_2x2_deadlock -o deadlock.pftrace
    """
    from tracekit import verdict as verdict_mod
    from tracekit.reports import chrome_json, perfetto, timeline
    from tracekit.view import CollectivesView

    a = load_run(run)
    b = load_run(run_b) if run_b else None
    tl = timeline.render(CollectivesView.build(a), verdict_mod.decide(a), label="A " if b else "")
    if b is not None:
        timeline.render(CollectivesView.build(b), verdict_mod.decide(b), label="B ", pid_base=100_000,
                        into=tl)
    if not tl.slices:
        raise BadInput(f"{run}: no collectives with ranks to draw "
                       "(no Flight Recorder, Kineto or NCCL COLL data)")
    runs = [run] + ([run_b] if run_b else [])
    for path, write in ((out, perfetto.write), (json_out, chrome_json.write)):
        if path:
            with output(path, runs):
                write(tl, path)
    click.echo(f"wrote {out}: {len(tl.processes)} rank(s), {len(tl.slices)} collective slices, "
               f"{len({s.flow for s in tl.slices if s.flow})} cross-rank flows, "
               f"axis {tl.axis} ({tl.axis_note()}); "
               f"open it: tracekit open {out}")


@click.command("open", short_help="Serve a trace once for ui.perfetto.dev and print its link.")
@click.argument("trace_file", type=Existing(dir_okay=False))
@click.option("--port", default=9001, show_default=True, type=click.IntRange(0, 65535),
              help="Port to serve on (the Perfetto UI allows 9001; 0: any free one).")
@click.option("--timeout", "timeout_s", type=float, default=None, help="Give up after this many seconds.")
def open_cmd(trace_file, port, timeout_s):
    """Serve a trace once on 127.0.0.1 for ui.perfetto.dev and print the link that opens it.

    Example: tracekit open deadlock.pftrace
    """
    import math

    from tracekit import escape, serve

    if timeout_s is not None and not (math.isfinite(timeout_s) and timeout_s > 0):  # inf, nan: no wait ends
        raise BadInput(f"--timeout {timeout_s}: give a number of seconds above 0")
    shown = escape.name(trace_file)
    try:
        kind = serve.trace_kind(trace_file)
    except OSError as e:
        raise BadInput(f"{shown}: cannot read: {e.strerror or e}") from None
    if kind is None:
        raise BadInput(f"{shown}: not a trace (neither a Perfetto protobuf nor Chrome trace-event JSON); "
                       "make one with: tracekit trace RUN -o run.pftrace")
    try:  # bound before the link is given: a taken port is an error, not a link that leads nowhere
        server = serve.OneShot(trace_file, port)
    except OSError as e:
        raise BadInput(f"127.0.0.1:{port}: cannot serve there: {e.strerror or e} "
                       "(another program holds the port: stop it, or give --port)") from None
    click.echo(f"open {serve.deep_link(Path(trace_file).name, server.port)}")
    click.echo(f"(serving {shown} once on http://127.0.0.1:{server.port}/; Ctrl-C to stop)", err=True)
    ok = server.wait(timeout_s)
    if not ok:
        raise BadInput(f"{shown}: nobody fetched it within {timeout_s:g}s")
    click.echo("served; the UI has the trace now", err=True)


@click.command("plot", short_help="Draw progress per rank, last collectives and bandwidth.")
@click.argument("run", type=click.Path())
@options.second_run("A second run: its bandwidth goes on the same chart.")
@click.option("-o", "--out", "out", default="tracekit-plots", show_default=True,
              type=click.Path(file_okay=False),
              help="Folder to write the charts into (created if missing).")
@click.option("--format", "fmt", type=click.Choice(["png", "svg"]), default="png", show_default=True,
              help="Image format of the charts.")
def plot_cmd(run, run_b, out, fmt):
    """Draw progress per rank (in a hang, each rank's wait after its last collective; for a
    straggler, how late each rank arrives), the last collective per rank and process group, and
    bus bandwidth by message size. A chart with nothing to draw is not written (stderr says why);
    none at all is exit 2.

    Example: tracekit plot samples/gloo_2x2_deadlock -o plots
    """
    from tracekit import verdict as verdict_mod
    from tracekit.reports import plots
    from tracekit.view import ChartData

    stores = [load_run(run)] + ([load_run(run_b)] if run_b else [])
    d = Path(out)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(f"{out}: cannot create the folder: {e.strerror or e}") from None
    runs = [run] + ([run_b] if run_b else [])
    labels = names(*runs)
    data = [ChartData.build(s, verdict_mod.decide(s)) for s in stores]
    charts = [("bandwidth", lambda p: plots.bandwidth(dict(zip(labels, data)), p))]
    for c, name, suffix in zip(data, labels, ("", "_b")):
        charts[-1:-1] = [(f"progress{suffix}", lambda p, c=c, n=name: plots.progress(c, p, n)),
                         (f"last_collective{suffix}", lambda p, c=c, n=name: plots.last_collective(c, p, n))]
    made = 0
    for stem, draw in charts:
        path = d / f"{stem}.{fmt}"
        with output(str(path), runs):
            try:
                draw(path)
            except plots.Nothing as e:
                click.echo(f"{path.name} not written: {e}", err=True)
                continue
        click.echo(f"wrote {path}")
        made += 1
    if not made:
        raise BadInput(f"{', '.join(runs)}: nothing to plot "
                       "(no timed or sequenced collectives, no bandwidth)")


@click.command("report", short_help="Write one shareable page: verdict, evidence, ranks, charts, diff.")
@click.argument("run", type=click.Path())
@options.second_run("A second run to compare with (its verdict, figures, setup).")
@click.option("-o", "--out", "out", type=click.Path(dir_okay=False),
              help="File to write (default tracekit-report.html, or .md with --markdown; - for stdout).")
@click.option("--markdown", is_flag=True,
              help="Markdown for pasting into an issue (collapsed sections, no images).")
def report_cmd(run, run_b, out, markdown):
    """Write one self-contained page about a run: the verdict and its evidence, coverage, where
    each rank is, the charts (inline SVG), the comparison with --diff, and the commands that made
    it. --markdown writes the same for an issue, under 65,000 characters.

    Example: tracekit report samples/swift_2x2_wandb --diff samples/swift_2x2_wandb_fixed -o report.html
    """
    from tracekit.reports import report
    from tracekit.view import report_views

    a = load_run(run)
    b = load_run(run_b) if run_b else None
    labels = names(*([run] + ([run_b] if run_b else [])))
    out = out or ("tracekit-report.md" if markdown else "tracekit-report.html")
    view, chart_data, comparison = report_views(a, b, labels, run)
    charts, missing = report.charts(chart_data)
    r = report.assemble(view, comparison, charts, missing, _made_by(run, run_b, out, markdown))
    text = report.markdown(r) if markdown else report.html(r)
    if out == "-":
        click.echo(text, nl=False)
        return
    with output(out, [run] + ([run_b] if run_b else [])):
        Path(out).write_text(text)
    click.echo(f"wrote {out}: {r.verdict['kind'].upper()}, {r.ranks['rank'].list.len().sum()} rank(s), "
               f"{len(r.charts)} chart(s)" + (f", against {labels[1]}" if b is not None else "")
               + f", {len(text):,} characters")


def _made_by(run: str, run_b: str | None, out: str, markdown: bool) -> list[str]:
    """The commands a report lists as what made it (and what shows more), with tracekit's version."""
    import importlib.metadata  # (here, not at the top: 22 ms of every command's start)

    with_b = f" --diff {run_b}" if run_b else ""
    made = f"tracekit report {run}{with_b} -o {out}" + (" --markdown" if markdown else "")
    return [made, f"tracekit verdict {run}", f"tracekit plot {run}{with_b} -o plots",
            f"tracekit trace {run} -o run.pftrace"] + ([f"tracekit diff {run} {run_b}"] if run_b else []) + [
        f"(tracekit {importlib.metadata.version('tracekit')})"]
