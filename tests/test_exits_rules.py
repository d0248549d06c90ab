"""The rules of tracekit/rules_exit.py, each on the smallest store that shows its evidence (tests/factory.py),
and their place among the other rules."""

from tests.factory import make_store
from tracekit import rules_exit
from tracekit.evidence import Evidence
from tracekit.verdict import Kind, decide


def ev(*events: dict) -> Evidence:
    return Evidence.gather(make_store(events=list(events)))


def event(kind, message="", rank=None, line=1, file="job.log", **kw) -> dict:
    return dict(kind=kind, message=message, rank=rank, line=line, file=file, **kw)


def death(signum: int, name: str, line: int = 5) -> dict:
    return event("signal", f"the torchrun agent received {name} (signal {signum}) from outside the job and "
                 "shut its workers down", line=line, where="torchelastic agent")


def closing(pid: int, line: int = 6) -> dict:
    return event("closing_signal", f"Sending process {pid} closing signal SIGTERM", line=line, pid=pid)


def ended(rank, code, line=8, where=None, ts=None, message=None, **kw) -> dict:
    return event("rank_exit" if rank is not None else "child_failed",
                 message or f"rank {rank} (local_rank {rank}) on n1 exited with code {code}", rank, line,
                 exit_code=code, where=where, ts=ts, **kw)


# --- killed_from_outside -----------------------------------------------------------------------

def test_sighup_to_the_agent_is_the_session_closing():
    v = rules_exit.killed_from_outside(ev(death(1, "SIGHUP"), closing(85005)))
    assert v.kind == Kind.CRASHED_RANK and v.ranks == []
    assert v.summary.startswith("killed from outside: the torchrun agent received SIGHUP (signal 1)")
    assert "(pid 85005)" in v.summary and "ssh session" in v.summary and "nohup" in v.summary


def test_sigterm_to_the_agent_says_the_scheduler_and_the_progress_before_it():
    v = rules_exit.killed_from_outside(ev(event("step", "step 40", step=40, line=2), death(15, "SIGTERM")))
    assert v.kind == Kind.CRASHED_RANK and "scheduler" in v.summary and "last step 40" in v.summary


def test_sigint_is_a_person_stopping_it_undecided():
    v = rules_exit.killed_from_outside(ev(death(2, "SIGINT")))
    assert v.kind == Kind.UNDECIDED and "Ctrl-C" in v.summary


def test_a_failure_before_the_signal_or_a_timeout_leaves_it_to_the_other_rules():
    raised = event("exception", "ValueError: bad batch", 3, line=2)
    assert rules_exit.killed_from_outside(ev(raised, death(15, "SIGTERM"))) is None
    killed = ended(3, -9, line=2)
    assert rules_exit.killed_from_outside(ev(killed, death(1, "SIGHUP"))) is None
    timeout = event("watchdog_timeout", "Watchdog caught collective operation timeout", 0, line=2)
    assert rules_exit.killed_from_outside(ev(timeout, death(15, "SIGTERM"))) is None
    stall = event("stall", "Heartbeat monitor timed out", 0, line=2, where="c10d")
    assert rules_exit.killed_from_outside(ev(stall, death(15, "SIGTERM"))) is None
    # a failure after the signal is the signal's consequence: the signal still decides
    after = rules_exit.killed_from_outside(ev(death(1, "SIGHUP"), ended(0, -1, line=9)))
    assert after.kind == Kind.CRASHED_RANK


# --- process_ended -----------------------------------------------------------------------------

def test_each_code_is_said_with_its_meaning_and_the_rank():
    said_of = {-9: "SIGKILL", -11: "SIGSEGV", -7: "SIGBUS", 1: "a Python exception", 3: "exit code 3"}
    for code, said in said_of.items():
        v = rules_exit.process_ended(ev(ended(4, code)))
        assert v.kind == Kind.CRASHED_RANK and v.ranks == [4] and said in v.summary, (code, v.summary)
        assert v.summary.startswith(f"rank 4 (local rank 4) ended: exit code {code}")


def test_a_stop_request_is_no_failure():
    assert rules_exit.process_ended(ev(ended(1, -15), ended(2, 143, line=9))) is None


def test_torchruns_first_observed_failure_comes_first_though_printed_last():
    first = ended(2, -9, line=20, where=rules_exit.FIRST, ts="12:00:01")
    other = ended(3, -15, line=10, where="torchrun: another failure", ts="12:00:02")
    v = rules_exit.process_ended(ev(other, first))
    assert v.ranks == [2] and "SIGKILL" in v.summary


def test_failures_of_one_time_leave_the_first_unknown():
    first = ended(0, 1, line=20, where=rules_exit.FIRST, ts="12:00:01")
    v = rules_exit.process_ended(ev(ended(4, 1, ts="12:00:01"), ended(5, 1, line=9, ts="12:00:01"), first))
    assert v.kind == Kind.UNDECIDED and v.summary.startswith("ranks 0,4-5 all exited with code 1 at 12:00:01")


def test_a_local_rank_or_a_launchers_worker_is_named_as_such():
    v = rules_exit.process_ended(ev(ended(None, -9, message="failed (exitcode: -9) local_rank: 5 (pid: 2630)",
                                          pid=2630)))
    assert v.ranks == [] and v.summary.startswith("local rank 5 (pid 2630) ended: exit code -9")
    ds = ended(None, 1, message="the DeepSpeed launcher: a local rank exited with return code 1",
               where="deepspeed launcher")
    said = rules_exit.process_ended(ev(ds)).summary
    assert said.startswith("a worker of the deepspeed launcher ended: exit code 1")


def test_with_a_timeout_the_wait_is_read_first_unless_torchrun_saw_a_kill_first():
    timeout = event("watchdog_timeout", "Watchdog caught collective operation timeout", 0, line=2)
    assert rules_exit.process_ended(ev(timeout, ended(0, -6, where=rules_exit.FIRST))) is None
    assert rules_exit.process_ended(ev(timeout, ended(1, 1, where=rules_exit.FIRST))) is None
    v = rules_exit.process_ended(ev(timeout, ended(1, -9, where=rules_exit.FIRST)))
    assert v.ranks == [1] and "SIGKILL" in v.summary


# --- workers_ended_unexplained -----------------------------------------------------------------

def test_kills_without_the_line_that_says_why_are_a_worker_that_failed_first():
    # (issue 31: a launcher kills its workers when one exits non-zero, or when it is signalled, which it says)
    v = rules_exit.workers_ended_unexplained(ev(closing(3966, 1), closing(3967, 2)))
    assert v.kind == Kind.CRASHED_RANK and "(pid 3966, 3967)" in v.summary
    assert rules_exit.workers_ended_unexplained(ev(closing(3966), ended(None, 1, message="non-zero"))) is None


# --- their place among the rules ---------------------------------------------------------------

def test_an_exception_explains_the_exit_code_it_led_to():
    v = decide(make_store(events=[event("exception", "ValueError: batch 7 is empty", 1, line=3),
                                  ended(1, 1, line=9, where=rules_exit.FIRST)]))
    assert v.kind == Kind.CRASHED_RANK and v.rule == "crashed_rank" and "ValueError" in v.summary


def test_the_verdict_carries_the_fix_of_its_signal():
    v = decide(make_store(events=[ended(2, -11)]))
    assert v.rule == "process_ended" and "faulthandler" in v.fix
    v = decide(make_store(events=[death(1, "SIGHUP")]))
    assert v.rule == "killed_from_outside" and "nohup" in v.fix
