"""nccl-tests stdout (``all_reduce_perf -b 8 -e 8G ...``, rccl-tests alike).

Results rows read ``size count type redop root time algbw busbw #wrong`` (out-of-place, then in-place):
one ``bandwidth`` event each, the op from the binary's name (``all_reduce_perf`` -> all_reduce) where
the file names it; times are microseconds and bandwidths GB/s, as nccl-tests prints them. The header's
``#  Rank  1 Group  0 Pid   8756 on HOST device  1 [0x03] NAME`` lines (older: without Group, or
without Pid) are the ranks: one thread per GPU, so one pid can hold several (``-g 4``); when they
number 0..N-1 once each, N is the world. ``# NCCL Tests compiled with NCCL 1.0`` gives the version.
A test that fails prints ``HOST: Test NCCL failure common.cu:777 'unhandled system error'`` (``Test CUDA
failure`` for CUDA; nccl-tests 1.x: ``NCCL failure all_reduce.cu:95 '...'``), then `` .. HOST pid P:
Test failure common.cu:937``: a ``crash`` event (``cuda_error`` for a CUDA failure, and for NCCL's
``unhandled cuda error``: a CUDA call under NCCL failed), ``where`` the
source location; ``# Out of bounds values : 0 OK`` is a ``test_passed`` event.

What decides a test (``tracekit.rules_nccl_tests`` reads it): a row whose ``#wrong`` is above 0 (or ``# Out of
bounds values : 3 FAILED``) is a ``test_wrong`` event (``numel`` the wrong values), ``# Avg bus bandwidth
: 41.2`` a ``test_avg_busbw`` event, and the largest size the test was asked to reach (the header's
``maxBytes 8589934592``, the command line's ``-e 8G``) a ``test_sizes`` event (``bytes``). Older tables
(nccl-tests 1.x/2.0) have no ``root`` column and an ``error`` column of floats (``2e-06``: an error size,
not a count of wrong values); a launcher's ``[0]`` written inside a row (``-1[0]    1626.5``) is read past.
Session 25: a row begun and never finished (its size printed before the size runs, its figures never) is a
``bandwidth`` event ``where="nccl-tests-begun"``; the GPU each rank line names one ``where="device"`` (for
link_rates); a table pasted with pipes (markdown) is read as printed; mscclpp-test's rows (no type, op or
root column) are read in a file of nccl-tests' header lines.
"""

from __future__ import annotations

import polars as pl

from tracekit.parsers import Parsed, any_of, piped
from tracekit.parsers.text import PREFIX
from tracekit.schema import EventKind

WRONG = r"(?:\d+|N/A|[\d.]+e[-+]\d+)"
ROW = (r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<dtype>[a-z]\w*)\s+(?:(?P<redop>[a-z]\w*)\s+)?"
       r"(?:(?P<root>-?\d+)\s+)?"
       rf"(?P<us>[\d.]+)\s+(?P<algbw>[\d.]+)\s+(?P<busbw>[\d.]+)\s+(?P<wrong>{WRONG})"
       rf"(?:\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+(?P<wrong2>{WRONG}))?\s*$")
BINARY = (r"(?P<op>all_reduce|all_gather|reduce_scatter|broadcast|reduce|alltoall|sendrecv|gather|scatter"
          r"|hypercube)_perf")
RANK = (r"^#?\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+\d+)?(?:\s+Pid\s+(?P<pid>\d+))?\s+on\s+"
        r"(?P<host>[\w.\-]+)\s+device\s+(?P<cuda_dev>\d+)")
COMPILED = r"^#\s*NCCL Tests compiled with NCCL (?P<v>[\w.+\-]+)"
FAILURE = (r"^(?:(?P<host>[\w.\-]+): )?(?:Test )?(?P<what>NCCL|CUDA) failure "
           r"(?P<where>\S+:\d+) '(?P<msg>.*?)'?\s*$")
