"""torchrun and PyTorch c10d stdout/stderr (docs/formats.md, "PyTorch").

Watchdog timeouts of every generation, ``ChildFailedError`` blocks, closing signals, exit codes,
collective-mismatch reports of TORCH_DISTRIBUTED_DEBUG=DETAIL, gloo transport errors, Python
exceptions, and the ``[tracekit]`` header line that ``tracekit run`` makes each rank print. The words
it reads are in ``parsers/torch_patterns``; what a line says from the lines around it (a wrapped
watchdog line, an exception's message on the next line, a cut traceback) in ``parsers/torch_context``.
"""

from __future__ import annotations

import re

import polars as pl

from tracekit.meanings import STORE_SOCKET
from tracekit.nccl_messages import message_name, reads_as
from tracekit import hccl_messages as hccl, work_phases
from tracekit.parsers import Parsed, any_of, native_fatal, process_end
from tracekit.parsers.torch_context import cut_traceback, joined_work, line_said, raised_in_init
from tracekit.parsers.torch_patterns import (
    WATCHDOG, TIMED_OUT, ABORT, CUDA, BARE_NCCL, STUCK, STORE_WAIT, ASYNC_ERROR, DESYNC, RAY_DIED,
    KEEP_ALIVE, ELASTIC, ELASTIC_KV, PG_OPTION, C10D_KNOWN, WORLD, ERROR_JSON, LIGHTNING, JOINED, PG_TAG,
    PG_COMM, LAST_WORK, AT_WORK, CHILD_RANK, CHILD_EXIT, CHILD_HOST, CHILD_TIME, FAILED, ONE_NODE, SIGNAL,
    SIGNAL_RECEIVED, MISMATCH, FINGERPRINT_LINE, GLOO_MISMATCH, GLOO_ENFORCE,
    GLOO_ERROR, CRASH, CANCELLED, KILLING,
    EXCEPTION, TRACEKIT, TRACEKIT_STALL, RUN_ENV, RUN_PKG, RUN_LAUNCH, OWN_MESSAGE, RUN_NOTE, GLOG, KNOWN,
    NCCL_FAILED, BACKEND_INIT_SLOW, QUORUM_SHORT, WRAPPED_HEAD,
    WORK, PADDLE_TIMEOUT,
)
from tracekit.schema import EventKind


