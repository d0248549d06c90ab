"""Start-up that began and never completed, in the runtimes' own words (issue 31, "Say what the evidence
shows"): INIT_STALL where a line or a stack says a rank waited in start-up and the wait did not end.

- ``unique_id_unanswered``: ProcessGroupNCCL's exchange of the ncclUniqueId failed on a rank. Rank 0 (of
  the group, or of a point-to-point pair) puts the id in the c10d store under the communicator's key and
  every other rank's ``store->get`` waits for it (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp,
  ``ProcessGroupNCCL::broadcastUniqueNCCLID``, at pytorch/pytorch 0007e752: ``[R] is setting up NCCL
  communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key 'K', but
  store->get('K') got error: E``, spelt ``retreiving`` before torch 2.1, and ``Unknown exception while
  [R] is setting up ...`` for a non-standard exception). The message, or the C++ frames of the error it
  raised (``c10d::TCPStore::get`` / ``doWait`` called from ``broadcastUniqueNCCLID``), decide it: the
  communicator was never created, so nothing after it ran.
- ``start_up_overdue``: a runtime's own word that its start-up has waited past its limit or lacks
  members (``parsers/torch_log``'s ``stall`` events of the start-up families: JAX's TPU backend init
  after 60 s, torchft's lighthouse short of its quorum), where the run shows no step, collective or
  progress after it.

- ``master_never_resolved``: a worker's init container waited for the master's host name (Kubeflow's
  ``init-pytorch`` loop, ``MASTER_WAIT``), where the run shows no step, collective or progress after it.

- ``start_up_said``: a runtime's own start-up line that shows time passed or that it gave up
  (``start_up_messages``, ``DECISIVE``: NCCL's connect retried or given up, a foreign peer
  on its listening socket; Ray's GCS client giving up on the head; HCCL's socket no peer connected to; c10d's
  store client timing out), where the run shows no step, collective, completed NCCL init or progress, and
  NCCL did not say the connect failed (its failure, read by the NCCL rules, is the transport's: dev-116).

- ``start_up_said_to_wait``: a start-up announcement (``start_up_messages.BEGINS``: DeepSpeed's ``Initializing
  TorchBackend``, Paddle's ``init nccl context``; a rank's word that it joins, ``rank_joined``: Lightning's
  ``Initializing distributed: GLOBAL_RANK``) is the last step the log shows, and a line says the run waits
  (the user's or the program's words, salient's ``Telling.WAIT``: ``gets stuck at the following for around
  30mins``), with nothing after it that shows start-up returned and no failure with a cause; a traceback
  whose error the excerpt cut may follow (what the wait ended in).

- ``start_up_ends_the_log``: every line from a start-up's first announcement to the end of the log is an
  announcement of that start-up (a runtime's own word that it begins a wait, ``Means.WAITING``: Paddle's
  ``init nccl context``, SGLang's ``Init torch distributed begin.``, WeNet's ``training on multiple gpus``; a
  rank's word that it joins the process group, fairseq's ``distributed init (rank N)``) or the runtime's
  version line, and the log ends there: every process seen entered start-up and none printed the line it
  prints once start-up returns (fairseq's ``initialized host H as rank N``, SGLang's ``Init torch distributed
  ends.``, NCCL's ``Init COMPLETE``, a step). On dev the same announcements followed by anything else (an
  end line, NCCL's set-up lines, a model's messages) are labelled undecided, and stay so.

- ``joined_unreturned.world_joined_unreturned`` (s32): every rank of the world said it joined (Lightning's
  ``MEMBER: N/N``), rank 0 among them, and the log ends at the last join: rank 0 never said init returned.

``start_up_unfinished`` walks them in that order; ``rules.RULES`` holds it once, after the rendezvous'
own failures and before ``init_stall`` (a rank's own word of where start-up stopped is the cause the
generic init and timeout rules would otherwise report as an unexplained timeout).
"""

from __future__ import annotations

import re

import polars as pl

from tracekit import exit_barrier, joined_unreturned, rules_set_up, start_up_messages as sm, start_up_returned
from tracekit.evidence import Evidence, clip, lines
from tracekit.outcome import EventKind, Kind, Verdict
from tracekit.parsers.pyspy import RAISED
from tracekit.parsers.salient import Telling
from tracekit.rules_salient import quote
from tracekit.rules_stall import joined_then_nothing
from tracekit.sources import collect
from tracekit.wording import who

