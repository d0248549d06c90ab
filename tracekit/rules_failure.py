"""The failure rules: a CUDA error, a rank that crashed or exited, and a failure sign with no cause (a
rendezvous or store barrier that never came together is in rules_rendezvous). A failure is a cause: it
explains the waits of the ranks after it. NCCL's own errors (a refused call, its bootstrap, its error code and why, the
transport's errors, its unwind lines) are in rules_nccl_errors."""

from __future__ import annotations

import re

import polars as pl

from tracekit.evidence import KILL_CODES, SIGKILL_CODES, Evidence, clip, lines
from tracekit.facts_in_view import words_below
from tracekit.parsers.runtimes.c10d_desync import NAMED
from tracekit.parsers.torch_patterns import CUT_TRACEBACK
from tracekit import (align, ignored_exceptions, nccl_messages, rules_after_end, rules_blamed, start_up_frames,
                      user_stop)
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.rules_common import COLLECT, msg, rank_of
from tracekit.rules_nccl_codes import peer_connect_cuda_failed
from tracekit.rules_nccl_errors import cuda_inside_nccl, failing
from tracekit.rules_nccl_own import unwinds_nccl_code
from tracekit.wording import who


def _network_failed_before(ev: Evidence, failures: pl.DataFrame) -> bool:
    """The network transport failed earlier in the same file than the first of ``failures``: the
    later failure (an illegal access in NCCL's proxy, an abort) is what the broken transfer led to."""
    net = ev.transport.filter(pl.col("kind") != EventKind.CONNECT_RETRY)
    if not net.height or not failures.height:
        return False
    first = failures.sort("file", "line").group_by("file").agg(pl.col("line").min().alias("_f"))
    return net.join(first, on="file").filter(pl.col("line") < pl.col("_f")).height > 0


#: a process's abort as MPI or libfabric raise it (``Signal: Aborted (6)``, ``exited on signal 6``)
ABORT = r"Aborted \(6\)|SIGABRT|[Ss]ignal 6\b|is aborting the MPI job|code:? -6\b"


def _aborted_after_endpoint_error(ev: Evidence, failures: pl.DataFrame) -> bool:
    """Every failure is an abort and a rank printed libfabric's endpoint error (PSM3's ``Mismatched address
    format``, an OFI call that failed) in the same log: MPI aborts the job after the transport's error,
    on that rank or another, and the processes' output interleaves, so the abort may print first."""
    said = ev.transport.filter(pl.col("where").fill_null("").str.starts_with("libfabric"))
    if not said.height or not failures.height:
        return False
    aborts = failures.filter(pl.col("message").fill_null("").str.contains(ABORT))
    return aborts.height == failures.height and failures.join(said, on="file", how="semi").height > 0


#: an allocation no device could hold: PyTorch's caching allocator's words for a size past 1 EB
#: (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp: "CUDA out of memory. Tried to allocate more than 1EB
#: memory."), or a million GiB and more (its format_size writes sizes past 1 GiB in GiB): not memory that ran
#: out but a size read from garbage
ABSURD_SIZE = r"Tried to allocate (?:more than 1EB|\d{7,}(?:\.\d+)? GiB)"


def _absurd_allocation(ev: Evidence) -> Verdict | None:
    """UNDECIDED where every CUDA failure is an out-of-memory of an absurd size (``ABSURD_SIZE``): no
    device runs out at 1 EB; the size came from garbage, most often a tensor whose size a peer sent and
    that differs from what this rank expects (a broadcast or a receive of another size: the collectives of
    the ranks differ), which the lines alone do not show."""
    absurd = ev.cuda.filter(pl.col("message").str.contains(ABSURD_SIZE))
    if not absurd.height or absurd.height != ev.cuda.height:
        return None
    r = rank_of(absurd, ev)
    return Verdict(Kind.UNDECIDED, f"{who(r) if r else 'a rank'} asked for an allocation no device holds: "
                   f"{msg(absurd, 0, 200)}: not memory that ran out but a size read from garbage, most often a "
                   "tensor size a peer sent that differs from what this rank posted (a broadcast or a receive "
                   "whose size differs between the ranks: their collectives differ), or a corrupted shape; to "
                   "decide: NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=COLL on every rank (each rank's op, count "
                   "and opCount) or TORCH_DISTRIBUTED_DEBUG=DETAIL", r, lines(absurd, 2))


