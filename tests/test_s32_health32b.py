"""Session 32, health32b: every rank's own word that its work succeeded, and a process's end.

Covers parsers/work_done.py's SUCCEEDED (a line whose rank is named, by its head or a launcher's tag, carrying
the program's own success word, ``[rank 0] TP forward OK, ...``: that rank's result, ``program_end``; never
before a counted line, a check inside a loop being its progress) and TERMINATED (c10d's warning printed as a
process terminates, ``At the time of process termination, there are still 1 unwaited collective calls``: an
end, ``where="terminated"``, only in a file with no error), and the verdict they make through
rules_bench.every_rank_ended: HEALTHY where every visible rank said so and nothing failed (samples/wild
dv51-004, quoted whole), not where another rank's watchdog timed out after the word. Lines are quoted from dev
excerpts (dv51-004, dv20-033, a watchdog line of the dev split).
"""

from __future__ import annotations

from tests.factory import events_of, text_store
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

OK0 = "[rank 0] TP forward OK, out shape torch.Size([2, 8])\n"
OK1 = "[rank 1] TP forward OK, out shape torch.Size([2, 8])\n"
WARNING = """[W725 16:54:37.723587000 ProcessGroup.cpp:398] Warning: At the time of process termination, there are still 1 unwaited collective calls. Please review your program to ensure that:
1. c10d_functional.wait_tensor() is invoked on all tensors returned from c10d_functional collective,
2. c10d_functional.wait_tensor() is invoked on all output tensors of async_op=True torch.distributed collective called under `with allow_inflight_collective_as_graph_input_ctx():`,
before the output tensors of the collective are used. (function ~WorkRegistry)
"""
#: samples/wild dv51-004, whole: both ranks' OK, then each process's termination warning
PROBE = OK0 + OK1 + WARNING + WARNING.replace("723587000", "723585000")
#: a rank's watchdog timeout (quoted from a dev excerpt)
TIMEOUT = ("[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, "
           "OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802212 milliseconds before timing out.\n")
#: a loop's counted line (dv20-033, llama-recipes)
EPOCH_STEP = ("Training Epoch: 2/3, step 49/50 completed (loss: 1.035962462425232): 100%|████████████| 50/50 "
              "[09:01<00:00, 10.82s/it]\n")


def test_every_rank_ok_then_termination_is_healthy(tmp_path):
    v = decide(text_store(tmp_path, PROBE))
    assert v.kind == Kind.HEALTHY
    assert "TP forward OK" in v.summary and "terminates" in v.summary and "ranks 0-1" in v.summary


def test_ok_lines_are_each_ranks_result_and_the_warning_an_end(tmp_path):
    ends = events_of(text_store(tmp_path, PROBE), EventKind.PROGRAM_END).sort("line")
    assert ends.filter(ends["where"] == "result")["rank"].to_list() == [0, 1]
    assert ends.filter(ends["where"] == "terminated").height == 2


def test_ok_of_one_rank_then_a_watchdog_timeout_is_not_healthy(tmp_path):
    v = decide(text_store(tmp_path, OK0 + TIMEOUT))
    assert v.kind != Kind.HEALTHY


def test_termination_warning_after_an_error_is_no_end(tmp_path):
    ends = events_of(text_store(tmp_path, TIMEOUT + WARNING), EventKind.PROGRAM_END)
    assert not ends.height or not (ends["where"] == "terminated").any()


def test_ok_before_a_counted_line_is_progress_not_an_end(tmp_path):
    ends = events_of(text_store(tmp_path, OK0 + EPOCH_STEP), EventKind.PROGRAM_END)
    assert not ends.height or "TP forward OK" not in " ".join(ends["message"].to_list())


def test_a_bootstrap_step_said_done_is_no_result(tmp_path):
    # (samples/wild dv50-003: NVSHMEM's bootstrap allgather, a set-up step, on a line of its own)
    ends = events_of(text_store(tmp_path, "rank 1 nranks 8 - DONE\nrank 7 nranks 8 - DONE\n"), EventKind.PROGRAM_END)
    assert not ends.height
