"""Issue 31, session 18: the runtimes' own words that a process of the job failed
(tracekit/runtime_failures.py, read from the code that prints them) decide CRASHED_RANK with their meaning;
Mooncake's failed slice (a verbs completion in error) decides TRANSPORT_ERROR with its status; an Ascend
kernel that never finished is its device's error. Dev excerpts of samples/wild, and lines built in the exact
format the runtime's code prints (its file cited by each)."""

import re
from pathlib import Path

import pytest

from tracekit import runtime_failures
from tracekit.ingest import ingest
from tracekit.parsers import salient
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def _verdict(path: Path):
    return decide(ingest([path]))


@pytest.mark.parametrize("name, said, means", [
    # vllm/v1/engine/core.py run_engine_core: logger.exception("EngineCore failed to start.")
    ("dv14-002-vllm-v1-enginecore-failed-to-start-after-waiting.txt", "EngineCore failed to start",
     "engine core process raised"),
    # triton-inference-server/core model_lifecycle.cc:654 "failed to load '...' version N: ..."
    ("dv11-016-triton-trtllm-mpisize-ne-tp-pp-load-failed.txt", "mpiSize == tp * pp",
     "could not load its model"),
    # open-mpi/ompi v4.1.8 orte/mca/ess/base/help-ess-base.txt [slurm-error]
    ("dv16-034-nemorun-srun-ompi-no-pmi-support.txt", "direct launched", "without the PMI support"),
    # open-mpi/ompi v4.1.8 orte/mca/errmgr/base/help-errmgr-base.txt [node-died]
    ("dv17-019-mpi-operator-orte-lost-remote-daemon-worker19.txt", "lost communication with a remote daemon",
     "lost a node's daemon"),
    # sglang srt/entrypoints/engine.py sigquit_handler, with where the scheduler raised
    ("dv5-013-sglang-tp20-5containers-tp2-init-exception.txt", "init_torch_distributed", "a child process"),
])
def test_a_runtime_word_of_a_failure_decides_a_crash(name, said, means):
    v = _verdict(WILD / name)
    assert v.kind == Kind.CRASHED_RANK and v.rule == "crashed_by_words"
    assert said in v.summary and means in v.summary


@pytest.mark.parametrize("line, means", [
    # vllm/v1/engine/utils.py wait_for_engine_startup, the API server's word at the end of its traceback
    ("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
     "{'EngineCore_DP0': 1}", runtime_failures.Means.FAILED),
    # vllm/v1/executor/multiproc_executor.py monitor_workers
    ("ERROR 05-02 10:11:12 [multiproc_executor.py:140] Worker proc VllmWorker-1 died unexpectedly, shutting "
     "down executor.", runtime_failures.Means.FAILED),
    # vllm/v1/engine/exceptions.py EngineDeadError
    ("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
     "for the root cause.", runtime_failures.Means.FAILED),
    # text-generation-inference launcher/src/main.rs:1677 and :1220 (tracing's default format)
    ("2024-05-02T10:11:12.123456Z ERROR text_generation_launcher: Shard 1 failed to start",
     runtime_failures.Means.FAILED),
    ("2024-05-02T10:11:12.123456Z ERROR shard-manager: text_generation_launcher: Shard process was signaled "
     "to shutdown with signal 9 rank=1", runtime_failures.Means.FAILED),
    # sglang srt/entrypoints/engine.py _launch_subprocesses
    ("Rank 3 scheduler is dead. Please check if there are relevant logs.", runtime_failures.Means.FAILED),
    # open-mpi/ompi v4.1.8 orte/mca/ess/base/help-ess-base.txt:69 [slurm-error2]
    ("but OMPI was not built with SLURM support. This usually happens", runtime_failures.Means.CANNOT_START),
])
def test_the_vocabulary_reads_each_runtime_line_as_a_crash(line, means):
    assert runtime_failures.failure_of(line).means == means
    assert re.search(salient.CRASH, line)


def test_mooncake_failed_slice_is_the_transport_with_its_verbs_status():
    # mooncake-transfer-engine/src/transport/rdma_transport/worker_pool.cpp:654, a glog E line the torch
    # parser claims; its status is rdma-core's ibv_wc_status_str (libibverbs/enum_strs.c:117)
    v = _verdict(WILD / "dv14-046-sglang-pd-mooncake-rdma-retry-exceeded-mlx5.txt")
    assert v.kind == Kind.TRANSPORT_ERROR
    assert "transport retry counter exceeded" in v.summary and "call local_nic" not in v.summary


def test_an_ascend_kernel_that_never_finished_is_its_device_error():
    # CANN's ACL_ERROR_RT_AICORE_TIMEOUT (507014) as torch_npu words it, under HCCL's watchdog exception
    v = _verdict(WILD / "dv14-020-vllm-ascend-rank7-hccl-watchdog-aicore-timeout-507014.txt")
    assert v.kind == Kind.CRASHED_RANK and "The aicore execution times out" in v.summary


# text-generation-inference launcher/src/main.rs:1217 (the shard's stderr) and :1677, as its launcher logs
# them
TGI = """\
2024-05-02T10:11:10.000001Z  INFO text_generation_launcher: Starting shard rank=1
2024-05-02T10:11:12.123456Z ERROR shard: text_generation_launcher: Shard complete standard error output:
2024-05-02T10:11:12.223456Z ERROR text_generation_launcher: Shard 1 failed to start
2024-05-02T10:11:12.323456Z  INFO text_generation_launcher: Shutting down shards
"""


def test_tgi_launcher_word_that_a_shard_failed(tmp_path):
    log = tmp_path / "tgi.log"
    log.write_text(TGI)
    v = _verdict(log)
    assert v.kind == Kind.CRASHED_RANK and "TGI shard process" in v.summary