FAILED_PID = r"^\s*\.\. (?P<host>[\w.\-]+) pid (?P<pid>\d+): Test failure (?P<where>\S+:\d+)"
PASSED = r"^#\s*Out of bounds values\s*:\s*0 OK"
OUT_OF_BOUNDS = r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+) FAILED"
AVG = r"^#\s*Avg bus bandwidth\s*:\s*(?P<avg>[\d.]+)"
# the largest size asked: the header (`# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592`), or the command
# line (`all_reduce_perf -b 8 -e 8G`; nccl-tests reads K, M, G as powers of 1024); the last said counts
# (`# Reducing maxBytes to 4294967296 due to memory limitation` after the header)
MAX_BYTES = r"\bmaxBytes (?P<max>\d+)|^#\s*Reducing maxBytes to (?P<max2>\d+)"
MAX_ARG = r"_perf\S*\s.*?(?:^|\s)(?:-e|--maxbytes)[ =]?(?P<max>\d+)(?P<unit>[KMGTkmgt]?)\b"
UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
# a launcher's tag that also sits inside a row, where a line's prefix was repeated per column (`-1[0]`)
INNER_TAG = r"\[\d{1,4}\]"
# a table pasted as a diff (a README's results added in a pull request: `+  2147483648  536870912  float
# sum  -1  45662 ...`) or quoted in markdown (`> 1048576 ...`): the marker before a row's size
PASTED = r"^[+>-]\s"
#: a row begun and not finished: nccl-tests prints a size's first columns before it runs that size and its
#: figures after (src/util.cu writeBenchmarkLinePreamble ``"%12li  %12li  %8s  %6s  %6s"``, then BenchTime
#: prints writeBenchmarkLineBody): a row that holds only these is a size the test was inside when the
#: output ends (or the next line cut in)
BEGUN_ROW = (r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<dtype>(?:u?int\d+|float|half|double|bfloat16|fp8_\w+"
             r"|f(?:16|32|64)|bf16))\s+(?:(?P<redop>[a-z]\w*)\s+)?(?:(?P<root>-?\d+)\s*)?$")
#: mscclpp-test's row: no type, op or root column, and the in-place or out-of-place figures only
#: (microsoft/mscclpp test/mscclpp-test/common.cc BaseTestEngine::runTest: ``size  count  time  algbw  busbw
#: #wrong`` under ``#       size         count     time   algbw   busbw  #wrong``)
SHORT_ROW = (r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<us>[\d.]+)\s+(?P<algbw>[\d.]+)\s+(?P<busbw>[\d.]+)"
             r"(?:\s+(?P<wrong>\d+))?\s*$")
#: markdown's rule under a piped table's header (``|---|---|``, its pipes read as gaps)
MD_RULE = r"^:?-{3,}:?(?:\s+:?-{3,}:?)+\s*$"
#: the GPU's name that ends a rank line, after its bus id (read by link_rates)
DEVICE_NAME = r"\[[0-9a-fA-Fx:.]+\]\s+(.*\S)\s*$"
HEADER = (r"^#?\s*(?:size(?:\s*\(B\))?\s+count\s+(?:type|time\s+algbw)|in-place\s+out-of-place"
          r"|(?:Initializing|Setting up the connection in) MSCCL\+\+"
          r"|bytes\s+N\s+type|\(B\)\s+\(elements\)|out-of-place"
          r"|Avg bus bandwidth|Out of bounds|nThread \d+ nGpus|Using devices"
          r"|Collective test (?:starting|concluded))"
          r"|^#\s*$|^# nccl-tests version")
#: (s31) a CSV header of nccl-tests' columns (the size, count and type first, a bus bandwidth after), and a line
#: of comma-separated cells (a CSV row or that header)
CSV_HEAD = r"(?i)^\s*#?\s*\(?size\b[^,]*,\s*count\b[^,]*,\s*type\s*,.*\bbusbw\b"
CSV_LINE = r"^\s*#?\s*[\w.()+\-/ ]+(?:\s*,\s*[\w.()+\-/# ]*){4,}\s*$"
OPS = {"alltoall": "all_to_all", "sendrecv": "send"}
# the all-reduce benchmark of stas00's ml-engineering (network/benchmarks/all_reduce_bench.py) and the many
# copies of it (rank 0 prints, once the trials are done: `The average bandwidth of all_reduce with a 4.0GB
# payload (5 trials, 16 ranks):`, ` algbw: 44.947 GBps (359.6 Gbps)`, ` busbw: 84.275 GBps (674.2 Gbps)`;
# payloads in 1e9 bytes): one ``bandwidth`` event at its busbw line, ``where="all_reduce_bench"``, and the
# ranks it names as the world
BENCH_HEAD = (r"The average bandwidth of (?P<op>\w+) with a (?P<gb>[\d.]+)\s*GB payload \((?P<trials>\d+) "
              r"trials, (?P<n>\d+) ranks\)")
BENCH_BW = r"\b(?P<what>algbw|busbw): (?P<gbs>[\d.]+) GBps\b"


