"""A rank that failed in communicator set-up left a set-up that never completed: INIT_STALL, with the failure.

LABELS.md's init-stall is "a communicator init / rendezvous / bootstrap started and never completed"; issue
31 counts "an init failure called a crash" among the wrong kinds. So where the rule that decides says
CRASHED_RANK and the job never got past set-up (no communicator completed init, no collective and no step
is recorded, nothing ended cleanly), and the failure is set-up's own (NCCL's init started and never
completed, or the failure names a set-up call or check, ``SET_UP``), the verdict is INIT_STALL and says the
failure as the crash rule said it. A program that never began set-up (``Default process group has not been
initialized``: it never called init_process_group) stays a crash, and so does a fault of the rank's device or
memory that came during set-up (``DEVICE_FAULT``: an out-of-memory or a CUDA error is the rank's own).
"""

from __future__ import annotations

import re

import polars as pl

from tracekit import align, start_up_messages as sm
from tracekit.evidence import Evidence
from tracekit.outcome import Kind, Verdict

#: set-up calls and checks whose failure leaves set-up unfinished: (pattern, where the runtime prints it); the
#: Python frames of set-up are start_up_messages.FRAMES' (``frame_of``: init_process_group, DDP's construction,
#: Megatron's and DeepSpeed's initialisers; not vLLM's init_device, which makes no process group itself)
SET_UP = (
    (r"ncclCommInit\w*|ncclCommSplit|ncclGetUniqueId", "NCCL's init API (src/init.cc), named by its callers"),
    (r"Duplicate GPU detected", "NCCL src/init.cc: two ranks of one communicator on one device, checked in init"),
    (r"\binit\.cc:\d+|\bbootstrap\.cc:\d+|graph/\w+\.cc:\d+|transport/\w+\.cc:\d+",
     "NCCL's set-up sources in a WARN or an unwind line (init, bootstrap, topology, transport set-up)"),
    (r"HcclCommInit\w*|Failed to initiali[sz]e the HCCP", "Ascend HCCL's communicator init"),
)
SET_UP_ANY = "|".join(f"(?:{p})" for p, _ in SET_UP)
# (not MPI_Init's failure: the process never started its program, rules_crash_words' "could not start")
#: the program never began set-up: its failure is its own, not set-up's
NEVER_BEGAN = r"(?i)process group (?:has not been|is not) initiali[sz]ed"
#: a fault of the rank's device or memory, whatever phase it came in: the rank's own crash (a CUDA error or an
#: out-of-memory inside ncclCommInitRank is the GPU's, not set-up's; dev labels read it so, 5 of 6)
DEVICE_FAULT = r"(?i)out of memory|\bOOM\b|CUDA error|[Cc]uda failure|unhandled cuda error|cudaError\w*|CUDA call"


def unfinished(ev: Evidence) -> bool:
    """Nothing shows the job past set-up: no communicator completed init, no collective, no step, no end."""
    s = ev.store
    if s.comms.filter(pl.col("state") == "init_complete").height or ev.steps.height or ev.clean_end:
        return False
    # (the collectives may be a scan of a store left on disk: counted, not read)
    return not align.collect(s.collectives.lazy().select(pl.len())).item()


def failed_in_set_up(ev: Evidence, v: Verdict) -> Verdict | None:
    """``v``, a CRASHED_RANK, as INIT_STALL where the failure is set-up's and the job never got past it."""
    if v.kind is not Kind.CRASHED_RANK or not unfinished(ev):
        return None
    # (the failure the verdict names: the crash lines it cites, never an earlier traceback it does not)
    cited = pl.DataFrame([(str(e.file), e.line) for e in v.evidence if e.file is not None and e.line is not None],
                         schema={"file": pl.Utf8, "line": pl.Int64}, orient="row")
    wheres = ev.crashes.join(cited, on=["file", "line"], how="semi")["where"].drop_nulls().to_list()
    said = " ".join([v.summary, *(str(e) for e in v.evidence), *wheres])
    if re.search(NEVER_BEGAN, said) or re.search(DEVICE_FAULT, said) or ev.cuda.height:
        return None
    started = ev.store.comms.filter(pl.col("state") == "init_start").height > 0
    named = re.search(SET_UP_ANY, said)
    frame = next((f for w in wheres if (f := sm.frame_of(w))), None)
    if not (started or named or frame):
        return None
    why = ("NCCL's init started and no communicator completed it" if started
           else f"the failure is in set-up: {named.group(0) if named else frame.means}")
    return Verdict(Kind.INIT_STALL, f"communicator set-up never completed ({why}): {v.summary}",
                   list(v.ranks), list(v.evidence), v.findings, notes=list(v.notes))
