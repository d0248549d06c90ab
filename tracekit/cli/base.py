"""What every command shares: errors as one line (exit 2), paths that must exist, the command group
that prints click's own usage errors like ours, and a progress bar drawn only on a terminal."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from tracekit.errors import TracekitError


class BadInput(click.ClickException):
    """Bad input or usage: one line on stderr, exit code 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


class UsageInput(BadInput):
    """A usage error click found (a missing argument, an unknown option): one line, as every error."""

    def __init__(self, e: click.UsageError):
        where = f" (see: {e.ctx.command_path} --help)" if e.ctx else ""
        super().__init__(e.format_message().rstrip(".") + where)


class Existing(click.Path):
    """A path that must exist, refused as ``error: PATH: what`` (click says "Invalid value for ...")."""

    def __init__(self, **kwargs):
        super().__init__(exists=True, **kwargs)

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as e:
            p = Path(value)
            what = ("no such file or folder" if not p.exists()
                    else "is a folder; name a file" if p.is_dir() and not self.dir_okay
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
