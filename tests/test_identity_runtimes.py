"""Other runtimes' own lines (tracekit/parsers/runtimes): UCX's logger and fatal-error lines, Ray's word that
a worker died, as their printing code writes them (github:openucx/ucx ucs/debug/log.c, ucs/debug/debug.c,
uct/ib/mlx5/ib_mlx5_log.c; github:ray-project/ray src/ray/raylet/node_manager.cc, the memory monitor),
decoded into the existing event kinds with the host and pid that wrote them, so the rules decide."""

from __future__ import annotations

import polars as pl

from tests.factory import events_of as kinds
from tests.factory import text_store as store_of
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide


# Open MPI's --tag-output `[jobid,rank]<stdout>:` before UCX's logger line: the rank is the prefix's
UCX_RETRY = ("[1,{r}]<stdout>:[1466599688.714393] [vegas30:{pid}:0]    rc_verbs_iface.c:47   UCX  ERROR Send "
             "completion with error: transport retry counter exceeded\n")


def test_ucx_logger_transport_errors_name_their_rank_and_host(tmp_path):
    s = store_of(tmp_path, UCX_RETRY.format(r=43, pid=25196) + UCX_RETRY.format(r=67, pid=25199))
    errs = kinds(s, EventKind.TRANSPORT_ERROR)
    assert errs.select("rank", "host", "pid").rows() == [(43, "vegas30", 25196), (67, "vegas30", 25199)]
    assert sorted(s.ranks["rank"].drop_nulls().to_list()) == [43, 67]
    assert s.ranks["host"].drop_nulls().unique().to_list() == ["vegas30"]
    assert int(s.files["unknown"].sum()) == 0
    v = decide(s)
    assert v.kind == Kind.TRANSPORT_ERROR and "retry counter exceeded" in v.summary


def test_ucx_ib_error_dump_is_a_transport_error_of_its_host(tmp_path):
    text = "".join(f"[master:{pid}:0:{pid}] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB "
                   "(synd 0x15 vend 0x81 hw_synd 0/0)\n"
                   f"[master:{pid}:0:{pid}] ib_mlx5_log.c:139  DCI QP 0xa9f wqe[0]: SEND s-e [rqpn 0xa66 "
                   "rlid 703] [inl len 18]\n" for pid in (19545, 19546))
    s = store_of(tmp_path, text)
    errs = kinds(s, EventKind.TRANSPORT_ERROR)
    assert errs["pid"].to_list() == [19545, 19546] and errs["rank"].null_count() == 2  # UCX names no rank
    assert s.ranks["host"].drop_nulls().unique().to_list() == ["master"]
    assert s.ranks["rank"].drop_nulls().to_list() == []
    assert int(s.files["unknown"].sum()) == 0  # the work request lines are UCX's too, and no error
    v = decide(s)
    assert v.kind == Kind.TRANSPORT_ERROR and "mlx5_0:1/IB" in v.summary


def test_ucx_caught_signal_is_a_crash_and_its_backtrace_is_read(tmp_path):
    text = ("[gpu-node09:332629:0:332629] Caught signal 11 (Segmentation fault: address not mapped to object "
            "at address 0x10)\n"
            "==== backtrace (tid: 332629) ====\n"
            " 0  /usr/lib/libucs.so.0(ucs_handle_error+0x2d4) [0x7fedc925c274]\n"
            " 1  /opt/nccl/lib/libnccl.so(+0x120057) [0x7ff1c18c1057]\n"
            "=================================\n")
    s = store_of(tmp_path, text)
    crash = kinds(s, EventKind.CRASH)
    assert crash.select("host", "pid").rows() == [("gpu-node09", 332629)]
    assert "Caught signal 11 (Segmentation fault" in crash["message"][0]
    assert int(s.files["unknown"].sum()) == 0
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK and "signal 11" in v.summary


def test_a_ucx_warning_is_known_and_no_failure(tmp_path):
    text = ("[1700000000.000001] [node3:4242:0]          parser.c:1911 UCX  WARN  unused env variable: "
            "UCX_TLS_X (set UCX_WARN_UNUSED_ENV_VARS=n to suppress this warning)\n")
    s = store_of(tmp_path, text)
    assert s.events.filter(pl.col("kind").cast(pl.Utf8).is_in(["crash", "transport_error"])).height == 0
    assert s.ranks["host"].drop_nulls().to_list() == ["node3"] and int(s.files["unknown"].sum()) == 0


RAYLET = ("(raylet) A worker died or was killed while executing a task by an unexpected system error. "
          "To troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffffffffffff96975768 "
          "Worker ID: fa30bc39b193 Node ID: 077b4d57b1d8 Worker IP address: {ip} Worker port: 38471 Worker "
          "PID: {pid} Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a "
          "connection error code 2. End of file. There are some potential root causes. (1) The process is "
          "killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The "
          "worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.\n")


