"""The telling lines no parser decodes (parsers/salient.py), the verdicts their words decide
(rules_salient.py) and UNDECIDED quoting them (undecided.undecided): real lines of each family, the
benign wording that must not count, and factory stores for the rules."""

from __future__ import annotations

import polars as pl
import pytest

from tests.factory import make_store
from tracekit import ingest, verdict
from tracekit.parsers import salient
from tracekit.outcome import Kind
from tracekit.schema import EventKind

# real lines, as the programs print them (UCX ib_mlx5_log.c / rc_verbs_iface.c, PyTorch's DataLoader and
# IndexKernel.cu, Ray's worker-death message, XLA's mesh_service.cc, Ray's placement groups, a shell)
REAL = {
    "[master:19546:0:19546] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend "
    "0x81 hw_synd 0/0)": "transport",
    "[1466599688.714393] [vegas30:25196:0] rc_verbs_iface.c:47   UCX  ERROR Send completion with error: "
    "transport retry counter exceeded": "transport",
    "mlx5: node07: got completion with error: status IBV_WC_RETRY_EXC_ERR (12), vendor err 0x81": "transport",
    "ssh: connect to host node12 port 22: No route to host": "transport",
    "ERROR: Unexpected segmentation fault encountered in worker.": "crash",
    "../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [22,0,0], thread: [64,0,0] Assertion "
    "`-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.": "crash",
    "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error "
    "code 2. End of file.": "crash",
    "Killed": "crash",
    "bash: line 1:  4242 Killed                  python train.py --nodes 2": "crash",
    "[Tue Mar  5 10:00:00 2024] Out of memory: Killed process 4242 (python) total-vm:123456kB": "crash",
    "2020-05-28 11:50:27.058553: I    7449 tensorflow/compiler/xla/xla_client/mesh_service.cc:208] Waiting "
    "to connect to client mesh master (300 seconds) 10.164.15.199:8477": "wait",
    "  TimeoutError: Placement group creation timed out. Make sure your cluster either has enough "
    "resources": "wait",
    "slurmstepd: error: couldn't chdir to `/root/burst-buffer': No such file or directory": "error",
}
# words in benign context: a count of none, a rate, a setting, a progress bar, source code
BENIGN = [
    "Epoch 3 done, errors: 0, samples 1024",
    "train | error_rate=0.013 | lr 1e-4",
    "python train.py --timeout 1800 --nodes 2",
    "finished with no error in 2 attempts",
    "[I socket.cpp:123] Timeout set to 1800 seconds",
    "export NCCL_IB_TIMEOUT=22",
    " 50%|█████     | 5/10 [00:01<00:01,  4.00it/s, hang=0]",
    "  warnings.warn(\"the timeout is deprecated\")",
    "    self.init_process_group(backend, timeout, init_method, rank, world_size)",
]


def _told(tmp_path, lines: list[str]) -> pl.DataFrame:
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n")
    store = ingest.ingest([log])
    # (a file's last line, told where no line holds telling words, is no class of its own words)
    return store, store.events.filter((pl.col("kind") == EventKind.TELLING_LINE)
                                      & (pl.col("where") != salient.Telling.LAST))


#: the event kinds a parser of its runtime decodes a line of each class into (parsers/runtimes reads UCX's
#: and Ray's own lines first; then the fallback never sees them)
DECODED_AS = {"transport": {EventKind.TRANSPORT_ERROR}, "crash": {EventKind.CRASH, EventKind.CHILD_FAILED},
              "wait": set(), "error": set()}


@pytest.mark.parametrize("line,where", list(REAL.items()))
def test_real_lines_are_classed_by_their_words(tmp_path, line, where):
    """Each real line is read as its class: by the parser of its runtime where one decodes it, else by
    the fallback's words; and the fallback's words class it so on their own (as a line no parser knew)."""
    store, told = _told(tmp_path, [line])
    decoded = set(store.events.filter(pl.col("kind") != EventKind.TELLING_LINE)["kind"].to_list())
    assert told["where"].to_list() == [where] or (not told.height and decoded & DECODED_AS[where])
    lines = pl.DataFrame({"file": ["job.log"], "line": [1], "text": [line]})
    alone = salient.parse(lines, lines).tables["events"]
    assert alone["where"].to_list() == [where]


