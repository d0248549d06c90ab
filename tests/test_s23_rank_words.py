"""The ranks a program's own sentences name (parsers/rank_words.py, issue 31 rank identity): real dev
excerpts whose only word of a rank is such a sentence, each entry of the vocabulary in the runtime's own
format, and the numbers that are no rank whose lines are seen (a group-local rank, a node's rank)."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.factory import file_ranks
from tracekit.parsers import rank_words, text

WILD = ROOT / "samples" / "wild"


@pytest.mark.parametrize("excerpt, want", [
    # c10d's fingerprint check pasted as one line: both sides' ranks
    ("dv10-015-pgwrapper-seqnum-mismatch-broadcast.txt", [1, 16]),
    # DDP's parameter-count check names the two ranks it compared
    ("dv9-003-stream-of-search-ddp-param-count-mismatch.txt", [0, 1]),
    # Paddle's NCCL context line: the trainer's id over all nodes
    ("dv17-038-paddlenlp-2gpu-eval-then-silent.txt", [1]),
    # NeMo's checkpoint line: the writer's global rank
    ("dv4-018-nemo-cudagraph-max-steps-reached-then-finalize.txt", [0]),
    # the transformers examples' `Process rank: 0, device: cuda:0`: a local rank, global on one node
    ("dv17-026-lmflow-lora-llama7b-1gpu-killed-after-load.txt", [0]),
])
def test_a_rank_named_only_in_a_sentence_is_seen(excerpt, want):
    assert file_ranks(WILD / excerpt) == want


def _words(tmp_path, body: str):
    p = tmp_path / "rank.log"
    p.write_text(body)
    return rank_words.parse(text.lines_frame(str(p), body)).tables.get("ranks")


def test_each_sentence_gives_its_number_as_what_it_is(tmp_path):
    body = (
        # ProcessGroupWrapper.cpp's report, its second side on a line of its own
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 3 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=32, OpType=ALLREDUCE),\n"
        "but Rank 2 is running collective: CollectiveFingerPrint(SequenceNumber=32, OpType=BROADCAST)\n"
        # LLaMA-Factory's parser.py: the global rank and the world's size
        "[INFO|2025-01-02 03:04:05] llamafactory.hparams.parser:406 >> Process rank: 5, world size: 8, "
        "device: cuda:5, distributed training: True, compute dtype: torch.bfloat16\n"
        # the transformers examples: a local rank
        "01/02/2025 03:04:05 - WARNING - __main__ - Process rank: 1, device: cuda:1, n_gpu: 1, distributed "
        "training: True, 16-bits training: False\n")
    r = _words(tmp_path, body)
    got = {(row["rank"], row["local_rank"], row["world_size"]) for row in r.iter_rows(named=True)}
    assert got == {(3, None, None), (2, None, None), (5, None, 8), (None, 1, None)}
    assert set(r["source"]) == {"rank-words"}


def test_group_local_and_node_ranks_are_not_read_as_ranks(tmp_path):
    body = (
        # c10d's group-local rank of process group 5 (ProcessGroupNCCL.cpp's log prefix)
        "  what():  [PG 5 Rank 1] NCCL watchdog thread terminated with exception: [Rank 1] Watchdog caught "
        "collective operation timeout\n"
        # a launch command's node rank
        "python train_net.py --num-gpus 2 --machine-rank 1 --num-machines 2 --dist-url tcp://10.0.0.1:50000\n"
        # NCCL's proxy naming a local rank it connects to
        "host:535:720 [0] NCCL INFO New proxy recv connection 1 from local rank 0, transport 0\n"
        # a user's summary of several processes' Paddle lines (`0/1`: which one is not said)
        "I0302 02:01:36.274989 31267 nccl_context.cc:83] init nccl context nranks: 4 local rank: 0/1 gpu id: 0/1\n")
    assert _words(tmp_path, body) is None
