"""The command line: thin wrappers that build arguments, call the library and choose exit codes.

Exit codes: 0 ok; 1 a hang or failure was found and ``--fail-on-hang`` was given; 2 bad input or
usage (nothing could be read, a broken store); 3 a bug in tracekit (one line, no traceback).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from pathlib import Path

import click

from tracekit.errors import TracekitError  # analysis modules (polars) load in the commands: `run` needs none


class BadInput(click.ClickException):
    """Bad input or usage: one line on stderr, exit code 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class UsageInput(BadInput):
    """A usage error click found (a missing argument, an unknown option): one line, as every error."""

    def __init__(self, e: click.UsageError):
        super().__init__(e.format_message().rstrip(".") + (f" (see: {e.ctx.command_path} --help)" if e.ctx else ""))


class Existing(click.Path):
    """A path that must exist, refused as ``error: PATH: what`` (click says "Invalid value for ...")."""

    def __init__(self, **kwargs):
        super().__init__(exists=True, **kwargs)

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as e:
            p = Path(value)
            what = ("no such file or folder" if not p.exists() else "is a folder; name a file" if p.is_dir() and not self.dir_okay
                    else "is a file; name a folder" if not self.file_okay and not p.is_dir() else e.message)
            raise BadInput(f"{value}: {what}") from None


class Commands(click.Group):
    """The command group, printing click's own usage errors as ``error: ...`` lines like ours."""

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as e:
            raise UsageInput(e) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as e:
            raise UsageInput(e) from None
        except TracekitError as e:  # the library's own: bad input or a broken store, one line
            raise BadInput(str(e)) from None


class Progress:
    """A click progress bar on stderr, drawn only when stderr is a terminal (quiet in pipes and
    logs). Called as ``progress(done, total)``; the bar starts on the first call, when the total
    is known."""

    def __init__(self, label: str, stream=None):
        self.label, self.stream = label, stream or sys.stderr
        self.bar = None
        self.on = self.stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.on or total <= 0:
            return
        if self.bar is None:
            self.bar = click.progressbar(length=total, label=self.label, file=self.stream, width=30,
                                         show_eta=True, show_percent=True)
            self.bar.__enter__()
        self.bar.update(done - self.bar.pos)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)


def _open(path: str, scan: bool = False, pick: int | None = None):
    """One run opened for the commands that analyse it (``load.open_run``: a store, a folder's fresh
    store, or its logs ingested now, no store written); a run with no readable file is bad input."""
    from tracekit.load import open_run

    try:
        with Progress(f"ingest {path}") as bar:
            run = open_run([path], no_store=True, scan=scan, progress=bar if bar.on else None,
                           stdin=_stdin(path), pick=pick)
        run.close()
        if (why := run.nothing_read()) is not None:
            raise why
    except TracekitError as e:
        raise BadInput(str(e)) from None
    return run


def _load_run(path: str, scan: bool = False):
    """The store of one run; where the logs hold several runs, the latest, and stderr says so."""
    run = _open(path, scan)
    if len(run.attempts) > 1:
        latest = run.attempts[0]
        click.echo(f"note: {path} holds {len(run.attempts)} runs; this is run 1, the latest "
                   f"({latest.describe()}); see them: tracekit ingest {path}", err=True)
    return run.store


def _width() -> int | None:
    """The terminal's width where stdout is one (text is wrapped to it), else None (one line each)."""
    import shutil

    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def _summary_text(s: dict, width: int | None) -> str:
    """``summary.render``'s text; on a terminal (``width``) the verdict first, wrapped to the width,
    above the summary it comes from (read in ten seconds), the other lines cut to the width (whole in
    a pipe and in --json). In a pipe: as rendered, a line each."""
    from tracekit.reports import summary

    text = summary.render(s)
    if width is None:
        return text
    body, _, verdict = text.partition("\n\nverdict   ")
    if not verdict:
        return text
    head, *rest = verdict.split("\n")
    cut = [ln if len(ln) < width else ln[: width - 2] + "…" for ln in rest + ["", *body.split("\n")]]
    return "\n".join(_wrap("verdict   " + head, width) + cut)


