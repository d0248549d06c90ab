"""Each verdict rule on the smallest store that shows its evidence, and the order between them."""

import pytest

from tests.conftest import SAMPLES
from tests.factory import fr_store, make_store, one
from tracekit import rules
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.store import scan
from tracekit.verdict import Kind, decide


def ev(**tables) -> Evidence:
    return Evidence.gather(make_store(**tables))


def event(kind, message="", rank=None, line=1, file="rank.log", **kw) -> dict:
    return dict(kind=kind, message=message, rank=rank, line=line, file=file, **kw)


def world(n, file="rank{}.log") -> list[dict]:
    return [dict(file=file.format(r), rank=r, world_size=n) for r in range(n)]


def clean(n) -> list[dict]:
    return [event("train_end", "{'train_runtime': 1.0}", r, 9, f"rank{r}.log") for r in range(n)]


# --- one test per rule ---------------------------------------------------------------------------

def test_mismatch_aligned():
    v = rules.mismatch_aligned(Evidence.gather(fr_store({0: [one("0", 1, sizes="8")], 1: [one("0", 1, sizes="9")]})))
    assert v.kind == Kind.MISMATCH and v.ranks == [1] and "seq 1" in v.summary


def test_mismatch_reported_names_the_collective():
    v = rules.mismatch_reported(ev(events=[event("collective_mismatch", "Detected mismatch between collectives on ranks",
                                                 1, seq=7, op="allreduce")]))
    assert v.kind == Kind.MISMATCH and v.ranks == [1] and "allreduce seq 7" in v.summary


def test_mismatch_from_watchdog_lines_of_one_seqnum():
    wd = [event("watchdog_timeout", "Watchdog caught collective operation timeout", r, r, f"r{r}", seq=13807,
                op="allreduce", numel=10942336 if r == 7 else 11274112) for r in (1, 5, 6, 7)]
    v = rules.mismatch_from_watchdog(ev(events=wd))
    assert v.kind == Kind.MISMATCH and v.ranks == [7] and "rank 7 ran ALLREDUCE of 10942336" in v.summary
    same = [dict(w, numel=8) for w in wd]
    assert rules.mismatch_from_watchdog(ev(events=same)) is None


def test_mismatch_from_watchdog_of_a_flat_allgather_of_two_sizes():
    """ms-swift#3154: both ranks time out in _ALLGATHER_BASE SeqNum 3497, NumelIn 1572864 and 512:
    all_gather_into_tensor takes one size on every rank. An all_gather into a list may be uneven."""
    wd = [event("watchdog_timeout", "Watchdog caught collective operation timeout", r, r, f"r{r}", seq=3497,
                op="_ALLGATHER_BASE", numel=n) for r, n in ((0, 1572864), (1, 512))]
    v = rules.mismatch_from_watchdog(ev(events=wd))
    assert v.kind == Kind.MISMATCH and "SeqNum=3497" in v.summary and "of 512 element(s)" in v.summary
    listed = [dict(w, op="ALLGATHER") for w in wd]
    assert rules.mismatch_from_watchdog(ev(events=listed)) is None


def test_cuda_failure_is_a_crash_of_its_own_not_transport():
    e = ev(events=[event("crash", "RuntimeError: CUDA error: an illegal memory access was encountered", 2),
                   event("nccl_warn", "NET/Socket : peer closed connection", 0, 5)])
    v = rules.cuda_failure(e)
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [2] and "CUDA error" in v.summary
    assert rules.first(e)[0] == "cuda_failure"


def test_nccl_failure_explained_by_its_warn():
    e = ev(events=[event("crash", "what():  NCCL error: unhandled system error", 1, 9),
                   event("nccl_warn", "Bootstrap : no socket interface found", 1, 3)])
    v = rules.nccl_failure(e)
    assert v.kind == Kind.TRANSPORT_ERROR and "no socket interface found" in v.summary


def test_crashed_rank_first_failure_not_a_consequence():
    e = ev(events=[event("exception", "RuntimeError: [Rank 0] Watchdog caught collective operation timeout", 0, 2),
                   event("exception", "ValueError: bad batch", 3, 5)])
    v = rules.crashed_rank(e)
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [3] and "bad batch" in v.summary