def cuda_failure(ev: Evidence) -> Verdict | None:
    """A CUDA failure (illegal access, out of memory, device assert): a cause of its own -- unless the
    network transport failed before it in the same log, or it is an allocation of an absurd size (a size
    read from garbage: ``_absurd_allocation``). NCCL's own word that a CUDA call inside it failed
    (`unhandled cuda error`) is one too, where no CUDA line says more."""
    if not ev.cuda.height:
        return cuda_inside_nccl(ev)
    absurd = _absurd_allocation(ev)
    if absurd is not None:
        return absurd
    if _network_failed_before(ev, ev.cuda):
        return None
    if (connect := peer_connect_cuda_failed(ev)) is not None:
        return connect
    r = rank_of(ev.cuda, ev)
    name = _spawned(ev, ev.cuda) or (who(r) if r else "a rank")
    after = ("; the collectives that no longer pair up after it are its consequence (its error path left "
             "the others' collective)" if ev.mismatches or ev.reported_mismatch.height else "")
    return Verdict(Kind.CRASHED_RANK,
                   f"{name} hit a CUDA error first: {msg(ev.cuda)}{after}", r,
                   lines(ev.cuda) + lines(ev.exits, 3))


#: torch.multiprocessing.spawn's report of the process that raised (parsers/process_end ``_spawn_raised``)
SPAWN_PROCESS = r"^torch\.multiprocessing\.spawn: process (\d+) \(local rank \d+\) raised (.+)$"


def _spawned(ev: Evidence, failed: pl.DataFrame) -> str:
    """``torch.multiprocessing.spawn's process 0 (local rank 0)`` where spawn's report (``-- Process
    0 terminated with the following error:``) names the process whose exception is the first failure's: spawn
    numbers its processes by local rank, and the report's traceback is printed by the parent, so a rank
    prefix of the lines around it is not that process's (issue 31: an OOM on process 0, read on the rank whose
    mismatch report came first). Empty where no report names it."""
    said = ev.exits.filter(pl.col("where") == "torch.multiprocessing.spawn") if "where" in ev.exits.columns \
        else ev.exits.clear()
    first = (failed["message"][0] or "")[:60]
    for text in said["message"].fill_null("").to_list():
        m = re.match(SPAWN_PROCESS, text)
        if m and first and m.group(2).startswith(first[:40]):
            return f"torch.multiprocessing.spawn's process {m.group(1)} (local rank {m.group(1)})"
    return ""


def _bootstrap_unwound_before(ev: Evidence, first: pl.DataFrame) -> Verdict | None:
    """NCCL's error code reaching the program (nccl-tests' `Test NCCL failure common.cu:961 'internal
    error'`) after NCCL unwound through its bootstrap in the same file (`bootstrap.cc:312 -> 3`,
    `init.cc:1493 -> 3`), while no communicator completed init: the communicator's bootstrap failed, so
    its init never completed (an init stall); the program's failure is how NCCL's code reached it."""
    row = first.row(0, named=True)
    said = nccl_messages.meaning_of(row["message"] or "")
    if not (said and said[0].name in nccl_messages.ERROR_STRINGS or "nccl_error" in (row.get("says") or [])) \
            or ev.store.comms.filter(pl.col("state") == "init_complete").height:
        return None
    unwound = ev.kinds(EventKind.NCCL_UNWIND).filter(
        (pl.col("file") == row["file"]) & (pl.col("line") < row["line"])
        & pl.col("message").str.contains(r"(?:^|/)bootstrap\.(?:cc|cu):\d+ -> \d+")).sort("line")
    if not unwound.height:
        return None
    rr = rank_of(first, ev)
    return Verdict(Kind.INIT_STALL, f"NCCL's communicator init never completed: its bootstrap failed "
                   f"(`{clip(unwound['message'][0], 80)}`, NCCL's unwind through bootstrap.cc), and "
                   f"{failing(rr, ev)}'s NCCL call then failed: {msg(first, 0, 160)}; the peers' closed "
                   "connections after it are its consequence; NCCL_DEBUG=WARN on every host names the "
                   "bootstrap's cause (an interface or address the other hosts cannot reach: "
                   "NCCL_SOCKET_IFNAME)", rr, lines(unwound, 2) + lines(first, 1) + lines(ev.transport, 2))


