"""Each launcher's and runtime's word that a process ended, decoded (parsers/process_end via torch_log),
and the verdict it leads to: real lines as users posted them (samples/wild dev excerpts, quoted verbatim)."""

import polars as pl
import pytest

from tests.factory import text_store as store_of
from tracekit.verdict import Kind, decide


def ends(store) -> pl.DataFrame:
    kinds = ["child_failed", "rank_exit", "signal"]
    return store.events.filter(pl.col("kind").cast(pl.Utf8).is_in(kinds)).sort("line")


SIGHUP = """\
 12%|█▏        | 2904/25120 [2:12:34<16:56:03,  2.74s/it]
W0920 09:10:41.194000 84933 site-packages/torch/distributed/elastic/agent/server/api.py:719] Received 1 death signal, shutting down workers
W0920 09:10:41.195000 84933 site-packages/torch/distributed/elastic/multiprocessing/api.py:900] Sending process 85005 closing signal SIGHUP
W0920 09:10:41.195000 84933 site-packages/torch/distributed/elastic/multiprocessing/api.py:900] Sending process 85006 closing signal SIGHUP
torch.distributed.elastic.multiprocessing.api.SignalException: Process 84933 got signal: 1
"""


def test_agent_death_signal_is_killed_from_outside(tmp_path):
    s = store_of(tmp_path, SIGHUP)
    e = ends(s).row(0, named=True)
    assert (e["kind"], e["where"], e["rank"]) == ("signal", "torchelastic agent", None)
    assert "SIGHUP (signal 1)" in e["message"]
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK
    assert v.summary.startswith("killed from outside: the torchrun agent received SIGHUP")
    assert "pid 85005, 85006" in v.summary and "nohup" in v.summary and v.fix


def test_sigterm_to_the_agent_names_the_scheduler_and_sigint_stays_undecided(tmp_path):
    term = SIGHUP.replace("Received 1 death", "Received 15 death").replace("signal SIGHUP", "signal SIGTERM")
    v = decide(store_of(tmp_path, term))
    assert v.kind == Kind.CRASHED_RANK and "SIGTERM (signal 15)" in v.summary and "sacct" in v.summary
    sigint = SIGHUP.replace("Received 1 death", "Received 2 death").replace("signal SIGHUP", "signal SIGINT")
    v = decide(store_of(tmp_path, sigint, "int.log"))
    assert v.kind == Kind.UNDECIDED and "Ctrl-C" in v.summary and "py-spy dump" in v.summary


def test_a_rank_that_failed_before_the_signal_is_the_cause(tmp_path):
    text = "[rank1]: RuntimeError: shapes do not match\n" + SIGHUP.replace("Received 1 ", "Received 15 ")
    v = decide(store_of(tmp_path, text))
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [1] and "RuntimeError" in v.summary


DEEPSPEED = """\
[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266
[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', '--local_rank=0', '--data_path', 'Dahoas/rm-static'] exits with return code = -9
"""


def test_deepspeed_return_code_minus_nine_is_sigkill_without_a_rank_from_its_command(tmp_path):
    s = store_of(tmp_path, DEEPSPEED)
    e = ends(s).row(0, named=True)
    # the command DeepSpeed prints is its last local rank's (launch.py's loop variable): no rank from it
    assert (e["kind"], e["exit_code"], e["rank"]) == ("child_failed", -9, None)
    assert e["where"] == "deepspeed launcher"
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK and "exit code -9" in v.summary and "SIGKILL" in v.summary
    assert "OOM killer" in v.summary and "sacct" in v.summary and "dmesg" in v.summary
    assert v.fix and v.fix.startswith("use less host memory")


def test_deepspeed_killing_subprocesses_alone_is_undecided_with_where_to_look(tmp_path):
    other = "[2023-07-20 15:45:13,981] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 3967\n"
    v = decide(store_of(tmp_path, DEEPSPEED.splitlines()[0] + "\n" + other))
    assert v.kind == Kind.CRASHED_RANK and "killed its worker subprocesses (pid 13266, 3967)" in v.summary
    assert "exits with return code" in v.summary


