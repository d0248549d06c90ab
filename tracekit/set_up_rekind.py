"""The re-kind of a verdict whose failure came in set-up (issue 31: "an init failure called a crash" is a wrong
kind), applied by ``verdict.decide`` after the rules; split from ``rules_set_up`` (s27), which keeps the set-up
steps (``SET_UP``), the phase (``unfinished``) and the exclusions (``NEVER_BEGAN``, ``DEVICE_FAULT``, and s29's
``MISPLACED``: two ranks on one device is the launch's placement, the program's crash).

(s29) Never INIT_STALL where the excerpt does not show set-up waiting or failing: a device fault or a peer's going
away said anywhere in the crash's files keeps the crash; a program's own error outside any set-up frame keeps it
too, even where an NCCL init is logged unfinished; ``SET_UP_WORDS`` needs a process group's or a communicator's
creation, not the words alone. And where the excerpt does show it: a start-up wait its file said before the crash
(a placement group's, a coordinator's), and a cut traceback's raising function, are set-up's.

- ``failed_in_set_up``: a rank that failed in communicator set-up left a set-up that never completed: read
  from the crash's own lines, the failure lines just before it in its file, and, where the crash is a runtime's
  word that a process failed (``runtime_failures``), the exception of the traceback under it. (s33b) An NCCL
  init logged begun is set-up's failure only where it began before the crash in the crash's file and the crash
  says an init's failure (``_init_failed``): the program's own error after NCCL's init lines stays its crash.
- ``undecided_in_set_up``: an UNDECIDED of a timeout, a failure sign or no rule at all (``RE_KINDED``) whose
  failure line names set-up (a set-up call, a set-up frame of its traceback, or its words: a master, a store, a
  coordinator it could not reach, ``SET_UP_WORDS``) where the job never got past set-up: the same re-kind
  (the UNDECIDED rules stay their owners').
"""

from __future__ import annotations

import re

import polars as pl

from tracekit import runtime_failures, start_up_frames as sf, start_up_returned
from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.parsers import salient
from tracekit.parsers.pyspy import RAISED
from tracekit.parsers.salient import Telling
from tracekit.rules_nccl_codes import SET_UP as NCCL_SET_UP
from tracekit.rules_salient import ranks_named
from tracekit.rules_set_up import (DEVICE_FAULT, HARDWARE_FAULT, MISPLACED, NEVER_BEGAN, PROCESS_FAULT, SET_UP,
                                   step_named, unfinished)
from tracekit.undecided import UNEXPLAINED
from tracekit.wording import who


#: a kill from outside the job (a scheduler's or an agent's SIGTERM, a SIGKILL): its own cause
KILLED = r"(?i)\bSIG(?:TERM|KILL)\b|\bdeath signal\b|killed from outside"
#: the exception types of a program's own error (a bad argument, a missing key or attribute, a failed assert, an
#: import): raised inside a set-up frame they are still the program's, never set-up's waiting on its peers
PROGRAM_ERROR = (r"(?:^|[\s:.])(?:ValueError|TypeError|KeyError|AttributeError|AssertionError|NameError|IndexError"
                 r"|NotImplementedError|ImportError|ModuleNotFoundError|FileNotFoundError|SyntaxError"
                 r"|ZeroDivisionError|UnboundLocalError|RecursionError|PermissionError"
                 # (s32: a decoder's or a parser's error, raised by the program's reading of its own config or
                 # data: `binascii.Error: Incorrect padding` under DeepSpeedConfig's base64 decode, dv48-005, in
                 # Megatron's _initialize_distributed; a module's own `x.Error`, never a network's)
                 r"|JSONDecodeError|Unicode(?:De|En)?codeError|UnpicklingError|(?<![\w.])(?!(?:nccl|hccl|rccl|gloo|mpi|ucx|grpc|socket|ssl)\.)[a-z_]\w*\.Error)\b")