def _wrap(line: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(line, max(width - 1, 40), subsequent_indent=" " * 10, break_on_hyphens=False,
                         break_long_words=False) or [line]


def _verdict_lines(v: dict, width: int | None = None) -> list[str]:
    head = f"{v['kind'].upper()}: {v['summary']}"
    return (_wrap(head, width) if width else [head]) + [f"  evidence {e}" for e in v["evidence"]]


def _runs_block(run, verdicts: dict, width: int | None = None) -> list[str]:
    """``runs 2 in this folder`` and each run's span, ranks and verdict, the latest first."""
    out = [f"runs      {len(run.attempts)} in {', '.join(run.paths)}, the latest first "
           "(told apart by processes, ranks, times and folders; --run N shows one in full)"]
    for a in run.attempts:
        v = verdicts[a.number]
        verdict = f"          {v['kind'].upper()}: {v['summary']}"
        out += [f"run {a.number:<5} {a.describe()}"] + (_wrap(verdict, width) if width else [verdict])
    return out


def _stdin(*paths: str):
    """Standard input (bytes) where a path is ``-``: a paste, ``kubectl logs POD | tracekit ingest -``."""
    return sys.stdin.buffer if "-" in paths else None


@click.group(cls=Commands)
@click.version_option(package_name="tracekit", message="tracekit %(version)s (" + (
    "C scanner for NCCL COLL lines: built" if importlib.util.find_spec("tracekit._scan")
    else "C scanner for NCCL COLL lines: not built, polars reads them, slower; reinstall with a C compiler") + ")")
def main():
    """Tell why a multi-node PyTorch run hangs or crawls, from its ranks' logs and traces."""


@contextlib.contextmanager
def _output(path: str, runs: list[str]):
    """Around writing one output file: refuse an input file of the runs (tracekit never changes a
    file it did not write) and turn a missing or unwritable place into one line and exit 2."""
    from tracekit.ingest import discover

    p = Path(path)
    if p.is_dir():
        raise BadInput(f"{path}: is a folder; name a file to write")
    if p.exists() and p.resolve() in {f.resolve() for f in discover([r for r in runs if Path(r).exists()])}:
        raise BadInput(f"{path}: is one of the run's input files; name another file to write")
    if not p.parent.is_dir():
        raise BadInput(f"{path}: no such folder: {p.parent}")
    try:
        yield
    except OSError as e:
        raise BadInput(f"{path}: cannot write: {e.strerror or e}") from None


@main.command("ingest", short_help="Read a run's logs, dumps and traces; say why it hung or crawled.")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--out", type=click.Path(), help="Store folder: a new folder or an existing store; a folder holding anything "
              "else is refused (default: PATH/.tracekit/ for one folder; none for files or several paths).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (stable schema).")
@click.option("--fail-on-hang", is_flag=True, help="Exit 1 when the verdict is a hang or a failure.")
@click.option("--no-store", is_flag=True, help="Analyse only; write no parquet store.")
@click.option("--unknown", "list_unknown", is_flag=True,
              help="Also list the lines no parser understood, per file (file:line: text; the first 10 of each file).")
@click.option("--run", "pick", type=click.IntRange(min=1), default=None,
              help="Where the logs hold several runs (restarts, attempts): show run N in full "
              "(1 the latest).")
@click.option("--engine", default="local", show_default=True, metavar="local|ray[:ADDRESS]",
              help="Where the files are parsed: in this process, or on a Ray cluster, one task per batch of files "
              "(ray: a local cluster started for it; ray:ADDRESS: a running one whose nodes see the same paths; "
              "pip install 'tracekit[ray]').")
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
                       stdin=_stdin(*paths), pick=pick)
    try:
        _report_ingest(run, paths, missing, as_json, fail_on_hang, list_unknown, no_store)
    finally:
        run.close()