def test_the_watchdogs_abort_is_a_consequence_not_the_crash():
    e = ev(events=[event("crash", "terminate called after throwing an instance of 'c10::DistBackendError'", None, 3),
                   event("watchdog_timeout", "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, ...)", 0, 1,
                         seq=5, op="allreduce", timeout_ms=600000)])
    assert rules.crashed_rank(e) is None
    name, v = rules.first(e)
    assert name == "timed_out" and v.kind == Kind.UNDECIDED and "ALLREDUCE SeqNum=5" in v.summary


def test_crash_without_a_rank_takes_the_root_cause_blocks_rank():
    e = ev(events=[event("crash", "Segmentation fault (core dumped)", None, 2, "launcher.log"),
                   event("rank_exit", "rank 5 (local_rank 1) on n1 exited with code -11", 5, 10, "launcher.log", exit_code=-11)])
    assert rules.crashed_rank(e).ranks == [5]


def test_init_stall_names_ranks_that_never_started():
    start = dict(file="a", line=1, host="h", pid=1, comm="0x1", rank=0, nranks=2, state="init_start")
    ranks = [dict(file="a", host="h", pid=1, rank=0), dict(file="b", host="h", pid=2, rank=1)]
    # an Init START with nothing after it may be where a pasted excerpt ends: not a stall by itself
    assert rules.init_stall(ev(comms=[start], ranks=ranks)) is None
    stalled = [event("run_note", "stall: no log in out grew for 300s", None, 5, "launcher.log")]
    v = rules.init_stall(ev(comms=[start], ranks=ranks, events=stalled))
    assert v.kind == Kind.INIT_STALL and v.ranks == [1] and "rank 1 logged no NCCL init" in v.summary


def test_rendezvous_that_never_completed_is_an_init_stall():
    e = ev(events=[event("exception", "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for "
                                      "clients. 1/2 clients joined.", None, 3)])
    assert rules.first(e)[0] == "rendezvous_failed"


def test_nccl_error_code_needs_ncclss_own_lines_to_name_a_cause():
    code = event("exception", "RuntimeError: NCCL error: unhandled system error, NCCL version 2.18.1", 0, 9)
    assert rules.first(ev(events=[code]))[0] == "nccl_error_unexplained"
    warn = event("nccl_warn", "socketStartConnect: Connect to 10.0.0.2<43211> failed : No route to host", 0, 4)
    name, v = rules.first(ev(events=[code, warn]))
    assert name == "nccl_failure" and v.kind == Kind.TRANSPORT_ERROR and "No route to host" in v.summary


def test_transport_error_but_not_benign_warns():
    e = ev(events=[event("nccl_warn", "NET/OFI Only EFA provider is supported", 0)])
    assert rules.transport_error(e) is None and rules.first(e)[1].kind != Kind.TRANSPORT_ERROR
    assert any("harmless" in n for n in rules.notes(e))
    e = ev(events=[event("transport_error", "NET/IB : Got completion from peer with error 12", 0)])
    assert rules.transport_error(e).kind == Kind.TRANSPORT_ERROR


def test_deadlock_needs_a_record_of_the_rank_behind():
    s = fr_store({0: [one("0", 1), one("0", 2)], 1: [one("0", 1), one("0", 2)], 2: [one("0", 1)]})
    v = rules.deadlock(Evidence.gather(s))
    assert v.kind == Kind.DEADLOCK and v.ranks == [2] and "rank 2 never issued it; ranks 0-1 wait in it" in v.summary
    # the same two dumps without rank 2's: rank 2 left no record, it did not "never issue" anything
    s = fr_store({0: [one("0", 1), one("0", 2)], 1: [one("0", 1), one("0", 2)]}, members=[0, 1, 2])
    e = Evidence.gather(s)
    assert rules.deadlock(e) is None
    v = rules.waiting_on_silent_ranks(e)
    assert v.kind == Kind.UNDECIDED and "rank 2 left no Flight Recorder record" in v.summary
    assert "never issued" not in decide(s).summary


def test_deadlock_reported_by_an_analyzer_is_said_as_its_word():
    e = ev(events=[event("rank_missing", f"rank {r} never joined all_reduce 5", r, 3, pg="0", seq=5, op="all_reduce",
                         where="torchfrtrace") for r in (3, 4)])
    v = rules.deadlock_reported(e)
    assert v.kind == Kind.DEADLOCK and v.ranks == [3, 4]
    assert v.summary == "process group 0: all_reduce seq 5: ranks 3-4 never joined it (reported by torchfrtrace)"


