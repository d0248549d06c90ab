"""Every parser on real files, with the counts the corpus MANIFEST states."""

import gzip

import polars as pl
import pytest

from tests.conftest import SAMPLES
from tracekit import schema
from tracekit.ingest import ingest, parse_file
from tracekit.parsers import flight_recorder, kineto, nccl, pyspy, text


def _lines(path):
    return text.lines_frame(str(path), path.read_text(errors="replace"))


def test_nccl_socket_two_nodes(corpus):
    p = nccl.parse(_lines(corpus / "nccl_socket_2node_awsbatch_nccltests_2.11.4.log"))
    comms = p.tables["comms"]
    done = comms.filter(pl.col("state") == "init_complete")
    assert sorted(done["comm"].to_list()) == ["0x7f7dec000fa0", "0x7f85a4000fa0"]
    assert set(done["bus_id"]) == {"1e0"}
    links = p.tables["links"]
    conn = links.filter(pl.col("what") == "connection")
    assert set(conn["transport_kind"]) == {"NET/Socket"}
    assert conn["channel"].n_unique() == 2
    boot = links.filter(pl.col("what") == "bootstrap")
    assert sorted(boot["addr"]) == ["10.0.139.244", "10.0.142.242"] and set(boot["iface"]) == {"eth0"}
    ranks = p.tables["ranks"]
    assert dict(zip(ranks["host"], ranks["rank"])) == {"ip-10-0-139-244": 0, "ip-10-0-142-242": 1}
    assert set(ranks["nccl_version"]) == {"2.11.4+cuda11.4"}


@pytest.mark.parametrize("name, ranks, inits, transports", [
    ("bigscience/all_reduce_bench-32gb-n4.txt", 16, 16, {"P2P/IPC", "NET/IB"}),
    ("bigscience/all_reduce_bench-a100-n4.txt", 32, 32, {"P2P/IPC", "NET/IB"}),
    ("bigscience/n16_32gb_all_reduce_bench.txt", 64, 64, {"P2P/IPC", "NET/IB"}),
    ("bigscience/meg_ds_3d_gpt2_perf_n16.out", 64, 514, {"P2P/IPC", "NET/IB"}),
    ("bigscience/meg_ds_zero_gpt2_perf_n16-1999616.out", 64, 192, {"P2P/IPC", "NET/IB"}),
    ("bigscience/meg_gpt2_perf_n16-1999618.out", 64, 400, {"P2P/IPC", "NET/IB"}),
])
def test_bigscience_nccl_logs(corpus, name, ranks, inits, transports):
    p = nccl.parse(_lines(corpus / name))
    assert p.tables["comms"].filter(pl.col("state") == "init_complete").height == inits
    assert p.tables["ranks"]["rank"].n_unique() == ranks
    assert set(p.tables["links"]["transport_kind"].drop_nulls()) == transports


def test_interleaved_writers_resynchronise():
    lines = text.lines_frame("x", "g183:161264:166015g183:161258:166018 [1] NCCL INFO Using network Socket\n")
    net = nccl.parse(lines).tables["links"]
    assert net.select("host", "pid", "value").row(0) == ("g183", 161258, "Socket")


def test_coll_lines_decode_hex_opcount_and_bytes():
    log = ("h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xabc - Init COMPLETE\n"
           "h:1:2 [0] NCCL INFO AllReduce: opCount 1f sendbuff 0x1 recvbuff 0x2 count 1024 datatype 9 op 0 "
           "root 0 comm 0xa [nranks=2] stream 0x3\n")
    c = nccl.parse(text.lines_frame("x", log)).tables["collectives"]
    assert c.select("pg", "seq", "op", "dtype", "bytes", "rank").row(0) == ("0xabc", 31, "all_reduce", "bfloat16", 2048, 0)


def test_launcher_prefixes_are_taken_off():
    df = text.lines_frame("x", "[rank3]:[E1202 12:00:00.1 1 x.cpp:1] boom\n10.0.0.1: [default1]:hello\n")
    assert df["rank_tag"].to_list() == [3, None]
    assert df["local_tag"].to_list() == [None, 1]
    assert df["text"].to_list()[1] == "hello"


def test_pyspy_grouped_threads(corpus):
    p = pyspy.parse(_lines(corpus / "bigscience/pyspy_tr11_176B_2node_hang_chronicles_extract.md"))
    st = p.tables["events"]
    assert st.height == 16
    idle = st.filter(pl.col("thread").str.contains("688514"))
    assert idle["frames"][0].split(" <- ")[2].startswith("_try_get_data")


