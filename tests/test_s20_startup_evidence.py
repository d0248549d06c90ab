"""Issue 31, session 20 ("say what the evidence shows"): start-up, a transport's own failure and a rank's
crash told apart by the evidence that decides each.

- The start-up frames are written once (start_up_frames.FRAMES); the traceback frames torch_log reads as a
  process group's set-up (torch_patterns.INIT_FRAME) are built from them, so DDP's construction counts.
- A CUDA failure NCCL reports in its code that connects a rank to its peers (transport/p2p.cc, transport.cc,
  proxy.cc) is the transport's set-up failing; one in NVLS or an allocation stays a rank's crash.
- TensorPipe's verbs code raising (tensorpipe/common/ibv.h) is the InfiniBand transport's failure.
- torchrun's agent raising, its error cut, with only the launcher's own lines before it: its rendezvous.
"""

import re
from pathlib import Path

import pytest

from tracekit import start_up_frames
from tracekit.ingest import ingest
from tracekit.parsers.torch_patterns import INIT_FRAME
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def _verdict(name: str):
    return decide(ingest([WILD / name]))


def _frame(path: str, line: int, func: str) -> str:
    # a traceback frame as CPython prints it (Lib/traceback.py, StackSummary.format_frame_summary:
    # `'  File "{}", line {}, in {}\n'.format(frame.filename, frame.lineno, frame.name)`)
    return '  File "{}", line {}, in {}'.format(path, line, func)


@pytest.mark.parametrize("path, func", [
    ("/usr/lib/python3/site-packages/torch/nn/parallel/distributed.py", "_sync_params_and_buffers"),
    ("/usr/lib/python3/site-packages/torch/distributed/utils.py", "_verify_param_shape_across_processes"),
    ("/workspace/Megatron-DeepSpeed/megatron/initialize.py", "finish_mpu_init"),
    ("/usr/lib/python3/site-packages/vllm/worker/worker.py", "init_worker_distributed_environment"),
])
def test_init_frame_holds_every_start_up_frame(path, func):
    hit = re.search(INIT_FRAME, _frame(path, 410, func))
    assert hit and hit.group("fn") == func
    assert start_up_frames.frame_of(f"{func} ({path}:410)") is not None


def test_init_frame_leaves_a_worker_device_init_to_the_frames_it_calls():
    # vLLM's Worker.init_device also sets the device and checks memory (s19: not a start-up frame by itself)
    assert not re.search(INIT_FRAME, _frame("/x/vllm/v1/worker/gpu_worker.py", 113, "init_device"))


def test_a_timeout_raised_in_ddp_construction_is_an_init_stall():
    # RaySGD's worker: DistributedDataParallel.__init__ -> _sync_params_and_buffers -> broadcast raised
    # `RuntimeError: Operation timed out!`: the group's first collective never completed
    v = _verdict("dv10-014-raysgd-ddp-init-broadcast-timed-out.txt")
    assert v.kind == Kind.INIT_STALL
    assert "_sync_params_and_buffers raised" in v.summary and "DDP's first collective" in v.summary
    assert "Operation timed out" in v.summary


def test_a_cuda_failure_where_nccl_connects_peers_is_the_transport():
    kinds = {name: _verdict(name) for name in (
        "dv16-037-vllm-ray-update-weight-nccl-p2p-invalid-argument.txt",  # transport/p2p.cc:272, proxy.cc
        "dv4-006-nccl-2183-mpirun-cuda-invalid-argument-proxy-connect.txt",  # transport.cc:154
        "dv12-021-pytorch-ddp-nvls-cuda-failure-3-initialization-error.txt",  # transport/nvls.cc: not a peer's
        "nccl-041-nccl24-shm-cuda-invalid-argument.txt")}  # include/shm.h: an allocation
    got = [v.kind for v in kinds.values()]
    assert got == [Kind.TRANSPORT_ERROR, Kind.TRANSPORT_ERROR, Kind.CRASHED_RANK, Kind.CRASHED_RANK]
    first = list(kinds.values())
    assert "Cuda failure 1 'invalid argument'" in first[0].summary and "proxy.cc:1336" in first[0].summary
    assert "transport.cc:154" in first[1].summary and first[1].ranks == [0, 3]


def test_tensorpipe_verbs_raising_is_the_transport():
    # tensorpipe/common/ibv.h:19-31 TP_CHECK_IBV_*: TP_THROW_SYSTEM_IF(..., errno), `In <func> at <file>:<line>`
    v = _verdict("dv6-009-tensorpipe-init-rpc-ibv-invalid-argument.txt")
    assert v.kind == Kind.TRANSPORT_ERROR
    assert "In operator() at tensorpipe/common/ibv.h:172" in v.summary and v.ranks == [0]


def test_torchrun_agent_raising_before_any_worker_is_its_rendezvous():
    got = [_verdict(name) for name in (
        "dv6-022-chinese-llama2-master-torchrun-rdzv-no-run-id.txt",
        "dv17-020-dlrover-minikube-worker-torchrun-rendezvous-traceback.txt",
        "dv5-040-llamafactory-accelerate-deepspeed-childfailed.txt")]  # a worker's failure shown: its crash
    assert [v.kind for v in got] == [Kind.INIT_STALL, Kind.INIT_STALL, Kind.CRASHED_RANK]
    assert all("launcher/api.py" in v.summary and "rendezvous" in v.summary for v in got[:2])