def parse(lines: pl.DataFrame) -> Parsed:
    if not lines.height:
        return Parsed("nccl-tests")
    t = pl.col("text")
    # rows of one width read as one hard-wrapped line (parsers/text.py joins them onto the first): each
    # is read from its own line as written, its launcher prefix taken off
    if "cont_of" not in lines.columns:
        lines = lines.with_columns(pl.lit(None, pl.Int64).alias("cont_of"), pl.col("text").alias("raw"))
    joined = lines.filter(pl.col("cont_of").is_not_null()).select("file", pl.col("cont_of").alias("line"))
    heads = joined.unique().with_columns(pl.lit(True).alias("_head"))
    own = (pl.col("cont_of").is_not_null() | pl.col("_head")).fill_null(False)
    text = pl.when(own).then(pl.col("raw").str.replace(PREFIX, "")).otherwise(t).alias("text")
    df = lines.join(heads, on=["file", "line"], how="left").select(
        "file", "line", text, pl.col("host_said").alias("pdsh_host"))
    # (a table pasted with pipes, markdown's ``| 8 | 2 | float | sum | -1 | ...``: read as the tool printed it)
    df = df.with_columns(piped.depiped(t).alias("text"))
    # (s31) a table written with commas (nccl-tests' columns saved as CSV: ``size,count,type,redop,root,time,algbw,
    # busbw,wrong``): read as the tool printed it, in a file whose header names those columns
    csv = t.str.contains(CSV_HEAD).any().over("file") & t.str.contains(CSV_LINE)
    df = df.with_columns(pl.when(csv).then(t.str.replace_all(r"\s*,\s*", "  ")).otherwise(t).alias("text"))
    said = any_of(HEADER, BINARY, COMPILED, FAILURE, FAILED_PID, RANK, MAX_ARG, MAX_BYTES)
    mine = df.filter(t.str.contains(said)
                     | t.str.replace_all(INNER_TAG, " ").str.replace(PASTED, "  ").str.contains(ROW))
    # (a begun row only in a file with nccl-tests' own lines: alone, its shape is too plain to be theirs)
    mine = pl.concat([mine, df.filter(t.str.contains(BEGUN_ROW) | t.str.contains(MD_RULE) | t.str.contains(SHORT_ROW))
                      .join(mine.select("file").unique(), on="file")
                      ]).unique(["file", "line"], maintain_order=True).sort("file", "line")
    bench = _bench(df)
    if not mine.height:
        return bench or Parsed("nccl-tests")
    mine = mine.with_columns(t.str.extract(BINARY, 1).forward_fill().over("file").alias("op"))
    events = [_rows(mine)]
    for pattern in (FAILURE, FAILED_PID):
        sub = mine.filter(t.str.contains(pattern))
        if sub.height:
            sub = (sub.with_columns(t.str.extract_groups(pattern).alias("_g")).drop("op").unnest("_g")
                   .with_columns(pl.coalesce("host", "pdsh_host").alias("host")))
            # ncclUnhandledCudaError is NCCL's word for a CUDA call that failed under it: a CUDA failure
            cuda = (pl.col("what") == "CUDA") | pl.col("msg").str.contains("(?i)^unhandled cuda error")
            kind = (pl.when(cuda).then(pl.lit(EventKind.CUDA_ERROR)).otherwise(pl.lit(EventKind.CRASH))
                    if "what" in sub.columns else pl.lit(EventKind.CRASH))
            events.append(sub.with_columns(kind.alias("kind"), t.str.strip_chars().alias("message")))
    events = [e for e in events + _said(mine) + [_devices(mine), _begun(mine)] if e.height]
    events = pl.concat(events, how="diagonal_relaxed") if events else None
    if events is not None and "pid" in events.columns:
        events = events.with_columns(pl.col("pid").cast(pl.Int64, strict=False))
    ranks = _ranks(mine)
    if bench:
        events = pl.concat([e for e in (events, bench.tables["events"]) if e is not None],
                           how="diagonal_relaxed")
        ranks = pl.concat([ranks, bench.tables["ranks"]], how="diagonal_relaxed")
        mine = pl.concat([mine.select("file", "line"), bench.claimed])
    return Parsed("nccl-tests", {"events": events, "ranks": ranks}, mine.select("file", "line"))


