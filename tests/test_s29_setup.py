"""Set-up failures of the runtimes beyond torch/NCCL are INIT_STALL, and nothing that does not show set-up waiting
or failing is (session 29, issue 31: "an init failure called a crash" is a wrong kind):

- ``start_up_steps`` and ``rules_set_up.set_up_step_unreturned``: a runtime's verbose trace of its set-up steps
  that ends in a step begun and never returned (Open MPI's `select: initializing btl component openib` with no
  `init of component openib returned`, dv34-009; PRRTE's `STATE PENDING DAEMON LAUNCH` with no later state,
  dv34-010); a trace whose step returned, or that goes on into work or an error, decides nothing by it;
- ``start_up_messages``: HCCL's `wait socket establish timeout` in its own log line (dv35-006), PRRTE's and ORTE's
  words of daemons never started or never routed, Ray Client's `ray client connection timeout`; the rank HCCL
  names (`rank[1]`) is the event's;
- ``rules_set_up.SET_UP``: oneCCL's transport set-up (`failed to init transport`) re-kinds its crash;
- ``set_up_rekind.undecided_in_set_up``: a cut traceback's raising function (`_env_rendezvous_handler`) is a set-up
  frame where no stack was read;
- ``rules_set_up.MISPLACED``: `Duplicate GPU detected` stays the program's crash (dev labels 9 of 9, dv6-007 a
  contradiction before), and an init begun is no proof against a program's own error;
- the fix rows of each (``fixes``).

The small logs under tests/data/s29_setup are written in each program's own words as its source prints them (the
file and function are cited beside each pattern in the modules), with made-up hosts; the dv34/dv35 excerpts are
real (their threads in samples/wild's manifests).
"""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit import fixes, start_up_messages as sm, start_up_steps as steps
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"
DATA = ROOT / "tests" / "data" / "s29_setup"


def _decide(tmp_path, text: str):
    return decide(text_store(tmp_path, text))


def _file(path):
    return decide(ingest([path]))


# --- the steps of a verbose set-up trace --------------------------------------------------------------------------
@pytest.mark.parametrize("line, name, returned, step", [
    ("[server:26717] select: initializing btl component openib", "ompi_component_init", False, "openib"),
    ("[server:26717] select: init of component self returned success", "ompi_component_init", True, "self"),
    ("[h:1] [prte-h-1@0,0] [16.2] ACTIVATE JOB prte-h-1@0 STATE PENDING DAEMON LAUNCH AT x.c:199",
     "mpi_launch_state", False, "PENDING DAEMON LAUNCH"),
    ("[h:1] [[1234,0],0] ACTIVATE JOB [1234,1] STATE ALLOCATION COMPLETE AT x.c:576", "mpi_launch_state", True, None),
])
def test_a_set_up_step_line_is_read_as_begun_or_returned(line, name, returned, step):
    entry, back, groups = steps.read(line)
    assert (entry.name, back, groups.get("step")) == (name, returned, step)


def test_a_launch_state_that_is_only_being_activated_is_no_step():
    assert steps.read("[h:1] [prte-h-1@0,0] ACTIVATING JOB prte-h-1@0 STATE PENDING DAEMON LAUNCH PRI 4") is None


def test_an_mpi_component_init_that_never_returned_is_an_init_stall(tmp_path):
    v = _decide(tmp_path, "[n1:77] select: initializing btl component self\n"
                          "[n1:77] select: init of component self returned success\n"
                          "[n1:77] select: initializing btl component tcp\n")
    assert v.kind is Kind.INIT_STALL
    assert "btl component tcp" in v.summary and "host n1 (pid 77)" in v.summary
    assert "btl_tcp_if_include" in v.summary


def test_a_component_init_that_returned_decides_nothing_by_itself(tmp_path):
    v = _decide(tmp_path, "[n1:77] select: initializing btl component self\n"
                          "[n1:77] select: init of component self returned success\n")
    assert v.kind is not Kind.INIT_STALL


def test_real_openmpi_openib_init_hang_is_an_init_stall():
    # open-mpi/ompi#5280 (dev): openib's init began and the log ends there
    v = _file(WILD / "dv34-009-openmpi-openib-btl-init-hang.txt")
    assert v.kind is Kind.INIT_STALL and v.rule == "start_up_unfinished"
    assert "btl component openib" in v.summary and "host server (pid 26717)" in v.summary
    assert fixes.for_verdict(v.kind, v.summary).cause == "set-up-step-unreturned"


def test_real_prte_daemon_launch_pending_is_an_init_stall():
    # openpmix/prrte#1488 (dev): the job reached PENDING DAEMON LAUNCH and nothing followed
    v = _file(WILD / "dv34-010-prte-daemon-launch-pending.txt")
    assert v.kind is Kind.INIT_STALL
    assert "PENDING DAEMON LAUNCH" in v.summary and "host login1" in v.summary and "ssh" in v.summary


def test_a_launch_that_reported_its_daemons_is_no_init_stall():
    assert _file(DATA / "prte-launch-states-running.txt").kind is not Kind.INIT_STALL


