"""Session 31, failures (fail31): ranks' own short words of where each is (``rank_places``,
``rules_places.waits_on_busy_rank``): ranks said to wait in a collective while another is said to be
elsewhere is a deadlock naming that rank; all in one collective decides nothing; a crash line beside them
leaves it to the crash rules. An exception line posted indented (torchrun's error block's traceback,
samples/wild dv19-013) is read as an exception (``parsers/torch_patterns.EXCEPTION``). Every summary writes a
collective's sequence number as c10d does, ``SeqNum=N`` (``rules_apart``'s work)."""

from __future__ import annotations

import polars as pl

from tests.factory import events_of, text_store
from tracekit import rank_places
from tracekit.outcome import Kind
from tracekit.rules_apart import work_said
from tracekit.schema import EventKind
from tracekit.verdict import decide

# the per-rank lines a user posts while a job hangs (issue 31's blind misses: `rank N is waiting/stuck in X`)
STUCK = "Rank 0 is stuck at dist.barrier()\nRank 1 is stuck in model.save_pretrained()\n"


def test_ranks_waiting_in_a_collective_while_one_is_elsewhere_is_a_deadlock_naming_it(tmp_path):
    v = decide(text_store(tmp_path, STUCK))
    assert v.kind == Kind.DEADLOCK and v.rule == "waits_on_busy_rank"
    assert v.summary.startswith("rank 1 never joined barrier: rank 0 waits in barrier while rank 1 is in "
                                "model.save_pretrained")
    assert v.ranks == [1]


def test_launcher_prefixed_lines_and_several_waiting_ranks(tmp_path):
    text = ("[rank0]: Rank 0 is waiting in all_reduce\n[rank1]: Rank 1 is waiting in all_reduce\n"
            "[rank2]: Rank 2 is still in evaluate()\n")
    v = decide(text_store(tmp_path, text))
    assert v.kind == Kind.DEADLOCK and "rank 2 never joined all_reduce: ranks 0-1 wait in all_reduce" in v.summary


def test_every_rank_in_the_same_collective_decides_nothing_here(tmp_path):
    text = "Rank 0 is stuck at dist.barrier()\nRank 1 is stuck at dist.barrier()\n"
    v = decide(text_store(tmp_path, text))
    assert v.kind == Kind.UNDECIDED and "Rank 0 is stuck at dist.barrier()" in v.summary


def test_a_crash_line_beside_the_waits_is_not_read_as_a_deadlock(tmp_path):
    v = decide(text_store(tmp_path, STUCK + "Segmentation fault (core dumped)\n"))
    assert v.kind != Kind.DEADLOCK


def test_places_reads_each_ranks_last_place_and_no_peer_as_a_place():
    told = pl.DataFrame({"file": ["a"] * 3, "line": [1, 2, 3],
                         "message": ["rank 0 is waiting for rank 1", "rank 0 hangs in broadcast",
                                     "The node w-0 has joined round 0 of the rendezvous as rank 0 in a world of "
                                     "size 2."]})
    at = rank_places.places(told)
    assert at.select("rank", "place", "collective").rows() == [(0, "broadcast", True)]


def test_an_indented_exception_line_is_read(tmp_path):
    # (samples/wild dv19-013's error block: the traceback indented under `traceback :`)
    text = ("  rank      : 304 (local_rank: 0)\n  exitcode  : 1 (pid: 181845)\n"
            "  traceback : Traceback (most recent call last):\n"
            '    File "/gpfswork/rech/six/commun/code/tr8b-104B/Megatron-DeepSpeed/pretrain_gpt.py", line 241, in '
            "main\n      die\n  NameError: name 'die' is not defined\n")
    ex = events_of(text_store(tmp_path, text), EventKind.EXCEPTION)
    assert ex.height == 1 and ex["message"][0].strip() == "NameError: name 'die' is not defined"


def test_a_work_is_said_with_seqnum_as_c10d_writes_it():
    assert work_said({"op": "allreduce", "seq": 5}) == "ALLREDUCE SeqNum=5"
    assert work_said({"op": None, "seq": 49296}) == "work SeqNum=49296"