def _started(ev: Evidence) -> bool:
    """Whether the job got past start-up: a step, a collective, a communicator whose init completed."""
    return (ev.steps.height > 0 or ev.store.comms.filter(pl.col("state") == "init_complete").height > 0
            or align.collect(ev.store.collectives.lazy().select(pl.len())).item() > 0)


def _raised_in_start_up(ev: Evidence, cut: pl.DataFrame, r: list[int]) -> Verdict | None:
    """INIT_STALL where a traceback whose error line the excerpt cuts raised in a start-up frame
    (``start_up_frames.FRAMES``: a process group's or a communicator's creation, DDP's first collective)
    and the job never got past start-up: where it failed decides, not that it raised (the error itself, a
    timeout or a refused connection of the group's init or a program's own error there, is not shown)."""
    row = cut.row(0, named=True)
    frame = start_up_frames.frame_of(row["where"] or "")
    if frame is None or _started(ev):
        return None
    name = who(r) if r else "a rank"
    return Verdict(Kind.INIT_STALL, f"start-up never completed: {name} raised in {clip(row['where'], 160)}, "
                   f"{frame.means}, and its error line is cut from the excerpt; no step, collective or "
                   "completed communicator is logged, so the job never got past its process group's set-up "
                   "(a store or a peer not reached, a communicator's init that failed or timed out); the "
                   "error under the traceback, and NCCL_DEBUG=INFO on every rank, say which", r,
                   lines(cut, 1) + lines(ev.crashes, 2))


#: TensorPipe's InfiniBand verbs code raising on a verbs call that failed (pytorch/tensorpipe 2b4cd91
#: tensorpipe/common/ibv.h:19-31: TP_CHECK_IBV_PTR / TP_CHECK_IBV_INT wrap every ibv_* call in
#: TP_THROW_SYSTEM_IF(..., errno), whose message tensorpipe/common/defs.h:83-87 begins `In <__func__> at
#: <file>:<line> "`; the ibv transport's and the CUDA GDR channel's own files throw the same way): the
#: transport's own set-up or use failed, whatever the rank did after it
VERBS_RAISED = (r"\bIn [\w:~<>]+(?:\(\))? at tensorpipe/(?:common/ibv\.h|transport/ibv/\S+"
                r"|channel/cuda_gdr/\S+):\d+")


def _verbs_raised(ev: Evidence, first: pl.DataFrame, r: list[int]) -> Verdict | None:
    """TRANSPORT_ERROR where the first failure is TensorPipe's verbs code raising (``VERBS_RAISED``): a verbs
    call of the InfiniBand transport failed on that host, not a rank's own error."""
    if not first["message"].fill_null("").str.contains(VERBS_RAISED).any():
        return None
    return Verdict(Kind.TRANSPORT_ERROR, f"the InfiniBand verbs transport failed on {failing(r, ev)}: "
                   f"{msg(first)} (TensorPipe's ibv code raises so when an ibv_* call returns an error: "
                   "tensorpipe/common/ibv.h TP_CHECK_IBV_*); the host's RDMA device, its driver or its "
                   "permissions (ibv_devinfo, ulimit -l, a container without the IB devices) are at fault, "
                   "not the program: TensorPipeRpcBackendOptions(_transports=[\"uv\"]) runs without it", r,
                   lines(first, 1) + lines(ev.crashes.slice(1), 2))