#: how many lines after a runtime's word that a process failed its traceback's exception may come
FOLLOWS = 60
#: how many lines before a crash its file's failure lines are read with it (``failed_in_set_up``)
BEFORE = 10


def failed_in_set_up(ev: Evidence, v: Verdict) -> Verdict | None:
    """``v``, a CRASHED_RANK, as INIT_STALL where the failure is set-up's and the job never got past it."""
    if v.kind is not Kind.CRASHED_RANK or not unfinished(ev):
        return None
    # (the failure the verdict names: the crash lines it cites, never an earlier traceback it does not)
    cited = pl.DataFrame([(str(e.file), e.line) for e in v.evidence if e.file is not None and e.line is not None],
                         schema={"file": pl.Utf8, "line": pl.Int64}, orient="row")
    crashes = ev.crashes.join(cited, on=["file", "line"], how="semi")
    wheres = crashes["where"].drop_nulls().to_list()
    # (a crash read from its words cites no decoded crash: the tracebacks of its file say where it raised)
    wheres += (ev.kinds(EventKind.STACK).filter(pl.col("file").is_in(cited["file"].implode()))
               ["where"].drop_nulls().to_list())
    # (what the failure says: never the name of the file it is in, `...-rdzv-closed.txt`, `...-oom.log`)
    summary = v.summary
    for name in {str(e.file).rsplit("/", 1)[-1] for e in v.evidence if e.file}:
        summary = summary.replace(name, "")
    # (and the failure lines just before it in its file: HCCL's or MPI's own error above the exception it
    # raised)
    # (not for a kill from outside: the signal is its cause, whatever another process's paste above it said)
    own = " ".join([v.summary, *(e.text for e in v.evidence)])
    before = (_failed_lines(ev).join(cited.rename({"line": "_c"}), on="file").filter(
        (pl.col("line") < pl.col("_c")) & (pl.col("line") >= pl.col("_c") - BEFORE))
        if not re.search(KILLED, own) else _failed_lines(ev).clear())
    # (and where the crash is a runtime's word that a process failed, `EngineCore failed to start.`, the
    # exception of the traceback that follows it: its cause, runtime_failures' "its traceback follows the line")
    told = pl.DataFrame([(str(e.file), e.line) for e in v.evidence if e.file is not None and e.line is not None
                         and runtime_failures.failure_of(e.text or "")],
                        schema={"file": pl.Utf8, "line": pl.Int64}, orient="row")
    after = ev.kinds(EventKind.EXCEPTION).join(told.rename({"line": "_c"}), on="file").filter(
        (pl.col("line") > pl.col("_c")) & (pl.col("line") <= pl.col("_c") + FOLLOWS))
    after = after.sort("file", "line").head(1)
    wheres += after["where"].drop_nulls().to_list()
    said = " ".join([summary, *(e.text for e in v.evidence), *wheres, *before["message"].fill_null(""),
                     *after["message"].fill_null("")])
    # (the crash lines whole: the evidence clips them, `... got error: Failed to recv, got 0 bytes. Connection ...`,
    # `... Check failed: ... (Unknown: Could not start gRPC ...`)
    own_lines = " ".join(crashes["message"].fill_null(""))
    whole = " ".join([said, own_lines])
    # (s29: and every failure line of the crash's files, where its own lines say no more than `RuntimeError:`:
    # Paddle's `Error Message Summary` block under it, `Out of memory error on GPU 3` (dv37-019), is its cause;
    # a peer's going away, the coordination service's `heartbeat timeout ... crashed unexpectedly` beside gRPC's
    # words, is the crash's cause, not set-up's)
    files = cited["file"].implode()
    whole += " " + " ".join(_failed_lines(ev).filter(pl.col("file").is_in(files))["message"].fill_null(""))
    # (s29: and a start-up wait its file said before the crash, a placement group's, a coordinator's: the process
    # was stopped while start-up waited, dv36-009's CancelledError under vLLM's placement-group waits)
    waited = ev.kinds(EventKind.TELLING_LINE).filter(
        pl.col("file").is_in(files) & pl.col("message").fill_null("").str.contains(
            f"{salient.UNPLACED}|{salient.COORDINATOR_WAIT}"))
    said += " " + " ".join(waited["message"].fill_null("").to_list())
    # (s30: a segfault after a set-up failure its file said just before it is that failure's consequence: gloo's
    # `connectFullMesh failed` then `Segmentation fault (core dumped)` as the process unwinds)
    first_failed = _fault_after_set_up(before, f"{own_lines} {own}")
    fault = HARDWARE_FAULT if first_failed else DEVICE_FAULT
    if (re.search(NEVER_BEGAN, whole) or re.search(fault, whole) or re.search(MISPLACED, whole)
            or ev.cuda.height
            or re.search(salient.either(salient.NO_START, salient.IMPORT_FAILED), whole)):
        return None
    started = _init_failed(ev, cited, whole)
    words = None if re.search(PEER_GONE, whole) else re.search(SET_UP_WORDS, said)
    named = (step_named(said) or step_named(own_lines)
             or (GLOO_CONNECT_MEANS if re.search(GLOO_CONNECT, whole) and not re.search(PEER_GONE, whole) else "")
             or (f"its words: \"{clip(words[0], 80)}\"" if words else "")
             or (GRPC_UNREACHED_MEANS if re.search(GRPC_UNREACHED, whole) and not re.search(PEER_GONE, whole)
                 else ""))
    frame = next((f for w in wheres if (f := sf.frame_of(w))), None)
    # (a set-up frame alone, with no set-up word: the exception's type says whose failure it is; the program's
    # own error raised there, a bad argument or a missing key, is the program's crash, not set-up's)
    if frame is not None and not (started or named) and re.search(PROGRAM_ERROR, f"{own_lines} {summary}"):
        frame = None
    # (s29: and an init begun is no set-up failure's proof where the failure is the program's own error, raised
    # outside any set-up frame and naming no set-up step: a data loader's KeyError while NCCL's init is logged
    # unfinished is the program's crash, the init's state its consequence)
    if started and not (named or frame) and re.search(PROGRAM_ERROR, f"{own_lines} {summary}"):
        started = False
    if not (started or named or frame):
        return None
    why = ("NCCL's init started and no communicator completed it" if started
           else f"the failure is in set-up: {named or frame.means}")
    cause = f"; the traceback under it ends in \"{clip(after['message'][0], 200)}\"" if after.height else ""
    cause += (f"; before it, set-up failed: \"{clip(' '.join(first_failed.split()), 200)}\" (the process's fault came "
              "as it unwound from that failure, its consequence)" if first_failed else "")
    # (s30: and the set-up failure's own line where the crash the verdict quotes is only its echo: vLLM's `Engine
    # core initialization failed. See root cause above.` over the traceback's `DistNetworkError: ... EADDRINUSE`)
    if not first_failed and not after.height:
        shown = " ".join([v.summary, cause])
        echo = next((t for t in _set_up_lines(ev, files) if clip(" ".join(t.split()), 60)[:-3] not in shown), "")
        cause += f"; set-up's own failure line: \"{clip(' '.join(echo.split()), 200)}\"" if echo else ""
    return Verdict(Kind.INIT_STALL, f"communicator set-up never completed ({why}): {v.summary}{cause}",
                   list(v.ranks), list(v.evidence) + lines(after, 1), v.findings, notes=list(v.notes))


