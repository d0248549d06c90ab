"""Set-up waits of every launcher and runtime, and failures in set-up, are INIT_STALL saying the step, the time
waited, the address and the error (session 27, issue 31: "decide where an expert decides", "an init failure
called a crash" and "bootstrap failures called transport errors" are wrong kinds):

- ``start_up_messages``: Horovod's launcher giving up on a host's task (`Launching horovodrun task function was
  not successful`) and its Timeout's check (`check_time_out_for('tasks to start')`), Gloo's rendezvous store
  timing out (Horovod's HTTP store, Gloo's own), Paddle's endpoint wait (`server not ready, wait 3 sec to
  retry`), torchelastic's etcd keep-alive that expired, Ray's GCS unreachable and MPICH Hydra's connect; read
  by ``rules_init.start_up_said``, which says the limit, the entries said with it and the error printed under
  it;
- ``set_up_rekind.undecided_in_set_up``: a communicator's error (`NCCL error: unhandled system error`) beside a
  line naming its set-up (vLLM's `Error executing method 'init_device'`) where the traceback between is cut;
- ``rules_set_up.SET_UP``: set-up failures read as crashes that the re-kind (``set_up_rekind.failed_in_set_up``)
  now sees: Open MPI's orted that never reported back and its BML finding no transport, Gloo's device creation,
  TensorFlow's gRPC server start;
- the split of ``rules_set_up`` (``set_up_rekind``) and ``start_up_messages`` (``start_up_frames``).
"""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit import rules_set_up, set_up_rekind, start_up_frames, start_up_messages as sm
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"
DATA = ROOT / "tests" / "data" / "s27_starts"

# horovodrun's launch of its task servers over ssh (horovod/runner/driver/driver_service.py), the host's stderr
# printed under it (dv24-013's shape, horovod#1226)
TASK_LAUNCH = ("Checking ssh on all remote hosts.\n"
               "SSH was successful into all the remote hosts.\n"
               "Launched horovodrun server.\n"
               "Attempted to launch horovod task servers.\n"
               "Waiting for the hosts to acknowledge.\n"
               "Launching horovodrun task function was not successful:\n"
               "ssh: connect to host 10.0.0.7 port 2222: Connection refused\n")
# Horovod's Timeout raised from its check, the exception's own line cut (horovod/runner/common/util/timeout.py)
TIMEOUT_CHECKED = ("Traceback (most recent call last):\n"
                   "  File \"/usr/lib/python3/site-packages/horovod/runner/task_fn.py\", line 31, in _task_fn\n"
                   "    task.wait_for_initial_registration(settings.timeout)\n"
                   "  File \"/usr/lib/python3/site-packages/horovod/runner/common/service/task_service.py\", line "
                   "110, in wait_for_initial_registration\n"
                   "    timeout.check_time_out_for('tasks to start')\n"
                   "  File \"/usr/lib/python3/site-packages/horovod/runner/common/util/timeout.py\", line 32, in "
                   "check_time_out_for\n"
                   "    raise Exception(self._message.format(activity=activity))\n")
# Horovod's Gloo rendezvous through its HTTP store (horovod/common/gloo/http_store.cc:57)
GLOO_STORE = ("terminate called after throwing an instance of 'gloo::IoException'\n"
              "  what():  [horovod/common/gloo/http_store.cc:57] Wait timeout after 45 seconds for key(s): 3. You "
              "may want to increase the timeout via HOROVOD_GLOO_TIMEOUT_SECONDS\n")
# Paddle's wait_server_ready (fleet/base/private_helper_function.py)
PADDLE_WAIT = ("server not ready, wait 3 sec to retry...\n"
               "not ready endpoints:['10.1.2.3:6170']\n")
