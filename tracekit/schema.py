"""The declared schema of every table tracekit writes.

Each parser returns frames of exactly these columns (``conform`` fills the ones a source lacks
with nulls), so the store, the analysis and the tests all speak one vocabulary.
"""

from __future__ import annotations

from enum import StrEnum

import polars as pl

Str, I32, I64, F64, Bool = pl.Utf8, pl.Int32, pl.Int64, pl.Float64, pl.Boolean

#: Canonical collective names; every source's op name is mapped onto one of these.
OPS = [
    "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all",
    "send", "recv", "barrier", "coalesced", "gather", "scatter", "other",
]

#: Every kind of row in ``events``, each with what it means. Parsers emit only these (casting to the
#: ``pl.Enum`` below fails on any other), and the analysis compares against these names only.
EVENT_KINDS = {
    # failures and their consequences
    "crash": "a process died: terminate, segfault, core dump, CUDA or NCCL error raised in C++",
    "exception": "a Python exception line (`XError: message`)",
    "cuda_error": "a CUDA failure: illegal memory access, out of memory, device-side assert, ECC",
    "watchdog_timeout": "c10d's watchdog: a collective ran past its timeout (SeqNum, OpType, Timeout)",
    "watchdog_status": "c10d: last enqueued / completed work of a process group after a timeout",
    "watchdog_abort": "c10d taking the process down after a timeout (a consequence, not a cause)",
    "c10d_error": "an E-level glog line of c10d",
    "collective_mismatch": "a runtime found ranks running different collectives: TORCH_DISTRIBUTED_DEBUG="
                           "DETAIL, NCCL's `message truncated` (nccl_messages: sizes differ between ranks)",
    "gloo_size_mismatch": "gloo's pairing check: a peer sent another size",
    "child_failed": "torchrun: a local rank failed (exit code, pid)",
    "rank_exit": "torchrun's ChildFailedError block: rank, local rank, host, exit code",
    "signal": "a rank received a signal",
    "closing_signal": "torchrun sending closing signals to its ranks (after another failed)",
    "job_cancelled": "the scheduler cancelled the job",
    "transport_error": "a network transport error (gloo socket, IB completion error)",
    "connect_retry": "NCCL retrying a socket connect",
    "nccl_warn": "an NCCL WARN line",
    "nccl_unwind": "NCCL unwinding after an error (`NCCL INFO ... -> N`)",
    "benign_warn": "an NCCL/plugin WARN known to be harmless (a fallback follows), kept as a note",
    "stall": "a stall marker: tracekit run found no log growth, or a hang was reported",
    "rank_missing": "a report that a rank never joined a collective the others are in (torchfrtrace's "
                    "`missing ranks: {3, 4}`, c10d's desync report, Horovod's `[missing ranks: 1]`, NCCL "
                    "RAS's operation counts): rank = the missing rank (null where the report only counts "
                    "them), seq/op/pg where said",
    # a clean end
    "clean_exit": "a process or launcher reported exit code 0",
    "comm_destroyed": "NCCL destroyed a communicator (`Destroy COMPLETE`, `comm ... destroyed`)",
    "test_passed": "nccl-tests: `Out of bounds values : 0 OK`",
    # progress
    "step": "a training step line (step, loss)",
    "progress": "a tqdm progress bar",
    "train_start": "a trainer started training",
    "train_end": "a trainer finished training (HF's `{'train_runtime': ...}` summary)",
    "train_arg": "a training argument the trainer printed",
    "comm_op": "DeepSpeed's comms logger: one op's size and time",
    "bandwidth": "a bandwidth measurement (DeepSpeed comms logger, nccl-tests)",
    "stack": "one thread of a stack dump (py-spy, faulthandler, tracekit.hook)",
    # provenance
    "launch": "tracekit run's record of the launch (argv, host, cwd)",
    "setting": "an environment setting of the launch (NCCL_*, TORCH_*, ...)",
    "package": "an installed package of the launch",
    "run_note": "a note of tracekit run's launcher (stall, dump, exit code)",
    "version": "a version printed outside NCCL's own banner",
    "fr_dump": "one Flight Recorder dump (entries, version)",
    # --- branch failures (issue 31): a rank's own word that it joined ---
    "rank_joined": "a rank announced its global rank and the world's size as it joined the process group "
                   "(Lightning's `initializing ddp: GLOBAL_RANK: 1, MEMBER: 2/8`): rank, numel = world size",
    # --- branch bench (issue 31): what decides a benchmark, a program's own end and its phase times ---
    "test_wrong": "nccl-tests: a result row with #wrong > 0, or `Out of bounds values : N FAILED` (numel: "
                  "how many values were wrong): the collective's results are corrupted",
    "test_avg_busbw": "nccl-tests: `# Avg bus bandwidth : 41.2` (busbw_gbs)",
    "test_sizes": "nccl-tests: the largest size the test was asked to reach (bytes; `maxBytes`, `-e 8G`)",
    "program_end": "a program's own line that it ended cleanly (`Rank 0: End of workload.`, `Training "
                   "completed`, torchelastic's `worker group successfully finished`)",
    "phase_times": "a trainer's timers of one iteration (`time (ms) | forward: 207.71 | backward: ... | "
                   "optimizer: ...`)",
    # --- end of branch bench ---
    "pg_comm": "c10d: a process group's NCCL communicator (`ProcessGroupNCCL created ncclComm_ 0x...`): pg, "
               "pg_name, pg_desc, pg_rank, comm",
    # branch cli (issue 29): torchrun's elastic agent (parsers/elastic.py), message = its `key=value` words
    "elastic_launch": "torchrun's launch configs (`Starting elastic_operator ...`): run_id, max_restarts, "
                      "nodes",
    "elastic_rendezvous": "torchrun's agent: a rendezvous completed, one per attempt: restart_count, "
                          "group_rank, group_world_size, global_ranks",
    "elastic_failed": "torchrun's agent: the worker group failed, N/M attempts left; it will restart the "
                      "group",
    "elastic_stop": "torchrun's agent stopping its worker group (before a restart)",
    "elastic_rejoin": "torchrun's agent rendezvousing its worker group again (the next attempt "
                      "starts)",
    "elastic_membership": "torchrun's agent: new nodes joined; it will restart the worker group",
    "deepspeed_config": "DeepSpeed's configuration block at start-up (parsers/deepspeed_config.py): one "
                        "setting (ZeRO stage, offload, buckets, micro batch, precision) as `key=value`",
    # --- branch salient (issue 31): a line no parser decodes that still tells (parsers/salient.py) ---
    "telling_line": "a line no parser decodes whose words read as a crash, a transport failure, a wait or "
                    "an error (it stays an unknown line): message = its text, where = its class",
    # --- branch progress (session 15, issue 31): a server's own word that it starts and serves
    # (parsers/serving.py) ---
    "served": "a server's own line that it served work: an HTTP access line (uvicorn's `\"POST "
              "/v1/completions HTTP/1.1\" 200 OK`; where = request, or request_failed for a 5xx), SGLang's "
              "`Prefill batch. ... #running-req: 28, #queue-req: 0` (where = batch)",
    "server_up": "a server's or an engine's start-up milestone (SGLang's `Init torch distributed ends`, "
                 "`Load weight begin`, `The server is fired up and ready to roll!`, uvicorn's `Application "
                 "startup complete.`): where = ready for a server that says it serves, else the phase",
    # --- end of branch progress ---
}
#: The kinds as names: ``EventKind.WATCHDOG_TIMEOUT == "watchdog_timeout"``, so a polars filter compares
#: against the stored string and a misspelt kind fails at import, not silently. Parsers and the analysis
#: name a kind through this Enum, never as a string literal.
EventKind = StrEnum("EventKind", {k.upper(): k for k in EVENT_KINDS})
#: The polars dtype of ``events.kind``.
EVENT_KIND_DTYPE = pl.Enum(list(EVENT_KINDS))
#: Entry / communicator states: FR's entry states, NCCL init states, tracekit's own.
STATES = ["scheduled", "started", "completed", "enqueued", "no-op", "init_start", "init_complete",
          "abort_complete", "destroy_complete", "topology"]
