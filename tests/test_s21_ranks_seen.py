"""Which ranks an excerpt shows: a local rank where no line shows a second node, and the worker DeepSpeed's
launcher names (issue 31, rank identity)."""

from __future__ import annotations

from pathlib import Path

from tests.factory import ranks_of as ranks
from tracekit.coverage import coverage
from tracekit.ingest import ingest

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"

def test_spawns_process_index_numbers_a_rank_where_no_second_node_shows():
    # torch.multiprocessing.spawn's `-- Process 3 terminated with the following error:` on a job that
    # names no host
    s = ingest([WILD / "dv2-004-colossal-pytest-verify-model-ncclsystemerror.txt"])
    assert ranks(s) == [3]
    assert "rank 3 numbered by local rank, no line showing a second node" in coverage(s).describe()


def test_the_last_worker_deepspeeds_launcher_names_is_seen_and_not_called_the_failed_one():
    # launch.py's sigkill_handler: `logger.error(f"{cmd} exits with return code = {code}")`, where `cmd` is
    # its launch loop's last command (`--local_rank=4` here): local rank 4 was started; which worker
    # failed is not said
    s = ingest([WILD / "dev-035-llamafactory-zero3-local-rank4-return-code-1.txt"])
    assert ranks(s) == [4]
    assert coverage(s).sources[4] == ["DeepSpeed launcher's command (its last worker's)", "local rank"]
    from tracekit.verdict import decide
    v = decide(s)
    assert v.summary.startswith("a worker of the deepspeed launcher ended: exit code 1")
    assert "rank 4:" not in v.summary


# DDP's construction (torch/nn/parallel/distributed.py: `dist._verify_model_across_ranks(...)`), the NCCL
# error c10d raises (ProcessGroupNCCL.cpp: `NCCL error in: ..., unhandled system error, NCCL version`),
# and torchrun's root cause (torch/distributed/elastic/multiprocessing/errors/error_handler.py's block)
SYSTEM_ERROR_OF_ONE_RANK = """\
Traceback (most recent call last):
  File "train.py", line 88, in main
    model = DDP(model, device_ids=[args.local_rank])
  File "/opt/conda/lib/python3.8/site-packages/torch/nn/parallel/distributed.py", line 578, in __init__
    dist._verify_model_across_ranks(self.process_group, parameters)
RuntimeError: NCCL error in: /opt/conda/conda-bld/pytorch_1640811803361/work/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:957, unhandled system error, NCCL version 21.0.3
ncclSystemError: System call (socket, malloc, munmap, etc) failed.
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 12345) of binary: /opt/conda/bin/python
Root Cause (first observed failure):
[0]:
  time      : 2022-03-01_10:00:00
  host      : gpu1
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 12345)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
"""


def test_one_rank_seen_in_its_process_is_not_every_rank_in_one_process(tmp_path):
    # ncclSystemError on the one rank whose process the log names: its own call's system error (a
    # socket between processes), not a single process holding every rank (where no socket joins them)
    from tracekit.verdict import Kind, decide
    for text, name in ((SYSTEM_ERROR_OF_ONE_RANK, "root-cause"),
                       (SYSTEM_ERROR_OF_ONE_RANK.split("Root Cause")[0], "local-rank-only")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.log").write_text(text)
        v = decide(ingest([tmp_path / name / "train.log"]))
        assert v.kind == Kind.TRANSPORT_ERROR, (name, v.summary)
        assert v.summary.startswith("rank 0's own NCCL call failed with a system error"), (name, v.summary)
