"""A world that every rank joined and whose join never returned (session 32, issue 31):
``joined_unreturned.world_joined_unreturned`` through ``rules_init.start_up_unfinished``.

Covers: every Lightning rank of the world logged ``Initializing distributed: GLOBAL_RANK: N, MEMBER: N+1/W`` (the
line ``_init_dist_connection`` logs right before init_process_group) and the log ends there, rank 0's ``All
distributed processes registered`` never logged: INIT_STALL naming the world; the counter-shapes stay as they
were: the banner after the joins (init returned: dv26-013's, dv17-022's lines), part of the world joined, a line
after the last join, a world of one. The lines are dv24-003's, dv26-013's and dv17-022's as posted; dv24-003 is
read whole.

And c10d's store read that timed out (``start_up_c10d``'s ``c10d_store_read_timed_out``: socket.cpp's `waitForInput`
warnings, torch 2.1-2.3 and 2.4+ words) with no step, collective or progress: INIT_STALL through
``rules_init.start_up_said``; the same after steps is not; an interrupted poll is no entry. The lines are a real gloo
run's (a world of 3, rank 2 never started).
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


# --- c10d's store read that timed out (start_up_c10d's c10d_store_read_timed_out) ----------------------------------
#: a real gloo world of 3 whose rank 2 never started: rank 1's output (torch 2.x, TORCH_CPP_LOG_LEVEL=INFO), up to
#: the warnings of its store read (the traceback under them cut)
STORE_READ = (
    "[I1207 17:14:35.759697734 socket.cpp:785] [c10d - debug] The client socket will attempt to connect to an IPv6 "
    "address of (127.0.0.1, 29741).\n"
    "[I1207 17:14:35.776245206 socket.cpp:955] [c10d] The client socket has connected to [::ffff:127.0.0.1]:29741 on "
    "SocketImpl(fd=3, addr=[::ffff:127.0.0.1]:56864, remote=[::ffff:127.0.0.1]:29741).\n"
    "[I1207 17:14:35.783181596 TCPStore.cpp:316] [c10d - debug] TCP client connected to host 127.0.0.1:29741\n"
    "[W1207 17:14:43.792106317 socket.cpp:469] [c10d] waitForInput: poll for socket SocketImpl(fd=3, "
    "addr=[::ffff:127.0.0.1]:56864, remote=[::ffff:127.0.0.1]:29741) returned 0, likely a timeout\n"
    "[W1207 17:14:43.792897746 socket.cpp:494] [c10d] waitForInput: socket SocketImpl(fd=3, "
    "addr=[::ffff:127.0.0.1]:56864, remote=[::ffff:127.0.0.1]:29741) timed out after 8000ms\n")


def test_a_store_read_timed_out_in_start_up_is_an_init_stall(tmp_path):
    v = _decide(tmp_path, STORE_READ)
    assert v.kind is Kind.INIT_STALL
    assert "waitForInput" in v.summary and "c10d store" in v.summary


def test_torch_2_1_poll_words_are_the_same_timeout():
    from tracekit import start_up_messages as sm
    m, _ = sm.read("[W socket.cpp:432] [c10d] While waitForInput, poolFD failed with (errno: 0 - Success).")
    assert m.name == "c10d_store_read_timed_out" and m.means is sm.Means.TIMED_OUT
    assert sm.read("[W socket.cpp:432] [c10d] While waitForInput, poolFD failed with (errno: 4 - Interrupted "
                   "system call).") is None  # (an interrupted poll, not its timeout)


def test_a_store_read_timed_out_after_steps_is_no_init_stall(tmp_path):
    v = _decide(tmp_path, "{'loss': 0.52, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
                          "{'loss': 0.49, 'learning_rate': 1e-05, 'epoch': 0.2}\n" + STORE_READ)
    assert v.kind is not Kind.INIT_STALL