#: ProcessGroupNCCL::broadcastUniqueNCCLID's error (both spellings of `retrieving`): the waiting rank (its
#: `[R]` head may have been read as a launcher's prefix: the event's rank), the store key, what the get said
UNIQUE_ID = (r"(?:\[(?P<rank>\d+)\] )?is setting up NCCL communicator and retr(?:ie|ei)ving ncclUniqueId"
             r" from \[(?P<root>\d+)\] via c10d key-value store by key '(?P<key>[^']*)'"
             r"(?:, but store->get\('[^']*'\) got error: ?(?P<error>.*))?")
#: the same failure seen only in the C++ frames of the error it raised: the store's get (or its wait) called
#: from broadcastUniqueNCCLID (frames innermost first, joined by ` <- `)
UNIQUE_ID_FRAMES = (r"c10d::\w*Store::(?:get|doGet|doWait|wait)\b.*<- c10d::ProcessGroupNCCL::"
                    r"broadcastUniqueNCCLID\b")

#: the start-up families of ``parsers/torch_log`` (a ``stall`` event's ``where``) and what each means
START_UP_WAITS = {
    "jax backend init": "JAX's TPU backend initialization had not returned after its timer ran out; it waits "
                        "for every host of the TPU slice to start the program (a host that did not start it, "
                        "or cannot reach the others)",
    "torchft quorum": "torchft's lighthouse never had the replica groups its quorum needs (fewer asked than "
                      "min_replicas): the others were not started or cannot reach the lighthouse",
}
#: Kubeflow's PyTorchJob worker, whose init container waits for the master's host name before the worker
#: starts (kubeflow/training-operator pkg/controller.v1/pytorch/initcontainer.go:47, at 1417bbc3: `- name:
#: init-pytorch ... command: ['sh', '-c', 'until nslookup {{.MasterAddr}}; do echo waiting for master; sleep
#: 2; done;']`): its loop's own line, or kubelet's word that the container keeps failing (`Back-off
#: restarting failed container init-pytorch in pod ...`). Read from any event that holds the line (salient's
#: telling lines hold both): a parser's ``stall`` of them would make the file's cut traceback a rank's crash
#: (evidence.raised_cut counts a stall as trouble), where torchrun's agent raised after the wait.
MASTER_WAIT = r"^\s*waiting for master\s*$|Back-off restarting failed container init-pytorch\b"


def start_up_unfinished(ev: Evidence) -> Verdict | None:
    """The first of this family's rules that fires."""
    for rule in (unique_id_unanswered, start_up_overdue, master_never_resolved, start_up_said,
                 start_up_said_to_wait, start_up_ends_the_log, joined_unreturned.world_joined_unreturned,
                 rules_set_up.set_up_step_unreturned):
        v = rule(ev)
        if v is not None:
            return v
    return None


def unique_id_unanswered(ev: Evidence) -> Verdict | None:
    """INIT_STALL where a rank's fetch of rank 0's ncclUniqueId from the c10d store failed: the waiting
    rank, the key, what the store said (a timeout: rank 0 never put the id there in time)."""
    said = ev.store.events.filter(pl.col("message").fill_null("").str.contains(UNIQUE_ID))
    said = said.sort("file", "line")
    frames = ev.kinds(EventKind.STACK).filter(pl.col("frames").fill_null("").str.contains(UNIQUE_ID_FRAMES))
    if not said.height and not frames.height:
        return None
    if said.height:
        g = said.select(pl.col("message").str.extract_groups(UNIQUE_ID)).row(0)[0]
        ranks = sorted({int(g["rank"])} if g["rank"] else set(said["rank"].drop_nulls().to_list()))
        error = clip(g["error"], 120).rstrip(". ") if g["error"] else ""
        what = (f"{who(ranks) if ranks else 'a rank'} waited for the ncclUniqueId that rank {g['root']} puts "
                f"in the c10d store under key '{g['key']}'"
                + (f", and the store's get failed: {error}" if error else " and never got it"))
        proof = lines(said.unique(["file", "line"], maintain_order=True), 3)
    else:
        ranks = frames["rank"].drop_nulls().unique().sort().to_list()
        named = who(ranks) if ranks else "a rank"
        what = (f"{named} raised while its store get waited for the ncclUniqueId that rank 0 puts in the "
                f"c10d store (C++ frames: c10d::TCPStore::get under ProcessGroupNCCL::broadcastUniqueNCCLID)")
        proof = lines(frames, 2)
    return Verdict(Kind.INIT_STALL, f"the NCCL communicator's set-up never completed: {what}: rank 0 had not "
                   "reached the same communicator's creation (it crashed, is slower, or runs another "
                   "collective first) or the store's host is not reachable; its log says which",
                   ranks, proof)


