"""The command line: thin wrappers that build arguments, call the library and choose exit codes.

One module per family of commands: ``analyse`` (ingest, verdict, diff), ``outputs`` (trace, open,
plot, report), ``launch`` (run, doctor, watch); what they share: ``base`` (errors, the command
group, the progress bar), ``options`` (shared option decorators), ``opening`` (opening runs,
guarding written files), ``render`` (text for a terminal or a pipe).

Exit codes: 0 ok; 1 a hang or failure was found and ``--fail-on-hang`` was given; 2 bad input or
usage (nothing could be read, a broken store); 3 a bug in tracekit (one line, no traceback).
"""

from __future__ import annotations

import importlib.util
import sys

import click

from tracekit.cli.analyse import diff_cmd, ingest_cmd, verdict_cmd
from tracekit.cli.base import BadInput, Commands, Progress
from tracekit.cli.launch import doctor_cmd, run_cmd, watch_cmd
from tracekit.cli.opening import load_run as _load_run
from tracekit.cli.outputs import open_cmd, plot_cmd, report_cmd, trace_cmd
from tracekit.cli.render import summary_text as _summary_text
from tracekit.errors import TracekitError  # analysis modules (polars) load in the commands: `run` needs none

__all__ = ["BadInput", "Progress", "QUICK_EXIT", "entry", "main", "_load_run", "_summary_text"]

SCANNER = "C scanner for NCCL COLL lines: " + (
    "built" if importlib.util.find_spec("tracekit._scan")
    else "not built, polars reads them, slower; reinstall with a C compiler")


@click.group(cls=Commands)
@click.version_option(package_name="tracekit", message="tracekit %(version)s (" + SCANNER + ")")
def main():
    """Tell why a multi-node PyTorch run hangs or crawls, from its ranks' logs and traces."""


for _command in (ingest_cmd, verdict_cmd, run_cmd, doctor_cmd, diff_cmd, trace_cmd, open_cmd, plot_cmd,
                 report_cmd, watch_cmd):
    main.add_command(_command)

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
        first = str(e).splitlines()[0] if str(e) else ""
        click.echo(f"error: tracekit failed: {type(e).__name__}: {first} "
                   "(a bug: TRACEKIT_DEBUG=1 shows the traceback)", err=True)
        sys.exit(3)
