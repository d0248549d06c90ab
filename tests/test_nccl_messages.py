"""NCCL's messages read for what they mean (tracekit/nccl_messages.py), on real WARN lines."""

from __future__ import annotations

import re

import polars as pl
import pytest

from tests.conftest import SAMPLES
from tracekit.ingest import ingest
from tracekit.nccl_messages import MESSAGES, message_name, meaning_of


def test_message_truncated_on_a_real_run_is_a_size_mismatch():
    """Real NCCL 2.28.9 (samples/gpu_2x1_divergence): rank 1's WARN says the peer sent 233472 bytes where
    it posted 65536: NCCL's own words for ranks that called the collective with different sizes. The
    parsers keep it as a reported mismatch (in NCCL's log and under torch's `Last error:`), not an NCCL
    WARN the transport rule would read as the network."""
    events = ingest([SAMPLES / "gpu_2x1_divergence"]).events
    said = events.filter(pl.col("message_id") == "socket_truncated")
    assert set(said["kind"]) == {"collective_mismatch"} and set(said["rank"]) == {1}
    assert {"nccl.vm.1197.log", "rank1.vm.1197.log"} == {f.rsplit("/", 1)[1] for f in said["file"]}
    m, got = meaning_of(said["message"][0])
    assert m.points_to[0] == "MISMATCH" and "TRANSPORT_ERROR" not in m.points_to
    assert got == {"peer": "127.0.0.1<51786>", "got": "233472", "expected": "65536"}
    # the same run's other NCCL WARN: the peer's socket closed as it went down, still a WARN
    closed = events.filter(pl.col("message_id") == "peer_closed")
    assert set(closed["kind"]) == {"nccl_warn"}
    assert not events.filter(
        (pl.col("kind") == "nccl_warn") & pl.col("message").str.contains("message truncated")).height


def test_a_bad_interface_reads_as_no_interface_not_a_mismatch():
    """Real NCCL 2.28.9 (samples/gpu_2x1_badiface): NCCL_SOCKET_IFNAME names no interface."""
    warns = ingest([SAMPLES / "gpu_2x1_badiface"]).events.filter(pl.col("kind") == "nccl_warn")
    names = warns.select(message_name()).to_series().drop_nulls().to_list()
    assert set(warns["message_id"].drop_nulls()) == set(names)
    assert "no_socket_interface" in names and "socket_truncated" not in names


@pytest.mark.parametrize("text, name, said", [
    # NCCL 2.18-2.22's IB wording, then 2.23+'s, then an IB plugin's (nccl-rdma-sharp-plugins)
    ("NET/IB : Got completion from peer 10.226.98.98<48598> with error 12, opcode 0, len 0, vendor err 129",
     "ib_completion_error", {"peer": "10.226.98.98<48598>", "error": "12"}),
    ("NET/IB: Got completion from peer 10.153.235.13<40554> with status=IBV_WC_RETRY_EXC_ERR(12) "
     "opcode=IBV_WC_RECV(128)",
     "ib_completion_error", {"peer": "10.153.235.13<40554>", "status": "IBV_WC_RETRY_EXC_ERR", "code": "12"}),
    ("NET/IB : Got completion from peer 172.36.143.59<44206> with status=12 opcode=129 len=65536 vendor "
     "err 129", "ib_completion_error", {"peer": "172.36.143.59<44206>", "status": "12"}),
    ("socketStartConnect: Connect to 169.254.20.10<43369> failed : Software caused connection abort",
     "connect_failed", {"peer": "169.254.20.10<43369>", "error": "Software caused connection abort"}),
    ("Net : Connection closed by remote peer", "peer_closed", {}),
    ("Cuda failure 1 'invalid argument'", "cuda_failure", {"error": "invalid argument"}),
    ("Message truncated : received 64 bytes instead of 32", "bootstrap_truncated",
     {"got": "64", "expected": "32"}),
    ("Mismatched NCCL version detected : rank 1 version 22807 rank 0 version 22105", "version_mismatch",
     {"rank_a": "1", "version_a": "22807", "rank_b": "0", "version_b": "22105"}),
])
def test_wordings_of_several_releases(text, name, said):
    m, got = meaning_of(text)
    assert m.name == name and got == said


def test_python_and_polars_read_every_pattern_alike():
    """Each pattern compiles in both engines and names the same message for the same line."""
    lines = ["NET/Socket : peer 10.0.0.2<4431> message truncated : receiving 64 bytes instead of 32. If you",
             "ncclSocketConnect: connect to 10.0.0.2<4431> returned Connection refused, retrying (1/34)",
             "No transport found for rank 0[1e000] -> rank 1[2f000]", "Channel 00/02 : 0 1",
             "Comm 0x55d1 is in abort state"]
    for m in MESSAGES:
        re.compile(m.pattern)
    polars_names = pl.DataFrame({"message": lines}).select(message_name()).to_series().to_list()
    python_names = [(meaning_of(t) or (None,))[0] for t in lines]
    assert polars_names == [m.name if m else None for m in python_names]
    assert polars_names == ["socket_truncated", "connect_retrying", "no_transport", None, "comm_aborted"]


def test_every_entry_says_its_meaning_kind_and_source():
    # (UNDECIDED: a message that alone decides no kind, as an address of no network family)
    kinds = {"DEADLOCK", "MISMATCH", "INIT_STALL", "TRANSPORT_ERROR", "CRASHED_RANK", "UNDECIDED"}
    assert len({m.name for m in MESSAGES}) == len(MESSAGES)
    for m in MESSAGES:
        assert m.meaning and set(m.points_to) <= kinds, m.name
        # (NVIDIA/nccl's src/ file:line; a net plugin's own WARN: owner/repo file:line of the plugin)
        assert re.match(r"src/[\w/]+\.(?:cc|h):\d+|[\w-]+/[\w-]+ [\w/]+\.(?:cc|h):\d+", m.source), m.name