@pytest.mark.parametrize("line", BENIGN)
def test_benign_wording_is_not_taken(tmp_path, line):
    _, told = _told(tmp_path, [line])
    assert told.height == 0


def test_a_traceback_source_line_and_a_caught_error_are_no_crash(tmp_path):
    _, told = _told(tmp_path, [
        '  File "/app/train.py", line 12, in step',
        "    raise_if_segfault(worker)  # segmentation fault guard",
        "[W socket.cpp:88] Connection reset by peer while reading the header; retrying in 5 s",
    ])
    assert told.select("line", "where").rows() == [(3, "wait")] or told.select("line", "where").rows() == []
    assert "crash" not in told["where"].to_list() and "transport" not in told["where"].to_list()


def test_telling_lines_stay_unknown_and_name_no_kind(tmp_path):
    """Not decoded: the unknown-line count is what it was without them, and the file is plain text."""
    store, told = _told(tmp_path, ["[Tue Mar  5 10:00:00 2024] Out of memory: Killed process 4242 (python) "
                                   "total-vm:123456kB", "nothing to see, move on"])
    assert told.height == 1
    f = store.files.row(0, named=True)
    assert (f["kind"], f["parsed"], f["unknown"]) == ("text", 0, 2)


def test_rank_host_and_pid_from_the_lines_prefix(tmp_path):
    _, told = _told(tmp_path, [
        "[rank3]: ERROR: Unexpected segmentation fault encountered in worker.",
        "[rank5]:   TimeoutError: Placement group creation timed out.",
    ])
    assert told.select("rank", "where").rows() == [(3, "crash"), (5, "wait")]
    _, told = _told(tmp_path, [
        "node09:1234:1240 [0] net_ib.c:20 got completion with error: IBV_WC_RETRY_EXC_ERR (12), vendor err "
        "0x81",
    ])
    assert told.select("rank", "host", "pid", "where").rows() == [(None, "node09", 1234, "transport")]


def _telling(where: str, message: str, line: int = 5, **more) -> dict:
    return dict(file="job.log", line=line, kind="telling_line", where=where, message=message, **more)


def test_a_crash_line_decides_crashed_rank_naming_it():
    v = verdict.decide(make_store(events=[
        _telling("error", "ValueError: bad shape", line=2),
        _telling("crash", "Segmentation fault (core dumped)", rank=3, host="node09")]))
    assert (v.kind, v.ranks) == (Kind.CRASHED_RANK, [3])
    assert 'rank 3 on node09 reported "Segmentation fault (core dumped)"' in v.summary
    assert any("job.log:5" in e for e in v.evidence)


def test_a_crash_line_the_run_went_on_after_decides_nothing():
    v = verdict.decide(make_store(events=[
        _telling("crash", "Segmentation fault in a data worker, restarting it"),
        dict(file="job.log", line=9, kind="step", step=120, message="step 120 loss 2.1")]))
    assert v.kind is not Kind.CRASHED_RANK


def test_a_transports_own_failure_decides_transport_error():
    v = verdict.decide(make_store(events=[
        _telling("transport", "UCX  ERROR Send completion with error: transport retry counter exceeded",
                 rank=43, line=4),
        _telling("transport", "UCX  ERROR Send completion with error: transport retry counter exceeded",
                 rank=67, line=5)]))
    assert (v.kind, v.ranks) == (Kind.TRANSPORT_ERROR, [43, 67])
    assert "retry counter exceeded" in v.summary


def test_a_socket_closed_is_quoted_not_decided():
    """A connection reset may be the knock-on of a peer that died: the line is quoted, not decisive."""
    v = verdict.decide(make_store(events=[_telling("transport", "RpcError: Connection reset by peer")]))
    assert v.kind is Kind.UNDECIDED
    assert 'reported "RpcError: Connection reset by peer"' in v.summary
    assert "none of the" not in v.summary


