"""Issue 31, session 18: a process's own raise decides where nothing earlier explains it
(tracekit/rules_raised.py): a Python traceback pasted without its exception, its innermost frames outside any
collective, wait or launcher, in an excerpt that says nothing else; torchrun's ChildFailedError whose block
the excerpt cuts. And the tracebacks the same reading must leave alone: in a collective, TensorFlow's
op-definition trace, beside an error line."""

from pathlib import Path

import pytest

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def _verdict(name: str):
    return decide(ingest([WILD / name]))


@pytest.mark.parametrize("name, said", [
    ("dv10-009-deepspeed-pdsh-rank22-init-traceback.txt",
     "rank 22 on worker-5 raised in _configure_distributed_model"),
    ("dv16-029-llamafactory-qwen35-rank0-cross-entropy-traceback.txt", "rank 0 raised in cross_entropy"),
    ("dv14-010-trl-vllm-serve-dp-enginecore-init-device-traceback.txt", "raised in init_device"),
    ("dv16-030-vllm-systemd-journal-enginecore-init-kv-cache-error.txt", "raised in _initialize_kv_caches"),
    # Ray Train re-raising its worker's failure (ray/train/_internal/utils.py check_for_failure)
    ("dv16-019-ray-train-amd-backend-executor-raise-failure.txt", "raised in check_for_failure"),
])
def test_a_traceback_alone_outside_any_wait_says_where_it_raised(name, said):
    # (fail31b: UNDECIDED, where it raised said: the exception is cut, and a Ctrl-C or a stop from outside prints
    # the same traceback; each of these labels accepts undecided)
    v = _verdict(name)
    assert v.kind == Kind.UNDECIDED and v.rule == "raised_unexplained"
    assert said in v.summary and "the exception under the traceback in its output decides it" in v.summary


@pytest.mark.parametrize("name", [
    "dev-005-lightning-logdict-traceback-broadcast.txt",  # in c10d's collective wrapper
    "llm-033-ds-zero2-worker-prefixed-rank0-allreduce-traceback.txt",  # in DeepSpeed's allreduce_bucket
    "dev-056-megatron-odd-dp-send-forward-frames.txt",  # in a pipeline's send_forward
    # TensorFlow's `Operation defined at:` trace (`>>>   File ...`), beside NCCL's system error
    "dv15-004-tf-mirrored-srun-ncclallreduce-unhandled-system-error.txt",
    "dv6-014-navillm-watchdog-frames-torchrun-exit-6.txt",  # torchrun's own frames, after a watchdog's abort
])
def test_a_traceback_in_a_wait_or_beside_other_words_decides_nothing(name):
    assert _verdict(name).kind == Kind.UNDECIDED


def test_childfailederror_with_its_block_cut_is_a_worker_that_failed():
    v = _verdict("dv5-040-llamafactory-accelerate-deepspeed-childfailed.txt")
    assert v.kind == Kind.CRASHED_RANK and v.rule == "raised_unexplained"
    assert "ChildFailedError" in v.summary and "worker process failed first" in v.summary


def test_childfailederror_beside_exit_codes_is_left_to_the_exit_rules():
    # torchrun names five ranks failing alike: the exit rules say which (none here), not ChildFailedError
    assert _verdict("torch-014-childfailed-8ranks-exit1-no-traceback.txt").kind == Kind.UNDECIDED
