"""Start-up that never completed, read as a crash or as UNDECIDED (session 31, issue 31):

- ``start_up_frames.FRAMES``: torch.distributed.rpc's start-up (``init_rpc``, ``_init_rpc_backend``,
  ``_tensorpipe_init_backend_handler``) is set-up: a connect refused raised there, or the all-gather's RPC timeout
  of every worker's name, is a worker that never joined (INIT_STALL), not a crash of unknown cause; TensorPipe's
  own transport failure raised in the same frames (dv6-009's ``tensorpipe/common/ibv.h``) stays the transport's;
- ``exit_barrier``: torchelastic's agent's exit barrier (its workers ended; it waits for the other nodes' agents on
  the rendezvous' store) that failed in the store's words is UNDECIDED saying so, never a rendezvous or a start-up
  that never completed; the same store error in start-up stays INIT_STALL; a barrier passed stays healthy;
- ``start_up_returned`` and ``Means.RETURNED``: a connect start-up retries (c10d's store client, TCPStore's retry,
  NCCL's, Paddle's) followed in its file by the runtime's word that start-up returned (torch's store-based barrier
  completed, SGLang's ``Init torch distributed ends.``, torchelastic's rendezvous complete) or by steps is start-up
  under way: neither INIT_STALL nor the transport's error; the same lines that end the log stay INIT_STALL.

The exit barrier's lines are its format strings in torch/distributed/elastic/agent/server/api.py with the
traceback's frames of torch/distributed/elastic/utils/store.py; dv10-004 and dv27-014 are read whole.
Tracebacks are as torch prints them (the frames of torch/distributed/rpc/__init__.py and backend_registry.py, the
TensorPipe uv transport's and the RPC agent's error text) with made-up paths and hosts; dv6-009 is read whole.
"""

from __future__ import annotations

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit import start_up_frames as sf, start_up_messages as sm
from tracekit.ingest import ingest
from tracekit.start_up_entry import Means
from tracekit.verdict import Kind, decide

WILD = ROOT / "samples" / "wild"

#: torch.distributed.rpc's start-up frames as a Python traceback prints them (torch 1.8-2.x)
RPC_FRAMES = (
    "Traceback (most recent call last):\n"
    "  File \"main.py\", line 33, in main\n"
    "    rpc.init_rpc(\"worker1\", rank=1, world_size=2)\n"
    "  File \"/usr/local/lib/python3.9/site-packages/torch/distributed/rpc/__init__.py\", line 196, in init_rpc\n"
    "    _init_rpc_backend(backend, store, name, rank, world_size, rpc_backend_options)\n"
    "  File \"/usr/local/lib/python3.9/site-packages/torch/distributed/rpc/__init__.py\", line 231, in "
    "_init_rpc_backend\n"
    "    rpc_agent = backend_registry.init_backend(\n")


def _decide(tmp_path, text: str):
    return decide(text_store(tmp_path, text))


# --- torch.distributed.rpc's start-up -------------------------------------------------------------------------------
def test_rpc_start_up_frames_are_set_up_frames():
    f = sf.frame_of("_tensorpipe_init_backend_handler (torch/distributed/rpc/backend_registry.py:359)")
    assert f is not None and f.runtime == "torch" and "rpc" in f.means
    assert sf.frame_of("init_rpc") is not None
    assert sf.frame_of("rpc_sync (torch/distributed/rpc/api.py:80)") is None  # (a call of a run that started)


def test_a_connect_refused_in_init_rpc_is_an_init_stall(tmp_path):
    v = _decide(tmp_path, RPC_FRAMES + "RuntimeError: [/pytorch/third_party/tensorpipe/tensorpipe/transport/uv/"
                                       "uv.h:313] connect: Connection refused\n")
    assert v.kind is Kind.INIT_STALL
    assert "Connection refused" in v.summary and "_init_rpc_backend" in v.summary


def test_the_rpc_all_gather_timeout_in_init_rpc_is_an_init_stall(tmp_path):
    v = _decide(tmp_path, RPC_FRAMES.replace("    rpc_agent = backend_registry.init_backend(\n", "")
                + "  File \"/usr/local/lib/python3.9/site-packages/torch/distributed/rpc/backend_registry.py\", line "
                  "359, in _tensorpipe_init_backend_handler\n"
                  "    api._all_gather(None, timeout=rpc_backend_options.rpc_timeout)\n"
                  "RuntimeError: RPCErr:1:RPC ran for more than set timeout (60000 ms) and will now be marked with "
                  "an error\n")
    assert v.kind is Kind.INIT_STALL
    assert "RPC ran for more than set timeout" in v.summary and "rpc" in v.summary


