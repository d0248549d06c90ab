"""The C scanner (tracekit/_scan.c) reads plain NCCL COLL lines apart from polars; both ways must
give the same store, line for line. Each case is ingested twice, with the scanner and with
``nccl._scan = None`` (what an install without a C compiler gets), and every table compared."""

import mmap
import os
import random
import shutil
import subprocess
import sys
import sysconfig

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT, SAMPLES
from tracekit.ingest import ingest
from tracekit.parsers import nccl

needs_scanner = pytest.mark.skipif(nccl._scan is None, reason="the C scanner is not built here")

COLL = ("vm:1037:1037 [0] NCCL INFO AllReduce: opCount 1f sendbuff 0x7f00 recvbuff 0x7f10 count 2097152 "
        "datatype 9 op 0 root 0 comm 0x55a0 [nranks=2] stream 0x55")
INIT = "vm:1037:1037 [0] NCCL INFO comm 0x55a0 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0xfeed - Init COMPLETE"


def test_the_scanner_is_built_where_python_has_a_c_compiler():
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc):
        assert nccl._scan is not None, f"{cc} is here but tracekit._scan was not built: pip install -e . -v says why"


def tables(paths, scanner: bool) -> dict[str, pl.DataFrame]:
    saved = nccl._scan
    nccl._scan = saved if scanner else None
    try:
        store = ingest(paths)
    finally:
        nccl._scan = saved
    out = {}
    for name, df in store.tables().items():
        df = df.drop("error") if name == "files" else df  # (no file errors in these cases)
        out[name] = df.sort(df.columns, nulls_last=True)
    return out


def same_both_ways(paths) -> dict[str, pl.DataFrame]:
    fast, slow = tables(paths, True), tables(paths, False)
    for name in fast:
        assert fast[name].equals(slow[name]), f"{name} differs:\n{fast[name]}\n{slow[name]}"
    return fast


@needs_scanner
def test_real_gpu_logs_read_the_same_both_ways():
    for run in ("gpu_2x1_bench", "gpu_2x1_divergence", "gpu_1x1_healthy", "zero3_wandb_2x2"):
        t = same_both_ways([SAMPLES / run])
        coll_lines = sum(f.read_text(errors="replace").count(": opCount ") for f in (SAMPLES / run).glob("nccl.*.log"))
        assert t["collectives"].filter(pl.col("source") == "nccl").height == coll_lines
        assert coll_lines > 0 or not run.startswith("gpu")


@needs_scanner
def test_scanner_takes_the_plain_coll_lines_and_hands_back_the_rest():
    data = "\n".join([INIT, COLL, "hello", "", COLL.replace("opCount 1f", "opCount 20")]).encode()
    lines, coll = nccl.read_many([("x.log", data)])
    assert coll.rows.to_dicts() == [
        {"line": 2, "stream": 0, "op": 0, "seq": 31, "count": 2097152, "dtype": 9, "nranks": 2},
        {"line": 5, "stream": 0, "op": 0, "seq": 32, "count": 2097152, "dtype": 9, "nranks": 2}]
    assert coll.ops.to_dicts() == [{"op": 0, "op_raw": "AllReduce"}]
    assert coll.streams.to_dicts() == [
        {"stream": 0, "file": "x.log", "host": "vm", "pid": 1037, "comm": "0x55a0", "line": 2, "dev": 0, "lines": 2}]
    assert lines["line"].to_list() == [1, 3, 4] and lines["raw"].to_list() == [INIT, "hello", ""]


# Lines close to the COLL shape: the scanner must leave each to polars or read it the same way.
NEAR = [
    COLL.replace(" [nranks=2]", ""),                       # NCCL before 2.19: no nranks
    COLL.replace("opCount 1f", "opCount " + "f" * 16),      # opCount past int64
    COLL.replace("count 2097152", "count 99999999999999999999"),
    COLL.replace("root 0", "root -1"),
    COLL.replace("sendbuff 0x7f00 recvbuff 0x7f10", "sendbuff (nil) recvbuff (nil)"),
    COLL.replace("comm 0x55a0", "comm (nil)"),
    COLL.replace("[0] NCCL", "[0] enqueue.cc:1234 NCCL"),  # TRACE builds: a source location
    COLL.replace("NCCL INFO", "NCCL WARN"),
    COLL + "\r",                                            # CRLF
    "[rank1]:" + COLL,                                      # torchrun's prefixes
    "[rank1]: " + COLL,
    "[default0]:\t" + COLL,
    "[rank1]:  " + COLL,
    "[rank]:" + COLL,
    "2026-12-03 07:00:00 " + COLL,                          # a timestamp first
    COLL.replace("AllReduce", "AllRéduce"),
    COLL.replace("datatype 9", "datatype 42"),
    COLL.replace("[nranks=2]", "[nranks=x]").replace(" stream", ""),
    COLL + " [nranks=3]",
    COLL.replace("vm:1037", "g183:161264:166015g183:1037"),  # two writers glued
    COLL.replace("count 2097152", "count 0"),
    COLL[:60],                                              # cut mid-line
]