def start_up_overdue(ev: Evidence) -> Verdict | None:
    """INIT_STALL where a runtime says its start-up waited past its limit or short of members
    (``START_UP_WAITS``), and nothing shows the run got past it (no step, collective or progress)."""
    waits = ev.kinds(EventKind.STALL).filter(pl.col("where").is_in(list(START_UP_WAITS)))
    if not waits.height or ev.steps.height or ev.progressed or ev.finished:
        return None
    if collect(ev.store.collectives.lazy().select(pl.len())).item():
        return None
    w = waits.sort("file", "line")
    row = w.row(0, named=True)
    told = START_UP_WAITS[row["where"]]
    n = w.filter(pl.col("where") == row["where"]).height
    again = f" (said {n} times)" if n > 1 else ""
    quoted = clip(row["message"], 160)
    ranks = w["rank"].drop_nulls().unique().sort().to_list()
    return Verdict(Kind.INIT_STALL, f"start-up never completed: {told}: \"{quoted}\"{again}", ranks,
                   lines(w, 3))


def master_never_resolved(ev: Evidence) -> Verdict | None:
    """INIT_STALL where a worker's init container waited for the master's host name (``MASTER_WAIT``) and
    nothing shows the run got past it (no step, collective or progress)."""
    said = ev.store.events.filter(pl.col("message").fill_null("").str.contains(MASTER_WAIT))
    if not said.height or ev.steps.height or ev.progressed or ev.finished:
        return None
    if collect(ev.store.collectives.lazy().select(pl.len())).item():
        return None
    said = said.unique(["file", "line"], maintain_order=True).sort("file", "line")
    again = f" (said {said.height} times)" if said.height > 1 else ""
    quoted = clip(" ".join(said["message"][0].split()), 160)
    return Verdict(Kind.INIT_STALL, "start-up never completed: the worker's init container (Kubeflow's "
                   "init-pytorch: `until nslookup <master>; do echo waiting for master; sleep 2; done`) "
                   "waited for the master's host name to resolve (DNS), so the worker never started: the "
                   "master pod or its Service did not exist yet, or its name does not resolve from the "
                   f"worker: \"{quoted}\"{again}", said["rank"].drop_nulls().unique().sort().to_list(),
                   lines(said, 3))


#: NCCL's own word that a connect or its init failed (a WARN, the unwind of an error code): the transport's
#: failure, which the NCCL rules read; a retry line alone is a wait
NCCL_FAILED = (EventKind.NCCL_WARN, EventKind.NCCL_UNWIND, EventKind.TRANSPORT_ERROR)