def _kv(col: str, key: str) -> pl.Expr:
    return pl.col(col).str.extract(rf"(?:^|\s){key}=(\S*)", 1)


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("torch")
    t = pl.col("text")
    tag = t.str.extract_groups(PG_TAG)
    pg_rank = tag.struct.field("rank").cast(pl.Int64, strict=False)
    ray = [c for c in ("ray_pid", "ray_ip", "pdsh_host") if c in lines.columns]  # (process_end reads them)
    df = lines.select("file", "line", "text", "ts", "launch_rank", "local_tag", *ray).with_columns(
        tag.struct.field("pg").alias("pg"), tag.struct.field("guid").alias("pg_name"),
        pl.coalesce(tag.struct.field("desc"), tag.struct.field("desc2")).alias("pg_desc"),
        pl.when(tag.struct.field("pg").is_not_null()).then(pg_rank).alias("pg_rank"),
        # a launcher's prefix names the global rank; a group-local rank never replaces it
        pl.when(tag.struct.field("pg").fill_null("0") == "0").then(pg_rank).alias("_own"),
    ).with_columns(pl.coalesce("launch_rank", "_own").alias("rank"))
    # a line of another group without a launcher's prefix: the global rank of its file, where the file's
    # other lines name exactly one (a per-rank log: its `[PG ID 0 ...]` lines, tracekit's header)
    known = pl.col("_known").drop_nulls()
    df = df.with_columns(pl.coalesce("rank", pl.when(t.str.contains(TRACEKIT)).then(
        _kv("text", "rank").cast(pl.Int64, strict=False))).alias("_known"))
    df = df.with_columns(pl.coalesce("rank", pl.when(known.n_unique().over("file") == 1).then(
        known.first().over("file"))).alias("rank")).drop("_known")
    df = joined_work(df).with_columns(raised_in_init(df).alias("_init"), line_said(df).alias("_said"))
    frames = []
    kinds = []  # (kind, mask, pattern, extra), masks evaluated together below

    own = t.str.starts_with("[tracekit-run] ")  # tracekit's own record: its values are never log lines

    def add(kind: str, mask: pl.Expr, pattern: str | None = None, **extra: pl.Expr) -> None:
        if kind not in (EventKind.LAUNCH, EventKind.SETTING, EventKind.PACKAGE, EventKind.RUN_NOTE):
            mask = mask & ~own
        kinds.append((kind, mask, pattern, extra))

    def take(kind: str, rows: pl.Series, pattern: str | None, extra: dict) -> None:
        sub = df.filter(rows)
        if pattern:
            g = pl.col("_g").struct
            sub = sub.with_columns(t.str.extract_groups(pattern).alias("_g"))
            sub = sub.with_columns(  # a group named like a column (rank, pid) fills it where it matched
                (pl.coalesce(g.field(n), pl.col(n)) if n in sub.columns else g.field(n)).alias(n)
                for n in re.compile(pattern).groupindex
            ).drop("_g")
        if "message" in sub.columns and (kind in OWN_MESSAGE or kind == EventKind.SETTING):
            message = pl.col("message")  # the pattern's own group (tracekit run's `env KEY=value`)
        elif "json_message" in sub.columns:
            message = pl.col("json_message")
        elif "key" in sub.columns:  # ProcessGroupNCCL's options: `KEY: value`
            message = pl.format("{}={}", "key", "value")
        else:
            message = pl.col("_said")
        frames.append(sub.with_columns(pl.lit(kind).alias("kind"), message.alias("message"), **extra))

    # each field wherever it stands: torch 1.x prints `WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=...)`, posts
    # reorder or cut them (`WorkNCCL(OpType=ALLREDUCE, SeqNum=458) ran for`, a line wrapped mid-name)
    field = {n: t.str.extract(rf"{WORK}.*?\b{k}=(\w+)", 1)
             for n, k in (("seq", "SeqNum"), ("op", "OpType"), ("numel", "NumelIn"))}
    work = t.str.contains(WORK + r"(?:\.\.\., )?(?:SeqNum|OpType)=")  # (`...,`: a post's cut)
    wrapped = t.shift(1).over("file").str.contains(WRAPPED_HEAD).fill_null(False)  # its head says timed out
    add(EventKind.WATCHDOG_TIMEOUT, work & (t.str.contains(TIMED_OUT) | wrapped),
        WATCHDOG, seq=pl.coalesce(pl.col("seq"), field["seq"]), op=pl.coalesce(pl.col("op"), field["op"]),
        numel=pl.coalesce(pl.col("numel"), field["numel"]))
    add(EventKind.WATCHDOG_TIMEOUT, t.str.contains(PADDLE_TIMEOUT), PADDLE_TIMEOUT, where=pl.lit("paddle"))
    add(EventKind.WATCHDOG_ABORT, t.str.contains(ABORT) & ~t.str.contains(CUDA))
    add(EventKind.CUDA_ERROR, t.str.contains(CUDA))
    for ph in work_phases.PHASES:  # a phase outside collectives begun or ended (`:own`: its rank is its prefix's)
        add(EventKind.PROGRESS, t.str.contains(ph.pattern), rank=pl.col("launch_rank"), where=pl.format(
            "{}{}", pl.lit(work_phases.where(ph)), pl.when(pl.col("launch_rank").is_not_null()).then(pl.lit(":own"))
            .otherwise(pl.lit(""))))
    add(EventKind.STALL, t.str.contains(STUCK), where=pl.lit("c10d"))
    add(EventKind.STALL, t.str.contains(STORE_WAIT), where=pl.lit("c10d store barrier"))
    add(EventKind.STALL, t.str.contains(BACKEND_INIT_SLOW), where=pl.lit("jax backend init"))
    add(EventKind.STALL, t.str.contains(QUORUM_SHORT), where=pl.lit("torchft quorum"))
    add(EventKind.EXCEPTION, t.str.contains(ASYNC_ERROR), WATCHDOG)
    add(EventKind.RANK_MISSING, t.str.contains(DESYNC), DESYNC, where=pl.lit("c10d desync report"))
    add(EventKind.RANK_JOINED, t.str.contains(JOINED), JOINED, where=pl.lit("lightning"),
        rank=pl.coalesce(t.str.extract(JOINED, 1), t.str.extract(JOINED, 3)).cast(pl.Int64, strict=False),
        numel=t.str.extract(JOINED, 2).cast(pl.Int64, strict=False))
    add(EventKind.CHILD_FAILED, t.str.contains(RAY_DIED), where=pl.lit("ray"))
    add(EventKind.C10D_ERROR, t.str.contains(KEEP_ALIVE), where=pl.lit("torchelastic rendezvous keep-alive"))
    add(EventKind.SETTING, t.str.contains(PG_OPTION), PG_OPTION, where=pl.lit("c10d"))
    add(EventKind.WATCHDOG_STATUS, t.str.contains(LAST_WORK), LAST_WORK,
        seq=t.str.extract(AT_WORK, 1).cast(pl.Int64, strict=False))
    add(EventKind.COLLECTIVE_MISMATCH, t.str.contains("Detected mismatch between collectives"), MISMATCH)
    # (the same report posted with its sides on lines of their own: `but Rank 0 is running collective: ...`)
    add(EventKind.COLLECTIVE_MISMATCH,
        t.str.contains(FINGERPRINT_LINE) & ~t.str.contains("Detected mismatch"))
    add(EventKind.GLOO_SIZE_MISMATCH,
        t.str.contains("Received data size doesn't match expected size", literal=True),
        GLOO_MISMATCH)
    add(EventKind.GLOO_SIZE_MISMATCH, t.str.contains(GLOO_ENFORCE), GLOO_ENFORCE)
    add(EventKind.CHILD_FAILED, t.str.contains(FAILED), FAILED)
    add(EventKind.CLOSING_SIGNAL, t.str.contains(SIGNAL), SIGNAL)
    # (in torchrun's error block, `traceback : Signal 9 (SIGKILL) received by PID` is that block's own end,
    # its rank_exit, not another)
    add(EventKind.SIGNAL, t.str.contains(SIGNAL_RECEIVED) & ~t.str.contains(r"^\s*traceback\s*:"),
        SIGNAL_RECEIVED)
    # (raised under a set-up frame: ``where`` names it, `init_process_group`)
    add(EventKind.TRANSPORT_ERROR, t.str.contains(GLOO_ERROR) & ~t.str.contains("NCCL INFO"),
        where=pl.col("_init"))
    native = t.str.contains(native_fatal.ANY)  # (a native runtime's fatal line: native_fatal reads it)
    add(EventKind.EXCEPTION,
        t.str.contains(EXCEPTION) & ~t.str.contains(process_end.NOT_EXCEPTIONS) & ~native,
        EXCEPTION,
        where=pl.col("_init"))
    # (not a Python exception line, which the one above reads, with the text it continues into)
    add(EventKind.EXCEPTION, t.str.contains(NCCL_FAILED) & ~t.str.contains(EXCEPTION))
    add(EventKind.CRASH, t.str.contains(CRASH) & ~t.str.contains("DistBackendError", literal=True)
        & ~t.str.contains(process_end.ANY) & ~native)  # (a launcher's word of a signal: a process end, below)
    add(EventKind.JOB_CANCELLED, t.str.contains(CANCELLED))
    # (DeepSpeed's launcher of a node pdsh started: pdsh's prefix names the node)
    add(EventKind.CLOSING_SIGNAL, t.str.contains(KILLING), KILLING,
        **({"host": pl.col("pdsh_host")} if "pdsh_host" in df.columns else {}))
    add(EventKind.LAUNCH, t.str.contains(RUN_LAUNCH), RUN_LAUNCH)
    add(EventKind.SETTING, t.str.contains(RUN_ENV), RUN_ENV)
    add(EventKind.PACKAGE, t.str.contains(RUN_PKG), RUN_PKG)
    add(EventKind.RUN_NOTE, t.str.contains(RUN_NOTE), RUN_NOTE)
    add(EventKind.STALL, t.str.contains(TRACEKIT_STALL), where=pl.lit("tracekit"))
    add(EventKind.PG_COMM, t.str.contains(PG_COMM), PG_COMM, where=pl.lit("c10d"))
    add(EventKind.C10D_ERROR, (t.str.contains(GLOG) & t.str.starts_with("[E") | t.str.contains(r"^E\d{3,4} "))
        & ~native)
    # c10d's store socket gives up in W lines too (a port in use, a host name no resolver knows)
    add(EventKind.C10D_ERROR, t.str.contains(GLOG) & t.str.starts_with("[W") & t.str.contains(STORE_SOCKET)
        & ~t.str.contains("errno: 97", literal=True))  # (an IPv6 address on a host without IPv6: next one)
    add(EventKind.EXCEPTION, t.str.contains(ERROR_JSON), ERROR_JSON)
    # the line under `Last error:` in an NCCL exception is NCCL's own reason (what its WARN said)
    add(EventKind.NCCL_WARN, (t.shift(1).over("file").str.strip_chars() == "Last error:").fill_null(False)
        & (t.str.strip_chars() != "") & ~reads_as("MISMATCH", "text"), where=pl.lit("NCCL's last error"))

    # NCCL's own WARN words pasted bare, with neither their `host:pid:tid [dev] NCCL WARN` head nor a `Last
    # error:` above (`Duplicate GPU detected : rank 9 and rank 1 both on CUDA device 34000`): NCCL's reason
    add(EventKind.NCCL_WARN, t.str.contains(BARE_NCCL) & ~reads_as("MISMATCH", "text"),
        where=pl.lit("NCCL's message"))
    # NCCL's own word under `Last error:` that the ranks' sizes differ (`message truncated`): a mismatch
    add(EventKind.COLLECTIVE_MISMATCH,
        (t.shift(1).over("file").str.strip_chars() == "Last error:").fill_null(False)
        & reads_as("MISMATCH", "text"), where=pl.lit("NCCL's last error"))
    # one pass for every mask (a polars call costs more than its work on a small log), then the kinds found
    masks = df.select(mask.alias(str(i)) for i, (_, mask, _, _) in enumerate(kinds))
    for (kind, _, pattern, extra), rows in zip(kinds, masks):
        if rows.any():
            take(kind, rows, pattern, extra)

    # ChildFailedError blocks: host, rank and exit code sit on consecutive lines.
    block = df.with_columns(
        t.str.extract(CHILD_HOST, 1).alias("b_host"), t.str.extract(CHILD_TIME, 1).alias("b_time"),
        t.str.extract(CHILD_RANK, 1).cast(pl.Int64, strict=False).alias("b_rank"),
        t.str.extract(CHILD_RANK, 2).cast(pl.Int64, strict=False).alias("b_local"),
        t.str.extract(CHILD_EXIT, 1).cast(pl.Int64, strict=False).alias("exit_code"),
        t.str.extract(CHILD_EXIT, 2).cast(pl.Int64, strict=False).alias("pid"),
        # the summary lists the other failures first, then the first one torchrun observed
        pl.when(t.str.contains(r"^\s*Root Cause")).then(pl.lit("torchrun: first observed failure"))
        .when(t.str.contains(r"^\s*Failures:")).then(pl.lit("torchrun: another failure")).alias("b_where"),
    ).with_columns(pl.col("b_host", "b_rank", "b_local", "b_time").forward_fill(limit=3).over("file"),
                   pl.col("b_where").forward_fill().over("file").fill_null("torchrun"))
    exits = block.filter(pl.col("exit_code").is_not_null() & pl.col("b_rank").is_not_null())
    if exits.height:
        frames.append(exits.with_columns(
            pl.lit(EventKind.RANK_EXIT).alias("kind"), pl.col("b_rank").alias("rank"),
            pl.col("b_host").alias("host"),
            pl.col("b_where").alias("where"), pl.coalesce("b_time", "ts").alias("ts"),
            pl.format("rank {} (local_rank {}) on {} exited with code {}", "b_rank", "b_local", "b_host",
                      "exit_code").alias("message"),
        ))
    root = _root_cause_cut(block, exits)
    if root is not None:
        frames.append(root)
        exits = pl.concat([exits, root.select(exits.columns)], how="diagonal_relaxed")
    cut = cut_traceback(df)
    if cut is not None:
        frames.append(cut)
    ended = process_end.decode(df)  # every launcher's and runtime's word that a process ended
    if ended is not None:
        frames.append(ended)
    fatal = native_fatal.decode(df)  # a native runtime's own word that it died (glog FATAL, a signal)
    if fatal is not None:
        frames.append(fatal)

    # ranks that c10d's lines name (a global one: no launcher prefix said otherwise) and torchrun's failures
    said = df.filter(pl.col("_own").is_not_null() & pl.col("launch_rank").is_null()).select(
        "file", pl.col("_own").alias("rank"), pl.lit("c10d").alias("source")).unique(maintain_order=True)
    # (the node's last worker, which DeepSpeed's launcher names by its command as it stops: started, its
    # end not said)
    ds = df.filter(t.str.contains(process_end.DS_LOCAL)).select(
        "file", t.str.extract(process_end.DS_LOCAL, 1).cast(pl.Int64, strict=False).alias("local_rank"),
        pl.lit("deepspeed-launcher").alias("source")).unique(maintain_order=True)
    failed = exits.select("file", pl.col("b_host").alias("host"), "pid", pl.col("b_rank").alias("rank"),
                          pl.col("b_local").alias("local_rank"), pl.lit("torchrun").alias("source"))
    # (torchrun's summary pasted flat, and mpirun's `process rank 1 ... exited on signal 9`: a global rank)
    named = (pl.col("kind") == EventKind.RANK_EXIT) | (pl.col("where").is_in(["mpirun", "mpi"])
                                                        & pl.col("rank").is_not_null())
    if ended is not None and ended.filter(named).height:
        failed = pl.concat([failed, ended.filter(named).select(
            "file", "pid", "rank", pl.when(pl.col("where").is_in(["mpirun", "mpi"])).then(pl.lit("mpirun"))
            .otherwise(pl.lit("torchrun")).alias("source"))], how="diagonal_relaxed")
    elastic = df.filter(t.str.contains(ELASTIC)).with_columns(
        t.str.extract(ELASTIC, 1).alias("_state"),
        *[t.str.extract(p, 1).alias(f"_{k}") for k, p in ELASTIC_KV.items()])
    if elastic.height:  # the agent's word about each worker: a clean exit, or a failure
        frames.append(elastic.with_columns(
            pl.when(pl.col("_state") == "SUCCEEDED").then(pl.lit(EventKind.CLEAN_EXIT))
            .otherwise(pl.lit(EventKind.CHILD_FAILED)).alias("kind"),
            pl.col("_rank").cast(pl.Int64, strict=False).alias("rank"), pl.col("_host").alias("host"),
            pl.when(pl.col("_state") == "SUCCEEDED").then(0).alias("exit_code"),
            pl.format("torchelastic: worker of global rank {} on {} {}", "_rank", "_host", "_state")
            .alias("message"),
            pl.lit("torchelastic").alias("where")))
    worlds = pl.concat([
        elastic.select("file", pl.col("_host").alias("host"),
                       pl.col("_world_size").cast(pl.Int64, strict=False).alias("world_size")),
        df.filter(t.str.contains(process_end.PADDLE_ABORT)).select(  # (Paddle's launcher: of N trainers)
            "file", t.str.extract(process_end.PADDLE_ABORT, 2).str.extract_all(r"\d+").alias("rank"),
            t.str.extract(process_end.PADDLE_ABORT, 1).cast(pl.Int64, strict=False).alias("world_size"))
        .explode("rank").with_columns(pl.col("rank").cast(pl.Int64, strict=False)),
        df.filter(t.str.contains(WORLD)).select(
            "file", pl.coalesce(t.str.extract(WORLD, 1), t.str.extract(WORLD, 2))
            .cast(pl.Int64, strict=False).alias("world_size")),
    ], how="diagonal_relaxed").with_columns(pl.lit("torchrun").alias("source"))
    header = df.filter(t.str.contains(TRACEKIT))
    ranks = header.select(
        "file",
        _kv("text", "host").alias("host"), _kv("text", "pid").cast(pl.Int64, strict=False).alias("pid"),
        _kv("text", "rank").cast(pl.Int64, strict=False).alias("rank"),
        _kv("text", "local_rank").cast(pl.Int64, strict=False).alias("local_rank"),
        _kv("text", "node_rank").cast(pl.Int64, strict=False).alias("node"),
        _kv("text", "world_size").cast(pl.Int64, strict=False).alias("world_size"),
        _kv("text", "torch").alias("torch_version"), _kv("text", "deepspeed").alias("deepspeed_version"),
        pl.lit("tracekit").alias("source"),
    )
    events = pl.concat(frames, how="diagonal_relaxed") if frames else None
    # (Ascend's HCCL: the CANN error code under an exception says why)
    ascend_lines = df.with_columns(lines["raw"]) if "raw" in lines.columns else df
    events, ascend = hccl.read(ascend_lines, events)
    if events is not None:
        for c in ("seq", "numel", "timeout_ms", "last_enqueued", "last_completed", "exit_code", "pid", "rank",
                  "local_rank"):
            if c in events.columns:
                events = events.with_columns(pl.col(c).cast(pl.Int64, strict=False))
        if "op" in events.columns:
            events = events.with_columns(pl.col("op").str.to_lowercase())
        events = _one_node_ranks(_rank_by_pid(events), df.filter(t.str.contains(ONE_NODE))["file"].unique())
        events = events.unique(["file", "line", "kind"], maintain_order=True).with_columns(
            pl.when(pl.col("kind").is_in([EventKind.NCCL_WARN, EventKind.EXCEPTION, EventKind.CRASH,
                                          EventKind.C10D_ERROR, EventKind.COLLECTIVE_MISMATCH]))
            .then(message_name()).alias("message_id"))
    after_last_error = ((t.shift(1).over("file").str.strip_chars() == "Last error:").fill_null(False)
                        & (t.str.strip_chars() != ""))
    used = after_last_error | t.str.contains(any_of(BARE_NCCL,
        WORK + r"(?:SeqNum|OpType)=", PADDLE_TIMEOUT, LAST_WORK, ABORT, CUDA, STUCK, ASYNC_ERROR, DESYNC,
        RAY_DIED, PG_OPTION, C10D_KNOWN, ELASTIC, WORLD, KEEP_ALIVE, FINGERPRINT_LINE, "Detected mismatch",
        BACKEND_INIT_SLOW, QUORUM_SHORT,
        "Received data size doesn't match", FAILED, SIGNAL, SIGNAL_RECEIVED,
        GLOO_ERROR, EXCEPTION, NCCL_FAILED, GLOG, CHILD_HOST, CHILD_RANK, CHILD_EXIT, TRACEKIT, KNOWN,
        r"^\[tracekit-run\] ", CRASH,
        CANCELLED, KILLING, r"^E\d{3,4} ", ERROR_JSON, LIGHTNING, TRACEKIT_STALL, process_end.ANY,
        native_fatal.ANY, native_fatal.AROUND))
    # torchrun's failed local ranks of a one-node job
    if events is not None and "local_rank" in events.columns:
        local = pl.col("local_rank").cast(pl.Int64, strict=False)
        one = events.filter((pl.col("kind") == EventKind.CHILD_FAILED) & (pl.col("rank") == local))
        failed = pl.concat([failed, one.select("file", "pid", "rank", local.alias("local_rank"),
                                               pl.lit("torchrun").alias("source"))], how="diagonal_relaxed")
    ranks = pl.concat([ranks, said, ds, failed, worlds, hccl.ranks(ascend_lines)], how="diagonal_relaxed")
    return Parsed("torch", {"events": events, "ranks": ranks},
                  df.filter(used | pl.lit(ascend)).select("file", "line"))


