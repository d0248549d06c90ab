"""Issue 31 (failures): decide where an expert decides, and say the fact that decides it. Each test
writes the lines as the code that prints them does (PyTorch's ProcessGroupWrapper, ProcessGroupNCCL
and dynamic_rendezvous, NCCL's ncclGetErrorString, a program's own end lines) and ingests them as a
new user would."""

import polars as pl

from tracekit.ingest import ingest
from tracekit.outcome import EventKind
from tracekit.verdict import Kind, decide


def _decide(tmp_path, text, name="rank0.log"):
    (tmp_path / name).write_text(text)
    s = ingest([tmp_path])
    return s, decide(s)


OPTS = ("TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), "
        "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt)))")


def test_a_detail_mismatch_says_both_ranks_collectives(tmp_path):
    # torch >= 1.13: both fingerprints, the peer's printed without its tensors
    _, v = _decide(tmp_path, "[rank2]: RuntimeError: Detected mismatch between collectives on ranks. Rank 2 "
                   "is running collective: CollectiveFingerPrint(SequenceNumber=32, OpType=ALLREDUCE, "
                   f"TensorShape=[], TensorDtypes=Float, {OPTS}, but Rank 3 is running collective: "
                   "CollectiveFingerPrint(SequenceNumber=0OpType=GATHER).\n")
    assert v.kind == Kind.MISMATCH
    assert "rank 2 runs ALLREDUCE seq 32 (shape [], Float) while rank 3 runs GATHER seq 0" in v.summary


def test_a_detail_shape_mismatch_says_each_shape(tmp_path):
    _, v = _decide(tmp_path, "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
                   "collective: CollectiveFingerPrint(SequenceNumber=0, OpType=_ALLGATHER_BASE, TensorShape=[359, "
                   f"1, 1435, 16], TensorDtypes=BFloat16, {OPTS}, but Rank 2 is running collective: "
                   "CollectiveFingerPrint(SequenceNumber=0, OpType=_ALLGATHER_BASE, TensorShape=[359, 1, 1436, "
                   f"16], TensorDtypes=BFloat16, {OPTS}.\n")
    assert v.kind == Kind.MISMATCH
    assert "[359, 1, 1435, 16]" in v.summary and "[359, 1, 1436, 16]" in v.summary


def test_an_old_detail_mismatch_says_its_own_side(tmp_path):
    # torch 1.10-1.12 printed only the reporting rank's fingerprint, without a sequence number
    _, v = _decide(tmp_path, "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
                   "inconsistent collective: CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[25], "
                   "TensorDtypes=[Float], TensorDeviceTypes=[cuda]\n")
    assert v.kind == Kind.MISMATCH and "rank 1 runs ALLREDUCE (shape [25], Float)" in v.summary


def test_ranks_that_ended_while_another_timed_out_never_issued_its_collective(tmp_path):
    ends = "".join(f"Rank {r} completed\n" for r in (4, 5, 3, 6, 2, 7, 1))
    _, v = _decide(tmp_path, ends + "[E ProcessGroupNCCL.cpp:464] [Rank 0] Watchdog caught collective operation "
                   "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=10000) ran for 10917 milliseconds "
                   "before timing out.\nRank 0 completed\n")
    assert v.kind == Kind.DEADLOCK and v.ranks == [1, 2, 3, 4, 5, 6, 7]
    assert "rank 0 timed out in ALLREDUCE SeqNum=1" in v.summary and "ranks 1-7 never issued" in v.summary


def test_ranks_that_all_timed_out_are_not_read_as_ended(tmp_path):
    # every rank that ended also timed out: nothing says who left, so no deadlock is claimed from the ends
    _, v = _decide(tmp_path, "[E ProcessGroupNCCL.cpp:464] [Rank 0] Watchdog caught collective operation "
                   "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=10000) ran for 10917 milliseconds "
                   "before timing out.\nRank 0 completed\n")
    assert v.kind == Kind.UNDECIDED


def test_a_bare_done_line_names_no_rank_and_ends_nothing(tmp_path):
    s, _ = _decide(tmp_path, "Done.\n[rank3]: done\n")
    assert not s.events.filter(s.events["kind"] == EventKind.PROGRAM_END).height


