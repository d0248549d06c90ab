"""NCCL's own errors read for whose they are (issue 31): a receive that got more bytes than it posted
(`message truncated`, net_socket.cc) is the ranks' sizes differing, not the network; a config attribute
NCCL refuses, a topology it could not read (graph/xml.cc, os/linux.cc) and `unhandled cuda error` are a
failure of that rank's call or init; a driver entry point NCCL could not look up (cudawrap.cc) is
harmless, the run goes on. Lines as NCCL's WARN() and torch's / vLLM's exceptions print them; the pastes
marked real are users' (vLLM issues, a Slurm smoke check)."""

from tracekit import nccl_messages
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

HEAD = "gpu-b:1201:1290 [1] "


def _decide(tmp_path, text, name="rank1.log"):
    (tmp_path / name).write_text(text)
    return decide(ingest([tmp_path]))


# --- message truncated: sizes that differ between ranks -------------------------------------------

def test_truncated_wrapped_after_its_words_says_both_sizes_and_the_peer(tmp_path):
    # a terminal wrapped the WARN after `message truncated :`: the sizes are on the next line
    v = _decide(tmp_path, HEAD + "transport/net_socket.cc:424 NCCL WARN NET/Socket : peer 10.0.0.3<59210> "
                "message truncated :\nreceiving 1048576 bytes instead of 65536\n"
                + HEAD + "NCCL INFO transport/net_socket.cc:557 -> 3\n")
    assert v.kind == Kind.MISMATCH
    assert "10.0.0.3<59210> sent 1048576 bytes where 65536 were posted" in v.summary


def test_truncated_of_nccl_2_4_without_the_peer_is_a_mismatch(tmp_path):
    # NCCL <= 2.6 printed no peer (`NET/Socket : message truncated : receiving %d bytes instead of %d`)
    v = _decide(tmp_path, HEAD + "NCCL WARN NET/Socket : message truncated : receiving 8192 bytes instead of "
                "4096\n" + HEAD + "NCCL INFO include/net.h:28 -> 3\n")
    assert v.kind == Kind.MISMATCH and "a peer sent 8192 bytes where 4096 were posted" in v.summary


def test_a_wrapped_line_joins_only_the_rest_its_words_expect(tmp_path):
    # (the next line is another WARN, not the sizes: the cut WARN stays as it was, no sizes invented)
    v = _decide(tmp_path, HEAD + "transport/net_socket.cc:424 NCCL WARN NET/Socket : peer 10.0.0.3<5> "
                "message truncated :\n" + HEAD + "NCCL WARN NET/Socket : socket progress error\n")
    assert "were posted to receive" not in v.summary


def test_the_bootstraps_truncated_message_is_not_a_collectives(tmp_path):
    said = nccl_messages.meaning_of("bootstrap.cc:224 NCCL WARN Message truncated : received 4096 bytes "
                                    "instead of 128")
    assert said is not None and said[0].name == "bootstrap_truncated"


# --- NCCL's own code: config, topology, CUDA ----------------------------------------------------

