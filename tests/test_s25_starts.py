"""A failure during set-up is INIT_STALL, whichever rule read the crash (rules_set_up.failed_in_set_up, issue 31:
"an init failure called a crash" is a wrong kind): a crash read from its words (rules_crash_words) whose failure
names a set-up step (MPI_Init, JAX's coordinator connect, torch's store) in a job never past set-up says the
step and its fix; a missing module, a segfault, a failure after progress, or a file whose *name* says
`rendezvous` stay crashes."""

from __future__ import annotations

from tests.conftest import ROOT
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"

# Open MPI's error handler when MPI_Init_thread fails (ompi/errhandler/errhandler_predefined.c, the lines of
# dv13-039 with a host prefix)
MPI_INIT = ("[node1:01234] *** An error occurred in MPI_Init_thread\n"
            "[node1:01234] *** on a NULL communicator\n"
            "[node1:01234] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,\n"
            "[node1:01234] ***    and potentially your MPI job)\n")
# JAX's client (jax/_src/distributed.py State.initialize's log line, then xla/pjrt/distributed/client.cc's
# glog FATAL when the coordinator never answered)
JAX = ("I0101 10:00:00.000000 1 distributed.py:90] Connecting to JAX distributed service on 10.0.0.1:1234\n"
       "F0101 10:05:00.000000 1 client.cc:99] Check failed: Failed to connect to distributed JAX controller: "
       "DEADLINE_EXCEEDED\n"
       "*** Check failure stack trace: ***\n")
NO_MODULE = ("Traceback (most recent call last):\n"
             "  File \"train.py\", line 3, in <module>\n"
             "    import horovod.torch as hvd\n"
             "ModuleNotFoundError: No module named 'horovod'\n")

RAISED = ("Traceback (most recent call last):\n"
          "  File \"train.py\", line 30, in <module>\n"
          "    check(batch)\n"
          "RuntimeError: bad shape for the batch\n")


def _decide(tmp_path, text: str, name: str = "job.log"):
    (tmp_path / name).write_text(text)
    return decide(ingest([tmp_path]))


def test_mpi_init_failing_in_a_job_never_past_set_up_is_a_set_up_that_never_completed_with_its_fix(tmp_path):
    v = _decide(tmp_path, MPI_INIT)
    assert v.kind == Kind.INIT_STALL and v.rule == "failed_in_set_up"
    assert "MPI_Init" in v.summary and "MPI's start-up" in v.summary
    assert "mpirun" in v.fix


def test_jax_never_reaching_its_coordinator_is_a_set_up_that_never_completed_with_its_fix(tmp_path):
    v = _decide(tmp_path, JAX)
    assert v.kind == Kind.INIT_STALL
    assert "distributed JAX controller" in v.summary and "coordinator" in v.summary
    assert "coordinator_address" in v.fix


def test_a_missing_module_stays_a_crash(tmp_path):
    v = _decide(tmp_path, NO_MODULE)
    assert v.kind == Kind.CRASHED_RANK and "horovod" in v.summary


def test_a_file_named_for_the_rendezvous_does_not_make_a_crash_a_set_up_failure(tmp_path):
    # (the crash's words decide, never its file's name: dv4-027's and dev-047's names say `rendezvous`, `rdzv`)
    v = _decide(tmp_path, RAISED, "rendezvous-rdzv-init_process_group.log")
    assert v.kind == Kind.CRASHED_RANK and "bad shape" in v.summary


def test_real_mpi_init_thread_failure_is_an_init_stall():
    v = decide(ingest([WILD / "dv13-039-megatron-bridge-tp-overlap-mpi-init-null-communicator.txt"]))
    assert v.kind == Kind.INIT_STALL and "MPI_Init_thread" in v.summary


def test_real_segfault_inside_nccl_init_stays_the_process_crash():
    # (a segfault in ncclCommInitRank is the process's own fault: dv18-034 is labelled crashed-rank)
    v = decide(ingest([WILD / "dv18-034-sglang-a40-segfault-in-ncclcomminitrank.txt"]))
    assert v.kind == Kind.CRASHED_RANK


