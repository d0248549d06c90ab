"""The formats and rank sources of issue 19, each on the real excerpt that shows it (samples/wild/)."""

import polars as pl

from tests.conftest import SAMPLES
from tracekit.ingest import ingest, parse_file
from tracekit.parsers import text

WILD = SAMPLES / "wild"


def one(prefix: str):
    path = next(WILD.glob(prefix + "*.txt"))
    return path, ingest([path])


def test_a_process_driving_several_gpus_holds_a_rank_per_gpu():
    # one pid drives GPUs 0 and 5: rank 0 from its proxy, rank 5 from its channel lines
    _, s = one("nccl-020")
    r = s.ranks.filter(pl.col("pid") == 39964).sort("rank")
    assert r.select("rank", "cuda_dev").rows() == [(0, 0), (5, 5)]
    links = s.links.filter((pl.col("what") == "connection") & (pl.col("pid") == 39964))
    assert set(links["rank"]) == {5}


def test_a_group_local_rank_never_replaces_the_global_one():
    # `[rank4]:[E ...] [PG 5 Rank 0]`: global rank 4, rank 0 only within process group 5
    _, s = one("torch-003")
    assert sorted(s.ranks["rank"].drop_nulls()) == [0, 4]
    stuck = s.events.filter(pl.col("kind") == "stall")
    assert set(stuck["rank"]) == {0, 4} and set(stuck["pg"]) == {"5"}


def test_nccl_ranks_of_a_sub_communicator_are_not_global():
    # `[rank10]:` says the world is past 10; `rank 7 nRanks 8` is a sub-communicator's rank
    _, s = one("llm-031")
    assert s.ranks["rank"].drop_nulls().to_list() == [10]


def test_launcher_prefixes_stack_and_viewer_line_numbers_are_no_ranks():
    df = text.lines_frame("x", "> [rank10]: RuntimeError: x\n"
                               "←[36m(RayWorkerWrapper pid=194, ip=10.0.130.237)←[0m vllm-0-1:194:194 [0] NCCL INFO x\n"
                               "[1757] a\n[1758] b\n[1759] c\n[3] d\n")
    assert df["launch_rank"].to_list() == [10, None, None, None, None, 3]
    assert df["text"][1] == "vllm-0-1:194:194 [0] NCCL INFO x" and df.select("ray_pid", "ray_ip").row(1) == (194, "10.0.130.237")


def test_torchfrtrace_report():
    _, s = one("torch-005")
    miss = s.events.filter(pl.col("kind") == "rank_missing")
    assert miss.select("rank", "seq", "op", "pg").rows() == [(r, 31117, "all_reduce", "0") for r in range(3, 8)]
    assert s.ranks["world_size"].max() == 8 and s.ranks["rank"].drop_nulls().len() == 0


def test_nccl_tests_header_names_ranks_of_one_process():
    _, s = one("nccl-002")
    assert s.ranks.filter(pl.col("rank").is_not_null()).select("rank", "pid", "host", "cuda_dev").sort("rank").rows() == [
        (r, 1688, "fastmoe", r) for r in range(4)]
    assert s.ranks["host"].unique().to_list() == ["fastmoe"]  # the failure line names the same host
    assert s.ranks["world_size"].max() == 4
    assert s.events.filter(pl.col("kind") == "crash")["where"].to_list() == ["common.cu:777"]


def test_the_watchdog_without_a_sequence_number_and_its_abort():
    # torch < 1.10 wrote WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=1800000), hard-wrapped here at 115 columns
    path, s = one("llm-026")
    t = s.events.filter(pl.col("kind") == "watchdog_timeout")
    assert t.select("rank", "seq", "op", "timeout_ms").rows() == [(0, None, "allreduce", 1800000)]
    assert s.events.filter(pl.col("kind") == "watchdog_abort").height >= 1
    row, _ = parse_file(str(path))
    assert row["unknown"] == 0


def test_an_nccl_line_nothing_decodes_is_unknown(tmp_path):
    log = tmp_path / "nccl.log"
    log.write_text("h:1:2 [0] NCCL INFO Connected all rings\n"
                   "h:1:2 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
                   "h:1:2 [0] NCCL INFO a message no NCCL version prints\n")
    row, _ = parse_file(str(log))
    assert (row["lines"], row["parsed"], row["unknown"]) == (3, 2, 1)


def test_versions_printed_outside_nccls_banner():
    _, s = one("llm-055")
    assert s.ranks["nccl_version"].drop_nulls().unique().to_list() == ["2.20.5"]
    v = s.events.filter(pl.col("kind") == "version")
    assert set(v["message"]) == {"2.20.5"} and set(v["where"]) == {"vLLM"}


def test_lines_that_lost_their_nccl_prefix_and_torchs_own_nccl_version(tmp_path):
    log = tmp_path / "paste.txt"
    log.write_text(">>> torch.cuda.nccl.version()\n(2, 18, 1)\n"
                   "NCCL WARN NET/IB : Unable to open device mlx5_0\n"
                   "Broadcast: opCount 1 sendbuff 0x7f recvbuff 0x7f count 100 datatype 7 op 0 root 0 comm 0x55 [nranks=2] stream 0x1\n")
    s = ingest([log])
    assert s.ranks["nccl_version"].to_list() == ["2.18.1"]
    assert s.events.filter(pl.col("kind") == "nccl_warn")["message"].to_list() == ["NET/IB : Unable to open device mlx5_0"]
    assert s.collectives.select("op", "seq", "count").rows() == [("broadcast", 1, 100)]
    assert s.files["unknown"].to_list() == [0]


def test_pyspy_unnamed_threads_native_frames_and_cpp_frames_as_stacks(tmp_path):
    dump = tmp_path / "pyspy.txt"
    dump.write_text("Process 8287: python train.py\nThread 8287 (active)\n"
                    "    gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)\n"
                    "    all_reduce (torch/distributed/distributed_c10d.py:2050)\n")
    st = ingest([dump]).events.filter(pl.col("kind") == "stack")
    assert st.select("thread", "where").rows() == [
        ("MainThread thread 8287 (active)", "gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)")]
    _, s = one("llm-011")  # a watchdog's C++ frames under its exception
    cpp = s.events.filter((pl.col("kind") == "stack") & (pl.col("thread") == "C++ frames"))
    assert cpp["where"][0].startswith("c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout")