#: a fatal check (glog's ``Check failed: EXPR``, parsers/native_fatal) whose expression is a network call: a
#: socket's (bind, listen, connect, accept, socket, setsockopt, getaddrinfo) or an RDMA verbs call
#: (``ibv_*``, ``rdma_*``); the UCCL plugin's util.h:139 ``Check failed: bind(*listen_fd, ...) >= 0 ERROR:
#: binding`` (samples/wild dv19-011) is one
NET_CHECK = (r"Check failed: \(?\s*(?:::)?(?:bind|listen|connect|accept4?|socket|setsockopt|getaddrinfo"
             r"|ibv_\w+|rdma_\w+)\s*\(")


def _network_call_checked(ev: Evidence, first: pl.DataFrame, r: list[int]) -> Verdict | None:
    """TRANSPORT_ERROR where the first failure is a fatal check of a network call (``NET_CHECK``): the
    network transport (a net plugin's socket or verbs set-up) failed on that host and took the process down;
    the abort is its consequence, not a rank's own error."""
    text = first["message"][0] or ""
    m = re.search(NET_CHECK, text)
    if m is None:
        return None
    return Verdict(Kind.TRANSPORT_ERROR, f"the network transport failed on {failing(r, ev)}: {clip(text, 220)} "
                   "(a fatal check of a network call: the transport's own socket or RDMA set-up failed, and the "
                   "check aborted the process); a port already bound or out of range, an interface or address "
                   "not on this host, or RDMA devices missing in the container: check the plugin's address and "
                   "port settings and NCCL_SOCKET_IFNAME, and that the next log shows the transport connected",
                   r, lines(first, 1) + lines(ev.exits, 2) + lines(ev.kinds(EventKind.SIGNAL), 1))


def _start_up_refused(ev: Evidence, first: pl.DataFrame, r: list[int]) -> Verdict | None:
    """INIT_STALL where the first failure is a start-up step its runtime says never completed and the job never
    got past start-up: a communicator's init call that failed (``start_up_frames.INIT_CALL_FAILED``:
    torch_npu's ``HCCL function error: hcclCommInitRootInfoConfig(...), error code is 1``), or workers a
    scheduler could not place (``start_up_frames.UNPLACED``: vLLM's ``Cannot provide a placement group
    requiring 4.0 GPUs ... within 1800 seconds``). The exception the rank raised is how start-up's end
    reached the program, not a crash of its own."""
    text = first["message"][0] or ""
    call = start_up_frames.init_call_failed(text)
    unplaced = re.search(start_up_frames.UNPLACED, text)
    if (call is None and unplaced is None) or _started(ev):
        return None
    name = who(r) if r else "a rank"
    if call is not None:
        what = (f"the communicator's init failed on {name}: {call}, so that communicator never completed "
                "init (a lazy init at its first collective or send/recv fails the same)")
        why = ("the device's own log (CANN's plog, ASCEND_GLOBAL_LOG_LEVEL=1) and the same call's code on the "
               "other ranks say why: a rank table, a device id or a world size that differ between ranks, or "
               "a peer's address it could not reach")
    else:
        what = (f"the job's workers could not be placed: the scheduler said `{unplaced.group(0)}` (the "
                "resources start-up asked for never came up)")
        why = ("`ray status` and `ray list nodes` show which node or GPUs never joined the cluster (a node "
               "whose Ray never started or joined, or fewer GPUs than the parallel sizes ask)")
    return Verdict(Kind.INIT_STALL, f"start-up never completed: {what}: {msg(first, 0, 240)}; no step, "
                   f"collective or completed communicator is logged; {why}", r,
                   lines(first, 1) + lines(ev.crashes.slice(1), 2))


