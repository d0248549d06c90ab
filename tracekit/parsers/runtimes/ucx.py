"""UCX's own lines (github:openucx/ucx, the transport under Open MPI's pml ucx, NCCL's UCX plugin, UCC).

UCX prefixes what it logs with the process that wrote it. Its logger (``ucs/debug/log.c``) writes
``[1466599688.714393] [vegas30:25196:0]  rc_verbs_iface.c:47   UCX  ERROR Send completion with error:
transport retry counter exceeded``: a wall-clock stamp, ``host:pid:thread``, the source file and line, the
component and the level. Its fatal paths (``ucs_log_fatal_error``: the signal handler of
``ucs/debug/debug.c``, the IB error dump of ``uct/ib/mlx5/ib_mlx5_log.c``) write ``[host:pid:thread:tid]``
(``[host:pid:thread]`` in older releases and in MXM, UCX's forerunner: ``[ava02:21329:1] Caught signal 11
(Segmentation fault)``) then the message: ``[gpu-node09:332629:0:332629] Caught signal 11 (Segmentation
fault: address not mapped to object at address 0x10)``, then ``==== backtrace (tid: 332629) ====`` and
frames `` 0  /usr/lib/libucs.so.0 (ucs_handle_error+0x2d4) [0x7fedc925c274]``; ``[master:19546:0:19546]
ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)`` then
its work request (``DCI QP 0xa9f wqe[0]: SEND s-e ...``).

Each line's ``host`` and ``pid`` go to ``ranks`` (no rank: UCX numbers no rank; a launcher's prefix, MPI's
``[1,43]<stdout>:``, names it). Decoded: a caught signal is a ``crash`` of that process; an error the
network gave (retries exhausted, a peer's endpoint timed out or reset, a completion with error, an IB
port down) a ``transport_error``; UCX's other ERROR lines ``transport_error`` too only where they name the
network, else they are known lines (a ``crash`` is for the process's death, never for a warning).
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

# `[stamp] [host:pid:thread] file.c:line  UCX  LEVEL message` (logger) or `[host:pid:thread:tid] message`
# (the pid padded to five places: `[clx-hercules-065:1411 :0]`)
LOGGER = (r"^\[\d+\.\d+\] +\[(?P<host>[\w.\-]+):(?P<pid>\d+) *:\d+\] +(?P<src>[\w.\-]+\.(?:c|cc|h)):\d+ +"
          r"(?P<comp>[A-Z]+) +(?P<level>ERROR|WARN|DIAG|INFO|DEBUG|TRACE|FATAL|PRINT)\s+(?P<msg>.*)$")
# (a host of digits alone is a clock's `[14:26:37] `, rich's and many loggers'; an address has its dots)
FATAL = (r"^\[(?P<host>[\w.\-]*[A-Za-z.\-][\w.\-]*):(?P<pid>\d+):\d+(?::\d+)?\] +"
         r"(?:(?P<src>[\w.\-]+\.(?:c|cc|h)):\d+ +)?(?P<msg>\S.*)$")
SIGNAL = r"^Caught signal (?P<signum>\d+) \((?P<signame>[^):]+)"
BACKTRACE = r"^==== backtrace \(tid: *\d+\) ====$|^={20,}$"
# `backtrace_symbols` frames under UCX's backtrace header: ` 0  /usr/lib/libucs.so.0(sym+0x2d4) [0x7fe...]`
FRAME = r"^\s*\d+\s+\S+\([\w.:~<>]*(?:\+0x[0-9a-f]+)?\)\s+\[0x[0-9a-f]+\]\s*$"
# what the network did (uct's IB, RC, UD, DC and TCP transports; ucp's endpoint failures)
NETWORK = (r"(?i)retry count(?:er)? exceeded|completion with error|Endpoint timeout|ud_ep.*timeout"
           r"|unreachable|Connection (?:reset|refused|timed out)|remote access error|local protection error"
           r"|port.* (?:is )?(?:down|not active)|rnr retry|failed to connect|Input/output error"
           r"|transport error|IB_EVENT|async event"
           # the mlx5 error-completion dump (uct/ib/mlx5/ib_mlx5_log.c uct_ib_mlx5_completion_with_err): its
           # syndrome's name (`Local protection`, `Remote access`, `Local length`, `Bad response`, ...) then
           # `(synd 0x4 vend 0x51 hw_synd 0/2)`: every syndrome is a work request the NIC failed
           r"|\(synd 0x[0-9a-f]+ vend 0x")
# a queue pair or completion queue the verbs would not create or move (uct/ib/mlx5/dc/dc_mlx5.c:
# `ibv_modify_qp(DCI, ...) failed : %m`, ib_mlx5_dv.c, rc_iface.c `failed to create qp`): the transport's
# own set-up failed; as an error only (a UD QP's WARN is printed by jobs that then run fine)
VERBS_SETUP = r"(?i)failed to create qp|create qp failed|ibv_modify_qp\(|ibv_create_(?:qp|cq|srq|ah)\b"
CHEAP = r"^\[[\w.\-]+:\d+:\d+(?::\d+)?\] |^\[\d+\.\d+\] +\[|^==== backtrace|^={20,}$|^\s*\d+\s+\S+\(.*\) \[0x"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("ucx")
    t = pl.col("text")
    df = lines.filter(t.str.contains(CHEAP)).select("file", "line", "text", "launch_rank")
    logger = (df.filter(t.str.contains(LOGGER)).with_columns(t.str.extract_groups(LOGGER).alias("_g"))
              .unnest("_g"))
    fatal = (df.filter(~t.str.contains(LOGGER) & t.str.contains(FATAL))
             .with_columns(t.str.extract_groups(FATAL).alias("_g")).unnest("_g")
             .with_columns(pl.lit("UCX").alias("comp"), pl.lit("FATAL").alias("level")))
    said = pl.concat([logger, fatal], how="diagonal_relaxed")
    if not said.height:
        return Parsed("ucx")
    said = said.with_columns(pl.col("pid").cast(pl.Int64, strict=False))
    # a frame or a backtrace's rule only in a file where UCX wrote something: glibc's frames look alike
    files = said.select("file").unique()
    trace = (df.filter(t.str.contains(BACKTRACE) | t.str.contains(FRAME)).join(files, on="file")
             .select("file", "line"))
    m = pl.col("msg")
    where = pl.format("ucx {}", pl.col("src").fill_null("")).str.strip_chars()
    crash = said.filter(m.str.contains(SIGNAL)).with_columns(
        pl.lit(EventKind.CRASH).alias("kind"),
        pl.format("UCX: process {} on {} caught signal {} ({})", "pid", "host",
                  m.str.extract(SIGNAL, 1), m.str.extract(SIGNAL, 2)).alias("message"))
    net = said.filter(~m.str.contains(SIGNAL) & ((m.str.contains(NETWORK)
                                                  & pl.col("level").is_in(["ERROR", "FATAL", "WARN"]))
                                                 | (m.str.contains(VERBS_SETUP)
                                                    & pl.col("level").is_in(["ERROR", "FATAL"])))).with_columns(
        pl.lit(EventKind.TRANSPORT_ERROR).alias("kind"),
        pl.format("UCX {} on {} (pid {}): {}", "level", "host", "pid", m).alias("message"))
    events = pl.concat([crash, net], how="diagonal_relaxed")
    if events.height:
        events = events.select("file", "line", pl.col("kind"), "host", "pid",
                               pl.col("launch_rank").alias("rank"), where.alias("where"), "message")
    ranks = said.select("file", "host", "pid", pl.col("launch_rank").alias("rank")).unique(
        maintain_order=True)
    claimed = pl.concat([said.select("file", "line"), trace]).unique()
    return Parsed("ucx", {"events": events if events.height else None, "ranks": ranks}, claimed)