def start_up_said(ev: Evidence) -> Verdict | None:
    """INIT_STALL where a runtime's start-up line (``start_up_messages.MESSAGES``) shows its wait for a
    peer or a coordinator went on past a retry or a limit, or ended in a give-up, and the run never got
    past start-up: what was awaited, the address, what the line said, how often."""
    if ev.steps.height or ev.progressed or ev.finished or _past_start_up(ev):
        return None
    decisive = sm.DECIDES
    said = (ev.store.events.filter(pl.col("message").fill_null("").str.contains(decisive))
            .unique(["file", "line"], maintain_order=True).sort("file", "line"))
    # (s31: a connect retried that its file shows start-up got past, start-up under way: start_up_returned)
    said = said.join(start_up_returned.went_past(ev.store.events, said).select("file", "line"), on=["file", "line"],
                     how="anti")
    # (s33: and one its file runs on past with the program's own quiet output: the wait ended, start_up_returned)
    said = said.join(start_up_returned.ran_on(ev.store.events, ev.store.files, said).select("file", "line"),
                     on=["file", "line"], how="anti")
    if not said.height:
        return None
    read = [sm.read(m) for m in said["message"]]
    if any(m.runtime == "NCCL" and m.means is sm.Means.RETRYING for m, _ in read) and ev.kinds(
            *NCCL_FAILED).filter(~pl.col("message").fill_null("").str.contains(decisive)).height:
        return None  # NCCL said the connect failed after its retries: the NCCL rules read its reason
    first, groups = read[0]
    at = next((g.get("address") or (f"{g['host']}:{g['port']}" if g.get("host") else None)
               or (f"node {g['node']}" + (f" port {g['port']}" if g.get("port") else ""))
               for _, g in read if g.get("address") or g.get("host") or g.get("node")), None)
    quoted = _from_words(said["message"][0], first.pattern)
    again = f" (said {said.height} times)" if said.height > 1 else ""
    tries = [int(g["n"]) for _, g in read if g.get("n")]
    secs = next((g["seconds"] for _, g in read if g.get("seconds")), None)
    waited = ("" if first.means is not sm.Means.RETRYING
              else f"; retry {max(tries)} of {groups['of']}, each after a longer sleep" if tries
              else "; NCCL (2.10 and later) prints this line once per 1000 refused attempts, each after a "
                   "sleep: time passed with the peer not listening" if first.runtime == "NCCL"
              else f"; it retries every {secs} s until every peer accepts" if secs else "")
    limit = f" (its limit: {secs} s)" if secs and first.means is sm.Means.TIMED_OUT else ""
    # (s30: the error the line ends in, where the quote cut it: TCPStore's retry line ends in the socket's words)
    err = " ".join((groups.get("error") or "").split())
    again += f" (its error: \"{clip(err, 160)}\")" if err and err[-30:] not in quoted else ""
    # (the other entries said with it, `check_time_out_for('tasks to start')` under horovodrun's give-up, and the
    # error the runtime printed right under its line: the host's own stderr, `ssh: connect to host H port 22:
    # Connection refused`)
    also = [f"{m.name.replace('_', ' ')}: \"{_from_words(t, m.pattern, 100)}\""
            for (m, _), t in zip(read, said["message"]) if m.name != first.name]
    also = list(dict.fromkeys(also))[:2]
    then = _said_under(ev, said)
    ranks = said["rank"].drop_nulls().unique().sort().to_list()
    named = f"{who(ranks)}'s " if ranks else ""
    return Verdict(Kind.INIT_STALL, f"start-up never completed: {named}{first.runtime} {first.means.value} "
                   f"{first.awaited}{f' at {at}' if at else ''}{limit}: \"{quoted}\"{again}{waited}"
                   + (f"; with it: {'; '.join(also)}" if also else "")
                   + (f"; the error under it: \"{clip(' '.join(then['message'][0].split()), 160)}\""
                      if then.height else "")
                   + "; no step, collective or completed communicator follows: the peer or coordinator was not up, "
                   "not reachable at that address (a wrong address or interface, a firewall, a port in use), "
                   "or not started: check that every host of the list runs the job, that the address and port "
                   "are reachable from each node (nc -zv HOST PORT), and the interface the runtime binds",
                   ranks, lines(said, 4) + lines(then, 1))


#: how many lines under a runtime's give-up its error may come (horovodrun prints the host's stderr next)
UNDER = 3


def _said_under(ev: Evidence, said: pl.DataFrame) -> pl.DataFrame:
    """The first error line (a transport error, an exception, a crash, a telling error) within ``UNDER`` lines
    under one of ``said``'s lines in its file, that is no start-up entry itself."""
    errs = ev.kinds(EventKind.TRANSPORT_ERROR, EventKind.EXCEPTION, EventKind.CRASH, EventKind.C10D_ERROR)
    told = ev.kinds(EventKind.TELLING_LINE).filter(pl.col("where") != Telling.WAIT)
    errs = pl.concat([errs.select("file", "line", "rank", "message"), told.select("file", "line", "rank", "message")])
    near = errs.join(said.select("file", pl.col("line").alias("_s")), on="file").filter(
        (pl.col("line") > pl.col("_s")) & (pl.col("line") <= pl.col("_s") + UNDER)
        & ~pl.col("message").fill_null("").str.contains(sm.ANY))
    return near.unique(["file", "line"], maintain_order=True).sort("file", "line").drop("_s").head(1)


