"""Session 28 (issue 31), waits and failures: what a rank's failure, a fabric's error or a report of the
ranks that never joined says, in the words of programs tracekit did not read before.

Real inputs: samples/wild's fresh dev excerpts dv30-027 (superbench: ncclInvalidUsage on three processes, no
set-up and no WARN in view: undecided) and dv31-015 (maxtest: a TPU slice's chip driver error after a worker missed its health
check); tests/data/s28_waits (sources in its SOURCES.md): libmlx5's error-completion dumps, the NVIDIA
driver's Xid lines. The desync reports are written from pytorch's own format strings (TraceUtils.h).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tests.factory import text_store
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.parsers.text import lines_frame
from tracekit.parsers.runtimes import c10d_desync, nvrm, verbs
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

WILD = Path(__file__).parent.parent / "samples" / "wild"
DATA = Path(__file__).parent / "data" / "s28_waits"

WATCHDOG = ("[rank{r}]:[E1207 15:00:00.000000 ProcessGroupNCCL.cpp:1375] [PG 0 Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=100, NumelOut=100, Timeout(ms)=60000) "
            "ran for 60001 milliseconds before timing out.\n")


def _wild(prefix: str) -> Path:
    return next(WILD.glob(prefix + "*.txt"))


def _decide(tmp_path: Path, text: str):
    store = text_store(tmp_path, text)
    return decide(store), store


# --- c10d's desync report: the ranks that never joined, named ---

def test_desync_report_lists_the_ranks_that_finished_the_last_collective_and_never_joined_the_next(tmp_path):
    text = (WATCHDOG.format(r=0, seq=8, op="BROADCAST")
            + "[rank0]:[E1207 15:00:00.000000 ProcessGroupNCCL.cpp:585] [Rank 0] Desync debugging report: \n"
            "\t - [0] Timeout at collective: BROADCAST, #8\n"
            "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
            "\t     [2, 3] finished collective #7, but didn't join collective #8 (count from 1)\n"
            "\t - Snapshot of ranks' latest states:\n"
            "\t   #7 finished ranks:\n"
            "\t     [2, 3] finished ALLREDUCE\n"
            "\t   #8 started ranks:\n"
            "\t     [0, 1] started BROADCAST\n")
    v, store = _decide(tmp_path, text)
    assert v.kind is Kind.DEADLOCK
    assert "ranks 2-3 never joined" in v.summary and "broadcast seq 8" in v.summary
    assert sorted(v.ranks) == [2, 3]
    assert store.files["unknown"].sum() == 0  # (every line of the report is read)


def test_desync_report_of_ranks_that_never_joined_any_collective_names_them_at_the_timed_out_one(tmp_path):
    text = (WATCHDOG.format(r=1, seq=1, op="ALLREDUCE")
            + "[rank1]:[E1207 15:00:00.000000 ProcessGroupNCCL.cpp:585] [Rank 1] Desync debugging report: \n"
            "\t - [1] Timeout at collective: ALLREDUCE, #1\n"
            "\t - To our best knowledge, ranks [3, 5] are the lagging ranks that caused this timeout. "
            "They never joined any collectives\n")
    v, _ = _decide(tmp_path, text)
    assert v.kind is Kind.DEADLOCK
    assert "allreduce seq 1" in v.summary and "ranks 3,5 never joined" in v.summary


def test_desync_report_of_ranks_that_joined_but_did_not_finish_names_no_missing_rank(tmp_path):
    """`[47] joined but didn't finish collective #N`: rank 47 is in the collective (a peer of it, or its own death
    inside it, holds it): no rank_missing, so no DEADLOCK on it."""
    df = lines_frame("x", "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
                          "\t   - [47] joined but didn't finish collective #41207 (count from 1)\n")
    p = c10d_desync.parse(df)
    assert p.claimed.height == 2
    assert p.tables["events"].height == 0


# --- NCCL's own checks' codes: the rank's call, not the network ---

def test_internal_error_whose_last_error_is_nccls_own_check_is_the_ranks_failure(tmp_path):
    text = ("gpu3:11:22 [0] enqueue.cc:1453 NCCL WARN Trying to launch too many work items: max 512, have 513\n"
            "gpu3:11:22 [0] NCCL INFO group.cc:253 -> 3\n"
            "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:3356, internal error - please report this issue to the NCCL developers, NCCL "
            "version 2.21.5\n"
            "ncclInternalError: Internal check failed.\nLast error:\n"
            "Trying to launch too many work items: max 512, have 513\n")
    v, _ = _decide(tmp_path, text)
    assert v.kind is Kind.CRASHED_RANK
    assert "too many work items" in v.summary and "not the network" in v.summary


def test_invalid_usage_whose_last_error_is_a_peer_out_of_range_is_the_ranks_failure(tmp_path):
    text = ("[rank4]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "NCCLUtils.hpp:275, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.20.5\n"
            "[rank4]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
            "[rank4]: Last error:\n[rank4]: Error : Invalid peer 8, nRanks 8\n")
    v, _ = _decide(tmp_path, text)
    assert v.kind is Kind.CRASHED_RANK
    assert "rank 4" in v.summary and "Invalid peer 8" in v.summary


def test_internal_error_whose_last_error_is_a_closed_connection_stays_the_networks(tmp_path):
    """The same code where NCCL's last error is a socket's: not the rank's own check (no CRASHED_RANK from it)."""
    text = ("host2:777:889 [0] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer 10.2.0.3<40219>\n"
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:"
            "1970, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5\n"
            "ncclInternalError: Internal check failed.\nLast error:\n"
            "Net : Connection closed by remote peer 10.2.0.3<40219>\n")
    v, _ = _decide(tmp_path, text)
    assert v.kind is not Kind.CRASHED_RANK


