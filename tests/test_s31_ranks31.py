"""Session 31 (ranks31): which visible ranks a pasted excerpt shows, where the dev labels decide by majority.

Covers: torchelastic's ``--tee`` local-rank prefix (``[default3]:``) alone names no global rank on a job not shown
to be of one node (launcher.LOCAL_TAG, identity._local_as_global), while a program's word of its worker (spawn's
``-- Process 1 terminated``) still reads as that rank; and processes that only COLL lines show (``[nranks=2]``,
a device each, no rank field) hold no rank in the ranks table (identity._counted_unnamed), their collectives
still numbered in one process group. Lines are real ones from dev excerpts (dv46-004, dv22-006, dv5-029).
"""

from __future__ import annotations

import polars as pl

from tracekit.ingest import ingest

# dv46-004: a worker's C++ abort under torchrun --tee's prefix, the only word of which process wrote it
TEE = ("[default3]:terminate called after throwing an instance of 'c10::CUDAError'\n"
       "[default3]:  what():  CUDA error: unknown error\n"
       "[default3]:Exception raised from query at ../aten/src/ATen/cuda/CUDAEvent.h:95 (most recent call first):\n")
# dv22-006: two processes' COLL lines of a 2-rank communicator; the bracket is the CUDA device, not a rank
COLL = ("mlcv3:30429:30429 [1] NCCL INFO AllReduce: opCount 0 sendbuff 0x7fe9a9dff000 recvbuff 0x7fe9a9dff000 "
        "count 1 datatype 7 op 0 root 0 comm 0x7febdc001200 [nranks=2] stream 0x55f851b1a060\n"
        "mlcv3:30428:30428 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f327b9fee00 recvbuff 0x7f327b9fee00 "
        "count 1 datatype 7 op 0 root 0 comm 0x7f3460001200 [nranks=2] stream 0x56194a313850\n")


def _ranks(tmp_path, body: str, name: str = "x.log") -> list[int]:
    path = tmp_path / name
    path.write_text(body)
    r = ingest([path]).ranks
    return sorted(set(r["rank"].drop_nulls().to_list()))


def test_a_local_rank_prefix_alone_is_no_global_rank(tmp_path):
    path = tmp_path / "tee.log"
    path.write_text(TEE)
    r = ingest([path]).ranks
    assert r["rank"].drop_nulls().to_list() == []
    assert r.filter(pl.col("local_rank") == 3).height == 1  # the local rank is kept, as what it is
    assert set(r["source"]) == {"local-tag"}


def test_the_global_prefix_beside_it_names_the_rank(tmp_path):
    # NeMo-Run's `[default1]:[rank1]:` (dv2-046): the global prefix says it
    assert _ranks(tmp_path, "[default1]:[rank9]: RuntimeError: CUDA error: unknown error\n") == [9]


def test_spawns_process_number_still_reads_as_the_rank(tmp_path):
    # dv5-029 (and 6 more dev labels of 10) count mp.spawn's `Process 1` as rank 1
    body = ("-- Process 1 terminated with the following error:\nTraceback (most recent call last):\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert _ranks(tmp_path, body) == [1]


def test_processes_only_coll_lines_show_hold_no_rank(tmp_path):
    path = tmp_path / "coll.log"
    path.write_text(COLL)
    s = ingest([path])
    assert s.ranks["rank"].drop_nulls().to_list() == []
    assert set(s.ranks["source"]) == {"nccl-count"} and s.ranks.height == 2
    # (their collectives keep the count's numbering, so the two streams still pair as one group)
    assert s.collectives["rank"].null_count() == 0 and s.collectives["pg"].n_unique() == 1