def test_the_raylets_word_that_a_worker_died_names_its_host_and_pid(tmp_path):
    s = store_of(tmp_path, RAYLET.format(ip="10.112.9.31", pid=3566775))
    died = kinds(s, EventKind.CHILD_FAILED)
    assert died.select("host", "pid").rows() == [("10.112.9.31", 3566775)]  # one event of the line
    assert "connection error code 2" in died["message"][0]
    assert s.ranks["host"].drop_nulls().to_list() == ["10.112.9.31"]
    assert int(s.files["unknown"].sum()) == 0


def test_a_pid_of_another_host_is_another_process(tmp_path):
    # the same pid on two hosts (containers number theirs alike): the rank one host's prefix names for it is
    # not the rank of the other host's process
    text = ("(WorkerDict pid=833, ip=172.26.153.33) [rank62]:[W809 14:59:33.656957424 "
            "ProcessGroupNCCL.cpp:629] [Rank 62] a line\n"
            "[node7:833:0:833] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB "
            "(synd 0x15)\n")
    s = store_of(tmp_path, text)
    assert kinds(s, EventKind.TRANSPORT_ERROR).select("host", "pid", "rank").rows() == [("node7", 833, None)]
    assert s.ranks["rank"].drop_nulls().to_list() == [62]
    assert sorted(s.ranks["host"].drop_nulls().unique().to_list()) == ["172.26.153.33", "node7"]


def test_rays_memory_monitor_kill_is_a_crash_of_host_memory(tmp_path):
    text = ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
            "Memory on the node (IP: 10.20.49.141, ID: 4748aa6d) where the task (actor ID: 9e43ace6, "
            "name=WorkerDict.__init__, pid=4100606, memory used=56.57GB) was running was 240.97GB / 251.53GB "
            "(0.958), which exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: 0c6d) "
            "because it was the most recently scheduled task; to see more information about memory usage on "
            "this node, use `ray logs raylet.out -ip 10.20.49.141`.\n"
            "Refer to the documentation on how to address the out of memory issue: https://docs.ray.io/x.\n"
            "PID\tMEM(GB)\tCOMMAND\n"
            "4100606\t56.57\tray::WorkerDict.actor_rollout_generate_sequences\n"
            "4075157\t0.35\tpython3 -m verl.trainer.main_ppo data.train_files=/data/dapo.parquet\n")
    s = store_of(tmp_path, text)
    crash = kinds(s, EventKind.CRASH).filter(pl.col("host").is_not_null())
    assert crash.select("host", "pid").rows() == [("10.20.49.141", 4100606)]
    assert int(s.files["unknown"].sum()) == 0
    v = decide(s)
    assert v.kind == Kind.CRASHED_RANK


def test_a_console_paste_wrapped_at_a_fixed_width_reads_as_its_lines(tmp_path):
    # a terminal wraps what it shows, prefix and all, at its width (here 100): the raylet's line comes back
    # whole, so its worker's address and pid are read; a line a paste made one wider (a backtick) joins too
    line = RAYLET.format(ip="10.0.1.75", pid=207258).rstrip("\n")
    cut = [line[i:i + 100] for i in range(0, len(line), 100)]
    text = "`" + "\n".join(cut) + "\n"
    s = store_of(tmp_path, text)
    assert kinds(s, EventKind.CHILD_FAILED).select("host", "pid").rows() == [("10.0.1.75", 207258)]
    assert int(s.files["unknown"].sum()) == 0


def test_a_tensorpipe_agents_error_is_a_transport_error_of_its_rank(tmp_path):
    # torch/csrc/distributed/rpc/tensorpipe_agent.cpp: the agent's name is its rank where it is a number
    text = "".join(f"[W tensorpipe_agent.cpp:916] RPC agent for {me} encountered error when sending outgoing "
                   "request #0 to 0: async error on socket: Connection reset by peer (this error originated "
                   "at tensorpipe/transport/shm/connection_impl.cc:259)\n" for me in ("3", "10", "worker5"))
    s = store_of(tmp_path, text)
    errs = kinds(s, EventKind.TRANSPORT_ERROR)
    assert errs["rank"].to_list() == [3, 10, None]  # `worker5` is a name, not a rank
    assert sorted(s.ranks["rank"].drop_nulls().to_list()) == [3, 10]
    assert int(s.files["unknown"].sum()) == 0


def test_an_xla_workers_wait_for_the_mesh_master_names_both_hosts(tmp_path):
    text = ("2020-05-28 11:50:27 10.164.15.200 [1] 2020-05-28 11:50:27.058553: I    7449 "
            "tensorflow/compiler/xla/xla_client/mesh_service.cc:208] Waiting to connect to client mesh "
            "master (300 seconds) 10.164.15.199:8477\n")
    s = store_of(tmp_path, text)
    assert sorted(s.ranks["host"].drop_nulls().to_list()) == ["10.164.15.199", "10.164.15.200"]
    assert s.ranks["rank"].drop_nulls().to_list() == []  # xla_dist's `[1]` is a VM's index
    # the wait makes no event and stays an unknown line, so the fallback reader can quote it as a wait
    assert int(s.files["unknown"].sum()) == 1
    assert s.events.filter(pl.col("kind") == EventKind.TELLING_LINE)["where"].to_list() == ["wait"]
