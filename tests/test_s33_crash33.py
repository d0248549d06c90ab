"""Session 33 (crash33): a kill from outside while set-up's connects kept retrying is no rank's crash.

Covers (real lines of samples/wild nccl-024, NCCL's socket set-up retrying its connects, and the bare ``Killed``
line of dv16-032):
- ``rules_crash_words.crashed_by_words``: NCCL's ``Call to connect returned Connection timed out, retrying``, then
  ``Killed`` -> no CRASHED_RANK from the kill's word (the process was waiting on its connect when it was ended;
  the verdict reads the retries, never a crash); the same ``Killed`` with the set-up lines and no retry is still
  read as a crash (the control).
"""

from __future__ import annotations

from tests.factory import text_store
from tracekit.evidence import Evidence
from tracekit.outcome import Kind
from tracekit.rules_crash_words import crashed_by_words
from tracekit.verdict import decide

SET_UP = "".join([
    "worker:101542:101542 [0] NCCL INFO Bootstrap : Using [0]eno1:172.18.40.41<0> [1]veth25f2e72:fe80::380d:bfff:fe5b:54d2%veth25f2e72<0>\n",
    "worker:101542:101542 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n",
    "worker:101542:101542 [0] NCCL INFO NET/IB : No device found.\n",
    "worker:101542:101542 [0] NCCL INFO Using network Socket\n",
    "worker:101542:101934 [0] NCCL INFO Channel 00 : 0[18000] -> 1[18000] [receive] via NET/Socket/1\n",
])
RETRIES = "worker:101542:101934 [0] NCCL INFO Call to connect returned Connection timed out, retrying\n" * 3
KILLED = "Killed\n"


def test_killed_while_connects_retry_is_no_crash(tmp_path):
    ev = Evidence(text_store(tmp_path, SET_UP + RETRIES + KILLED))
    assert crashed_by_words(ev) is None
    v = decide(ev.store)
    assert v.kind is not Kind.CRASHED_RANK
    assert "retrying" in v.summary


def test_killed_without_retries_is_still_read_as_a_crash(tmp_path):
    v = crashed_by_words(Evidence(text_store(tmp_path, SET_UP + KILLED)))
    assert v is not None and v.kind is Kind.CRASHED_RANK and "Killed" in v.summary
