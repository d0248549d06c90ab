"""An NCCL WARN from a source file of NCCL's own that is not its network's (graph/xml.h's `Attribute %s of
node %s not found`, returned as ncclInternalError and unwound up to init.cc) is NCCL failing in its own code
on that rank, not a transport error; a WARN of a transport file (net_ib.cc, socket.cc, proxy.cc) stays the
network's. Lines in NCCL's format (`host:pid:tid [dev] file:line NCCL WARN ...`, `NCCL INFO file:line -> N`);
and DeepSpeed's launcher of a pdsh-started node named by pdsh's prefix when it kills its workers."""

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

OWN = """\
n1:52727:52807 [7] NCCL INFO Using network IB
n1:52727:52807 [7] graph/xml.h:139 NCCL WARN Attribute minBytes of node algo not found
n1:52727:52807 [7] NCCL INFO graph/xml.h:144 -> 3
n1:52727:52807 [7] NCCL INFO graph/topo.cc:769 -> 3
n1:52727:52807 [7] NCCL INFO init.cc:1391 -> 3
"""
NET = """\
n1:52727:52807 [7] NCCL INFO Using network IB
n1:52727:52807 [7] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<54321> with error 12, opcode 0, len 0, vendor err 129
n1:52727:52807 [7] NCCL INFO transport/net_ib.cc:1300 -> 6
"""


def _decide(tmp_path, text, name="rank7.log"):
    (tmp_path / name).write_text(text)
    return decide(ingest([tmp_path / name]))


def test_a_warn_of_nccls_own_code_is_its_failure_not_the_networks(tmp_path):
    v = _decide(tmp_path, OWN)
    # (in set-up, before any communicator completed: rules_set_up's INIT_STALL, which says it)
    assert v.kind == Kind.INIT_STALL, v.summary
    assert "NCCL failed in its own code on a rank: graph/xml.h:139: Attribute minBytes" in v.summary
    assert "it unwound with code 3 through 3 call(s) (last init.cc:1391): ncclInternalError" in v.summary


def test_a_warn_of_a_transport_file_stays_the_networks(tmp_path):
    v = _decide(tmp_path, NET)
    assert v.kind == Kind.TRANSPORT_ERROR and "its own code" not in v.summary


def test_network_words_in_any_file_stay_the_networks(tmp_path):
    v = _decide(tmp_path, OWN.replace("Attribute minBytes of node algo not found",
                                      "Call to connect returned Connection refused, retrying"))
    assert "its own code" not in v.summary


def test_deepspeeds_launcher_on_a_pdsh_node_is_named(tmp_path):
    text = "".join(f"192.169.83.120: [2023-10-13 11:31:28,593] [INFO] [launch.py:315:sigkill_handler] Killing "
                   f"subprocess {pid}\n" for pid in (249, 250))
    v = _decide(tmp_path, text, "launcher.log")
    assert v.kind == Kind.CRASHED_RANK
    assert v.summary.startswith("a worker process failed first: the launcher on 192.169.83.120 killed its worker subprocesses (pid 249, 250) "
                                "(`[2023-10-13 11:31:28,593] [INFO] [launch.py:315:sigkill_handler] Killing")


# NCCL 2.x (its WARN without `NCCL`): a socket reset unwound through bootstrap and init
RESET = """\
node1:54573:54696 [1] include/socket.h:194 WARN Call to recv failed : Connection reset by peer
node1:54573:54696 [1] INFO transport/net_ib.cu:537 -> 2
node1:54573:54696 [1] INFO bootstrap.cu:169 -> 2
node1:54573:54696 [1] INFO init.cu:400 -> 2
"""


def test_a_reset_unwound_through_init_is_the_set_up_failing(tmp_path):
    v = _decide(tmp_path, RESET)
    assert v.kind == Kind.INIT_STALL and "unwound the error through bootstrap.cu:169" in v.summary


def test_a_reset_in_a_transports_set_up_leaves_the_peer_undecided(tmp_path):
    # (unwound through p2p and init.cc, not the bootstrap: the peer that closed it failed first, for its reason)
    v = _decide(tmp_path, RESET.replace("bootstrap.cu:169", "transport/p2p.cc:240"))
    assert v.kind == Kind.UNDECIDED and "closed its connection" in v.summary


def test_a_reset_in_a_collective_leaves_the_peer_undecided(tmp_path):
    v = _decide(tmp_path, RESET.replace("bootstrap.cu:169", "enqueue.cc:169").replace("init.cu:400",
                                                                                     "group.cc:400"))
    assert v.kind == Kind.UNDECIDED and "closed its connection" in v.summary
