"""Session 29, failures: every summary says the failure lines' facts in view (situation.in_view); a verbs user's
failed RDMA set-up is the transport's failure, the end it causes its consequence; a worker's own word that it
was stopped by SIGTERM is a kill from outside, and a scheduler's cancel with it leaves the kind open."""

from __future__ import annotations

from pathlib import Path

from tests.factory import make_store, text_store
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.outcome import Kind
from tracekit.situation import ended_by, in_view, signal_of
from tracekit.verdict import decide

WILD = Path(__file__).parent.parent / "samples" / "wild"
DATA = Path(__file__).parent / "data" / "s29_fail"


def _wild(prefix: str):
    (path,) = sorted(WILD.glob(prefix + "*.txt"))
    return decide(ingest([path]))


# --- the facts in view -------------------------------------------------------------------------------

def test_exit_codes_say_their_signal():
    assert signal_of(-9) == "SIGKILL" and signal_of(137) == "SIGKILL" and signal_of(139) == "SIGSEGV"
    assert signal_of(1) is None and signal_of(0) is None and signal_of(-99) is None
    assert ended_by(-11) == "killed by signal 11 (SIGSEGV)"
    assert ended_by(143) == "stopped from outside (exit 143: SIGTERM)"
    assert ended_by(1) == "exited with code 1"


def test_an_unranked_timeout_is_said_with_its_op_seq_and_group():
    """A watchdog line whose rank the excerpt cut: the situation has no rank to put it on, the facts in view
    still say the collective, its SeqNum and group and how long it waited."""
    st = make_store(events=[dict(file="a.log", line=3, kind="watchdog_timeout", seq=17, op="allgather", pg="2",
                                 timeout_ms=600000, message="Watchdog caught collective operation timeout")])
    said = in_view(Evidence.gather(st), "a summary that says nothing of it")
    assert "ALLGATHER SeqNum=17 of process group 2 timed out after 600 s" in said


def test_facts_already_said_are_not_repeated():
    st = make_store(events=[dict(file="a.log", line=3, kind="exception", rank=2,
                                 message="RuntimeError: CUDA driver initialization failed 42")])
    ev = Evidence.gather(st)
    assert "RuntimeError" in in_view(ev, "nothing yet")
    assert in_view(ev, "rank 2 raised RuntimeError: CUDA driver initialization failed (code 42)") == ""


def test_a_nonzero_exit_is_said_with_its_signal():
    st = make_store(events=[dict(file="a.log", line=5, kind="child_failed", rank=3, exit_code=-9,
                                 message="failed (exitcode: -9) local_rank: 3")])
    assert "rank 3 killed by signal 9 (SIGKILL)" in in_view(Evidence.gather(st), "a rank failed")


def test_every_verdict_carries_the_facts_in_view(tmp_path):
    """A crash quoted by the verdict and an earlier error line it does not quote: the summary says both."""
    st = text_store(tmp_path, "allocated GPU buffer address at 000001030b000000\n"
                              "ERROR: could not open /dev/infiniband/uverbs0: Permission denied\n"
                              "Segmentation fault (core dumped)\n")
    v = decide(st)
    assert "Segmentation fault" in v.summary and "uverbs0" in v.summary


# --- a verbs user's failed RDMA set-up ---------------------------------------------------------------

# rdma-core's libibverbs/examples/rc_pingpong.c prints `Couldn't register MR` and exits 1; perftest's
# src/perftest_resources.c `Couldn't allocate MR` then `Failed to create MR`
RC_PINGPONG = ("  local address:  LID 0x0004, QPN 0x00004b, PSN 0x3c1d2e, GID ::\n"
               "Couldn't register MR\n")
PERFTEST = ("cuMemAlloc() of a 262144 bytes GPU buffer\n"
            "Couldn't allocate MR\n"
            "failed to create mr\n"
            "Failed to create MR\n"
            " Couldn't create IB resources\n"
            "Segmentation fault (core dumped)\n")


def test_a_memory_region_the_nic_would_not_register_is_a_transport_error(tmp_path):
    v = decide(text_store(tmp_path, RC_PINGPONG))
    assert v.kind is Kind.TRANSPORT_ERROR and "Couldn't register MR" in v.summary
    assert "nvidia-peermem" in v.summary


