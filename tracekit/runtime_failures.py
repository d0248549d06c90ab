"""The runtimes' own words that a process of the job failed, read from the code that prints them (issue 31).

Each entry is a pattern, what it means, and where the runtime prints it (``repo path:line`` of the
version read, or the function where lines move between versions). ``parsers/salient.py`` classes a line
that holds one as a crash (``Telling.CRASH``, on a line a parser claimed too: torch_log claims vLLM's
``EngineDeadError: EngineCore encountered an issue`` as an exception and decodes nothing of whose failure it
is),
and ``rules_crash_words.crashed_by_words`` says the meaning with the line. ``rules_raised`` reads the two
families a line alone does not decide: torchrun's ``ChildFailedError`` (it names the child whose failure
it reports, in a block an excerpt often cuts) and a Python traceback pasted without its exception.

Consequences are not here: a peer that disconnected, an aborted communicator, a collective's timeout are
another process's or the network's failure seen from this one (``nccl_messages``, ``rules_stall``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Means(StrEnum):
    """What a runtime's failure line says happened."""

    #: a process of the job raised or died on its own (its exception is under or above the line)
    FAILED = "a process of the job failed"
    #: a process could not start: its runtime refused to run it (a build without the launcher's support)
    CANNOT_START = "a process could not start"
    #: the launcher lost a node's daemon: the node or its daemon died (or its link dropped), the job ends
    NODE_LOST = "the launcher lost a node"


@dataclass(frozen=True)
class Failure:
    """A runtime's failure line: its pattern, its meaning, where it is printed, what the verdict says."""

    pattern: str
    means: Means
    source: str
    says: str


