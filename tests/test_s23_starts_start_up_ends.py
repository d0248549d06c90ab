"""Session 23 (issue 31, the first call): a start-up every process seen announced, that the log ends in, is an
init stall (``rules_init.start_up_ends_the_log``); the same announcements with anything after them stay
UNDECIDED."""

from pathlib import Path

from tests.factory import text_store
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def _wild(name):
    return decide(ingest([WILD / name]))


#: sgl-project/sglang python/sglang/srt/model_executor/model_runner.py ModelRunner.init_torch_distributed:
#: logger.info("Init torch distributed begin."), then the process groups, then "Init torch distributed ends."
#: (the `[time TPn]` head is SGLang's logger format); its pynccl wrapper logs `sglang is using nccl==X`
BEGIN = "[2025-06-04 07:49:51 TP{r}] Init torch distributed begin.\n"
PYNCCL = "[2025-06-04 07:49:51 TP{r}] sglang is using nccl==2.21.5\n"
ENDS = "[2025-06-04 07:49:58 TP{r}] Init torch distributed ends. mem usage=0.12 GB\n"


def test_fairseqs_joins_that_end_the_log_are_an_init_stall():
    # dv4-017: `| distributed init (rank N): tcp://localhost:16344` of ranks 0-7 (fairseq/distributed/utils.py:286,
    # before dist.init_process_group) and no `initialized host ... as rank N` (:298, after it)
    v = _wild("dv4-017-fairseq-8gpu-distributed-init-then-silence.txt")
    assert v.kind is Kind.INIT_STALL and v.ranks == list(range(8))
    assert "distributed init (rank" in v.summary and "the log ends there" in v.summary


def test_fairseqs_joins_with_one_rank_initialized_stay_undecided_and_without_it_are_an_init_stall(tmp_path):
    # fairseq/distributed/utils.py:298 `initialized host {} as rank {}` once init_process_group returned
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    joins = [f"| distributed init (rank {r}): tcp://localhost:16344\n" for r in range(8)]
    one_done = "".join(joins[:4]) + "| initialized host node1 as rank 3\n" + "".join(joins[4:])
    assert decide(text_store(tmp_path / "a", one_done)).kind is Kind.UNDECIDED
    assert decide(text_store(tmp_path / "b", "".join(joins))).kind is Kind.INIT_STALL


def test_wenets_announcements_that_end_the_log_are_an_init_stall():
    # dv13-058: wenet's init_distributed logs `training on multiple gpus, this gpu N` before init_process_group
    v = _wild("dv13-058-wenet-8x8-gloo-init-hang-after-this-gpu-lines.txt")
    assert v.kind is Kind.INIT_STALL and "training on multiple gpus, this gpu" in v.summary


def test_a_start_up_begun_then_its_nccl_version_line_ends_the_log(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    v = decide(text_store(tmp_path / "a", BEGIN.format(r=0) + PYNCCL.format(r=0)))
    assert v.kind is Kind.INIT_STALL and "Init torch distributed begin." in v.summary
    # the same start-up that said its end is no init stall
    ended = decide(text_store(tmp_path / "b", BEGIN.format(r=0) + PYNCCL.format(r=0) + ENDS.format(r=0)))
    assert ended.kind is not Kind.INIT_STALL
    # dev-037: TP1-3 begin, TP7's last line is its attention-backend message (it had not begun): undecided
    assert _wild("dev-037-sglang-dsv3-tp-init-begin.txt").kind is Kind.UNDECIDED


def test_deepspeeds_backend_init_that_ends_the_log_is_an_init_stall(tmp_path):
    # deepspeed/comm/comm.py:856 init_distributed: utils.logger.info('Initializing TorchBackend in DeepSpeed with
    # backend {}'), then TorchBackend(...) runs init_process_group; DeepSpeed's logger head `[time] [INFO]
    # [comm.py:856:init_distributed]`
    line = "[2024-05-02 10:11:12,345] [INFO] [comm.py:856:init_distributed] Initializing TorchBackend in DeepSpeed " \
           "with backend nccl\n"
    v = decide(text_store(tmp_path, line))
    assert v.kind is Kind.INIT_STALL and "Initializing TorchBackend in DeepSpeed" in v.summary