def _report_ingest(run, paths, missing, as_json, fail_on_hang, list_unknown, no_store):
    from tracekit import verdict as verdict_mod
    from tracekit.ingest import unknown_lines
    from tracekit.reports import summary

    for level, file, why in run.notes():  # read with a note, or not read
        click.echo(f"{level}: {file}: {why}", err=True)
    if run.nothing_read() is not None:
        sys.exit(2)
    several = len(run.attempts) > 1
    if len(paths) > 1 and not several:
        click.echo(f"note: {len(paths)} paths read as one run (merged): " + ", ".join(paths)
                   + ("" if run.target else "; no store written (give --out DIR to keep the merged store)"), err=True)
    if several and not run.target and not no_store:
        click.echo(f"note: no store written for {len(run.attempts)} runs "
                   "(give --run N --out DIR to keep one)", err=True)
    picked = verdict_mod.decide(run.store)
    s = summary.build(run.store, picked)
    if several:
        verdicts = {a.number: picked.to_dict() if a.number == run.picked
                    else verdict_mod.decide(run.store_of(a)).to_dict() for a in run.attempts}
        s["runs"] = [a.to_dict() | {"verdict": verdicts[a.number]} for a in run.attempts]
        s["run_shown"] = run.picked
    run.wait()  # the store, written meanwhile
    unknown = run.named(unknown_lines(run.read_paths())) if list_unknown else None
    if as_json:
        listed = {"unknown_listed": summary.unknown_listing(unknown)} if list_unknown else {}
        click.echo(json.dumps(s | listed, indent=2, default=str))
    else:
        runs = ("\n".join(_runs_block(run, verdicts, _width())) + f"\n\nrun {run.picked} in full:\n"
                if several else "")
        listed = "\n\n" + summary.render_unknown(unknown) if list_unknown else ""
        click.echo(runs + _summary_text(s, _width()) + listed)
    if missing:
        sys.exit(2)
    if fail_on_hang and s["verdict"]["failed"]:  # a hang or failure verdict, or any failure sign
        sys.exit(1)