#: the words of a failure an NCCL init gives (a communicator's error, a timeout, a socket's or a connect's
#: failure): where NCCL's init is logged begun, only these say the crash is the init's (``_init_failed``)
INIT_FAILURE = (r"(?i)\bNCCL error\b|\bnccl\w*Error\b|\bunhandled system error\b"
                r"|\binternal error\b|\btimed? ?out\b|\btimeout\b|\bsocket\b|\bconnect\w*|\bbootstrap\b")
#: a failure's words that two ranks disagree or the program's tensors do not fit (a mismatch, the program's own
#: error): never an init's, whatever NCCL logged before it
DISAGREE = (r"(?i)mismatch|do(?:es)? not match|doesn't match|size of tensor|shape \[|inconsistent"
            r"|different (?:number|size|shape)s?")


def _init_failed(ev: Evidence, cited: pl.DataFrame, whole: str) -> bool:
    """(s33b) NCCL's init logged begun before the crash in the crash's own file, never completed, and the crash's
    words an init's failure (``INIT_FAILURE``; or an NCCL WARN or unwind line in that file), no disagreement
    (``DISAGREE``): the crash is the init's. An init begun is no proof alone: an excerpt cut among NCCL's init
    lines, and a program's own error raised after them, are no start-up stall (blind: an undecided, a mismatch
    and a crash read INIT_STALL by it)."""
    begun = ev.store.comms.filter(pl.col("state") == "init_start").select("file", pl.col("line").alias("_i"))
    before = cited.join(begun, on="file").filter(pl.col("_i") < pl.col("line"))
    if not before.height or re.search(DISAGREE, whole):
        return False
    warned = ev.kinds(EventKind.NCCL_WARN, EventKind.NCCL_UNWIND).filter(
        pl.col("file").is_in(before["file"].implode())).height
    return bool(warned or re.search(INIT_FAILURE, whole))


