"""What a message says (meanings.SAYS), decoded once into the events' ``says`` column as the events
enter the store, and read back from a stored store."""

import polars as pl
import pytest

from tests.conftest import SAMPLES
from tests.factory import make_store
from tracekit import meanings, schema
from tracekit.ingest import ingest
from tracekit.meanings import SAYS, says
from tracekit.store import Store, StoreError, scan

#: a line of the wording each meaning is read from (torch, torchrun, NCCL, CUDA, c10d, glibc)
SAID = {
    "consequence": "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, "
                   "NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.",
    "cuda": "RuntimeError: CUDA error: an illegal memory access was encountered",
    "network_fail": "socketStartConnect: Connect to 10.0.0.2<43211> failed : Connection refused",
    "nccl_error": "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                  "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details)",
    "rendezvous": "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
    "mismatch": "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: "
                "CollectiveFingerPrint(SequenceNumber=3, OpType=ALLREDUCE)",
    "terminate": "terminate called after throwing an instance of 'c10::DistBackendError'",
    "timeout": "RuntimeError: Socket Timeout",
    "stop_signal": "Received Signals.SIGTERM death signal, shutting down workers",
    "abort_signal": "Fatal Python error: Aborted. Signal 6 (SIGABRT) received by PID 4321",
    "knock_on": "failed (exitcode: 1) local_rank: 1 (pid: 4321) of binary: /usr/bin/python3",
    "benign": "NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
}


def said(**event) -> list[str] | None:
    return make_store(events=[dict(file="rank0.log", line=1, kind="crash", **event)]).events["says"].to_list()[0]


def test_every_meaning_has_a_line():
    assert sorted(SAID) == sorted(SAYS)


@pytest.mark.parametrize("meaning", sorted(SAID))
def test_a_factory_event_says_its_meaning(meaning):
    assert meaning in said(message=SAID[meaning])


def test_a_calm_line_says_nothing_and_a_line_without_words_says_null():
    assert said(message="{'loss': 2.31, 'epoch': 0.5}") == []
    assert said(message=None) is None
    # a benign WARN's words may stand in ``where`` (the NCCL parser's subsystem) with no message
    assert said(message=None, where="NET/OFI Only EFA provider is supported") == ["benign"]


def test_the_filter_is_null_where_the_message_is_null_as_the_wording_filter_was():
    store = make_store(events=[dict(file="r", line=i, kind="exception", message=m)
                               for i, m in enumerate([SAID["consequence"], SAID["cuda"], None])])
    got = store.events.select(says("consequence").alias("c"), (~says("consequence")).alias("not_c"))
    wording = store.events.select(pl.col("message").str.contains(meanings.CONSEQUENCE).alias("c"),
                                  (~pl.col("message").str.contains(meanings.CONSEQUENCE)).alias("not_c"))
    assert got.to_dicts() == wording.to_dicts() == [
        {"c": True, "not_c": False}, {"c": False, "not_c": True}, {"c": None, "not_c": None}]


def test_a_meaning_that_is_not_in_says_is_refused():
    with pytest.raises(ValueError, match="'timout' is not a meaning"):
        says("timout")


def test_the_column_in_an_ingested_store_is_each_pattern_read_once():
    store = ingest([SAMPLES / "gloo_2x2_crash"])
    ev = store.events
    assert store.events.schema["says"] == pl.List(pl.Utf8)
    text = pl.concat_str(pl.col("where").fill_null(""), pl.lit(" "), pl.col("message").fill_null(""))
    for meaning, pattern in SAYS.items():
        read = text if meaning == "benign" else pl.col("message")
        want = ev.select(read.str.contains(pattern).fill_null(False))[:, 0]
        got = ev.select(says(meaning).fill_null(False))[:, 0]
        assert got.to_list() == want.to_list(), meaning
    # the crash's own lines say something: this run's rank raised, and its peers' sockets closed
    assert ev.filter(says("consequence"))["kind"].len() > 0


def test_a_stored_store_reads_back_its_column(tmp_path):
    store = ingest([SAMPLES / "gloo_2x2_crash"])
    folder = store.write(tmp_path / "store")
    for back in (Store.read(folder), scan(folder)):
        assert back.events["says"].to_list() == store.events["says"].to_list()


def test_a_store_written_before_the_column_is_refused(tmp_path):
    store = ingest([SAMPLES / "gloo_2x2_crash"])
    folder = store.write(tmp_path / "store")
    store.events.drop("says").write_parquet(folder / "events.parquet")
    with pytest.raises(StoreError, match="columns differ from tracekit's schema; re-run `tracekit ingest`"):
        Store.read(folder)
    assert "says" in schema.EVENTS