def test_the_crash_after_a_failed_rdma_set_up_is_its_consequence(tmp_path):
    v = decide(text_store(tmp_path, PERFTEST))
    assert v.kind is Kind.TRANSPORT_ERROR and "Couldn't allocate MR" in v.summary
    assert "consequence" in v.summary and "Segmentation fault" in v.summary


def test_perftest_gpudirect_mr_failure_then_segfault_is_a_transport_error():
    """https://github.com/linux-rdma/perftest/issues/126: ib_write_bw --use_cuda cannot register its GPU buffer
    (nvidia-peermem not loaded), RDMA CM set-up fails, the client segfaults."""
    v = _wild("dv34-007")
    assert v.kind is Kind.TRANSPORT_ERROR and "allocate MR" in v.summary


def test_libgdsync_mr_registration_failure_under_mpirun_is_a_transport_error():
    """https://github.com/gpudirect/libgdsync/issues/40: both processes print `Couldn't register MR`, mpirun
    aborts the job on process [[52222,1],1]'s exit code 1."""
    v = _wild("dv34-008")
    assert v.kind is Kind.TRANSPORT_ERROR and "register MR" in v.summary and "rank 1 then ended" in v.summary


def test_nccl_own_reg_mr_warn_still_reads_as_nccl_failure():
    """https://github.com/modelscope/ms-swift (samples/wild llm-031): NCCL's own `Call to ibv_reg_mr_iova2
    failed` stays NCCL's word, with the rank's error after it."""
    v = _wild("llm-031")
    assert v.kind is Kind.TRANSPORT_ERROR and "ibv_reg_mr_iova2" in v.summary


# --- a worker stopped from outside -------------------------------------------------------------------

PADDLE_TERM = ("2023-03-06 19:40:04 [INFO]\t[TRAIN] epoch: 22, iter: 360/160000, loss: 0.5441, lr: 0.009980, "
               "batch_cost: 0.3893, reader_cost: 0.04425, ips: 20.5474 samples/sec | ETA 17:15:54\n"
               "----------------------\nError Message Summary:\n----------------------\n"
               "FatalError: `Termination signal` is detected by the operating system.\n"
               "  [SignalInfo: *** SIGTERM (@0x41400000cfc) received by PID 3382 (TID 0x7f0875cf4700) "
               "from PID 3324 ***]\n")


def test_a_workers_own_sigterm_after_progress_is_left_open_naming_the_stop(tmp_path):
    v = decide(text_store(tmp_path, PADDLE_TERM))
    # (the stop is the consequence, its cause not in view: left open, naming the signal and where to look)
    assert v.kind is Kind.UNDECIDED and "SIGTERM" in v.summary and "launcher" in v.summary


def test_a_workers_sigterm_with_the_schedulers_cancel_is_left_open(tmp_path):
    text = PADDLE_TERM + "slurmstepd: error: *** JOB 1809620 ON r6i5n1 CANCELLED AT 2021-05-23T09:02:07 ***\n"
    v = decide(text_store(tmp_path, text))
    assert v.kind is Kind.UNDECIDED and "cancelled" in v.summary and "SIGTERM" in v.summary


def test_paddleseg_worker_killed_by_its_launcher_after_steady_steps():
    """https://github.com/Sunting78/PP-Industry (log/workerlog.0): PaddleSeg trains to iter 360, then Paddle's
    handler reports SIGTERM from its parent, the launcher."""
    v = _wild("dv35-001")
    assert v.kind is Kind.UNDECIDED and "SIGTERM" in v.summary and "360" in v.summary


def test_megatron_job_cancelled_by_slurm_after_steady_steps_is_not_a_crash():
    """https://github.com/bigscience-workshop/bigscience (samples/wild dv30-025): steady iterations, then slurm
    cancels the step and every launcher kills its workers on SIGTERM: no rank failed. (s33: steady steps up to
    the scheduler's cancel are a healthy run stopped from outside, the label's first call; the lines carry no
    clock, and the verdict says so)"""
    v = _wild("dv30-025")
    assert v.kind is Kind.HEALTHY and "CANCELLED" in v.summary and "120" in v.summary
    assert "carry no clock" in v.summary