def test_the_rpc_timeout_after_the_start_up_is_no_init_stall(tmp_path):
    v = _decide(tmp_path, "Traceback (most recent call last):\n"
                          "  File \"main.py\", line 60, in run_trainer\n"
                          "    fut = rpc.rpc_async(\"ps\", get_params)\n"
                          "RuntimeError: RPCErr:1:RPC ran for more than set timeout (60000 ms) and will now be marked "
                          "with an error\n")
    assert v.kind is not Kind.INIT_STALL


def test_tensorpipes_ibv_failure_in_init_rpc_stays_the_transports():
    v = decide(ingest([WILD / "dv6-009-tensorpipe-init-rpc-ibv-invalid-argument.txt"]))
    assert v.kind is Kind.TRANSPORT_ERROR and "ibv" in v.summary


# --- torchelastic's exit barrier ----------------------------------------------------------------------------------
#: the agent's exit barrier failing in the store's get, as torch/distributed/elastic/agent/server/api.py logs it
#: (its format strings, the traceback's frames of torch/distributed/elastic/utils/store.py)
EXIT_BARRIER = (
    "[2024-03-09 10:48:07,892] torch.distributed.elastic.agent.server.api: [INFO] Local worker group finished "
    "(WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish\n"
    "[2024-03-09 10:53:23,670] torch.distributed.elastic.agent.server.api: [ERROR] Error waiting on exit barrier. "
    "Elapsed: 315.7792458534241 seconds\n"
    "Traceback (most recent call last):\n"
    "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/agent/server/api.py\", line 920, in "
    "_exit_barrier\n"
    "    store_util.barrier(\n"
    "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/utils/store.py\", line 78, in barrier\n"
    "    synchronize(store, data, rank, world_size, key_prefix, barrier_timeout)\n"
    "  File \"/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/utils/store.py\", line 34, in get_all\n"
    "    data = store.get(f\"{prefix}{idx}\")\n")


def test_the_exit_barriers_store_timeout_is_no_rendezvous_that_never_completed(tmp_path):
    v = _decide(tmp_path, EXIT_BARRIER + "torch.distributed.DistStoreError: Socket Timeout\n")
    assert v.kind is Kind.UNDECIDED and v.rule == "failed_at_exit"
    assert "exit barrier" in v.summary and "SUCCEEDED" in v.summary and "Socket Timeout" in v.summary


def test_the_exit_barriers_store_error_under_the_agents_error_line_alone_is_past_start_up(tmp_path):
    v = _decide(tmp_path, EXIT_BARRIER.split("\n", 1)[1] + "RuntimeError: Connection reset by peer\n")
    assert v.kind is Kind.UNDECIDED and v.rule == "failed_at_exit"
    assert "Connection reset by peer" in v.summary and "316 s" in v.summary


def test_the_same_store_timeout_in_start_up_stays_an_init_stall(tmp_path):
    v = _decide(tmp_path, "Traceback (most recent call last):\n"
                          "  File \"train.py\", line 10, in <module>\n"
                          "    dist.init_process_group(\"nccl\")\n"
                          "torch.distributed.DistStoreError: Socket Timeout\n")
    assert v.kind is Kind.INIT_STALL


def test_an_exit_barrier_passed_stays_healthy():
    v = decide(ingest([WILD / "dv27-014-torchelastic-worker-group-succeeded-clean-end.txt"]))
    assert v.kind is Kind.HEALTHY


def test_dv10_004s_cut_exit_barrier_is_undecided_saying_it():
    v = decide(ingest([WILD / "dv10-004-torchelastic-exit-barrier-cloudwatch.txt"]))
    assert v.kind is Kind.UNDECIDED and "exit barrier" in v.summary


# --- start-up's wait that returned ----------------------------------------------------------------------------------
#: c10d's per-attempt warning of its store client (torch/csrc/distributed/c10d/socket.cpp), as torch 1.13-2.1 print it
REFUSED = ("[W socket.cpp:601] [c10d] The client socket has failed to connect to [node01]:29500 (errno: 111 - "
           "Connection refused).\n")


