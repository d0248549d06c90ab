"""NCCL's WARN that its peer closed the connection is a consequence of the peer's end where that end
is logged; where nothing else says why, it is what failed (the connection dropped): a transport error
that says so, not an UNDECIDED that filters the one line out."""

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WARN = ("server1:6601:6625 [0] include/socket.h:385 NCCL WARN Net : Connection closed by remote peer\n"
        "NCCL failure common.cu:921 'unhandled system error'\n")


def _decide(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return decide(ingest([tmp_path]))


def test_a_closed_connection_and_nothing_else_is_a_transport_error(tmp_path):
    v = _decide(tmp_path, {"server1.log": "Connecting to socket 10.0.0.2<46012>\n\n" + WARN})
    assert v.kind == Kind.TRANSPORT_ERROR and "Connection closed by remote peer" in v.summary
    assert "no line says the peer ended" in v.summary


def test_a_closed_connection_after_the_peer_crashed_is_not_the_networks(tmp_path):
    v = _decide(tmp_path, {"server1.log": WARN, "server2.log": "Traceback (most recent call last):\n"
                           "  File \"train.py\", line 9, in <module>\n"
                           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"})
    assert v.kind != Kind.TRANSPORT_ERROR and "no line says the peer ended" not in v.summary
