"""TensorPipe's RPC agent (torch.distributed.rpc, ``torch/csrc/distributed/rpc/tensorpipe_agent.cpp``): its
word that a pipe to a peer failed, ``[W tensorpipe_agent.cpp:916] RPC agent for 3 encountered error when
sending outgoing request #0 to 0: async error on socket: Connection reset by peer (this error originated at
tensorpipe/transport/shm/connection_impl.cc:259)``, also ``when reading incoming request from``, ``reading
incoming response from``, ``sending outgoing response to``.

Each is a ``transport_error`` of the agent that wrote it, ``where`` naming the peer; an agent's name that is
a number (``rpc.init_rpc(str(rank), ...)``) is its rank, any other name (``worker3``, ``ps0``) names none."""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

AGENT = (r"RPC agent for (?P<me>\S+) encountered error when "
         r"(?P<what>sending outgoing (?:request #\d+|response) to"
         r"|reading incoming (?:request|response) from) "
         r"(?P<peer>\S+?): (?P<error>.*?)"
         r"(?: \(this error originated at (?P<at>[^)]*)\))?\s*$")


def parse(lines: pl.DataFrame) -> Parsed:
    t = pl.col("text")
    if not lines.height:
        return Parsed("tensorpipe")
    hit = lines.filter(t.str.contains("RPC agent for ", literal=True) & t.str.contains(AGENT))
    if not hit.height:
        return Parsed("tensorpipe")
    g = t.str.extract_groups(AGENT).struct
    events = hit.select(
        "file", "line", pl.lit(EventKind.TRANSPORT_ERROR).alias("kind"),
        pl.coalesce(pl.col("launch_rank"), g.field("me").cast(pl.Int64, strict=False)).alias("rank"),
        pl.format("tensorpipe (peer {})", g.field("peer")).alias("where"),
        pl.format("TensorPipe RPC agent {} {} {}: {}", g.field("me"), g.field("what"), g.field("peer"),
                  g.field("error")).alias("message"))
    ranks = events.filter(pl.col("rank").is_not_null()).select("file", "rank").unique(maintain_order=True)
    return Parsed("tensorpipe", {"events": events, "ranks": ranks}, hit.select("file", "line"))
