"""The other communication runtimes' own lines (issue 31), read by parsers/salient.py and decided by
rules_salient.py: a start-up that never reached its coordinator (PyTorch/XLA's mesh master, the JAX and
TensorFlow coordination service), a transport NVSHMEM, UCX, libfabric/oneCCL, PSM3 or a transfer engine
could not set up or use, an MPI library that could not initialise. Each family on lines as the code that
prints them writes them (the source named at each), with the benign context that must not count."""

from __future__ import annotations

import pytest

from tests.factory import make_store
from tracekit import ingest, verdict
from tracekit.outcome import Kind
from tracekit.parsers import salient


def _decide(tmp_path, lines: list[str], name: str = "job.log"):
    log = tmp_path / name
    log.write_text("\n".join(lines) + "\n")
    return verdict.decide(ingest.ingest([log]))


# PyTorch/XLA's XRT mesh client (torch_xla/csrc/runtime or xla_client/mesh_service.cc: TF_LOG(INFO) "Waiting
# to connect to client mesh master (300 seconds) " << address; XLA_CHECK(WaitForConnected(...)) << "Failed to
# connect to client mesh master: " << address)
MESH = [
    "2021-09-02 17:11:08.317211: I tensorflow/compiler/xla/xla_client/mesh_service.cc:228] Waiting to connect "
    "to client mesh master (300 seconds) 10.128.0.7:8477",
    "2021-09-02 17:16:08.318090: F tensorflow/compiler/xla/xla_client/mesh_service.cc:235] Check failed: "
    "impl_->channel->WaitForConnected( std::chrono::system_clock::now() + std::chrono::seconds("
    "connect_wait_seconds)) Failed to connect to client mesh master: 10.128.0.7:8477",
]
# the coordination service client of JAX and TensorFlow (xla/pjrt/distributed/client.cc: "Coordination service
# agent in error status: " << status; the gRPC client's RegisterTask RPC)
COORDINATION = [
    "2024-05-02 08:14:11.120331: E external/xla/xla/pjrt/distributed/client.cc:96] Coordination service agent "
    "in error status: DEADLINE_EXCEEDED: Deadline Exceeded",
    "Additional GRPC error information from remote target unknown_target_for_coordination_leader while "
    "calling /tensorflow.CoordinationService/RegisterTask:",
]


@pytest.mark.parametrize("lines,fact", [(MESH, "at 10.128.0.7:8477"), (COORDINATION, "DEADLINE_EXCEEDED")])
def test_a_start_up_that_never_reaches_its_coordinator_is_an_init_stall(tmp_path, lines, fact):
    v = _decide(tmp_path, lines)
    assert (v.kind, v.rule) == (Kind.INIT_STALL, "coordinator_unreached")
    assert "never reached its coordinator" in v.summary and fact in v.summary


def test_a_coordinator_line_after_steps_or_a_shutdown_barrier_is_no_init_stall(tmp_path):
    v = _decide(tmp_path, [
        "step 100, loss 2.31", "step 110, loss 2.27",
        "E0501 10:00:00.000000 1234 coordination_service_agent.cc:600] Shutdown barrier timed out. "
        "Barrier_id: Shutdown::123"])
    assert v.kind is not Kind.INIT_STALL
    v = verdict.decide(make_store(events=[
        dict(file="job.log", line=1, kind="telling_line", where="error",
             message="Shutdown barrier timed out. Barrier_id: Shutdown::123")]))
    assert v.kind is not Kind.INIT_STALL


# NVSHMEM (src/host/transport/transport.cpp: NVSHMEMI_ERROR_PRINT("init failed for transport: IBGDA"),
# "Unable to initialize any transports. returning error."; modules/transport/ibgda/ibgda.cpp)
NVSHMEM = [
    "/tmp/nvshmem_src/src/modules/transport/ibgda/ibgda.cpp 3888 no active IB device that supports "
    "GPU-initiated communication is found, exiting...",
    "/tmp/nvshmem_src/src/host/transport/transport.cpp:nvshmemi_transport_init:282: init failed for "
    "transport: IBGDA",
    "/tmp/nvshmem_src/src/host/transport/transport.cpp:nvshmemi_transport_init:287: Unable to initialize any "
    "transports. returning error.",
]


