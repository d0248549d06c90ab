"""Start-up waits that the excerpt shows ended (session 33, issue 31: no INIT_STALL where the excerpt does not show
a set-up that never completed).

Covers ``start_up_returned.ran_on`` through ``rules_init.start_up_said``: Paddle's per-attempt endpoint wait
(`server not ready, wait 3 sec to retry...` / `not ready endpoints:[...]`) followed by ten lines of the program's own
output (its device, graph passes, parameters loaded, its accuracy printed: dv36-008's lines as posted) is no start-up
stall; the same wait at the end of its log (dv27-001's worker lines), with a few lines after it, or with a signal
after it (dv37-001's lines) still is. dv36-008 is read whole.
"""

from __future__ import annotations

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"

#: Paddle's wait_server_ready, twice (dv36-008's lines 6-9)
WAIT = ("server not ready, wait 3 sec to retry...\n"
        "not ready endpoints:['127.0.0.1:52835', '127.0.0.1:51237', '127.0.0.1:53573']\n"
        "server not ready, wait 3 sec to retry...\n"
        "not ready endpoints:['127.0.0.1:52835', '127.0.0.1:51237', '127.0.0.1:53573']\n")
#: the program's own output after it (dv36-008's lines 10-19)
RAN = ("W0214 01:43:18.855233 751624 device_context.cc:447] Please NOTE: device: 0, GPU Compute Capability: 8.0, "
       "Driver API Version: 11.4, Runtime API Version: 11.2\n"
       "W0214 01:43:18.858413 751624 device_context.cc:465] device: 0, cuDNN Version: 8.2.\n"
       "W0214 01:43:25.970754 751624 build_strategy.cc:110] Currently, fuse_broadcast_ops only works under Reduce "
       "mode.\n"
       "I0214 01:43:25.973017 751624 fuse_pass_base.cc:57] ---  detected 2 subgraphs\n"
       "I0214 01:43:25.973641 751624 fuse_pass_base.cc:57] ---  detected 2 subgraphs\n"
       "W0214 01:43:25.976462 751624 fuse_all_reduce_op_pass.cc:76] Find all_reduce operators: 6. To make the speed "
       "faster, some all_reduce ops are fused during training, after fusion, the number of all_reduce ops is 1.\n"
       "Loading parameters from ./test_allreduce_mode/paddle_example...\n"
       "I0214 01:43:26.146525 751624 fuse_pass_base.cc:57] ---  detected 2 subgraphs\n"
       "Top_1: [0.125] Top_5: [0.5390625]\n"
       "Top_1 (Non-reduced): [0.109375] Top_5 (Non-reduced): [0.53125]\n")
#: a kill after the wait (dv37-001's lines 7-17)
KILLED = ("--------------------------------------\n"
          "C++ Traceback (most recent call last):\n"
          "--------------------------------------\n"
          "No stack trace in paddle, may be caused by external reasons.\n"
          "\n"
          "----------------------\n"
          "Error Message Summary:\n"
          "----------------------\n"
          "FatalError: `Termination signal` is detected by the operating system.\n"
          "  [TimeInfo: *** Aborted at 1677154164 (unix time) try \"date -d @1677154164\" if you are using GNU date "
          "***]\n"
          "  [SignalInfo: *** SIGTERM (@0x5900) received by PID 22837 (TID 0x7f60d4b6e740) from PID 22784 ***]\n")


def test_wait_then_the_programs_output_is_no_start_up_stall(tmp_path):
    v = decide(text_store(tmp_path, WAIT + RAN))
    assert v.kind is not Kind.INIT_STALL


def test_dv36_008_whole_is_no_start_up_stall():
    v = decide(ingest([WILD / "dv36-008-paddle-fleet-endpoint-wait-then-eval.txt"]))
    assert v.kind is not Kind.INIT_STALL


def test_wait_that_ends_the_log_is_a_start_up_stall(tmp_path):
    v = decide(text_store(tmp_path, WAIT))
    assert v.kind is Kind.INIT_STALL
    assert "server not ready" in v.summary and "127.0.0.1:52835" in v.summary


def test_wait_with_a_few_lines_after_it_is_still_a_stall(tmp_path):
    few = "".join(RAN.splitlines(keepends=True)[:5])
    v = decide(text_store(tmp_path, WAIT + few))
    assert v.kind is Kind.INIT_STALL


def test_wait_then_a_signal_is_still_a_stall(tmp_path):
    v = decide(text_store(tmp_path, WAIT + KILLED))
    assert v.kind is Kind.INIT_STALL
    assert "server not ready" in v.summary
