"""Start-up that never completed, read as a crash or as UNDECIDED (session 31, issue 31):

- ``start_up_frames.FRAMES``: torch.distributed.rpc's start-up (``init_rpc``, ``_init_rpc_backend``,
  ``_tensorpipe_init_backend_handler``) is set-up: a connect refused raised there, or the all-gather's RPC timeout
  of every worker's name, is a worker that never joined (INIT_STALL), not a crash of unknown cause; TensorPipe's
  own transport failure raised in the same frames (dv6-009's ``tensorpipe/common/ibv.h``) stays the transport's.

Tracebacks are as torch prints them (the frames of torch/distributed/rpc/__init__.py and backend_registry.py, the
TensorPipe uv transport's and the RPC agent's error text) with made-up paths and hosts; dv6-009 is read whole.
"""

from __future__ import annotations

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit import start_up_frames as sf
from tracekit.ingest import ingest
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