def test_a_component_init_then_steps_is_no_init_stall():
    assert _file(DATA / "mpi-verbose-btl-select-returned-then-steps.txt").kind is not Kind.INIT_STALL


def test_an_error_after_the_step_is_read_by_the_rules_of_errors():
    # (a program's own KeyError after an unfinished step: the step is not what failed)
    assert _file(DATA / "mpi-verbose-btl-select-then-error.txt").kind is Kind.CRASHED_RANK


# --- the runtimes' own words of a set-up that gave up --------------------------------------------------------------
@pytest.mark.parametrize("line, name", [
    ("[ERROR] HCCL(1,python):2026-03-18-10:33:52.113.403 [hccl_socket_manager.cc:797] [2][Wait][LinkEstablish]"
     "wait socket establish timeout, role[1] rank[1] timeout[120 s]", "hccl_link_establish_timed_out"),
    ("PRTE was unable to reliably start one or more daemons.", "orte_daemons_not_started"),
    ("ORTE was unable to reliably start one or more daemons.", "orte_daemons_not_started"),
    ("ORTE does not know how to route a message to the specified daemon", "orte_daemon_unrouted"),
    ("ConnectionError: ray client connection timeout", "ray_client_connect_timed_out"),
])
def test_the_runtimes_set_up_words_are_entries(line, name):
    assert sm.read(line)[0].name == name


def test_real_hccl_link_establish_timeout_is_rank_1s_init_stall():
    # the CANN HCCL guide's EI0006 sample log (dev, dv35-006)
    v = _file(WILD / "dv35-006-hccl-ei0006-socket-establish-timeout-rank1.txt")
    assert v.kind is Kind.INIT_STALL and v.ranks == [1]
    assert "wait socket establish timeout" in v.summary and "120 s" in v.summary
    assert fixes.for_verdict(v.kind, v.summary).cause == "hccl-link-timeout"


def test_hccl_link_timeout_names_the_rank_of_its_line():
    v = _file(DATA / "hccl-link-establish-timeout-rank3.txt")
    assert v.kind is Kind.INIT_STALL and v.ranks == [3]


def test_hccl_data_wait_of_a_collective_is_no_init_stall():
    # (EI0006's other reason: the link was up and the peer did not send a collective's data, dv13-046, dv20-012)
    assert _file(DATA / "not-hccl-ei0006-data-wait.txt").kind is not Kind.INIT_STALL


@pytest.mark.parametrize("name, said, cause", [
    ("prte-daemons-not-started.txt", "PRTE was unable to reliably start", "mpi-daemons"),
    ("ompi-daemon-unrouted.txt", "does not know how to route", "mpi-daemons"),
    ("ray-client-connect-timeout.txt", "ray client connection timeout", "ray-gcs"),
    ("oneccl-atl-init-transport.txt", "failed to init transport", "oneccl-transport"),
])
def test_the_runtimes_set_up_failures_are_init_stalls_with_their_fix(name, said, cause):
    v = _file(DATA / name)
    assert v.kind is Kind.INIT_STALL and said in v.summary
    assert fixes.for_verdict(v.kind, " ".join([v.summary, *map(str, v.evidence)])).cause == cause


@pytest.mark.parametrize("name, kind", [
    # (MPI_ERR_TRUNCATE: a receive smaller than its send, the ranks' counts differ: parsers/runtimes/collective_checks)
    ("not-mpi-allreduce-error-after-steps.txt", Kind.MISMATCH),
    ("not-orte-lost-daemon-after-steps.txt", Kind.CRASHED_RANK)])
def test_an_mpi_failure_after_work_began_is_no_init_stall(name, kind):
    assert _file(DATA / name).kind is kind


# --- a cut traceback's raising function ----------------------------------------------------------------------------
def test_a_cut_traceback_raised_in_a_rendezvous_handler_is_set_up():
    v = _file(DATA / "torchrun-cut-traceback-socket-timeout.txt")
    assert v.kind is Kind.INIT_STALL and v.rule == "undecided_in_set_up"
    assert "Socket Timeout" in v.summary and "creating a process group" in v.summary


def test_a_timeout_raised_outside_set_up_stays_undecided(tmp_path):
    v = _decide(tmp_path, "step 1 loss 2.0\n"
                          "  File \"/x/train.py\", line 80, in train_step\n"
                          "    batch = next(it)\n"
                          "RuntimeError: Socket Timeout\n")
    assert v.kind is not Kind.INIT_STALL


# --- what stays a crash ---------------------------------------------------------------------------------------------
def test_duplicate_gpu_stays_the_programs_crash():
    # (two ranks placed on one device by the launch: dv6-007's label accepts no init-stall)
    for name in ("dv6-007-lrgt-nccl-duplicate-gpu-rank0-rank1.txt", "dev-082-verl-duplicate-gpu-rank1-rank0.txt"):
        v = _file(WILD / name)
        assert v.kind is Kind.CRASHED_RANK and "Duplicate GPU" in v.summary and v.ranks == [0, 1]


