"""The facts in view: what the failure lines of an excerpt say, each once, for every verdict's summary
(issue 31: a summary names the fact that decides it: the failing rank, the error, the op and SeqNum of a
time-out, the transport, the signal).

``in_view`` reads the evidence's failure frames (time-outs, ranks a runtime reports missing, CUDA errors,
crashes, NCCL's error codes, transport errors, signals, exit codes, telling lines no parser decodes) and
says the first of each that the summary does not hold yet, in the order of causation. It says them as
the log does where a reader greps for them (c10d's ``SeqNum=17``) and spends its length on the error's own
words: the wrappers around them (C++'s ``what():``, c10d's watchdog preamble) and the folders of a source
path are dropped before the line is clipped. ``situation`` re-exports it; ``verdict.decide`` calls it.
"""

from __future__ import annotations

import re
import signal

import polars as pl

from tracekit.evidence import KILL_CODES, Evidence, clip
from tracekit.meanings import says
from tracekit.outcome import EventKind
from tracekit.parsers.torch_patterns import CUT_TRACEBACK
from tracekit.wording import who


def signal_of(code: int | None) -> str | None:
    """The signal an exit code says: -9 (Python's and torchrun's) and 137 (a shell's 128 + 9) are SIGKILL."""
    n = -code if code is not None and code < 0 else code - 128 if code is not None and 128 < code < 160 else None
    try:
        return signal.Signals(n).name if n else None
    except ValueError:
        return None


def ended_by(code: int) -> str:
    """How an exit code reads: ``killed by signal 9 (SIGKILL)``, ``stopped from outside (exit 143: SIGTERM)``."""
    name = signal_of(code)
    return (f"killed by signal {-code}" + (f" ({name})" if name else "") if code < 0 else
            f"stopped from outside (exit {code}" + (f": {name})" if name else ")") if code in KILL_CODES else
            f"exited with code {code}" + (f" ({name})" if name else ""))


#: the words that make a failure line's fact its own: an exception's or an error code's name, a signal,
#: an address, a transport or device, a code or a count of two digits or more
FACT_WORDS = (r"\b[A-Za-z_.]*(?:Error|Exception|Failure|Interrupt)\b|\bSIG[A-Z]{2,6}\b|\bnccl[A-Z]\w+"
              r"|\b\d{1,3}(?:\.\d{1,3}){3}\b|\bNET/\w+|\bibv_\w+|\bmlx\d_\d+\b|out of memory|(?<![\d.:-])\d{2,}(?![\d.:-])")
#: what heads a line before its words: a launcher's rank label, NCCL's `host:pid:tid [dev]`, a timestamp,
#: glog's `E1130 10:19:55.123 4242 file.cc:12]`, c10d's `[E ProcessGroupNCCL.cpp:737]`
HEAD = (r"^(?:\[(?:[Rr]ank\s*)?\d+\]:?\s*|\[?\d{4}-\d\d-\d\d[ T][\d:.,]+\]?\s*|[IWEF]\d{4} [\d:.]+\s+\d+ \S+\]\s*"
        r"|\[[IWEF] \S+\]\s*|\S+:\d+:\d+ \[\d+\]\s*(?:\S+\.cc:\d+\s*)?(?:NCCL (?:WARN|INFO)\s*)?)+")
#: what wraps an error's own words and eats the clip's length: C++'s `terminate called after throwing an
#: instance of 'c10::DistBackendError'` and `what():`, c10d's `[PG 0 (default_pg) Rank 3] Process group
#: watchdog thread terminated with exception:` (its `[PG 0 Rank 3]` stays: the rank, where none was parsed)
WRAPPER = (r"terminate called after throwing an instance of '[^']*'\s*|\bwhat\(\):\s*"
           r"|(?:Process group|NCCL) watchdog thread terminated with exception:\s*")
#: a source path's folders (``../torch/csrc/distributed/c10d/NCCLUtils.hpp`` -> ``NCCLUtils.hpp``): three or
#: more, so that NCCL's ``NET/Socket`` and ``/dev/shm/nccl-*`` stay whole
FOLDERS = r"(?:(?<=[\s(\"'])|^)(?:\.{0,2}/)?(?:[\w.~+-]+/){3,}(?=[\w.+-]+)"
#: how long a failure line's words may run in the summary
CLIP = 150


def _core(message: str) -> str:
    """A failure line's own words: its head, wrappers (where words remain past them) and a path's folders
    dropped."""
    text = re.sub(HEAD, "", (message or "").strip()).strip()
    text = re.sub(WRAPPER, "", text).strip() or text
    return re.sub(FOLDERS, "", text)


def _said(text: str, said: str) -> bool:
    """Whether the summary already holds the line's fact: every fact word of it, or its first words."""
    low = said.lower()
    keys = {k.lower() for k in re.findall(FACT_WORDS, text)}
    if keys:
        return all(k in low for k in keys)
    return text[:40].lower() in low


def seq_said(seq: int) -> str:
    """A collective's sequence number as c10d logs it (``SeqNum=17``): the form a reader greps for."""
    return f"SeqNum={seq}"


