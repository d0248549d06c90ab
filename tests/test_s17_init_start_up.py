"""Issue 31, branch init: INIT_STALL where a runtime says in its own words that start-up stopped waiting
(rules_init): ProcessGroupNCCL's ncclUniqueId fetch from the store, JAX's TPU backend init past its timer,
torchft's lighthouse short of its quorum. Real dev excerpts and factory stores."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factory import make_store
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.outcome import Kind
from tracekit.rules import first

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


def _first(store):
    return first(Evidence.gather(store))


@pytest.mark.parametrize("excerpt, ranks, says", [
    # torch < 2.1 spells it `retreiving`; before this rule: UNDECIDED (timed_out, no record of the missing rank)
    ("dv12-022-pytorch-rank2-nccluniqueid-store-get-socket-timeout.txt", [2],
     ["rank 2 waited for the ncclUniqueId that rank 0 puts in the c10d store under key '0'", "Socket Timeout"]),
    # the `[1]` head opens the line, read as a launcher's prefix: the rank comes from the event
    ("dv6-039-kaito-idle-worker-rank1-store-get-socket-timeout.txt", [1],
     ["rank 1 waited for the ncclUniqueId", "Socket Timeout"]),
    # only the C++ frames of the raised error: TCPStore::get under broadcastUniqueNCCLID (before: nothing)
    ("dv16-024-llamafactory-rank2-tcpstore-get-broadcast-uniqueid-frames.txt", [2],
     ["rank 2 raised while its store get waited for the ncclUniqueId", "broadcastUniqueNCCLID"]),
])
def test_unique_id_fetch_failed_is_an_init_stall(excerpt, ranks, says):
    name, v = _first(ingest([WILD / excerpt]))
    assert (name, v.kind, v.ranks) == ("start_up_unfinished", Kind.INIT_STALL, ranks)
    assert v.summary.startswith("the NCCL communicator's set-up never completed: ")
    for words in says:
        assert words in v.summary
    assert v.evidence and v.evidence[0].file.endswith(excerpt)


@pytest.mark.parametrize("excerpt, says", [
    ("dv17-006-jax-tpu-v4-32-backend-init-over-60s.txt",
     ["JAX's TPU backend initialization had not returned", "taking more than 60.0 seconds"]),
    ("dv14-034-torchft-lighthouse-no-quorum-1-of-2-participants.txt",
     ["torchft's lighthouse never had the replica groups", "only have 1 participants, need 2", "(said 3 times)"]),
])
def test_a_runtime_overdue_start_up_is_an_init_stall(excerpt, says):
    name, v = _first(ingest([WILD / excerpt]))
    assert (name, v.kind) == ("start_up_unfinished", Kind.INIT_STALL)
    assert v.summary.startswith("start-up never completed: ")
    for words in says:
        assert words in v.summary
    assert v.evidence and v.evidence[0].file.endswith(excerpt)


def test_unknown_exception_variant_and_key_from_a_factory_store():
    """broadcastUniqueNCCLID's other message (a non-standard exception): no error text, the key and rank; read
    as a transport error (its `network set up issue`), as torch_log reads dv6-039's line, so the rendezvous
    rule (exceptions only) does not see it."""
    text = ("torch.distributed.DistBackendError: Unknown exception while [5] is setting up NCCL communicator "
            "and retrieving ncclUniqueId from [0] via c10d key-value store by key '1:5'. This may indicate "
            "a possible application crash on rank 0 or a network set up issue.")
    store = make_store(events=[dict(file="r5.log", line=7, kind="transport_error", rank=5, message=text)])
    name, v = _first(store)
    assert (name, v.kind, v.ranks) == ("start_up_unfinished", Kind.INIT_STALL, [5])
    assert "rank 5 waited for the ncclUniqueId that rank 0 puts in the c10d store under key '1:5' and never " \
           "got it" in v.summary


def test_a_quorum_short_after_steps_is_not_a_start_up():
    """torchft's quorum short of members while the loop already stepped: a replica group left mid-run, not a
    start-up that never completed: this rule stays silent."""
    line = ("torchft::lighthouse: 2025-01-09T19:50:55.422+00:00 - INFO start: No quorum, only have 1 participants, "
            "need 2")
    quorum = [dict(file="l.log", line=i, kind="stall", where="torchft quorum", message=line) for i in (10, 11)]
    steps = [dict(file="t.log", line=i, kind="step", rank=0, step=i, loss=1.0, message=f"step {i}")
             for i in range(1, 6)]
    name, _ = _first(make_store(events=quorum + steps))
    assert name != "start_up_unfinished"
    name, v = _first(make_store(events=quorum))
    assert (name, v.kind) == ("start_up_unfinished", Kind.INIT_STALL)


@pytest.mark.parametrize("excerpt, says", [
    # the init container's loop said `waiting for master` (after nslookup could not resolve master-0), then
    # torchrun's agent raised with its error cut (before: UNDECIDED, agent_raised)
    ("dv10-005-msswift-dlc-master-dns-torchrun.txt", '"waiting for master"'),
    # kubelet backs off restarting the init container (before: UNDECIDED, the line read by its words)
    ("dv9-013-kubeflow-trainer-worker-init-pytorch-backoff.txt",
     '"Warning BackOff 2m49s kubelet Back-off restarting failed container init-pytorch'),
])
def test_a_worker_waiting_for_the_masters_name_is_an_init_stall(excerpt, says):
    name, v = _first(ingest([WILD / excerpt]))
    assert (name, v.kind) == ("start_up_unfinished", Kind.INIT_STALL)
    assert v.summary.startswith("start-up never completed: the worker's init container (Kubeflow's init-pytorch")
    assert "waited for the master's host name to resolve (DNS)" in v.summary and says in v.summary


def test_the_masters_name_waited_for_then_steps_is_not_a_stall():
    """The init container waited, then the job trained: its start-up completed, the rule stays silent."""
    wait = [dict(file="w.log", line=i, kind="telling_line", where="wait", message="waiting for master")
            for i in (1, 2)]
    steps = [dict(file="w.log", line=10 + i, kind="step", rank=0, step=i, loss=1.0, message=f"step {i}")
             for i in range(1, 6)]
    name, _ = _first(make_store(events=wait + steps))
    assert name != "start_up_unfinished"
    name, v = _first(make_store(events=wait))
    assert (name, v.kind, v.summary.endswith('"waiting for master" (said 2 times)')) == (
        "start_up_unfinished", Kind.INIT_STALL, True)