def test_the_runtimes_words_that_start_up_returned_are_read():
    m, groups = sm.read("INFO:torch.distributed.distributed_c10d:Rank 1: Completed store-based barrier for "
                        "key:store_based_barrier_key:1 with 2 nodes.")
    assert m.means is Means.RETURNED and groups["nranks"] == "2" and m.means not in sm.DECISIVE
    assert sm.read("[2025-02-10 11:00:04 TP1] Init torch distributed ends. mem usage=0.00 GB")[0].means is Means.RETURNED
    assert sm.read("2023-05-01 10:00:09 | INFO | fairseq.distributed.utils | initialized host node02 as rank 1")[
        0].means is Means.RETURNED


def test_a_refused_connect_then_the_store_barrier_completed_is_no_init_stall(tmp_path):
    v = _decide(tmp_path, REFUSED * 2
                + "INFO:torch.distributed.distributed_c10d:Added key: store_based_barrier_key:1 to store for rank: 1\n"
                  "INFO:torch.distributed.distributed_c10d:Rank 1: Completed store-based barrier for "
                  "key:store_based_barrier_key:1 with 2 nodes.\n")
    assert v.kind is Kind.UNDECIDED


def test_a_tcpstore_retry_then_sglangs_init_ends_is_no_init_stall(tmp_path):
    v = _decide(tmp_path, "[2025-02-10 11:00:00 TP1] Init torch distributed begin.\n"
                          "[W210 11:00:01.123456 1234 torch/csrc/distributed/c10d/TCPStore.cpp:359] [c10d] TCP client "
                          "failed to connect/validate to host 10.0.0.1:5000 - retrying (try=0, timeout=600000ms, "
                          "delay=1496ms): The client socket has failed to connect to 10.0.0.1:5000 (errno: 111 - "
                          "Connection refused).\n"
                          "[2025-02-10 11:00:04 TP1] Init torch distributed ends. mem usage=0.00 GB\n"
                          "[2025-02-10 11:00:05 TP1] Load weight begin. avail mem=78.50 GB\n")
    assert v.kind not in (Kind.INIT_STALL, Kind.TRANSPORT_ERROR)


def test_a_refused_connect_then_the_agents_rendezvous_completed_is_no_init_stall(tmp_path):
    head = "[I1204 17:08:23.661000 26620 torch/distributed/elastic/agent/server/api.py:254] "
    v = _decide(tmp_path, REFUSED + head + "[default] Rendezvous complete for workers. Result:\n"
                + "".join(f"{head}  {kv}\n" for kv in ("restart_count=0", "master_addr=node01", "group_rank=1",
                                                      "group_world_size=2", "global_ranks=[1]")))
    assert v.kind is Kind.UNDECIDED


def test_a_refused_connect_then_steps_is_no_transport_error(tmp_path):
    v = _decide(tmp_path, REFUSED + "".join(f"Epoch 1 step {n} loss 2.{n}\n" for n in (10, 20, 30, 40)))
    assert v.kind not in (Kind.INIT_STALL, Kind.TRANSPORT_ERROR)


def test_a_refused_connect_that_ends_the_log_stays_an_init_stall(tmp_path):
    v = _decide(tmp_path, REFUSED * 3)
    assert v.kind is Kind.INIT_STALL and "node01" in v.summary


#: dv45-002's lines, verbatim: rank 3 early at the store-based barrier, then the barrier completed
BARRIER_WAIT = ("02/21/2022 13:46:14 - INFO - torch.distributed.distributed_c10d -   Waiting in store based barrier to "
                "initialize process group for rank: 3, key: store_based_barrier_key:1 (world_size=6, worker_count=4, "
                "timeout=0:30:00)\n")
BARRIER_DONE = ("02/21/2022 13:46:15 - INFO - torch.distributed.distributed_c10d -   Rank 0: Completed store-based "
                "barrier for key:store_based_barrier_key:1 with 6 nodes.\n")


def test_a_wait_at_the_store_barrier_that_then_completed_is_no_init_stall():
    v = decide(ingest([WILD / "dv45-002-lightning-store-barrier-ok.txt"]))
    assert v.kind is Kind.UNDECIDED


def test_a_wait_at_the_store_barrier_that_ends_the_log_stays_an_init_stall(tmp_path):
    assert _decide(tmp_path, BARRIER_WAIT).kind is Kind.INIT_STALL
    assert _decide(tmp_path, BARRIER_WAIT + BARRIER_DONE).kind is not Kind.INIT_STALL
