"""A start-up that failed or stopped is INIT_STALL saying the line, its set-up step and the rank (session 26,
issue 31: "decide where an expert decides"; "an init failure called a crash" is a wrong kind):

- ``rules_set_up.undecided_in_set_up``: an UNDECIDED of ``nothing``/``timed_out``/``failed_without_cause``
  whose failure line names set-up (a set-up call, a set-up frame of its traceback, or its own words: a master,
  a store, a coordinator it could not reach) in a job never past set-up;
- ``rules_set_up.failed_in_set_up``: a crash whose own words, or the failure lines just before it, are set-up's
  (MPI's or Horovod's init), never a kill from outside or a call before init;
- ``rules_wait.stalled_in_start_up``: a native stack dump in NCCL's bootstrap or MPI's start-up;
- ``undecided``: NCCL's set-up that never completed says what NCCL warned of during it.
"""

from __future__ import annotations

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"

# c10d's client socket retrying the store's address (torch/csrc/distributed/c10d/socket.cpp, `The client socket
# has failed to connect to [host]:port (errno: ...)`), then the store's connect giving up (torch 1.x
# c10d/Utils.hpp tcputil::connect: `throw std::runtime_error("Socket Timeout")`)
STORE_UNREACHED = ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [node-1]:29500 "
                   "(errno: 110 - Connection timed out).\n"
                   "RuntimeError: Socket Timeout\n")
# the same timeout raised inside init_process_group (torch/distributed/distributed_c10d.py), no address said
INIT_TIMEOUT = ("Traceback (most recent call last):\n"
                "  File \"train.py\", line 12, in <module>\n"
                "    dist.init_process_group(backend=\"nccl\", init_method=\"env://\")\n"
                "  File \"/usr/local/lib/python3.8/dist-packages/torch/distributed/distributed_c10d.py\", line "
                "602, in init_process_group\n"
                "    default_pg = _new_process_group_helper(\n"
                "RuntimeError: Socket Timeout\n")
# a program's own error line that it could not reach its master (words only, no set-up call named)
MASTER = ("2023-01-01 10:00:00.123 [ERROR] rank 3 failed to connect to master 10.0.0.1:29500 after 300 seconds\n"
          "2023-01-01 10:00:00.124 [ERROR] Exiting.\n")
# a download that failed at start: no peer of the job
DOWNLOAD = ("2023-01-01 10:00:00.123 [ERROR] failed to connect to huggingface.co: Connection timed out\n"
            "2023-01-01 10:00:00.124 [ERROR] Exiting.\n")
# Horovod's init (horovod/common/basics.py HorovodBasics.init: `raise ValueError("Horovod initialization failed.
# Please check log messages above for a more descriptive error.")`)
HOROVOD_INIT = ("Traceback (most recent call last):\n"
                "  File \"/home/user/train.py\", line 30, in <module>\n"
                "    hvd.init()\n"
                "  File \"/usr/lib/python3/dist-packages/horovod/common/basics.py\", line 124, in init\n"
                "    raise ValueError('Horovod initialization failed. Please check log messages above for a more "
                "descriptive error.')\n"
                "ValueError: Horovod initialization failed. Please check log messages above for a more "
                "descriptive error.\n")
# a call before hvd.init() (horovod/common/basics.py: `Horovod has not been initialized; use hvd.init().`)
HOROVOD_NOT_INIT = ("Traceback (most recent call last):\n"
                    "  File \"/home/user/train.py\", line 31, in <module>\n"
                    "    print(hvd.rank())\n"
                    "ValueError: Horovod has not been initialized; use hvd.init().\n")
# torch's ProcessGroupMPI when MPI's init fails (the c10d error, then the C++ exception's abort)
MPI_FAILED = ("[E ProcessGroupMPI.cpp:123] MPI_Init failed\n"
              "terminate called after throwing an instance of 'c10::Error'\n"
              "  what():  Failed to initialize MPI\n"
              "Aborted (core dumped)\n")
# py-spy --native of a process in NCCL's bootstrap under ncclCommInitRank (NVIDIA/nccl src/bootstrap.cc
# bootstrapAllGather, src/init.cc initTransportsRank)
NATIVE_BOOTSTRAP = ("Process 4242: python train.py\n"
                    "Python v3.10.12 (/usr/bin/python3.10)\n"
                    "\n"
                    "Thread 4242 (idle): \"MainThread\"\n"
                    "    recv (libc.so.6)\n"
                    "    ncclSocketWait (libnccl.so.2)\n"
                    "    bootstrapAllGather (libnccl.so.2)\n"
                    "    initTransportsRank (libnccl.so.2)\n"
                    "    ncclCommInitRankFunc (libnccl.so.2)\n"
                    "    train (train.py:40)\n"
                    "    <module> (train.py:60)\n")

# vLLM v1's engine core failing as it starts (vllm/v1/engine/core.py run_engine_core: `EngineCore failed to
# start.`, then its traceback), its exception c10d's store that could not listen (torch/csrc/distributed/c10d/
# socket.cpp: `The server socket has failed to listen on any local network address.`)
ENGINE_STORE = "".join("ERROR 05-01 10:00:00 [core.py:396] " + line + "\n" for line in (
    "EngineCore failed to start.",
    "Traceback (most recent call last):",
    "  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py\", line 387, in run_engine_core",
    "    engine_core = EngineCoreProc(*args, **kwargs)",
    "  File \"/usr/local/lib/python3.12/dist-packages/vllm/distributed/parallel_state.py\", line 900, in "
    "init_distributed_environment",
    "    torch.distributed.init_process_group(",
    "  File \"/usr/local/lib/python3.12/dist-packages/torch/distributed/rendezvous.py\", line 189, in "
    "_tcp_rendezvous_handler",
    "    store = _create_c10d_store(",
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
    "port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use"))


