"""A runtime's exception that says its start-up could not place its workers (torchx's Ray driver:
pytorch/torchx torchx/schedulers/ray/ray_driver.py create_placement_groups raises `TimeoutError("Placement
group creation timed out. Make sure your cluster either has enough resources ...")`) is an init stall, read
as such whether a parser decodes the line as an exception or only its words tell it."""

from __future__ import annotations

import pytest

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

RAISED = ("TimeoutError: Placement group creation timed out. Make sure your cluster either has enough "
          "resources or use an autoscaling cluster. Current resources available: {'CPU': 8.0}, resources "
          "requested by the placement group: [{'CPU': 2, 'GPU': 1}, {'CPU': 2, 'GPU': 1}]")


@pytest.mark.parametrize("margin", ["", "  "])
def test_a_placement_group_that_timed_out_is_an_init_stall_said_once(tmp_path, margin):
    (tmp_path / "driver.log").write_text(margin + RAISED + "\n")
    v = decide(ingest([tmp_path / "driver.log"]))
    assert v.kind == Kind.INIT_STALL
    assert "scheduler cannot place" in v.summary and "Placement group creation timed out" in v.summary
    assert v.summary.count("such lines") == 0  # (one line, read once)


def test_after_a_communicator_completed_it_is_no_init_stall(tmp_path):
    done = "gpu1:4675:4675 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xabc - Init COMPLETE"
    (tmp_path / "driver.log").write_text(done + "\n" + RAISED + "\n")
    assert decide(ingest([tmp_path / "driver.log"])).kind != Kind.INIT_STALL


def test_a_cut_traceback_whose_frames_reach_a_start_up_frame_is_an_init_stall():
    # dv14-005 (dev): Megatron-DeepSpeed's tracebacks of several ranks interleaved, cut before their error
    # line, their innermost frames in initialize_megatron -> finish_mpu_init -> _initialize_distributed
    from pathlib import Path
    wild = Path(__file__).resolve().parents[1] / "samples" / "wild"
    v = decide(ingest([wild / "dv14-005-megatron-deepspeed-interleaved-init-distributed-tracebacks.txt"]))
    assert v.kind == Kind.INIT_STALL
    assert "finish_mpu_init" in v.summary and "error line is cut" in v.summary