def _header_of(ev: Evidence, first: pl.DataFrame) -> str:
    """Where the first failure is a traceback whose exception the excerpt cuts: the line right above it that no
    parser decodes, which says what raised (Python's ``logger.exception(msg)`` writes ``msg``, then the
    traceback on the next lines: vLLM's ``Exception in worker VllmWorkerProcess while processing method
    load_model.``, vllm/executor/multiproc_worker_utils.py _run_worker_process), said after it."""
    if first["message"][0] != CUT_TRACEBACK:
        return ""
    above = ev.kinds(EventKind.TELLING_LINE).filter((pl.col("file") == first["file"][0])
                                                   & (pl.col("line") == first["line"][0] - 1))
    return f"; the line above it: \"{clip(above['message'][0], 160)}\"" if above.height else ""


#: an exception that wraps another raised inside a worker, whose own error follows it in the log: Ray's
#: ``RayTaskError(RuntimeError): ray::_RayTrainWorker__execute...`` (python/ray/exceptions.py), the DataLoader's
#: ``Caught RuntimeError in DataLoader worker process 3.`` then ``Original Traceback`` (torch/_utils.py
#: ExceptionWrapper), mp.spawn's ``ProcessRaisedException``, SGLang's ``TpModelWorkerClient hit an exception``
WRAPPER = (r"RayTaskError|RayActorError|Caught \w+ in DataLoader worker process|ProcessRaisedException"
           r"|hit an exception|Worker failed with error")
#: how many lines below the wrapper its worker's own error may stand (a traceback's frames between)
WRAPPED_WITHIN = 60


def _wrapped_cause(ev: Evidence, first: pl.DataFrame) -> str:
    """Where the first failure is a wrapper's exception (``WRAPPER``), the error raised inside it: the next
    exception in its file, below it, that is no wrapper itself, said after it (the fact is the inner error)."""
    if not re.search(WRAPPER, first["message"][0] or ""):
        return ""
    at, line = first["file"][0], first["line"][0]
    inner = ev.kinds(EventKind.EXCEPTION, EventKind.CUDA_ERROR).filter(
        (pl.col("file") == at) & (pl.col("line") > line) & (pl.col("line") <= line + WRAPPED_WITHIN)
        & ~pl.col("message").fill_null("").str.contains(WRAPPER)).sort("line")
    return f"; the error raised inside it: {clip(inner['message'][0], 200)}" if inner.height else ""