def _timeout_facts(ev: Evidence) -> list[tuple[int, str, str]]:
    """Each timed-out collective once: its op, SeqNum, process group, who waited and how long; and the key
    pattern of a summary that says it (c10d's ``SeqNum=N``; the op's name by a time-out where the line gives no
    SeqNum, torch before 1.10: ``WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000)``)."""
    out = []
    t = ev.timeouts.filter(pl.col("seq").is_not_null() | pl.col("op").is_not_null())
    for (op, seq, pg), g in t.sort("file", "line").group_by("op", "seq", "pg", maintain_order=True):
        ranks = g["rank"].drop_nulls().unique().to_list()
        ms = g["timeout_ms"].drop_nulls()
        text = ((op or "a collective").upper() + (f" {seq_said(seq)}" if seq is not None else "")
                + (f" of process group {pg}" if pg else "") + " timed out" + (f" on {who(ranks)}" if ranks else "")
                + (f" after {ms.max() / 1000:g} s" if ms.len() else ""))
        said = (re.escape(seq_said(seq)) if seq is not None
                else rf"\b{re.escape(op)}\b.*\btim|\btim.*\b{re.escape(op)}\b")
        out.append((g["line"][0], text, said))
    return out


#: an exception line that says its type and nothing else (Python's ``RuntimeError: `` whose message starts on
#: the next line, Paddle's ``ResourceExhaustedError: `` above its ``Out of memory error on GPU 3``)
EMPTY_ERROR = r"^\s*(?:\[[^\]]*\]:?\s*)?[\w.]*(?:Error|Exception|Failure)\s*:?\s*$"
#: how far below such a line its words may stand (a C++ traceback and a summary's banner between)
WORDS_WITHIN = 30


def words_below(ev: Evidence, row: dict) -> str:
    """Where a failure line is an exception's type with no words (``EMPTY_ERROR``), the first line with words
    below it in its file, within ``WORDS_WITHIN`` lines, past further empty ones: what the error says (the
    exception's message, printed on the lines after its type); empty where the line has words of its own."""
    if not re.match(EMPTY_ERROR, row.get("message") or ""):
        return ""
    below = ev.store.events.filter(
        (pl.col("file") == row["file"]) & (pl.col("line") > row["line"])
        & (pl.col("line") <= row["line"] + WORDS_WITHIN) & pl.col("message").str.contains(r"\w{3,}")
        & ~pl.col("message").str.contains(EMPTY_ERROR)).sort("line")
    return clip(_core(below["message"][0]), CLIP) if below.height else ""


def _first(df: pl.DataFrame) -> dict:
    """The first row of a failure frame (the cause), past a traceback whose exception the excerpt cuts
    where a later row says an error of its own."""
    df = df.sort("file", "line")
    own = df.filter(pl.col("message").fill_null("") != CUT_TRACEBACK) if "message" in df.columns else df
    return (own if own.height else df).row(0, named=True)


def in_view(ev: Evidence, said: str, n: int = 3) -> str:
    """The failure lines' facts a reader must see that ``said`` (the verdict's summary so far) does not
    hold: the first of each kind of failure (a timed-out collective with its op, SeqNum and group; ranks a
    runtime reports never joined one; a CUDA error; an exception with its type and message; NCCL's error
    code; a transport's error with its device or address; a signal; an exit code with its signal; an error
    line no parser decodes), each once, in the order of causation, ``n`` at most. Empty where the summary
    says them all."""
    from tracekit.parsers.salient import Telling  # (the salient parser reads the evidence's words)

    told = ev.kinds(EventKind.TELLING_LINE).filter(
        pl.col("where").is_in([Telling.CRASH, Telling.TRANSPORT, Telling.ERROR]))
    # (not a stop request, SIGTERM or SIGINT: what a launcher sends the other workers once one failed, a
    # consequence the rules that read it say where it is the fact, rules_exit.killed_from_outside)
    signals = ev.kinds(EventKind.SIGNAL).filter(~says("stop_signal").fill_null(False))
    ends = ev.exits.filter(~pl.col("exit_code").is_in(list(KILL_CODES)))
    absent = ev.kinds(EventKind.RANK_MISSING)  # (a runtime's word that named ranks never joined a collective)
    out: list[str] = []
    # (the first timed-out collective first; the others only where no other failure's fact needs the room:
    # a rank's crash, signal or exit says more than a second group's time-out)
    timeouts = [t[1] for t in _timeout_facts(ev) if not re.search(t[2], said, re.I)]
    out += timeouts[:1]
    from tracekit.ignored_exceptions import ignored  # (an exception Python says it ignored is no failure)

    crashes = ev.crashes.join(ignored(ev, ev.crashes), on=["file", "line"], how="anti")
    for df in (absent, ev.cuda, crashes, ev.nccl_errors, ev.transport, signals, ends, told):
        if not df.height:
            continue
        r = _first(df)
        if df is ends:
            text = ended_by(r["exit_code"])
            done = any(w in said for w in (f"code {r['exit_code']}", f"exit {r['exit_code']}")
                       + ((f"signal {-r['exit_code']}",) if (r["exit_code"] or 0) < 0 else ()))
        else:
            text = clip(_core(r["message"]), CLIP)
            below = words_below(ev, r) if "file" in r else ""
            text = f"{text} {below}" if below else text
            done = _said(text, said)
        if not text or done:
            continue
        text = (f"{who([r['rank']])} {text}" if df is ends else f"{who([r['rank']])}: {text}"
                ) if r["rank"] is not None else text if df is not ends else f"a process {text}"
        if text not in out and len(out) < n:
            out.append(text)
            said += " " + text
    out += [t for t in timeouts[1:] if t not in out][:max(n - len(out), 0)]
    return "; ".join(out)
