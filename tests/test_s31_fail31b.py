"""Session 31, failures (fail31b): CRASHED_RANK only where the failure is the cause.

- ``rules_after_end``: the scheduler's time limit with no progress line logged is undecided (a job that hung
  reaches its limit too: samples/wild dv32-003), a time limit after progress stays a kill from outside; a
  launcher's death signal after the program said its work ended is its teardown, undecided; an exception
  after which the program says its work ended did not end the run, undecided.
- ``rules_blamed``: gloo's monitored barrier's error on a surviving rank sends the reader to rank 0's log:
  undecided, naming rank 0's log, not the raising rank's crash (samples/wild dv10-006).
- ``ignored_exceptions``: an exception under CPython's ``Exception ignored in:`` is no failure (dev-060).
Lines are as the programs print them: slurmstepd's cancel (dv32-003), torchelastic's agent
(torch/distributed/elastic/agent/server/api.py, dev-095), transformers' Trainer end (trainer.py:
``Training completed. Do not forget to share your model on huggingface.co/models =)``), PyTorch's
ProcessGroupGloo monitoredBarrier error (dv10-006).
"""

from __future__ import annotations

from tests.factory import text_store
from tracekit.outcome import Kind
from tracekit.verdict import decide

TIME_LIMIT = ("slurmstepd: error: *** STEP 8384637.13 ON nid001044 CANCELLED AT 2023-05-02T03:58:46 DUE TO "
              "TIME LIMIT ***\n")
DEATH = ("W1130 12:13:49.388000 124326 torch/distributed/elastic/agent/server/api.py:723] Received 15 death "
         "signal, shutting down workers\n")
END = "Training completed. Do not forget to share your model on huggingface.co/models =)\n"
BARRIER = ("RuntimeError: Rank 1 successfully reached monitoredBarrier, but received errors while waiting for "
           "send/recv from rank 0. Please check rank 0 logs for faulty rank.\n")


def test_a_time_limit_with_no_progress_logged_is_undecided(tmp_path):
    v = decide(text_store(tmp_path, " 2: RANK 2: running step 1/10\n" + TIME_LIMIT))
    assert v.kind == Kind.UNDECIDED and v.rule == "cancelled_by_scheduler"
    assert "time limit" in v.summary and "hung" in v.summary and "RANK 2: running step 1/10" in v.summary


def test_a_time_limit_after_progress_stays_a_kill_from_outside(tmp_path):
    v = decide(text_store(tmp_path, "step 450 loss 0.5\n" + TIME_LIMIT))
    assert v.kind == Kind.CRASHED_RANK and "time limit" in v.summary and "last step 450" in v.summary


def test_a_death_signal_after_the_programs_end_is_its_teardown(tmp_path):
    v = decide(text_store(tmp_path, END + DEATH))
    assert v.kind == Kind.UNDECIDED and v.rule == "killed_from_outside"
    assert "said its work ended (Training completed." in v.summary and "did not exit in time" in v.summary
    # the same signal with no end line before it stays a kill from outside
    v = decide(text_store(tmp_path, "{'loss': 0.31, 'learning_rate': 1e-05, 'epoch': 2.0}\n" + DEATH))
    assert v.kind == Kind.CRASHED_RANK and "SIGTERM" in v.summary


def test_an_exception_after_which_the_work_ended_did_not_end_the_run(tmp_path):
    raised = "[rank1]: wandb.errors.Error: You must call wandb.init() before wandb.log()\n"
    v = decide(text_store(tmp_path, raised + END))
    assert v.kind == Kind.UNDECIDED and v.rule == "crashed_rank"
    assert "rank 1 raised (wandb.errors.Error" in v.summary and "did not end the run" in v.summary
    # with its end before the exception, the exception is the failure
    v = decide(text_store(tmp_path, END + raised))
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [1]


def test_the_monitored_barriers_error_is_not_the_raising_ranks_crash(tmp_path):
    v = decide(text_store(tmp_path, BARRIER))
    assert v.kind == Kind.UNDECIDED and v.ranks == [0] and v.rule == "crashed_rank"
    assert v.summary.startswith("rank 1 got through and raised because rank 0's side failed")
    assert "rank 0's own log" in v.summary and "check rank 0 logs" in v.summary
    # an error of the rank's own stays its own
    v = decide(text_store(tmp_path, "[rank3]: RuntimeError: Expected to have finished reduction in the prior "
                          "iteration before starting a new one.\n"))
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [3]


# CPython's header over an exception nothing could catch (a finaliser's), as vLLM's Ray worker printed it (dev-060)
IGNORED = ("(RayWorkerVllm pid=14289) Exception ignored in: <function NCCLCommunicator.__del__ at 0x7f4d8c3212d0>\n"
           "(RayWorkerVllm pid=14289) Traceback (most recent call last):\n"
           "(RayWorkerVllm pid=14289)   File \"/usr/local/lib/python3.10/dist-packages/vllm/model_executor/"
           "parallel_utils/pynccl.py\", line 264, in __del__\n"
           "(RayWorkerVllm pid=14289)     _c_ncclCommDestroy(self.comm)\n"
           "(RayWorkerVllm pid=14289) AttributeError: 'NCCLCommunicator' object has no attribute 'comm'\n")


def test_an_exception_python_says_it_ignored_is_not_the_failure(tmp_path):
    v = decide(text_store(tmp_path, IGNORED + "[rank1]: RuntimeError: Expected to have finished reduction in the "
                          "prior iteration before starting a new one.\n"))
    assert v.kind == Kind.CRASHED_RANK
    assert v.summary.startswith("rank 1 failed first: RuntimeError: Expected to have finished reduction")
    assert "NCCLCommunicator" not in v.summary  # (nor in where each rank is: rank 1 raised the other error)
    # alone, it is no crash of a rank
    assert decide(text_store(tmp_path, IGNORED)).rule != "crashed_rank"