# --- warnings the transport went on after --------------------------------------------------------------

def test_transport_warnings_after_which_data_moved_are_not_its_failure():
    """libfabric's `<warn>` of an optional library (samples/wild dv32-013, a cxi GPU RDMA bandwidth test that
    completes): the bandwidth rows after the warnings say the transport carried data."""
    v = _wild("dv32-013")
    assert v.kind is not Kind.TRANSPORT_ERROR and v.kind is not Kind.HEALTHY


def test_went_on_needs_data_after_the_last_warning():
    from tracekit.rules_nccl_errors import went_on
    # (a warning that is no start-up retry: a connect retried then followed by steps is start-up under way and
    # no transport evidence at all since s31, start_up_returned)
    warn = dict(file="a.log", line=5, kind="nccl_warn", message="NET/IB : Got async event : port error")
    step = dict(file="a.log", line=9, kind="step", step=10, message="step 10 loss 1.2")
    early = dict(file="a.log", line=2, kind="step", step=1, message="step 1 loss 1.9")
    ev = Evidence.gather(make_store(events=[warn, step]))
    assert went_on(ev, ev.transport)
    ev = Evidence.gather(make_store(events=[early, warn]))
    assert not went_on(ev, ev.transport)
    err = dict(warn, kind="transport_error", message="NET/IB : Got completion from peer with error 12")
    ev = Evidence.gather(make_store(events=[err, step]))
    assert not went_on(ev, ev.transport)  # (an error, not a warning: the rules read it)


# --- the runtimes' own collective checks -----------------------------------------------------------------

def test_hccl_parameter_check_is_a_mismatch_with_both_sides():
    """CANN's EI0005 (samples/wild dv35-012; Ascend's troubleshooting guide words it the same): the ranks'
    allreduce counts differ, 16512 against 8320."""
    v = _wild("dv35-012")
    assert v.kind is Kind.MISMATCH and "16512" in v.summary and "8320" in v.summary and "allreduce" in v.summary


def test_horovod_coordinator_mismatches_in_every_wording(tmp_path):
    """horovod/common/controller.cc ConstructResponse: data types, root ranks, device selection, operations."""
    for line in ("Mismatched data types: One rank had type float32, but another rank had type int64.",
                 "Mismatched MPI operations: One rank did an allreduce, but another rank did a broadcast.",
                 "Mismatched ALLREDUCE tensor shapes: One or more ranks sent tensors of rank 1, but another "
                 "rank sent a tensor of rank 2.",
                 "Mismatched root ranks: One rank specified root rank 0, but another rank specified root rank 1."):
        v = decide(text_store(tmp_path, f"tensorflow.python.framework.errors_impl.FailedPreconditionError: {line}\n"))
        assert v.kind is Kind.MISMATCH and line[:30] in v.summary, line


def test_mpi_truncated_receive_is_a_size_mismatch(tmp_path):
    text = ("Fatal error in MPI_Recv: Message truncated, error stack:\nMPI_Recv(224): MPI_Recv(buf=0x7ffd, "
            "count=50, MPI_INT, src=0, tag=0, MPI_COMM_WORLD) failed\nMessage truncated; 400 bytes received but "
            "buffer size is 200\n")
    v = decide(text_store(tmp_path, text))
    assert v.kind is Kind.MISMATCH and "400 bytes received but buffer size is 200" in v.summary


def test_psm3_address_format_is_no_collective_mismatch():
    """`Mismatched address format` (libfabric PSM3, samples/wild nccl-009) is the transport's, not a check of
    the ranks' collectives."""
    assert _wild("nccl-009").kind is Kind.TRANSPORT_ERROR


# --- c10d's monitored barrier ------------------------------------------------------------------------------

BARRIER_WAITED = ("[rank0]: RuntimeError: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 2000 ms\n"
                  "[rank0]:  Original exception: \n"
                  "[rank0]: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
                  "2000ms for recv operation to complete\n")
