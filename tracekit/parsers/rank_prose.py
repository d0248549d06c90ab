"""The ranks a log's prose names (`Error on rank 1: ...`, `RuntimeError: rank 2 failed`, `NCCL communicator was
aborted on rank 0`, `Running basic DDP example on rank 1.`, `Process 1 exited with exit code 1`), read as the
last source of a file's ranks: ``identity._prose_last`` keeps these rows only in a file where no other source
names a rank (issue 31 item 4, rank identity by precedence).

A sentence names a process's rank in many programs' words that no one entry of ``rank_words.RANK_WORDS`` can
list: PyTorch's own (c10d's `NCCL communicator was aborted on rank 0` of torch 1.x ProcessGroupNCCL.cpp,
`Timed out initializing process group in store based barrier on rank: 0`), its tutorials' (`print(f"Running
basic DDP example on rank {rank}.")`, docs/intermediate ddp_tutorial), scripts' `Error on rank 1:`, `rank 0
of 8 ...` (rank 0 only), a bare `rank=0` key, an NCCL communicator line whose head the NCCL parser did not read
(`:168:1228 [2] NCCL INFO comm 0x.. rank 82 nranks 96`, a collector's prefix ate the host). A number is no
process's rank where the words around it say so (``NOT_GLOBAL``): a group's or a node's rank (`TP rank 0`,
`[PG 3 Rank 1]`, `node_rank=1`, `--machine-rank 1`, SkyPilot's `(worker1, rank=1, ...)`), a peer's or a
root's (`peer rank 3`, `src rank 0`), a figure per rank (`tokens / rank 32`), a command line's flag or a
program's code (`init_process_group(..., rank=1)` in a traceback), Gloo's and NCCL's own lines (their
parsers' to read), and a local rank alone (`LOCAL_RANK: 3`, `Local rank 0`: the dev labels count a local rank
only where a launcher's or program's own line says it, tests/test_s24_ranks.py).
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed

#: a rank said in prose: the word before it (``q``: its qualifier), a flag's dashes or a per-rank slash before
#: it (``cut``), then `rank N`, `rank: N`, `rank=N`, `rank #N`, `rankN`, torch_npu's error header's `RankID:N`
#: (`[ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed.`,
#: vllm-project/vllm-ascend#486), lmdeploy's `Rank[2] failed.` (lmdeploy/pytorch/engine/model_agent.py,
#: Ascend/pytorch#54); or a process's `Process N` with a verb of its end or the world's size (`Process 1
#: exited with exit code 1`, `process 2 of 4`), or after `in`/`on` (`Exception in process 1`)
PROSE = (r"(?i)(?P<cut>--?|/ ?|\w[\w.]*\()?(?:(?P<q>[A-Za-z]+(?: \d+)?)[ _\-]?)?"
         r"(?:rank(?:\s*[:=#]?\s*|ID\s*[:=]\s*)(?P<rank>\d{1,5})\b(?:\s+n[Rr]anks\s+(?P<world>\d+))?"
         r"|rank\[(?P<bracket>\d{1,5})\](?:[\s:,.)]|$)"
         r"|process (?P<proc>\d{1,3}) ?(?:terminated|exited|failed|crashed|died|raised|was killed|got|hit"
         r"|of \d|/ ?\d)\b|\b(?:in|on) process (?P<inproc>\d{1,3})\b)")
#: the words before a rank that make it no process's own global rank (lower case)
NOT_GLOBAL = frozenset((
    "node", "machine", "group", "tp", "dp", "pp", "ep", "cp", "sp", "etp", "tensor", "data", "pipeline",
    "expert", "model", "parallel", "peer", "peers", "remote", "src", "source", "dst", "dest", "destination",
    "root", "head", "per", "next", "prev", "previous", "other", "target", "role", "sub", "check", "see",
    "sending", "killing", "pid", "local", "localrank",
))
#: lines that are not a writer's prose: Gloo's, HCCL's link parameters and NCCL's own (their parsers read them;
#: an NCCL communicator line is read here only by its `rank N nranks M`, see ``rows``); a ring position beside
#: its channel (the Neuron runtime's `[rank 0, channel 0] failed to register channel buffer`, dv11-044; Paddle's
#: `init nccl context nranks: 4 local rank: 0/1 ... ring id: 0/1`, dv17-008, whose other shape is
#: ``rank_words.RANK_WORDS``'); code (a def, a call with a rank keyword: a traceback's source line; a
#: debugger's frame `#6  ncclCommInitRankSync (newcomm=.., nranks=2, commId=..., myrank=0) at init.cc:950`,
#: dv31-006), a shell prompt; a transfer between two ranks a test describes (`Unidirectional Bandwidth (Rank 0
#: -> Rank 1)`, dv32-012, dv32-013); SkyPilot's node prefix `(worker1, rank=1, pid=..)`; NCCL RAS's report of
#: the job's ranks (`  Rank 12 -- GPU 4 managed by process 323032 on ...`, src/ras/client.cc); torchelastic's
#: agent's word of its worker (`failed (exitcode: -6) local_rank: 0 (pid: 223) of binary`, wrapped:
#: parsers/elastic.py's line, dv6-014); a process group's rank (`[PG 3 Rank 1]`); a guess
#: at a peer (c10d's TCPStore `This may indicate a possible application crash on rank 0 or a network set up
#: issue.`, hiyouga/LlamaFactory#5769) and a peer a line waits for (`Timed out waiting for rank 3 to join`); a
#: rank in a URL or path, a rank of an MPI communicator that is not the world
NOT_PROSE = (r"\[Gloo\]|\bcrea[tk][eL]?[Ll]ink para\b|"
             r"\b[Rr]ank \d+, channel \d+\]|\binit nccl context nranks\b|"
             r"\bdef \w+\(|\b[\w.]+ ?\([^()]*rank\s*=|^\s*(?:>>>|\$|#)\s|^\s*#\d+\s|"
             r"\b[Rr]ank \d+ ?(?:->|<->|<-|to) ?[Rr]ank \d+|"
             r"^\((?:head|worker\d+), rank=\d+|^\s*Rank \d+ -- GPU \d+ managed by\b|\bPG (?:ID )?\d+ |"
             r"\blocal_rank: \d+ \(pid: \d+\) of binary\b|\bmay indicate a possible\b"
             r"|\bwait(?:ing|ed|s)?\s+(?:for|on)\s+(?:the\s+)?rank\b"
             # (s28 merge) a rank glued to a URL's or path's `:`/`/` (`see http://docs:rank1.html: for more`);
             # a rank of an MPI communicator other than the world (`MPI_ABORT was invoked on rank 3 in
             # communicator MPI_COMM_SPLIT_1`: parsers/mpi.py reads the world's)
             r"|[:/][Rr]ank\d|\bin communicator (?:[^M]|M[^P]|MP[^I]|MPI_COMM_[^W])")
NCCL_LINE = r"\bNCCL (?:INFO|WARN)\b"
CHEAP = r"(?i)rank|process \d"
#: the ``source`` of this parser's ``ranks`` rows (``identity._prose_last`` counts them last)
SOURCE = "rank-prose"


def parse(lines: pl.DataFrame) -> Parsed:
    """``ranks`` rows (``source`` ``rank-prose``) of the ranks the prose of lines no launcher prefix names a
    writer of says; claims no line (the sentence is another parser's to read, or an unknown line)."""
    if not lines.height:
        return Parsed(SOURCE)
    # (under a launcher's prefix the prefix names the writer: its prose may name a peer)
    prefixed = [pl.col(c).is_not_null() for c in ("launch_rank", "local_tag") if c in lines.columns]
    got = rows(lines.filter(~pl.any_horizontal(prefixed)) if prefixed else lines)
    if got is None:
        return Parsed(SOURCE)
    return Parsed(SOURCE, {"ranks": got.with_columns(pl.lit(SOURCE).alias("source"))})


def rows(lines: pl.DataFrame) -> pl.DataFrame | None:
    """``file, rank, world_size`` of the ranks ``lines``' prose names (``None`` where none)."""
    t = pl.col("text")
    df = lines.filter(t.str.contains(CHEAP) & ~t.str.contains(NOT_PROSE))
    if not df.height:
        return None
    nccl = df.select(t.str.contains(NCCL_LINE)).to_series()
    g = (df.select("file", nccl.alias("_nccl"), t.str.extract_all(PROSE).alias("_m")).explode("_m")
         .drop_nulls("_m")
         .select("file", "_nccl", pl.col("_m").str.extract_groups(PROSE).alias("_g")).unnest("_g"))
    if not g.height:
        return None
    q = pl.col("q").fill_null("").str.to_lowercase()
    said = pl.coalesce("rank", "bracket", "proc", "inproc").cast(pl.Int64, strict=False)
    g = (g.filter(pl.col("cut").is_null() & ~q.is_in(NOT_GLOBAL) & ~q.str.contains(r"^pg \d+$")
                  # (an NCCL line names its writer's rank only beside its communicator's size)
                  & (~pl.col("_nccl") | pl.col("world").is_not_null()))
         .with_columns(said.alias("rank"), pl.col("world").cast(pl.Int64, strict=False).alias("world_size")))
    # (an NCCL communicator's ranks: those of the largest one a file shows, the others may be sub-groups)
    g = g.filter(pl.col("world_size").is_null()
                 | (pl.col("world_size") == pl.col("world_size").max().over("file")))
    if not g.height:
        return None
    return g.select("file", "rank", "world_size").unique(maintain_order=True)