def test_a_programs_error_while_nccl_init_is_unfinished_stays_a_crash(tmp_path):
    v = _decide(tmp_path, "node1:100:100 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 "
                          "busId 1000 - Init START\n"
                          "Traceback (most recent call last):\n"
                          "  File \"/x/data.py\", line 12, in load\n"
                          "    cfg = table['dataset']\n"
                          "KeyError: 'dataset'\n")
    assert v.kind is Kind.CRASHED_RANK


# --- never INIT_STALL where set-up is not what waits or fails ------------------------------------------------------
def test_a_coordination_barrier_of_start_up_is_an_init_stall():
    v = _file(DATA / "jax-pjrt-client-connect-barrier-timeout.txt")
    assert v.kind is Kind.INIT_STALL and "PjRT_Client_Connect" in v.summary


def test_a_coordination_barrier_of_a_job_that_ran_is_no_init_stall():
    # (JAX's sync_global_devices barrier: the job had its peers)
    assert _file(DATA / "not-jax-sync-global-devices-barrier-timeout.txt").kind is not Kind.INIT_STALL


def test_grpc_unreached_beside_a_peers_missed_heartbeat_is_no_init_stall():
    assert _file(DATA / "not-jax-grpc-unavailable-after-heartbeat-timeout.txt").kind is not Kind.INIT_STALL


@pytest.mark.parametrize("line", [
    "[rank0]:[E ProcessGroupNCCL.cpp:1500] [PG 0 Rank 0] Process group watchdog thread terminated with exception: "
    "unknown error",
    "NCCL communicator was aborted on rank 1, error: remote process exited",
])
def test_process_group_or_communicator_words_alone_are_not_set_up(line):
    import re
    from tracekit.set_up_rekind import SET_UP_WORDS
    assert not re.search(SET_UP_WORDS, line)


@pytest.mark.parametrize("line", [
    "[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] NCCL communicator init timed out after 600000 ms.",
    "RuntimeError: Gloo context initialization failed: Timed out waiting for key",
    "ERROR: failed to connect to the master at 10.0.0.1:29500",
])
def test_a_set_up_steps_own_words_are_set_up(line):
    import re
    from tracekit.set_up_rekind import SET_UP_WORDS
    assert re.search(SET_UP_WORDS, line)


# --- more frameworks' set-up frames -------------------------------------------------------------------------------
@pytest.mark.parametrize("where, runtime", [
    ("launch_from_torch (/x/colossalai/initialize.py:200)", "colossalai"),
    ("_setup_devices (/x/transformers/training_args.py:1764)", "transformers"),
    ("init (/x/mindspore/communication/management.py:150)", "mindspore"),
    ("init (/x/paddle/distributed/fleet/fleet.py:200)", "paddle"),
    ("_initialize_workers (/x/torch/distributed/elastic/agent/server/api.py:700)", "torch"),
])
def test_more_frameworks_set_up_frames_are_known(where, runtime):
    from tracekit import start_up_frames
    assert start_up_frames.frame_of(where).runtime == runtime


def test_an_init_frame_of_another_package_is_no_set_up_frame():
    from tracekit import start_up_frames
    assert start_up_frames.frame_of("init (/x/mylib/config.py:10)") is None
    assert start_up_frames.frame_of("_setup_devices (/x/mylib/devices.py:10)") is None


# --- HCCL's consistency check (EI0005) ----------------------------------------------------------------------------
def test_real_hccl_ei0005_count_inconsistency_is_a_mismatch_with_both_counts():
    # the CANN HCCL guide's EI0005 sample (dev, dv35-012): rank 4's all-reduce count differs from its peer's
    v = _file(WILD / "dv35-012-hccl-ei0005-allreduce-count-mismatch.txt")
    assert v.kind is Kind.MISMATCH
    assert "HcomAllReduce" in v.summary and "local 16512, remote 8320" in v.summary


def test_hccl_ei0005_without_its_tag_still_says_the_check_failed(tmp_path):
    v = _decide(tmp_path, "EI0005: 2024-04-24-06:32:27.781.599 The arguments for collective communication are "
                          "inconsistent between ranks\n")
    assert v.kind is Kind.MISMATCH and "consistency check" in v.summary


# --- the crash's files say more than its own line ----------------------------------------------------------------
def test_an_out_of_memory_under_a_bare_runtime_error_in_set_up_stays_a_crash():
    # PaddleNLP (dev, dv37-019): init_parallel_env's barrier raised `RuntimeError:`; Paddle's Error Message
    # Summary under it says `Out of memory error on GPU 3`: the device's, not set-up's
    v = _file(WILD / "dv37-019-paddlenlp-init-barrier-oom-gpu3.txt")
    assert v.kind is Kind.CRASHED_RANK


def test_a_process_stopped_while_its_placement_group_waited_is_an_init_stall():
    # vLLM on Ray (dev, dv36-009): placement-group waits of 10..150 s, then SIGTERM and a CancelledError
    v = _file(WILD / "dv36-009-vllm-tp4-ray-placement-group-wait.txt")
    assert v.kind is Kind.INIT_STALL and "placement group" in v.summary
