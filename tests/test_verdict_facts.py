"""Issue 31/32: each verdict says the fact that decides it and where every rank is; a consequence
(the watchdog's own abort, a rank behind in a dump of a finished run) is never the cause."""

from tests.factory import fr_entry, fr_store, make_store, one
from tracekit.evidence import Evidence
from tracekit.outcome import Match
from tracekit.verdict import Kind, decide


def event(kind, message="", rank=None, line=1, file="rank.log", **kw) -> dict:
    return dict(kind=kind, message=message, rank=rank, line=line, file=file, **kw)


def timed_entry(rank, seq, start_s, end_s, pg="0"):
    """One completed FR entry with its enqueue and completion times (seconds, the rank's own clock)."""
    return {**fr_entry(rank, pg, seq, t=int(start_s * 1e9)), "end_ns": int(end_s * 1e9)}


def test_watchdog_abort_after_a_timeout_is_not_a_crash():
    # rank 1 never issued seq 2; the watchdog of rank 0 timed out and then aborted its process (SIGABRT)
    s = fr_store({0: [one("0", 1), one("0", 2)], 1: [one("0", 1)]}, extra_events=[
        event("watchdog_timeout", "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE)",
              0, 5, seq=2, op="allreduce", pg="0", timeout_ms=45000),
        event("signal", "traceback : Signal 6 (SIGABRT) received by PID 678", 0, 9, file="launcher.log")])
    v = decide(s)
    assert v.kind == Kind.DEADLOCK and v.ranks == [1]
    assert "rank 0: last all_reduce #2, timed out in ALLREDUCE SeqNum=2 of process group 0 after 45 s" in v.summary


def test_a_sigabrt_of_a_rank_that_never_timed_out_is_still_a_crash():
    s = fr_store({0: [one("0", 1)], 1: [one("0", 1)]}, extra_events=[
        event("watchdog_timeout", "Watchdog caught collective operation timeout", 0, 5, seq=2, op="allreduce"),
        event("signal", "Signal 6 (SIGABRT) received by PID 7", 1, 9, file="launcher.log")])
    assert Evidence.gather(s).crashes["rank"].to_list() == [1]


def test_the_earliest_collective_never_issued_is_the_deadlock():
    # rank 2 never issued seq 2; ranks 0-1 wait there, so rank 0's missing seq 3 on rank 1 is a consequence
    s = fr_store({0: [one("0", 1), one("0", 2), one("0", 3)], 1: [one("0", 1), one("0", 2)], 2: [one("0", 1)]})
    v = decide(s)
    assert v.kind == Kind.DEADLOCK and v.ranks == [2] and "seq 2" in v.summary.split("|")[0]


def test_dumps_of_a_finished_run_are_snapshots_not_a_hang():
    launch = [event("launch", "tracekit run", None, 1, f"launch{n}.txt") for n in range(2)]
    ends = [event("run_note", "exit code 0", None, 9, f"launch{n}.txt") for n in range(2)]
    s = fr_store({0: [one("0", 1), one("0", 2)], 1: [one("0", 1)]}, extra_events=launch + ends)
    v = decide(s)
    assert not v.failed and v.kind not in (Kind.DEADLOCK, Kind.UNDECIDED)
    missing = [f for f in v.findings if f.kind == Match.MISSING]
    assert missing and all("never issued" not in f.message and "when dumped" in f.message for f in missing)
    assert "dumped at all_reduce #1" in v.summary


def test_the_rank_the_others_wait_for_is_named_from_its_own_durations():
    # rank 2 enters every collective 2 s after ranks 0-1: they spend 2 s in it, rank 2 a few ms
    rows = []
    for seq in range(1, 7):
        t = seq * 10.0
        rows += [timed_entry(0, seq, t, t + 2.0), timed_entry(1, seq, t + 0.01, t + 2.0),
                 timed_entry(2, seq, t + 1.99, t + 2.0)]
    v = decide(make_store(collectives=rows, ranks=[dict(file=f"fr{r}", rank=r, source="fr") for r in range(3)]))
    assert v.kind == Kind.STRAGGLER and v.ranks == [2]
    assert "rank 2 makes the others wait" in v.summary and "since all_reduce seq 1" in v.summary
    assert "1.99 s" in v.summary or "1.98 s" in v.summary


def test_no_straggler_when_arrivals_differ_by_milliseconds():
    rows = [timed_entry(r, seq, seq * 10.0 + r * 0.001, seq * 10.0 + 0.01) for seq in range(1, 7) for r in range(3)]
    assert Evidence.gather(make_store(collectives=rows)).late is None


def steps(texts, rank=0, first=1, every=1) -> list[dict]:
    return [event("step", t, rank, i + 1, "rank0.log", step=first + i * every) for i, t in enumerate(texts)]


