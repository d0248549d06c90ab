"""A world that every rank joined and whose join never returned (session 32, issue 31):
``joined_unreturned.world_joined_unreturned`` through ``rules_init.start_up_unfinished``.

Covers: every Lightning rank of the world logged ``Initializing distributed: GLOBAL_RANK: N, MEMBER: N+1/W`` (the
line ``_init_dist_connection`` logs right before init_process_group) and the log ends there, rank 0's ``All
distributed processes registered`` never logged: INIT_STALL naming the world; the counter-shapes stay as they
were: the banner after the joins (init returned: dv26-013's, dv17-022's lines), part of the world joined, a line
after the last join, a world of one. The lines are dv24-003's, dv26-013's and dv17-022's as posted; dv24-003 is
read whole.
"""

from __future__ import annotations

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"

#: dv24-003's four lines (torchrun, 2 processes, Lightning)
TWO_JOINED = ("[rank: 0] Global seed set to 23\n"
              "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
              "[rank: 1] Global seed set to 23\n"
              "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2\n")
#: Lightning's rank-0 banner once init_process_group returned (dv26-013's and dv17-022's lines)
BANNER = ("----------------------------------------------------------------------------------------------------\n"
          "distributed_backend=gloo\n"
          "All distributed processes registered. Starting with 2 processes\n"
          "----------------------------------------------------------------------------------------------------\n")


def _decide(tmp_path, text: str):
    return decide(text_store(tmp_path, text))


def test_every_rank_joined_and_the_log_ends_there_is_an_init_stall(tmp_path):
    v = _decide(tmp_path, TWO_JOINED)
    assert v.kind is Kind.INIT_STALL
    assert "world of 2" in v.summary and "All distributed processes registered" in v.summary
    assert v.ranks == [0, 1]


def test_the_banner_after_the_joins_is_no_init_stall(tmp_path):
    v = _decide(tmp_path, TWO_JOINED + BANNER)
    assert v.kind is not Kind.INIT_STALL


def test_a_line_after_the_last_join_leaves_it_undecided(tmp_path):
    v = _decide(tmp_path, TWO_JOINED + "[rank: 1] Global seed set to 23\n")
    assert v.kind is Kind.UNDECIDED


def test_part_of_the_world_joined_is_not_this_rule(tmp_path):
    v = _decide(tmp_path, "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\n"
                          "Initializing distributed: GLOBAL_RANK: 3, MEMBER: 4/4\n")
    assert "world of 4 (" not in v.summary


def test_a_world_of_one_is_not_this_rule(tmp_path):
    v = _decide(tmp_path, "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/1\n")
    assert "world of 1" not in v.summary


def test_dv24_003_whole():
    v = decide(ingest([WILD / "dv24-003-lightning-init-distributed-hang.txt"]))
    assert v.kind is Kind.INIT_STALL and "process group" in v.summary