@needs_scanner
def test_lines_near_the_coll_shape_read_the_same_both_ways(tmp_path):
    log = tmp_path / "rank1.log"
    log.write_text("\n".join([INIT, *NEAR]) + "\n")
    t = same_both_ways([log])
    assert t["files"]["lines"].to_list() == [len(NEAR) + 1]
    assert t["collectives"].height >= len(NEAR) - 6


@needs_scanner
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, len(COLL) - 1), st.sampled_from(list(" 0x9f-[]:\r\t\xe9nil()"))),
                min_size=1, max_size=4), st.integers(0, 2**31))
def test_mutated_coll_lines_read_the_same_both_ways(tmp_path, edits, seed):
    rnd = random.Random(seed)
    lines = [INIT]
    for _ in range(5):
        line = list(COLL)
        for at, ch in edits:
            line[(at + rnd.randrange(7)) % len(line)] = ch
        lines += ["".join(line), COLL]
    folder = tmp_path / str(seed)
    folder.mkdir()
    (folder / "rank.log").write_bytes("\n".join(lines).encode("utf-8", "replace"))
    same_both_ways([folder])
    shutil.rmtree(folder)


ASAN_DRIVER = """
import glob, importlib.util, random, sys
spec = importlib.util.spec_from_file_location("tracekit._scan", glob.glob(sys.argv[1] + "/_scan*.so")[0])
scan = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scan)
from tests.test_robustness import BASES, mutate
from tests.test_scan import COLL, INIT, NEAR
rnd = random.Random(5)
bases = [("\\n".join([INIT, *NEAR]) + "\\n").encode(), b"", b"\\n", COLL.encode()] + [p.read_bytes() for p in BASES]
n = 0
for data in bases:
    for _ in range(100):
        text = mutate(data, rnd.choice(["truncate", "random_bytes", "crlf", "glued", "latin1", "noise"]), rnd) if data else data
        got = scan.scan(text)
        scan.texts(text, got[6])
        got[1]["nranks"].add(1)
        capsules = [got[1][k].__arrow_c_array__() for k in ("nranks", "line", "stream_lines")]  # freed by their owner
        del capsules
        n += 1
many = "\\n".join(COLL.replace("vm:", f"h{i}:").replace("0x55a0", f"0x{i:x}") for i in range(5000)).encode()
assert len(scan.scan(many)[2]) == 5000  # the intern tables grew past their first size many times
print("scanned", n)
"""


