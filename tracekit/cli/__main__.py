"""``python -m tracekit.cli``: the ``tracekit`` console script."""

from tracekit.cli import entry

entry()