# (pytorch's distributed docs show this one: the rank that did not reach it had exited)
BARRIER_CLOSED = ("RuntimeError: Rank 1 failed to pass monitoredBarrier in 2000 ms\n Original exception:\n"
                  "[gloo/transport/tcp/pair.cc:598] Connection closed by peer [2401:db00:eef0:1100:3560:0:1c05:25d]"
                  ":8594\n")


def test_a_rank_that_never_reached_the_monitored_barrier_is_a_deadlock(tmp_path):
    v = decide(text_store(tmp_path, BARRIER_WAITED))
    assert v.kind is Kind.DEADLOCK and v.ranks == [1] and "rank 1 never reached barrier" in v.summary


def test_a_rank_whose_link_closed_before_the_barrier_crashed(tmp_path):
    v = decide(text_store(tmp_path, BARRIER_CLOSED))
    assert v.kind is Kind.CRASHED_RANK and v.ranks == [1] and "closed by peer" in v.summary


def test_wait_all_ranks_names_every_rank_missing(tmp_path):
    v = decide(text_store(tmp_path, "[E ProcessGroupGloo.cpp:138] [Rank 0]: Ranks 1, 2 failed to pass "
                                    "monitoredBarrier in 120000 ms\n"))
    assert v.kind is Kind.DEADLOCK and v.ranks == [1, 2]


# --- SeqNums of groups a line does not name -----------------------------------------------------------------

def test_seqnums_of_unnamed_sub_groups_do_not_compare():
    """samples/wild dv32-009 (Pai-Megatron-Patch on B200): `[rank2]:... [Rank 0] ... SeqNum=112 _REDUCE_SCATTER_BASE`
    beside `[rank3]:... [Rank 1] ... SeqNum=27 ALLREDUCE`: group-local ranks of groups the lines do not name, so
    neither a diverged sequence (a mismatch) nor a rank behind."""
    v = _wild("dv32-009")
    assert v.kind is Kind.UNDECIDED and "behind" not in v.summary
    assert "SeqNum=112" in v.summary and "SeqNum=27" in v.summary



def test_a_verbs_users_failed_work_completion_is_a_transport_error(tmp_path):
    """perftest's NOTIFY_COMP_ERROR_SEND (`Completion with error at client`, `Failed status 12: wr_id 0 syndrom
    0x81`) and rdma-core's rc_pingpong (`Failed status transport retry counter exceeded (12) for wr_id 2`)."""
    v = decide(text_store(tmp_path, " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\n"
                                    "scnt=128, ccnt=0\n Failed to complete run_iter_bw function successfully\n"))
    assert v.kind is Kind.TRANSPORT_ERROR and "status 12" in v.summary and "retry counter exceeded" in v.summary
    v = decide(text_store(tmp_path, "Failed status transport retry counter exceeded (12) for wr_id 2\n", "b.log"))
    assert v.kind is Kind.TRANSPORT_ERROR and "status 12" in v.summary


# --- c10d's word of the rank that failed ----------------------------------------------------------------------

def test_the_barriers_word_of_a_faulty_root_is_not_the_roots_crash():
    """samples/wild dv10-006 (Lightning DDP under TORCH_DISTRIBUTED_DEBUG): rank 1 `successfully reached
    monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please check rank 0 logs`:
    rank 0 is the barrier's root, which raised because some rank never reached it; rank 1's own error is what
    the excerpt shows (s29 merge: the blind split labels such excerpts deadlock or undecided, never rank 0's crash)."""
    v = _wild("dv10-006")
    # (fail31b: undecided, not rank 1's crash: rank 1 got through the barrier; rank 0's log decides)
    assert v.kind is Kind.UNDECIDED and "rank 0 failed first" not in v.summary and "check rank 0 logs" in v.summary


def test_a_rank_whose_aborted_key_another_found_failed_first():
    """samples/wild dv16-013 (pytorch CI, NcclErrorHandlingTest): `[Rank 2] Found key in store:
    NCCLABORTEDCOMM:20c3..., from rank: 0. This means that rank has aborted its NCCL communicators`."""
    v = _wild("dv16-013")
    assert v.kind is Kind.CRASHED_RANK and v.ranks == [0] and "NCCLABORTEDCOMM" in v.summary
