"""rules_init.start_up_said and its vocabulary (tracekit/start_up_messages.py): a runtime's own start-up
line that shows time passed or a give-up decides INIT_STALL, naming what start-up waited for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tracekit import start_up_messages as sm
from tracekit.ingest import ingest
from tracekit.outcome import Kind
from tracekit.verdict import decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def _verdict(path: Path):
    return decide(ingest([path]))


def _wild(prefix: str) -> Path:
    return next(WILD.glob(prefix + "-*.txt"))


@pytest.mark.parametrize("prefix, fact", [
    # NCCL 2.4's `Call to connect returned Connection refused, retrying`, rank 1 of 4, nothing after it
    ("dv10-011", r"Connection refused.*retrying"),
    # Ray's GCS client FATAL after its pings: `ray start` on a worker never joined the head
    ("dv14-028", r"GCS server.*10\.42\.0\.44:43507"),
    # HCCL's EI0006 on a connect request no peer made (HcclAllocComResource: the communicator's set-up)
    ("dv14-045", r"EI0006.*does not initiate a connect request"),
    # NCCL's listening socket answered by a foreign process (wrong magic), no Init COMPLETE
    ("dv8-001", r"wrong magic"),
])
def test_start_up_line_decides_init_stall(prefix, fact):
    v = _verdict(_wild(prefix))
    assert v.kind is Kind.INIT_STALL
    assert v.summary.startswith("start-up never completed")
    assert re.search(fact, v.summary)


@pytest.mark.parametrize("decided, other, kind", [
    # (refused retries alone, dv10-011, against the same retries ending in NCCL's WARN `Connect to
    # 10.38.10.112<21724> failed` unwound through bootstrap.cc, dev-116: since s24 both are set-up that never
    # completed, the second NCCL's bootstrap failure: rules_set_up.bootstrap_failed, test_s24_starts.py)
    # a refused connect (ECONNREFUSED: nobody listens yet) against `Call to connect returned Connection
    # timed out, retrying` (ETIMEDOUT: packets get no answer, the path between the hosts; nccl-024)
    ("dv10-011", "nccl-024", Kind.TRANSPORT_ERROR),
    # EI0006 on a connect request no peer made (dv14-045) against EI0006 with `Remote Rank did not send the
    # data in time` inside HcclAllreduce (dv13-046): a collective's wait, not start-up
    ("dv14-045", "dv13-046", Kind.UNDECIDED),
])
def test_what_tells_start_up_apart(decided, other, kind):
    assert _verdict(_wild(decided)).kind is Kind.INIT_STALL
    assert _verdict(_wild(other)).kind is kind


def test_nccl_counted_retry_names_the_address(tmp_path):
    # NVIDIA/nccl src/os/linux.cc:293 at 5067397c: INFO(NCCL_NET | NCCL_INIT, "%s: connect to %s returned %s,
    # retrying (%d/%ld) after sleep for %u msec", funcName, ncclSocketToString(&sock->addr, line), ...)
    log = tmp_path / "rank0.log"
    log.write_text("node1:2345:2399 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n" + "".join(
        f"node1:2345:2399 [0] NCCL INFO ncclOsSocketStartConnect: connect to 10.0.0.2<43251> returned "
        f"Connection refused, retrying ({n}/34) after sleep for {100 * n} msec\n" for n in (1, 2, 3)))
    v = _verdict(log)
    assert v.kind is Kind.INIT_STALL
    assert "10.0.0.2<43251>" in v.summary and "retry 3 of 34" in v.summary


def test_orte_daemons_not_started(tmp_path):
    # open-mpi/ompi orte/mca/errmgr/base/help-errmgr-base.txt:36 at v4.1.8 (mpirun prints the help block)
    log = tmp_path / "mpirun.log"
    log.write_text("-" * 74 + "\nORTE was unable to reliably start one or more daemons.\nThis usually is "
                   "caused by:\n\n* not finding the required libraries and/or binaries on\n  one or more nodes. "
                   "Please check your PATH and LD_LIBRARY_PATH\n" + "-" * 74 + "\n")
    v = _verdict(log)
    assert v.kind is Kind.INIT_STALL
    assert "ORTE was unable to reliably start" in v.summary and "daemons" in v.summary


def test_vocabulary_is_data_with_sources():
    names = [m.name for m in sm.MESSAGES]
    assert len(names) == len(set(names))
    for m in sm.MESSAGES:
        assert m.source and m.awaited and m.runtime
        re.compile(m.pattern)
    # a wait said once decides nothing: only the meanings that show time passed or a give-up do
    assert sm.Means.WAITING not in sm.DECISIVE
    assert sm.read("Call to connect returned Connection timed out, retrying")[0].means is sm.Means.UNREACHABLE


def test_quiet_start_up_says_what_began_and_what_to_collect():
    # Paddle's VLOG(0) before CreateComm (PaddlePaddle/Paddle paddle/fluid/imperative/nccl_context.cc,
    # NCCLParallelContext::Init), the excerpt's only line: start-up began and the log ends there (session 23:
    # its dev label's first call is init-stall; rules_init.start_up_ends_the_log)
    v = _verdict(_wild("dv17-008"))
    assert v.kind is Kind.INIT_STALL
    assert "init nccl context nranks: 4" in v.summary
    assert "the log ends there" in v.summary