# torchelastic's etcd rendezvous (torchelastic/rendezvous/etcd_rendezvous.py)
ETCD = ("INFO 2020-08-03 07:53:06,890 Attempting to join next rendezvous\n"
        "INFO 2020-08-03 07:53:06,988 Added self to waiting list. Rendezvous full state: {\"status\": \"final\"}\n"
        "INFO 2020-08-03 07:53:06,990 Keep-alive key /torchelastic/p2p/run_x/rdzv/v_3/rank_1 is not renewed.\n")
# MPICH Hydra's mpiexec (src/pm/hydra/lib/utils/sock.c)
HYDRA = ("[mpiexec@node1] HYDU_sock_connect (utils/sock/sock.c:145): unable to connect from \"node1\" to \"node2\" "
         "(No route to host)\n"
         "[mpiexec@node1] main (ui/mpich/mpiexec.c:340): process manager error waiting for completion\n")
# vLLM's worker wrapper over a traceback the paste cut (dv28-014's shape), and the same with a CUDA error
INIT_DEVICE = ("Error executing method 'init_device'. This might cause deadlock in distributed execution.\n"
               "Traceback (most recent call last):\n"
               "...\n"
               " RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n")


# Open MPI's help texts, wrapped at 70 columns as it prints them (orte/mca/plm help-plm-base.txt; ompi/mca/bml/r2
# help-mca-bml-r2.txt, then the MPI_Init error of ompi/runtime)
ORTED = ("--------------------------------------------------------------------------\n"
         "An ORTE daemon has unexpectedly failed after launch and before\n"
         "communicating back to mpirun. This could be caused by a number\n"
         "of factors, including an inability to create a connection back\n"
         "to mpirun due to a lack of common network interfaces and/or no\n"
         "route found between them. Please check network connectivity\n"
         "(including firewalls and network routing requirements).\n"
         "--------------------------------------------------------------------------\n")
BML = ("At least one pair of MPI processes are unable to reach each other for\n"
       "MPI communications.  This means that no Open MPI device has indicated\n"
       "that it can be used to communicate between these processes.\n"
       "  Process 1 ([[20175,1],0]) is on host: node01\n"
       "  Process 2 ([[20175,1],1]) is on host: node02\n"
       "Your MPI job is now going to abort; sorry.\n"
       "[node01:12345] *** An error occurred in MPI_Init\n"
       "[node01:12345] *** on a NULL communicator\n")
# Gloo's device (gloo/transport/tcp/device.cc), made as its process group is, the traceback's set-up frames cut
GLOO_DEVICE = ("Traceback (most recent call last):\n"
               "  File \"train.py\", line 20, in <module>\n"
               "    main()\n"
               "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
               "Unable to find address for: eth1\n")
# TensorFlow's gRPC server start (tensorflow/core/distributed_runtime/rpc/grpc_server_lib.cc)
TF_GRPC = ("2021-03-01 10:00:00.223456: E tensorflow/core/distributed_runtime/rpc/grpc_server_lib.cc:578] UNKNOWN: "
           "Could not start gRPC server\n"
           "Traceback (most recent call last):\n"
           "  File \"train.py\", line 30, in <module>\n"
           "    strategy = tf.distribute.MultiWorkerMirroredStrategy()\n"
           "tensorflow.python.framework.errors_impl.UnknownError: Could not start gRPC server\n")


def _verdict(tmp_path, text):
    return decide(text_store(tmp_path, text))


def test_horovod_task_launch_failed_says_the_host_error(tmp_path):
    v = _verdict(tmp_path, TASK_LAUNCH)
    assert v.kind is Kind.INIT_STALL
    assert "Horovod gave up on its task server on each host" in v.summary
    assert "ssh: connect to host 10.0.0.7 port 2222: Connection refused" in v.summary
    assert "nc -zv" in v.summary


def test_horovod_timeout_check_names_what_it_waited_for(tmp_path):
    v = _verdict(tmp_path, TIMEOUT_CHECKED)
    assert v.kind is Kind.INIT_STALL
    assert "check_time_out_for('tasks to start')" in v.summary
    assert "--start-timeout" in v.summary