def test_deadlock_from_watchdog_last_enqueued():
    e = ev(events=[event("watchdog_status", "last enqueued work: 9, last completed work: 8", r, 1, f"r{r}",
                         pg="0", last_enqueued=9 if r < 3 else 8, last_completed=8) for r in range(4)])
    v = rules.deadlock_from_watchdog(e)
    assert v.kind == Kind.DEADLOCK and v.ranks == [3] and "rank 3 never issued seq 9" in v.summary


def test_deadlock_from_stacks():
    st = [event("stack", "", r, 1, f"s{r}", thread="MainThread", where=w, frames=w)
          for r, w in ((0, "all_reduce (torch/distributed/distributed_c10d.py:10)"),
                       (1, "all_reduce (torch/distributed/distributed_c10d.py:10)"), (2, "load_batch (train.py:5)"))]
    v = rules.deadlock_from_stacks(ev(events=st))
    assert v.kind == Kind.DEADLOCK and v.ranks == [2] and "load_batch" in v.summary


def test_exited_without_cause_and_kills_are_not_crashes():
    e = ev(events=[event("rank_exit", "rank 1 exited with code 1", 1, 4, exit_code=1)])
    assert rules.exited_without_cause(e).ranks == [1]
    killed = [event("child_failed", "failed (exitcode: 124)", None, 4, exit_code=124)]
    assert rules.exited_without_cause(ev(events=killed)) is None
    v = decide(make_store(events=killed))
    assert v.rule == "failed_without_cause" and v.kind == Kind.UNDECIDED and v.failed


def test_slow_progress_from_frontiers_that_moved():
    rows = [dict(file=f"fr{r}_{d}", rank=r, source="fr", pg="0", seq=s, op="all_reduce", start_ns=(d * 60 + s) * 10**9,
                 bytes=2**20) for r in (0, 1) for d in (0, 1) for s in range(1, 5 + d * 5)]
    v = rules.slow_progress(ev(collectives=rows))
    assert v.kind == Kind.SLOW_PROGRESS and v.ranks == [0, 1] and "slow, not hung" in v.summary


def test_healthy_needs_every_rank_and_a_clean_end():
    assert rules.healthy(ev(events=clean(2), ranks=world(2))).kind == Kind.HEALTHY
    assert rules.healthy(ev(events=clean(1), ranks=world(2)[:1])) is None  # 1 of 2 ranks seen
    assert rules.healthy(ev(ranks=world(2))) is None  # no clean end, no progress


def test_a_clean_end_on_the_ranks_seen_is_healthy_for_what_is_seen():
    """LABELS.md's healthy: a clean end or steady progress on every visible rank and no failure; the
    ranks not seen are said as left no record, and anything looked at or still starting keeps it open."""
    v = rules.clean_but_partial(ev(events=clean(1), ranks=world(2)[:1]))
    assert v.kind == Kind.HEALTHY and "1 of 2 ranks seen: rank 1 left no record" in v.summary
    stack = event("stack", "", 0, 20, "rank0.log", thread="MainThread", where="wait (store.py:1)", frames="wait (store.py:1)")
    assert rules.clean_but_partial(ev(events=clean(1) + [stack], ranks=world(2)[:1])).kind == Kind.UNDECIDED
    pending = [dict(file="rank0.log", line=1, rank=0, comm_id="0xa", state="init_start", nranks=2)]
    v = rules.clean_but_partial(ev(events=clean(1), ranks=world(2)[:1], comms=pending))
    assert v.kind == Kind.UNDECIDED


@pytest.mark.parametrize("sign", [event("rank_exit", "exited with code 1", 0, 5, exit_code=1),
                                  event("watchdog_timeout", "timeout", 0, 5, seq=3, op="allreduce"),
                                  event("run_note", "stall: no log in out grew for 300s", None, 5),
                                  event("job_cancelled", "CANCELLED AT 2024 DUE TO TIME LIMIT", None, 5)])
def test_a_failure_sign_never_reads_healthy(sign):
    v = decide(make_store(events=clean(2) + [sign], ranks=world(2)))
    assert v.kind != Kind.HEALTHY and v.failed


# --- the order --------------------------------------------------------------------------------

