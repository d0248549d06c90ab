"""Session 32, ranks32: visible-rank counts.

Covers: the PyTorch DDP tutorial's `[GPUn] ` line prefix (pytorch/examples ddp-tutorial-series, multinode.py's
`[GPU{global_rank}]`) read as the writer's rank (dev dv50-001, dv50-006); DeepSpeed's pdsh runner's
`localhost: ` prefix read as the launching node's host, so a file that also shows a second node's
`192.168.205.202: ` lines no longer reads that node's launcher `--local_rank=7` as global rank 7 (dev dv48-005),
and a `localhost: ` prefix alone still reads as one node. Inputs are real lines of dev excerpts.
"""

from __future__ import annotations

from pathlib import Path

from tests.factory import file_ranks, hosts_of, text_ranks, text_store

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"

TUTORIAL = """[GPU12] Epoch 48 | Batchsize: 4 | Steps: 104 | Loss: 5.46712
[GPU4] Epoch 48 | Batchsize: 4 | Steps: 104 | Loss: 5.31478
[GPU15] Epoch 48 | Batchsize: 4 | Steps: 104 | Loss: 5.05747
[GPU0] Epoch 48 | Batchsize: 4 | Steps: 104 | Loss: 5.11643
"""


def _ds_line(n: int) -> str:
    """Line n (1-based) of the dev excerpt dv48-005, a real DeepSpeed pdsh run of two nodes."""
    path = next(WILD.glob("dv48-005-*.txt"))
    return path.read_text().splitlines()[n - 1]


def test_the_ddp_tutorials_gpu_tag_is_the_writers_rank(tmp_path):
    assert text_ranks(tmp_path, TUTORIAL) == [0, 4, 12, 15]


def test_the_ddp_tutorials_excerpts_count_every_process():
    assert file_ranks(next(WILD.glob("dv50-001-*.txt"))) == list(range(16))
    assert file_ranks(next(WILD.glob("dv50-006-*.txt"))) == list(range(28))


def test_a_line_without_the_tag_names_no_rank(tmp_path):
    # (the tutorial's snapshot message carries no tag: no rank from it)
    assert text_ranks(tmp_path, "Epoch 49 | Training snapshot saved at snapshot.pt\n") == []


def test_localhost_is_the_pdsh_runners_launching_node(tmp_path):
    lines = [l for l in next(WILD.glob("dv48-005-*.txt")).read_text().splitlines()
             if l.startswith(("localhost: [W320", "192.168.205.202: [rank"))
             or "sigkill_handler] ['/usr/bin/python3'" in l]
    store = text_store(tmp_path, "\n".join(lines) + "\n")
    assert hosts_of(store) == ["192.168.205.202", "localhost"]
    # the second node's launcher names its worker by its local rank 7: not global rank 7
    assert sorted(store.ranks["rank"].drop_nulls().unique().to_list()) == list(range(8, 16))


def test_without_the_localhost_lines_the_local_rank_is_read_as_global(tmp_path):
    # (the same lines of one host alone: nothing shows a second node, the launcher's local rank 7 counts)
    lines = [l for l in next(WILD.glob("dv48-005-*.txt")).read_text().splitlines()
             if l.startswith("192.168.205.202: [rank") or "sigkill_handler] ['/usr/bin/python3'" in l]
    assert text_ranks(tmp_path, "\n".join(lines) + "\n") == list(range(7, 16))


def test_the_whole_excerpt_counts_the_second_nodes_ranks():
    assert file_ranks(next(WILD.glob("dv48-005-*.txt"))) == list(range(8, 16))
