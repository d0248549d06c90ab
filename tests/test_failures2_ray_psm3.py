"""Issue 31 (failures2): Ray's word that a worker died is that worker's crash where no collective timed out,
naming the worker (ip, pid) and Ray's exit type (github:ray-project/ray src/ray/raylet/node_manager.cc,
python/ray/exceptions.py); libfabric's PSM3 endpoint error printed by an MPI rank is the transport's failure,
and the SIGABRT MPI raises after it is its consequence (github:ofiwg/libfabric prov/psm3)."""

from __future__ import annotations

from tests.factory import events_of as kinds
from tests.factory import text_store as store_of
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide


# the raylet's report (node_manager.cc), as Ray's log monitor pushes it to the driver under `(raylet)`
RAYLET = ("(raylet) A worker died or was killed while executing a task by an unexpected system error. "
          "To troubleshoot the problem, check the logs for the dead worker. RayTask ID: "
          "ffffffffffffffff9697576811089192d478044801000000 Worker ID: "
          "fa30bc39b193709af627f4217b9fda48f637379f135aadd5c4e8d12e Node "
          "ID: 077b4d57b1d8eb65baa427ab8b008991673f442e6639386460c71c2e "
          "Worker IP address: 10.112.9.31 Worker "
          "port: 38471 Worker PID: 3566775 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker "
          "unexpectedly exits with a connection error code 2. End of file. There are some potential root "
          "causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop "
          "--force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected "
          "errors.\n")
# the core worker, as a call on the dead actor fails
ACTOR = ("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR "
         "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file.\n")
TRAINING = "(WorkerDict pid=3566775) before init cache memory allocated: 5.96926464GB, reserved: 6.07GB\n"
WATCHDOG = ("(WorkerDict pid=833, ip=172.26.153.33) [rank62]:[E809 14:59:33.656957424 ProcessGroupNCCL.cpp:"
            "629] [Rank 62] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, "
            "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600009 milliseconds before timing out.\n")


def test_raylet_worker_death_is_that_workers_crash(tmp_path):
    v = decide(store_of(tmp_path, TRAINING + RAYLET))
    assert v.kind == Kind.CRASHED_RANK
    assert "pid 3566775 on 10.112.9.31" in v.summary and "SYSTEM_ERROR" in v.summary


def test_core_worker_actor_dead_is_a_crash_with_its_exit_type(tmp_path):
    v = decide(store_of(tmp_path, ACTOR))
    assert v.kind == Kind.CRASHED_RANK and "Worker exit type SYSTEM_ERROR" in v.summary


def test_the_actor_callers_word_and_the_raylets_are_told_with_the_worker(tmp_path):
    v = decide(store_of(tmp_path, ACTOR + RAYLET))
    assert v.kind == Kind.CRASHED_RANK and "pid 3566775 on 10.112.9.31" in v.summary


def test_worker_death_after_a_collective_timeout_is_not_the_cause(tmp_path):
    # Ray's log dedup reorders lines: the watchdog's timeout may print after the raylet's report, and the
    # worker's death may then be the watchdog's abort: the death alone does not make it a crash
    for text in (RAYLET + WATCHDOG, WATCHDOG + RAYLET, RAYLET + WATCHDOG[:170] + "\n"):
        v = decide(store_of(tmp_path, text))
        assert not (v.kind == Kind.CRASHED_RANK and "Ray worker" in v.summary), (text[-60:], v.summary)


# nccl-tests under Open MPI over libfabric's PSM3 provider: rank 0 (on proton) cannot read rank 1's address,
# and Open MPI's OFI MTL aborts rank 1 (on neutron); their output interleaves
PSM3 = ("[neutron-nvidia:820212] mtl_ofi_endpoint.h:49: *** The Open MPI OFI MTL is aborting the MPI job "
        "(via exit(3)).\n"
        "[neutron-nvidia:820212] *** Process received signal ***\n"
        "[neutron-nvidia:820212] Signal: Aborted (6)\n"
        "[neutron-nvidia:820212] Signal code:  (-6)\n"
        "[neutron-nvidia:820212] [ 5] proton-nvidia:rank0:  Mismatched address format: "
        "remote EP (Invalid Fmt): "
        "Unknown (2) Local EP: IPv4 (4)\n"
        "Confirm all nodes are running the same interconnect HW, addressing format and PSM version\n"
        "[neutron-nvidia:820212] *** End of error message ***\n")


def test_psm3_endpoint_error_is_a_transport_error_of_its_host_and_rank(tmp_path):
    s = store_of(tmp_path, PSM3)
    errs = kinds(s, EventKind.TRANSPORT_ERROR)
    assert errs.select("host", "rank").rows() == [("proton-nvidia", 0)]
    assert "Mismatched address format" in errs["message"][0]


def test_mpi_abort_after_an_endpoint_error_is_the_transports(tmp_path):
    v = decide(store_of(tmp_path, PSM3))
    assert v.kind == Kind.TRANSPORT_ERROR and "Mismatched address format" in v.summary


def test_an_abort_without_an_endpoint_error_stays_a_crash(tmp_path):
    alone = "".join(line + "\n" for line in PSM3.splitlines()
                    if "rank0" not in line and "Confirm" not in line)
    v = decide(store_of(tmp_path, alone))
    assert v.kind == Kind.CRASHED_RANK