def _fault_after_set_up(before: pl.DataFrame, own: str) -> str:
    """Where the crash is a process's fault (``PROCESS_FAULT``: a segfault, a bus error) and a failure line just
    before it in its file (``before``) names set-up (a set-up call, ``SET_UP``, or its words, ``SET_UP_WORDS``,
    not a peer's going away): that line, the failure the process faulted after as it unwound; else nothing."""
    if not before.height or not re.search(PROCESS_FAULT, own):
        return ""
    named = [t for t in before["message"].fill_null("").to_list()
             if (step_named(t) or re.search(SET_UP_WORDS, t)) and not re.search(PEER_GONE, t)]
    return named[0] if named else ""


def _set_up_lines(ev: Evidence, files: pl.Expr) -> list[str]:
    """The failure lines of ``files`` (``_failed_lines``) that name set-up (a set-up call, ``SET_UP``, or its words,
    ``SET_UP_WORDS``), no peer's going away, in file order."""
    texts = _failed_lines(ev).filter(pl.col("file").is_in(files))["message"].fill_null("").to_list()
    return [t for t in texts if (step_named(t) or re.search(SET_UP_WORDS, t) or re.search(GLOO_CONNECT, t))
            and not re.search(PEER_GONE, t)]


#: gRPC's channel to a peer or a coordinator that never connected (grpc/grpc's client channel: `failed to connect
#: to all addresses`), raised by TensorFlow as UnavailableError and by JAX's client as XlaRuntimeError: set-up's
#: only in a crash of a job that never got past set-up (``failed_in_set_up``) and with no word that the peer went
#: away (``PEER_GONE``: a TPU worker's missed health checks, dv31-015, fail in the same words mid-run); no
#: UNDECIDED is re-kinded by it alone
GRPC_UNREACHED = r"(?i)\bfailed to connect to all addresses\b"
GRPC_UNREACHED_MEANS = ("failed to connect to all addresses (gRPC's connect to the cluster's coordinator or its "
                        "other workers: TensorFlow's or JAX's start-up)")
