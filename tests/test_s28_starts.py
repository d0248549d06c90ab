"""A failure or a wait in set-up is INIT_STALL whichever rule read it first, and it says the step, the
address or rank, the error and a fix (session 28, issue 31: "an init failure called a crash" and "bootstrap
failures called transport errors" are wrong kinds):

- ``start_up_frames.FRAMES``: the set-up frames of the other runtimes (JAX's ``jax/_src/distributed.py``
  initialize, Paddle's init_parallel_env, TensorFlow's multi-worker strategy, Horovod's basics.init, torch_xla's
  _setup_replication, Lightning's, mmengine's, fairseq's, Ray Train's and Accelerate's process-group set-up,
  vLLM/SGLang's model-parallel groups), so a traceback raised there reads as set-up's;
- ``set_up_rekind.failed_in_set_up``: the crash lines read whole (a clipped summary hid `Could not start gRPC
  server`), gRPC's `failed to connect to all addresses` named as set-up, and a set-up frame alone no longer
  re-kinds the program's own error (a ValueError, a KeyError raised there stays a crash); a TPU slice's chip
  driver failure is a device fault (dv31-015, a contradiction before);
- ``start_up_messages``: c10d's store client retrying a refused or unanswered connect (socket.cpp), Slurm's task
  launch that never reached a node's slurmd (step_launch.c), ssh's connect of a launcher (sshconnect.c), a
  native stack caught inside NCCL's communicator init (dv31-006); ``start_up_frames.COORDINATOR_WAIT``: vLLM V1's
  poll for its engine cores (v1/engine/utils.py), said again;
- the fix rows of each (``fixes``).

The small logs under tests/data/s28_starts are written in each program's own words as its source prints them
(the file and function are cited beside each pattern in the modules), with made-up hosts.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit import rules_set_up, set_up_rekind, start_up_frames, start_up_messages as sm
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"
DATA = ROOT / "tests" / "data" / "s28_starts"


def _decide(tmp_path, text: str):
    return decide(text_store(tmp_path, text))


# --- the set-up frames of other runtimes -------------------------------------------------------------------------
@pytest.mark.parametrize("where, runtime", [
    ("initialize (/opt/venv/lib/python3.11/site-packages/jax/_src/distributed.py:106)", "jax"),
    ("init_parallel_env (/usr/lib/python3/dist-packages/paddle/distributed/parallel.py:265)", "paddle"),
    ("_initialize_multi_worker (/x/tensorflow/python/distribute/collective_all_reduce_strategy.py:380)",
     "tensorflow"),
    ("init (/usr/lib/python3/dist-packages/horovod/common/basics.py:125)", "horovod"),
    ("_setup_replication (/x/torch_xla/distributed/xla_multiprocessing.py:316)", "torch_xla"),
    ("_init_dist_connection (/x/lightning/fabric/utilities/distributed.py:258)", "lightning"),
    ("_init_dist_pytorch (/x/mmengine/dist/utils.py:105)", "torch"),
    ("__init__ (/x/accelerate/state.py:208)", "accelerate"),
    ("init_model_parallel_group (/x/vllm/distributed/parallel_state.py:773)", "vllm"),
])
def test_the_other_runtimes_set_up_frames_are_known(where, runtime):
    assert start_up_frames.frame_of(where).runtime == runtime


@pytest.mark.parametrize("where", [
    "initialize (/x/myproject/model.py:10)",  # an initialize that is not JAX's distributed one
    "init (/x/myproject/optim.py:3)",  # an init that is not Horovod's
    "__init__ (/x/transformers/trainer.py:400)",  # a constructor that is not Accelerate's state
])
def test_common_names_outside_their_runtime_are_not_set_up(where):
    assert start_up_frames.frame_of(where) is None


def test_a_jax_initialize_that_cannot_reach_its_coordinator_is_an_init_stall():
    v = decide(ingest([DATA / "jax_initialize_unavailable.log"]))
    assert v.kind is Kind.INIT_STALL
    assert "JAX's distributed runtime reaching its coordinator" in v.summary
    assert "failed to connect to all addresses" in v.summary and v.ranks == [1]
    assert "coordinator_address" in v.fix  # the gRPC / JAX coordinator row


def test_a_tensorflow_strategy_that_cannot_reach_its_workers_is_an_init_stall_not_a_crash():
    v = decide(ingest([DATA / "tf_strategy_grpc_unavailable.log"]))
    assert v.kind is Kind.INIT_STALL and v.rule == "failed_in_set_up"
    assert "failed to connect to all addresses" in v.summary and "gRPC's connect" in v.summary
    assert "TF_CONFIG" in v.fix


def test_a_grpc_server_that_could_not_start_is_named_though_the_crash_line_is_clipped():
    v = decide(ingest([DATA / "torch_xla_grpc_server.log"]))
    assert v.kind is Kind.INIT_STALL
    assert "Could not start gRPC server" in v.summary or "replication set-up" in v.summary


def test_horovod_init_failed_names_its_init_and_the_fix():
    v = decide(ingest([DATA / "horovod_init_failed.log"]))
    assert v.kind is Kind.INIT_STALL and "Horovod initialization failed" in v.summary
    assert "horovodrun" in v.fix and v.ranks == [0]


def test_the_programs_own_error_in_a_set_up_frame_stays_a_crash(tmp_path):
    """A ValueError raised inside JAX's initialize for an argument the program gave wrong is the program's, no
    wait for a peer: a frame alone does not re-kind it (``set_up_rekind.PROGRAM_ERROR``)."""
    v = _decide(tmp_path, "Traceback (most recent call last):\n"
                "  File \"/home/u/train.py\", line 9, in <module>\n"
                "    jax.distributed.initialize(num_processes=2)\n"
                "  File \"/opt/venv/lib/python3.11/site-packages/jax/_src/distributed.py\", line 80, in initialize\n"
                "    raise ValueError('coordinator_address should be defined.')\n"
                "ValueError: coordinator_address should be defined.\n")
    assert v.kind is Kind.CRASHED_RANK


def test_the_same_frame_with_a_connection_error_is_set_up(tmp_path):
    v = _decide(tmp_path, "Traceback (most recent call last):\n"
                "  File \"/home/u/train.py\", line 9, in <module>\n"
                "    paddle.distributed.init_parallel_env()\n"
                "  File \"/usr/lib/python3/dist-packages/paddle/distributed/parallel.py\", line 265, in "
                "init_parallel_env\n"
                "    _init_parallel_ctx()\n"
                "ConnectionRefusedError: [Errno 111] Connection refused\n")
    assert v.kind is Kind.INIT_STALL and "Paddle's process-group set-up" in v.summary


@pytest.mark.parametrize("said", ["ValueError: bad value", "KeyError: 'RANK'", "AssertionError",
                                  "ModuleNotFoundError: No module named 'x'"])
def test_program_error_types(said):
    assert re.search(set_up_rekind.PROGRAM_ERROR, said)


@pytest.mark.parametrize("said", ["RuntimeError: connect() timed out.", "torch.distributed.DistStoreError: x",
                                  "jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: y", "ConnectionError: z"])
def test_set_up_failure_types_are_not_program_errors(said):
    assert not re.search(set_up_rekind.PROGRAM_ERROR, said)


# --- the launchers' connects and the runtimes' waits -------------------------------------------------------------
def test_a_launchers_ssh_that_never_connected_is_an_init_stall_not_a_transport_error():
    v = decide(ingest([DATA / "deepspeed_pdsh_ssh_refused.log"]))
    assert v.kind is Kind.INIT_STALL
    assert "worker-1" in v.summary and "Connection refused" in v.summary
    assert "ssh" in v.fix and "BatchMode" in v.check


def test_srun_that_could_not_launch_on_a_node_is_an_init_stall():
    v = decide(ingest([DATA / "srun_task_launch_failed.log"]))
    assert v.kind is Kind.INIT_STALL
    assert "node gpu-b12" in v.summary and "Communication connection failure" in v.summary
    assert "slurmd" in v.fix


def test_c10d_retrying_a_refused_connect_to_its_store_is_an_init_stall_not_a_transport_error():
    v = decide(ingest([DATA / "c10d_connect_refused.log"]))
    assert v.kind is Kind.INIT_STALL
    assert "[node-0]:29500" in v.summary and "said 4 times" in v.summary
    assert "MASTER_ADDR" in v.fix


@pytest.mark.parametrize("line, name", [
    ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [node-0]:29500 (errno: 111 - "
     "Connection refused).", "c10d_client_connect_refused"),
    ("[W socket.cpp:663] [c10d] The client socket has failed to connect to [::ffff:10.0.0.1]:23456 (errno: 110 - "
     "Connection timed out).", "c10d_client_connect_unanswered"),
    ("RuntimeError: The client socket has failed to connect to any network address of (10.0.0.1, 23456).",
     "c10d_client_connect_gave_up"),
    ("srun: error: Task launch for StepId=412345.0 failed on node gpu-b12: Communication connection failure",
     "slurm_task_launch_failed"),
    ("ssh: connect to host worker-1 port 22: No route to host", "ssh_connect_failed"),
    ("#6  ncclCommInitRankSync (newcomm=0x1b1fbae80, nranks=2, commId=..., myrank=0) at init.cc:950",
     "nccl_init_in_stack"),
])
def test_the_new_start_up_lines_are_read(line, name):
    m, _ = sm.read(line)
    assert m.name == name and m.means in sm.DECISIVE


@pytest.mark.parametrize("line", [
    "srun: error: Task launch for StepId=1.0 failed on node n1: Slurmd could not execve job",  # the program's
    "#3  0x00007f in ncclSocketProgress (op=1) at misc/socket.cc:542",  # a socket's frame, not init's
    "Waiting for 1 local, 0 remote core engine proc(s) to start.",  # a wait said once (COORDINATOR_WAIT)
])
def test_lines_that_are_not_a_set_up_wait_of_their_own(line):
    assert sm.read(line) is None or sm.read(line)[0].means not in sm.DECISIVE


def test_vllm_polling_its_engine_cores_again_and_again_is_an_init_stall():
    v = decide(ingest([DATA / "vllm_engine_wait.log"]))
    assert v.kind is Kind.INIT_STALL
    assert "core engine proc(s) to start" in v.summary and "6 times" in v.summary
    assert "NCCL_P2P_DISABLE" in v.fix


def test_vllm_waiting_once_decides_nothing(tmp_path):
    v = _decide(tmp_path, "(APIServer pid=9504) DEBUG 02-03 04:40:10 [v1/engine/utils.py:950] Waiting for 1 local, "
                "0 remote core engine proc(s) to start.\n")
    assert v.kind is Kind.UNDECIDED


# --- dev excerpts ---------------------------------------------------------------------------------------------
def test_dv31_006_a_gdb_stack_inside_ncclcomminitrank_is_an_init_stall():
    v = decide(ingest([WILD / "dv31-006-nccl-initrank-bootstrap-accept-stack.txt"]))
    assert v.kind is Kind.INIT_STALL
    assert "ncclCommInitRank" in v.summary and "initTransportsRank" in v.summary
    assert "every rank's stack" in v.fix


def test_dv8_002_a_socket_wait_alone_is_no_init_frame():
    """Only the init's own frames decide: a recv under ncclSocketWait comes in the collectives too."""
    v = decide(ingest([WILD / "dv8-002-nccl-gdb-p2psetup-recv-hang.txt"]))
    assert v.kind is Kind.UNDECIDED


def test_dv31_015_a_tpu_chip_driver_failure_is_no_set_up_failure():
    """The TPU session master's `detected TPU session error` and the slice's chip driver failure are the device's:
    never an init stall (the label: crashed-rank, transport-error)."""
    v = decide(ingest([WILD / "dv31-015-maxtest-slice-failure-chip-driver-error.txt"]))
    assert v.kind is not Kind.INIT_STALL
    assert re.search(rules_set_up.DEVICE_FAULT, "Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR in session")


@pytest.mark.parametrize("name", ["dv11-042-hybrik-c10d-connect-192-168-1-219-timed-out.txt",
                                  "dv17-017-guided-diffusion-client-socket-connect-0-0-15-250-timeout.txt"])
def test_c10d_connects_that_time_out_stay_init_stalls_with_their_address(name):
    v = decide(ingest([WILD / name]))
    assert v.kind is Kind.INIT_STALL
    assert re.search(r"192\.168\.1\.219|0\.0\.15\.250", v.summary)