def test_an_nvshmem_transport_that_could_not_be_set_up_is_a_transport_error_naming_it(tmp_path):
    v = _decide(tmp_path, NVSHMEM)
    assert (v.kind, v.rule) == (Kind.TRANSPORT_ERROR, "said_by_telling_lines")
    assert "transport IBGDA" in v.summary or "transport ibgda" in v.summary


def test_nvshmem_init_failure_the_run_went_on_after_decides_nothing(tmp_path):
    """NVSHMEM goes on with its other transports where one fails (status = 0): a run that steps after it
    is no transport error."""
    v = _decide(tmp_path, NVSHMEM[1:2] + ["step 1, loss 2.31", "step 2, loss 2.29"])
    assert v.kind is not Kind.TRANSPORT_ERROR


# Mooncake's transfer engine client (mooncake-store/src/client.cpp: LOG(ERROR) << "Transfer failed for task"
# << i; LOG(WARNING) << "Transfer incomplete, retrying... (attempt " ...; LOG(ERROR) << "transfer_incomplete
# max_attempts=" ...)
MOONCAKE_RETRIED = [
    "E1104 10:00:00.100000   311 client.cpp:444] Transfer failed for task1",
    "W1104 10:00:00.100010   311 client.cpp:450] Transfer incomplete, retrying... (attempt 1/3)",
]


def test_a_transfer_engine_that_gives_up_is_a_transport_error(tmp_path):
    v = _decide(tmp_path, MOONCAKE_RETRIED + [
        "E1104 10:00:00.110000   311 client.cpp:444] Transfer failed for task1",
        "E1104 10:00:00.130000   311 client.cpp:460] transfer_incomplete max_attempts=3",
        "E1104 10:00:00.130500   311 store_py.cpp:367] Put operation failed with error: TRANSFER_FAIL"])
    assert v.kind is Kind.TRANSPORT_ERROR
    assert "transfer_incomplete" in v.summary or "TRANSFER_FAIL" in v.summary


def test_a_failed_transfer_that_is_retried_decides_nothing(tmp_path):
    v = _decide(tmp_path, MOONCAKE_RETRIED)
    assert v.kind is not Kind.TRANSPORT_ERROR


# UCX's logger (ucs/debug/log.c) on lines parsers/runtimes claims for their host and pid (uct/rocm/ipc/
# rocm_ipc_md.c: ucs_error("Failed to create ipc for %p/%zx", ...); ucp/rndv/rndv.c's ucs_assert)
def test_a_ucx_error_on_a_line_a_parser_claimed_is_a_transport_error_before_its_assertion(tmp_path):
    """UCX's ``Failed to create ipc`` then its rndv assertion: the transport failed first, the abort
    follows."""
    v = _decide(tmp_path, [
        "[1768218704.881578] [nic5-w020:837662:0]  rocm_ipc_md.c:79   UCX  ERROR Failed to create ipc for "
        "0x7f2a01200000/100000",
        "[nic5-w020:837662:0:837662]        rndv.c:2360 Assertion `status == UCS_OK' failed"])
    assert (v.kind, v.rule) == (Kind.TRANSPORT_ERROR, "said_by_telling_lines")
    assert "nic5-w020" in v.summary


def test_ucxs_memtype_cache_error_is_no_transport_failure(tmp_path):
    """``failed to insert region ... Element already exists``: the memory-type cache's noise, which users
    silence with UCX_MEMTYPE_CACHE=n."""
    v = _decide(tmp_path, [
        "[1768218704.881578] [nic5-w020:837662:0]   rcache.c:887  UCX  ERROR failed to insert region 0x58d9f30 "
        "[0x48ace40..0x48fff40]: Element already exists"])
    assert v.kind is not Kind.TRANSPORT_ERROR


