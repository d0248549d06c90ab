"""Session 33 (crash33): a kill from outside while set-up's connects kept retrying is no rank's crash.

Covers (real lines of samples/wild nccl-024, NCCL's socket set-up retrying its connects, and the bare ``Killed``
line of dv16-032):
- ``rules_crash_words.crashed_by_words``: NCCL's ``Call to connect returned Connection timed out, retrying``, then
  ``Killed`` -> no CRASHED_RANK from the kill's word (the process was waiting on its connect when it was ended;
  the verdict reads the retries, never a crash); the same ``Killed`` with the set-up lines and no retry is still
  read as a crash (the control).
- ``nccl_messages`` ``fastsocket_steering`` (real lines of dv35-007, labelled healthy/undecided): the FastSocket
  plugin's ``Maximum retry reached for accept 3.`` and ``Cannot get incoming CPU.`` WARNs, with its ``Connected
  after 1000 retries.`` -> no TRANSPORT_ERROR (they decide nothing); NCCL's own ``Connect to ... failed`` WARN of
  the same shape still reads as the network's.
"""

from __future__ import annotations

from tests.factory import text_store
from tracekit import nccl_messages
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


FASTSOCKET = "".join([
    "full-debug2-test-1:4024:4048 [0] net_fastsocket.cc:765 NCCL WARN Cannot get incoming CPU.\n",
    "full-debug2-test-0:4300:4325 [0] net_fastsocket.cc:785 NCCL WARN Maximum retry reached for accept 3.\n",
    "full-debug2-test-1:4024:4055 [0] net_fastsocket.cc:674 NCCL WARN Maximum retry reached for connect 3.\n",
    "full-debug2-test-0:4300:4325 [0] NCCL INFO accept qid: 3, rqid: 3\n",
    "full-debug2-test-0:4300:4325 [0] NCCL INFO accept incoming cpu: 0\n",
    "full-debug2-test-0:4300:4325 [0] NCCL INFO NET/FastSocket : Connected after 1000 retries.\n",
    "full-debug2-test-0:4300:4325 [0] NCCL INFO NET/FastSocket : Accepted data socket 3\n",
    "full-debug2-test-0:4300:4348 [0] net_fastsocket.cc:652 NCCL WARN Cannot get incoming CPU.\n",
    "full-debug2-test-1:4024:4055 [0] NCCL INFO connect incoming cpu: 0\n",
    "full-debug2-test-1:4024:4055 [0] NCCL INFO connect qid: 3, rqid: 3\n",
])


def test_fastsocket_steering_warnings_are_no_transport_error(tmp_path):
    ev = Evidence(text_store(tmp_path, FASTSOCKET))
    assert ev.transport.height == 0
    assert decide(ev.store).kind is not Kind.TRANSPORT_ERROR


def test_fastsocket_reading_leaves_nccls_own_connect_failure():
    said = nccl_messages.meaning_of("Maximum retry reached for connect 3.")
    assert said is not None and said[0].name == "fastsocket_steering"
    # (the same connect's failure in NCCL's own words, from dev dv52-002, stays the network's)
    said = nccl_messages.meaning_of("Connect to 10.148.3.247<56821> failed : Connection refused")
    assert said is not None and said[0].points_to[0] == "TRANSPORT_ERROR"
