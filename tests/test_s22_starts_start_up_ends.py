"""Issue 31, session 22 (starts): what tells an init that never completed from a transport that failed from
a rank that died. A start-up step its runtime says failed (an HCCL communicator's init call, a placement
group no node could fill, a store host whose name never resolved, NCCL's topology code at init) is an init
stall, not the crash of the rank that raised it; a transport the process could not set up (Open MPI's UCX
endpoint or worker) is the transport's failure, and the segfaults after it its consequence; Open MPI's
notice that a peer hung up is the peer's crash."""

import re
from pathlib import Path

import polars as pl
import pytest

from tracekit import start_up_frames as sf, start_up_messages as sm
from tracekit.ingest import ingest
from tracekit.parsers import mpi, native_fatal
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def _verdict(name: str):
    return decide(ingest([WILD / name]))


def _lines(*texts: str) -> pl.DataFrame:
    n = len(texts)
    return pl.DataFrame({"file": ["f"] * n, "line": list(range(1, n + 1)), "text": list(texts),
                         "launch_rank": [None] * n, "task_tag": [None] * n},
                        schema_overrides={"launch_rank": pl.Int64, "task_tag": pl.Utf8})


# --- start-up that never completed, in the runtime's words ---------------------------------------------------

def test_an_hccl_init_call_that_failed_is_an_init_stall():
    # torch_npu's HCCL_CHECK_ERROR around HCCLComm::create_config's hcclCommInitRootInfoConfig, raised by the
    # lazy init of the PP recv's communicator (rank 1): the communicator never completed init
    v = _verdict("dv20-026-vllm-ascend-pp-hccl-comm-init-error.txt")
    assert v.kind == Kind.INIT_STALL
    assert "hcclCommInitRootInfoConfig returned error code 1 (HCCL_E_PARA" in v.summary
    assert v.ranks == [1]


@pytest.mark.parametrize("text, said", [
    # Ascend/pytorch torch_npu/csrc/distributed/HCCLUtils.hpp:17-45 (HCCL_CHECK_ERROR's non-compact message)
    ("create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:148 HCCL function error: "
     "hcclCommInitRootInfoConfig(numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 7",
     "hcclCommInitRootInfoConfig returned error code 7 (HCCL_E_UNAVAIL, a resource unavailable)"),
    ("[ERROR] HCCL(36035,x):2025-05-13-02:25:58.068.817 [op_base.cc:974][36818][Init][CommRootInfoConfig]"
     "errNo[0x0000000005000002]HcclCommInitRootInfo failed.", "HcclCommInitRootInfo failed"),
    ("OPS function error: HcclAllreduce, error code is 6", None),
])
def test_the_init_calls_read(text, said):
    assert sf.init_call_failed(text) == said


def test_a_placement_group_never_provided_is_an_init_stall():
    # vLLM's engine core gave up after 1800 s: the 4 GPUs its placement group asks for never came up
    v = _verdict("dv18-012-gpustack-vllm-placement-group-4gpu-1800s.txt")
    assert v.kind == Kind.INIT_STALL
    assert "placement group requiring 4.0 GPUs" in v.summary and "1800 seconds" in v.summary


def test_a_store_host_that_never_resolves_is_an_init_stall():
    # c10d's socket.cpp SocketConnectOp::tryConnect: a getaddrinfo failure is recorded and retried until the
    # connect's deadline, whatever the family (here IPv6: the name is a file path)
    v = _verdict("dv18-002-accelerate-master-addr-unresolvable.txt")
    assert v.kind == Kind.INIT_STALL
    assert "/root/cuda11.8.bashrc:45458" in v.summary and "Temporary failure in name resolution" in v.summary


def test_the_unresolved_line_is_read_in_each_family():
    # pytorch/pytorch torch/csrc/distributed/c10d/socket.cpp: "The {}network addresses of ({}, {}) cannot be
    # retrieved (gai error: {} - {})." with "IPv4 ", "IPv6 " or "" (AF_UNSPEC)
    for family in ("IPv4 ", "IPv6 ", ""):
        m, groups = sm.read(f"[W socket.cpp:601] [c10d] The {family}network addresses of (master-0, 29500) "
                            "cannot be retrieved (gai error: -2 - Name or service not known).")
        assert m.name == "c10d_name_unresolved" and m.means in sm.DECISIVE
        assert (groups["host"], groups["port"]) == ("master-0", "29500")