def test_order_mismatch_before_crash_before_timeout():
    mism = event("collective_mismatch", "Detected mismatch between collectives", 1, 1, seq=3, op="allreduce")
    crash = event("exception", "ValueError: x", 2, 2)
    timeout = event("watchdog_timeout", "timeout", 0, 3, seq=3, op="allreduce")
    assert rules.first(ev(events=[crash, timeout, mism]))[0] == "mismatch_reported"
    assert rules.first(ev(events=[timeout, crash]))[0] == "crashed_rank"
    assert rules.first(ev(events=[timeout]))[0] == "timed_out"


def test_order_deadlock_before_timeout_and_slow_progress_when_finished():
    s = fr_store({0: [one("0", 1), one("0", 2)], 1: [one("0", 1)]},
                 extra_events=[event("watchdog_timeout", "timeout", 0, 3, seq=2, op="allreduce")])
    assert rules.first(Evidence.gather(s))[0] == "deadlock"


def test_rules_are_listed_once_and_end_with_the_weakest():
    names = [r.__name__ for r in rules.RULES]
    assert len(names) == len(set(names))
    assert names[:2] == ["mismatch_aligned", "mismatch_reported"]
    # (an epoch reported done with its validation decides only where nothing else does: last)
    # (a training bar closed at its total, s32, is read just before a clean end on part of the ranks)
    assert names[-10:] == ["failed_without_cause", "slow_steps", "healthy", "steady_progress", "progress_to_the_end",
                           "progress_on_ranks_seen", "training_bar_closed", "clean_but_partial", "epoch_results",
                           "one_step_seen"]


def test_a_framework_reporting_mismatched_collectives_is_a_mismatch():
    e = ev(events=[event("exception", "FailedPreconditionError: Mismatched ALLREDUCE CPU/GPU device selection: One rank "
                                      "specified device GPU, but another rank specified device CPU.", 2, 7)])
    assert rules.first(e)[0] == "mismatch_reported" and not e.crashes.height


@pytest.mark.parametrize("warn", ["NET/IB : Got async event : client reregistration",
                                  "Could not find a path for pattern 4, falling back to simple order",
                                  "NET/IB : SHARP coll init error: Cannot create SHARP job(-11)"])
def test_known_harmless_warns_are_notes_not_transport_errors(warn):
    e = ev(events=[event("nccl_warn", warn, 0, 3)], ranks=world(1))
    assert rules.transport_error(e) is None and any(n.startswith("harmless") for n in rules.notes(e))


def test_a_peer_closing_its_socket_is_a_consequence():
    e = ev(events=[event("nccl_warn", "socketProgress: Connection closed by remote peer host<51159>", 1, 3),
                   event("nccl_warn", "include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'", 0, 1)])
    assert rules.first(e)[0] == "cuda_failure"
    assert rules.transport_error(ev(events=[event("nccl_warn", "Socket recv failed while polling for opId=0x7f", 1)])) is None


def test_a_connect_that_timed_out_is_the_networks_failure_not_a_consequence():
    e = ev(events=[event("connect_retry", "Call to connect returned Connection timed out, retrying", 1, 2),
                   event("connect_retry", "Call to connect returned Connection timed out, retrying", 1, 3)])
    name, v = rules.first(e)
    assert name == "transport_error" and v.kind == Kind.TRANSPORT_ERROR and "Connection timed out" in v.summary


def test_nothing_says_what_it_saw():
    v = rules.nothing(ev(events=[event("c10d_error", "[E] something odd", 0, 4)]))
    assert v.kind == Kind.UNDECIDED and "1 error line(s) no rule explains" in v.summary and v.evidence


def test_a_slow_run_read_back_from_disk_gets_the_verdict_it_gets_in_memory(tmp_path):
    """samples/zero3_slow_2x2 (FR dumps that moved): the store scanned from disk, its collectives left
    there (store.scan), is slow progress at the rate the store in memory gives (figures.collective_rate)."""
    s = ingest([SAMPLES / "zero3_slow_2x2"])
    s.write(tmp_path / "st")
    mem, disk = decide(s), decide(scan(tmp_path / "st"))
    assert mem.kind == disk.kind == Kind.SLOW_PROGRESS
    assert "collectives/s" in disk.summary and "not hung" in disk.summary and disk.summary == mem.summary