def start_up_said_to_wait(ev: Evidence) -> Verdict | None:
    """INIT_STALL where a start-up announcement is the last step seen and a line says the run waits there:
    the last start-up step, the words of the wait, what came after (a cut traceback), what to collect."""
    if (ev.progressed or ev.finished or not rules_set_up.unfinished(ev)
            or ev.cuda.height or ev.transport.height or ev.nccl_errors.height):
        return None
    said = ev.store.events.filter(pl.col("message").fill_null("").str.contains(sm.BEGINS)
                                  & (pl.col("kind") == EventKind.SERVER_UP))
    began = pl.concat([said.select("file", "line", "rank", "message"),
                       ev.kinds(JOINS).select("file", "line", "rank", "message")]).sort("file", "line")
    waits = ev.kinds(EventKind.TELLING_LINE).filter(pl.col("where") == Telling.WAIT).sort("file", "line")
    # (or a user's Ctrl-C in it: Python's KeyboardInterrupt traceback, parsers/pyspy's `(interrupted)`, after
    # the last announcement in its file: the wait was long enough for a person to give up on it)
    stopped = (ev.kinds(EventKind.STACK).filter(pl.col("thread").fill_null("").str.contains(r"\(interrupted\)"))
               .sort("file", "line"))
    if began.height:
        stopped = stopped.join(began.group_by("file").agg(pl.col("line").max().alias("_b")), on="file").filter(
            pl.col("line") > pl.col("_b")).drop("_b")
    if not began.height or not (waits.height or stopped.height):
        return None
    # (after the announcement, only a traceback whose error line the excerpt cut: no error that says a cause)
    last = began.row(-1, named=True)
    after = ev.store.events.filter((pl.col("file") == last["file"]) & (pl.col("line") > last["line"])
                                   & ~pl.col("kind").is_in([EventKind.TELLING_LINE, EventKind.STACK,
                                                            EventKind.VERSION, EventKind.SETTING]))
    if after.height:
        return None
    raised = ev.kinds(EventKind.STACK).filter(pl.col("thread") == RAISED)
    ranks = sorted(set(began["rank"].drop_nulls().to_list()))
    read = sm.read(last["message"])
    what = (f"{read[0].runtime}'s start-up {read[0].means.value} {read[0].awaited}" if read else
            "the rank said it was joining the process group (init_process_group returns only once every rank "
            "of the world has joined)")
    sign = (f"{quote(waits.row(0, named=True))} says the run waits there" if waits.height else
            f"a user interrupted it there (KeyboardInterrupt, its traceback in "
            f"{clip(stopped['where'][0] or 'the main thread', 120)})")
    then = (f"; then a traceback raised in {raised['where'][0]} (its error line is not in the excerpt: what "
            "the wait ended in, most often the store's or the rendezvous' timeout)" if raised.height else "")
    return Verdict(Kind.INIT_STALL, f"start-up never completed: {who(ranks) + ': ' if ranks else ''}{what}: "
                   f"\"{clip(' '.join(last['message'].split()), 160)}\" is the last start-up step the log "
                   f"shows, and {sign}; nothing after it shows start-up returned "
                   f"(no step, collective, completed NCCL init or end){then}: a rank of the world that never "
                   "joined (not started, a node launched with another world size, slot count, MASTER_ADDR or "
                   "MASTER_PORT) or a store its peers cannot reach; collect every node's log of the same "
                   "minutes, a stack dump of the waiting process (py-spy dump) and NCCL_DEBUG=INFO",
                   ranks, lines(began.tail(2), 2) + lines(waits, 1) + lines(stopped, 1) + lines(raised, 1))


def _past_start_up(ev: Evidence) -> bool:
    """Whether the run got past start-up: a collective, an NCCL communicator whose init completed, or torchelastic's
    exit barrier (its workers ran and ended)."""
    if collect(ev.store.collectives.lazy().select(pl.len())).item() or exit_barrier.seen(ev):
        return True
    return ev.store.comms.filter(pl.col("state") == "init_complete").height > 0


def _from_words(message: str, pattern: str, n: int = 200) -> str:
    """The line to quote: from a little before the runtime's words (a long logger or launcher prefix first
    must not push them out of the quote)."""
    text = " ".join(message.split())
    hit = re.search(pattern, text)
    start = hit.start() if hit and hit.start() > 60 else 0
    return clip(("... " if start else "") + text[start:], n)


#: fairseq's word that a rank joins its process group (fairseq/distributed/utils.py:286 at 3d262bb2,
#: ``logger.info("distributed init (rank {}): {}")`` right before ``dist.init_process_group``; its end, :298,
#: ``initialized host {} as rank {}``), read by parsers/torch_log as a ``rank_joined`` event
JOINS = EventKind.RANK_JOINED