def test_steps_at_a_steady_pace_and_nothing_else_are_healthy_though_one_rank_logs():
    lines = [f"2024-04-10 05:{m:02d}:00 | step {s} loss 1.0" for m, s in ((0, 100), (2, 200), (4, 300), (6, 400))]
    v = decide(make_store(events=steps(lines, first=100, every=100)))
    assert v.kind == Kind.HEALTHY and "steps advanced 100 -> 400" in v.summary and "1.2 s per step" in v.summary


def test_a_step_far_slower_than_the_others_is_slow_progress():
    lines = [f"2024-04-10 {h:02d}:{m:02d}:00 | step {s} loss 1.0"
             for h, m, s in ((5, 0, 100), (5, 2, 200), (5, 4, 300), (5, 6, 400), (7, 7, 500))]
    v = decide(make_store(events=steps(lines, first=100, every=100)))
    assert v.kind == Kind.SLOW_PROGRESS and "steps 400 -> 500 took 2 h 1 min" in v.summary


def test_a_slow_first_step_is_the_warm_up_not_slow_progress():
    lines = [f"2024-04-10 05:{m:02d}:00 | step {s} loss 1.0" for m, s in ((0, 1), (30, 2), (31, 3), (32, 4), (33, 5))]
    assert decide(make_store(events=steps(lines))).kind == Kind.HEALTHY


def test_progress_then_a_closing_signal_is_not_healthy():
    lines = [f"2024-04-10 05:{m:02d}:00 | step {s}" for m, s in ((0, 1), (1, 2), (2, 3))]
    sig = event("closing_signal", "Sending process 2919043 closing signal SIGHUP", None, 9, "rank0.log")
    assert decide(make_store(events=steps(lines) + [sig])).kind != Kind.HEALTHY


def test_progress_without_a_measurable_pace_is_healthy_for_the_ranks_seen_and_says_so():
    # (session 23, rules_seen.progress_on_ranks_seen: steps that advance, the last mid-loop, nothing else
    # logged: an expert's first call is healthy; the summary says what was seen and what is inferred)
    v = decide(make_store(events=steps(["step 1 loss 1.0", "step 2 loss 0.9", "step 3 loss 0.8"])))
    assert v.kind == Kind.HEALTHY and "steps 1 -> 3" in v.summary and "inferred" in v.summary


def test_a_throughput_that_ends_at_its_lowest_is_not_healthy():
    v = decide(make_store(events=steps([f"images/sec: {x}" for x in (195.8, 195.8, 195.8, 186.6)], every=10)))
    assert v.kind == Kind.UNDECIDED and "fell from 195.8 to 186.6" in v.summary


def test_store_based_barrier_names_the_rank_that_never_checked_in():
    msg = ("Waiting in store based barrier to initialize process group for rank: {}, key: store_based_barrier_key:1 "
           "(world_size=4, worker_count=3, timeout=0:30:00)")
    v = decide(make_store(events=[event("stall", msg.format(r), None, r + 1) for r in (0, 1, 3)]))
    assert v.kind == Kind.INIT_STALL and v.ranks == [2] and "rank 2 never checked in" in v.summary


def test_store_based_barrier_with_more_workers_than_the_world_is_two_jobs_on_one_store():
    msg = ("RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
           "store_based_barrier_key:1 (world_size=8, worker_count=16, timeout=0:30:00)")
    v = decide(make_store(events=[event("exception", msg, 0)]))
    assert v.kind == Kind.INIT_STALL and "share one MASTER_ADDR:MASTER_PORT" in v.summary


def test_the_verdict_carries_the_fix_of_its_cause_from_the_table_doctor_reads():
    from tracekit import doctor, fixes
    msg = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    v = decide(make_store(events=[event("cuda_error", msg, 1)]))
    assert v.kind == Kind.CRASHED_RANK and v.fix == fixes.BY_CAUSE["cuda-oom"].fix and "max_memory_allocated" in v.check
    argv = ["torchrun", "--nnodes=2", "train.py", "--report_to", "wandb"]
    wandb = [f for f in doctor.check(argv, env={}, interfaces=["eth0"], rdma=True, network=True) if f.id == "wandb-online"]
    assert wandb and fixes.BY_CAUSE["wandb"].fix in wandb[0].fix


def test_a_size_mismatch_seen_by_the_network_transport_is_a_mismatch():
    msg = "NET/IB : req 0/1 tag 0 peer 10.10.23.6<58683> collective mismatch error, local size 496640 remote size 65536"
    v = decide(make_store(events=[event("nccl_warn", msg, 3, where="transport/net_ib.cc:1038")]))
    assert v.kind == Kind.MISMATCH and v.ranks == [3] and "496640" in v.summary


def test_a_bootstrap_failure_is_an_init_that_never_completed_not_a_transport_error():
    v = decide(make_store(events=[event("nccl_warn", "Bootstrap Root : rank 1 of 8 ranks has already checked in",
                                        None, where="bootstrap.cc:131")]))
    assert v.kind == Kind.INIT_STALL and "already checked in" in v.summary


