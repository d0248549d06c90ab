"""Issue 31, session 17: the failures family decides where a process's own error decides (dev excerpts of
samples/wild and factory stores): NCCL's system error from a process's own call is its transport's; a CUDA
error inside a runtime's own named NCCL call is that process's; a launcher that killed its workers with no
signal of its own had a worker fail first; several processes naming the one peer that closed on them name
who ended first. Each with the excerpts where the same words do not decide, left UNDECIDED."""

from pathlib import Path

import pytest

from tests.factory import make_store
from tracekit import rules_exit
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def _verdict(name: str):
    return decide(ingest([WILD / name]))


# --- ncclSystemError raised by the process's own call: its transport's system call failed ------------------

@pytest.mark.parametrize("name, said", [
    ("dv8-037-accelerate-multinode-containers-barrier-ncclsystemerror.txt", "unhandled system error"),
    ("dv12-019-horovod-k8s-mnist-ncclcomminitrank-unhandled-system-error.txt", "ncclCommInitRank failed"),
    # (mp.spawn's `Process 3 terminated with the following error` carries the same error: not an earlier end)
    ("dv2-004-colossal-pytest-verify-model-ncclsystemerror.txt", "unhandled system error"),
])
def test_system_error_of_a_process_own_call_is_its_transport(name, said):
    v = _verdict(name)
    assert v.kind == Kind.TRANSPORT_ERROR and v.rule == "nccl_error_unexplained"
    assert said in v.summary and "system call of NCCL's transport failed" in v.summary


def test_system_error_that_does_not_say_whose_stays_undecided():
    # the rule decides its excerpt of this kind ...
    assert _verdict("dv6-002-openpcdet-ddp-verify-ncclsystemerror.txt").kind == Kind.TRANSPORT_ERROR
    # ... not c10d's watchdog reporting an async error of a collective in flight (a peer's abort can cause it)
    assert _verdict("torch-017-abort-test-async-system-error-nccl2251.txt").kind == Kind.UNDECIDED
    # ... nor one process driving every GPU of one host (nccl-tests -g 4): no socket between ranks
    assert _verdict("nccl-002-tests-docker-shm-unhandled-system.txt").kind == Kind.UNDECIDED


# --- ncclUnhandledCudaError in a runtime's word of its own named NCCL call -------------------------------

@pytest.mark.parametrize("name, call", [
    ("dv12-020-horovod-a100-ncclallreduce-unhandled-cuda-error.txt", "ncclAllReduce"),
    ("dv11-010-jax-pmean-2gpu-ncclgroupend-unhandled-cuda.txt", "ncclGroupEnd"),
    ("dv11-009-jax-pmap-nccl-comminit-unhandled-cuda-error.txt", "ncclCommInitRank"),
])
def test_cuda_error_inside_a_named_nccl_call_is_that_process_crash(name, call):
    v = _verdict(name)
    assert v.kind == Kind.CRASHED_RANK and f"inside its own {call} failed" in v.summary
    assert "unhandled cuda error" in v.summary


def test_torch_distbackend_cuda_error_alone_stays_undecided():
    assert _verdict("dv12-020-horovod-a100-ncclallreduce-unhandled-cuda-error.txt").kind == Kind.CRASHED_RANK
    # (torch raises DistBackendError on a rank whose communicator another rank's failure aborted too)
    assert _verdict("torch-052-t2ir1-multinode-unhandled-cuda-error-nccl2215.txt").kind == Kind.UNDECIDED


# --- a launcher that killed its workers, with no signal of its own ---------------------------------------

@pytest.mark.parametrize("name, said", [
    ("dev-036-chatglm2-ds-killing-subprocesses.txt", "Killing subprocess 3966"),
    ("dv17-026-lmflow-lora-llama7b-1gpu-killed-after-load.txt", "Killing subprocess 19501"),
    # (the launcher's own traceback after its kills, runpy's frames only, is no worker's place)
    ("dv2-038-ds-launch-killing-8-subprocesses.txt", "Killing subprocess 250621"),
])
def test_launcher_kills_alone_are_a_worker_that_failed_first(name, said):
    v = _verdict(name)
    assert v.kind == Kind.CRASHED_RANK and v.rule == "workers_ended_unexplained"
    assert said in v.summary and "exits with a non-zero code" in v.summary


def test_launcher_kills_with_a_worker_stack_in_the_program_stay_undecided():
    # a worker's traceback in its own code (a barrier it waited in) after the kill: who failed first is not said
    v = _verdict("llm-039-llamafactory-hostfile-pdsh-killing-subprocess-main-process-first.txt")
    assert v.kind == Kind.UNDECIDED
    # (where no worker's stack follows, the kills decide)
    assert _verdict("dv8-045-deepspeed-pdsh-node-sigkill-handler-30s-stagger.txt").kind == Kind.CRASHED_RANK


def _ev(*events: dict) -> Evidence:
    return Evidence.gather(make_store(events=list(events)))


def _closing(pid: int, line: int) -> dict:
    return dict(kind="closing_signal", message=f"Sending process {pid} closing signal SIGTERM", rank=None,
                line=line, file="job.log", pid=pid)


def test_launcher_kills_after_a_timeout_stay_undecided():
    timeout = dict(kind="watchdog_timeout", message="Watchdog caught collective operation timeout", rank=0,
                   line=1, file="job.log")
    assert rules_exit.workers_ended_unexplained(_ev(_closing(41, 2), _closing(42, 3))).kind == Kind.CRASHED_RANK
    assert rules_exit.workers_ended_unexplained(_ev(timeout, _closing(41, 2), _closing(42, 3))).kind \
        == Kind.UNDECIDED


# --- several processes naming the one peer that closed their connections ---------------------------------

def test_every_process_naming_one_closed_peer_names_who_ended_first():
    v = _verdict("dv10-010-sglang-nccl-service-closed-by-localrank7.txt")
    assert v.kind == Kind.CRASHED_RANK and v.rule == "peer_closed"
    assert v.summary.startswith("localRank 7 ended first") and "7 other processes" in v.summary


# --- a program's own CRITICAL line that it exits; NCCL refusing a collective; a bootstrap unwound ----------

def test_program_critical_line_that_it_exits_is_its_crash():
    v = _verdict("dv17-012-detectron-caffe2-2gpu-loss-nan-exiting.txt")
    assert v.kind == Kind.CRASHED_RANK and "Loss is NaN, exiting" in v.summary


def test_invalid_usage_of_a_collective_call_is_that_rank_crash():
    v = _verdict("dv11-022-deocclusion-broadcast-ncclinvalidusage-elastic-restart.txt")
    assert v.kind == Kind.CRASHED_RANK and "refused its own collective call" in v.summary
    assert "rank 6 numbered by local rank" in v.summary and "default_pg.broadcast" in v.summary
    # (at a communicator's set-up, ncclCommInitRank in vLLM's pynccl, the ranks may disagree: undecided)
    assert _verdict("llm-042-vllm-multinode-pynccl-comminitrank-invalid-usage.txt").kind == Kind.UNDECIDED


def test_nccl_error_after_a_bootstrap_unwind_is_an_init_stall():
    v = _verdict("dv16-008-nccl-tests-4090-2host-bootstrap-internal-error-peer-closed.txt")
    assert v.kind == Kind.INIT_STALL and "bootstrap.cc:312 -> 3" in v.summary and "internal error" in v.summary
