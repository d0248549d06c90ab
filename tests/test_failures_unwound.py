"""NCCL's unwind lines alone (`NCCL INFO misc/socket.cc:564 -> 2`, printed by NCCLCHECK as each caller returns
the error), with no WARN to say why: where NCCL failed and with which ncclResult_t; through its bootstrap, the
communicator's init never completed (an init stall); a stray unwind elsewhere (a job that went on) is not
this rule's."""

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

BOOT = """\
nd20-01:191191:219889 [0] NCCL INFO misc/socket.cc:564 -> 2
nd20-01:191191:219889 [0] NCCL INFO misc/socket.cc:615 -> 2
nd20-01:191191:219889 [0] NCCL INFO bootstrap.cc:270 -> 2
nd20-01:191191:219889 [0] NCCL INFO init.cc:1303 -> 2
nd20-01:191191:219889 [0] NCCL INFO group.cc:64 -> 2 [Async thread]
"""


def _decide(tmp_path, text, name="rank0.log"):
    (tmp_path / name).write_text(text)
    return decide(ingest([tmp_path / name]))


def test_an_unwind_through_the_bootstrap_is_the_init_failing(tmp_path):
    v = _decide(tmp_path, BOOT)
    assert v.kind == Kind.INIT_STALL and v.rule == "nccl_unwound"
    assert "in misc/socket.cc:564 with code 2 (ncclSystemError" in v.summary
    assert "`misc/socket.cc:564 -> 2, misc/socket.cc:615 -> 2, bootstrap.cc:270 -> 2, init.cc:1303 -> 2" in v.summary


def test_an_unwind_elsewhere_is_not_this_rules(tmp_path):
    v = _decide(tmp_path, BOOT.replace("bootstrap.cc:270", "enqueue.cc:270").replace("init.cc:1303",
                                                                                     "group.cc:1303"))
    assert v.rule != "nccl_unwound"


def test_a_warn_says_more_than_the_unwind(tmp_path):
    v = _decide(tmp_path, "nd20-01:191191:219889 [0] misc/socket.cc:484 NCCL WARN socketPollConnect: Connect to "
                "10.0.0.2<43213> returned 113(No route to host) errno 115(Operation now in progress)\n" + BOOT)
    assert v.rule != "nccl_unwound"
