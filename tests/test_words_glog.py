"""glog's own words as it ends a process (issue 31, words): a FATAL line, ``*** Check failure stack trace
***`` and the failure signal handler's ``*** Aborted at`` / ``*** SIGSEGV (@0x0) received by PID`` read as a
crash (parsers/native_fatal decodes them), on real pastes of programs that log with glog (Caffe,
Caffe2/Detectron, wav2letter)."""

from __future__ import annotations

from tests.factory import text_store
from tracekit.outcome import Kind
from tracekit.verdict import decide

#: Caffe with a CPU-only build asked for a GPU (a blog's paste)
CAFFE = """\
I0930 16:44:30.996455 17607 caffe.cpp:218] Using GPUs 0
F0930 16:44:30.997221 17607 common.cpp:66] Cannot use GPU in CPU-only Caffe: check mode.
*** Check failure stack trace: ***
    @     0x7fe4a8fdf5ad  google::LogMessage::Fail()
    @     0x7fe4a8fe1413  google::LogMessage::SendToLog()
    @     0x7fe4a8fdf13b  google::LogMessage::Flush()
    @     0x7fe4a8fe1dfe  google::LogMessageFatal::~LogMessageFatal()
    @     0x7fe4a9377ea0  caffe::Caffe::SetDevice()
"""

#: Detectron (Caffe2) training that segfaults mid-run, glog's failure signal handler (an issue's paste)
DETECTRON = """\
*** Aborted at 1525523656 (unix time) try "date -d @1525523656" if you are using GNU date ***
PC: @     0x7f7c0376048a (unknown)
*** SIGSEGV (@0x0) received by PID 89364 (TID 0x7f79559fb700) from PID 0; stack trace: ***
    @     0x7f7c03abd390 (unknown)
    @     0x7f7c0376048a (unknown)
    @     0x7f7c03766184 __libc_malloc
"""


def test_a_glog_fatal_line_is_a_crash_quoting_it(tmp_path):
    v = decide(text_store(tmp_path, CAFFE))
    assert v.kind is Kind.CRASHED_RANK
    assert "Cannot use GPU in CPU-only Caffe" in v.summary


def test_glogs_failure_signal_handler_is_a_crash(tmp_path):
    v = decide(text_store(tmp_path, DETECTRON))
    assert v.kind is Kind.CRASHED_RANK
    assert "SIGSEGV" in v.summary and "89364" in v.summary


def test_a_glog_info_or_warning_line_is_no_crash(tmp_path):
    v = decide(text_store(tmp_path, "I0930 16:44:30.996455 17607 caffe.cpp:218] Using GPUs 0\n"
                                    "W0930 16:44:31.000001 17607 net.cpp:90] Check the data layer\n"))
    assert v.kind is not Kind.CRASHED_RANK


def test_a_queue_pair_that_could_not_change_state_is_a_transport_error(tmp_path):
    """Mooncake's transfer engine logs it with glog's PLOG(ERROR) (rdma_endpoint.cpp: ``[Handshake]`` and
    the message, then errno's words); the torch parser claims the E-line and decodes no failure."""
    line = ("E0402 09:12:44.120311 51234 rdma_endpoint.cpp:385] [Handshake] Failed to modify QP to RTR, "
            "check mtu, gid, peer lid, peer qp num: Connection timed out [110]\n")
    v = decide(text_store(tmp_path, "I0402 09:11:40.001122 51230 rdma_context.cpp:125] RDMA device: mlx5_0, "
                                    "LID: 0\n" + line))
    assert v.kind is Kind.TRANSPORT_ERROR
    assert "Failed to modify QP to RTR" in v.summary