def test_gloo_store_timeout_says_its_limit(tmp_path):
    v = _verdict(tmp_path, GLOO_STORE)
    assert v.kind is Kind.INIT_STALL
    assert "Gloo waited past its limit" in v.summary
    assert "(its limit: 45 s)" in v.summary
    assert "key(s): 3" in v.summary


def test_paddle_endpoint_wait_says_the_endpoint_and_the_retry(tmp_path):
    v = _verdict(tmp_path, PADDLE_WAIT)
    assert v.kind is Kind.INIT_STALL
    assert "at 10.1.2.3:6170" in v.summary
    assert "it retries every 3 s" in v.summary
    assert "NCCL (2.10" not in v.summary  # (NCCL's own retry wording is NCCL's only)


def test_paddle_endpoint_wait_then_steps_is_no_init_stall(tmp_path):
    # (real logs show the wait once before a run that goes on: Paddle#29200)
    steps = "".join(f"epoch: 0, step: {i}, loss: {2.0 - i / 10:.3f}, lr: 0.001\n" for i in range(1, 30))
    v = _verdict(tmp_path, PADDLE_WAIT + steps)
    assert v.kind is not Kind.INIT_STALL


def test_etcd_keep_alive_expired(tmp_path):
    v = _verdict(tmp_path, ETCD)
    assert v.kind is Kind.INIT_STALL
    assert "torchelastic waited past its limit" in v.summary
    assert "/torchelastic/p2p/run_x/rdzv/v_3/rank_1" in v.summary


def test_hydra_connect_failed(tmp_path):
    v = _verdict(tmp_path, HYDRA)
    assert v.kind is Kind.INIT_STALL
    assert "MPICH Hydra gave up on its proxy" in v.summary
    assert "at node2" in v.summary


def test_nccl_error_beside_init_device_is_set_up(tmp_path):
    v = _verdict(tmp_path, INIT_DEVICE)
    assert v.kind is Kind.INIT_STALL
    # (s31: the exception line, indented as vLLM's wrapper prints it, is read: NCCL's code rule for a set-up
    # call, rules_set_up.nccl_code_in_set_up through nccl_error_unexplained, takes it before the words do)
    assert v.rule in ("undecided_in_set_up", "nccl_error_unexplained")
    assert "unhandled system error" in v.summary and "init_device" in v.summary
    assert "NCCL_DEBUG=INFO" in v.summary and "shm-size" not in (v.fix or "")
    assert "NCCL_DEBUG_SUBSYS=INIT,NET" in v.summary


def test_cuda_error_beside_init_device_stays_the_ranks(tmp_path):
    # (a device fault in set-up is the rank's own: rules_set_up.DEVICE_FAULT)
    v = _verdict(tmp_path, INIT_DEVICE.replace("unhandled system error", "unhandled cuda error"))
    assert v.kind is not Kind.INIT_STALL


@pytest.mark.parametrize("text, step", [
    (ORTED, "An ORTE daemon has unexpectedly failed after launch (MPI's start-up"),
    (BML, "MPI's start-up"),
    (GLOO_DEVICE, "Gloo's device creation"),
    (TF_GRPC, "TensorFlow's gRPC server start"),
])
def test_set_up_failures_read_as_crashes_are_set_up(tmp_path, text, step):
    v = _verdict(tmp_path, text)
    assert v.kind is Kind.INIT_STALL
    assert v.rule == "failed_in_set_up"
    assert step in v.summary