def _root_cause_cut(block: pl.DataFrame, exits: pl.DataFrame) -> pl.DataFrame | None:
    """torchrun's `Root Cause (first observed failure)` entry cut after its rank line (an excerpt that ends
    there): that rank failed first though its exit code is not shown, a ``rank_exit`` of no code."""
    first = pl.col("b_where") == "torchrun: first observed failure"
    said = exits.filter(first).select("file").unique()
    rank_line = pl.col("text").str.contains(CHILD_RANK) & first
    root = block.filter(rank_line).join(said, on="file", how="anti").unique("file", keep="first")
    if not root.height:
        return None
    return root.with_columns(
        pl.lit(EventKind.RANK_EXIT).alias("kind"), pl.col("b_rank").alias("rank"),
        pl.col("b_host").alias("host"),
        pl.col("b_where").alias("where"), pl.coalesce("b_time", "ts").alias("ts"),
        pl.lit(None, pl.Int64).alias("exit_code"), pl.lit(None, pl.Int64).alias("pid"),
        pl.format("rank {} (local_rank {}) on {} failed first (torchrun's root cause; its exit code is cut "
                  "from the excerpt)", "b_rank", "b_local", pl.col("b_host").fill_null("its host"))
        .alias("message"))


def _rank_by_pid(events: pl.DataFrame) -> pl.DataFrame:
    """A line that names a pid (``failed (exitcode: -9) local_rank: 1 (pid: 36071)``) gets the rank that
    torchrun's error block gives that pid in the same file (over the rank of the file's other lines)."""
    if "pid" not in events.columns:
        return events
    named = ((pl.col("kind") == EventKind.RANK_EXIT) & pl.col("pid").is_not_null()
             & pl.col("rank").is_not_null())
    known = (events.filter(named).select("file", "pid", pl.col("rank").alias("_by_pid"))
             .unique(["file", "pid"]))
    if not known.height:
        return events
    return (events.join(known, on=["file", "pid"], how="left", coalesce=True)
            .with_columns(pl.coalesce("_by_pid", "rank").alias("rank")).drop("_by_pid"))


def _one_node_ranks(events: pl.DataFrame, one_node: pl.Series) -> pl.DataFrame:
    """torchrun's ``failed (exitcode: N) local_rank: R`` names a local rank: the global one too where the
    file says the job has one node (its launch command, torchrun's rendezvous result or launch config)."""
    if "local_rank" not in events.columns or not one_node.len():
        return events
    local = pl.col("local_rank").cast(pl.Int64, strict=False)
    mine = pl.col("file").is_in(one_node.implode()) & (pl.col("kind") == EventKind.CHILD_FAILED)
    return events.with_columns(pl.when(mine).then(pl.coalesce("rank", local)).otherwise(pl.col("rank"))
                               .alias("rank"))