def _decide(tmp_path, text: str, name: str = "job.log"):
    return decide(text_store(tmp_path, text, name))


def test_a_store_never_reached_then_a_socket_timeout_is_a_start_up_that_never_completed(tmp_path):
    v = _decide(tmp_path, STORE_UNREACHED)
    # (s28: c10d's connect warning is a start-up entry of its own, rules_init.start_up_said)
    assert v.kind == Kind.INIT_STALL and v.rule == "start_up_unfinished"
    assert "client socket has failed to connect to [node-1]:29500" in v.summary
    assert "the c10d store's server" in v.summary


def test_a_timeout_raised_in_init_process_group_names_the_frame(tmp_path):
    v = _decide(tmp_path, INIT_TIMEOUT)
    assert v.kind == Kind.INIT_STALL and v.rule == "undecided_in_set_up"
    assert "Socket Timeout" in v.summary and "init_process_group" in v.summary


def test_a_master_never_reached_in_the_programs_own_words_is_init_stall(tmp_path):
    v = _decide(tmp_path, MASTER)
    assert v.kind == Kind.INIT_STALL
    assert "failed to connect to master 10.0.0.1:29500" in v.summary and v.ranks == [3]


def test_a_failed_download_is_no_set_up_of_the_job(tmp_path):
    assert _decide(tmp_path, DOWNLOAD).kind != Kind.INIT_STALL


def test_the_same_failure_after_steps_is_no_start_up(tmp_path):
    steps = "".join(f"iteration {i}/100 | loss 2.{i} | elapsed time per iteration (ms): 512.0\n" for i in range(1, 6))
    assert _decide(tmp_path, steps + MASTER).kind != Kind.INIT_STALL


def test_horovod_init_failing_is_init_stall_and_a_call_before_it_stays_a_crash(tmp_path):
    v = _decide(tmp_path, HOROVOD_INIT, "init.log")
    assert v.kind == Kind.INIT_STALL and "Horovod's init" in v.summary
    w = _decide(tmp_path, HOROVOD_NOT_INIT, "early.log")
    assert w.kind == Kind.CRASHED_RANK and "has not been initialized" in w.summary


def test_mpi_that_failed_to_initialise_is_init_stall_with_mpi_init_named(tmp_path):
    v = _decide(tmp_path, MPI_FAILED)
    assert v.kind == Kind.INIT_STALL and v.rule == "failed_in_set_up"
    assert "MPI_Init" in v.summary


def test_an_engine_that_failed_to_start_on_its_store_is_init_stall_quoting_the_exception(tmp_path):
    v = _decide(tmp_path, ENGINE_STORE)
    assert v.kind == Kind.INIT_STALL and v.rule == "failed_in_set_up"
    assert "EngineCore failed to start" in v.summary and "EADDRINUSE" in v.summary


def test_a_native_stack_in_nccls_bootstrap_is_a_start_up_stall(tmp_path):
    v = _decide(tmp_path, NATIVE_BOOTSTRAP)
    assert v.kind == Kind.INIT_STALL and v.rule == "stalled_in_start_up"
    assert "bootstrapAllGather" in v.summary


# --- real excerpts (samples/wild, dev split) ---

def test_real_xla_mesh_master_waits_stay_undecided_at_start_up_and_at_a_save():
    # (the line is printed at start-up and at every later xm.rendezvous: dv6-005 is labelled init-stall, dv6-006,
    # a mid-training save, undecided; a wait's words are no failure, so both stay UNDECIDED)
    for name in ("dv6-005-xla-dist-v3-32-mesh-master-wait.txt", "dv6-006-xla-pod-save-rendezvous-mesh-master-wait.txt"):
        v = decide(ingest([WILD / name]))
        assert v.kind == Kind.UNDECIDED and "client mesh master" in v.summary


def test_real_hccl_comm_init_root_info_failure_is_init_stall_naming_rank_1():
    # (dv15-018: MindIE's HCCL runner: `HcclCommInitRootInfo fail, error:2, rank:1, rankSize:4`; the dev label
    # puts undecided first and accepts init-stall: issue 31's standard, an init failure is an init stall)
    v = decide(ingest([WILD / "dv15-018-gpustack-mindie-310p-hccl-comminitrootinfo-rank1-of-4.txt"]))
    assert v.kind == Kind.INIT_STALL and "HcclCommInitRootInfo" in v.summary and v.ranks == [1]


def test_real_nccl_set_up_without_init_complete_says_what_nccl_warned():
    v = decide(ingest([WILD / "dv18-040-nccl-4gpu-socket-bootstrap-one-gpu-hangs.txt"]))
    assert v.kind == Kind.UNDECIDED and "Failed to open libibverbs" in v.summary


def test_real_agent_sigterm_after_another_nodes_rendezvous_error_stays_a_kill():
    # (dev-047: a RendezvousClosedError pasted from another node above the agent's SIGTERM: the kill is its own)
    v = decide(ingest([WILD / "dev-047-elastic-agent-sigterm-rdzv-closed.txt"]))
    assert v.kind == Kind.CRASHED_RANK and "SIGTERM" in v.summary


def test_real_set_up_words_whose_peer_is_gone_stay_the_peers_crash():
    # (dv18-006: an HCCL unique id's store get that found the store's server gone, `Did the remote server shutdown
    # or crash?`; dv20-029: a JAX task's heartbeat timeout in the coordination service: both labelled crashed-rank)
    for name in ("dv18-006-vllm-ascend-pp-store-recv-0-bytes.txt", "dv20-029-t5x-jax-task37-heartbeat-timeout.txt"):
        v = decide(ingest([WILD / name]))
        assert v.kind == Kind.CRASHED_RANK, (name, v.summary)
