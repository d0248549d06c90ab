"""Native runtimes' fatal lines (parsers/native_fatal, issue 31): glog/absl FATAL and CHECK, the failure
signal handlers of glog, absl and PaddlePaddle, CUDA library statuses, Ascend device errors; gloo's transport
size checks; a server that reset and then refused its connections. Inputs are real pastes of each family
(found in public issues and code comments, not the wild corpus), with negatives."""

from __future__ import annotations

import pytest

from tests.factory import events_of, ranks_of, text_store, worlds_of
from tracekit.outcome import EventKind, Kind
from tracekit.verdict import decide

# absl (qcraft sim server): a CHECK at the FATAL level, its trailer and absl's signal handler after it
ABSL_CHECK = """\
I1022 04:57:07.580000     1 sim_server_main.cc:100] session connect
F1022 04:57:07.596509     1 sim_server_main.cc:111] Check failed: qcraft::cassandra::ConnectCassSession(cluster, session) == CASS_OK 
*** Check failure stack trace: ***
*** SIGABRT received at time=1634878627 on cpu 23 ***
PC: @     0x7f5fba26bfb7  (unknown)  raise
    @     0x559002e1addf        256  absl::lts_20210324::WriteFailureInfo()
"""
# PaddlePaddle's summary of a segfault (paddlepaddle-gpu 2.0.0rc1 on CUDA 10.2)
PADDLE_SEGV = """\
--------------------------------------
C++ Traceback (most recent call last):
--------------------------------------
0   paddle::framework::SignalHandle(char const*, int)
1   paddle::platform::GetCurrentTraceBackString[abi:cxx11]()

----------------------
Error Message Summary:
----------------------
FatalError: `Segmentation fault` is detected by the operating system.
  [TimeInfo: *** Aborted at 1636622690 (unix time) try "date -d @1636622690" if you are using GNU date ***]
  [SignalInfo: *** SIGSEGV (@0x0) received by PID 18581 (TID 0x7f103bc4a700) from PID 0 ***]
"""
# glog's handler under a program's own W-level logger (Paddle's init.cc), two processes of one job
GLOG_SEGV_UNDER_W = """\
W1212 04:02:33.319205 24043 init.cc:205]     @     0x559a8cf551ec PyEval_EvalCode
W1212 04:02:33.400863 24044 init.cc:205] *** Aborted at 1576123353 (unix time) try "date -d @1576123353" if you are using GNU date ***
W1212 04:02:33.403725 24044 init.cc:205] PC: @                0x0 (unknown)
W1212 04:02:33.403934 24044 init.cc:205] *** SIGSEGV (@0x0) received by PID 24044 (TID 0x7f6406bd7740) from PID 0; stack trace: ***
W1212 04:02:33.406607 24044 init.cc:205]     @     0x7f64067b55d0 (unknown)
"""
# Ascend CANN runtime (a vLLM-ascend GatherV3 kernel)
ASCEND_AIV = """\
       Kernel task happen error, retCode=0x31, [vector core exception].[FUNC:PreCheckTaskErr][FILE:davinci_kernel_task.cc][LINE:1286]
       AIV Kernel happen error, retCode=0x31.[FUNC:GetError][FILE:stream.cc][LINE:1079]
       Aicore kernel execute failed, device_id=1, stream_id=2, report_stream_id=2, task_id=42, flip_num=0, fault kernel_name=ConcatD_0d74
"""
# torch's gloo backend: an async checkpoint's collective met another one of a different size
GLOO_PREAMBLE = """\
terminate called after throwing an instance of 'gloo::EnforceNotMet'
  what():  [enforce fail at /pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 6232 vs 4
"""


def test_a_fatal_check_is_the_crash_its_trailer_and_handler_one_block(tmp_path):
    store = text_store(tmp_path, ABSL_CHECK)
    crash = events_of(store, EventKind.CRASH)
    assert crash.height == 1 and crash["line"][0] == 2
    assert "sim_server_main.cc:111" in crash["message"][0] and "Check failed" in crash["message"][0]
    v = decide(store)
    assert v.kind == Kind.CRASHED_RANK and "ConnectCassSession" in v.summary


def test_paddle_fatal_error_names_the_signal(tmp_path):
    store = text_store(tmp_path, PADDLE_SEGV)
    crash = events_of(store, EventKind.CRASH)
    assert crash.height == 1 and "SIGSEGV (signal 11)" in crash["message"][0]
    assert not events_of(store, EventKind.EXCEPTION).height  # (FatalError is not a Python exception)
    assert decide(store).kind == Kind.CRASHED_RANK


def test_a_signal_handler_under_a_warning_head_is_still_the_crash(tmp_path):
    store = text_store(tmp_path, GLOG_SEGV_UNDER_W)
    crash = events_of(store, EventKind.CRASH)
    assert crash.height == 1 and crash["line"][0] == 4 and crash["pid"][0] == 24044
    v = decide(store)
    assert v.kind == Kind.CRASHED_RANK and "SIGSEGV" in v.summary


@pytest.mark.parametrize("line", [
    "W1130 13:01:46.075424  4278 op_handle.cc:34] Check failed: x == y (3 vs. 4) retrying",
    "I1130 13:01:46.075424  4278 helper.cc:88] Check failed: cache hit == 1 (0 vs. 1)",
])
def test_check_failed_below_the_fatal_level_is_no_crash(tmp_path, line):
    store = text_store(tmp_path, line + "\n")
    assert not events_of(store, EventKind.CRASH).height