FAILURES: tuple[Failure, ...] = (
    # --- vLLM: the engine core process (v1) and its workers ---
    Failure(r"\bEngineCore failed to start\b", Means.FAILED,
            "vllm-project/vllm vllm/v1/engine/core.py run_engine_core: "
            "logger.exception(\"EngineCore failed to start.\")",
            "vLLM's engine core process raised while it started (its traceback follows the line)"),
    Failure(r"\bEngine core initiali[sz]ation failed\b", Means.FAILED,
            "vllm-project/vllm vllm/v1/engine/utils.py wait_for_engine_startup: raise RuntimeError(\"Engine "
            "core initialization failed. See root cause above. Failed core proc(s): ...\")",
            "vLLM's engine core process failed while it started (the front end's word; the root cause is "
            "the engine core's own traceback)"),
    Failure(r"\bEngineCore encountered a fatal error\b", Means.FAILED,
            "vllm-project/vllm vllm/v1/engine/core.py run_engine_core: "
            "logger.exception(\"EngineCore encountered a fatal error.\")",
            "vLLM's engine core process raised while it ran"),
    Failure(r"\bEngineCore encountered an issue\. See stack trace", Means.FAILED,
            "vllm-project/vllm vllm/v1/engine/exceptions.py (03e79b3) EngineDeadError: \"EngineCore "
            "encountered an issue. See stack trace (above) for the root cause.\" (\"Raised when the "
            "EngineCore dies. Unrecoverable.\")",
            "vLLM's engine core process died (the front end's word; its own traceback is the cause)"),
    Failure(r"\bWorkerProc (?:failed to start|hit an exception)\b", Means.FAILED,
            "vllm-project/vllm vllm/v1/executor/multiproc_executor.py WorkerProc.worker_main: "
            "logger.exception(\"WorkerProc failed to start.\"), "
            "logger.exception(\"WorkerProc hit an exception.\")",
            "a vLLM worker process raised"),
    Failure(r"\bWorker proc \S+ died unexpectedly\b", Means.FAILED,
            "vllm-project/vllm vllm/v1/executor/multiproc_executor.py monitor_workers: \"Worker proc %s died "
            "unexpectedly, shutting down executor.\"",
            "a vLLM worker process died (the executor shut down after it)"),
    # --- SGLang: its scheduler processes and their parent ---
    Failure(r"\bReceived sigquit from a child proc", Means.FAILED,
            "sgl-project/sglang python/sglang/srt/entrypoints/engine.py sigquit_handler: logger.error("
            "\"Received sigquit from a child process. It usually means the child failed.\") (older: \"child "
            "proces\")",
            "SGLang's server says a child process (a scheduler of a tensor-parallel rank) failed"),
    Failure(r"\bRank \d+ scheduler is dead\b", Means.FAILED,
            "sgl-project/sglang python/sglang/srt/entrypoints/engine.py _launch_subprocesses: "
            "\"Rank {tp_rank} scheduler is dead. Please check if there are relevant logs.\"",
            "an SGLang scheduler process died while it started"),
    # --- Hugging Face TGI: its launcher's word of a model shard process (one per tensor-parallel rank) ---
    Failure(r"\bShard \d+ failed to start\b", Means.FAILED,
            "huggingface/text-generation-inference launcher/src/main.rs:1677: tracing::error!(\"Shard {rank} "
            "failed to start\")",
            "a TGI shard process (one tensor-parallel rank) exited while it started"),
    Failure(r"\bShard complete standard error output\b"
            r"|\bShard process was signaled to shutdown with signal\b", Means.FAILED,
            "huggingface/text-generation-inference launcher/src/main.rs:1217 and :1220, when the shard's "
            "process exited: \"Shard complete standard error output:\", \"Shard process was signaled to "
            "shutdown with signal {signal}\"",
            "a TGI shard process exited (its standard error, which the launcher prints, says why)"),
    # --- Horovod: its background loop shut down, every later op of this rank fails with SHUT_DOWN_ERROR ---
    # (both readings its words give, an exception on one of the ranks or a rank that finished execution while
    # this one still called a collective, are a rank that raised or exited first and the others failing after
    # it: LABELS.md's crashed-rank; the exception, where there was one, is "in the log before the first
    # shutdown message", and an earlier exception line decides first: tests/test_failures_knock_on.py)
    Failure(r"\bHorovod has been shut down\b", Means.FAILED,
            "horovod/horovod 2626dc87 horovod/common/common.h:232 SHUT_DOWN_ERROR: \"Horovod has been shut "
            "down. This was caused by an exception on one of the ranks or an attempt to allreduce, allgather "
            "or broadcast a tensor after one of the ranks finished execution. If the shutdown was caused by "
            "an exception, you should see the exception in the log before the first shutdown message.\"",
            "another rank raised or exited first, and Horovod shut down on every rank after it (its op here "
            "failed with SHUT_DOWN_ERROR: an exception on one of the ranks, or a collective called after one "
            "of the ranks finished execution; the first rank's own error is in its log before this line)"),
    # --- Triton / TensorRT-LLM: a model the server could not load ---
    Failure(r"\bfailed to load '[^']+' version \d+:", Means.CANNOT_START,
            "triton-inference-server/core src/model_repository_manager/model_lifecycle.cc:654: LOG_ERROR << "
            "\"failed to load '\" << model_id << \"' version \" << version << \": \" << status",
            "the inference server could not load its model (its backend's own error follows on the line)"),
    # --- Open MPI / ORTE: a process that cannot start, a node the launcher lost ---
    Failure(r"direct launched using \"?srun\"?|\bnot built with SLURM(?:'s PMI\w*)? support\b",
            Means.CANNOT_START,
            "open-mpi/ompi v4.1.8 orte/mca/ess/base/help-ess-base.txt:54 [slurm-error]: \"The application "
            "appears to have been direct launched using \"srun\", but OMPI was not built with SLURM's PMI "
            "support and therefore cannot execute.\"; :69 [slurm-error2]: \"... but OMPI was not built with "
            "SLURM support.\"",
            "Open MPI was launched by srun without the PMI support it needs, so its processes cannot start"),
    Failure(r"\b(?:ORTE|PRRTE|PRTE) has lost communication with a remote daemon\b", Means.NODE_LOST,
            "open-mpi/ompi v4.1.8 orte/mca/errmgr/base/help-errmgr-base.txt:67 [node-died]: \"ORTE has lost "
            "communication with a remote daemon. ... This is usually due to either a failure of the TCP "
            "network connection to the node, or possibly an internal failure of the daemon itself. We cannot "
            "recover from this failure, and therefore will terminate the job.\"",
            "mpirun lost a node's daemon (the node or its daemon died, or its link dropped) and ended the "
            "job"),
)

#: any of the failures' words (one pattern: ``parsers/salient`` reads it in polars)
PATTERN = "|".join(f"(?:{f.pattern})" for f in FAILURES)


def failure_of(message: str) -> Failure | None:
    """The runtime failure a line says, or None."""
    return next((f for f in FAILURES if re.search(f.pattern, message)), None)