def test_an_oom_in_set_up_stays_a_crash(tmp_path):
    # (a device fault in set-up is the rank's own, whatever set-up step is named: rules_set_up.DEVICE_FAULT)
    v = _verdict(tmp_path, GLOO_DEVICE.replace("ifa != nullptr. Unable to find address for: eth1",
                                               "CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert v.kind is not Kind.INIT_STALL


def test_the_split_modules_keep_their_names():
    assert start_up_frames.frame_of is start_up_frames.frame_of and start_up_frames.UNPLACED is start_up_frames.UNPLACED
    assert set_up_rekind.unfinished is rules_set_up.unfinished
    assert callable(set_up_rekind.failed_in_set_up) and callable(set_up_rekind.undecided_in_set_up)


@pytest.mark.parametrize("name, fix", [
    ("dv27-001-paddle-fleet-gloo-server-not-ready.txt", "PADDLE_TRAINER_ENDPOINTS"),
    ("dv27-004-horovod-ray-gloo-httpstore-wait-timeout.txt", "HOROVOD_GLOO_TIMEOUT_SECONDS"),
    ("dv24-013-horovodrun-task-launch-refused.txt", "horovodrun -p"),
    ("dv27-007-torchelastic-etcd-rdzv-stale-keepalive.txt", "--rdzv_id"),
    # (dv28-014 left this list in s31: NCCL's code rule for a set-up call reads it now, its summary saying to
    # rerun with NCCL_DEBUG=INFO, and no fix row: test_nccl_error_beside_init_device_is_set_up)
])
def test_each_set_up_wait_gets_its_fix_row(name, fix):
    # (fixes.py's rows of session 27; the NCCL error's is the generic init row, never shared memory's)
    v = decide(ingest([WILD / name]))
    assert fix in (v.fix or "") + (v.check or "")
    assert "shm-size" not in (v.fix or "")


@pytest.mark.parametrize("name, words", [
    ("dv27-001-paddle-fleet-gloo-server-not-ready.txt", ["Paddle kept retrying", "10.60.174.62:43747"]),
    ("dv27-004-horovod-ray-gloo-httpstore-wait-timeout.txt", ["Gloo waited past its limit", "(its limit: 30 s)"]),
    ("dv27-005-horovodrun-tasks-to-start-timeout.txt", ["Horovod gave up", "'tasks to start'"]),
    ("dv27-007-torchelastic-etcd-rdzv-stale-keepalive.txt", ["Keep-alive key", "etcd rendezvous"]),
    ("dv24-013-horovodrun-task-launch-refused.txt", ["Horovod gave up",
                                                     "ssh: connect to host 192.168.0.119 port 12345"]),
    ("dv28-014-vllm-pynccl-commInitRank-unhandled-system-error.txt", ["unhandled system error", "init_device"]),
])
def test_dev_set_up_waits(name, words):
    v = decide(ingest([WILD / name]))
    assert v.kind is Kind.INIT_STALL
    for w in words:
        assert w in v.summary


@pytest.mark.parametrize("name, words", [
    # (ray-project/ray#23611: `ray start --address` on a worker, node.py's warning every 17 s)
    ("ray-23611-worker-start-gcs-unreachable.txt", ["Ray gave up on the Ray head's GCS server",
                                                     "at 127.0.0.1:6379", "said 4 times"]),
    # (ray-project/ray#37107: a driver's connect, utils.py's `Unable to connect to GCS (ray head) at`)
    ("ray-37107-driver-gcs-ray-head-unreachable.txt", ["Ray gave up", "172.17.0.2:6379"]),
    # (horovod/horovod#2015: Gloo's HTTP store timing out at 50+ machines, the wording before the seconds)
    ("horovod-2015-gloo-http-store-wait-timeout.txt", ["Gloo waited past its limit", "Wait timeout for key(s): 0"]),
])
def test_real_logs(name, words):
    v = decide(ingest([DATA / name]))
    assert v.kind is Kind.INIT_STALL
    for w in words:
        assert w in v.summary


def test_the_ssh_error_is_cited():
    v = decide(ingest([WILD / "dv24-013-horovodrun-task-launch-refused.txt"]))
    assert any("Connection refused" in (e.text or "") for e in v.evidence)