def test_a_connect_wait_that_timed_out_is_an_init_stall():
    v = verdict.decide(make_store(events=[
        _telling("wait", "TimeoutError: Placement group creation timed out.")]))
    assert v.kind is Kind.INIT_STALL
    assert "Placement group creation timed out" in v.summary


def test_a_connect_wait_said_once_is_undecided_and_quoted():
    """Waiting once is not shown to never complete: UNDECIDED, quoting the wait and where it is."""
    line = "mesh_service.cc:208] Waiting to connect to client mesh master (300 seconds) 10.164.15.199:8477"
    v = verdict.decide(make_store(events=[_telling("wait", line, line=1)]))
    assert v.kind is Kind.UNDECIDED
    assert "mesh master" in v.summary and "job.log:1" in v.summary
    assert "not a line tracekit decodes" in v.summary


def test_a_connect_wait_after_steps_is_no_init_stall():
    v = verdict.decide(make_store(events=[
        dict(file="job.log", line=1, kind="step", step=10, message="step 10"),
        _telling("wait", "Waiting to connect to client mesh master (300 seconds)", line=4),
        _telling("wait", "Waiting to connect to client mesh master (300 seconds)", line=6)]))
    assert v.kind is not Kind.INIT_STALL


def test_a_decoded_crash_is_weighed_before_the_words(tmp_path):
    """A decoded cause comes first in the order of causation: the words only decide where none does."""
    v = verdict.decide(make_store(events=[
        dict(file="job.log", line=2, kind="cuda_error", rank=1,
             message="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
        _telling("transport", "Transport retry count exceeded on mlx5_0:1/IB", line=8)]))
    assert v.rule != "said_by_telling_lines"


def test_real_excerpt_ucx_retry_count_reads_as_transport_error(tmp_path):
    log = tmp_path / "ucx.log"
    log.write_text("".join(
        f"[master:{pid}:0:{pid}] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 "
        f"vend 0x81 hw_synd 0/0)\n[master:{pid}:0:{pid}] ib_mlx5_log.c:139  DCI QP 0xa9f wqe[0]: SEND s-e "
        "[rqpn 0xa66 rlid 703] [inl len 18]\n" for pid in (19545, 19546)))
    v = verdict.decide(ingest.ingest([log]))
    assert v.kind is Kind.TRANSPORT_ERROR
    # UCX's own lines are decoded by parsers/runtimes/ucx.py (host and pid), before the fallback sees them
    assert "Transport retry count exceeded on mlx5_0:1/IB" in v.summary and "master" in v.summary


def test_undecided_from_any_rule_quotes_the_telling_line():
    """A rule's own UNDECIDED (a stall and no cause) also says the line no parser decodes."""
    v = verdict.decide(make_store(events=[
        dict(file="job.log", line=2, kind="stall", message="no log grew for 600s"),
        _telling("wait", "Waiting for the other ranks to join the barrier")]))
    assert (v.kind, v.rule) == (Kind.UNDECIDED, "failed_without_cause")
    assert 'reported "Waiting for the other ranks to join the barrier" (job.log:5)' in v.summary
    assert any(e.line == 5 for e in v.evidence)


def test_undecided_names_a_decoded_failure_no_rule_explains():
    """Ray's worker death, decoded without an exit code, is an error line of UNDECIDED, not 'none of'."""
    v = verdict.decide(make_store(events=[dict(
        file="job.log", line=3, kind="child_failed",
        message="A worker died or was killed while executing a task by an unexpected system error.")]))
    assert v.kind is Kind.UNDECIDED
    assert "A worker died or was killed" in v.summary and "none of the" not in v.summary


def _timeout(rank: int, line: int = 7) -> dict:
    return dict(file=f"rank{rank}.log", line=line, kind="watchdog_timeout", rank=rank, seq=5, op="ALLREDUCE",
                timeout_ms=600000, message=f"[Rank {rank}] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600013 milliseconds before "
                "timing out.")


def test_a_crash_line_explains_the_others_timeouts_after_it():
    """The order of causation: rank 3's crash (words only) before the waits of ranks 0-2 (decoded)."""
    crash = dict(_telling("crash", "ERROR: Unexpected segmentation fault encountered in worker.", line=3,
                          rank=3), file="rank3.log")
    v = verdict.decide(make_store(events=[_timeout(0), _timeout(1), _timeout(2), crash]))
    assert (v.kind, v.ranks, v.rule) == (Kind.CRASHED_RANK, [3], "crashed_by_words")


def test_an_abort_after_a_timeout_in_its_own_file_is_its_consequence():
    abort = dict(_telling("crash", "Fatal: SIGABRT received, core dumped", line=9, rank=0), file="rank0.log")
    v = verdict.decide(make_store(events=[_timeout(0), _timeout(1), abort]))
    assert v.rule != "crashed_by_words" and v.kind is not Kind.CRASHED_RANK


def test_a_kill_from_outside_of_a_job_that_timed_out_is_no_cause():
    killed = dict(_telling("crash", "bash: line 1:  4242 Killed   python train.py", line=2), file="srun.log")
    v = verdict.decide(make_store(events=[_timeout(0), _timeout(1), killed]))
    assert v.rule != "crashed_by_words" and v.kind is not Kind.CRASHED_RANK


def test_undecided_on_a_wait_asks_whether_it_ended(tmp_path):
    log = tmp_path / "xla.log"
    log.write_text("2020-05-28 11:50:27.058553: I    7449 tensorflow/compiler/xla/xla_client/"
                   "mesh_service.cc:208] Waiting to connect to client mesh master (300 seconds) "
                   "10.164.15.199:8477\n")
    v = verdict.decide(ingest.ingest([log]))
    assert v.kind is Kind.UNDECIDED
    assert 'xla_client/mesh_service.cc:208] Waiting to connect to client mesh master' in v.summary
    assert "whether the wait ever ended is not in the excerpt" in v.summary
    assert "the lines after it on every rank" in v.summary


def test_an_anonymous_crash_word_does_not_outweigh_decoded_waits():
    """A note beside the logs ("the SIGABRTs are the watchdog's") names no process: the waits decide."""
    note = dict(_telling("crash", "CRASHED-RANK: rank 2 failed first (SIGABRT). WRONG", line=13),
                file="README.md")
    v = verdict.decide(make_store(events=[_timeout(0), _timeout(1), note]))
    assert v.rule != "crashed_by_words" and v.kind is not Kind.CRASHED_RANK


# --- words (issue 31): each family read from the code that prints it, and its benign look-alikes ---------

# real lines: CPython's pymain_run_file, glibc's loader (a paste in NVIDIA/nccl's release-notes thread),
# bash, dash, Slurm's exec, Paddle's launch/job/container.py (a paste of 8 GPUs in conflict), c10d's
# socket.cpp (vllm-project/vllm#3771), NCCL's proxy.cc, Horovod's common/operations.cc via TensorFlow
START_AND_LAUNCHER = {
    "/usr/bin/python3: can't open file '/workspace/pretrain.py': [Errno 2] No such file or "
    "directory": "crash",
    "./one_device_per_thread: error while loading shared libraries: libnccl.so.2: cannot open shared object "
    "file: No such file or directory": "crash",
    "build/all_gather_perf: symbol lookup error: build/all_gather_perf: undefined symbol: "
    "ncclCommSplit": "crash",
    "bash: torchrun: command not found": "crash",
    "/bin/sh: 1: deepspeed: not found": "crash",
    "srun: error: execve(): python3: No such file or directory": "crash",
    "Container rank 6 status failed cmd ['/usr/bin/python', '-u', 'train.py'] code 1 log "
    "log/default.fxemxd.6.log": "crash",
    "[W socket.cpp:663] [c10d] The client socket has failed to connect to [::ffff:172.16.8.232]:39623 "
    "(errno: 110 - Connection timed out).": "transport",
}
START_BENIGN = [
    # NCCL's net plugin probe (plugin.cc): no plugin is the usual case, the internal transport is used
    "node1:4242:4242 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No "
    "such file or directory No plugin found (libnccl-net.so), using internal implementation",
    # torchvision's import-time warning: the program goes on
    "/usr/lib/python3/dist-packages/torchvision/io/image.py:13: UserWarning: Failed to load image Python "
    "extension: libc10_cuda.so: cannot open shared object file: No such file or directory",
]


@pytest.mark.parametrize("line,where", list(START_AND_LAUNCHER.items()))
def test_a_process_that_cannot_start_and_a_launchers_failure_are_crash_lines(tmp_path, line, where):
    lines = pl.DataFrame({"file": ["job.log"], "line": [1], "text": [line]})
    assert salient.parse(lines, lines).tables["events"]["where"].to_list() == [where]


@pytest.mark.parametrize("line", START_BENIGN)
def test_a_loader_probe_or_a_warning_is_no_crash(tmp_path, line):
    _, told = _told(tmp_path, [line])
    assert "crash" not in told["where"].to_list()


def test_a_loader_refusal_is_read_on_a_line_a_parser_claimed(tmp_path):
    """nccl-tests' parser claims its program's lines by name: the loader's refusal on one is still told."""
    line = ("build/all_reduce_perf: symbol lookup error: build/all_reduce_perf: undefined symbol: "
            "ncclRedOpCreate")
    _, told = _told(tmp_path, [line] * 3)
    assert told["where"].to_list() == ["crash"] * 3


def test_a_script_missing_on_every_host_is_a_crash_at_start(tmp_path):
    log = tmp_path / "pdsh.log"
    log.write_text("".join(f"{h}: /usr/bin/python3: can't open file 'pretrain.py': [Errno 2] No such file or "
                           "directory\n" for h in ("10.0.0.5", "10.0.0.6", "10.0.0.5", "10.0.0.6")))
    v = verdict.decide(ingest.ingest([log]))
    assert (v.kind, v.rule) == (Kind.CRASHED_RANK, "crashed_by_words")
    assert "could not start" in v.summary and "can't open file 'pretrain.py'" in v.summary
    assert "2 hosts (10.0.0.5, 10.0.0.6)" in v.summary


def test_a_launchers_failure_line_names_the_rank_and_code():
    line = ("Container rank 3 status failed cmd ['/usr/bin/python', '-u', 'train.py'] code 1 log "
            "log/workerlog.3")
    v = verdict.decide(make_store(events=[_telling("error", "LAUNCH ERROR Container failed !!!", line=4),
                                          _telling("crash", line, line=5)]))
    assert (v.kind, v.ranks) == (Kind.CRASHED_RANK, [3])
    assert "reported Container rank 3 failed" in v.summary and "code 1" in v.summary


def test_a_launchers_failure_line_is_told_where_a_parser_claimed_it(tmp_path):
    # PaddlePaddle's launch (launch/controllers/controller.py, launch/job/container.py): the launcher
    # parser claims the Container line for the local rank it names; its failure is still told and decides
    log = tmp_path / "launch.log"
    log.write_text("LAUNCH INFO 2024-03-10 00:35:50,211 Pod failed\n"
                   "LAUNCH ERROR 2024-03-10 00:35:50,216 Container failed !!!\n"
                   "Container rank 0 status failed cmd ['/usr/bin/python', '-u', 'tools/train.py'] code -9 "
                   "log ./debug/workerlog.0\n")
    v = verdict.decide(ingest.ingest([log]))
    assert (v.kind, v.rule) == (Kind.CRASHED_RANK, "crashed_by_words")
    assert "Container rank 0 failed" in v.summary and "launch.log:3" in v.summary


def test_a_decoded_crash_comes_before_a_launchers_line():
    """The order of causation: a rank's own decoded error is the cause; the launcher's line its echo."""
    v = verdict.decide(make_store(events=[
        dict(file="rank2.log", line=3, kind="cuda_error", rank=2,
             message="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
        _telling("crash", "Container rank 0 status failed cmd ['python', 'train.py'] code 1 log "
                 "workerlog.0")]))
    assert v.rule != "crashed_by_words" and 2 in v.ranks


C10D_TIMED_OUT = ("[W socket.cpp:663] [c10d] The client socket has failed to connect to "
                  "[::ffff:10.0.0.7]:29500 (errno: 110 - Connection timed out).")


def test_a_start_up_connection_that_times_out_is_an_init_stall_naming_the_address():
    v = verdict.decide(make_store(events=[_telling("transport", C10D_TIMED_OUT, line=n) for n in (1, 2)]))
    # (s28: c10d's connect warning is a start-up entry of its own, rules_init.start_up_said)
    assert (v.kind, v.rule) == (Kind.INIT_STALL, "start_up_unfinished")
    assert "at [::ffff:10.0.0.7]:29500" in v.summary


def test_a_connection_that_times_out_after_steps_is_no_init_stall():
    v = verdict.decide(make_store(events=[
        dict(file="job.log", line=1, kind="step", step=40, message="step 40 loss 1.2"),
        _telling("transport", C10D_TIMED_OUT, line=3)]))
    assert v.kind is not Kind.INIT_STALL


def test_a_connection_retried_or_followed_by_an_nccl_init_is_no_init_stall():
    """A retry the program announces may succeed; an NCCL init that completed shows start-up connected."""
    retried = C10D_TIMED_OUT.replace("timed out).", "timed out), retrying in 5 s")
    v = verdict.decide(make_store(events=[_telling("transport", retried, line=1)]))
    assert v.kind is not Kind.INIT_STALL
    v = verdict.decide(make_store(
        events=[_telling("transport", C10D_TIMED_OUT, line=1)],
        comms=[dict(file="job.log", line=9, host="n1", pid=7, comm="0xab", rank=0, nranks=2,
                    state="init_complete")]))
    assert v.kind is not Kind.INIT_STALL


@pytest.mark.parametrize("text,addr", [
    (C10D_TIMED_OUT, "[::ffff:10.0.0.7]:29500"),
    ("The client socket has timed out after 900s while trying to connect to (master-0, 29500).",
     "master-0:29500"),
    ("socket.cpp:663 connect to 10.1.2.3:23456 refused", "10.1.2.3:23456"),
    ("NCCL WARN Connect to 10.1.2.3<43287> failed : Connection refused", "10.1.2.3<43287>"),
])
def test_the_address_a_line_connects_to(text, addr):
    from tracekit.rules_salient import address
    assert address(text) == addr


def _closed(local: int, pid: int, line: int) -> dict:
    return dict(_telling("transport", f"gpu-node:{pid}:{pid + 9} [{pid % 8}] NCCL INFO [Service thread] "
                         f"Connection closed by localRank {local}", line=line), host="gpu-node", pid=pid)


def test_a_peer_closing_names_who_ended_first_and_what_to_collect(tmp_path):
    log = tmp_path / "nccl.log"
    log.write_text("".join(f"gpu-node:{p}:{p + 9} [{p - 300}] NCCL INFO [Service thread] Connection closed "
                           "by localRank 3\n" for p in (300, 301, 302)))
    v = verdict.decide(ingest.ingest([log]))
    # (issue 31, s17: several processes naming the one peer that closed on them show whose end came first)
    assert (v.kind, v.rule) == (Kind.CRASHED_RANK, "peer_closed")
    assert v.summary.startswith("localRank 3 ended first") and "its own log" in v.summary
    assert "3 other processes" in v.summary and "3 line(s)" in v.summary and "nccl.log:1" in v.summary
    one = tmp_path / "one.log"  # one process saying so: which side ended first is not shown
    one.write_text("gpu-node:300:309 [0] NCCL INFO [Service thread] Connection closed by localRank 3\n")
    v = verdict.decide(ingest.ingest([one]))
    assert (v.kind, v.rule) == (Kind.UNDECIDED, "peer_closed")
    assert "localRank 3 ended first" in v.summary and "collect localRank 3's own log" in v.summary


def test_a_peer_closing_after_the_run_ended_is_teardown():
    v = verdict.decide(make_store(events=[
        dict(file="job.log", line=1, kind="train_end", message="training complete, model saved"),
        _closed(0, 300, 2), _closed(0, 301, 3)]))
    assert v.rule != "peer_closed"


def test_undecided_with_no_telling_line_quotes_each_files_last_line(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("loading the model\nthe number of model params: 49349138\n\n")
    v = verdict.decide(ingest.ingest([log]))
    assert v.kind is Kind.UNDECIDED and "none of the" not in v.summary
    assert '2 line(s) read, none decoded' in v.summary
    assert 'the last line: "the number of model params: 49349138" (train.log:2)' in v.summary


def test_undecided_on_ncclS_unwind_names_its_call_chain(tmp_path):
    # (a chain through the bootstrap with no communicator complete is an init stall: rules_failure's)
    log = tmp_path / "nccl.log"
    log.write_text("".join(f"node1:77:78 [0] NCCL INFO {w} -> 2\n" for w in (
        "misc/socket.cc:564", "transport/net_socket.cc:300", "proxy.cc:1303")))
    v = verdict.decide(ingest.ingest([log]))
    assert v.kind is Kind.UNDECIDED
    assert "misc/socket.cc:564" in v.summary and "proxy.cc:1303" in v.summary


@pytest.mark.parametrize("line,where", [
    ("W1204 10:00:01.123456  4242 data_loader.cc:88] shard 3 is missing, skipping it", "warning"),
    ("2024-05-17 10:00:01 WARNING  the checkpoint folder is on a network file system", "warning"),
    ("/usr/lib/python3/dist-packages/torch/cuda/amp.py:12: FutureWarning: `torch.cuda.amp.autocast` is "
     "deprecated. Please use `torch.amp.autocast('cuda')` instead.", None),
    ("/app/train.py:40: UserWarning: the given NumPy array is not writable", None),
])
def test_a_warning_is_its_own_class_and_pythons_warnings_are_none(line, where):
    lines = pl.DataFrame({"file": ["job.log"], "line": [1], "text": [line]})
    told = salient.parse(lines, lines).tables["events"]
    assert told.filter(pl.col("where") != "last")["where"].to_list() == ([where] if where else [])


def test_undecided_quotes_a_warning_where_no_stronger_line_is(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("loading the data\n2024-05-17 10:00:01 WARNING  the checkpoint folder is on a network "
                   "file system\nepoch 0 starts\n")
    v = verdict.decide(ingest.ingest([log]))
    assert v.kind is Kind.UNDECIDED
    assert 'WARNING  the checkpoint folder is on a network file system" (job.log:2)' in v.summary
    assert "read as a warning" in v.summary and "job.log:2" in v.summary


def test_a_tool_the_set_up_missed_is_no_crash_when_the_program_started_after():
    """``/bin/sh: 1: git: not found`` before NCCL's init in the same file: the program started."""
    v = verdict.decide(make_store(
        events=[_telling("crash", "/bin/sh: 1: git: not found", line=1)],
        comms=[dict(file="job.log", line=9, host="n1", pid=7, comm="0xab", rank=0, nranks=2,
                    state="init_start")]))
    assert v.rule != "crashed_by_words"
    v = verdict.decide(make_store(events=[_telling("crash", "/bin/sh: 1: torchrun: not found", line=1)]))
    assert v.rule == "crashed_by_words" and "missing: torchrun" in v.summary


def test_c10d_connect_timeouts_a_parser_claims_are_an_init_stall(tmp_path):
    """The torch parser claims c10d's ``[W socket.cpp:663]`` lines and decodes nothing of them: the failed
    connect is read all the same (vllm-project/vllm#3771); IPv6 localhost's errno 99 is no failure."""
    log = tmp_path / "c10d.log"
    log.write_text(f"{C10D_TIMED_OUT}\n{C10D_TIMED_OUT}\n")
    v = verdict.decide(ingest.ingest([log]))
    # (s28: c10d's connect warning is a start-up entry of its own, rules_init.start_up_said, before the telling
    # lines' reading: the same kind, with the store's address, the times said and its fix row)
    assert (v.kind, v.rule) == (Kind.INIT_STALL, "start_up_unfinished")
    assert "[::ffff:10.0.0.7]:29500" in v.summary and "said 2 times" in v.summary
    log.write_text("[W socket.cpp:601] [c10d] The client socket has failed to connect to [localhost]:29500 "
                   "(errno: 99 - Cannot assign requested address).\n")
    assert verdict.decide(ingest.ingest([log])).kind is not Kind.INIT_STALL