# oneCCL over libfabric (src/atl/ofi/atl_ofi_helper.cpp: CCL_THROW/LOG_ERROR "fi_getinfo error")
def test_oneccls_ofi_transport_error_is_a_transport_error(tmp_path):
    v = _decide(tmp_path, [
        "2026:06:13-20:51:02 |CCL_INFO| libfabric version: 2.2.0-impi_2021.17.2",
        "2026:06:13-20:51:02 |CCL_ERROR| atl_ofi_helper.cpp:1118 atl_ofi_get_prov_list: fi_getinfo error: "
        "ret -61, providers 0"])
    assert v.kind is Kind.TRANSPORT_ERROR and "atl_ofi" in v.summary


# PSM3 (psm3/ptl_am/ptl.c: psmi_assert; its prefix `host:rankN.exe:` or `rankN:`)
def test_a_psm3_assertion_is_a_crash_of_the_rank_its_prefix_names(tmp_path):
    v = _decide(tmp_path, [
        "[1711969312.876606027] rank4.python: Reading from remote process' memory failed. Disabling CMA "
        "support",
        "[1] DUT7113ATSM:rank1: Assertion failure at psm3/ptl_am/ptl.c:210: nbytes == "
        "req->req_data.recv_msglen"])
    assert (v.kind, v.ranks) == (Kind.CRASHED_RANK, [1])
    assert "psm3/ptl_am/ptl.c:210" in v.summary


def test_psms_cma_fallback_alone_decides_nothing(tmp_path):
    v = _decide(tmp_path, ["[1711969312.876606027] rank4.python: Reading from remote process' memory failed. "
                           "Disabling CMA support"])
    assert v.kind is Kind.UNDECIDED


# Open MPI's error handler (ompi/errhandler/errhandler_predefined.c: "*** An error occurred in %s", "*** on a
# NULL communicator", "*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,")
def test_an_mpi_that_could_not_initialise_is_a_process_that_could_not_start(tmp_path):
    v = _decide(tmp_path, [
        "  ompi_mpi_init: ompi_rte_init failed",
        "  --> Returned \"No permission\" (-17) instead of \"Success\" (0)",
        "*** An error occurred in MPI_Init_thread",
        "*** on a NULL communicator",
        "*** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,",
        "***    and potentially your MPI job)",
        "[sh02-01n57.int:73239] Local abort before MPI_INIT completed completed successfully, but am not able "
        "to aggregate error messages, and not able to guarantee that all other processes were killed!"])
    # (s25: MPI_Init's failure is set-up that never completed, issue 31's "an init failure called a crash";
    # the crash read from its words, re-kinded by rules_set_up.failed_in_set_up)
    assert (v.kind, v.rule) == (Kind.INIT_STALL, "failed_in_set_up")
    assert "could not start" in v.summary and "MPI_Init" in v.summary and "set-up" in v.summary


def test_pmix_errors_before_a_job_that_starts_are_no_crash(tmp_path):
    """PMIx's ``PMIX ERROR: ERROR in file gds_ds12_lock_pthread.c`` is printed by jobs that then run."""
    v = _decide(tmp_path, [
        "[node1:400139] PMIX ERROR: ERROR in file ../../../../../../src/mca/gds/ds12/gds_ds12_lock_pthread.c "
        "at line 169",
        "step 1, loss 2.31", "step 2, loss 2.29"])
    assert v.kind is not Kind.CRASHED_RANK


@pytest.mark.parametrize("line", [
    "INFO IBGDA Disabled by the environment.",
    "W1104 10:00:00.100010   311 client.cpp:450] Transfer incomplete, retrying... (attempt 1/3)",
])
def test_runtime_words_in_benign_context_are_no_transport_failure(tmp_path, line):
    v = _decide(tmp_path, [line])
    assert v.kind is not Kind.TRANSPORT_ERROR


def test_either_keeps_each_patterns_own_case_rule():
    import re
    joined = salient.either(r"(?i)failed to connect to", r"(?-i:\bTRANSFER_FAIL\b)", r"Killed")
    assert re.search(joined, "FAILED TO CONNECT TO x") and re.search(joined, "TRANSFER_FAIL")
    assert not re.search(joined, "transfer_fail") and not re.search(joined, "killed")


