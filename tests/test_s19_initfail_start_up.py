"""Issue 31, session 19 ("a failure in start-up is not a crash"): where a job failed decides, not that
something raised. A traceback whose error line the excerpt cuts, raised in a frame that creates a process
group or a communicator (start_up_frames.FRAMES), in a job that never got past start-up, is an init stall;
one raised elsewhere (Transformer Engine's userbuffers, vLLM's device init) stays a crash. TCPStore's
protocol checks are the store's failure (meanings.RENDEZVOUS)."""

from pathlib import Path

import pytest

from tracekit import start_up_frames
from tracekit.ingest import ingest
from tracekit.meanings import RENDEZVOUS
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def _verdict(name: str):
    return decide(ingest([WILD / name]))


def test_a_cut_traceback_in_ddp_construction_is_an_init_stall():
    # rank 14's traceback ends in DistributedDataParallel.__init__ -> _verify_param_shape_across_processes
    v = _verdict("dv15-012-aws-ofi-rccl-setonix-rank14-ddp-init-traceback.txt")
    assert v.kind == Kind.INIT_STALL
    assert "rank 14 raised in __init__" in v.summary and "DDP's constructor" in v.summary
    assert v.ranks == [14]


def test_the_frame_tells_start_up_from_a_crash():
    # the same shape (a cut traceback, nothing after it) decides by where it raised: DDP's construction is
    # start-up; Transformer Engine's initialize_ub (TP comm-overlap buffers) and vLLM's gpu_worker.init_device
    # create no process group by their own frame, and stay crashes
    kinds = [_verdict(name).kind for name in (
        "dv15-012-aws-ofi-rccl-setonix-rank14-ddp-init-traceback.txt",
        "dv11-018-paimegatron-multinode-rank1-te-initialize-ub-traceback.txt",
        "dv14-010-trl-vllm-serve-dp-enginecore-init-device-traceback.txt")]
    # (fail31b: vLLM's init_device traceback, its exception cut and nothing else said, is raised_alone's
    # UNDECIDED, where it raised said; TE's initialize_ub is crashed_rank's, its header line above it)
    assert kinds == [Kind.INIT_STALL, Kind.CRASHED_RANK, Kind.UNDECIDED]


@pytest.mark.parametrize("where, runtime", [
    ("__init__ (/usr/local/lib/python3.12/dist-packages/torch/nn/parallel/distributed.py:835)", "torch"),
    ("_initialize_distributed (/workspace/Megatron-DeepSpeed/megatron/initialize.py:222)", "megatron"),
    ("init_process_group (/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:1831)",
     "torch"),
    ("init_distributed (/opt/conda/lib/python3.10/site-packages/deepspeed/comm/comm.py:670)", "deepspeed"),
])
def test_start_up_frames_are_read_by_function_and_file(where, runtime):
    assert start_up_frames.frame_of(where).runtime == runtime


@pytest.mark.parametrize("where", [
    "initialize_ub (/usr/local/lib/python3.10/dist-packages/transformer_engine/pytorch/module/base.py:347)",
    "__init__ (/opt/conda/lib/python3.10/site-packages/torch/nn/modules/linear.py:96)",
    "forward (/workspace/model.py:12)",
])
def test_other_frames_are_not_start_up(where):
    assert start_up_frames.frame_of(where) is None


def test_tcpstore_protocol_check_is_the_store_failing():
    # pytorch/pytorch torch/csrc/distributed/c10d/TCPStore.cpp TCPStore::doWait:
    # TORCH_CHECK(false, "Stop_waiting response is expected") -> RuntimeError with that message
    import re
    assert re.search(RENDEZVOUS, "RuntimeError: Stop_waiting response is expected")
    v = _verdict("dv10-013-colossalai-stop-waiting-empty-master-addr.txt")
    assert v.kind == Kind.INIT_STALL and "Stop_waiting response is expected" in v.summary