def test_init_completed_then_nothing_says_so():
    comms = [dict(file=f"nccl{r}.log", line=5, rank=r, comm="0xa", comm_id="c1", nranks=2, state="init_complete")
             for r in (0, 1)]
    v = decide(make_store(comms=comms, ranks=[dict(file=f"nccl{r}.log", rank=r, world_size=2) for r in (0, 1)]))
    assert v.kind == Kind.UNDECIDED and "ranks 0-1 finished NCCL init" in v.summary and "logged nothing after" in v.summary


def test_an_out_of_memory_rank_whose_error_path_left_a_barrier_is_the_cause_not_the_mismatch():
    # rank 1 ran out of memory; its handler's barrier (1 uint8 element) met the others' float all-reduce
    oom = event("exception", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", 1, 3)
    s = fr_store({0: [one("0", 1), one("0", 2, sizes="1024")], 1: [one("0", 1), one("0", 2, sizes="1", dtype="Byte")]},
                 extra_events=[oom])
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [1] and "out of memory" in v.summary and "consequence" in v.summary


def test_a_mismatch_with_a_cuda_error_on_another_group_rank_stays_a_mismatch():
    oom = event("exception", "torch.OutOfMemoryError: CUDA out of memory.", 5, 3)
    s = fr_store({0: [one("0", 1, sizes="8")], 1: [one("0", 1, sizes="9")]}, extra_events=[oom])
    assert decide(s).kind == Kind.MISMATCH


def test_a_rank_late_every_time_then_stopped_is_a_straggler_not_a_deadlock():
    rows = []
    for seq in range(1, 7):
        t = seq * 10.0
        rows += [timed_entry(0, seq, t, t + 3.0), timed_entry(1, seq, t, t + 3.0), timed_entry(2, seq, t + 2.99, t + 3.0)]
    rows += [{**fr_entry(r, "0", 7, t=int(70e9)), "state": "scheduled"} for r in (0, 1)]  # rank 2: late once more
    groups = [dict(file=f"fr{r}", rank=r, pg="0", members=[0, 1, 2]) for r in range(3)]
    v = decide(make_store(collectives=rows, groups=groups, ranks=[dict(file=f"fr{r}", rank=r, source="fr") for r in range(3)]))
    assert v.kind == Kind.STRAGGLER and v.ranks == [2] and "late, not stuck" in v.summary


def test_a_late_rank_that_the_watchdog_timed_out_on_stays_a_deadlock():
    rows = []
    for seq in range(1, 7):
        t = seq * 10.0
        rows += [timed_entry(0, seq, t, t + 3.0), timed_entry(1, seq, t, t + 3.0), timed_entry(2, seq, t + 2.99, t + 3.0)]
    rows += [{**fr_entry(r, "0", 7, t=int(70e9)), "state": "scheduled"} for r in (0, 1)]
    groups = [dict(file=f"fr{r}", rank=r, pg="0", members=[0, 1, 2]) for r in range(3)]
    wd = [event("watchdog_timeout", "Watchdog caught collective operation timeout", 0, 5, seq=7, op="allreduce")]
    v = decide(make_store(collectives=rows, groups=groups, events=wd,
                          ranks=[dict(file=f"fr{r}", rank=r, source="fr") for r in range(3)]))
    assert v.kind == Kind.DEADLOCK and v.ranks == [2]


def test_a_stuck_watchdog_says_what_the_heartbeat_monitor_means():
    msg = ("[PG 0 Rank 6] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in "
           "monitoring enqueued collectives.")
    v = decide(make_store(events=[event("stall", msg, 6)]))
    assert v.kind == Kind.UNDECIDED and v.ranks == [6] and "480 s" in v.summary and "never returned" in v.summary


def test_a_network_failure_before_a_cuda_error_in_the_same_log_is_the_cause():
    ib = event("nccl_warn", "NET/IB : Got completion with error 12, opcode 1, len 0, vendor err 129", None, 3,
               "tests.log", where="transport/net_ib.cc:1000")
    cuda = event("crash", "Cuda failure 'an illegal memory access was encountered'", None, 9, "tests.log")
    assert decide(make_store(events=[ib, cuda])).kind == Kind.TRANSPORT_ERROR
    assert decide(make_store(events=[{**ib, "line": 12}, cuda])).kind == Kind.CRASHED_RANK


def test_a_peer_that_closed_the_connection_is_said_as_that_not_as_a_transport_fault():
    v = decide(make_store(events=[event("nccl_warn", "Net : Call to recv from 10.0.0.2<5835> failed : Broken pipe", 9)]))
    assert v.kind == Kind.UNDECIDED and "a peer of rank 9 closed its connection" in v.summary


def test_a_peer_that_closed_the_connection_on_one_host_gets_the_peers_fix_not_the_interfaces():
    gloo = event("exception", "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
                 "closed by peer [127.0.0.1]:63713", 1)
    v = decide(make_store(events=[gloo]))
    assert v.kind == Kind.UNDECIDED and "closed its connection" in v.summary
    assert "peer that ended first" in v.fix and "SOCKET_IFNAME" not in v.fix