def test_the_abort_after_a_failure_or_a_timeout_is_not_a_timeout(tmp_path):
    # NCCL's proxy saw the peer reset the connection; c10d's abort says "failed or timed out", which alone
    # is not a collective that timed out
    _, v = _decide(tmp_path, "host1:36759:36970 [0] include/socket.h:421 NCCL WARN Call to recv failed : "
                   "Connection reset by peer\nhost1:36759:36970 [0] NCCL INFO transport/net_ib.cc:593 -> 2\n"
                   "[E ProcessGroupNCCL.cpp:325] Some NCCL operations have failed or timed out. Due to the "
                   "asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
                   "corrupted/incomplete data. To avoid this inconsistency, we are taking the entire process "
                   "down.\n")
    assert "timed out in" not in v.summary and "Connection reset by peer" in v.summary


def test_a_connection_reset_under_init_process_group_is_an_init_stall(tmp_path):
    _, v = _decide(tmp_path, "Traceback (most recent call last):\n  File \"/app/mnist.py\", line 132, in main\n"
                   "    dist.init_process_group(backend=args.backend)\n  File \"/opt/conda/lib/python3.6/"
                   "site-packages/torch/distributed/distributed_c10d.py\", line 360, in init_process_group\n"
                   "    timeout=timeout)\nRuntimeError: Connection reset by peer\n")
    assert v.kind == Kind.INIT_STALL
    assert "init_process_group raised" in v.summary and "Connection reset by peer" in v.summary


def test_a_connection_reset_after_a_training_traceback_is_not_an_init_stall(tmp_path):
    # an earlier traceback through init_process_group does not mark a later exception of another traceback
    s, v = _decide(tmp_path, "Traceback (most recent call last):\n  File \"/x/distributed_c10d.py\", line 1, "
                   "in init_process_group\nValueError: bad\nTraceback (most recent call last):\n  File \"/app/"
                   "train.py\", line 9, in step\nRuntimeError: Connection reset by peer\n")
    reset = s.events.filter(pl.col("message").str.contains("Connection reset"))
    assert reset.height and "init_process_group" not in reset["where"].fill_null("").to_list()
    # (the first failure, the ValueError raised in init_process_group, is set-up's: rules_set_up says so)
    assert "Connection reset" not in v.summary.split("|")[0]


def test_a_rendezvous_keep_alive_failure_says_the_store_went_away(tmp_path):
    line = ("WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'node37_187281_0' has "
            "failed to send a keep-alive heartbeat to the rendezvous 'none' due to an error of type "
            "RendezvousConnectionError.\n")
    _, v = _decide(tmp_path, line * 3)
    assert v.kind == Kind.UNDECIDED
    assert "node37_187281_0" in v.summary and "keep-alive" in v.summary and "went away" in v.summary


def test_ncclInvalidArgument_is_the_ranks_own_call(tmp_path):
    # NCCL 2.4's ncclGetErrorString said `invalid argument`; later ones add `(run with NCCL_DEBUG=WARN ...)`
    for text in ("RuntimeError: NCCL error in: /w/torch/lib/c10d/../c10d/NCCLUtils.hpp:82, invalid argument, "
                 "NCCL version 2.4.8\n",
                 "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                 "ProcessGroupNCCL.cpp:1970, invalid argument (run with NCCL_DEBUG=WARN for details), NCCL "
                 "version 2.19.3\n"):
        _, v = _decide(tmp_path, text)
        assert v.kind == Kind.CRASHED_RANK and "invalid argument" in v.summary