def test_aws_ofi_nccl_completion_error_is_the_networks(tmp_path):
    """aws-ofi-nccl (the EFA plugin) is NCCL's network: its WARN of a failed request is a transport error, never
    "a WARN of NCCL's own code"."""
    text = ("ip-10-0-1-5:4321:4500 [3] nccl_net_ofi_rdma.c:1810 NCCL WARN NET/OFI Request 0x7f4c3c0 completed with "
            "error. RC: 21. Error: 5 (Input/output error). Completed length: 0, Request: { dev: 1, size: 1048576, "
            "state: CREATED, type: SEND }\n"
            "ip-10-0-1-5:4321:4500 [3] NCCL INFO proxy.cc:1345 -> 6\n"
            "[rank3]:[E1207 13:00:00.000000 ProcessGroupNCCL.cpp:1592] [PG 0 (default_pg) Rank 3] Process group "
            "watchdog thread terminated with exception: NCCL error: remote process exited or there was a network "
            "error, NCCL version 2.18.5\n")
    v, _ = _decide(tmp_path, text)
    assert v.kind is Kind.TRANSPORT_ERROR
    assert "NET/OFI" in v.summary and "rank 3" in v.summary


def test_dv30_027_invalid_usage_with_no_call_and_no_warn_stays_undecided():
    """ncclInvalidUsage with no collective call named and no NCCL WARN: NCCL returns it for ranks that
    disagree too (versions, sizes, the world size), so only the WARN decides (tests/test_failures_refused's
    rule, kept at the s28 merge over a CRASHED_RANK reading of dv30-027); the summary says what it can be."""
    v = decide(ingest([_wild("dv30-027")]))
    assert v.kind is Kind.UNDECIDED
    assert "ncclInvalidUsage" in v.summary and "ranks that disagree" in v.summary and "WARN" in v.summary


# --- a GPU's or a TPU's own failure ---

def test_xid_79_in_the_journal_is_the_gpus_failure():
    store = ingest([DATA / "xid79_journal.txt"])
    v = decide(store)
    assert v.kind is Kind.CRASHED_RANK
    assert "Xid 79" in v.summary and "fallen off the bus" in v.summary and "0000:01:00" in v.summary
    assert store.files["unknown"].sum() == 0


def test_xid_31_relayed_by_a_monitor_is_a_crash_of_its_pid():
    df = lines_frame("x", (DATA / "xid31_mmu.txt").read_text())
    ev = nvrm.parse(df).tables["events"]
    assert ev["kind"].to_list() == [EventKind.CRASH]
    assert ev["pid"].to_list() == [79749] and "page fault" in ev["message"][0]