def start_up_ends_the_log(ev: Evidence) -> Verdict | None:
    """INIT_STALL where, in every file, the lines from the first start-up announcement to the file's last line
    are all announcements of that start-up or version lines, and nothing else is said after them: no
    collective, communicator, step, end, error or stall; every rank seen announced it."""
    if (ev.steps.height or ev.progressed or ev.finished or ev.failure_signs or ev.clean_end
            or ev.stalls.height or ev.store.comms.height or _past_start_up(ev)):
        return None
    joined = ev.kinds(JOINS)
    if joined.height:  # (ranks of a known world that never joined and left no record: that rule names them)
        named = joined_then_nothing(ev)
        if named is not None and named.kind is Kind.INIT_STALL:
            return named
    said = ev.store.events.filter(pl.col("message").fill_null("").str.contains(sm.BEGINS)
                                  & (pl.col("kind") == EventKind.SERVER_UP))
    began = pl.concat([said.select("file", "line", "rank", "message"),
                       joined.select("file", "line", "rank", "message")]).sort("file", "line")
    files = ev.store.files.filter(pl.col("lines") > pl.col("blank"))
    if not began.height or not files.height:
        return None
    chatter = ev.kinds(EventKind.VERSION).select("file", "line")
    for f in files.iter_rows(named=True):
        mine = began.filter(pl.col("file") == f["file"])
        if not mine.height or f["last_line"] is None or _read_after(ev, f["file"], f["last_line"]):
            return None  # (a file with no announcement, or lines after its last one that the store skips)
        allowed = (set(mine["line"].to_list())
                   | set(chatter.filter(pl.col("file") == f["file"])["line"].to_list()))
        if any(n not in allowed for n in range(mine["line"].min(), f["last_line"] + 1)):
            return None
    ranks = sorted(set(began["rank"].drop_nulls().to_list()))
    if set(ev.store.ranks["rank"].drop_nulls().to_list()) - set(ranks):
        return None  # (a rank seen that never announced it: its lines are of another shape)
    first = began.row(0, named=True)
    read = sm.read(first["message"])
    what = (f"{read[0].runtime}'s start-up {read[0].means.value} {read[0].awaited}" if read else
            "the ranks said they were joining the process group (init_process_group, which returns only once "
            "every rank of the world has joined)")
    named = f"{who(ranks)}: " if ranks else ""
    quoted = clip(" ".join(first["message"].split()), 160)
    return Verdict(Kind.INIT_STALL, f"start-up never completed: {named}{what}: \"{quoted}\""
                   + (f" (said {began.height} times)" if began.height > 1 else "")
                   + ", and the log ends there: every process seen began start-up and none printed the line "
                   "its runtime prints once start-up returns (fairseq's `initialized host H as rank N`, "
                   "SGLang's `Init torch distributed ends.`, NCCL's Init COMPLETE) or anything after it: a "
                   "rank of the world that never joined (not started, another MASTER_ADDR/PORT or world "
                   "size), or a store or network its peers cannot reach; a stack dump of every rank (py-spy "
                   "dump) and NCCL_DEBUG=INFO say where each waits", ranks, lines(began, 4))


#: (s34) how many lines may follow a file's last line with words (``ingest._last_said``) for the log still to end
#: there: a paste's closing code fence and a blank line; more such lines are NCCL's own (which ``_last_said`` leaves
#: out: torch-010's four NCCL INFO lines after `distributed init (rank 2)`, set-up that went on)
TRAILING = 2


def _read_after(ev: Evidence, file: str, last_line: int) -> bool:
    """Whether ``file`` goes on after ``last_line``, its last line with words: more than ``TRAILING`` lines, or one a
    parser made a record of (an event, a communicator, a transport's link, a collective). A paste's closing code fence
    after the announcement is none (dv6-015: "Command Line Args: ..." then "```")."""
    n = ev.store.files.filter(pl.col("file") == file)["lines"].max()
    if n <= last_line:
        return False
    if n - last_line > TRAILING:
        return True
    tables = (ev.store.events, ev.store.comms, ev.store.links,
              collect(ev.store.collectives.lazy().select("file", "line")))
    return any(t.filter((pl.col("file") == file) & (pl.col("line") > last_line)).height for t in tables)