def test_an_nccl_error_after_an_unwind_through_its_topology_is_an_init_stall():
    # graph/paths.cc -> transport/p2p.cc -> graph/paths.cc -> init.cc:1014 (initTransportsRank's
    # ncclTopoComputePaths, NCCL v2.21.5) -> ... then rank 1's all_reduce raises ncclInternalError
    v = _verdict("dv20-035-vllm-docker-nccl-internal-error-p2p-init.txt")
    assert v.kind == Kind.INIT_STALL
    assert "graph/paths.cc:260 -> 3" in v.summary and "rank 1" in v.summary


def test_sglangs_init_begun_that_ends_the_log_is_an_init_stall():
    # SGLang's ModelRunner.init_torch_distributed logs "Init torch distributed begin." before its process
    # groups; TP1 never logs and the log ends there (session 23: the dev label's first call is init-stall,
    # rules_init.start_up_ends_the_log; it was UNDECIDED, a wait said once)
    v = _verdict("dv18-015-sglang-pd-tp2-stuck-init-torch-distributed.txt")
    assert v.kind == Kind.INIT_STALL
    assert "Init torch distributed begin." in v.summary


# --- the transport, and the peer ----------------------------------------------------------------------------

def test_open_mpi_that_cannot_create_its_ucp_worker_is_a_transport_error():
    # ompi/mca/pml/ucx/pml_ucx.c:319 PML_UCX_ERROR("Failed to create UCP worker") after UCX's DCI QP failed
    # (dc_mlx5.c: `ibv_modify_qp(DCI, RTR) failed`, UCX's own ERROR line before it: the first said)
    v = _verdict("dv18-023-ucx-dci-modify-qp-ucp-worker-fail.txt")
    assert v.kind == Kind.TRANSPORT_ERROR
    assert "2 transport error line(s), first: UCX ERROR on hpap13n2 (pid 7391): ibv_modify_qp(DCI, RTR) failed" \
        in v.summary


def test_segfaults_after_ucx_endpoints_that_failed_are_the_transports_consequence():
    # ucp_ep_create(proc=371) failed (pml_ucx.c:437), then UCX's own handler: Caught signal 11 on other ranks
    v = _verdict("dv18-021-ucx-mtt-rc-create-qp-einval.txt")
    assert v.kind == Kind.TRANSPORT_ERROR
    assert "ucp_ep_create(proc=371) failed" in v.summary


def test_the_pml_ucx_lines_are_transport_errors():
    # opal/mca/common/ucx/common_ucx.h:50 MCA_COMMON_UCX_ERROR: `__FILE__:__LINE__ Error: ...`
    got = mpi.parse(_lines(
        "[clx-hercules-007:20550] pml_ucx.c:296 Error: ucp_ep_create(proc=371) failed: Input/output error",
        "[h:07330] ../../ompi/mca/pml/ucx/pml_ucx.c:309  Error: Failed to create UCP worker",
        "[h:07330] pml_ucx.c:663 Error: ucx recv failed: Message truncated")).tables["events"]
    assert got["kind"].to_list() == [EventKind.TRANSPORT_ERROR] * 2
    assert got["line"].to_list() == [1, 2]


def test_open_mpis_peer_hung_up_is_the_peers_crash():
    # opal/mca/btl/tcp/help-mpi-btl-tcp.txt:72-86 [peer hung up]: the peer on reco-zl-c4-reco316 ended first
    v = _verdict("dv18-039-horovod-mpi-peer-disconnected.txt")
    assert v.kind == Kind.CRASHED_RANK
    assert "peer process has unexpectedly disconnected (peer host: reco-zl-c4-reco316)" in v.summary


def test_a_glog_fatal_with_the_year_is_read():
    # google/glog src/logging.cc:1633 writes the year by default (FLAGS_log_year_in_prefix, src/flags.cc:102)
    assert re.search(native_fatal.FATAL, "F20250720 17:52:37.391902 1125343 util.h:139] Check "
                                  "failed: bind(*listen_fd, (struct sockaddr*)&serv_addr, sizeof(serv_addr)) "
                                  ">= 0 ERROR: binding")
    v = _verdict("dv19-011-uccl-plugin-bind-failure-abort.txt")
    # (s26: the fatal check is of a network call, bind(): the transport's failure, its label's first call)
    assert v.kind == Kind.TRANSPORT_ERROR and "ERROR: binding" in v.summary


def test_a_cut_tracebacks_header_says_what_raised():
    # vLLM's worker logs `logger.exception("Exception in worker %s while processing method %s.", ...)`: the
    # message, then the traceback (cut before its exception) on the next lines
    v = _verdict("dv16-025-vllm-mp-worker-exception-load-model.txt")
    assert v.kind == Kind.CRASHED_RANK
    assert "Exception in worker VllmWorkerProcess while processing method load_model." in v.summary