def test_a_stop_signal_in_absls_handler_is_a_stop_not_a_crash(tmp_path):
    store = text_store(tmp_path, "0: *** SIGTERM received at time=1759954468 on cpu 5 ***\n"
                                 "0: PC: @     0x4002f3c31ea0  (unknown)  (unknown)\n")
    assert not events_of(store, EventKind.CRASH).height
    sig = events_of(store, EventKind.SIGNAL)
    assert sig.height == 1 and "SIGTERM (signal 15)" in sig["message"][0]


@pytest.mark.parametrize("line, said", [
    ("CUBLAS failure 13: CUBLAS_STATUS_EXECUTION_FAILED ; GPU=1 ; hostname=node3 ; expr=cublas_gemm(h)",
     "on GPU 1"),
    ("cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", "CUDNN_STATUS_INTERNAL_ERROR"),
    ("check failed at kernel.cu:88: cudaErrorIllegalAddress", "cudaErrorIllegalAddress"),
])
def test_a_cuda_librarys_status_on_a_plain_line_is_a_cuda_error(tmp_path, line, said):
    store = text_store(tmp_path, line + "\n")
    cuda = events_of(store, EventKind.CUDA_ERROR)
    assert cuda.height >= 1 and any(said in m for m in cuda["message"].to_list())
    assert decide(store).kind == Kind.CRASHED_RANK


def test_a_success_status_is_no_error(tmp_path):
    store = text_store(tmp_path, "cublas returned CUBLAS_STATUS_SUCCESS for handle 0\n")
    assert not events_of(store, EventKind.CUDA_ERROR).height


def test_ascend_kernel_errors_are_one_crash_of_the_device(tmp_path):
    store = text_store(tmp_path, ASCEND_AIV)
    crash = events_of(store, EventKind.CRASH)
    assert crash.height == 1
    v = decide(store)
    assert v.kind == Kind.CRASHED_RANK and "Ascend device error" in v.summary


def test_gloos_transport_size_check_is_a_mismatch_with_both_sizes(tmp_path):
    store = text_store(tmp_path, GLOO_PREAMBLE)
    v = decide(store)
    assert v.kind == Kind.MISMATCH and "6232 vs 4" in v.summary


def test_reset_then_refused_at_one_address_is_that_servers_end(tmp_path):
    # brpc's controller error of a client whose parameter server went away (Paddle fleet)
    text = ("W0719 15:32:17.796238 3309161 input_messenger.cpp:222] Fail to read from fd=14 "
            "SocketId=4@10.2.8.16:6170@58494: Connection reset by peer [104]\n"
            "E0719 15:32:17.796977 3309146 brpc_ps_client.cc:250] resquest cmd_id:2 failed, err:[E104]Fail to "
            "read from fd=14 SocketId=4@10.2.8.16:6170@58494: Connection reset by peer [R1][E111]Fail to "
            "connect SocketId=204@10.2.8.16:6170: Connection refused [R2][E112]Not connected to "
            "10.2.8.16:6170 yet\n")
    v = decide(text_store(tmp_path, text))
    assert v.kind == Kind.CRASHED_RANK and "10.2.8.16:6170" in v.summary


def test_reset_alone_stays_the_transports(tmp_path):
    text = ("W0719 15:32:17.796238 3309161 input_messenger.cpp:222] Fail to read from fd=14 "
            "SocketId=4@10.2.8.16:6170@58494: Connection reset by peer [104]\n"
            "E0719 15:32:18.000000 3309146 client.cc:250] Fail to connect SocketId=5@10.2.8.17:6170: "
            "Connection refused\n")
    assert decide(text_store(tmp_path, text)).kind != Kind.CRASHED_RANK


def test_absls_handler_under_rays_logger_is_the_crash(tmp_path):
    # a Triton assertion in a Ray worker: Ray's C++ logger carries absl's handler line
    text = ("[2024-02-04 08:45:44,122 E 864170 864170] logging.cc:361: *** SIGABRT received at "
            "time=1707036344 on cpu 40 ***\n")
    crash = events_of(text_store(tmp_path, text), EventKind.CRASH)
    assert crash.height == 1 and "SIGABRT (signal 6)" in crash["message"][0]


def test_c10s_cuda_check_frame_is_a_cuda_error_where_its_line_is_cut(tmp_path):
    # torch 2.x's C++ stack of a c10::Error raised in ProcessGroupNCCL's watchdog (its message line cut)
    text = ("frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in libc10.so)\n"
            "frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&) "
            "+ 0x64 (0x7f in libc10.so)\n"
            "frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x118 "
            "(0x7f in libc10_cuda.so)\n"
            "frame #3: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x6c "
            "(0x7f in libtorch_cuda.so)\n")
    v = decide(text_store(tmp_path, text))
    assert v.kind == Kind.CRASHED_RANK and "finishedGPUExecutionInternal" in v.summary


def test_paddles_launcher_names_the_aborted_trainers_and_the_world(tmp_path):
    # paddle.distributed.launch (launch_utils.watch_local_trainers), as its docs show it
    text = ("INFO 2020-11-30 13:01:49,988 launch_utils.py:269] terminate all the procs\n"
            "ERROR 2020-11-30 13:01:49,988 launch_utils.py:413] ABORT!!! Out of all 8 trainers, the trainer "
            "process with rank=[2, 3] was aborted. Please check its log.\n")
    store = text_store(tmp_path, text)
    assert ranks_of(store) == [2, 3] and worlds_of(store) == [8]
    v = decide(store)
    assert v.kind == Kind.CRASHED_RANK and "aborted" in v.summary
