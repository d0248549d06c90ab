"""Lines every log carries that hold nothing to decode, known so they are not counted as unknown.

Each shape below is fixed text of a tool, or a frame of a stack, that says nothing about ranks,
collectives or causes beyond what the lines decoded elsewhere say: the source line (and ``^^^^`` marks)
under a traceback's ``File "..."`` line; C++ and native backtrace frames (glibc, OpenMPI, Ray,
torch's ``frame #N`` and the ``(0x... in lib.so)`` it wraps onto); CUDA's and NCCL's advice after an
error; MPI's fixed explanation of a peer that exited; torchrun's OMP banner; a framework's INFO /
WARNING log line (the level a logger prefix gave, ``text.lines_frames``; ERROR ones stay unknown unless
decoded); notebook output objects; what a paste adds (``...`` elisions, ``//`` comments, the shell
prompt and command). This parser makes no rows.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of

FILE_LINE = r"^\s*File \"[^\"]+\", line \d+"
KNOWN = [
    # Python tracebacks and torchrun's failure block
    r"^\s*[\^~]+\s*$", r"^\s*\[Previous line repeated \d+ more times?\]", r"^\s*<NO_OTHER_FAILURES>",
    r"^\S+ FAILED$", r"^\s*\[\d+\]:\s*$", r"^\s*Root Cause \(first observed failure\):",
    # C++ and native backtraces
    r"^\s*frame #\d+: ", r"^\(0x[0-9a-fA-F]+ in \S+\)$", r"^C\+\+ CapturedTraceback:",
    r"^#\d+ .* from \S+:\d+$",
    r"^\s*/\S+\([^)]*\)\s*\[0x[0-9a-fA-F]+\]", r"^\[[\w.\-]+:\d+\] \[\s*\d+\] ",
    r"^\[[\w.\-]+:\d+\] (?:\*\*\* .*\*\*\*|Signal(?: code)?: |Failing at address)",
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [IWEF] \d+ \d+\] \w+\.cc:\d+: ",
    # advice printed after an error
    r"^CUDA kernel errors might be asynchronously reported",
    r"^For debugging consider passing CUDA_LAUNCH_BLOCKING",
    r"^Compile with `TORCH_USE_CUDA_DSA`", r"^Last error:\s*$", r"^\s*Exception raised from ",
    # MPI's explanation of a process that exited (Open MPI, PRRTE)
    r"Primary job\s+terminated normally", r"^a non-zero exit code\. Per user-direction",
    r"^(?:mpirun|prterun|mpiexec) (?:detected|noticed) that",
    r"^the job to be terminated\. The first process",
    r"^An MPI communication peer process has unexpectedly disconnected",
    r"^usually indicates a failure in the peer process", r"^otherwise exiting without calling MPI_FINALIZE",
    r"^Although this local MPI process will likely", r"^\(it may even hang or crash\), the root cause",
    r"^failure of the peer -- that is what you need", r"^example, there may be a core file",
    r"^generally: such peer hangups",
    r"^or other external events\.", r"^\s+(?:Local host|Local PID|Peer host|Process name|Exit code):\s",
    r"^-{10,}", r"^\s*on node \S+ exited on\s*$", r"^signal \d+ \(\w+\)\.$",
    # launchers' banners and notices
    r"^Setting OMP_NUM_THREADS environment variable for each process",
    r"^WARNING: Logging before InitGoogleLogging",
    r"^Warning: Permanently added .* to the list of known hosts",
    # Lightning's accelerator banner (accelerator_connector: `GPU available: True (cuda), used: True`, TPU,
    # IPU, HPU), pyxis importing a container image under srun
    r"^[GTIH]PU available: (?:True|False)\b", r"^pyxis: (?:importing|imported|creating|reusing) ",
    # a shell command continued over lines, Lightning's and hwloc's notices, uvicorn's access log
    r"\\\s*$", r"^\s*LOCAL_RANK: \d+ - CUDA_VISIBLE_DEVICES:",
    r"^Authorization required, but no authorization protocol",
    r"^Unexpected end of /proc/mounts line", r"^(?:INFO|WARNING|ERROR):\s{2,}\S+ - \"",
    r"^\s+\d+ ranks? ha(?:s|ve) launched up",
    # gdb's backtrace (stack.c print_frame: `#N  0xADDR in FUNC (ARGS) at FILE:LINE` or `from LIB`, the
    # tail wrapped onto its own line), its thread headers and pager prompt
    r"^#\d+\s+(?:0x[0-9a-fA-F]+ in )?\S.*\)(?: at \S+:\d+| from \S+)?\s*$",
    r"^\s+(?:from /\S+|at \S+:\d+)\s*$",
    r"^0x[0-9a-fA-F]+ in \S.*\)(?: at \S+:\d+| from \S+)?\s*$",
    r"^Thread \d+ \(Thread 0x[0-9a-fA-F]+ \(LWP \d+\)\)",
    r"^\[(?:New Thread|Switching to Thread|Thread 0x[0-9a-fA-F]+ \(LWP \d+\) exited|Inferior \d+ \()",
    r"^---Type <return> to continue",
    # UCX's backtrace (ucs/debug/debug.c: `==== backtrace (tid: N) ====`, ` N  lib(sym+0x..) [0x..]` or, with
    # bfd, `N 0x%016lx func()  file:line`) and its `====` rules
    r"^==== backtrace \(tid:\s*\d+\) ====", r"^\s*\d+\s+/\S+\([^)]*\)\s*\[0x[0-9a-fA-F]+\]\s*$",
    r"^\s*\d+\s+0x[0-9a-fA-F]+ \S+\(\)\s+\S+:\d+\s*$", r"^={10,}\s*$",
    # the fixed meaning torch adds under an NCCL error it raised (NCCLUtils getNcclErrorDetailStr): the
    # error itself is the `NCCL error in: ...` line above it
    r"^nccl(?:UnhandledCudaError: Call to CUDA function failed|SystemError: System call \(|"
    r"InternalError: Internal check failed|InvalidArgument: Invalid value for an argument|"
    r"InvalidUsage: This usually reflects invalid usage of NCCL library|"
    r"RemoteError: A call failed possibly due to a network error)",
    # RCCL's version banner (init.cc showVersion) under its `RCCL version :` line
    r"^(?:HIP version|ROCm version|Hostname|Librccl path)\s*: \S",
    # NVIDIA's NGC container banner (/opt/nvidia/entrypoint.d)
    r"^== [\w .\-]+ ==$",
    r"^(?:NVIDIA Release \S+ \(build \d+\)|CUDA Version \d[\d.]*$|PyTorch Version \S+$)",
    r"^(?:Container image )?Copyright \(c\) .*NVIDIA CORPORATION",
    r"^Various files include modifications \(c\) NVIDIA",
    r"^This container image and its contents are governed by the NVIDIA",
    r"^By pulling and using the container, you accept",
    r"^https://developer\.nvidia\.com/ngc/nvidia-deep-learning-container-license",
    r"^A copy of this license is made available in this container at",
    # JIT-built ops (torch.utils.cpp_extension, DeepSpeed's op_builder) and ninja
    r"^Time to load \w+ op: [\d.]+ seconds$", r"^ninja: no work to do\.$",
    r"^Using \S+ as PyTorch extensions root",
    r"^(?:Detected CUDA files, patching ldflags|Emitting ninja build file |"
    r"Building extension module \w+\.\.\.|Allowing ninja to set a default number of workers|"
    r"Loading extension module \w+\.\.\.)",
    # downloads: torchvision's datasets, HF datasets' cache notices, a tqdm bar of bytes or of an open total
    r"^Downloading https?://\S+ to \S+", r"^Extracting \S+\.(?:gz|tar|tgz|zip|bz2|xz)(?: to \S+)?\s*$",
    r"^(?:Using custom data configuration \S+$|Reusing dataset \S+ \(|Loading cached processed dataset at "
    r"|Found cached dataset \S+|Downloading and preparing dataset |Dataset \S+ downloaded and prepared to )",
    r"^[^|]{0,80}?\d+%\|[^|]*\|\s*[\d.]+[kMGT]?i?B?/[\d.?]+[kMGT]?i?B? \[",
    r"^\s*(?:[^:\[]{1,60}: )?\d+(?:\.\d+)?[kMG]?(?:it|B|s)? \[\d+:\d\d(?::\d\d)?, [\d.?]+[kMG]?\w*/s\]\s*$",
    # rich's log handler (ColossalAI): `[03/17/23 20:03:12] INFO     message`, the time left out when
    # unchanged
    r"^(?:\[\d\d/\d\d/\d\d \d\d:\d\d:\d\d\])?\s+(?:DEBUG|INFO|WARNING)\s{2,}\S",
    # loggers' INFO / WARNING / DEBUG lines the lines frame does not take apart: torch's own (`V0731
    # 00:56:28.929000 3080918 */torch/distributed/pipelining/stage.py:1354] `, V its DEBUG), Python's
    # `%(asctime)s - %(name)s - %(levelname)s - ` (torchtitan), a loguru-like `12:13:46    INFO `,
    # TensorFlow's C++ and Python logs under a collector's `2023/10/26 09:19:04 ` stamp
    r"^[VIW]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\] ",
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ - [\w.]+ - (?:DEBUG|INFO|WARNING) - ",
    r"^\d\d:\d\d:\d\d\s+(?:DEBUG|INFO|SUCCESS|WARNING)\s",
    r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d (?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] [\w/.]+:\d+\] |(?:INFO|"
    r"WARNING):[\w.]+:)",
    # a markdown image or bold caption a paste carries
    r"^!\[[^\]]*\]\(https?://\S+\)\s*$", r"^\*\*[^*]+\*\*:?\s*$",
    # notebooks and pastes (a markdown code fence)
    r"^\s*(?:`{3,}|~{3,})[\w#+\-]*\s*$", r"^\s*`\s*$",
    r"^<IPython\.core\.display\.\w+ object>$", r"^\s*(?:\.{1,3}|…)\s*$", r"^\s*//",
    r"^\s*(?:\([\w.\-]+\)\s+)?(?:[\w.\-]+@[\w.\-]+(?::\S*)?\s*[$#]|\[[\w.\-]+@[\w.\-]+ [^\]]*\][$#]|"
    r"\$|➜)\s",
]


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("boilerplate")
    t = pl.col("text")
    under_file = (t.shift(1).over("file").str.contains(FILE_LINE) & t.str.starts_with(" ")
                  & (pl.col("line").shift(1).over("file") == pl.col("line") - 1)).fill_null(False)
    info = pl.col("log_level").is_in(["INFO", "DEBUG", "WARNING", "WARN", "I", "W"]).fill_null(False)
    # the lines of a shell command continued with a trailing backslash
    continued = (t.shift(1).over("file").str.contains(r"\\\s*$")
                 & (pl.col("line").shift(1).over("file") == pl.col("line") - 1)).fill_null(False)
    # a frame's source line whose `File "..."` line the excerpt cut off, the next frame's below it
    before_file = (t.shift(-1).over("file").str.contains(FILE_LINE) & t.str.starts_with("    ")
                   & (pl.col("line").shift(-1).over("file") == pl.col("line") + 1)).fill_null(False)
    # gdb's prompt, which the lines frame reads as a Ray actor's `(name) ` and takes off the text
    prompt = pl.col("raw").str.contains(r"^\s*(?:>\s?)?\(gdb\) ") if "raw" in lines.columns else pl.lit(False)
    # (the shapes a few dozen at a time: one regex of them all grows past what the regex engine runs fast)
    shapes = pl.any_horizontal([t.str.contains(any_of(*KNOWN[i:i + 24])) for i in range(0, len(KNOWN), 24)])
    known = prompt | under_file | before_file | continued | info | shapes
    return Parsed("boilerplate", {}, lines.filter(known & ~pl.col("blank")).select("file", "line"))
