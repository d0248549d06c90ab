"""Ascend CANN's own log lines (the plog and device logs under ``$ASCEND_PROCESS_LOG_PATH/debug``, and the
same lines on stdout with ``ASCEND_SLOG_PRINT_TO_STDOUT=1``): ``[LEVEL] MODULE(pid,process):time [file.cc:N]
[tid]message``, e.g. ``[ERROR] HCCL(80812,):2026-06-17-02:21:43.853.333 [transport_manager.cc:954]
[86231][InitChannelStage][RunFailed]Transport init error! createLink para:rank[7]-localUserrank[7]-
localIpAddr[80.5.5.39/7], remoteRank[15]-...-remoteIpAddr[80.5.5.67/7], ...`` (vllm-project/vllm-ascend
#10591; the date has a dash or a space before the clock, the thread id a space or none before it).

HCCL names the stage of a failure in brackets (CANN 8.5 and later, its troubleshooting guide's multi-level
keywords: ``[InitGroupStage]`` the communicator's init, ``[InitChannelStage]`` the links of the parameter
plane that a collective's first call builds between two ranks, ``[TaskExecStage]`` a collective's run).
Decoded here: a link between two ranks that HCCL could not build (``[InitChannelStage]`` at ERROR, or,
in releases without the keywords, ``Transport init error`` / ``create link ... failed``): a
``transport_error`` of the rank the line names (``rank[7]``), with the remote rank and both addresses, for
the collective its tag names; a link that timed out (``[InitChannelStage][Timeout]``) is one the peer never
answered: the guide's first check is the peer's log (no error there: it never issued that collective). Every
line of the shape is claimed (known: HCCL's unwind ``call trace:
hcclRet -> 4`` and its other lines say what the decoded ones say, or belong to rules not written yet).

(CANN's EI0005, HCCL's consistency check of a collective's arguments, is read by
``parsers/runtimes/collective_checks.py``.)
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind

#: the shape of a CANN log line (dlog's ``[%s] %s(%d,%s):%s`` head, then the source and the thread)
LINE = (r"^\[(?P<level>ERROR|WARNING|WARN|INFO|DEBUG|EVENT|TRACE)\] (?P<module>[A-Z][A-Z0-9_]*)"
        r"\((?P<pid>\d+),(?P<proc>[^)]*)\):\s?(?P<stamp>\d{4}-\d{2}-\d{2}[- ]\d{2}:\d{2}:\d{2}[.\d]*)\s*"
        r"(?:\[(?P<src>[\w.\-]+):\d+\])?\s*(?:\[\d+\]|\(tid:\d+\))?(?P<msg>.*)$")
CHEAP = r"^\[(?:ERROR|WARNING|WARN|INFO|DEBUG|EVENT|TRACE)\] [A-Z][A-Z0-9_]*\(\d+,"
#: a link between two ranks that HCCL could not build (the stage keyword, or the older words of it)
LINK_FAILED = (r"\[InitChannelStage\]|(?i:transport init error|create ?link\b[^\n]*\bfail"
               r"|\[Create\]\[DestLink\])")
RANK = r"(?:^|[^A-Za-z])rank\[(\d+)\]"
REMOTE = r"remoteRank\[(\d+)\]"
LOCAL_IP = r"localIpAddr\[([^\]/]+)"
REMOTE_IP = r"remoteIpAddr\[([^\]/]+)"
TAG = r"tag\[([^\]]+)\]"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("cann")
    t = pl.col("text")
    said = lines.filter(t.str.contains(CHEAP) & t.str.contains(LINE))
    if not said.height:
        return Parsed("cann")
    said = said.with_columns(t.str.extract_groups(LINE).alias("_g")).unnest("_g").with_columns(
        pl.col("pid").cast(pl.Int64, strict=False))
    m = pl.col("msg")
    link = said.filter((pl.col("module") == "HCCL") & (pl.col("level") == "ERROR") & m.str.contains(LINK_FAILED))
    # (the unwind of one failure names the link on one line: where a line names the rank, the rankless are its)
    named = m.str.contains(RANK)
    link = link.filter(named | ~named.any().over("file"))
    events = None
    if link.height:
        rank = pl.coalesce(pl.col("launch_rank"), m.str.extract(RANK, 1).cast(pl.Int64, strict=False))
        remote = m.str.extract(REMOTE, 1)
        peer = pl.when(remote.is_not_null()).then(
            pl.format(" to rank {}", remote) + pl.when(m.str.contains(REMOTE_IP)).then(
                pl.format(" ({} -> {})", m.str.extract(LOCAL_IP, 1).fill_null("?"), m.str.extract(REMOTE_IP, 1)))
            .otherwise(pl.lit(""))).otherwise(pl.lit(""))
        tag = pl.when(m.str.contains(TAG)).then(pl.format(" for {}", m.str.extract(TAG, 1))).otherwise(pl.lit(""))
        who = pl.when(rank.is_not_null()).then(pl.format("rank {}", rank)).otherwise(pl.format("pid {}", "pid"))
        events = link.select(
            "file", "line", pl.lit(EventKind.TRANSPORT_ERROR).alias("kind"), "pid", rank.alias("rank"),
            pl.format("hccl {}", pl.col("src").fill_null("")).str.strip_chars().alias("where"),
            pl.format("HCCL: {} could not build its link{}{}{}: {}", who, peer, tag,
                      pl.when(m.str.contains(r"\[Timeout\]|(?i:timeout)")).then(
                          # (said without a socket's words: no rule is to read it as a store's connection)
                          pl.lit(" (the peer never answered; if its log shows no error, it never issued that "
                                 "collective)")).otherwise(pl.lit("")),
                      m.str.replace(r"^(?:\[\w+\])+", "").str.slice(0, 160)).alias("message"))
    ranks = said.select("file", "pid", pl.col("launch_rank").alias("rank"))
    if link.height:  # (both ends of a failed link are ranks the log names)
        ends = [link.select("file", "pid", m.str.extract(RANK, 1).cast(pl.Int64, strict=False).alias("rank")),
                link.select("file", pl.lit(None, pl.Int64).alias("pid"),
                            m.str.extract(REMOTE, 1).cast(pl.Int64, strict=False).alias("rank"))]
        ranks = pl.concat([ranks, *(e.filter(pl.col("rank").is_not_null()) for e in ends)], how="diagonal_relaxed")
    ranks = ranks.unique(maintain_order=True)
    return Parsed("cann", {"events": events, "ranks": ranks}, said.select("file", "line"))
