"""The commands around a live job: ``run`` (launch it with evidence collection), ``doctor`` (check its
launch command), ``watch`` (follow its folder)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from tracekit.cli import options
from tracekit.cli.base import BadInput, Existing
from tracekit.cli.render import doctor_lines


@click.command("run", short_help="Launch a training command and collect evidence on every rank.",
               context_settings=options.PASS_THROUGH)
@click.option("--out", default="tracekit-logs", show_default=True, type=click.Path(file_okay=False),
              help="Run folder: every rank's logs, dumps and traces land here (share it across nodes, or one "
              "per node).")
@click.option("--stall", "stall_s", type=float, default=None,
              help="Fixed seconds without progress before the dumps (default: learned from the job's rhythm, "
              "at least 4 s; 120 s before it has one).")
@click.option("--repeat", "repeat_s", type=float, default=None,
              help="Seconds between the dump rounds of one stall (default: the stall's own limit, at most "
              "60).")
@click.option("--rounds", default=2, show_default=True,
              help="Dump rounds per stall (two show whether ranks move).")
@click.option("--nccl-subsys", default="INIT,NET,COLL", show_default=True,
              help="NCCL_DEBUG_SUBSYS (COLL writes one line per collective: large, but it is the sequence).")
@click.option("--fr-buffer", default=2000, show_default=True, help="Flight Recorder entries kept per rank.")
@click.option("--profile-steps", metavar="WAIT:ACTIVE", default=None,
              help="Kineto traces of ACTIVE HF Trainer / ms-swift steps per rank, after WAIT steps and one "
              "warm-up.")
@click.option("--quiet", is_flag=True,
              help="Do not echo the job's output here (it is still in the run folder); "
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


@click.command("doctor", short_help="Flag known hang and slowness causes in a launch command.",
               context_settings=options.PASS_THROUGH)
@click.option("--script", type=Existing(dir_okay=False),
              help="Check every launch command in this shell script.")
@options.as_json("the findings")
@options.launch_command
def doctor_cmd(script, as_json, command):
    """Flag known hang and slowness causes in a launch command (and this node's environment).

    Example: tracekit doctor --script launch.sh
    """
    from tracekit import doctor
    from tracekit.errors import TracekitError

    if script:
        try:
            commands = doctor.script_commands(script)
        except TracekitError as e:
            raise BadInput(str(e)) from None
    elif command:
        commands = [("command", list(command))]
    else:
        raise BadInput("give a command after -- or --script FILE")
    report, diffs = doctor.check_all(commands)
    if as_json:
        click.echo(json.dumps({"commands": report, "differences_between_commands": diffs}, indent=2))
    else:
        click.echo("\n".join(doctor_lines(report, diffs, several=len(commands) > 1)))


@click.command("watch", short_help="Follow a running job's folder and print a live verdict.")
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
