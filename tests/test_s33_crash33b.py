"""Session 33 round two (crash33b): gloo's set-up connect, torch's aborted communicator alone, a script's failed RC.

Covers:
- ``set_up_rekind`` ``GLOO_CONNECT``: gloo's C++ exception escaping a set-up connect (`terminate called after
  throwing an instance of 'gloo::IoException'`, `what():  [.../gloo/transport/tcp/pair.cc:395] Connect timeout`,
  `Aborted (core dumped)`), with no step or collective -> INIT_STALL naming gloo's connect (dev's gloo connect
  failures at start, dev-038 and dev-039, are labelled init-stall), alone (``failed_in_set_up``) and under
  torchrun's `failed (exitcode: -6) local_rank: 1` (``undecided_in_set_up``); the same exception after training
  steps stays no INIT_STALL, and gloo's `Connection reset by peer` (dv10-003's, a killed peer) stays a crash.
- ``comm_aborted.communicator_aborted``: `RuntimeError: NCCL communicator was aborted on rank 3.` alone ->
  UNDECIDED naming rank 3 and the abort (no more "error lines no rule explains"); llm-040's abort with its
  original reason (a watchdog timeout) is still read by the timeout's rule.
- ``parsers/work_done`` ``SCRIPT_FAILED``: a job script's echo of a non-zero status (dv48-008's `RC=250 RUN_ID=...`)
  is a failure of the job with its code (a ``child_failed`` event, no unknown line); `RC=0` stays an end, and a
  failed RC after a watchdog timeout decides no crash.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tests.factory import text_store
from tracekit.evidence import Evidence
from tracekit.outcome import EventKind, Kind
from tracekit.verdict import decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"

GLOO = ("terminate called after throwing an instance of 'gloo::IoException'\n"
        "  what():  [/opt/conda/conda-bld/pytorch_1634272168290/work/third_party/gloo/gloo/transport/tcp/pair.cc:395]"
        " Connect timeout [none]\n"
        "Aborted (core dumped)\n")
AGENT = ("[2024-03-01 10:30:05,001] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) "
         "local_rank: 1 (pid: 4321) of binary: /usr/bin/python\n")
STEPS = "".join(f"[rank1]: step {i} | loss: {2.0 - i / 10:.2f} | lr: 1.0e-04\n" for i in range(1, 6))


def _decide(tmp_path, text):
    return decide(text_store(tmp_path, text))


def test_gloo_connect_timeout_in_set_up_is_init_stall(tmp_path):
    v = _decide(tmp_path, GLOO)
    assert v.kind is Kind.INIT_STALL
    assert "gloo's connect" in v.summary and "Connect timeout" in v.summary


def test_gloo_connect_timeout_under_the_agent_is_init_stall(tmp_path):
    v = _decide(tmp_path, GLOO.replace("Aborted (core dumped)\n", "") + AGENT)
    assert v.kind is Kind.INIT_STALL
    assert "rank 1" in v.summary and "gloo's connect" in v.summary


def test_gloo_connect_timeout_after_steps_is_no_set_up(tmp_path):
    assert _decide(tmp_path, STEPS + GLOO).kind is not Kind.INIT_STALL


def test_gloo_reset_by_killed_peer_stays_a_crash():
    from tracekit.ingest import ingest
    v = decide(ingest([next(WILD.glob("dv10-003-*.txt"))]))
    assert v.kind is Kind.CRASHED_RANK


def test_communicator_aborted_alone_says_it(tmp_path):
    v = _decide(tmp_path, "RuntimeError: NCCL communicator was aborted on rank 3.\n")
    assert v.kind is Kind.UNDECIDED
    assert "aborted on rank 3" in v.summary and "watchdog" in v.summary
    assert "no rule explains" not in v.summary
    assert list(v.ranks) == [3]


def test_communicator_aborted_with_its_timeout_reads_the_timeout():
    from tracekit.ingest import ingest
    v = decide(ingest([next(WILD.glob("llm-040-*.txt"))]))
    assert v.kind is Kind.UNDECIDED
    assert "timed out in _ALLGATHER_BASE SeqNum=4015" in v.summary


def test_failed_rc_is_the_jobs_failure(tmp_path):
    s = text_store(tmp_path, "some program output\nRC=250 RUN_ID=dual8_tp4pp1dp2_smoke990_20260328_161716_DGX2-1\n")
    failed = Evidence(s).kinds(EventKind.CHILD_FAILED)
    assert failed.height == 1 and failed["exit_code"][0] == 250
    assert int(s.files["unknown"].sum()) == 1  # (only "some program output")
    v = decide(s)
    assert v.kind is Kind.CRASHED_RANK and "250" in v.summary


def test_rc_zero_stays_an_end(tmp_path):
    s = text_store(tmp_path, "RC=0 RUN_ID=abc\n")
    assert not Evidence(s).kinds(EventKind.CHILD_FAILED).height
    assert s.events.filter(pl.col("kind") == EventKind.PROGRAM_END).height == 1


def test_failed_rc_after_a_timeout_is_no_crash(tmp_path):
    text = (WILD / next(WILD.glob("llm-040-*.txt")).name).read_text() + "RC=1\n"
    v = _decide(tmp_path, text)
    assert v.kind is Kind.UNDECIDED


def test_dv48_008_reads_its_rc_line():
    from tracekit.ingest import ingest
    s = ingest([next(WILD.glob("dv48-008-*.txt"))])
    assert int(s.files["unknown"].sum()) == 0
    v = decide(s)
    assert v.kind is Kind.CRASHED_RANK and "rank 4" in v.summary
