"""c10d's store socket (torch/csrc/distributed/c10d/socket.cpp, TCPStore) giving up before any
communicator exists: an init stall that says the port, the address or the key, never a transport
error or a generic UNDECIDED. The lines are as PyTorch prints them (glog prefix, [c10d] tag)."""

from tracekit.ingest import ingest
from tracekit.outcome import EventKind
from tracekit.verdict import Kind, decide


def _decide(tmp_path, text):
    (tmp_path / "rank0.log").write_text(text)
    s = ingest([tmp_path])
    return s, decide(s)


def test_a_port_in_use_is_an_init_stall_that_names_the_port(tmp_path):
    _, v = _decide(tmp_path, "[W socket.cpp:426] [c10d] The server socket has failed to bind to "
                   "[::]:25641 (errno: 98 - Address already in use).\n[W socket.cpp:426] [c10d] The server "
                   "socket has failed to bind to 0.0.0.0:25641 (errno: 98 - Address already in use).\n")
    assert v.kind == Kind.INIT_STALL and "25641" in v.summary and "Address already in use" in v.summary


def test_a_store_host_no_address_reaches_is_an_init_stall(tmp_path):
    _, v = _decide(tmp_path, "[W socket.cpp:697] [c10d] The client socket has failed to connect "
                   "to 10.0.0.7:47389 (errno: 110 - Connection timed out).\n[E socket.cpp:753] [c10d] The "
                   "client socket has failed to connect to any network address of (node7, 47389).\n")
    assert v.kind == Kind.INIT_STALL and "node7, 47389" in v.summary


def test_a_store_connect_timeout_is_an_init_stall(tmp_path):
    _, v = _decide(tmp_path, "Traceback (most recent call last):\n  File \"/x/torch/distributed/"
                   "elastic/rendezvous/c10d_rendezvous_backend.py\", line 155, in _create_tcp_store\n"
                   "    store = TCPStore(\nRuntimeError: connect() timed out. "
                   "Original timeout was 60000 ms.\n")
    assert v.kind == Kind.INIT_STALL and "60000 ms" in v.summary


def test_a_failed_ncclUniqueId_exchange_is_the_communicators_init(tmp_path):
    _, v = _decide(tmp_path, "[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL "
                   "communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', "
                   "but store->get('0') got error: wait timeout after 600000ms, "
                   "keys: /default_pg/0//cuda//0\n")
    assert v.kind == Kind.INIT_STALL and "ncclUniqueId" in v.summary
    assert "never completed" in v.summary


def test_a_retry_on_an_ipv6_address_is_not_a_failure(tmp_path):
    """Healthy runs print these (localhost resolves to ::1 first on a host without IPv6)."""
    s, _ = _decide(tmp_path, "[W socket.cpp:663] [c10d] The client socket has failed to connect to "
                   "[localhost]:29500 (errno: 97 - Address family not supported by protocol).\n"
                   "[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29500 "
                   "(errno: 97 - Address family not supported by protocol).\n")
    assert not s.events.filter(s.events["kind"] == EventKind.C10D_ERROR).height


def test_a_gloo_full_mesh_that_never_connects_is_the_process_groups_init(tmp_path):
    _, v = _decide(tmp_path, "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/"
                   "transport/tcp/pair.h:301] Connect timeout [none]\n[E108 17:22:04.118509503 "
                   "ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed with [../third_party/gloo/gloo/"
                   "transport/tcp/pair.h:301] Connect timeout [none]\n")
    assert v.kind == Kind.INIT_STALL and "connectFullMesh" in v.summary and "GLOO_SOCKET_IFNAME" in v.summary