def crashed_rank(ev: Evidence) -> Verdict | None:
    """A rank failed with an error that is not itself a timeout; the others then wait for it."""
    if (not ev.crashes.height or _network_failed_before(ev, ev.crashes)
            or _aborted_after_endpoint_error(ev, ev.crashes)):
        return None
    # (an exception Python says it ignored, a finaliser's or an atexit function's, is no failure)
    first = ev.crashes.join(ignored_exceptions.ignored(ev, ev.crashes), on=["file", "line"], how="anti")
    # (nor is a user's Ctrl-C, or what raised as the processes unwound from it: user_stop)
    first = user_stop.without_stop(ev, first).head(1)
    if not first.height:
        return None
    # (of the failures on its line, c10d's word of the rank that failed first: the line is another rank's
    # error, which names it: parsers/runtimes/c10d_desync)
    named = ev.crashes.join(first.select("file", "line"), on=["file", "line"]).filter(pl.col("where") == NAMED)
    first = named.head(1) if named.height else first
    if unwinds_nccl_code(ev, first):  # (NCCL's code, and the failure its unwinding: the code decides)
        return None
    if (reported := _reported_missing(ev, first)) is not None:
        return reported
    r = rank_of(first, ev)
    if (ended := rules_after_end.raised_then_ended(ev, first, who(r) if r else "a rank")) is not None:
        return ended  # (the work ended after the exception: it did not end the run)
    if (blamed := rules_blamed.names_faulty_rank(ev, first, r)) is not None:
        return blamed  # (its words name another rank as the faulty one)
    if (verbs := _verbs_raised(ev, first, r)) is not None:
        return verbs
    if (net := _network_call_checked(ev, first, r)) is not None:
        return net
    if (refused := _start_up_refused(ev, first, r)) is not None:
        return refused
    booted = _bootstrap_unwound_before(ev, first)
    if booted is not None:
        return booted
    # (a traceback cut before its error line: where it raised, the innermost frame the excerpt shows)
    cut = ev.raised_cut.filter(pl.col("file") == first["file"][0]) if first["message"][0] == CUT_TRACEBACK \
        else ev.raised_cut.clear()
    if not cut.height and first["message"][0] == CUT_TRACEBACK and first["where"][0]:
        # (no stack of it was read: the start-up frame torch_log found among its frames, said as a stack's)
        cut = first.with_columns(pl.format("{} (the innermost start-up frame shown)", "where").alias("where"))
    inner = f"; it raised in {clip(cut['where'][0], 160)}" if cut.height else ""
    inner += _header_of(ev, first) + _wrapped_cause(ev, first)
    below = words_below(ev, first.row(0, named=True))  # (an exception's type alone: its words are below it)
    inner = f" {below}{inner}" if below else inner
    if cut.height and (stalled := _raised_in_start_up(ev, cut, r)) is not None:
        return stalled
    said = f"{failing(r, ev)} failed first: {msg(first)}{inner}"
    return Verdict(Kind.CRASHED_RANK, said + _signalled(ev, said), r,
                   lines(ev.crashes) + lines(cut, 1) + lines(ev.exits, 3))


#: the transport's word, under a report's `Original exception:`, that the missing rank's end closed the link
PEER_CLOSED = r"(?i)closed by peer|Connection reset by peer|peer (?:process )?(?:has )?exited|Broken pipe"


def _reported_missing(ev: Evidence, first: pl.DataFrame) -> Verdict | None:
    """The first error is the line of a runtime's report that named ranks never reached a collective (c10d's
    ``Rank 1 failed to pass monitoredBarrier in 2000 ms``, raised on rank 0: parsers/runtimes/c10d_desync):
    the reporter raised because of them, its error is the consequence. The missing ranks exited first where
    the transport's word after it says their link closed (``Connection closed by peer``); else they are
    elsewhere and never issued it, a deadlock."""
    rm = ev.kinds(EventKind.RANK_MISSING).filter(pl.col("where") == "c10d monitored barrier").join(
        first.select("file", "line"), on=["file", "line"])  # (Horovod's `2!:` stalled rank is its own crash)
    if not rm.height:
        return None
    gone = rm["rank"].drop_nulls().unique().sort().to_list()
    what = f"{rm['op'][0] or 'a collective'} ({msg(rm)}; {msg(first, 0, 120)})"
    after = ev.store.events.filter((pl.col("file") == rm["file"][0]) & (pl.col("line") > rm["line"][0])
                                   & pl.col("message").fill_null("").str.contains(PEER_CLOSED)).sort("line")
    if after.height:
        return Verdict(Kind.CRASHED_RANK, f"{who(gone)} never reached {what}: its connection closed "
                       f"({msg(after, 0, 120)}), so it exited or was killed first: its own log or exit code says "
                       "why; the reporting rank's error is the consequence", gone, lines(rm, 2) + lines(after, 1))
    return Verdict(Kind.DEADLOCK, f"{who(gone)} never reached {what}: it is elsewhere, not in the collective "
                   "the reporter waited in (a branch on the rank, a loop of another length, a rank busy or stuck): "
                   "a stack dump of it (py-spy dump --pid) says where", gone, lines(rm, 3) + lines(first, 1))


