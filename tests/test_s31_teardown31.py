"""teardown31 (issue 31): a run that ended cleanly, then its teardown's noise (tracekit/teardown.py).

Covers: a real excerpt (samples/wild dv48-007) whose processes exit successfully after TCPStore recvValue
failures and NCCL socket unwinds is HEALTHY by ``ended_then_torn_down`` and its summary quotes the end and the
store's teardown line; the same store line BEFORE the end is no teardown (the rule stays silent); a non-zero
exit after the end keeps it silent; the end of one rank's file does not cover a rank seen elsewhere with no end
(UNDECIDED naming it); ``noise`` counts the lines after the end only; ``rules_gone.peer_gone`` skips a close
after the end (its teardown) and still reads one before it.
"""

from __future__ import annotations

from pathlib import Path

from tests.factory import text_store
from tracekit import rules, teardown
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.outcome import Kind

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"

#: real lines of dv48-007 (a Megatron-DeepSpeed smoke run on 2 nodes), without pdsh's host prefix
END = "[after training is done] datetime: 2026-03-31 16:39:35 \n"
STORE = ("[rank1]:[W331 16:39:45.841627790 TCPStore.cpp:125] [c10d] recvValue failed on "
         "SocketImpl(fd=102, addr=[::]:19725, remote=[fdff:ffff::]:26485): Connection reset by peer\n")
DUMP = ("[rank1]:[W331 16:39:45.845165848 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0(default_pg) "
        "Rank 1] Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too "
        "early), with error: Connection reset by peer\n")
STEP = ("[Rank 1] (after 1 iterations) memory (MB) | allocated: 15212.42578125 | max allocated: "
        "20659.64599609375 | reserved: 28648.0 | max reserved: 28648.0\n")
EXITS = "".join(f"[2026-03-31 16:39:46,668] [INFO] [launch.py:367:main] Process {p} exits "
                "successfully.\n" for p in (2486035, 2486036))


def test_real_excerpt_ended_then_store_noise_is_healthy():
    ev = Evidence(ingest([next(WILD.glob("dv48-007-*.txt"))]))
    name, v = rules.first(ev)
    assert (name, v.kind) == ("ended_then_torn_down", Kind.HEALTHY)
    assert "after training is done" in v.summary and "recvValue failed" in v.summary
    assert "RC=0" in v.summary  # (s33: the job script's own RC=0, after the workers' `exits successfully`)


def test_store_noise_after_the_end_is_teardown(tmp_path):
    ev = Evidence(text_store(tmp_path, STEP + END + STORE + DUMP + EXITS))
    torn = teardown.noise(ev)
    assert torn.height == 2 and torn["message"].str.contains("TCPStore").all()
    name, v = rules.first(ev)
    assert name == "ended_then_torn_down" and v.kind == Kind.HEALTHY


def test_store_failure_before_the_end_is_no_teardown(tmp_path):
    ev = Evidence(text_store(tmp_path, STEP + STORE + DUMP + END + EXITS))
    assert teardown.ends(ev).height and teardown.noise(ev).height == 0
    assert teardown.ended_then_torn_down(ev) is None


def test_non_zero_exit_after_the_end_keeps_it_silent(tmp_path):
    failed = ("[2024-03-12 08:22:56,574] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
              "(exitcode: 1) local_rank: 1 (pid: 2486036) of binary: /usr/bin/python\n")
    ev = Evidence(text_store(tmp_path, STEP + END + STORE + DUMP + failed))
    assert teardown.ends(ev).height and teardown.noise(ev).height == 2
    assert teardown.ended_then_torn_down(ev) is None


def test_rank_without_an_end_elsewhere_is_undecided(tmp_path):
    (tmp_path / "a.log").write_text(STEP + END + STORE + DUMP)
    (tmp_path / "b.log").write_text(STEP.replace("[Rank 1]", "[Rank 2]"))
    ev = Evidence(ingest([tmp_path / "a.log", tmp_path / "b.log"]))
    v = teardown.ended_then_torn_down(ev)
    assert v is not None and v.kind == Kind.UNDECIDED and 2 in v.ranks
    assert "show no end of their own" in v.summary


def test_peer_gone_skips_a_close_after_the_end(tmp_path):
    from tracekit.rules_gone import peer_gone
    failed = ("[2024-03-12 08:22:56,574] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
              "(exitcode: 1) local_rank: 1 (pid: 2486036) of binary: /usr/bin/python\n")
    (tmp_path / "after").mkdir()
    (tmp_path / "before").mkdir()
    after = Evidence(text_store(tmp_path / "after", STEP + END + STORE + failed))
    assert teardown.noise(after).height == 1
    before = Evidence(text_store(tmp_path / "before", STEP + STORE + END + failed))
    assert peer_gone(after) is None
    v = peer_gone(before)
    assert v is not None and "recvValue failed" in v.summary


def test_the_networks_error_after_an_end_is_no_teardown(tmp_path):
    # (NCCL's IB completion error, a real line of dev's dev-066: after a program's end line it is the
    # transport's failure, not a socket's close; only the teardown's own words make a transport line noise)
    ib = ("gpu5:35917:35994 [0] transport/net_ib.cu:788 NCCL WARN NET/IB : Got completion with error 12, opcode 1, "
          "len 0, vendor err 129\n")
    ev = Evidence(text_store(tmp_path, STEP + END + ib))
    assert teardown.ends(ev).height and teardown.noise(ev).height == 0
    name, v = rules.first(ev)
    assert name != "ended_then_torn_down" and v.kind != Kind.HEALTHY