#: (s33b) gloo's TCP pair that could not connect to a peer's advertised address (facebookincubator/gloo
#: gloo/transport/tcp/pair.cc `Connect timeout`, `connect ...: Connection refused`, `No route to host`, thrown as
#: gloo::IoException; escaped from a C++ thread it is `terminate called ...` then `Aborted`): a pair connects in
#: its context's connectFullMesh, at the process group's creation: set-up's only in a crash of a job that never got
#: past set-up (``failed_in_set_up``), never where the peer went away (``PEER_GONE``); dev's gloo connect failures
#: at start, dev-038, dev-039, are labelled init-stall (transport-error accepted)
GLOO_CONNECT = (r"(?i)gloo/transport/\w+/(?:pair|device|socket)\.(?:cc|h):\d+\]\s+(?:Connect timeout"
                r"|connect\b.{0,80}(?:Connection refused|No route to host|Network is unreachable|timed out))")
GLOO_CONNECT_MEANS = ("gloo's connect to a peer's address timed out or was refused (gloo/transport/tcp/pair.cc: "
                      "its process group's full-mesh connect at creation; each rank connects to the address every "
                      "other rank advertised through the store: check GLOO_SOCKET_IFNAME and that the nodes reach "
                      "each other's ports)")
#: the UNDECIDED rules whose verdict a set-up failure re-kinds (``undecided_in_set_up``): a timeout, a failure
#: sign or an error line no rule explains, where the job never got past set-up
#: (not nccl_error_unexplained's: an NCCL code at ncclCommInitRank can be the ranks disagreeing, llm-042's
#: label undecided only; nccl_code_in_set_up reads the codes that do decide)
RE_KINDED = ("nothing", "timed_out", "failed_without_cause")
#: an error line's own words that it is set-up's, where it names no set-up call (``SET_UP``): the job's
#: start-up service or peer (a master, a coordinator, a store, a rendezvous, ps-lite's scheduler, Ray's GCS)
#: or a backend's initialisation, and a word that it failed (never a download's connect: huggingface.co, wandb
#: and pip are no peer of the job)
SET_UP_WORDS = (r"(?i:\b(?:master(?:_?addr|_?port)?|rendezvous|rdzv"
                r"|(?:kv|key-value|tcp|c10d) ?store|gcs|head node|init_method|dist_url|bootstrap"
                # (s29: a process group's or a communicator's creation, never the words alone: `process group`
                # and `NCCL communicator` are in the watchdog's and the abort's lines of a job that ran)
                r"|process group (?:init\w*|creation|set-?up)"
                r"|(?:nccl|hccl|gloo|mpi|pmix?|horovod|xla|oneccl|ccl) ?(?:init\w*|comm\w*? ?init\w*"
                r"|communicator (?:init\w*|creation|set-?up)|context|world))\b"
                r".{0,120}\b(?:fail\w*|error|refused|timed? ?out|unreachable|unable|cannot|could not"
                r"|no route)\b"
                r"|\b(?:fail\w*|error|unable|cannot|could not) (?:to )?(?:connect|initiali[sz]e|init|join"
                r"|reach|register)\w* (?:to |with )?(?:the )?(?:master|coordinat\w*|rendezvous|store|scheduler"
                r"|gcs|head|peers?|process group|distributed|communicator|nccl|hccl|gloo|mpi|horovod"
                r"|backend)\b"
                # (s30: c10d's own word that a store socket's send or recv ran past its timeout, torch/csrc/distributed/
                # c10d/Utils.hpp recvBytes/sendBytes `C10_THROW_ERROR(DistNetworkError, "Socket Timeout")` on EAGAIN:
                # the TCPStore client's wait, raised bare as `RuntimeError: Socket Timeout` before torch 2.1; on dev
                # all 7 excerpts of it are init stalls, dv10-026, dv12-022, dv15-001, dv21-008, dv32-010, dv5-026,
                # dv6-039; a set-up frame of its traceback, where shown, names the step)
                r"|\bSocket Timeout\b)")
