"""Failed RDMA work as the verbs libraries and their users print it outside NCCL:

- rdma-core's mlx5 provider (providers/mlx5/cq.c, after ``mlx5_handle_error_cqe``: every error completion but
  a flush and a transport retry is dumped): ``mlx5: gpu-node-12: got completion with error:`` then four lines of the
  64-byte CQE in hex (``00000000 00008716 0a001f8e 000027d2``: syndrome 0x16, RNR retries exceeded, a
  real dump pasted with `completion was found in CQ with status 0xd`). The last line's second word holds the
  vendor syndrome (byte 54) and the syndrome (byte 55, ``enum mlx5_cqe_syndrome`` of rdma-core's mlx5dv.h);
- Open MPI's openib BTL (opal/mca/btl/openib/btl_openib_component.c ``handle_wc``): ``[[12345,1],3]
  [btl_openib_component.c:3644:handle_wc] from node1 to: node2 error polling LP CQ with status RETRY EXCEEDED
  ERROR status number 12 for wr_id 1234567 opcode 0  vendor error 129 qp_idx 3``.

- the verbs' own users failing to set the transport up (rdma-core's libibverbs/examples/rc_pingpong.c
  ``Couldn't register MR``, ``Couldn't create QP``, ``Couldn't get context for mlx5_0``, ``Failed to modify QP to
  RTR``; perftest's src/perftest_resources.c ``Couldn't allocate MR``, ``Failed to create MR``, ``Failed to
  initialize RDMA contexts.``, ``Failed to handle RDMA CM event.``; libgdsync's tests ``Couldn't register
  MR``): a memory region the NIC would not register (GPU memory without nvidia-peermem, a locked-memory
  limit), a queue pair it would not create or move: the RDMA transport never came up on that host.

- the verbs' own users reporting a work request that completed with error (rdma-core's rc_pingpong.c
  ``Failed status transport retry counter exceeded (12) for wr_id 2``; perftest's ``Completion with error at
  client`` then `` Failed status 12: wr_id 0 syndrom 0x81``): ``enum ibv_wc_status`` (infiniband/verbs.h)
  says what the NIC met.

Each is a ``transport_error`` of the host that printed it (with the peer, for Open MPI's): the NIC failed a
work request (retries to the peer exhausted, a remote access refused, a flush after an earlier error). The
hex lines of the dump are claimed with their head.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

MLX5 = r"^mlx5: (?P<host>[\w.\-]+): got completion with error:\s*$"
HEX = r"^[0-9a-f]{8} [0-9a-f]{8} [0-9a-f]{8} [0-9a-f]{8}\s*$"
OPENIB = (r"\[btl_openib_component\.c:\d+:handle_wc\] from (?P<host>[\w.\-]+) to: (?P<peer>[\w.\-]+) error "
          r"polling (?:LP|HP) CQ with status (?P<status>[A-Z ]+?) status number (?P<num>\d+)")
#: a verbs user's own word that it could not set the RDMA transport up (the programs the docstring names)
SET_UP = (r"^\s*(?:Couldn't|Could not|Failed to|Unable to)\s+(?:allocate|register|create|reg)\s+(?:MRs?|PD|CQ|QP"
          r"|IB resources|(?:a )?memory region)\b|^\s*Failed to init(?:ialize)? RDMA contexts"
          r"|^\s*Failed to (?:handle|connect) RDMA CM events?|\bibv_(?:exp_)?reg_(?:dmabuf_)?mr\b.*\bfail"
          r"|^\s*Couldn't get context for \S+|^\s*Failed to modify QP (?:\S+ )?to (?:INIT|RTR|RTS)")
#: a verbs user's word that a work request completed with error: rc_pingpong's status name and number, perftest's
#: number and vendor syndrome (its `Completion with error at client` head goes with it)
WC_FAILED = (r"Failed status (?:(?P<name>[a-zA-Z][\w /-]*?) \((?P<num>\d+)\) for wr_id|(?P<num2>\d+): wr_id \d+"
             r"(?: syndrom (?P<vendor>0x[0-9a-f]+))?)")
WC_HEAD = r"^\s*(?:\d+:\w+: )?Completion with error at (?:client|server)"
#: enum ibv_wc_status (rdma-core libibverbs/verbs.h; ibv_wc_status_str's words)
WC_STATUS = {1: "local length error", 2: "local QP operation error", 4: "local protection error",
             5: "work request flushed (after an earlier error on the queue pair)", 7: "bad response",
             8: "local access error", 9: "remote invalid request", 10: "remote access error",
             11: "remote operation error",
             12: "transport retry counter exceeded (the peer stopped acknowledging: its port, link or host)",
             13: "RNR retry counter exceeded (the peer posted no receive in time)", 16: "remote aborted",
             19: "fatal error", 20: "response timeout", 21: "general error"}
#: enum mlx5_cqe_syndrome (rdma-core providers/mlx5/mlx5dv.h)
SYNDROMES = {0x01: "local length error", 0x02: "local QP operation error", 0x04: "local protection error",
             0x05: "work request flushed (after an earlier error on the queue pair)", 0x06: "memory window bind error",
             0x10: "bad response", 0x11: "local access error", 0x12: "remote invalid request",
             0x13: "remote access error", 0x14: "remote operation error",
             0x15: "transport retry counter exceeded (the peer stopped acknowledging: its port, link or host)",
             0x16: "RNR retry counter exceeded (the peer posted no receive in time)", 0x22: "remote aborted"}


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("verbs")
    t = pl.col("text")
    # (the head's `mlx5: HOST: ` reads as a host prefix, which the text has lost: the raw line has it)
    t = pl.coalesce(pl.col("raw"), pl.col("text")) if "raw" in lines.columns else t
    df = lines.filter(t.str.contains("mlx5: |handle_wc|^[0-9a-f]{8} |Failed status|Completion with error")
                      | t.str.contains(SET_UP)).select(
        "file", "line", t.alias("text"))
    t = pl.col("text")
    if not df.height:
        return Parsed("verbs")
    df = df.sort("file", "line")
    # the dump's four hex lines, right under its head
    head_at = pl.when(t.str.contains(MLX5)).then(pl.col("line")).forward_fill().over("file")
    df = df.with_columns(head_at.alias("_head"))
    # (a paste can put a blank line between them: the first four hex lines within eight of the head)
    dump = df.filter(t.str.contains(HEX) & (pl.col("line") - pl.col("_head")).is_between(1, 8))
    dump = dump.with_columns(pl.col("line").rank("ordinal").over("file", "_head").alias("_nth")).filter(
        pl.col("_nth") <= 4)
    last = dump.filter(pl.col("_nth") == 4).select(
        "file", pl.col("_head").alias("line"),
        t.str.extract(r"^[0-9a-f]{8} [0-9a-f]{4}([0-9a-f]{2})([0-9a-f]{2})", 2).str.to_integer(base=16, strict=False)
        .alias("_synd"), t.str.extract(r"^[0-9a-f]{8} [0-9a-f]{4}([0-9a-f]{2})", 1).alias("_vend"))
    means = pl.col("_synd").replace_strict(SYNDROMES, default=None, return_dtype=pl.Utf8)
    mlx5 = df.filter(t.str.contains(MLX5)).join(last, on=["file", "line"], how="left").select(
        "file", "line", t.str.extract(MLX5, 1).alias("host"), pl.lit(EventKind.TRANSPORT_ERROR).alias("kind"),
        pl.format("libmlx5 on {}: a work request completed with error{}", t.str.extract(MLX5, 1),
                  pl.when(means.is_not_null()).then(pl.format(": syndrome 0x{} ({}), vendor syndrome 0x{}",
                                                              pl.col("_synd").map_elements(
                                                                  lambda v: f"{v:02x}", return_dtype=pl.Utf8),
                                                              means, "_vend"))
                  .otherwise(pl.lit(" (its CQE dump follows)"))).alias("message"),
        pl.lit("libmlx5").alias("where"))
    g = t.str.extract_groups(OPENIB).struct
    openib = df.filter(t.str.contains(OPENIB)).select(
        "file", "line", g.field("host").alias("host"), pl.lit(EventKind.TRANSPORT_ERROR).alias("kind"),
        pl.format("Open MPI's openib on {}: a work request to {} failed: {} (status {})", g.field("host"),
                  g.field("peer"), g.field("status").str.to_lowercase(), g.field("num")).alias("message"),
        pl.lit("open mpi openib").alias("where"))
    set_up = df.filter(t.str.contains(SET_UP) & ~t.str.contains(MLX5) & ~t.str.contains(OPENIB)).select(
        "file", "line", pl.lit(EventKind.TRANSPORT_ERROR).alias("kind"),
        pl.format("the RDMA transport's set-up failed: {}", t.str.strip_chars()).alias("message"),
        pl.lit("verbs set-up").alias("where"))
    wc = t.str.extract_groups(WC_FAILED).struct
    num = pl.coalesce(wc.field("num"), wc.field("num2")).cast(pl.Int64, strict=False)
    failed = df.filter(t.str.contains(WC_FAILED)).select(
        "file", "line", pl.lit(EventKind.TRANSPORT_ERROR).alias("kind"),
        pl.format("a work request completed with error: status {} ({}){}", num.cast(pl.Utf8),
                  pl.coalesce(wc.field("name"), num.replace_strict(WC_STATUS, default="see enum ibv_wc_status",
                                                                   return_dtype=pl.Utf8)),
                  pl.when(wc.field("vendor").is_not_null()).then(pl.format(", vendor syndrome {}", wc.field("vendor")))
                  .otherwise(pl.lit(""))).alias("message"),
        pl.lit("verbs completion").alias("where"))
    heads = df.filter(t.str.contains(WC_HEAD)).select("file", "line")
    events = pl.concat([mlx5, openib, set_up, failed], how="diagonal_relaxed")
    if not events.height:
        return Parsed("verbs")
    claimed = pl.concat([events.select("file", "line"), dump.select("file", "line"), heads]).unique()
    ranks = events.select("file", "host").unique(maintain_order=True)
    return Parsed("verbs", {"events": events, "ranks": ranks}, claimed)
