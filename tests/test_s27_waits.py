"""Session 27, waits (issue 31): decide the failures an expert decides and say the fact: UCX's mlx5
error-completion dump (any syndrome, ``(synd 0x.. vend 0x..``) read as the network's error
(parsers/runtimes/ucx.py NETWORK)."""

from __future__ import annotations

from pathlib import Path

from factory import text_store

from tracekit.ingest import ingest
from tracekit.outcome import Kind
from tracekit.verdict import decide

WILD = Path(__file__).parent.parent / "samples" / "wild"


# --- UCX's mlx5 error completion, whatever its syndrome ------------------------------------------------------

def test_ucx_local_protection_completion_is_a_transport_error():
    # openucx/ucx#9515: osu_bw D D over rc_mlx5, the NIC fails a SEND with `Local protection` (synd 0x4)
    v = decide(ingest([WILD / "dv28-003-ucx-osu-bw-gpu-rdma-ib-local-protection-error.txt"]))
    assert v.kind is Kind.TRANSPORT_ERROR
    assert "Local protection on mlx5_0:1/IB" in v.summary and "a670n1" in v.summary


def test_ucx_older_completion_dump_without_hw_synd_is_a_transport_error(tmp_path):
    # the older dump's shape (`Remote access error on mlx5_0:1/IB (synd 0x13 vend 0x88)`, quoted from an
    # Open MPI pml=ucx run over IB), under UCX's fatal prefix
    v = decide(text_store(tmp_path, "[grammar001:41122:0:41122] ib_mlx5_log.c:143  Remote access error on "
                                    "mlx5_0:1/IB (synd 0x13 vend 0x88)\n"))
    assert v.kind is Kind.TRANSPORT_ERROR and "Remote access error on mlx5_0:1/IB" in v.summary


def test_ucx_work_request_line_alone_is_no_transport_error(tmp_path):
    # the work request UCX dumps under the error (`RC QP 0x169 wqe[3]: SEND ...`) says no error by itself
    v = decide(text_store(tmp_path, "[a670n1:162239:0:162239] ib_mlx5_log.c:177  RC QP 0x169 wqe[3]: SEND s-- "
                                    "[inl len 10] [va 0x7f1c3c800000 len 1 lkey 0xb5d2]\n"))
    assert v.kind is not Kind.TRANSPORT_ERROR
