"""Launchers' failure reports read whole (issue 31): which rank failed first, on which host, and the code
or signal, from the words the printing code writes: Open MPI's help texts (help-orterun.txt, help-mpi-api.txt,
PRRTE's prun), MPICH's MPI_Abort, torchrun's ChildFailedError summary (its Root Cause entry, never an
"Other Failures" one), NCCL's error code where a program prints it on a line of its own (torch < 1.9's
exception text, the NCCLCHECK macro of NCCL's examples), a C++ exception's what(); and watchdog timeouts of
one process group at different SeqNums (the ranks' sequences of collectives diverged)."""

import polars as pl
import pytest

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

DASHES = "-" * 74 + "\n"


def _decide(tmp_path, text: str, name: str = "job.log"):
    (tmp_path / name).write_text(text)
    s = ingest([tmp_path / name])
    return s, decide(s)


def _ranks(store) -> list[int]:
    return sorted(set(store.ranks["rank"].drop_nulls().to_list()))


# Open MPI 4 (orte/tools/orterun help-orterun.txt) and PRRTE: `%s noticed that process rank %lu with PID %lu
# on node %s exited on signal %d (%s).`, after `%s job %s terminated normally, but %d %s returned`
NOTICE = (DASHES + "Primary job  terminated normally, but 1 process returned\n"
          "a non-zero exit code. Per user-direction, the job has been aborted.\n" + DASHES)


@pytest.mark.parametrize("line, rank, host, code, name", [
    ("mpirun noticed that process rank 1 with PID xxxxxx on node xxxxxxxx exited on signal 9 (Killed).",
     1, None, -9, "SIGKILL"),  # pid and node masked by the user
    ("mpirun noticed that process rank 53 with PID 0 on node cpu-p-435 exited on signal 9 (Killed).",
     53, "cpu-p-435", -9, "SIGKILL"),
    ("prterun noticed that process rank 2 with PID 8812 on node n07 exited on signal 11.", 2, "n07", -11,
     "SIGSEGV"),  # PRRTE's [prun:proc-aborted], no strsignal name
])
def test_mpirun_names_the_rank_its_host_and_signal(tmp_path, line, rank, host, code, name):
    store, v = _decide(tmp_path, NOTICE + line + "\n" + DASHES)
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [rank] and _ranks(store) == [rank]
    assert v.summary.startswith(f"rank {rank}" + (f" on {host}" if host else "") + f" ended: exit code {code}")
    assert name in v.summary and "no rank identified" not in v.summary
    assert "1 process(es) returned" not in v.summary  # (the bare count says nothing more)
    if code == -9:
        assert "OOM killer" in v.summary


def test_the_bare_count_alone_names_no_rank(tmp_path):
    store, v = _decide(tmp_path, NOTICE)
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [] and _ranks(store) == []
    assert "1 process(es) returned a non-zero exit code" in v.summary


def test_the_html_paste_of_the_notice_keeps_its_rank(tmp_path):
    # a mailing-list archive joins the dashes to the line
    _, v = _decide(tmp_path, "-" * 20 + "mpirun noticed that process rank 0 with PID 77967 on node n342 exited on "
                   "signal 9 (Killed)." + "-" * 20 + "\n")
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [0] and "n342" in v.summary


# help-mpi-api.txt [mpi-abort]; MPICH's MPI_Abort; help-orterun.txt [orterun:proc-exit-no-sync]
MPI_ABORT = (DASHES + "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\nwith errorcode 1.\n\n"
             "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n" + DASHES)


def test_a_ranks_own_mpi_abort_is_its_end(tmp_path):
    store, v = _decide(tmp_path, MPI_ABORT + NOTICE)
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [3] and _ranks(store) == [3]
    assert "called MPI_Abort with error code 1" in v.summary and "Python exception" not in v.summary
    _, v = _decide(tmp_path, "application called MPI_Abort(MPI_COMM_WORLD, 7) - process 5\n", "mpich.log")
    assert v.ranks == [5] and "error code 7" in v.summary


def test_an_abort_in_another_communicator_names_no_global_rank(tmp_path):
    store, v = _decide(tmp_path, MPI_ABORT.replace("MPI_COMM_WORLD", "MPI_COMM_SPLIT_1"))
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [] and _ranks(store) == []
    assert "rank 3 of MPI_COMM_SPLIT_1 called MPI_Abort" in v.summary


def test_a_rank_exiting_improperly(tmp_path):
    _, v = _decide(tmp_path, DASHES + "mpirun has exited due to process rank 2 with PID 4242 on\n"
                   "node gpu07 exiting improperly. There are three reasons this could occur:\n" + DASHES)
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [2]
    assert "rank 2 on gpu07 exited improperly" in v.summary


