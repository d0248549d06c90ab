"""A native process's own word that it died: the fatal lines of C++ runtimes, read as the cause they are
(read by ``torch_log``; issue 31).

One class of line each, as the code that prints it writes it:

- glog / absl ``LOG(FATAL)`` and ``CHECK`` (glog ``logging.cc``, absl ``log_message.cc``): a line at the
  FATAL level ``F1125 15:44:39.266677 200102 nccl_helper.h:62] Check failed: x == y (1 vs. 0)`` (absl
  writes the time ``00:00:1700000000.123456``); the process then aborts (SIGABRT). TensorFlow, XLA, JAX,
  PaddlePaddle, brpc, Gloo, Mooncake and many more print through them. The same ``Check failed`` at a
  non-fatal level (``W``/``I``/``E``) is a log line, not an end: never read here. Its trailer ``*** Check
  failure stack trace: ***`` stands for the FATAL line where an excerpt cut it.
- the failure signal handlers: glog's ``signalhandler.cc`` ``*** Aborted at 1576123353 (unix time) try
  "date -d @1576123353" if you are using GNU date ***``, ``*** SIGSEGV (@0x0) received by PID 24044 (TID
  0x7f64...) from PID 0; stack trace: ***``; absl's ``failure_signal_handler.cc`` ``*** SIGSEGV received at
  time=1618368497 on cpu 6 ***`` (``*** Signal 11 received at time=...`` where it knows no name);
  PaddlePaddle's ``FatalError: `Segmentation fault` is detected by the operating system.`` with its
  ``[SignalInfo: *** SIGSEGV (@0x0) received by PID 18581 (TID ...) from PID 0 ***]``. A program that
  routes them through its own logger keeps them under a ``W``/``E`` glog head (Paddle's ``init.cc``):
  the signal is the same. SIGTERM/SIGINT/SIGHUP reaching a handler is a stop from outside (``signal``),
  every other signal a crash.
- CUDA libraries' status printed by a program's own ``CUDA_CHECK``-style macro, outside any Python
  exception: ``CUBLAS failure 13: CUBLAS_STATUS_EXECUTION_FAILED ; GPU=1``, ``cuDNN error:
  CUDNN_STATUS_...`` (``cuda_error``, with the device where the line says; torch's own CUDA words,
  ``CUDA error:``, ``cudaErrorIllegalAddress``, are ``torch_log``'s); torch's C++ frame
  ``frame #2: c10::cuda::c10_cuda_check_implementation(...)`` where the error's line is cut.
- a native stack in the C++ runtime's terminate path (``ray::TerminateHandler()``,
  ``__gnu_cxx::__verbose_terminate_handler()``, ``std::terminate()``): an uncaught C++ exception ends the
  process (``crash``).
- Ascend's runtime device errors (CANN ``device_error_core_proc.cc``, ``davinci_task.cc``): ``The error
  from device(chipId:6, dieId:0), serial number is 8, there is an exception of aivec error``, ``AIV Kernel
  happen error, retCode=0x31``, ``Kernel task happen error, retCode=0x31, [vector core exception]``,
  ``Aicore kernel execute failed, device_id=2``, ``The DDR address of the MTE instruction is out of range``,
  ``The aicore execution times out`` (507014: a kernel that never finished) (``crash``: a kernel on that
  device failed).

The lines of one failure come together (a FATAL line, its stack-trace trailer, the handler's ``Aborted
at`` and its signal line; a device's several error lines): one event stands for each such block, the line
that says most (the FATAL line, the signal line), the block's other lines read but not repeated.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.parsers import any_of
from tracekit.parsers.process_end import SIGNALS, SIGNAL_NAMES
from tracekit.parsers.torch_patterns import CUDA as TORCH_CUDA
from tracekit.schema import EventKind

# a glog head at any level (the lines that carry a handler's output under a program's own logger); glog 0.6
# and later write the year too, by default (google/glog src/logging.cc:1633 `if (FLAGS_log_year_in_prefix)
# stream() << setw(4) << 1900 + time_.year()`, src/flags.cc:102 default true):
# `F20250720 17:52:37.391902 1125343 util.h:139]`
# (and Ray's C++ logger, `[2024-02-04 08:45:44,122 E 864170 864170] logging.cc:361: `, which carries absl's)
HEAD = (r"^\s*\[?(?:[IWEF](?:\d{4})?\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [\w/.\-]+:\d+\]\s*"
        r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [IWEF] \d+ \d+\] [\w/.\-]+:\d+: )?")
FATAL = r"^\s*\[?F(?:\d{4})?\d{4} \d\d:\d\d:\d+\.\d+\s+(?P<tid>\d+) (?P<src>[\w/.\-]+:\d+)\]\s*(?P<what>.*\S)"
TRAILER = r"^\s*\*\*\* Check failure stack trace: \*\*\*"
ABORTED_AT = HEAD + r"(?:\[TimeInfo: )?\*\*\* Aborted at \d+ \(unix time\) try \"date -d @\d+\""
GLOG_SIGNAL = (HEAD + r"(?:\[SignalInfo: )?\*\*\* (?P<signal>SIG[A-Z]+) \(@(?:0x)?[0-9a-fA-F]+\) received by "
               r"PID (?P<pid>\d+)")
ABSL_SIGNAL = (HEAD + r"\*\*\* (?:(?P<signal>SIG[A-Z]+)|Signal (?P<signum>\d+)) received at time=\d+"
               r"(?: on cpu \d+)? \*\*\*")
PADDLE = r"FatalError: `(?P<what>[^`]+)` is detected by the operating system"
# (the statuses that are failures: polars' regex has no look-ahead to leave out `_SUCCESS`)
FAILED_STATUS = (r"NOT_INITIALIZED|ALLOC_FAILED|INVALID_VALUE|BAD_PARAM\w*|ARCH_MISMATCH|MAPPING_ERROR"
                 r"|EXECUTION_FAILED\w*|INTERNAL_ERROR\w*|NOT_SUPPORTED\w*|LICENSE_ERROR|RUNTIME_\w+"
                 r"|VERSION_MISMATCH|SUBLIBRARY_\w+")
CUDA_LIB = (rf"(?P<what>(?:CUBLAS|cuBLAS) (?:failure|error) \d+|\b(?:CUBLAS|CUDNN|CUSOLVER|CUSPARSE|CURAND"
            rf"|CUFFT)_STATUS_(?:{FAILED_STATUS})\b|cuDNN error: \w+)")
# torch's C++ stack under a c10::Error: the frame of C10_CUDA_CHECK says a CUDA call failed, where the
# error's own `CUDA error: ...` line is cut from an excerpt (its caller, the next frame, says where)
C10_CUDA = r"^\s*frame #\d+: c10::cuda::c10_cuda_check_implementation\b"
NEXT_FRAME = r"^\s*frame #\d+: (?P<fn>[\w:~<>]+)"
DEVICE = r"(?:\bGPU|\bdevice|devId)[=:\s(]+(?P<device>\d+)"
ASCEND = (r"(?P<what>The error from device\((?:chipId:)?\d+.*?there is an? (?:exception of )?\w+ error"
          r"|\b(?:AIV|AIC|AICORE|AICPU|SDMA)\w* Kernel(?: task)? happen error, retCode=0x\w+"
          r"|\b[Kk]ernel task happen error, retCode=0x\w+, \[[^\]]+\]"
          r"|\bAicore kernel execute failed, device_id=\d+"
          r"|The DDR address of the MTE instruction is out of range"
          # (a kernel on the AI Core that never finished: CANN's ACL_ERROR_RT_AICORE_TIMEOUT 507014, runtime/
          # rt_error_codes.h, as torch_npu's AclErrorCode map words it and CANN's EH9999 line gives its reason)
          r"|The aicore execution times out|\breason=\[aicore timeout\])")
ASCEND_DEVICE = r"device\((?:chipId:)?(?P<device>\d+)|(?:devId|device_id)=(?P<dev2>\d+)"

# a native stack's frame in the C++ runtime's terminate path (a backtrace_symbols line, `lib.so(+0x..) [0x..]
# ray::TerminateHandler()`, Ray's handler that std::set_terminate installs and that prints the stack before it
# aborts; libstdc++'s __gnu_cxx::__verbose_terminate_handler; std::terminate, __cxxabiv1::__terminate): the
# process is ending on an uncaught C++ exception (std::terminate then abort: SIGABRT)
TERMINATE = (r"(?P<what>\bray::TerminateHandler|\b__gnu_cxx::__verbose_terminate_handler|\bstd::terminate"
             r"|\b__cxxabiv1::__terminate)\s*\(\)")

#: the lines around them that say nothing more (read, not events): the handler's program counter, Paddle's
#: summary heads and its C++ traceback's head
AROUND = r"^\s*PC: @ |^\s*Error Message Summary:\s*$|^\s*C\+\+ Traceback \(most recent call last\):"
ANY = any_of(FATAL, TRAILER, ABORTED_AT, GLOG_SIGNAL, ABSL_SIGNAL, PADDLE, CUDA_LIB, C10_CUDA, ASCEND,
             TERMINATE)
#: the words a signal's name stands for in Paddle's FatalError (its ``SignalHandle`` table)
PADDLE_SIGNALS = {"Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Floating point exception": "SIGFPE",
                  "Illegal instruction": "SIGILL", "Bus error": "SIGBUS", "Termination signal": "SIGTERM"}
STOPS = ("SIGTERM", "SIGINT", "SIGHUP")
UNNAMED = "an unnamed signal"  # (a number Linux gives no name here)
BLOCK = 12  # lines: a failure's lines that stand this close together are one block


def _sig(name: pl.Expr) -> pl.Expr:
    num = name.replace_strict(SIGNALS, default=None, return_dtype=pl.Int64)
    return pl.format("{} (signal {})", name, num.cast(pl.Utf8).fill_null("?"))


def decode(lines: pl.DataFrame) -> pl.DataFrame | None:
    """``events`` rows (file, line, ts, rank, pid, kind, message, where) of every native failure the lines
    tell, one for each block of them; None where they tell none."""
    t = pl.col("text")
    mine = lines.with_columns(t.shift(-1).over("file").alias("_next")).filter(t.str.contains(ANY))
    if not mine.height:
        return None
    out = []

    def rows(pattern: str, kind: pl.Expr | str, where: str, weight: int, message: pl.Expr,
             unless: str | None = None, **cols: pl.Expr) -> None:
        sub = mine.filter(t.str.contains(pattern) & (~t.str.contains(unless) if unless else pl.lit(True)))
        if sub.height:
            g = t.str.extract_groups(pattern).struct
            sub = sub.with_columns(g.field(n).alias(f"_{n}") for n in re.compile(pattern).groupindex)
            kind = pl.lit(kind) if isinstance(kind, str) else kind
            out.append(sub.with_columns(kind.alias("kind"), pl.lit(where).alias("where"),
                                        message.alias("message"), pl.lit(weight).alias("_weight"), **cols)
                       .drop(f"_{n}" for n in re.compile(pattern).groupindex))

    rows(FATAL, EventKind.CRASH, "glog FATAL", 3,
         pl.format("a FATAL log at {} ended the process (SIGABRT): {}", "_src", "_what"))
    rows(TRAILER, EventKind.CRASH, "glog FATAL", 1,
         pl.lit("a glog CHECK/FATAL ended the process (SIGABRT); its FATAL line is not in the excerpt: "
                "*** Check failure stack trace: ***"))
    rows(ABORTED_AT, EventKind.CRASH, "failure signal handler", 1,
         pl.format("the process's failure signal handler ran (the signal's line is not shown): {}",
                   t.str.replace(HEAD, "").str.strip_chars()))
    for pattern, where in ((GLOG_SIGNAL, "glog failure signal handler"),
                           (ABSL_SIGNAL, "absl failure signal handler")):
        named = (pl.coalesce("_signal", pl.col("_signum").cast(pl.Int64, strict=False)
                             .replace_strict(SIGNAL_NAMES, default=None, return_dtype=pl.Utf8))
                 if "signum" in re.compile(pattern).groupindex else pl.col("_signal"))
        stop = named.is_in(STOPS).fill_null(False)
        pid = (pl.col("_pid").cast(pl.Int64, strict=False) if "pid" in re.compile(pattern).groupindex
               else pl.lit(None, pl.Int64))
        rows(pattern, pl.when(stop).then(pl.lit(EventKind.SIGNAL)).otherwise(pl.lit(EventKind.CRASH)), where,
             3, pl.format("{} received by the process{}: {}", _sig(named.fill_null(UNNAMED)),
                          pl.when(pid.is_not_null()).then(pl.format(" (pid {})", pid)).otherwise(pl.lit("")),
                          t.str.replace(HEAD, "").str.strip_chars()),
             pid=pl.coalesce(pid, pl.col("pid")) if "pid" in lines.columns else pid)
    said = pl.col("_what").replace_strict(PADDLE_SIGNALS, default=None, return_dtype=pl.Utf8)
    rows(PADDLE, pl.when(said.is_in(STOPS).fill_null(False)).then(pl.lit(EventKind.SIGNAL))
         .otherwise(pl.lit(EventKind.CRASH)), "paddle signal handler", 3,
         pl.format("{} received by the process (PaddlePaddle's FatalError: `{}` is detected by the operating "
                   "system)", _sig(said.fill_null(UNNAMED)), "_what"))
    device = t.str.extract(DEVICE, 1)
    # (torch's own CUDA words, `CUDA error: ...`, `cudaErrorIllegalAddress`, are parsers/torch_log's)
    rows(CUDA_LIB, EventKind.CUDA_ERROR, "CUDA library", 3,
         pl.format("a CUDA library call failed{}: {}",
                   pl.when(device.is_not_null()).then(pl.format(" on GPU {}", device)).otherwise(pl.lit("")),
                   t.str.strip_chars().str.slice(0, 240)), unless=TORCH_CUDA)
    caller = pl.col("_next").str.extract(NEXT_FRAME, 1)
    rows(C10_CUDA, EventKind.CUDA_ERROR, "c10 CUDA check", 1,
         pl.format("a CUDA call failed (C10_CUDA_CHECK: c10_cuda_check_implementation in torch's C++ "
                   "stack){}; the error's own `CUDA error:` line is not in the excerpt",
                   pl.when(caller.is_not_null()).then(pl.format(", called from {}", caller))
                   .otherwise(pl.lit(""))))
    rows(TERMINATE, EventKind.CRASH, "C++ terminate", 1,
         pl.format("the process is ending on an uncaught C++ exception: its native stack is in {}() (std::"
                   "terminate, then abort: SIGABRT); the exception's own line, above the stack, says what",
                   "_what"))
    adev = pl.coalesce(t.str.extract(ASCEND_DEVICE, 1), t.str.extract(ASCEND_DEVICE, 2))
    rows(ASCEND, EventKind.CRASH, "Ascend runtime", 2,
         pl.format("an Ascend device error{}: {}",
                   pl.when(adev.is_not_null()).then(pl.format(" on device {}", adev)).otherwise(pl.lit("")),
                   pl.col("_what")))
    if not out:
        return None
    found = pl.concat(out, how="diagonal_relaxed").sort("file", "line")
    # one event per block: the lines of one failure stand close together; the one that says most stands
    gap = (pl.col("line") - pl.col("line").shift(1).over("file")).fill_null(BLOCK + 1)
    found = found.with_columns((gap > BLOCK).cum_sum().over("file").alias("_block"))
    best = pl.col("_weight") == pl.col("_weight").max().over("file", "_block")
    found = found.filter(best).unique(["file", "_block"], keep="first", maintain_order=True)
    return found.drop("_weight", "_block", "_next")