@pytest.mark.parametrize("scenario, ranks_entries", [
    ("gpu_error_1st", {12: 27, 13: 16}), ("lock_gil_1st", {9: 0, 14: 0, 8: 9}),
])
def test_flight_recorder_pickles(corpus, scenario, ranks_entries):
    for rank, n in ranks_entries.items():
        path = corpus / "nvrx_fr" / scenario / f"_dump_{rank}"
        p = flight_recorder.parse(flight_recorder.load(path.read_bytes()), str(path))
        assert p.tables["collectives"].height == n
        assert p.tables["ranks"]["rank"][0] == rank
        assert p.tables["ranks"]["nccl_version"][0] == "2.27.3"


def test_dlrm_kineto_pairs_eight_kernels_per_rank(corpus):
    for path in sorted((corpus / "param_dlrm_kineto_8ranks").glob("*.json")):
        p = kineto.parse(kineto.load(path.read_bytes()), str(path))
        gpu = p.tables["collectives"].filter(pl.col("source") == "kineto-gpu")
        assert gpu.height == 8
        assert gpu.group_by("op").len().sort("op").rows() == [("all_reduce", 3), ("send", 5)]


def test_kineto_new_schema_args(corpus):
    path = corpus / "hta/nccl_parser_config_nccl_data.json.gz"
    p = kineto.parse(kineto.load(gzip.decompress(path.read_bytes())), str(path))
    cpu = p.tables["collectives"].filter(pl.col("source") == "kineto")
    assert cpu.group_by("op").len().sort("op").rows() == [("all_reduce", 15), ("broadcast", 6)]
    assert 6637568 in cpu["count"].to_list()


def test_every_line_is_parsed_or_unknown(corpus):
    store = ingest([corpus])
    text_files = store.files.filter(pl.col("lines") > 0)
    assert (text_files["blank"] + text_files["parsed"] + text_files["unknown"] == text_files["lines"]).all()
    assert store.files.height >= 100


def test_tables_follow_the_schema():
    store = ingest([__import__("tests.conftest", fromlist=["SAMPLES"]).SAMPLES / "gloo_2x2_healthy"])
    for name, df in store.tables().items():
        assert dict(df.schema) == schema.TABLES[name], name


def test_truncated_gzip_keeps_what_it_held(tmp_path):
    log = "".join(f"h:1:2 [0] NCCL INFO Using network Socket {i}\n" for i in range(2000)).encode()
    blob = gzip.compress(log)
    path = tmp_path / "nccl.log.gz"
    path.write_bytes(blob[: len(blob) // 2])
    row, parsed = parse_file(str(path))
    assert "truncated gzip" in row["error"]
    assert 0 < row["parsed"] < 2000 and row["unknown"] <= 1


def test_every_parser_is_in_the_format_registry():
    """formats.py names every parser module that parses (a format added without its registry line
    would be silently skipped), and the rank precedence comes from the registry, each source once."""
    import pkgutil

    import tracekit.parsers as parsers
    from tracekit import formats

    # lines frames, NCCL's tables, torch_log's exits, native fatal lines and patterns, bench_results' test
    # runners and result tables (s24: any tool's tables and result lines, result_tables; s25: their matrices,
    # result_matrix, and tables pasted with pipes, piped; and trainer.parse's own parts: serving, work_done;
    # s26: launcher.parse's reading of srun's tasks, slurm; s29: rank_words' set-up lines, rank_set_up; s30:
    # series' reading of a program's own timing lines, timings; s31: bench_results' per-rank result blocks and
    # bandwidth checks' tallies, rank_blocks and bw_checks; trainer.parse's loop ends, loop_ends; s34: its closing
    # figure blocks, result_block)
    helpers = {"text", "prefixes", "nccl_ranks", "nccl_shapes", "process_end", "native_fatal", "serving", "work_done",
               "slurm", "rank_set_up", "timings", "rank_blocks", "bw_checks", "loop_ends", "result_block",
               "torch_patterns", "torch_context", "test_reports", "result_tables", "result_matrix", "piped"}
    registry = formats.DECODED + formats.TEXT + (formats.FALLBACK,)
    named = {f.parser.__name__.rsplit(".", 1)[1] for f in registry}
    assert named == {m.name for m in pkgutil.iter_modules(parsers.__path__)} - helpers
    assert sorted(formats.RANK_SOURCES.values()) == list(range(len(formats.RANK_SOURCES)))
    store = ingest([SAMPLES / "gpu_2x1_divergence", SAMPLES / "zero3_wandb_2x2"])
    said = set(",".join(store.ranks["source"].drop_nulls()).split(","))
    assert said and said <= set(formats.RANK_SOURCES)
    # a file's kinds are the registry's (the parsers' own names for what they found), never NO_KIND's
    kinds = set(",".join(store.files["kind"]).split(","))
    assert {"nccl", "flight-recorder", "torch"} <= kinds
    assert kinds <= {f.kind for f in formats.DECODED + formats.TEXT} - formats.NO_KIND | {"text"}