State = pl.Enum(STATES)
#: Where a collective row comes from.
SOURCES = ["fr", "nccl", "kineto", "kineto-gpu", "deepspeed"]
Source = pl.Enum(SOURCES)

FILES = {
    "file": Str, "kind": Str, "size_bytes": I64, "lines": I64, "parsed": I64,
    "blank": I64, "unknown": I64, "error": Str,
    # the file's last line that says something (three letters in a row), as read: what UNDECIDED quotes
    "last_line": I64, "last_text": Str,
}

RANKS = {
    "file": Str, "host": Str, "pid": I64, "rank": I64, "local_rank": I64, "cuda_dev": I64,
    "node": I64, "world_size": I64, "nccl_version": Str, "torch_version": Str,
    "deepspeed_version": Str, "source": Str,
}

COMMS = {
    "file": Str, "line": I64, "host": Str, "pid": I64, "comm": Str, "comm_id": Str,
    "rank": I64, "nranks": I64, "nnodes": I64, "cuda_dev": I64, "bus_id": Str,
    "parent": Str, "color": I64, "key": I64, "api": Str, "state": State,
    # issue 33: ``rank`` is the rank inside the communicator; ``global_rank`` the process's own; ``comm_key``
    # ties one communicator's rows across processes (commId, or a split's parent key, split count and color)
    "global_rank": I64, "comm_key": Str, "split_count": I64,
}

LINKS = {
    "file": Str, "line": I64, "host": Str, "pid": I64, "rank": I64, "what": Str,
    "channel": I64, "src": I64, "dst": I64, "direction": Str, "transport": Str,
    "transport_kind": Str, "gdr": Bool, "iface": Str, "addr": Str, "family": Str, "value": Str,
}

