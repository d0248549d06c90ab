"""Which peer a closed connection names: the other end of a socket a rank lost, as the transport's own line says it.

A rank whose connection was closed or reset by its peer did not fail first: the peer did (it exited, was killed,
or its host went away). The line often names that peer, and the peer is the fact an expert reads from it:

- gloo's TCP pair (third_party/gloo/gloo/transport/tcp/pair.cc): ``Connection closed by peer [10.0.0.1]:5678``,
  ``Read error [10.0.0.1]:17795: Connection reset by peer``;
- NCCL's socket code (src/misc/socket.cc): ``Call to recv from 10.200.84.247<58355> failed : Broken pipe``,
  ``Net : Connection closed by remote peer host-1<41232>``;
- c10d's TCPStore client (torch/csrc/distributed/c10d/TCPStore.cpp): ``recvValue failed on SocketImpl(fd=76,
  addr=[localhost]:60950, remote=[localhost]:29500)``: the store's server, hosted by rank 0's process or the
  launcher's agent;
- torch.distributed.rpc's TensorPipe agent (tensorpipe_agent.cpp): ``RPC agent for 3 encountered error when
  sending outgoing request #0 to 0`` / ``reading incoming response from 0``: RPC worker 0, a global rank.

Several ranks that each lost the one same peer (one address and port: one process) say that process ended first;
a store's server lost is said as the store, whose host may have ended after its own work (not decided here).
"""

from __future__ import annotations

import polars as pl

#: an address and port after a transport's word for the other end (gloo's ``[addr]:port``, NCCL's ``addr<port>``,
#: the store client's ``remote=[host]:port``)
PEER_AT = (r"(?:closed by (?:remote )?peer|(?:recv|send) (?:from|to)|Read error|Write error|remote=)\s*"
           r"\[?([A-Za-z0-9][\w.\-]*?)\]?(?:<(\d{2,5})>|:(\d{2,5}))")
#: torch.distributed.rpc's TensorPipe agent: the RPC worker it was sending to or reading from
RPC_PEER = r"(?:outgoing request #\d+ to|incoming response from) (\d+):"
#: the line is c10d's store client's: the peer is the store's server
STORE = r"TCPStore|remote=\["


def named(gone: pl.DataFrame) -> pl.DataFrame:
    """``gone`` with ``peer`` (``10.0.0.1:5678``, ``rank 0``, or null where the line names none) and ``store``
    (the line is the store client's)."""
    m = pl.col("message").fill_null("")
    at = m.str.extract_groups(PEER_AT)
    port = pl.coalesce(at.struct.field("2"), at.struct.field("3"))
    addr = pl.concat_str([at.struct.field("1"), port], separator=":")
    rpc = pl.lit("rank ") + m.str.extract(RPC_PEER, 1)
    return gone.with_columns(pl.coalesce(rpc, addr).alias("peer"), m.str.contains(STORE).alias("store"))


def writers(rows: pl.DataFrame) -> int:
    """The distinct processes that wrote ``rows``: by rank, else by pid, else by host, within a file; an RPC
    agent's own number where the line names it (``RPC agent for 3``)."""
    agent = pl.col("message").fill_null("").str.extract(r"RPC agent for (\d+)\b", 1)
    key = pl.coalesce(pl.col("rank").cast(pl.Utf8), agent,
                      *([pl.col("pid").cast(pl.Utf8)] if "pid" in rows.columns else []),
                      *([pl.col("host")] if "host" in rows.columns else []))
    keyed = rows.select("file", key.alias("_who"))
    return keyed.drop_nulls("_who").unique().height or (1 if rows.height else 0)


def one_peer_lost_by_many(gone: pl.DataFrame) -> str | None:
    """The one peer (not a store's server) that every line naming a peer names, where two processes or more lost
    it: the process that ended first. None otherwise."""
    said = named(gone).filter(pl.col("peer").is_not_null())
    if not said.height or said["store"].any() or said["peer"].n_unique() != 1 or writers(said) < 2:
        return None
    return said["peer"][0]


def peer_text(gone: pl.DataFrame) -> str:
    """``the process at 10.0.0.1:5678``, ``the c10d store's server at localhost:29500 (...)``, ``rank 0``, the
    peers named (up to three), or ``""`` where no line names one."""
    said = named(gone).filter(pl.col("peer").is_not_null()).unique("peer", maintain_order=True)
    if not said.height:
        return ""
    parts = []
    for p, store in said.select("peer", "store").head(3).iter_rows():
        if store:
            parts.append(f"the c10d store's server at {p} (hosted by rank 0's process or the launcher's agent)")
        else:
            parts.append(process(p))
    return ", ".join(parts)


def process(peer: str) -> str:
    """``rank 0`` as it is, an address as ``the process at 10.0.0.1:5678``."""
    return peer if peer.startswith("rank ") else f"the process at {peer}"
