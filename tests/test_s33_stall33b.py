"""Session 33, round two, stalls (stall33b): steps that start again after an end are a new run.

Covers, on the real lines of a reproducer's repeated trials under Slurm (dv32-003: ``srun -l``'s ``N:`` prefix,
``RANK N: running step i/10``, ``RANK N: COMPLETE!``, slurmstepd's ``CANCELLED AT ... DUE TO TIME LIMIT``):
- ``last_run.restarts``: a step count that goes back to its first step after an end starts a new run; a count
  that goes on after the end (a resume) does not.
- ``rules_after_end.work_ended_before`` (through ``rules_exit.cancelled_by_scheduler``): an end a new run
  follows is not the job's end, so the time limit is read against the last run: ranks that stepped in the run
  before and never logged a step of the last one read DEADLOCK naming them; where every rank started it and
  none went past its first step, UNDECIDED (no progress), never the earlier run's end nor a kill from outside.
- a single run that said its end before the time limit stays UNDECIDED ``the program said its work ended``.
- ``rules_stall.init_stall``: a timeout is the sign of a pending init's stall only where it is logged after the
  init began (in its own file) and is a watchdog's or says what waited (a store, a communicator, a collective).
"""

from __future__ import annotations

from tests.factory import text_store
from tracekit import last_run
from tracekit.evidence import Evidence
from tracekit.outcome import Kind
from tracekit.verdict import decide

CANCEL = (" 0: slurmstepd: error: *** STEP 8384637.13 ON nid001044 CANCELLED AT 2023-05-02T03:58:46 DUE TO TIME "
          "LIMIT ***\nslurmstepd: error: *** JOB 8384637 ON nid001044 CANCELLED AT 2023-05-02T03:58:46 DUE TO TIME "
          "LIMIT ***\nsrun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n")


def _trial(n: int, ranks: range, steps: int, done: bool = True, first: int = 1) -> str:
    text = f"trial {n}...\n"
    for s in range(first, first + steps):
        text += "".join(f"{r:2d}: RANK {r}: running step {s}/10\n" for r in ranks)
    return text + ("".join(f"{r:2d}: RANK {r}: COMPLETE!\n" for r in ranks) if done else "")


def test_ranks_that_never_start_the_next_run_read_deadlock(tmp_path):
    text = _trial(13, range(4), 10) + _trial(14, range(1, 4), 1, done=False) + CANCEL
    store = text_store(tmp_path, text)
    assert last_run.earlier_ranks(Evidence.gather(store)) == [0]
    v = decide(store)
    assert v.kind is Kind.DEADLOCK and v.rule == "cancelled_by_scheduler"
    assert v.summary.startswith("rank 0 never started the last run") and "TIME LIMIT" in v.summary


def test_every_rank_at_the_first_step_of_the_next_run_is_undecided(tmp_path):
    v = decide(text_store(tmp_path, _trial(13, range(4), 10) + _trial(14, range(4), 1, done=False) + CANCEL))
    assert v.kind is Kind.UNDECIDED and "no progress logged" in v.summary
    assert "COMPLETE" not in v.summary.split("the last line before it")[0]


def test_one_run_that_said_its_end_before_the_limit_stays_undecided(tmp_path):
    v = decide(text_store(tmp_path, _trial(13, range(4), 10) + CANCEL))
    assert v.kind is Kind.UNDECIDED and v.summary.startswith("the program said its work ended (RANK")


def test_a_count_that_goes_on_after_an_end_is_no_new_run(tmp_path):
    store = text_store(tmp_path, _trial(13, range(4), 5) + _trial(14, range(1, 4), 1, done=False, first=6) + CANCEL)
    ev = Evidence.gather(store)
    assert not last_run.restarts(ev).height and last_run.earlier_ranks(ev) == []
    assert decide(store).kind is not Kind.DEADLOCK


# NCCL's init line (a dev excerpt's) and torch's store timeout (the format tests/test_rules.py quotes)
INIT = ("VM-160-69-tencentos:561:561 [0] NCCL INFO comm 0x1476dca0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 23000 "
        "commId 0xa015ae7e0a50005d - Init START\n")
STORE_TIMEOUT = ("torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients "
                 "joined.\n")


def test_init_stall_reads_only_a_timeout_after_the_init_began(tmp_path):
    from tracekit import rules_stall
    after = Evidence.gather(text_store(tmp_path, INIT + STORE_TIMEOUT, "after.log"))
    assert after.pending.height and after.timeouts.height
    assert rules_stall.init_stall(after).kind is Kind.INIT_STALL
    before = Evidence.gather(text_store(tmp_path, STORE_TIMEOUT + INIT, "before.log"))
    assert before.pending.height and before.timeouts.height and rules_stall.init_stall(before) is None
