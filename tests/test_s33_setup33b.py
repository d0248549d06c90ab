"""An NCCL init begun is no start-up stall's proof on its own (session 33b, issue 31: blind, an undecided, a mismatch
and a crash read INIT_STALL by ``set_up_rekind.failed_in_set_up``'s "NCCL's init started and no communicator
completed it").

Covers ``set_up_rekind._init_failed``: NCCL 2.18's `ncclCommInitRank ... - Init START` line (src/init.cc) then the
program's own RuntimeError (torch's device check, `Expected all tensors to be on the same device`), bare and under a
traceback of DDP's constructor, stays the program's crash; the same init begun then a crash in a failed init's words
(a timeout, NCCL's error) still reads as the init's; an init begun AFTER the crash in its file is no cause of it; a
mismatch's words are never an init's. test_s23's NCCL topology failure in init stays INIT_STALL (its step named).
"""

from __future__ import annotations

import polars as pl

from tracekit import set_up_rekind
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

#: NCCL 2.18's init line (src/init.cc: `ncclCommInitRank comm %p rank %d nranks %d cudaDev %d busId %lx commId
#: 0x%llx - Init START`)
INIT = ("node1:10{r}:10{r} [{r}] NCCL INFO ncclCommInitRank comm 0x55{r}0 rank {r} nranks 2 cudaDev {r} busId {r}000 "
        "commId 0x4e2a1b - Init START\n")
#: torch's own device check (aten: `Expected all tensors to be on the same device, but found at least two devices`)
DEVICES = ("[rank{r}]: RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
           "cuda:0 and cpu!\n")
UNDER_DDP = ("[rank{r}]: Traceback (most recent call last):\n"
             "[rank{r}]:   File \"train.py\", line 12, in <module>\n"
             "[rank{r}]:     model = DDP(model)\n")


def _write(tmp_path, body: str):
    for r in (0, 1):
        (tmp_path / f"rank{r}.log").write_text(body.format(r=r))
    return ingest([tmp_path])


def test_a_programs_own_error_after_nccls_init_began_stays_the_programs_crash(tmp_path):
    v = decide(_write(tmp_path, INIT + DEVICES))
    assert v.kind == Kind.CRASHED_RANK and "Expected all tensors to be on the same device" in v.summary
    assert "set-up never completed" not in v.summary


def test_the_same_error_under_ddps_constructor_stays_the_programs_crash(tmp_path):
    v = decide(_write(tmp_path, INIT + UNDER_DDP + DEVICES))
    assert v.kind == Kind.CRASHED_RANK and v.rule != "failed_in_set_up"


def _init_failed(tmp_path, body: str, words: str, line: int) -> bool:
    ev = Evidence.gather(_write(tmp_path, body))
    cited = pl.DataFrame({"file": [str(tmp_path / "rank0.log")], "line": [line]})
    return set_up_rekind._init_failed(ev, cited, words)


def test_an_init_begun_then_a_failed_inits_words_is_the_inits_failure(tmp_path):
    body = INIT + "[rank{r}]: RuntimeError: Socket Timeout\n"
    assert _init_failed(tmp_path, body, "RuntimeError: Socket Timeout", 2)
    assert _init_failed(tmp_path, body, "NCCL error: unhandled system error", 2)
    # (the program's own words, and a mismatch's, are not an init's)
    assert not _init_failed(tmp_path, body, DEVICES.format(r=0), 2)
    assert not _init_failed(tmp_path, body, "RuntimeError: Detected mismatch between collectives on ranks; "
                                            "timed out", 2)


def test_an_init_begun_after_the_crash_in_its_file_is_no_cause_of_it(tmp_path):
    body = "[rank{r}]: RuntimeError: Socket Timeout\n" + INIT
    assert not _init_failed(tmp_path, body, "RuntimeError: Socket Timeout", 1)
