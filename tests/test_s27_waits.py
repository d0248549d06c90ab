"""Session 27, waits (issue 31): decide the failures an expert decides and say the fact: UCX's mlx5
error-completion dump (any syndrome, ``(synd 0x.. vend 0x..``) read as the network's error
(parsers/runtimes/ucx.py NETWORK); steady steps whose last line is an epoch's last step read UNDECIDED,
never HEALTHY (rules_stall.stopped_at_epoch_end: a hang at the epoch's end leaves exactly these lines);
Ascend CANN's log lines decoded, HCCL's failed link between two ranks a transport error naming both
(parsers/runtimes/cann.py)."""

from __future__ import annotations

from pathlib import Path

from factory import text_store

from tracekit.ingest import ingest
from tracekit.outcome import Kind
from tracekit.verdict import decide

WILD = Path(__file__).parent.parent / "samples" / "wild"


# --- UCX's mlx5 error completion, whatever its syndrome ------------------------------------------------------

def test_ucx_local_protection_completion_is_a_transport_error():
    # openucx/ucx#9515: osu_bw D D over rc_mlx5, the NIC fails a SEND with `Local protection` (synd 0x4)
    v = decide(ingest([WILD / "dv28-003-ucx-osu-bw-gpu-rdma-ib-local-protection-error.txt"]))
    assert v.kind is Kind.TRANSPORT_ERROR
    assert "Local protection on mlx5_0:1/IB" in v.summary and "a670n1" in v.summary


def test_ucx_older_completion_dump_without_hw_synd_is_a_transport_error(tmp_path):
    # the older dump's shape (`Remote access error on mlx5_0:1/IB (synd 0x13 vend 0x88)`, quoted from an
    # Open MPI pml=ucx run over IB), under UCX's fatal prefix
    v = decide(text_store(tmp_path, "[grammar001:41122:0:41122] ib_mlx5_log.c:143  Remote access error on "
                                    "mlx5_0:1/IB (synd 0x13 vend 0x88)\n"))
    assert v.kind is Kind.TRANSPORT_ERROR and "Remote access error on mlx5_0:1/IB" in v.summary


def test_ucx_work_request_line_alone_is_no_transport_error(tmp_path):
    # the work request UCX dumps under the error (`RC QP 0x169 wqe[3]: SEND ...`) says no error by itself
    v = decide(text_store(tmp_path, "[a670n1:162239:0:162239] ib_mlx5_log.c:177  RC QP 0x169 wqe[3]: SEND s-- "
                                    "[inl len 10] [va 0x7f1c3c800000 len 1 lkey 0xb5d2]\n"))
    assert v.kind is not Kind.TRANSPORT_ERROR


# --- steady steps that stop at an epoch's last step -----------------------------------------------------------

def _hf_run(last_epoch: float, steps: range, total: int) -> str:
    dicts = "".join(f"{{'loss': 0.0117, 'learning_rate': 6.9e-05, 'epoch': {e}}}\n"
                    for e in (round(last_epoch - 0.02, 2), round(last_epoch - 0.01, 2), last_epoch))
    bars = "".join(f" 33%|###       | {n}/{total} [05:27<10:53,  3.46it/s]\n" for n in steps)
    return dicts + bars


def test_steps_that_end_at_an_epochs_last_step_are_undecided_not_healthy():
    # deepspeedai/deepspeed#4367: the HF Trainer's dicts up to epoch 0.99, the bar at 1128/3384 of 3 epochs,
    # then the run hangs with no error
    v = decide(ingest([WILD / "dv27-011-deepspeed-stuck-at-epoch-boundary.txt"]))
    assert v.kind is Kind.UNDECIDED and v.rule == "stopped_at_epoch_end"
    assert "end of epoch 1 of 3" in v.summary and "step 1128 of 3384" in v.summary


def test_the_end_of_a_later_epoch_is_read_too(tmp_path):
    v = decide(text_store(tmp_path, _hf_run(1.98, range(798, 801), 1200)))  # 800 = 2 x 1200 / 3
    assert v.rule == "stopped_at_epoch_end" and "end of epoch 2 of 3" in v.summary


def test_steps_mid_epoch_are_not_an_epochs_end(tmp_path):
    # the bar one step short of the epoch's end: steady steps, nothing said of an epoch's end
    v = decide(text_store(tmp_path, _hf_run(0.99, range(1125, 1128), 3384)))
    assert v.rule != "stopped_at_epoch_end"


def test_an_epoch_figure_far_from_the_next_epoch_is_no_epochs_end(tmp_path):
    # 1128 of 3384 is a third of the bar, but the trainer says epoch 0.5: the bar does not count epochs
    v = decide(text_store(tmp_path, _hf_run(0.5, range(1126, 1129), 3384)))
    assert v.rule != "stopped_at_epoch_end"


def test_an_error_after_the_steps_is_the_errors_to_say(tmp_path):
    text = _hf_run(0.99, range(1126, 1129), 3384) + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert decide(text_store(tmp_path, text)).rule != "stopped_at_epoch_end"


# --- Ascend CANN's log lines: HCCL's link between two ranks that failed --------------------------------------

def test_hccl_link_that_failed_is_a_transport_error_naming_both_ranks():
    # vllm-project/vllm-ascend#10591: rank 7 could not build its RDMA link to rank 15 for an AllGather
    st = ingest([WILD / "dv24-005-hccl-transport-init-rank7-15.txt"])
    v = decide(st)
    assert v.kind is Kind.TRANSPORT_ERROR
    assert "rank 7 could not build its link to rank 15 (80.5.5.39 -> 80.5.5.67)" in v.summary
    assert sorted(st.ranks["rank"].drop_nulls().unique().to_list()) == [7, 15]


def test_cann_lines_are_known_and_a_task_timeout_is_no_link_failure(tmp_path):
    # the CANN troubleshooting guide's op-execution timeout (hcomm docs, EI0002): a collective's wait, not a
    # link that failed; its lines are CANN's, known
    text = ("[ERROR] HCCL(2111665,all_reduce_test):2025-10-24-11:18:29.499.235 [task_exception_handler.cc:908] "
            "[2111665][TaskExecStage][Timeout][Host]Task run failed, base information is streamID:[2], taskID[21], "
            "tag[AllReduce_127.10.0.1%enp_60000_0_1761275812718970], AlgType(level 0-1-2):[fullmesh-ring-NHR].\n"
            "[ERROR] HCCL(17381,python):2022-12-01-03:02:29.001.054 [network_manager.cc:64]"
            "[hccl-17381-0-1669834948-hccl_world_group][0]call trace: ret -> 7\n")
    st = text_store(tmp_path, text)
    assert decide(st).kind is not Kind.TRANSPORT_ERROR
    assert st.files["unknown"].sum() == 0


def test_hccl_link_that_timed_out_names_both_ranks_and_the_collective():
    # the CANN HCCL troubleshooting guide's sample (tests/data/s27_waits/SOURCES.md): rank 1's link to rank 0
    # for an AllReduce never answered; one verdict line for the failure, not one per unwind line
    v = decide(ingest([Path(__file__).parent / "data" / "s27_waits" / "hccl_link_timeout_rank1_rank0.log"]))
    # (s29: HCCL's `wait socket establish timeout` is its link set-up waiting past HCCL_CONNECT_TIMEOUT: INIT_STALL,
    # as the fresh dev label of the same guide sample says, dv35-006, transport-error accepted)
    assert v.kind is Kind.INIT_STALL
    assert "rank 1 could not build its link to rank 0" in v.summary and "HcomAllReduce" in v.summary
    assert "120 s" in v.summary
