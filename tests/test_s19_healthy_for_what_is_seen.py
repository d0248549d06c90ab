"""Session 19 (issue 31, "say what the evidence shows"; LABELS.md's healthy: a clean end or steady progress on
every visible rank and no failure): a clean end on the ranks seen, nothing else logged, is HEALTHY for what
is seen, with how many of the world are seen and who left no record; steps to the last line at a steady pace
are healthy with ranks of a known world unseen too; a clean end beside a stack dump, a pending init or a
pace that fell stays UNDECIDED; nccl-tests' own passed check, summed over every rank, decides with no
result row in the paste."""

from pathlib import Path

from tests.factory import make_store
from tracekit import rules_progress
from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def gather(**tables) -> Evidence:
    return Evidence.gather(make_store(**tables))


def test_rank0s_log_of_a_healthy_run_is_healthy_for_what_is_seen_saying_who_left_no_record():
    v = decide(ingest([SAMPLES / "gloo_1x4_healthy" / "rank0.log"]))
    assert v.kind == Kind.HEALTHY and v.rule == "clean_but_partial"
    assert "1 of 4 ranks seen: ranks 1-3 left no record" in v.summary and "global_step/max_steps" in v.summary


def test_a_hung_runs_rank0_log_is_still_no_healthy():
    v = decide(ingest([SAMPLES / "gloo_2x2_deadlock" / "rank0.log"]))
    assert v.kind != Kind.HEALTHY


def test_steady_steps_on_rank_0_of_a_known_world_are_healthy_with_the_others_said():
    ev = [dict(kind="step", file="rank0.log", line=i + 1, step=10 * (i + 1), rank=0,
               message=f"iter {10 * (i + 1)}: loss 2.0, time {t * 1e3:.2f}ms") for i, t in enumerate([4.6, 4.5, 4.5])]
    v = rules_progress.progress_to_the_end(gather(events=ev, ranks=[dict(file="rank0.log", rank=0, world_size=8)]))
    assert v.kind == Kind.HEALTHY and "1 of 8 ranks seen: ranks 1-7 left no record" in v.summary


def test_a_clean_end_beside_a_stack_dump_or_a_pending_init_or_a_pace_that_fell_stays_undecided():
    end = [dict(kind="train_end", file="rank0.log", line=9, rank=0, message="{'train_runtime': 1.0}")]
    world = [dict(file="rank0.log", rank=0, world_size=2)]
    assert rules_progress.clean_but_partial(gather(events=end, ranks=world)).kind == Kind.HEALTHY
    stack = dict(kind="stack", file="rank0.log", line=20, rank=0, thread="MainThread", message="",
                 where="wait (store.py:1)", frames="wait (store.py:1)")
    assert rules_progress.clean_but_partial(gather(events=end + [stack], ranks=world)).kind == Kind.UNDECIDED
    pending = [dict(file="rank0.log", line=1, rank=0, comm="0xa", state="init_start", nranks=2)]
    assert rules_progress.clean_but_partial(gather(events=end, ranks=world, comms=pending)).kind == Kind.UNDECIDED


def test_nccl_tests_own_passed_check_with_no_result_rows_is_healthy_with_its_figure(tmp_path):
    # nccl-tests src/common.cu: `PRINT("# Out of bounds values : %d %s\n", errors[0], ...)` after
    # `MPI_Allreduce(MPI_IN_PLACE, &errors[0], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD)`, then the average
    ok = tmp_path / "ok.log"
    ok.write_text("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 9.78732 \n#\n")
    v = decide(ingest([ok]))
    assert v.kind == Kind.HEALTHY and "Out of bounds values: 0 OK, avg bus bandwidth 9.78732 GB/s" in v.summary
    bad = tmp_path / "bad.log"
    bad.write_text("# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 9.78732 \n#\n")
    assert decide(ingest([bad])).kind != Kind.HEALTHY
