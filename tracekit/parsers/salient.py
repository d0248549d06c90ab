"""The telling lines among those no parser decodes: a crash, a transport failure, a wait, an error.

A fallback reader, run after every parser of the registry (``tracekit.formats``) over the lines none of
them claimed. It classes a line by its vocabulary alone, the words real programs print when they fail:
a shell's ``Killed`` and ``Segmentation fault (core dumped)``, Python's ``Fatal Python error``, a CUDA
kernel's ``Assertion `...` failed``, the kernel's OOM killer, Ray's ``Worker unexpectedly exits``, PyTorch's
``Unexpected segmentation fault encountered in worker``; UCX's ``Transport retry count exceeded on
mlx5_0:1/IB`` and ``Send completion with error``, verbs' ``IBV_WC_*`` statuses, errno's ``Connection
reset by peer``; XLA's ``Waiting to connect to client mesh master``, Ray's ``Placement group creation
timed out``; and otherwise a line at an error level (glog's ``E1204``, Python logging's ``ERROR``, a
``XxxError:``). One ``telling_line`` event per line: ``message`` its text, ``where`` its class
(``CLASSES``), with the rank, host and pid its prefix gives (a launcher's, UCX's ``[host:pid:tid]``,
NCCL's ``host:pid:tid [dev]``, Ray's ``(pid=N)``).

Such a line is not decoded: it stays an unknown line (``Parsed.claimed`` is empty), and the event only
lets the verdict quote it (``situation.undecided``) and weigh it (``rules_salient``). Words in benign
context do not count: a setting (``--timeout 1800``, ``NCCL_IB_TIMEOUT=22``, ``timeout: 30``), a count of
none (``errors: 0``, ``no error``), a progress bar, a traceback's source line, a rich traceback's box.
An error the program says it caught (``Ignoring``, ``retrying``) is an error, never a crash.
"""

from __future__ import annotations

from enum import StrEnum

import polars as pl

from tracekit.parsers import Parsed
from tracekit.schema import EventKind



class Telling(StrEnum):
    """What a telling line's words say (its event's ``where``), strongest first: a line is of the first
    class whose words it holds."""

    CRASH = "crash"
    TRANSPORT = "transport"
    WAIT = "wait"
    ERROR = "error"


CRASH = (
    r"(?i)segmentation fault|\bsegfault|\bSIG(?:SEGV|ABRT|BUS|KILL|ILL|FPE)\b|core dumped|fatal python error"
    r"|assertion .{1,300} failed|device-side assert|(?-i:^\s*Killed\b|\d Killed\s|\bKilled process \d)"
    r"|\bexited unexpectedly|\bunexpectedly exits?\b|\b(?:has|worker|process|actor) (?:has )?died\b"
    r"|\bis dead\b|out of memory|\boom[- ]?kill|terminate called (?:after|without)"
    r"|\*\*\* process received signal|<defunct>|illegal memory access|\bcrashed\b|\bbus error\b"
)
#: a transport's own failure: decisive where nothing decoded says otherwise (``HARD_TRANSPORT``)
HARD_TRANSPORT = (
    r"(?i)retry count(?:er)? exceeded|\bIBV_WC_[A-Z_]+|\bibv_\w+(?:\(\))? failed|completion with error"
    r"|\b(?:local|remote) (?:length|protection|access|operation|invalid request) error"
    r"|\b(?:mlx[45]_\d+|roce|efa|libfabric)\b.*\b(?:error|fail(?:ed|ure)?)\b"
)
TRANSPORT = HARD_TRANSPORT + (
    r"|connection (?:reset|refused|timed out|closed by peer)|no route to host|network is unreachable"
    r"|broken pipe|address family not supported|wrong magic|transport endpoint is not connected"
    r"|\bE(?:CONNRESET|CONNREFUSED|HOSTUNREACH|NETUNREACH|PIPE)\b"
)
WAIT = (r"(?i)\bwaiting (?:for|to|on)\b|\bstill waiting\b|\btimed? ?out\b|\btimeout\b|deadline exceeded"
        r"|\bhang(?:s|ing)?\b|\bhung\b|\bstuck\b|not responding")
ERROR = (r"(?i)^\s*(?:error|fatal|critical)\b|\[(?:error|fatal|critical)\]|(?-i:\b(?:ERROR|FATAL|CRITICAL)\b)"
         r"|^\s*[EF]\d{4} \d\d:\d\d|\b[A-Z]\w*(?:Error|Exception)\b:|\bunhandled exception\b"
         r"|\berror: |\bfailed\b|\bfailure\b")
#: a wait for a connection, a rendezvous or a peer during start-up (rules_salient: an init stall)
CONNECT = (r"(?i)\bconnect|rendezvous|\bmaster\b|bootstrap|tcpstore|\bstore\b|placement group|handshake"
           r"|\bjoin|\bpeers?\b")