def _signalled(ev: Evidence, said: str) -> str:
    """A process's end by a signal (an exit code below zero: multiprocessing's ``-11`` of a SIGSEGV, a
    launcher's ``died with <Signals.SIGSEGV: 11>``), said after the failure it ended: the error an exception
    line says is often the harness's or launcher's word on that end (PyTorch's test harness asserts
    ``Expected zero exit code but got -11``), the signal is what the process met. (Not SIGTERM or SIGINT:
    what a launcher sends the other workers once one failed; nor SIGABRT, c10d's own abort after an error
    the failure's line already says.)"""
    ends = (ev.exits.filter((pl.col("exit_code").fill_null(0) < 0) & ~pl.col("exit_code").is_in([-15, -2, -6]))
            if "exit_code" in ev.exits.columns else None)
    if ends is None or not ends.height or re.search(rf"(?<![\d-]){ends['exit_code'][0]}\b", said):
        return ""  # (none, or the failure's words already say the code)
    return f"; {msg(ends, 0, 160)}"


def exited_without_cause(ev: Evidence) -> Verdict | None:
    """torchrun's root-cause rank failed with a real error code and nothing else explains it."""
    ex = ev.exits.filter(~pl.col("exit_code").is_in(list(KILL_CODES)))
    if not ex.height or ev.timeouts.height or ex["rank"].drop_nulls().n_unique() > 1:
        return None  # several ranks failing alike says nothing of which failed first
    r = [ev.root_cause_rank] if ev.root_cause_rank is not None else rank_of(ex.head(1), ev)
    code = ex.filter(pl.col("rank").is_in(r))["exit_code"] if r else ex["exit_code"]
    code = code[0] if code.len() else ex["exit_code"][0]
    local = ex["message"].str.extract(r"local_rank: (\d+)", 1).drop_nulls()
    name = who(r) if r else (f"local rank {local[0]}" if local.len() else "a rank")
    why = ("was killed with SIGKILL: the kernel's OOM killer does this when host memory runs out (dmesg on "
           "that node says so)" if code in SIGKILL_CODES else
           f"exited first with code {code} (torchrun's first observed failure) and its output shows no "
           "error: its stderr holds why")
    return Verdict(Kind.CRASHED_RANK, f"{name} {why}", r, lines(ex, 4))


def failed_without_cause(ev: Evidence) -> Verdict | None:
    """A failure sign (a non-zero exit, a kill, a stall, a cancel) and no cause in the evidence."""
    signs = ev.failure_signs
    if not signs:
        return None
    shown = lines(ev.exits, 3) + lines(ev.stalls, 2) + lines(ev.cancelled, 1)
    # the first line of a sign, quoted with its rank: the situation, even where no cause is shown
    first = next((df for df in (ev.stalls, ev.exits, ev.cancelled, ev.timeouts, ev.transport)
                  if df.height and "message" in df.columns), None)
    said = ""
    if first is not None:
        r = first["rank"].drop_nulls()
        said = f"; {'rank ' + str(r[0]) + ': ' if r.len() else ''}{msg(first, 0, 160)}"
    elif ev.pending.height:  # a communicator's Init START without its COMPLETE, and nothing else
        p = ev.pending.row(0, named=True)
        said = (f"; {'rank ' + str(p['rank']) + ': ' if p['rank'] is not None else ''}"
                f"communicator {p['comm']} "
                f"of nranks {p['nranks']}: Init START without Init COMPLETE"
                + (" (a communicator of one rank: a world or group of its own; if the job has more ranks, "
                   "this process did not join them)" if p["nranks"] == 1 else ""))
    return Verdict(Kind.UNDECIDED, "the job did not end cleanly (" + "; ".join(signs) + f"){said}; the "
                   f"evidence shows no cause: {COLLECT}", rank_of(ev.exits, ev), shown)