#: a failure line's words that the peer it waited for is gone (c10d's `Connection was likely closed. Did the
#: remote server shutdown or crash?`, the coordination service's `heartbeat timeout ... crashed unexpectedly`):
#: the peer's crash, whatever step it came in (dv18-006, dv20-029: labelled crashed-rank), so no set-up words
PEER_GONE = (r"(?i)remote server shutdown or crash|connection (?:was likely )?closed|closed by (?:remote )?peer"
             r"|reset by peer|crashed unexpectedly|heartbeat|missed \d+ health checks?")
#: any set-up call or check (``SET_UP``), one pattern for polars
SET_UP_CALLS = "|".join(f"(?:{p})" for p, _ in SET_UP)
#: the lines that say something failed and that no rule explained (``undecided.UNEXPLAINED``), and the
#: telling lines no parser decodes read as such; not a wait's words: XLA's `Waiting to connect to client mesh
#: master` is printed at start-up and at every later xm.rendezvous alike (dv6-005 an init stall, dv6-006 a
#: save's wait)
TOLD_FAILED = [str(t) for t in (Telling.CRASH, Telling.TRANSPORT, Telling.ERROR)]


def _failed_lines(ev: Evidence) -> pl.DataFrame:
    """The lines that say something failed and that no rule explained: undecoded errors (c10d's, an exception,
    a crash line, an NCCL WARN), a timeout, a traceback whose error line is cut, a telling line read as a crash,
    a transport failure or an error; in file order."""
    cols = ["file", "line", "rank", "host", "message", "where"]
    raised = ev.kinds(EventKind.STACK).filter(pl.col("thread") == RAISED)
    told = ev.kinds(EventKind.TELLING_LINE).filter(pl.col("where").is_in(TOLD_FAILED))
    parts = [ev.kinds(*UNEXPLAINED), ev.timeouts, raised, told]
    parts = [df.select(cols) for df in parts if df.height]
    if not parts:
        return pl.DataFrame(schema={"file": pl.Utf8, "line": pl.Int64, "rank": pl.Int64, "host": pl.Utf8,
                                    "message": pl.Utf8, "where": pl.Utf8})
    out = pl.concat(parts, how="diagonal_relaxed").unique(["file", "line"], maintain_order=True)
    return out.sort("file", "line")


#: a communicator's error in the program's words (pynccl's and torch's `NCCL error: unhandled system error`,
#: NCCL's result names): read as set-up's only beside a line naming the communicator's set-up (``NCCL_SET_UP``)
COMM_ERROR = (r"(?i)\bNCCL error\b|\bnccl(?:Internal|System|Remote|InvalidUsage|InvalidArgument)Error\b"
              r"|\bunhandled system error\b|\binternal error - please report this issue to the NCCL\b")

RETRYING = r"(?i)\bretrying\b|\bwill retry\b|\bretry(?:ing)? in \d"  #: c10d's `..., retrying in 5 s`: it may succeed