#: NCCL's opCount counts a communicator's calls from 0; torch's sequence number (the Flight Recorder's
#: seq, the watchdog's SeqNum) counts the process group's collectives from 1. Measured on the real NCCL
#: captures that hold both (samples/gpu_nccl_{deadlock,crash,mismatch,slow}, torch 2.11, NCCL 2.28.9):
#: 483 of 504 (rank, seq) pairs have the same op and count at seq = opCount + 1, the other 21 are torch's
#: barrier (FR "other", NCCL AllReduce of 1); an all_to_all is one seq and one opCount of grouped
#: Send/Recv (samples/gpu_nccl_alltoall). So one collective has one number: NCCL's is shown as seq.
#: (not measured here: torch numbers point-to-point calls apart from seq; where they share a
#: communicator with collectives, opCount would run ahead of seq past the first of them.)
SEQ_FROM_OPCOUNT = 1

COLLECTIVES = {
    "file": Str, "line": I64, "source": Source, "host": Str, "pid": I32, "rank": I32,
    "pg": Str, "pg_desc": Str, "comm": Str, "nranks": I32, "seq": I64, "op": pl.Enum(OPS), "op_raw": Str,
    "count": I64, "dtype": Str, "bytes": I64, "sizes": Str, "start_ns": I64, "end_ns": I64,
    "state": State, "record_id": I64,
    # Flight Recorder only: output shapes and element count, every input / output dtype (``"Float;Half"``),
    # a send's or recv's group ranks (``send 0->1``: src 0, dst 1; ``recv 1<-?``: src unknown), and
    # whether the entry ends a coalesced group (``nccl:coalesced``, ``nccl:ALLGATHER_coalesced``)
    "out_sizes": Str, "out_count": I64, "dtypes": Str, "out_dtypes": Str, "p2p_src": I32, "p2p_dst": I32,
    "coalesced_end": Bool,
}

#: Process groups as each rank's Flight Recorder dump describes them: members (pg_config) and how
#: far the rank got in each (pg_status). A group whose id the dump names but not its name: pg "id:N".
GROUPS = {
    "file": Str, "rank": I64, "pg": Str, "pg_id": Str, "pg_desc": Str, "members": pl.List(I64),
    "last_enqueued": I64, "last_completed": I64, "last_started": I64,
}

EVENTS = {
    "file": Str, "line": I64, "host": Str, "pid": I64, "rank": I64, "kind": EVENT_KIND_DTYPE, "ts": Str,
    "message": Str, "seq": I64, "op": Str, "numel": I64, "timeout_ms": I64, "pg": Str,
    "last_enqueued": I64, "last_completed": I64, "exit_code": I64, "step": I64, "max_steps": I64, "loss": F64,
    "thread": Str, "where": Str, "frames": Str,
    # issue 33: the group a c10d line's tag names (`[PG ID 2 PG GUID 3(TENSOR_MODEL_PARALLEL_GROUP) Rank 1]`):
    # ``pg`` is its id (2), ``pg_name`` its GUID (3, the name Flight Recorder dumps use), ``pg_rank`` the
    # rank inside it (1; ``rank`` stays the global one); ``comm``: the NCCL communicator a line names
    "pg_name": Str, "pg_desc": Str, "pg_rank": I64, "comm": Str,
    # the entry of tracekit/nccl_messages.py an NCCL WARN (or a line quoting NCCL's words) reads as
    "message_id": Str,
    # says: the meanings of tracekit/meanings.py's SAYS its message carries (``meanings.with_says``,
    # decoded once as the events enter the store)
    "says": pl.List(Str),
    # bandwidth measurements (DeepSpeed comms logger, nccl-tests): message bytes, time, GB/s
    "bytes": I64, "duration_ms": F64, "algbw_gbs": F64, "busbw_gbs": F64,
}

TABLES = {
    "files": FILES, "ranks": RANKS, "comms": COMMS, "links": LINKS,
    "collectives": COLLECTIVES, "events": EVENTS, "groups": GROUPS,
}


def empty(schema: dict) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def conform(df: pl.DataFrame | pl.LazyFrame, schema: dict) -> pl.DataFrame:
    """Select exactly the schema's columns, in order, cast, with missing ones as nulls. A value past
    an Int32 column's range (a garbled dump's rank of 2^40) is unknown there, null, not an error
    that stops the whole ingest; any other failed cast is a bug and raises."""
    lf = df.lazy()
    have = set(lf.collect_schema().names())
    return lf.select(
        [
            (pl.col(name) if name in have else pl.lit(None)).cast(dtype, strict=dtype != I32).alias(name)
            for name, dtype in schema.items()
        ]
    ).collect()


def concat(frames: list[pl.DataFrame], schema: dict) -> pl.DataFrame:
    """The frames as one, conformed to ``schema``. Frames of one shape (one per file, from one
    parser: 1,024 of them for 1,024 FR dumps) are concatenated first and conformed once."""
    shapes: dict[tuple, list[pl.DataFrame]] = {}
    for f in frames:
        if f is not None and f.height:
            shapes.setdefault(tuple(f.schema.items()), []).append(f)
    parts = [conform(pl.concat(group), schema) for group in shapes.values()]
    return pl.concat(parts) if parts else empty(schema)
