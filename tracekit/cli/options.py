"""The options several commands share, each one decorator, so that they read alike everywhere."""

from __future__ import annotations

import click


def as_json(what: str, more: str = ""):
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON{more}.")


def fail_on_hang(f):
    return click.option("--fail-on-hang", is_flag=True,
                        help="Exit 1 when the verdict is a hang or a failure.")(f)


def pick_run(help: str):
    """``--run N``: where the logs hold several runs (restarts, attempts), run N (1 the latest)."""
    return click.option("--run", "pick", type=click.IntRange(min=1), default=None, help=help)


def second_run(help: str):
    """``--diff RUN_B``: a second run to draw or compare beside the first."""
    return click.option("--diff", "run_b", type=click.Path(), help=help)


def launch_command(f):
    """The command line of a job, everything after ``--`` (its own options untouched)."""
    return click.argument("command", nargs=-1, type=click.UNPROCESSED)(f)


#: a command that takes a job's command line after its own options
PASS_THROUGH = {"ignore_unknown_options": True, "allow_interspersed_args": False}