def test_ncclRemoteError_alone_stays_undecided(tmp_path):
    # a peer exited or the network failed: the writer is not the cause, and nothing here says which
    _, v = _decide(tmp_path, "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                   "NCCLUtils.hpp:275, remote process exited or there was a network error, NCCL version 2.20.5\n")
    assert v.kind == Kind.UNDECIDED


def test_a_store_host_name_that_does_not_resolve_says_so_and_where(tmp_path):
    _, v = _decide(tmp_path, "[W socket.cpp:558] [c10d] The IPv4 network addresses of (head-pod-x, 50176) cannot "
                   "be retrieved (gai error: -2 - Name or service not known).\n[E socket.cpp:610] [c10d] The "
                   "client socket has failed to connect to any network address of (head-pod-x, 50176).\n")
    assert v.kind == Kind.INIT_STALL
    assert "head-pod-x:50176" in v.summary and "does not resolve" in v.summary


def test_a_port_in_use_names_the_port_and_what_holds_it(tmp_path):
    _, v = _decide(tmp_path, "[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:25641 "
                   "(errno: 98 - Address already in use).\n")
    assert v.kind == Kind.INIT_STALL and "port 25641" in v.summary and "taken" in v.summary


def test_an_address_of_no_family_before_any_init_completed_is_an_init_stall(tmp_path):
    _, v = _decide(tmp_path, "host3:1958:1958 [3] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth2\n"
                   "ncclInternalError: Internal check failed.\nLast error:\nncclSocketInit: connecting to address  "
                   "with family 59936 is neither AF_INET(2) nor AF_INET6(10)\n")
    assert v.kind == Kind.INIT_STALL and "NCCL_SOCKET_IFNAME=eth2" in v.summary and "family 59936" in v.summary


def test_an_address_of_no_family_after_init_completed_stays_undecided(tmp_path):
    # NCCL 2.29's ungrouped send/recv with P2P and SHM disabled: an AF_UNIX address after init
    _, v = _decide(tmp_path, "h:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 80 commId 0x2e - Init "
                   "START\nh:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 80 commId 0x2e - Init "
                   "COMPLETE\nh:1:1 [0] misc/socket.cc:537 NCCL WARN ncclSocketInit: connecting to address  with "
                   "family 1 is neither AF_INET(2) nor AF_INET6(10)\n")
    assert v.kind == Kind.UNDECIDED


def test_an_abort_after_nccl_socket_errors_says_who_and_where_nccl_failed(tmp_path):
    _, v = _decide(tmp_path, "n1:312247:326969 [0] NCCL INFO misc/socket.cc:829 -> 3\n"
                   "n1:312247:319408 [0] NCCL INFO misc/socket.cc:881 -> 3\n"
                   "[rank6]:[E624 04:14:29.224103812 ProcessGroupNCCL.cpp:684] [Rank 6] Some NCCL operations "
                   "have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
                   "operations might run on corrupted/incomplete data.\n[rank6]:[E624 04:14:29.224139849 "
                   "ProcessGroupNCCL.cpp:698] [Rank 6] To avoid data inconsistency, we are taking the entire "
                   "process down.\n")
    assert v.kind == Kind.UNDECIDED
    assert "rank 6 took its process down" in v.summary and "misc/socket.cc" in v.summary
    assert "timed out in" not in v.summary


def test_ranks_that_joined_twice_while_others_never_joined_is_an_init_stall(tmp_path):
    # multi-node Lightning under Slurm where both nodes take node rank 0
    joined = "".join(f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/8\n" * 2 for r in range(4))
    _, v = _decide(tmp_path, joined)
    assert v.kind == Kind.INIT_STALL and v.ranks == [4, 5, 6, 7]
    assert "ranks 0-3 joined twice" in v.summary and "ranks 4-7 of the world of 8 never joined" in v.summary


def test_ranks_that_each_joined_once_are_no_duplicate(tmp_path):
    _, v = _decide(tmp_path, "".join(f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/2\n" for r in range(2)))
    assert "joined twice" not in v.summary


def test_each_new_cause_carries_its_own_fix(tmp_path):
    # the fix table (fixes.py) gives each cause decided here its own fix, not the generic row of its kind
    _, v = _decide(tmp_path, "[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:25641 "
                   "(errno: 98 - Address already in use).\n")
    assert "MASTER_PORT" in v.fix and "ss -ltnp" in v.check


def test_a_detail_mismatch_posted_on_several_lines_says_both_sides(tmp_path):
    _, v = _decide(tmp_path, "RuntimeError: Detected mismatch between collectives on ranks.\nRank 7 is running "
                   "collective: CollectiveFingerPrint(SequenceNumber=18, OpType=BROADCAST, ...)\nbut Rank 0 is "
                   "running collective: CollectiveFingerPrint(SequenceNumber=30, OpType=BROADCAST, ...)\n")
    assert v.kind == Kind.MISMATCH
    assert "rank 7 runs BROADCAST seq 18 while rank 0 runs BROADCAST seq 30" in v.summary


def test_a_spawned_process_that_raised_in_the_programs_code_is_a_crashed_rank_though_its_exception_is_cut(
        tmp_path):
    _, v = _decide(tmp_path, "-- Process 1 terminated with the following error:\nTraceback (most recent call "
                   "last):\n  File \"/x/torch/multiprocessing/spawn.py\", line 69, in _wrap\n    fn(i, *args)\n"
                   "  File \"/x/train2.py\", line 685, in compute_loss\n    loss = model(batch)\n")
    assert v.kind == Kind.CRASHED_RANK and "process 1" in v.summary and "compute_loss" in v.summary


def test_ranks_that_joined_and_logged_nothing_after_are_the_situation_not_a_verdict(tmp_path):
    # (words, issue 31: where the ranks that never joined left no record at all, the rendezvous waits for
    # them: INIT_STALL, tests/test_words_startup.py)
    _, v = _decide(tmp_path, "[rank: 0] Seed set to 42\nInitializing distributed: GLOBAL_RANK: 0, MEMBER: 1/5\n")
    assert v.kind == Kind.INIT_STALL
    assert "rank 0 said it was joining" in v.summary and "ranks 1-4 of the world of 5 never did" in v.summary
    # every rank joined and the log ends there, no end line of init_process_group: an init stall (session 23,
    # rules_init.start_up_ends_the_log; fairseq's `initialized host H as rank N` would end it)
    _, v = _decide(tmp_path, "".join(f"| distributed init (rank {r}): tcp://localhost:16344\n" for r in range(8)))
    assert v.kind == Kind.INIT_STALL and "ranks 0-7" in v.summary and "said they were joining" in v.summary


def test_a_launcher_that_cannot_reach_a_host_over_ssh_is_an_init_stall(tmp_path):
    _, v = _decide(tmp_path, "Traceback (most recent call last):\n  File \"/x/deepspeed/launcher/runner.py\", line "
                   "437, in main\n    subprocess.check_call(ssh_check_cmd, shell=True)\nsubprocess."
                   "CalledProcessError: Command 'ssh -o PasswordAuthentication=no 192.168.3.100 hostname' returned "
                   "non-zero exit status 255.\n")
    assert v.kind == Kind.INIT_STALL and "192.168.3.100 over ssh" in v.summary and "255" in v.summary


def test_pytorch_test_harness_names_the_process_that_failed_or_hung(tmp_path):
    _, v = _decide(tmp_path, "Traceback (most recent call last):\n  File \"/x/common_distributed.py\", line 431, "
                   "in _check_return_codes\n    raise RuntimeError(error)\nRuntimeError: Processes 1 exited with "
                   "error code 10\n")
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [1] and "error code 10" in v.summary
    _, v = _decide(tmp_path, "AssertionError: True is not false : Timeout waiting for rank 1 to terminate\n")
    assert v.kind == Kind.UNDECIDED and "rank 1 never ended" in v.summary


def test_the_schedulers_time_limit_is_a_kill_from_outside(tmp_path):
    _, v = _decide(tmp_path, "step 450 loss 0.5\nslurmstepd: error: *** JOB 123 ON node1 CANCELLED AT "
                   "2024-01-01T00:00:00 DUE TO TIME LIMIT ***\n")
    assert v.kind == Kind.CRASHED_RANK and "time limit" in v.summary
    # a plain cancel (a person's scancel, mostly of a job that hung) is not decided as a kill
    _, v = _decide(tmp_path, "slurmstepd: error: *** JOB 123 ON node1 CANCELLED AT 2024-01-01T00:00:00 ***\n")
    assert v.kind != Kind.CRASHED_RANK


def test_a_traceback_whose_exception_is_cut_is_a_raise_not_a_clean_end(tmp_path):
    # an excerpt that ends inside a traceback after progress reached 100%: never healthy
    _, v = _decide(tmp_path, "Train epoch [3/3]: 100%|##########| 8/8 [00:15<00:00,  1.85s/it, loss=0.7]\n"
                   "Traceback (most recent call last):\n  File \"/usr/lib/python3.10/runpy.py\", line 196, in "
                   "_run_module_as_main\n")
    assert v.kind == Kind.CRASHED_RANK and "traceback" in v.summary
    # a traceback that ends in its exception is that exception, once
    s, _ = _decide(tmp_path, "Traceback (most recent call last):\n  File \"/x.py\", line 1, in f\nValueError: bad\n")
    assert s.events.filter(s.events["kind"] == EventKind.EXCEPTION)["message"].to_list() == ["ValueError: bad"]


def test_a_ray_task_error_is_read_as_the_exception_it_wraps(tmp_path):
    _, v = _decide(tmp_path, "ray.exceptions.RayTaskError(NcclError): ray::Worker.compute() (pid=35381, "
                   "ip=10.223.22.25)\n")
    assert v.kind == Kind.CRASHED_RANK and "NcclError" in v.summary


def test_an_exception_without_a_message_is_still_read(tmp_path):
    # the elastic agent's rendezvous that timed out raises RendezvousTimeoutError with no message
    _, v = _decide(tmp_path, "Traceback (most recent call last):\n  File \"/x/torch/distributed/elastic/"
                   "rendezvous/dynamic_rendezvous.py\", line 1, in next_rendezvous\ntorch.distributed.elastic."
                   "rendezvous.api.RendezvousTimeoutError\n")
    assert v.kind == Kind.INIT_STALL and "RendezvousTimeoutError" in v.summary and "never arrived" in v.summary


def test_a_cut_traceback_never_outranks_a_line_that_says_more(tmp_path):
    # the store's port was taken: that is the cause; the traceback under it is cut
    _, v = _decide(tmp_path, "[W socket.cpp:401] [c10d] The server socket has failed to bind to 0.0.0.0:47531 "
                   "(errno: 98 - Address already in use).\n[E socket.cpp:435] [c10d] The server socket has failed "
                   "to listen on any local network address.\nTraceback (most recent call last):\n  File "
                   "\"train.py\", line 47, in train\n    dist.init_process_group(\n")
    assert v.kind == Kind.INIT_STALL and "47531" in v.summary
    # Ctrl-C's traceback is a person stopping the job, not a crash
    _, v = _decide(tmp_path, "Traceback (most recent call last):\n  File \"train.py\", line 9, in step\nKeyboard"
                   "Interrupt\n")
    assert v.kind != Kind.CRASHED_RANK


def test_an_init_that_never_completed_says_the_communicator_and_its_size(tmp_path):
    _, v = _decide(tmp_path, "host8:2744870:2745046 [0] NCCL INFO comm 0x55f08a1c83d0 rank 0 nranks 1 cudaDev 0 "
                   "nvmlDev 0 busId 30 commId 0x438c8edb9fb0064f - Init START\n")
    assert v.kind == Kind.UNDECIDED and "nranks 1" in v.summary and "world or group of its own" in v.summary


def test_a_closed_rendezvous_is_no_init_stall(tmp_path):
    # an agent closed the rendezvous as its job ended; the other node's agent got SIGTERM from outside
    _, v = _decide(tmp_path, "torch.distributed.elastic.rendezvous.api.RendezvousClosedError\nW0409 07:28:49.530000 "
                   "1359 torch/distributed/elastic/agent/server/api.py:719] Received 15 death signal, shutting down "
                   "workers\n")
    assert v.kind == Kind.CRASHED_RANK and "SIGTERM" in v.summary


def test_an_unexplained_nccl_error_quotes_ncclss_last_error_with_its_meaning(tmp_path):
    # after an init completed, an address of no family decides nothing, but it is the fact to show
    _, v = _decide(tmp_path, "h:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 80 commId 0x2e - Init "
                   "START\nh:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 80 commId 0x2e - Init "
                   "COMPLETE\nRuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
                   "internal error - please report this issue to the NCCL developers, NCCL version 2.29.2\n"
                   "ncclInternalError: Internal check failed.\nLast error:\nncclSocketInit: connecting to address  "
                   "with family 1 is neither AF_INET(2) nor AF_INET6(10)\n")
    assert v.kind == Kind.UNDECIDED
    assert "NCCL's last error: `ncclSocketInit: connecting to address" in v.summary
    assert "ncclInternalError" in v.summary


def test_ranks_that_join_again_in_a_restart_are_no_duplicate(tmp_path):
    # torchrun's second attempt prints every rank's `distributed init` again, then finishes cleanly
    _, v = _decide(tmp_path, "".join(f"| distributed init (rank {r}): env://\n" for r in (0, 1)) * 2
                   + "[default] worker group successfully finished. Waiting 300 seconds for other agents to "
                   "finish.\n")
    assert "joined twice" not in v.summary