def undecided_in_set_up(ev: Evidence, v: Verdict, rule: str) -> Verdict | None:
    """``v``, an UNDECIDED of a rule in ``RE_KINDED``, as INIT_STALL where a line that says something failed
    names set-up (a set-up call or check, ``SET_UP``, or its own words, ``SET_UP_WORDS``; or a set-up frame of
    its file's traceback) and nothing shows the job past set-up (``unfinished``; no watchdog's collective
    timed out): the failure that ended start-up, its step, its rank. Device faults, a program that never began
    set-up and one that could not start stay as they were (``failed_in_set_up``'s exclusions)."""
    if (v.kind is not Kind.UNDECIDED or rule not in RE_KINDED or not unfinished(ev) or ev.moving
            or ev.progressed or ev.cuda.height):
        return None
    if ev.timeouts.filter(pl.col("kind") == EventKind.WATCHDOG_TIMEOUT).height:
        return None  # a collective timed out: the watchdog's rules say it (a first collective is no set-up's)
    failed = _failed_lines(ev)
    # (s31: not a line that its file shows start-up returned after: start-up under way, start_up_returned)
    failed = failed.join(start_up_returned.went_past(ev.store.events, failed, any_wait=True).select("file", "line"),
                         on=["file", "line"], how="anti")
    text = pl.concat_str(pl.col("where").fill_null(""), pl.lit(" "), pl.col("message").fill_null(""))
    said = " ".join(failed.select(text.alias("t"))["t"].to_list())
    if (not failed.height or re.search(NEVER_BEGAN, said) or re.search(DEVICE_FAULT, said)
            or re.search(MISPLACED, said)
            or re.search(salient.either(salient.NO_START, salient.IMPORT_FAILED), said)):
        return None
    # (the first line that names set-up; else the first, where its file's traceback is in a set-up frame)
    hit = failed.filter((text.str.contains(SET_UP_CALLS)
                         | ((text.str.contains(SET_UP_WORDS) | text.str.contains(GLOO_CONNECT))
                            & ~text.str.contains(PEER_GONE)))
                        & ~text.str.contains(RETRYING))
    wheres = (ev.kinds(EventKind.STACK).filter(pl.col("file").is_in(failed["file"].implode()))
              .select(pl.coalesce("frames", "where").fill_null("").str.split(" <- ")).explode("frames")
              ["frames"].to_list())
    # (s29: and the function a failure line says it raised in, where its traceback's head was cut, so no stack
    # was read: `_env_rendezvous_handler` over `RuntimeError: Socket Timeout`; a telling line's `where` is its
    # class, no function)
    wheres += failed.filter(pl.col("where").is_not_null() & ~pl.col("where").is_in([str(t) for t in Telling]))[
        "where"].to_list()
    frame = next((f for w in wheres if w and (f := sf.frame_of(w))), None)
    # (or a communicator's error, NCCL's code in the program's words, where a failure line of its file names the
    # process's communicator set-up: vLLM's `Error executing method 'init_device'` over a traceback the excerpt
    # cut, `RuntimeError: NCCL error: unhandled system error`)
    in_init = failed.filter(text.str.contains(NCCL_SET_UP))
    comm = failed.filter(text.str.contains(COMM_ERROR) & pl.col("file").is_in(in_init["file"].implode()))
    if not hit.height and frame is None and not comm.height:
        return None
    shown = hit if hit.height else comm if comm.height else failed
    row = shown.row(0, named=True)
    line = " ".join((row["message"] or "").split())
    step = (step_named(f"{row['where'] or ''} {line}") or (frame.means if frame else "")
            or (GLOO_CONNECT_MEANS if re.search(GLOO_CONNECT, line) else "")
            or (f"the process's communicator set-up: \"{clip(' '.join(in_init['message'][0].split()), 100)}\""
                if comm.height else ""))
    # (the rank the line's prefix gives, else the rank its words name: `rank 3 failed to connect to master`)
    ranks = sorted(set(shown["rank"].drop_nulls().to_list())) or ranks_named(shown.head(1))
    hosts = sorted(set(shown["host"].drop_nulls().to_list()))
    on = (who(ranks) if ranks else "a process") + (f" (host {clip(', '.join(hosts[:3]), 60)})" if hosts else "")
    return Verdict(Kind.INIT_STALL, f"start-up never completed on {on}: "
                   f"\"{clip(line, 200)}\"" + (f" (in set-up: {step})" if step else " (its words name set-up)")
                   + "; no communicator completed init and no collective, step or clean end is logged, so the "
                   + ("job stopped in its communicator's init: NCCL's own WARN names the step that failed (its "
                      "connect to the peers, its shared memory, the network plugin, the topology): rerun with "
                      "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET on every rank"
                      if shown is comm else
                      "job stopped in its start-up: the peer, store or coordinator the line names was not up, not "
                      "reachable or gave up first (its own log says why); NCCL_DEBUG=INFO and the launcher's lines "
                      "on every node name the rank that never joined"),
                   ranks, lines(shown, 3) + list(v.evidence)[:3], v.findings, notes=list(v.notes))
