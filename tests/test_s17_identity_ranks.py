"""Identity, session 17 (issue 31): visible global ranks. A bare `[N] ` tag that is a process id the file
states is no rank; ParlAI's and loguru's headers are prefixes; ProcessGroupWrapper's mismatch names both
ranks; the launcher prefix table lives in its own module."""

from __future__ import annotations

from pathlib import Path

from tests.factory import ranks_of as ranks, text_store as store_of
from tracekit.ingest import ingest

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def _seen(prefix: str) -> list[int]:
    (path,) = WILD.glob(f"{prefix}-*.txt")
    return sorted(set(ingest([path]).ranks["rank"].drop_nulls().to_list()))


def test_a_bare_tag_that_is_a_pid_the_file_states_is_no_rank(tmp_path):
    # vllm-ascend's torch_npu lines carry `[285] ` (the process id) and `(PID:285, Device:4, RankID:-1)` names
    # that process; `[Rank 7]` of the HCCL watchdog is the only global rank
    assert _seen("dv14-020") == [7]
    text = ("[285] [2025-12-12 12:10:10:644] torch.distributed: [ERROR] query event failed\n"
            "[ERROR] 2025-12-12-12:10:10 (PID:285, Device:4, RankID:-1) ERR00100 PTA call acl api failed\n")
    assert ranks(store_of(tmp_path, text)) == []
    # a script's own `[3] ` tag, with no pid of that number stated, is still its writer's rank
    assert ranks(store_of(tmp_path, "[3] loss 0.5 at step 10\n[3] loss 0.4 at step 20\n", "r3.log")) == [3]


def test_the_prefix_table_is_its_own_module_and_text_reads_it():
    from tracekit.parsers import prefixes, text

    assert text.PREFIX is prefixes.PREFIX and text.TAGS is prefixes.TAGS
    df = text.lines_frame("x.log", "[rank3]: hello\n[default2]: there\n")
    assert df["launch_rank"].to_list() == [3, None] and df["local_tag"].to_list() == [None, 2]
    assert df["text"].to_list() == ["hello", "there"]


def test_parlais_worker_prefix_names_the_global_rank(tmp_path):
    # ParlAI prints `rank:  3 | ` before a worker's lines (distributed.py: 'rank:{:3d} |'.format(rank))
    assert _seen("dv17-014") == [3]
    text = "rank: 13 | 2022-04-03 18:44:26,615 INFO     | Distributed group initialized\n"
    df = store_of(tmp_path, text)
    assert ranks(df) == [13]


def test_a_loguru_header_is_taken_off_so_the_message_under_it_reads():
    # YOLOX logs through loguru's default format: `Rank 2 initialization finished.` names its writer (rank 1's
    # line, junk before its header, by its sentence: rank_words, session 25; the label's [0, 1, 2, 3])
    assert _seen("dv17-035") == [0, 1, 2, 3]
    from tracekit.parsers.text import lines_frame

    df = lines_frame("l.log", "2024-01-01 00:00:00.123 +08:00 | WARNING  | __main__:<module>:5 - disk low\n")
    assert df["text"].to_list() == ["disk low"] and df["log_level"].to_list() == ["WARNING"]