@main.command("verdict", short_help="Print only the verdict of a run, with its evidence.")
@click.argument("run", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@click.option("--fail-on-hang", is_flag=True, help="Exit 1 when the verdict is a hang or a failure.")
@click.option("--run", "pick", type=click.IntRange(min=1), default=None,
              help="Where the logs hold several runs: only run N (1 the latest; ingest lists them).")
def verdict_cmd(run, as_json, fail_on_hang, pick):
    """Print only the verdict for an ingested run (or logs, ingested on the fly). Logs that hold
    several runs (restarts, attempts, runs side by side) get one verdict each, the latest first.

    Example: tracekit verdict samples/gloo_2x2_deadlock
    """
    from tracekit import verdict as verdict_mod

    # an empty folder is bad input here as for ingest, not an UNDECIDED verdict; a store's collectives
    # are scanned, not read: the verdict of 16,384 ranks x 10,000 collectives streams them
    opened = _open(run, scan=True, pick=pick)
    v = verdict_mod.decide(opened.store).to_dict()
    several = len(opened.attempts) > 1 and pick is None
    if several:
        each = [(a, v if a.number == opened.picked else verdict_mod.decide(opened.store_of(a)).to_dict())
                for a in opened.attempts]
        if as_json:
            each_run = [a.to_dict() | {"verdict": w} for a, w in each]
            click.echo(json.dumps({"runs": each_run}, indent=2, default=str))
        else:
            click.echo(f"{len(each)} runs in {run}, the latest first (--run N for one)")
            for a, w in each:
                click.echo(f"\nrun {a.number}: {a.describe()}\n" + "\n".join(_verdict_lines(w, _width())))
    elif as_json:
        click.echo(json.dumps(v, indent=2, default=str))
    else:
        click.echo("\n".join(_verdict_lines(v, _width())))
    if fail_on_hang and v["failed"]:  # the latest run's, or the one --run picks
        sys.exit(1)


@main.command("run", short_help="Launch a training command and collect evidence on every rank.", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--out", default="tracekit-logs", show_default=True, type=click.Path(file_okay=False),
              help="Run folder: every rank's logs, dumps and traces land here (share it across nodes, or one per node).")
@click.option("--stall", "stall_s", type=float, default=None,
              help="Fixed seconds without progress before the dumps (default: learned from the job's rhythm, "
              "at least 4 s; 120 s before it has one).")
@click.option("--repeat", "repeat_s", type=float, default=None,
              help="Seconds between the dump rounds of one stall (default: the stall's own limit, at most 60).")
@click.option("--rounds", default=2, show_default=True, help="Dump rounds per stall (two show whether ranks move).")
@click.option("--nccl-subsys", default="INIT,NET,COLL", show_default=True,
              help="NCCL_DEBUG_SUBSYS (COLL writes one line per collective: large, but it is the sequence).")
@click.option("--fr-buffer", default=2000, show_default=True, help="Flight Recorder entries kept per rank.")
@click.option("--profile-steps", metavar="WAIT:ACTIVE", default=None,
              help="Kineto traces of ACTIVE HF Trainer / ms-swift steps per rank, after WAIT steps and one warm-up.")
@click.option("--quiet", is_flag=True, help="Do not echo the job's output here (it is still in the run folder); "
              "tracekit's own lines and the verdict still print.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_cmd(out, stall_s, repeat_s, rounds, nccl_subsys, fr_buffer, profile_steps, quiet, command):
    """Launch a training command with evidence collection on every rank; exit with its code.

    NCCL INFO logs, the Flight Recorder, per-rank stdout, the launch settings; when the job stops
    advancing for longer than its rhythm allows, stack + FR dumps and the verdict, printed here and
    written to verdict.txt. Run it once per node.

    Example: tracekit run --out logs -- torchrun --nproc_per_node=4 train.py
    """
    from tracekit.profiler import parse_window
    from tracekit.run import Settings, run

    if profile_steps:
        try:
            parse_window(profile_steps)
        except ValueError:
            raise BadInput(f"--profile-steps {profile_steps}: want WAIT:ACTIVE, e.g. 5:3") from None
    import shutil

    if shutil.which(command[0]) is None:  # before anything is written: nothing is left behind
        click.echo(f"error: {command[0]}: command not found (nothing was run, nothing written)", err=True)
        sys.exit(127)
    s = Settings(Path(out), stall_s=stall_s, repeat_s=repeat_s, rounds=rounds, nccl_subsys=nccl_subsys,
                 fr_buffer=fr_buffer, profile_steps=profile_steps)
    code = run(list(command), s, echo=None if quiet else click.echo, say=click.echo)
    click.echo(f"tracekit: run folder {out}; next: tracekit ingest {out}", err=True)
    sys.exit(code)


@main.command("doctor", short_help="Flag known hang and slowness causes in a launch command.", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--script", type=Existing(dir_okay=False), help="Check every launch command in this shell script.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def doctor_cmd(script, as_json, command):
    """Flag known hang and slowness causes in a launch command (and this node's environment).

    Example: tracekit doctor --script launch.sh
    """
    from tracekit import doctor, escape, inputs

    if script:
        got = inputs.read(script)  # a FIFO or a device is refused, not waited on
        if got.data is None:
            raise BadInput(str(got.notes[0]))
        commands = doctor.commands_in_script(bytes(got.data).decode(errors="replace"))
        if not commands:
            raise BadInput(f"{escape.name(script)}: no launch command (torchrun, deepspeed, swift, "
                           "python -m torch.distributed.run) found")
        where = [f"{escape.name(script)}:{n}" for n, _ in commands]
        argvs = [a for _, a in commands]
    elif command:
        where, argvs = ["command"], [list(command)]
    else:
        raise BadInput("give a command after -- or --script FILE")
    report = [{"where": w, "findings": [f.to_dict() for f in doctor.check(a)]} for w, a in zip(where, argvs)]
    diffs = doctor.compare(argvs)
    if as_json:
        click.echo(json.dumps({"commands": report, "differences_between_commands": diffs}, indent=2))
        return
    out = escape.line  # the command's words on a terminal: a control character or a bad byte escaped
    shown: dict[str, str] = {}
    for r in report:
        key = json.dumps(r["findings"])
        if key in shown:
            click.echo(f"{r['where']}: the same {len(r['findings'])} finding(s) as {shown[key]}")
            continue
        shown[key] = r["where"]
        click.echo(f"{r['where']}: {len(r['findings'])} finding(s)")
        for f in r["findings"]:
            click.echo(f"  {f['severity']:<8}{f['id']}: {out(f['what'])}")
            click.echo(f"          why: {out(f['why'])}")
            click.echo(f"          fix: {out(f['fix'])}")
    if len(argvs) > 1:
        click.echo("commands differ in: " + ("; ".join(map(out, diffs)) if diffs else "nothing"))


@main.command("diff", short_help="Compare two runs and say what differs, most telling first.")
@click.argument("run_a", type=click.Path())
@click.argument("run_b", type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
def diff_cmd(run_a, run_b, as_json):
    """Why A is slower than B, or hung: both verdicts; step time, collectives per second, time in
    collectives, bus bandwidth; then layout, transports, network, collective sequences, versions,
    settings and packages, most telling first. Each run is a store or logs ingested on the fly.

    Example: tracekit diff samples/zero3_slow_2x2 samples/zero3_slow_fixed_2x2
    """
    from tracekit import diff

    a, b = _load_run(run_a), _load_run(run_b)
    c = diff.compare(a, b, names=_names(run_a, run_b))
    click.echo(json.dumps(c.to_dict(), indent=2, default=str) if as_json else diff.render(c, run_a, run_b))


def _names(*paths: str) -> tuple[str, ...]:
    """Short names of runs (their folders' names), told apart by A/B where two are the same."""
    from tracekit.diff import run_name

    names = [run_name(p) for p in paths]
    return tuple(f"{k} {n}" for k, n in zip("AB", names)) if len(set(names)) < len(names) else tuple(names)


@main.command("trace", short_help="Write a Perfetto trace of a run's collectives, one track per rank.")
@click.argument("run", type=click.Path())
@click.option("-o", "--out", "out", default="run.pftrace", show_default=True, type=click.Path(dir_okay=False),
              help="Perfetto trace to write.")
@click.option("--diff", "run_b", type=click.Path(), help="A second run, drawn in the same trace (processes B:...).")
@click.option("--json-out", type=click.Path(dir_okay=False), help="Also write Chrome trace-event JSON (legacy viewers).")
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

    a = _load_run(run)
    b = _load_run(run_b) if run_b else None
    tl = timeline.build(a, verdict_mod.decide(a), label="A " if b else "")
    if b is not None:
        timeline.build(b, verdict_mod.decide(b), label="B ", pid_base=100_000, into=tl)
    if not tl.slices:
        raise BadInput(f"{run}: no collectives with ranks to draw (no Flight Recorder, Kineto or NCCL COLL data)")
    runs = [run] + ([run_b] if run_b else [])
    for path, write in ((out, perfetto.write), (json_out, chrome_json.write)):
        if path:
            with _output(path, runs):
                write(tl, path)
    click.echo(f"wrote {out}: {len(tl.processes)} rank(s), {len(tl.slices)} collective slices, "
               f"{len({s.flow for s in tl.slices if s.flow})} cross-rank flows, axis {tl.axis} ({tl.axis_note()}); "
               f"open it: tracekit open {out}")


@main.command("open", short_help="Serve a trace once for ui.perfetto.dev and print its link.")
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


@main.command("plot", short_help="Draw progress per rank, last collectives and bandwidth.")
@click.argument("run", type=click.Path())
@click.option("--diff", "run_b", type=click.Path(), help="A second run: its bandwidth goes on the same chart.")
@click.option("-o", "--out", "out", default="tracekit-plots", show_default=True, type=click.Path(file_okay=False),
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

    stores = [_load_run(run)] + ([_load_run(run_b)] if run_b else [])
    d = Path(out)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(f"{out}: cannot create the folder: {e.strerror or e}") from None
    runs = [run] + ([run_b] if run_b else [])
    names = _names(*runs)
    charts = [("bandwidth", lambda p: plots.bandwidth(dict(zip(names, stores)), p))]
    for store, name, suffix in zip(stores, names, ("", "_b")):
        v = verdict_mod.decide(store)
        charts[-1:-1] = [(f"progress{suffix}", lambda p, s=store, v=v, n=name: plots.progress(s, v, p, n)),
                         (f"last_collective{suffix}", lambda p, s=store, v=v, n=name: plots.last_collective(s, v, p, n))]
    made = 0
    for stem, draw in charts:
        path = d / f"{stem}.{fmt}"
        with _output(str(path), runs):
            try:
                draw(path)
            except plots.Nothing as e:
                click.echo(f"{path.name} not written: {e}", err=True)
                continue
        click.echo(f"wrote {path}")
        made += 1
    if not made:
        raise BadInput(f"{', '.join(runs)}: nothing to plot (no timed or sequenced collectives, no bandwidth)")


@main.command("report", short_help="Write one shareable page: verdict, evidence, ranks, charts, diff.")
@click.argument("run", type=click.Path())
@click.option("--diff", "run_b", type=click.Path(), help="A second run to compare with (its verdict, figures, setup).")
@click.option("-o", "--out", "out", type=click.Path(dir_okay=False),
              help="File to write (default tracekit-report.html, or .md with --markdown; - for stdout).")
@click.option("--markdown", is_flag=True, help="Markdown for pasting into an issue (collapsed sections, no images).")
def report_cmd(run, run_b, out, markdown):
    """Write one self-contained page about a run: the verdict and its evidence, coverage, where
    each rank is, the charts (inline SVG), the comparison with --diff, and the commands that made
    it. --markdown writes the same for an issue, under 65,000 characters.

    Example: tracekit report samples/swift_2x2_wandb --diff samples/swift_2x2_wandb_fixed -o report.html
    """
    import importlib.metadata  # (here, not at the top: 22 ms of every command's start)

    from tracekit import verdict as verdict_mod
    from tracekit.reports import report

    a = _load_run(run)
    b = _load_run(run_b) if run_b else None
    names = _names(*([run] + ([run_b] if run_b else [])))
    out = out or ("tracekit-report.md" if markdown else "tracekit-report.html")
    made = f"tracekit report {run}" + (f" --diff {run_b}" if run_b else "") + f" -o {out}" + (" --markdown" if markdown else "")
    commands = [made, f"tracekit verdict {run}", f"tracekit plot {run}" + (f" --diff {run_b}" if run_b else "") + " -o plots",
                f"tracekit trace {run} -o run.pftrace"] + ([f"tracekit diff {run} {run_b}"] if run_b else [])
    r = report.build(a, verdict_mod.decide(a), run, names[0], (b, run_b, names[1]) if b is not None else None,
                     commands + [f"(tracekit {importlib.metadata.version('tracekit')})"])
    text = report.markdown(r) if markdown else report.html(r)
    if out == "-":
        click.echo(text, nl=False)
        return
    with _output(out, [run] + ([run_b] if run_b else [])):
        Path(out).write_text(text)
    click.echo(f"wrote {out}: {r.verdict['kind'].upper()}, {r.ranks['rank'].list.len().sum()} rank(s), "
               f"{len(r.charts)} chart(s)" + (f", against {names[1]}" if b is not None else "") + f", {len(text):,} characters")


@main.command("watch", short_help="Follow a running job's folder and print a live verdict.")
@click.argument("run_dir", type=Existing(file_okay=False))
@click.option("--interval", default=10.0, show_default=True, help="Seconds between refreshes.")
@click.option("--once", is_flag=True, help="One look, then exit (the rate needs two looks).")
@click.option("--count", type=int, default=None, help="Stop after this many refreshes.")
def watch_cmd(run_dir, interval, once, count):
    """Follow a running job's folder and print a live verdict: progressing at X collectives/s,
    or stalled since T with each rank's position. Redraws in place on a terminal, one line per
    refresh in a pipe.

    Example: tracekit watch tracekit-logs --interval 30
    """
    import time

    from tracekit import watch

    tty = sys.stdout.isatty()
    prev, n = None, 0
    while True:
        cur = watch.snapshot(run_dir)
        line = f"{time.strftime('%H:%M:%S')} {watch.describe(prev, cur)}"
        if tty:
            click.echo("\r\033[2K" + line[: click.get_terminal_size()[0] - 1], nl=False)
        else:
            click.echo(line)
        prev, n = cur, n + 1
        if once or (count is not None and n >= count):
            break
        time.sleep(interval)
    if tty:
        click.echo()


#: commands that end when their output is written: their process leaves at once, without freeing
#: its tables one by one (40 ms of the 1 s `tracekit ingest` of 200 MB); run, watch and open, which
#: hold processes or a server, exit the usual way
QUICK_EXIT = {"ingest", "verdict", "diff", "trace", "plot", "report"}


def _exit_now(code) -> None:
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): nothing more can be said there
            pass
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)


def entry():
    """The ``tracekit`` console script: no traceback ever reaches the user (TRACEKIT_DEBUG=1 shows it)."""
    import os

    try:
        main(standalone_mode=True)
    except SystemExit as done:
        if len(sys.argv) > 1 and sys.argv[1] in QUICK_EXIT:
            _exit_now(done.code)
        raise
    except TracekitError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    except Exception as e:  # noqa: BLE001 - a bug in tracekit: one line, exit 3
        if os.environ.get("TRACEKIT_DEBUG"):
            raise
        click.echo(f"error: tracekit failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
                   "(a bug: TRACEKIT_DEBUG=1 shows the traceback)", err=True)
        sys.exit(3)


if __name__ == "__main__":
    entry()
