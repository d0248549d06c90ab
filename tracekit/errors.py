"""The library's own exceptions: each says in one line what is wrong and with which file or path.
The CLI turns every ``TracekitError`` into ``error: MESSAGE`` and exit code 2; the library never
prints or exits."""


class TracekitError(Exception):
    """Bad input or a broken store: one line naming the file or path."""


class StoreError(TracekitError):
    """A store folder that is missing, partial or unreadable, or one that cannot be written."""


class InputError(TracekitError):
    """Input that cannot be analysed: a path that does not exist, a run with no logs, dumps or
    traces, an unknown engine."""