# TensorFlow's master (core/distributed_runtime/master.cc: "CreateSession still waiting for response from
# worker: " << worker_name), on lines a glog parser claims
TF_WAIT = ("2023-01-01 10:00:{:02d}.000: I tensorflow/core/distributed_runtime/master.cc:272] CreateSession still "
           "waiting for response from worker: /job:worker/replica:0/task:1")


def test_a_start_up_wait_for_a_worker_said_again_is_an_init_stall(tmp_path):
    v = _decide(tmp_path, [TF_WAIT.format(0), TF_WAIT.format(10)])
    assert v.kind is Kind.INIT_STALL and "/job:worker/replica:0/task:1" in v.summary
    v = _decide(tmp_path, [TF_WAIT.format(0)], name="once.log")
    assert v.kind is Kind.UNDECIDED


# MPICH (src/mpi/init: "Fatal error in PMPI_Init_thread: Other MPI error, error stack:", its Abort line)
def test_mpichs_init_failure_names_the_rank_that_could_not_start(tmp_path):
    v = _decide(tmp_path, [
        "Abort(1091471) on node 0 (rank 0 in comm 0): Fatal error in PMPI_Init_thread: Other MPI error, error "
        "stack:", "MPIR_Init_thread(703)........:", "MPID_Init(958)...............:"])
    assert (v.kind, v.ranks) == (Kind.INIT_STALL, [0]) and "MPI library failed to initialise" in v.summary


def _told(where: str, message: str, line: int, **more) -> dict:
    return dict(file="job.log", line=line, kind="telling_line", where=where, message=message, **more)


def test_factory_a_coordinator_never_reached_but_an_nccl_init_completed_is_no_init_stall():
    """A communicator that completed its init shows start-up connected: the coordinator line decides nothing."""
    unreached = _told("error", "Failed to connect to client mesh master: 10.0.0.5:8477", 1)
    assert verdict.decide(make_store(events=[unreached])).kind is Kind.INIT_STALL
    v = verdict.decide(make_store(
        events=[unreached],
        comms=[dict(file="job.log", line=9, host="n1", pid=7, comm="0xab", rank=0, nranks=2,
                    state="init_complete")]))
    assert v.kind is not Kind.INIT_STALL


def test_factory_a_transport_failure_first_explains_a_crash_after_it_in_its_file():
    """Causation: the transport's own failure comes first in time; the abort after it is its consequence,
    and a crash before it in its file is not overruled."""
    fail = _told("transport", "init failed for transport: IBGDA", 3, pid=11)
    crash = _told("crash", "Segmentation fault (core dumped)", 5, pid=11)
    assert verdict.decide(make_store(events=[fail, crash])).kind is Kind.TRANSPORT_ERROR
    early = dict(crash, line=1)
    assert verdict.decide(make_store(events=[early, fail])).kind is Kind.CRASHED_RANK


# JAX's distributed client (xla/pjrt/distributed/client.cc: WaitAtBarrier("PjRT_Client_Connect", ...);
# tsl's coordination_service_agent.cc: LOG(ERROR) << "Coordination agent is set to ERROR: " << error), where
# the torch parser reads the raised error as a timeout and a socket refused as a transport error
@pytest.mark.parametrize("lines,fact", [
    (["Traceback (most recent call last):", '  File "/app/train.py", line 12, in <module>',
      "    jax.distributed.initialize()",
      "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: "
      "PjRT_Client_Connect. Timed out task names:", "/job:jax_worker/replica:0/task:3"], "PjRT_Client_Connect"),
    (["E0101 10:00:00.000000  123 coordination_service_agent.cc:332] Coordination agent is set to ERROR: "
      "UNAVAILABLE: failed to connect to all addresses; last error: UNKNOWN: ipv4:10.0.0.9:1234: Failed to "
      "connect to remote host: Connection refused"], "at 10.0.0.9:1234"),
])
def test_jaxs_connect_barrier_or_an_unreachable_coordinator_is_an_init_stall_before_decoded_waits(
        tmp_path, lines, fact):
    v = _decide(tmp_path, lines)
    assert (v.kind, v.rule) == (Kind.INIT_STALL, "coordinator_unreached")
    assert fact in v.summary