#: words in benign context: a setting, a count of none, a progress bar, source code, a rich traceback's box
BENIGN = (
    r"(?i)\b(?:errors|failures|failed|fails|error_count|num_errors)\s*[:=]\s*0\b|\berror\s*=\s*0\b"
    r"|\b0 (?:errors?|failures?|failed)\b|error_rate|\bno errors?\b|without (?:an )?errors?"
    # a setting: ``timeout: 30``, ``NCCL_IB_TIMEOUT=22`` (``TimeoutError:`` is no setting)
    r"|(?-i:\b[a-z_]*timeout[a-z_]*\s*[=:]\s*\S)|(?-i:[A-Z_]*TIMEOUT[A-Z_]*=)"
    r"|--[\w-]*timeout|timeout (?:set to|of \d|is set)|\d+%\|[^|]*\||\d(?:it/s|s/it)\]|warnings\.warn\("
    r"|^\s*(?:raise|except|def|elif|return|assert|import|from \S+ import)\b|^\s*File \"|^\s*[│|┃] "
    r"|^\s*(?:#|> )|stack trace:?$|timeout\(ms\)\s*="
    # a call's argument list (``init_process_group(backend, timeout, init_method, rank)``): source code
    r"|\b\w+\((?:\s*[\w.]+(?:=[\w.]+)?\s*,)+"
)
#: a program that says it caught the error and went on: an error, never a crash or a failure
CAUGHT = (r"(?i)\bignor(?:e|ed|ing)\b|\bretrying\b|\bwill (?:be )?retr|\bretry(?:ing)? (?:in|after) \d"
          r"|\bfalling back\b|\bfallback\b")
#: the process a line's own prefix names: UCX/Open MPI ``[host:pid:tid]``, NCCL ``host:pid:tid [dev]``
BRACKET = r"^\s*(?:\[[\d.]+\]\s*)?\[(?P<host>[A-Za-z][\w.\-]*):(?P<pid>\d+)(?::\d+)+\]"
NCCL_LIKE = r"^\s*(?P<host>[A-Za-z][\w.\-]*):(?P<pid>\d+):\d+ \[\d+\]"
RAY_PID = r"\(\w+ pid=(?P<pid>\d+)"


def _class() -> pl.Expr:
    t = pl.col("text")
    level = pl.col("log_level").fill_null("").is_in(["ERROR", "CRITICAL", "E", "C"])
    caught = t.str.contains(CAUGHT)
    return (pl.when(t.str.contains(CRASH) & ~caught).then(pl.lit(Telling.CRASH))
            .when(t.str.contains(TRANSPORT) & ~caught).then(pl.lit(Telling.TRANSPORT))
            .when(t.str.contains(WAIT)).then(pl.lit(Telling.WAIT))
            .when(t.str.contains(ERROR) | level).then(pl.lit(Telling.ERROR)))


def parse(lines: pl.DataFrame, unclaimed: pl.DataFrame) -> Parsed:
    """A ``telling_line`` event for each line of ``unclaimed`` (``file, line``: the non-blank lines no
    parser claimed) whose words class it; ``lines``: the lines frame (``text.lines_frame``)."""
    if not unclaimed.height:
        return Parsed("salient")
    cols = ["file", "line", "text", "log_level", "launch_rank", "pdsh_host", "ray_pid"]
    df = lines.select(c if c in lines.columns else pl.lit(None).alias(c) for c in cols)
    df = df.join(unclaimed.select("file", "line"), on=["file", "line"], how="semi")
    t = pl.col("text")
    any_word = "|".join(p.removeprefix("(?i)") for p in (CRASH, TRANSPORT, WAIT, ERROR))
    df = df.filter(t.str.contains("(?i)" + any_word)
                   | pl.col("log_level").fill_null("").is_in(["ERROR", "CRITICAL", "E", "C"]))
    # (a line of a few characters, ``{`` or ``Error:`` under an error level, says nothing to quote; a
    # shell's ``Killed`` does)
    df = df.filter(~t.str.contains(BENIGN) & t.str.strip_chars().str.len_chars().is_between(6, 4000))
    if not df.height:
        return Parsed("salient")
    # a traceback's source line (the line under ``File "x.py", line N``) quotes code, not an event
    before = lines.select("file", (pl.col("line") + 1).alias("line"), pl.col("text").alias("_before"))
    df = df.join(before, on=["file", "line"], how="left").filter(
        ~pl.col("_before").fill_null("").str.contains(r"^\s*File \"[^\"]+\", line \d+"))
    df = df.with_columns(_class().alias("where")).filter(pl.col("where").is_not_null())
    if not df.height:
        return Parsed("salient")
    bracket, nccl_like = t.str.extract_groups(BRACKET).struct, t.str.extract_groups(NCCL_LIKE).struct
    events = df.select(
        "file", "line", pl.lit(EventKind.TELLING_LINE).alias("kind"), t.str.strip_chars().alias("message"),
        "where", pl.col("launch_rank").alias("rank"),
        pl.coalesce("pdsh_host", bracket.field("host"), nccl_like.field("host")).alias("host"),
        pl.coalesce(pl.col("ray_pid").cast(pl.Int64), bracket.field("pid").cast(pl.Int64, strict=False),
                    nccl_like.field("pid").cast(pl.Int64, strict=False),
                    t.str.extract(RAY_PID, 1).cast(pl.Int64, strict=False)).alias("pid"))
    return Parsed("salient", {"events": events})


def hard_transport() -> pl.Expr:
    """Whether a ``telling_line``'s message is a transport's own failure (a completion error, a retry
    count exceeded, a socket of an address family the host has not), not a socket closed under a peer
    that died."""
    return pl.col("message").str.contains(HARD_TRANSPORT + r"|socket creation failed|address family not supp")


def waits_to_connect() -> pl.Expr:
    """Whether a ``telling_line`` of class wait names a connection, rendezvous or peer being waited for."""
    return (pl.col("where") == Telling.WAIT) & pl.col("message").str.contains(CONNECT)


def timed_out() -> pl.Expr:
    """Whether a line says its wait ended without the thing waited for (``timed out``, ``deadline
    exceeded``), not only that it waits."""
    return pl.col("message").str.contains(r"(?i)\btimed? ?out\b|deadline exceeded|TimeoutError")