LEGACY = """\
  File "/opt/tiger/conda/lib/python3.7/site-packages/torch/distributed/launch.py", line 259, in main
    cmd=cmd)
subprocess.CalledProcessError: Command '['/opt/tiger/conda/bin/python3', '-u', 'train_imagenet.py', '--local_rank=7', '--epochs', '180']' died with <Signals.SIGSEGV: 11>.
"""


def test_legacy_launch_called_process_error_is_a_segfault_not_an_exception(tmp_path):
    s = store_of(tmp_path, LEGACY)
    assert s.events.filter(pl.col("kind") == "exception").height == 0
    e = ends(s).row(0, named=True)
    assert (e["exit_code"], e["rank"]) == (-11, None) and "SIGSEGV (signal 11)" in e["message"]
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK and "SIGSEGV" in v.summary and "segmentation fault" in v.summary
    one = LEGACY.replace("died with <Signals.SIGSEGV: 11>", "returned non-zero exit status 1")
    status = decide(store_of(tmp_path, one, "one.log"))
    assert status.kind == Kind.CRASHED_RANK and "Python exception" in status.summary


FLAT = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
Root Cause (first observed failure) :
[0]:
rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>
traceback : signal 9 (SIGKILL) received by PID 36071
"""


def test_a_childfailed_block_pasted_flat_gives_its_rank(tmp_path):
    s = store_of(tmp_path, FLAT)
    # (the signal line is that block's own field: the same end as its exit code, one event)
    assert ends(s).select("kind", "rank", "pid", "exit_code").rows() == [("rank_exit", 2, 36071, -9)]
    assert s.ranks["rank"].drop_nulls().unique().to_list() == [2]
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [2] and "SIGKILL" in v.summary


CHILD_FAILED = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-02-22_22:55:00
  host      : node1
  rank      : 3 (local_rank: 1)
  exitcode  : -15 (pid: 3608)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 3608
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-02-22_22:54:59
  host      : node1
  rank      : 2 (local_rank: 0)
  exitcode  : 1 (pid: 3607)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_torchruns_root_cause_block_is_the_first_failure_though_printed_last(tmp_path):
    s = store_of(tmp_path, CHILD_FAILED)
    wheres = ends(s).filter(pl.col("kind") == "rank_exit").select("rank", "where").rows()
    assert wheres == [(3, "torchrun: another failure"), (2, "torchrun: first observed failure")]
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [2]
    assert v.summary.startswith("rank 2 (local rank 0, pid 3607) on node1 ended: exit code 1")
    assert "Python exception" in v.summary


def test_ranks_failing_alike_at_one_time_leave_the_first_unknown(tmp_path):
    # torchrun's root cause is the failure of the earliest time; of several of one time, the first it lists
    text = CHILD_FAILED.replace("exitcode  : -15 (pid: 3608)", "exitcode  : 1 (pid: 3608)").replace(
        "2024-02-22_22:54:59", "2024-02-22_22:55:00")
    v = decide(store_of(tmp_path, text))
    assert v.kind == Kind.UNDECIDED
    assert v.summary.startswith("ranks 2-3 all exited with code 1 at 2024-02-22_22:55:00")
    earlier = CHILD_FAILED.replace("exitcode  : -15 (pid: 3608)", "exitcode  : 1 (pid: 3608)")
    v = decide(store_of(tmp_path, earlier, "earlier.log"))
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [2, 3]
    assert v.summary.startswith("ranks 2-3 exited with code 1 (rank 2")


def test_failures_listed_without_torchruns_root_cause_name_their_ranks(tmp_path):
    text = CHILD_FAILED.split("Root Cause")[0].replace("exitcode  : -15 (pid", "exitcode  : 1 (pid")
    v = decide(store_of(tmp_path, text))
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [3] and "exit code 1" in v.summary


MPIRUN = """\
4c217144f0b1:113168:113179 [0] NCCL INFO Channel 01/0 : 0[1a000] -> 1[1a000] [send] via NET/IB/2
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun noticed that process rank 1 with PID 0 on node gpu2 exited on signal 11 (Segmentation fault).
--------------------------------------------------------------------------
"""


def test_mpirun_notices(tmp_path):
    s = store_of(tmp_path, MPIRUN)
    got = ends(s).select("rank", "exit_code", "where").rows()
    assert got == [(None, None, "mpirun"), (1, -11, "mpirun")] or got[1] == (1, -11, "mpirun")
    v = decide(s)
    # the crash is the rank mpirun names and how it ended, not its bare count of failed processes
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [1]
    assert v.summary.startswith("rank 1 on gpu2 ended: exit code -11") and "SIGSEGV" in v.summary
    assert "1 process(es) returned" not in v.summary


GDB = """\
Thread 787 "imagenet_fake_d" received signal SIGBUS, Bus error.
[Switching to Thread 0x7f45d7dff640 (LWP 3925)]
0x00007f6b59544f3b in ncclShmOpen(char*, unsigned long, void**, void**, int, void**) () from /usr/local/lib/python3.10/dist-packages/jaxlib/xla_extension.so
(gdb) bt
"""


def test_gdb_signal_names_the_frame(tmp_path):
    s = store_of(tmp_path, GDB)
    said = ["gdb: a thread received SIGBUS (signal 7) (Bus error) in ncclShmOpen"]
    assert ends(s)["message"].to_list() == said
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK and "SIGBUS" in v.summary and "shared memory" in (v.fix or "")


def test_vllm_worker_method_error_carries_the_ray_worker(tmp_path):
    line = ("(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148] Error executing "
            "method init_device. This might cause deadlock in distributed execution.\n")
    s = store_of(tmp_path, line)
    e = s.events.filter(pl.col("kind") == "child_failed").row(0, named=True)
    assert (e["pid"], e["host"], e["where"]) == (4139, "128.1.219.180", "vllm worker")
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK and v.summary.startswith(
        "the process of pid 4139 on 128.1.219.180 (vllm worker): a vLLM worker raised in its method init_device")
    # the exception ending the worker's traceback, where it is there, is the cause
    nccl = line + ("(RayWorkerWrapper pid=4139, ip=128.1.219.180) ERROR 07-03 14:43:50 worker_base.py:148] "
                   "RuntimeError: NCCL error: internal error - please report this issue to the NCCL developers\n")
    # (raised as the worker set up its device and communicator, with nothing past set-up: the communicator's
    # set-up never completed, s25's rules_set_up.nccl_code_in_set_up; samples/wild/dv2-033 is labelled so)
    v = decide(store_of(tmp_path, nccl, "nccl.log"))
    assert v.kind == Kind.INIT_STALL and "internal error" in v.summary and "init_device" in v.summary
    assert "NCCL_DEBUG=INFO" in v.summary


def test_spawn_error_whose_traceback_is_cut_decides_nothing(tmp_path):
    text = ("    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n"
            "torch.multiprocessing.spawn.ProcessRaisedException:\n\n"
            "-- Process 1 terminated with the following error:\nTraceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.8/dist-packages/torch/multiprocessing/spawn.py", line 59, in _wrap\n'
            "    fn(i, *args)\n")
    s = store_of(tmp_path, text)
    e = ends(s).row(0, named=True)
    assert e["exit_code"] is None
    assert e["message"].endswith("raised an exception its traceback does not show here")
    assert decide(s).kind == Kind.UNDECIDED


def test_torch_24_names_the_death_signal_by_its_enum(tmp_path):
    text = ("W0823 16:54:02.337000 139733055988160 torch/distributed/elastic/agent/server/api.py:688] Received "
            "Signals.SIGTERM death signal, shutting down workers\n")
    v = decide(store_of(tmp_path, text))
    assert v.kind == Kind.CRASHED_RANK and "received SIGTERM (signal 15) from outside" in v.summary


@pytest.mark.parametrize("code, said", [(-9, "OOM killer"), (137, "SIGKILL"), (-11, "SIGSEGV"),
                                        (139, "SIGSEGV"), (-6, "watchdog"), (-7, "/dev/shm"),
                                        (1, "Python exception"), (3, "own exit")])
def test_each_code_says_what_it_means(code, said):
    from tracekit.rules_exit import meaning
    assert said in meaning(code)


FAILED_LOCAL = ("E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] "
                "failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: /root/miniconda3/bin/python\n")
# NCCL's init lines of two hosts (init.cc's `comm %p rank %d nranks %d ... - Init COMPLETE`): a job of two nodes
NCCL_OTHER_HOST = "".join(f"{h}:{p}:{p} [0] NCCL INFO comm 0xa rank {r} nranks 16 cudaDev 0 busId 1000 commId 0xabc"
                          " - Init COMPLETE\n" for h, p, r in (("gpu1", 4675, 0), ("gpu2", 5675, 8)))


def test_a_local_rank_is_a_rank_where_no_line_shows_a_second_node(tmp_path):
    # alone, the local rank numbers the process, and the verdict says it read it so
    s = store_of(tmp_path, FAILED_LOCAL)
    assert s.ranks["rank"].drop_nulls().to_list() == [5]
    v = decide(s)
    assert v.summary.startswith("rank 5 (local rank 5, pid 2630) ended: exit code -9") and v.ranks == [5]
    assert "rank 5 numbered by local rank, no line showing a second node" in v.summary
    # a job shown to be of one node: the same rank, with nothing to qualify
    one = store_of(tmp_path, "torchrun --standalone --nproc-per-node=8 train.py\n" + FAILED_LOCAL, "one.log")
    assert one.ranks["rank"].drop_nulls().unique().to_list() == [5]
    v = decide(one)
    assert v.ranks == [5] and v.summary.startswith("rank 5 (local rank 5, pid 2630) ended: exit code -9")
    assert "numbered by local rank" not in v.summary
    # a second node shown (another host's process): the local rank names no global one
    two = store_of(tmp_path, NCCL_OTHER_HOST + FAILED_LOCAL, "two.log")
    assert 5 not in two.ranks["rank"].drop_nulls().to_list()


def test_slurm_says_which_task_ended_and_when_its_cgroup_killed_one(tmp_path):
    text = ("srun: error: jwc09n018: task 1: Exited with exit code 1\n"
            "srun: error: jwc09n012: task 0: Killed\n")
    s = store_of(tmp_path, text)
    got = ends(s).select("host", "exit_code", "rank").rows()
    assert got == [("jwc09n018", 1, None), ("jwc09n012", -9, None)]
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK
    assert v.summary.startswith("srun's task 1 on jwc09n018 ended: exit code 1")
    oom = ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=4070.0. Some of your processes may have "
           "been killed by the cgroup out-of-memory handler.\n" + text)
    v = decide(store_of(tmp_path, oom, "oom.log"))
    assert v.kind == Kind.CRASHED_RANK and "cgroup OOM killer of step 4070.0" in v.summary
    assert v.fix.startswith("use less host memory")


def test_a_failed_local_rank_beside_a_line_whose_rank_is_text(tmp_path):
    # the mismatch line's rank comes out of its pattern as text: the exit's rank is compared as a number
    text = ("RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=485, OpType=ALLREDUCE, TensorShape=[25])\n" + FAILED_LOCAL)
    s = store_of(tmp_path, text)
    assert s.files["kind"][0] != "error"
    # (the local rank numbers the process: no line shows a second node)
    assert ends(s).select("exit_code", "rank").rows() == [(-9, 5)]
    v = decide(s)
    assert v.kind == Kind.MISMATCH and 1 in v.ranks


def test_a_launchers_word_under_pdshs_prefix_names_its_host(tmp_path):
    text = "".join(f"gpu003: {line}\n" for line in DEEPSPEED.splitlines())
    v = decide(store_of(tmp_path, text))
    assert v.summary.startswith("a worker of the deepspeed launcher on gpu003 ended: exit code -9")


def test_the_agents_signal_exception_alone_says_the_signal(tmp_path):
    text = "torch.distributed.elastic.multiprocessing.api.SignalException: Process 84933 got signal: 1\n"
    s = store_of(tmp_path, text)
    assert s.events.filter(pl.col("kind") == "exception").height == 0
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK
    assert v.summary.startswith("killed from outside: the torchrun agent (pid 84933) received SIGHUP (signal 1)")