def test_xid_74_is_an_nvlink_transport_error_and_45_no_event():
    df = lines_frame("x", "[Mon Dec  7 06:00:00 2026] NVRM: Xid (PCI:0000:ca:00): 74, pid=2345, name=python, "
                          "NVLink: fatal error detected on link 3\n"
                          "[Mon Dec  7 06:00:00 2026] NVRM: Xid (PCI:0000:ca:00): 45, pid=2345, name=python, "
                          "Ch 00000010\n")
    p = nvrm.parse(df)
    assert p.tables["events"]["kind"].to_list() == [EventKind.TRANSPORT_ERROR]
    assert p.claimed.height == 2


def test_a_gpus_xid_before_a_watchdog_timeout_is_the_cause(tmp_path):
    text = ("[Mon Dec  7 06:00:00 2026] NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, GPU has "
            "fallen off the bus.\n" + WATCHDOG.format(r=3, seq=77, op="ALLREDUCE"))
    v, _ = _decide(tmp_path, text)
    assert v.kind is Kind.CRASHED_RANK and "Xid 79" in v.summary


def test_dv31_015_tpu_slice_failure_names_the_worker_that_missed_its_health_check():
    v = decide(ingest([_wild("dv31-015")]))
    assert v.kind is Kind.CRASHED_RANK
    assert "health check" in v.summary and "-38" in v.summary


# --- RDMA work that failed outside NCCL ---

def test_mlx5_error_completion_dump_is_a_transport_error_with_its_syndrome():
    store = ingest([DATA / "mlx5_rnr_dump.txt"])
    v = decide(store)
    assert v.kind is Kind.TRANSPORT_ERROR
    assert "syndrome 0x16" in v.summary and "RNR retry" in v.summary and "n136-096-142" in v.summary


def test_mlx5_dump_of_a_remote_access_error_under_dapl():
    df = lines_frame("x", (DATA / "mlx5_dapl_dump.txt").read_text())
    p = verbs.parse(df)
    ev = p.tables["events"]
    assert ev.height == 1 and "syndrome 0x13 (remote access error)" in ev["message"][0]
    assert p.claimed.height == 5  # (the head and its four hex lines)


def test_open_mpi_openib_retry_exceeded_is_a_transport_error_naming_both_hosts(tmp_path):
    text = ("[[12345,1],3][btl_openib_component.c:3644:handle_wc] from node1 to: node2 error polling LP CQ with "
            "status RETRY EXCEEDED ERROR status number 12 for wr_id 1234567 opcode 0  vendor error 129 qp_idx 3\n")
    v, _ = _decide(tmp_path, text)
    assert v.kind is Kind.TRANSPORT_ERROR
    assert "node1" in v.summary and "node2" in v.summary and "retry exceeded" in v.summary


def test_hex_lines_with_no_mlx5_head_are_not_claimed():
    df = lines_frame("x", "00000000 00008716 0a001f8e 000027d2\n")
    assert not verbs.parse(df).found


def test_evidence_transport_holds_the_mlx5_dump():
    ev = Evidence.gather(ingest([DATA / "mlx5_rnr_dump.txt"]))
    assert ev.transport.filter(pl.col("where") == "libmlx5").height == 1


# --- the cause inside a wrapper, and a process of the node that ended ---

def test_ray_task_error_says_the_error_raised_inside_the_worker(tmp_path):
    text = ("ray.exceptions.RayTaskError(RuntimeError): ray::_RayTrainWorker__execute.get_next() (pid=4567, "
            "ip=10.0.0.5, actor_id=abcd, repr=<ray.train._internal.worker_group.RayTrainWorker object at 0x7f00>)\n"
            '  File "/home/ray/anaconda3/lib/python3.10/site-packages/ray/train/_internal/worker_group.py", line 33, '
            "in __execute\n    raise skipped from exception_cause(skipped)\n"
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and "
            "cuda:0!\n")
    v, _ = _decide(tmp_path, text)
    assert v.kind is Kind.CRASHED_RANK
    assert "the error raised inside it: RuntimeError: Expected all tensors to be on the same device" in v.summary


