"""UNDECIDED's start-up reading says "nothing after it is logged" only where the start-up line ends its file;
where lines follow it (none of them a communicator, collective, step or error), it says how many."""

from __future__ import annotations

from tests.conftest import ROOT
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"


def test_lines_after_the_start_up_line_are_counted_not_denied():
    # SGLang's `Init torch distributed begin.` with lines of its other workers after it
    v = decide(ingest([WILD / "dev-037-sglang-dsv3-tp-init-begin.txt"]))
    assert v.kind is Kind.UNDECIDED
    assert "start-up began and nothing after it is logged" not in v.summary
    assert "line(s) follow it, none of them a communicator, collective, step or error" in v.summary