def _bench(df: pl.DataFrame) -> Parsed | None:
    """The all-reduce benchmark's result (``BENCH_HEAD`` and its algbw/busbw lines after it): a
    ``bandwidth`` event at the busbw line, with the payload and the algbw; the ranks it names, the world."""
    t = pl.col("text")
    lines = df.filter(t.str.contains(BENCH_HEAD) | t.str.contains(BENCH_BW))
    if not lines.height or not lines["text"].str.contains(BENCH_HEAD).any():
        return None
    head = t.str.extract_groups(BENCH_HEAD).struct
    bw = t.str.extract_groups(BENCH_BW).struct
    lines = lines.sort("file", "line").with_columns(
        head.field("op").forward_fill().over("file").alias("op"),
        (head.field("gb").cast(pl.Float64, strict=False) * 1e9).cast(pl.Int64).forward_fill().over("file")
        .alias("bytes"),
        head.field("n").cast(pl.Int64, strict=False).forward_fill().over("file").alias("world_size"),
        pl.when(bw.field("what") == "algbw").then(bw.field("gbs").cast(pl.Float64, strict=False))
        .forward_fill().over("file").alias("algbw_gbs"),
        pl.when(bw.field("what") == "busbw").then(bw.field("gbs").cast(pl.Float64, strict=False))
        .alias("busbw_gbs"))
    rows = lines.filter(pl.col("busbw_gbs").is_not_null() & pl.col("bytes").is_not_null())
    if not rows.height:
        return None
    events = rows.select("file", "line", pl.lit(EventKind.BANDWIDTH).alias("kind"),
                         t.str.strip_chars().alias("message"), pl.col("op").replace(OPS), "bytes",
                         "algbw_gbs", "busbw_gbs", pl.lit("all_reduce_bench").alias("where"))
    ranks = rows.select("file", "world_size", pl.lit("all_reduce_bench").alias("source")).unique()
    return Parsed("nccl-tests", {"events": events, "ranks": ranks}, lines.select("file", "line"))


def _said(mine: pl.DataFrame) -> list[pl.DataFrame]:
    """The lines that end a table (``Out of bounds values``, ``Avg bus bandwidth``) and the size asked."""
    t = pl.col("text")
    said = t.str.strip_chars().alias("message")
    unit = t.str.extract(MAX_ARG, 2).str.to_uppercase().replace_strict(UNITS, default=1,
                                                                        return_dtype=pl.Int64)
    return [
        mine.filter(t.str.contains(PASSED)).with_columns(pl.lit(EventKind.TEST_PASSED).alias("kind"), said),
        mine.filter(t.str.contains(OUT_OF_BOUNDS)).with_columns(
            pl.lit(EventKind.TEST_WRONG).alias("kind"), said,
            t.str.extract(OUT_OF_BOUNDS, 1).cast(pl.Int64).alias("numel")),
        mine.filter(t.str.contains(AVG)).with_columns(
            pl.lit(EventKind.TEST_AVG_BUSBW).alias("kind"), said,
            t.str.extract(AVG, 1).cast(pl.Float64, strict=False).alias("busbw_gbs")),
        mine.filter(t.str.contains(MAX_BYTES)).with_columns(
            pl.lit(EventKind.TEST_SIZES).alias("kind"), said,
            pl.coalesce(t.str.extract(MAX_BYTES, 1), t.str.extract(MAX_BYTES, 2)).cast(pl.Int64, strict=False)
            .alias("bytes")),
        mine.filter(t.str.contains(MAX_ARG)).with_columns(
            pl.lit(EventKind.TEST_SIZES).alias("kind"), said,
            (t.str.extract(MAX_ARG, 1).cast(pl.Int64, strict=False) * unit).alias("bytes")),
    ]


def _begun(mine: pl.DataFrame) -> pl.DataFrame:
    """A size begun and never finished (``BEGUN_ROW``): a ``bandwidth`` event ``where="nccl-tests-begun"``,
    its size in ``bytes`` and no figure."""
    t = pl.col("text")
    return mine.filter(t.str.contains(BEGUN_ROW)).select(
        "file", "line", pl.lit(EventKind.BANDWIDTH).alias("kind"), t.str.strip_chars().alias("message"),
        pl.col("op").fill_null("unknown").replace(OPS),
        t.str.extract(BEGUN_ROW, 1).cast(pl.Int64, strict=False).alias("bytes"),
        pl.lit("nccl-tests-begun").alias("where"))


def _devices(mine: pl.DataFrame) -> pl.DataFrame:
    """The GPU each rank line names (src/common.cu prints ``prop.name`` after the bus id: ``[0000:85:00]
    NVIDIA GeForce RTX 4090``): a ``bandwidth`` event ``where="device"``, the name its message, for
    link_rates to read what the GPUs' path gives."""
    t = pl.col("text")
    name = t.str.extract(DEVICE_NAME, 1)
    # (s27) ``comm``: the GPU itself, its host and bus id (``lab [0000:02:00]``): two ranks on one GPU share
    # it, and their collectives cross no link (rules_nccl_tests.one_gpu)
    gpu = pl.concat_str(t.str.extract(RANK, 3), t.str.extract(RANK + r".*?(\[[0-9a-fA-Fx:.]+\])", 5), separator=" ")
    return mine.filter(t.str.contains(RANK) & name.is_not_null()).select(
        "file", "line", pl.lit(EventKind.BANDWIDTH).alias("kind"), name.alias("message"),
        pl.lit("device").alias("where"), gpu.alias("comm"))