@needs_scanner
def test_scanner_under_address_and_undefined_behaviour_sanitizers(tmp_path):
    """The C scanner built with -fsanitize=address,undefined reads mutated real files, near-COLL
    lines and 5,000 distinct hosts without a sanitizer report."""
    cc = shutil.which("gcc")
    libs = [subprocess.run([cc, f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
            for lib in ("libasan.so", "libubsan.so")] if cc else []
    if not cc or not all(os.path.isabs(lib) for lib in libs):
        pytest.skip("gcc with libasan and libubsan is not here")
    so = tmp_path / ("_scan" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run([cc, "-g", "-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-shared",
                    "-fPIC", "-std=c11", "-I" + sysconfig.get_paths()["include"], str(ROOT / "tracekit/_scan.c"),
                    "-o", str(so)], check=True)
    env = dict(os.environ, LD_PRELOAD=":".join(libs), ASAN_OPTIONS="detect_leaks=0", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", ASAN_DRIVER, str(tmp_path)], env=env, capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0 and "ERROR: AddressSanitizer" not in done.stderr and "runtime error" not in done.stderr, \
        done.stderr[-3000:]
    assert "scanned 1" in done.stdout  # (every base x 100 mutations)


@needs_scanner
def test_columns_handed_over_without_a_copy_outlive_the_scan():
    """The scanner's columns reach polars as Arrow arrays on the scanner's own memory (no copy,
    no numpy); the array owns it from then on, so it lives as long as the last frame on it, and
    a second hand-over or a read of the emptied column is refused, not a read of freed memory."""
    import gc

    lines = [COLL.replace("opCount 1f", f"opCount {i:x}").replace("count 2097152", f"count {i * 7}") for i in range(50_000)]
    lines[7] = lines[7].replace(" [nranks=2]", "")  # a line that says no size: null, not -1
    data = ("\n".join(lines[:100] + ["plain text", "caf\xe9 \u2502"] + lines[100:]) + "\n").encode()
    n, cols, hosts, ops, comms, rest, spans, rest_bytes = nccl._scan.scan(data)
    cols["seq"].add(3)
    seq = pl.Series(cols["seq"])
    frame = pl.DataFrame({"count": pl.Series(cols["count"]), "nranks": pl.Series(cols["nranks"])})
    with pytest.raises(ValueError, match="already handed"):
        pl.Series(cols["seq"])
    with pytest.raises(BufferError):
        memoryview(cols["seq"])
    assert nccl._scan.texts(data, spans) == ["plain text", "caf\xe9 \u2502"] and rest_bytes == len("plain text") + len("caf\xe9 \u2502".encode())
    assert pl.Series(rest).to_list() == [101, 102] and n == 50_002
    del cols, rest, spans
    gc.collect()
    churn = [bytes(range(256)) * 4096 for _ in range(200)]  # reuse any memory freed too early
    assert seq.to_list() == [i + 3 for i in range(50_000)]
    assert frame["count"].to_list() == [i * 7 for i in range(50_000)]
    assert frame["nranks"].null_count() == 1 and frame["nranks"][7] is None and frame["nranks"][8] == 2
    del churn
    with pytest.raises(ValueError, match="past the end"):
        nccl._scan.texts(b"short", nccl._scan.scan(data)[6])


def test_text_left_to_polars_is_parsed_in_groups_and_gives_the_same_store(monkeypatch):
    """With the scanner a batch can be large (its COLL rows are compact); the lines it leaves go to
    the polars parsers in groups of at most ingest.BATCH_BYTES of text. Groups of one file each
    give the store that one group gives, table for table."""
    from tracekit import formats
    from tracekit import ingest as ingest_module

    run = [SAMPLES / "gpu_2x1_divergence", SAMPLES / "zero3_wandb_2x2"]
    whole = tables(run, nccl._scan is not None)
    monkeypatch.setattr(ingest_module, "BATCH_BYTES", 1)
    texts = [formats.classify(str(f), formats.read(str(f))) for f in ingest_module.discover(run)]
    texts = [(row, got) for row, got in texts if isinstance(got, bytes | mmap.mmap)]
    groups = [g for g, _ in ingest_module._text_groups(texts)]
    if nccl._scan is not None:
        assert [len(g) for g in groups] == [1] * len(texts)
    else:  # without the scanner a batch is one group (the batches are BATCH_BYTES already)
        assert len(groups) == 1
    split = tables(run, nccl._scan is not None)
    for name in whole:
        assert split[name].equals(whole[name]), name


@pytest.mark.parametrize("mixed", [False, True])
def test_columns_of_one_value_read_the_same_as_columns_of_many(tmp_path, mixed):
    """A column that holds one value on every COLL row (one process group, one op, one dtype: the
    common case) is kept as a single value, not a copy per row; it must read, compare and store
    exactly as a column of many does, row by row."""
    init = [INIT.replace("vm:1037:1037 [0]", f"n{r}:{10 + r}:{10 + r} [{r}]").replace("rank 1 nranks 2", f"rank {r} nranks 2")
            .replace("comm 0x55a0", f"comm 0x{r}0") for r in range(2)]
    files = []
    for r in range(2):
        lines = [init[r]]
        for i in range(6):
            op, dtype = (("AllGather", 7) if mixed and i % 2 else ("AllReduce", 9))
            lines.append(COLL.replace("vm:1037:1037 [0]", f"n{r}:{10 + r}:{10 + r} [{r}]").replace("AllReduce", op)
                         .replace("opCount 1f", f"opCount {i:x}").replace("datatype 9", f"datatype {dtype}")
                         .replace("comm 0x55a0", f"comm 0x{r}0").replace("count 2097152", f"count {100 + i}"))
        (tmp_path / f"nccl.{r}.log").write_text("\n".join(lines) + "\n")
        files.append(str(tmp_path / f"nccl.{r}.log"))
    store = ingest([tmp_path])
    got = store.collectives.sort("file", "line")
    want_op = [("all_gather" if mixed and i % 2 else "all_reduce") for i in range(6)] * 2
    assert got["op"].cast(pl.Utf8).to_list() == want_op
    assert got["op_raw"].to_list() == [("AllGather" if o == "all_gather" else "AllReduce") for o in want_op]
    assert got["dtype"].to_list() == [("float32" if o == "all_gather" else "bfloat16") for o in want_op]
    assert got["bytes"].to_list() == [(100 + i) * (4 if o == "all_gather" else 2) for i, o in zip(list(range(6)) * 2, want_op)]
    assert got["pg"].to_list() == ["0xfeed"] * 12 and got["comm"].to_list() == ["0x00"] * 6 + ["0x10"] * 6
    assert got["file"].to_list() == [files[0]] * 6 + [files[1]] * 6 and got["rank"].to_list() == [0] * 6 + [1] * 6
    assert got.filter(pl.col("op") == "all_reduce").height == (6 if mixed else 12)  # compares as a column does
    back = type(store).read(store.write(tmp_path / "store"))
    assert back.collectives.sort("file", "line").equals(got)


def test_a_pid_past_int32_reads_as_unknown_both_ways(tmp_path):
    """The collectives keep pid as Int32; a COLL line whose pid does not fit (a garbled prefix) is
    still a collective of its file, with an unknown pid, read the same with and without the scanner."""
    big = COLL.replace("vm:1037:1037", "vm:99999999999:1037")
    (tmp_path / "nccl.log").write_text("\n".join([INIT, COLL, big]) + "\n")
    got = same_both_ways([tmp_path])["collectives"].sort("line")
    assert got["pid"].to_list() == [1037, None] and got["seq"].to_list() == [0x1F, 0x1F]
    assert got["file"].to_list() == [str(tmp_path / "nccl.log")] * 2