def test_invalid_config_blocking_real_paste_is_that_ranks_crash(tmp_path):
    # real (a Slurm smoke check: torch 2.1.1 with NCCL 2.18 loaded beside the 2.14 it was built with)
    v = _decide(tmp_path, "Torch NCCL: (2, 18, 1)\n"
                "ncclInvalidArgument: Invalid value for an argument.\nLast error:\n"
                "Invalid config blocking attribute value -2147483648\n"
                "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                "NCCLUtils.hpp:219, invalid argument, NCCL version 2.14.3\nChildFailedError\n")
    # (in set-up, before any communicator completed: rules_set_up's INIT_STALL, which says it)
    assert v.kind == Kind.INIT_STALL
    assert "Invalid config blocking attribute value" in v.summary and "transport" not in v.summary


def test_invalid_config_of_any_attribute_reads_as_the_programs_call():
    for line in ("Invalid config cgaClusterSize attribute value 9", "Invalig config graphUsageMode attribute "
                 "value 7", "Invalid config min/max channels attribute value 0/64"):
        said = nccl_messages.meaning_of(line)
        assert said is not None and said[0].name == "invalid_config", line


def test_topology_it_could_not_read_at_init_is_no_transport_error(tmp_path):
    # nccl-tests under WSL: NCCL's graph/xml.cc cannot resolve a PCI path in sysfs, unwinds, the test fails
    h = "DESKTOP:36629:36635 [0] "
    v = _decide(tmp_path, "DESKTOP: Test NCCL failure common.cu:777 'unhandled system error'\n"
                + h + "NCCL INFO Bootstrap : Using eth0:192.168.143.185<0>\n"
                + h + "graph/xml.cc:332 NCCL WARN Could not find real path of /sys/class/pci_bus/0000:21/"
                "../../0000:21:00.0\n" + h + "NCCL INFO graph/xml.cc:469 -> 2\n"
                + h + "NCCL INFO graph/topo.cc:522 -> 2\n" + h + "NCCL INFO init.cc:627 -> 2\n")
    # (in set-up, before any communicator completed: rules_set_up's INIT_STALL, which says it)
    assert v.kind == Kind.INIT_STALL
    assert "Could not find real path" in v.summary and "not of its network" in v.summary


def test_a_socket_warn_with_a_system_error_stays_the_networks(tmp_path):
    # (negative: a WARN of NCCL's network files is the transport's, whatever else failed)
    v = _decide(tmp_path, HEAD + "misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
                "10.0.0.2<41213> failed : No route to host\n" + HEAD + "NCCL INFO bootstrap.cc:85 -> 2\n"
                "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, "
                "unhandled system error, NCCL version 2.18.1\n")
    assert v.kind in (Kind.TRANSPORT_ERROR, Kind.INIT_STALL)


VLLM = "/opt/conda/envs/py_3.10/lib/python3.10/site-packages/vllm/"


def test_unhandled_cuda_error_in_vllms_pynccl_real_paste_is_that_ranks_crash(tmp_path):
    # real (vLLM issue: a TP of 4 on ROCm, pynccl's first all_reduce as the worker sets up its device)
    v = _decide(tmp_path,
                f'  File "{VLLM}worker/worker.py", line 175, in init_device\n'
                "    init_worker_distributed_environment(self.parallel_config, self.rank,\n"
                f'  File "{VLLM}distributed/parallel_state.py", line 154, in __init__\n'
                "    self.pynccl_comm = PyNcclCommunicator(\n"
                f'  File "{VLLM}distributed/device_communicators/pynccl.py", line 95, in __init__\n'
                "    self.all_reduce(data)\n"
                '  File "/opt/conda/envs/py_3.10/lib/python3.10/site-packages/vllm/distributed/'
                'device_communicators/pynccl_wrapper.py", line 223, in NCCL_CHECK\n'
                '    raise RuntimeError(f"NCCL error: {error_str}")\n'
                "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n"
                "ERROR 10-30 13:46:29 api_server.py:186] RPCServer process died before responding to "
                "readiness probe\n")
    assert v.kind == Kind.CRASHED_RANK
    assert "a CUDA call inside its NCCL call failed" in v.summary and "unhandled cuda error" in v.summary


def test_unhandled_cuda_error_alone_mid_run_is_undecided(tmp_path):
    # (negative: the error code alone, no set-up in sight: NCCL's WARN would say which CUDA call failed)
    v = _decide(tmp_path, "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                "NCCLUtils.hpp:317, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL "
                "version 2.21.5\n")
    assert v.kind == Kind.UNDECIDED and "NCCL_DEBUG" in v.summary


def test_a_driver_entry_point_nccl_could_not_look_up_is_harmless(tmp_path):
    # NCCL 2.21 on a 12.6 driver: cudawrap.cc WARNs, ncclCommInitRank ignores it, the communicator forms
    h = "head-0:30483:30483 [0] "
    v = _decide(tmp_path, h + "NCCL INFO cudaDriverVersion 12060\n"
                + h + "misc/cudawrap.cc:130 NCCL WARN Retrieve cuGetErrorString failed with 0 status 32765\n"
                + h + "misc/cudawrap.cc:195 NCCL WARN CUDA some PFN functions not found in the library\n"
                "NCCL version 2.21.5+cuda12.4\n"
                + h + "NCCL INFO ncclCommInitRank comm 0x5581 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 1000 "
                "commId 0x6f1a - Init START\n"
                + h + "NCCL INFO ncclCommInitRank comm 0x5581 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 1000 "
                "commId 0x6f1a - Init COMPLETE\n")
    assert v.kind not in (Kind.CRASHED_RANK, Kind.TRANSPORT_ERROR)
    assert "cudawrap" not in v.summary


# --- Ascend HCCL as torch_npu reports it -------------------------------------------------------

NPU_TIMEOUT = (  # real (vLLM on Ascend, its engine's log): HCCL's socket to a peer timed out at an all_gather
    "ERROR 07-01 00:40:04 [engine.py:458] InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS "
    "function error: HcclAllgather, error code is 6\n"
    "ERROR 07-01 00:40:04 [engine.py:458] [ERROR] 2025-07-01-00:40:04 (PID:176930, Device:0, RankID:-1) "
    "ERR01100 OPS call acl api failed.\n"
    "ERROR 07-01 00:40:04 [engine.py:458] EI0006: [PID: 176930] 2025-07-01-00:40:04.135.732 Getting socket "
    "times out. Reason: Remote Rank did not send the data in time. Please check the reason for the rank "
    "being stuck\n")


def test_hccl_socket_timeout_is_a_wait_not_a_crash(tmp_path):
    v = _decide(tmp_path, NPU_TIMEOUT)
    assert v.kind not in (Kind.CRASHED_RANK, Kind.TRANSPORT_ERROR, Kind.HEALTHY)
    assert "EI0006" in v.summary and "Remote Rank did not send the data in time" in v.summary


def test_the_exception_over_a_hccl_timeout_is_its_consequence(tmp_path):
    # torch_npu's RuntimeError, CANN's head with the rank, then the code of a timeout: one wait of rank 1
    v = _decide(tmp_path, "[rank1]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp"
                ":281 OPS function error: HcclAllreduce, error code is 6\n"
                "[rank1]: [ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call "
                "acl api failed.\n[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket "
                "times out. Reason: Remote Rank did not send the data in time.\n")
    assert v.kind == Kind.UNDECIDED and v.ranks == [1]
    assert "timed out in ALLREDUCE" in v.summary


def test_hccp_init_failure_is_that_ranks_crash_with_its_reason(tmp_path):
    v = _decide(tmp_path, "RuntimeError: [ERROR] HCCL error in: torch_npu/csrc/distributed/"
                "ProcessGroupHCCL.cpp:64\n[ERROR] 2024-05-21-11:57:54 (PID:927000, Device:3, RankID:3) "
                "ERR02200 DIST call hccl api failed.\nEJ0001: 2024-05-21-11:57:54.167.645 Failed to "
                "initialize the HCCP process. Reason: Maybe the last training process is running.\n")
    # (in set-up, before any communicator completed: rules_set_up's INIT_STALL, which says it)
    assert v.kind == Kind.INIT_STALL and v.ranks == [3]
    assert "EJ0001" in v.summary and "Failed to initialize the HCCP process" in v.summary


def test_acl_stream_synchronize_after_a_hccl_task_timeout_is_no_crash(tmp_path):
    v = _decide(tmp_path, "RuntimeError: ACL stream synchronize failed.\nEI9999: Inner Error!\n"
                "EI9999: 2024-10-21-10:42:00.358.410  The error from device(chipId:3, dieId:0), serial "
                "number is 9, hccl fftsplus task timeout occurred during task execution, stream_id:5, stuck "
                "notify num:1, timeout:30min(default).\n")
    assert v.kind not in (Kind.CRASHED_RANK, Kind.HEALTHY)
    assert "task timeout" in v.summary


def test_an_ascend_error_of_no_hccl_code_stays_a_crash(tmp_path):
    # (negative: an operator's failure, no CANN code of a collective under it)
    v = _decide(tmp_path, "RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS "
                "function error: aclnnMatmul, error code is 561103\n"
                "EZ9999: 2024-10-21-10:42:00.358.410 Kernel launch failed, the operator's shape is not "
                "supported.\n")
    assert v.kind == Kind.CRASHED_RANK and "EZ9999" in v.summary


# --- a peer's close: a consequence, not the network, where a peer's end is in sight ------------------

CLOSED = ("10.3.0.41: [rank22]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/"
          "c10d/NCCLUtils.hpp:275, remote process exited or there was a network error, NCCL version 2.20.5\n"
          "10.3.0.41: [rank22]: ncclRemoteError: A call failed possibly due to a network error or a remote "
          "process exiting prematurely.\n10.3.0.41: [rank22]: Last error:\n"
          "10.3.0.41: [rank22]: socketProgress: Connection closed by remote peer node-7-ib0<40484>\n")


def test_a_peer_closed_while_another_rank_raised_is_undecided_naming_both(tmp_path):
    v = _decide(tmp_path, CLOSED + "10.3.0.42: [rank8]: Traceback (most recent call last):\n"
                '10.3.0.42: [rank8]:   File "/home/u/train.py", line 196, in <module>\n'
                "10.3.0.42: [rank8]:     main()\n")
    assert v.kind == Kind.UNDECIDED
    assert "its peer node-7-ib0<40484> closed the connection" in v.summary and "rank 8 raised" in v.summary


def test_a_peer_closed_after_that_peer_crashed_is_the_crash(tmp_path):
    v = _decide(tmp_path, CLOSED + "10.3.0.42: [rank8]: torch.OutOfMemoryError: CUDA out of memory. Tried to "
                "allocate 2.00 GiB\n")
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [8]


# --- two ranks on one GPU, seen in NCCL's communicator lines without its WARN ------------------------

def _init(host, pid, rank, bus, state):
    return (f"{host}:{pid}:{pid} [0] NCCL INFO ncclCommInitRank comm 0x55dd{pid} rank {rank} nranks 2 "
            f"cudaDev 0 nvmlDev 0 busId {bus} commId 0x6f1a2b3c - Init {state}\n")


def test_two_ranks_of_one_communicator_on_one_gpu_that_never_formed_is_the_launchs_crash(tmp_path):
    v = _decide(tmp_path, _init("gpu-a", 3639, 0, "19000", "START")
                + _init("gpu-a", 3640, 1, "19000", "START")
                + "gpu-a:3640:3640 [0] NCCL INFO init.cc:1876 -> 5\n")
    # (two ranks on one device is the launch's placement, the program's crash even in set-up: s29
    # rules_set_up.MISPLACED, as dev labels read Duplicate GPU 9 of 10)
    assert v.kind == Kind.CRASHED_RANK and v.ranks == [0, 1] and "busId 19000" in v.summary


def test_ranks_on_one_busid_of_two_hosts_or_after_init_completed_are_no_duplicate(tmp_path):
    two_hosts = _decide(tmp_path, _init("gpu-a", 3639, 0, "19000", "START")
                        + _init("gpu-b", 3640, 1, "19000", "START"))
    assert "run on one GPU" not in two_hosts.summary
    (tmp_path / "rank1.log").unlink()
    formed = _decide(tmp_path, "".join(_init("gpu-a", pid, r, "19000", s) for pid, r in ((3639, 0), (3640, 1))
                                       for s in ("START", "COMPLETE")))
    assert "run on one GPU" not in formed.summary