def test_real_worker_exit_before_a_rendezvous_restart_stays_a_crash():
    v = decide(ingest([WILD / "dv4-027-torchrun-elastic-worker-failed-restart-rendezvous.txt"]))
    assert v.kind == Kind.CRASHED_RANK and "exit code 1" in v.summary


def test_real_agent_sigterm_stays_a_kill_from_outside():
    v = decide(ingest([WILD / "dev-047-elastic-agent-sigterm-rdzv-closed.txt"]))
    assert v.kind == Kind.CRASHED_RANK and "SIGTERM" in v.summary


# vLLM's pynccl raising NCCL's code from ncclCommInitRank (vllm/distributed/device_communicators/pynccl_wrapper.py
# NCCL_CHECK), the frames of llm-042 with another code
PYNCCL_INIT = ("Traceback (most recent call last):\n"
               "  File \"/usr/local/lib/python3.10/dist-packages/vllm/distributed/device_communicators/pynccl.py\", "
               "line 89, in __init__\n"
               "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(\n"
               "  File \"/usr/local/lib/python3.10/dist-packages/vllm/distributed/device_communicators/"
               "pynccl_wrapper.py\", line 223, in NCCL_CHECK\n"
               "    raise RuntimeError(f\"NCCL error: {error_str}\")\n"
               "RuntimeError: NCCL error: {code}\n")


def test_an_unexplained_nccl_error_raised_in_communicator_set_up_is_a_set_up_that_never_completed(tmp_path):
    v = _decide(tmp_path, PYNCCL_INIT.replace("{code}", "internal error - please report this issue to the NCCL "
                                              "developers"))
    assert v.kind == Kind.INIT_STALL and v.rule == "nccl_error_unexplained"
    assert "internal error" in v.summary and "pynccl.py:89" in v.summary and "set-up never completed" in v.summary
    assert "NCCL_SOCKET_IFNAME" not in v.fix  # (no network line: not the interface's row)


def test_nccls_refusal_of_the_programs_own_init_call_stays_undecided(tmp_path):
    # (invalid usage: which argument only NCCL's WARN says; llm-042 is labelled undecided)
    v = _decide(tmp_path, PYNCCL_INIT.replace("{code}", "invalid usage (run with NCCL_DEBUG=WARN for details)"))
    assert v.kind == Kind.UNDECIDED and "invalid usage" in v.summary


def test_real_vllm_init_device_nccl_internal_error_is_an_init_stall():
    v = decide(ingest([WILD / "dv2-033-vllm-ray-ib-init-device-nccl-internal-error.txt"]))
    assert v.kind == Kind.INIT_STALL and "internal error" in v.summary and "set-up never completed" in v.summary


# DeepSpeed's announcement before its process group (deepspeed/comm/comm.py init_distributed), then a user's
# Ctrl-C: Python's KeyboardInterrupt traceback
DS_JOINS = ("[2024-01-01 10:00:00,000] [INFO] [comm.py:637:init_distributed] cdb=None\n"
            "[2024-01-01 10:00:00,001] [INFO] [comm.py:668:init_distributed] Initializing TorchBackend in DeepSpeed "
            "with backend nccl\n")
CTRL_C = ("^CTraceback (most recent call last):\n"
          "  File \"train.py\", line 12, in <module>\n"
          "    deepspeed.init_distributed()\n"
          "KeyboardInterrupt\n")
STEP = "{'loss': 2.31, 'grad_norm': 1.2, 'learning_rate': 1e-05, 'epoch': 0.01}\n"


def test_a_users_ctrl_c_after_the_last_start_up_step_is_a_set_up_that_never_completed(tmp_path):
    v = _decide(tmp_path, DS_JOINS + CTRL_C)
    assert v.kind == Kind.INIT_STALL and v.rule == "start_up_unfinished"
    assert "Initializing TorchBackend" in v.summary and "KeyboardInterrupt" in v.summary


def test_a_ctrl_c_after_the_run_went_on_past_start_up_is_no_init_stall(tmp_path):
    v = _decide(tmp_path, DS_JOINS + STEP * 3 + CTRL_C)
    assert v.kind != Kind.INIT_STALL
