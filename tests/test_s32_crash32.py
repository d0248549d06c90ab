"""Session 32 (crash32): cause and consequence across the set-up boundary.

Covers:
- ``set_up_rekind.PROGRAM_ERROR``: a decoder's or parser's error (``binascii.Error: Incorrect padding`` under
  DeepSpeedConfig's base64 decode, dv48-005's lines) raised inside Megatron's ``_initialize_distributed`` is the
  program's own crash, not a set-up that never completed; a connection error under the same frame still is.
- ``rules_nccl_errors._own_check_refused``: NCCL's internal-check code raised by the program's collective through
  ProcessGroupNCCL with no WARN, no network line and no communicator-init call is that rank's failure where the
  communicator had worked (steps before it); at a first collective, where torch creates the communicator, it
  stays undecided (dv14-049, dv6-030's lines); invalid usage raised from ncclCommInitRank stays no crash (llm-042's lines); an unhandled
  system error is no own check.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT
from tests.factory import text_store
from tracekit import set_up_rekind
from tracekit.outcome import Kind
from tracekit.verdict import decide


def _decide(tmp_path, text: str):
    return decide(text_store(tmp_path, text))


# --- a program's own error under a set-up frame (dv48-005's lines) ----------------------------------------------
MEGATRON_HEAD = (
    "192.168.205.202: [rank13]: Traceback (most recent call last):\n"
    "192.168.205.202: [rank13]:   File \"/home/sd/Megatron-DeepSpeed/pretrain_gpt.py\", line 360, in <module>\n"
    "192.168.205.202: [rank13]:     pretrain(train_valid_test_datasets_provider,\n"
    "192.168.205.202: [rank13]:   File \"/home/sd/Megatron-DeepSpeed/megatron/initialize.py\", line 69, in "
    "finish_mpu_init\n"
    "192.168.205.202: [rank13]:     _initialize_distributed()\n"
    "192.168.205.202: [rank13]:   File \"/home/sd/Megatron-DeepSpeed/megatron/initialize.py\", line 267, in "
    "_initialize_distributed\n"
    "192.168.205.202: [rank13]:     setup_deepspeed_random_and_activation_checkpointing(args)\n")


def test_a_config_decode_error_in_megatrons_set_up_stays_the_ranks_crash(tmp_path):
    v = _decide(tmp_path, MEGATRON_HEAD
                + "192.168.205.202: [rank13]:   File \"/usr/lib/python3.10/base64.py\", line 87, in b64decode\n"
                "192.168.205.202: [rank13]:     return binascii.a2b_base64(s)\n"
                "192.168.205.202: [rank13]: binascii.Error: Incorrect padding\n")
    assert v.kind is Kind.CRASHED_RANK
    assert "rank 13" in v.summary and "Incorrect padding" in v.summary


def test_a_connection_refused_under_the_same_frame_is_still_set_up(tmp_path):
    v = _decide(tmp_path, MEGATRON_HEAD
                + "192.168.205.202: [rank13]: ConnectionRefusedError: [Errno 111] Connection refused\n")
    assert v.kind is Kind.INIT_STALL


@pytest.mark.parametrize("said", ["binascii.Error: Incorrect padding", "json.decoder.JSONDecodeError: Expecting value",
                                  "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x8b",
                                  "_pickle.UnpicklingError: invalid load key"])
def test_decode_errors_are_program_errors(said):
    assert re.search(set_up_rekind.PROGRAM_ERROR, said)


@pytest.mark.parametrize("said", ["socket.error: [Errno 104] Connection reset by peer", "grpc.RpcError: x",
                                  "torch.distributed.DistNetworkError: Connection reset",
                                  "RuntimeError: NCCL error: unhandled system error"])
def test_network_errors_are_not_program_errors(said):
    assert not re.search(set_up_rekind.PROGRAM_ERROR, said)


# --- NCCL's own check on the calling rank -------------------------------------------------------------------------
FIRST_ALL_REDUCE = ("Traceback (most recent call last):\n"
                    "  File \"/usr/local/lib/python3.8/dist-packages/torch/distributed/distributed_c10d.py\", line 1700, "
                    "in all_reduce\n"
                    "    work = default_pg.allreduce([tensor], opts)\n"
                    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                    "ProcessGroupNCCL.cpp:1275, internal error, NCCL version 2.14.3\n")
#: dv50-005's Megatron-DeepSpeed progress lines, verbatim, then the same error: the communicator had worked
STEPS = "".join(line + "\n" for line in next((ROOT / "samples/wild").glob("dv50-005-*.txt")).read_text().splitlines()
                if line.startswith(" iteration "))


def test_internal_error_of_a_first_all_reduce_stays_undecided(tmp_path):
    """dv14-049's lines: vLLM's warm-up all_reduce raises ProcessGroupNCCL's `internal error` (no WARN). torch
    creates the communicator inside that first collective, so its set-up may be what failed: undecided, saying it."""
    v = _decide(tmp_path, FIRST_ALL_REDUCE)
    assert v.kind is Kind.UNDECIDED and "internal error" in v.summary


def test_internal_error_after_steps_is_that_ranks_failure(tmp_path):
    """The same error after the job's steps advanced: the communicator worked, the rank's own call failed."""
    v = _decide(tmp_path, STEPS + FIRST_ALL_REDUCE)
    assert v.kind is Kind.CRASHED_RANK and "internal error" in v.summary


def test_internal_error_of_rank_0_with_no_progress_names_it_undecided(tmp_path):
    """dv6-030's three lines (label undecided, accepts crashed-rank): the elastic agent names local_rank 0."""
    v = _decide(tmp_path, "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:891, "
                "internal error, NCCL version 21.0.3\n"
                "ncclInternalError: Internal check failed. This is either a bug in NCCL or due to memory "
                "corruption\n"
                "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: "
                "36621) of binary: /home/xxx/anaconda3/envs/bev/bin/python\n")
    assert v.kind is Kind.UNDECIDED and re.search(r"rank 0\b", v.summary)


def test_invalid_usage_from_nccl_comm_init_rank_stays_undecided(tmp_path):
    """llm-042's lines: the same kind of code raised by the communicator's init itself decides nothing."""
    v = _decide(tmp_path, "  File \"/usr/local/lib/python3.10/dist-packages/vllm/distributed/device_communicators/"
                "pynccl.py\", line 89, in __init__\n"
                "    self.comm: ncclComm_t = self.nccl.ncclCommInitRank(\n"
                "  File \"/usr/local/lib/python3.10/dist-packages/vllm/distributed/device_communicators/"
                "pynccl_wrapper.py\", line 223, in NCCL_CHECK\n"
                "    raise RuntimeError(f\"NCCL error: {error_str}\")\n"
                "RuntimeError: NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)\n")
    assert v.kind is not Kind.CRASHED_RANK


def test_a_system_error_is_not_read_as_the_ranks_own_check(tmp_path):
    """nccl-002's line: `unhandled system error` is no own check (a socket, shared memory)."""
    v = _decide(tmp_path, "fastmoe: Test NCCL failure common.cu:777 'unhandled system error'\n")
    assert v.kind is not Kind.CRASHED_RANK