def test_dataloader_worker_error_says_the_original_error(tmp_path):
    text = ("[rank6]: Traceback (most recent call last):\n"
            '[rank6]:   File "train.py", line 300, in <module>\n[rank6]:     for batch in loader:\n'
            "[rank6]: RuntimeError: Caught RuntimeError in DataLoader worker process 3.\n"
            "[rank6]: Original Traceback (most recent call last):\n"
            '[rank6]:   File "/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py", line 308, in '
            "_worker_loop\n[rank6]:     data = fetcher.fetch(index)\n"
            "[rank6]: RuntimeError: stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0 and "
            "[3, 256, 256] at entry 5\n")
    v, _ = _decide(tmp_path, text)
    assert v.kind is Kind.CRASHED_RANK and "rank 6" in v.summary
    assert "stack expects each tensor to be equal size" in v.summary


def test_a_plain_exception_says_no_inner_error(tmp_path):
    v, _ = _decide(tmp_path, "[rank3]: Traceback (most recent call last):\n"
                             '[rank3]:   File "t.py", line 1, in <module>\n'
                             "[rank3]: ValueError: Expected input batch_size (16) to match target batch_size (8).\n"
                             "[rank3]: KeyError: 'later'\n")
    assert v.kind is Kind.CRASHED_RANK and "raised inside" not in v.summary


PROXY_CLOSED = "{host}:{pid}:2222 [2] proxy.cc:1436 NCCL WARN [Service thread] Connection closed by localRank 3\n"
REMOTE_EXITED = ("[rank2]:[E1207 10:00:00.000000 ProcessGroupNCCL.cpp:1592] [PG 0 Rank 2] Process group watchdog "
                 "thread terminated with exception: NCCL error: remote process exited or there was a network error, "
                 "NCCL version 2.21.5\n")


def test_proxy_losing_a_local_rank_is_that_process_end_not_the_network(tmp_path):
    v, _ = _decide(tmp_path, PROXY_CLOSED.format(host="node1", pid=1111) + REMOTE_EXITED)
    assert v.kind is Kind.UNDECIDED
    assert "local rank 3 on node1 ended first" in v.summary and "no network" in v.summary


def test_proxy_losing_a_local_rank_alone_is_no_transport_error(tmp_path):
    v, _ = _decide(tmp_path, PROXY_CLOSED.format(host="node1", pid=1111))
    assert v.kind is not Kind.TRANSPORT_ERROR and "local rank 3" in v.summary


def test_several_processes_losing_one_local_rank_say_it_crashed(tmp_path):
    text = "".join(PROXY_CLOSED.format(host="node1", pid=p) for p in (1111, 1112, 1113)) + REMOTE_EXITED
    v, _ = _decide(tmp_path, text)
    assert v.kind is Kind.CRASHED_RANK and "local rank 3 on node1 ended first" in v.summary


# --- stacks of every rank, each under its launcher's prefix ---

def test_pyspy_dumps_under_rank_prefixes_name_the_rank_outside_the_collective(tmp_path):
    dump = ""
    for r, frames in ((0, ["all_reduce (torch/distributed/distributed_c10d.py:2288)", "train_step (train.py:500)"]),
                      (1, ["all_reduce (torch/distributed/distributed_c10d.py:2288)", "train_step (train.py:500)"]),
                      (2, ["join (threading.py:1096)", "save_checkpoint (megatron/checkpointing.py:400)"])):
        dump += (f"[rank{r}]: Process {2001 + r}: /usr/bin/python -u train.py\n"
                 f"[rank{r}]: Python v3.10.12 (/usr/bin/python3.10)\n"
                 f"[rank{r}]: Thread {2001 + r} (idle): \"MainThread\"\n"
                 + "".join(f"[rank{r}]:     {f}\n" for f in frames))
    v, _ = _decide(tmp_path, dump)
    assert v.kind is Kind.DEADLOCK
    assert "while rank 2 is elsewhere: save_checkpoint" in v.summary and "(ranks 0-1)" in v.summary
    assert list(v.ranks) == [2]


def test_nccl_ras_dead_process_is_said_with_its_communicators_rank():
    v = decide(ingest([DATA / "ras_dead_and_behind.txt"]))
    assert v.kind is Kind.CRASHED_RANK
    assert "Process 3456 on node 10.0.0.3" in v.summary and "communicator's rank 21" in v.summary