def _rows(mine: pl.DataFrame) -> pl.DataFrame:
    """One ``bandwidth`` event per result row (its out-of-place figures), and a ``test_wrong`` event
    for a row whose ``#wrong`` count (out of place or in place) is above 0."""
    t = pl.col("text")
    row = t.str.replace_all(INNER_TAG, " ").str.replace(PASTED, "  ")
    rows = mine.filter(row.str.contains(ROW) | row.str.contains(SHORT_ROW))
    if not rows.height:
        return rows
    g, short = pl.col("_g").struct, pl.col("_s").struct

    def field(name: str) -> pl.Expr:  # (a full row's, else mscclpp-test's short row's)
        return pl.coalesce(g.field(name), short.field(name)) if name != "wrong2" else g.field(name)
    # (N/A and 2e-06 are no count)
    count = [field(w).cast(pl.Int64, strict=False) for w in ("wrong", "wrong2")]
    rows = rows.with_columns(row.str.extract_groups(ROW).alias("_g"), row.str.extract_groups(SHORT_ROW).alias("_s")
                             ).with_columns(
        pl.lit(EventKind.BANDWIDTH).alias("kind"), row.str.strip_chars().alias("message"),
        pl.col("op").fill_null("unknown").replace(OPS),
        field("size").cast(pl.Int64, strict=False).alias("bytes"),
        (field("us").cast(pl.Float64) / 1000).alias("duration_ms"),
        field("algbw").cast(pl.Float64).alias("algbw_gbs"),
        field("busbw").cast(pl.Float64).alias("busbw_gbs"),
        pl.max_horizontal(*count).alias("numel"),
        pl.lit("nccl-tests").alias("where"),
    ).drop("_g", "_s")
    wrong = rows.filter(pl.col("numel") > 0).with_columns(pl.lit(EventKind.TEST_WRONG).alias("kind"))
    return pl.concat([rows.with_columns(pl.lit(None, pl.Int64).alias("numel")), wrong])


def _ranks(mine: pl.DataFrame) -> pl.DataFrame:
    """The header's ranks (world size where they are 0..N-1 once each), the hosts that failures
    name, and the version the tests were compiled with."""
    t = pl.col("text")
    listed = (mine.filter(t.str.contains(RANK))
              .with_columns(t.str.extract_groups(RANK).alias("_g")).unnest("_g")
              .with_columns(pl.col("rank", "pid", "cuda_dev").cast(pl.Int64, strict=False)))
    whole = pl.len().over("file")
    listed = listed.with_columns(pl.when((pl.col("rank").n_unique().over("file") == whole)
                                         & (pl.col("rank").max().over("file") == whole - 1))
                                 .then(whole).alias("world_size"))
    failed = pl.concat([mine.filter(t.str.contains(p))
                        .select("file", "pdsh_host", t.str.extract_groups(p).alias("_g")).unnest("_g")
                        for p in (FAILURE, FAILED_PID)], how="diagonal_relaxed"
                       ).with_columns(pl.coalesce("host", "pdsh_host").alias("host"))
    failed = failed.filter(pl.col("host").is_not_null()).select(
        "file", "host", *([pl.col("pid").cast(pl.Int64, strict=False)] if "pid" in failed.columns else []))
    compiled = mine.filter(t.str.contains(COMPILED)).select(
        "file", t.str.extract(COMPILED, 1).alias("nccl_version"))
    out = pl.concat([listed.select("file", "host", "pid", "rank", "cuda_dev",
                                   pl.col("world_size").cast(pl.Int64)),
                     failed.unique(maintain_order=True)], how="diagonal_relaxed")
    if compiled.height:
        v = compiled.group_by("file").agg(pl.col("nccl_version").first())
        out = pl.concat([out, v.join(out.select("file"), on="file", how="anti")],
                        how="diagonal_relaxed").join(
            v.rename({"nccl_version": "_v"}), on="file", how="left").with_columns(
            pl.coalesce("nccl_version" if "nccl_version" in out.columns else pl.lit(None, pl.Utf8), "_v")
            .alias("nccl_version")).drop("_v")
    return out.with_columns(pl.lit("nccl-tests").alias("source"))