# torch/distributed/elastic/multiprocessing/errors/__init__.py: the other failures first, then the root cause
TABLE = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-03-01_10:00:31
  host      : node-a
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 4692)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
[2]:
  time      : 2024-03-01_10:00:31
  host      : node-a
  rank      : 0 (local_rank: 0)
  exitcode  : -9 (pid: 4689)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4689
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-03-01_10:00:30
  host      : node-a
  rank      : 1 (local_rank: 1)
"""
ROOT_END = """\
  exitcode  : -9 (pid: 4690)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 4690
============================================================
"""


def test_the_root_cause_cut_after_its_rank_is_still_the_first_failure(tmp_path):
    store, v = _decide(tmp_path, TABLE)
    assert v.kind == Kind.CRASHED_RANK and 1 in v.ranks, v.summary
    assert v.summary.startswith("rank 1 (local_rank 1) on node-a failed first (torchrun's root cause")
    assert _ranks(store) == [0, 1, 3]


def test_the_whole_root_cause_with_its_signal(tmp_path):
    _, v = _decide(tmp_path, TABLE + ROOT_END)
    assert v.kind == Kind.CRASHED_RANK
    assert v.summary.startswith("ranks 0-1 exited with code -9 (rank 1 (local rank 1, pid 4690) on node-a first): SIGKILL")


# NCCL's error code on a line of its own
OLD_TORCH = """\
RuntimeError: work = default_pg.broadcast([tensor], opts):
NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:911, invalid usage, NCCL version 2.7.8
ncclInvalidUsage: This usually reflects invalid usage of NCCL library (such as too many async ops, too many collectives at once, mixing streams in a group, etc).
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 6 (pid: 1211) of binary: /usr/bin/python3
"""


def test_a_wrapped_exception_reads_as_the_nccl_error_it_goes_on_into(tmp_path):
    store, v = _decide(tmp_path, OLD_TORCH)
    exc = store.events.filter(pl.col("line") == 1)
    assert exc["message"][0].endswith("opts): NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:911, "
                                      "invalid usage, NCCL version 2.7.8")
    # (issue 31, s17: NCCL refused a collective the program called, no communicator set-up here: that rank's)
    assert v.kind == Kind.CRASHED_RANK and v.rule == "nccl_error_unexplained"
    assert "rank 6 numbered by local rank" in v.summary and "ncclInvalidUsage" in v.summary


def test_ncclcheck_of_every_process_is_the_cause_not_mpiruns_count(tmp_path):
    # NCCL's examples' NCCLCHECK (`Failed, NCCL error %s:%d '%s'`), copied by TensorRT-LLM's plugins
    line = ("Failed, NCCL error /src/tensorrt_llm/cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp:295 "
            "'internal error - please report this issue to the NCCL developers'\n")
    store, v = _decide(tmp_path, line * 4 + NOTICE)
    assert v.rule == "nccl_error_unexplained" and "allreducePlugin.cpp:295 'internal error" in v.summary
    assert "ncclInternalError" in v.summary and "1 process(es) returned" not in v.summary
    # (an ordinary printf is not one)
    _, v = _decide(tmp_path, "Failed to open config, NCCL errors are ignored\n", "other.log")
    assert v.rule != "nccl_error_unexplained"


def test_a_cpp_exception_says_its_what(tmp_path):
    store, _ = _decide(tmp_path, "terminate called after throwing an instance of 'c10::Error'\n"
                       "  what():  CUDA error: an illegal memory access was encountered\n")
    crash = store.events.filter(pl.col("line") == 1)
    assert crash["message"][0] == ("terminate called after throwing an instance of 'c10::Error': what(): CUDA "
                                   "error: an illegal memory access was encountered")


def _watchdog(rank, seq, op="_ALLGATHER_BASE", pg=None):
    tag = f"[PG {pg} Rank {rank}]" if pg is not None else f"[Rank {rank}]"
    return (f"[E ProcessGroupNCCL.cpp:719] {tag} Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType={op}, Timeout(ms)=1800000) ran for 1806456 milliseconds before "
            "timing out.\n")


def test_ranks_timed_out_at_different_seqnums_diverged(tmp_path):
    _, v = _decide(tmp_path, _watchdog(0, 7559) + _watchdog(1, 7561) + _watchdog(2, 7559))
    assert v.kind == Kind.MISMATCH and v.ranks == [0, 1, 2]
    assert "sequences of collectives diverged" in v.summary
    assert "ranks 0,2 timed out in SeqNum=7559 (_ALLGATHER_BASE) while rank 1 timed out in SeqNum=7561" in v.summary
    assert "rank 1 had issued 2 more collective(s)" in v.summary


def test_one_seqnum_or_one_rank_is_no_divergence(tmp_path):
    _, v = _decide(tmp_path, _watchdog(0, 7559) + _watchdog(1, 7559))
    assert v.kind == Kind.UNDECIDED and "diverged" not in v.summary
    _, v = _decide(tmp_path, _watchdog(0, 7559), "one.log")
    assert v.kind == Kind.UNDECIDED and "diverged" not in v.summary


def test_different_groups_at_different_seqnums_are_no_divergence(tmp_path):
    _, v = _decide(tmp_path, _watchdog(0, 12, pg=1) + _watchdog(1, 7561, pg=0))
    assert "diverged" not in v.summary


def test_untagged_lines_of_several_groups_do_not_compare(tmp_path):
    # torch < 2.2 names no group: a rank whose watchdog names several SeqNums shows several groups' lines
    text = _watchdog(3, 33, "ALLREDUCE") + _watchdog(0, 257, "ALLREDUCE") + _watchdog(0, 1032, "ALLREDUCE")
    _, v = _decide(tmp_path, text)
    assert v.kind == Kind.UNDECIDED and "diverged" not in v.summary


def test_a_line_that_only_mentions_killed_is_no_end(tmp_path):
    store, _ = _decide(tmp_path, "INFO: line 12: 3 Killed processes were restarted by the supervisor\n")
    assert not store.events.filter(pl.col("kind").cast(pl.Utf8) == "child_failed").height


@pytest.mark.parametrize("line, fix", [
    # glibc's dynamic loader (elf/dl-lookup.c, dl-load.c)
    ("./build/all_reduce_perf: symbol lookup error: ./build/all_reduce_perf: undefined symbol: "
     "ncclRedOpCreatePreMulSum", "the program was built against another version"),
    ("python: error while loading shared libraries: libnccl.so.2: cannot open shared object file: No such file "
     "or directory", "install the library"),
    # CPython's Modules/main.c
    ("10.141.250.227: /usr/bin/python3: can't open file 'train_mpu.py': [Errno 2] No such file or directory",
     "the script's path does not exist"),
])
def test_a_process_that_could_not_start(tmp_path, line, fix):
    _, v = _decide(tmp_path, line + "\n")
    assert v.kind == Kind.CRASHED_RANK and line.split(": ", 1)[1][:40] in v.summary and v.fix.startswith(fix)


def test_a_broadcasts_root_may_go_on_before_its_peers(tmp_path):
    # (a broadcast's root finishes its part first: SeqNums one apart prove no divergence)
    _, v = _decide(tmp_path, _watchdog(0, 5730, "BROADCAST") + _watchdog(3, 5729, "BROADCAST"))
    assert v.kind == Kind.UNDECIDED and "diverged" not in v.summary


def test_the_same_count_of_works_enqueued_is_no_divergence(tmp_path):
    text = "".join(_watchdog(r, s) + f"[E ProcessGroupNCCL.cpp:1300] [Rank {r}] Timeout at NCCL work: {s}, last "
                   f"enqueued NCCL work: 6464, last completed NCCL work: {s - 1}.\n" for r, s in ((0, 5730), (3, 5729)))
    _, v = _decide(tmp_path, text)
    assert "diverged" not in v.summary


# bash's job status of a command a signal ended (jobs.c: the signal's strsignal text, `(core dumped)`)
def test_a_shells_word_that_a_signal_ended_its_job(tmp_path):
    store, v = _decide(tmp_path, "/bin/bash: line 1:  4242 Killed                  python train.py --bs 64\n")
    assert v.kind == Kind.CRASHED_RANK and "the process of pid 4242 ended: exit code -9 (shell)" in v.summary
    assert "OOM killer" in v.summary


def test_an_abort_says_the_cpp_exception_it_aborted_on(tmp_path):
    _, v = _decide(tmp_path, "terminate called after throwing an instance of 'gloo::IoException'\n"
                   "  what():  [gloo/transport/tcp/pair.cc:378] writev [127.0.0.1]:11160: Connection reset by peer\n"
                   "./test.sh: line 190: 30139 Aborted                 (core dumped) build/bin/GlooTest\n")
    assert v.kind == Kind.CRASHED_RANK and "exit code -6 (shell): SIGABRT" in v.summary
    assert "it aborted on `terminate called after throwing an instance of 'gloo::IoException': what(): " in v.summary

