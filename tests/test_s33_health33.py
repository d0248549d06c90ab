"""Session 33, health33: program output lines read that were counted unknown, and one shared helper.

Covers parsers/work_done.FINAL_EVAL (Megatron's evaluation after its training loop returned, ``validation loss
at iteration 2 on 8-sample draw from validation set | lm loss value: ...``, ``... on test set``: a
``program_end`` of ``where="result"``; the loop's own evaluation, ``validation loss at iteration 100 |``, is
not), work_done.ENDED_WELL's script echo of an exit status (``RC=0 RUN_ID=...``, ``EXIT_CODE=0``: an end;
``RC=250`` is not), work_done.RANK_DONE's ``RANK 4: COMPLETE!``, trainer.STEP_STARTED (``RANK 22: running step
1/10`` under srun's tag: a ``step`` of rank 22, no ``max_steps``), and file_ranks.ranks_only_in (the ranks a
rankless line covers, shared by clean_but_partial, teardown and steady_unnamed). Lines are quoted from dev
excerpts (dv48-007 Megatron-DeepSpeed smoke run, dv32-001 Megatron-Bridge, dv48-008, dv32-003 Perlmutter
trials, dv37-015 BigScience Megatron).
"""

from __future__ import annotations

from tests.factory import events_of, text_store
from tracekit import file_ranks
from tracekit.evidence import Evidence
from tracekit.ingest import unknown_lines
from tracekit.schema import EventKind

#: dv48-007: the iteration at its total, Megatron's end, its evaluation after the loop, the script's RC=0
MEGATRON_END = (
    "192.168.205.202:  iteration        2/       2 | consumed samples:           16 | consumed tokens:        "
    "32768 | elapsed time per iteration (ms): 66348.7 | learning rate: 1.000E-06 | global batch size:     8 | "
    "lm loss: 1.263726E+01 | loss scale: 1.0 | grad norm: 27.900 |\n"
    "localhost: Evaluating iter 1/1\n"
    "192.168.205.202:  validation loss at iteration 2 on 8-sample draw from validation set | lm loss value: "
    "1.237472E+01 | lm loss PPL: 2.367400E+05 | \n"
    "RC=0 RUN_ID=dual8_tp4pp1dp2_smoke990_20260331_163556_DGX2-1\n")

#: dv32-001 (Megatron-Bridge): the evaluation on the test set after the loop
TEST_SET = (" validation loss at iteration 10 on test set | lm loss value: 9.625707E+00 | lm loss PPL: "
            "1.514926E+04 |\n")

#: dv37-015: the loop's own evaluation at iteration 100 (the loop goes on after it)
IN_LOOP = " validation loss at iteration 100 | lm loss value: 8.017406E+00 | lm loss PPL: 3.033300E+03 | \n"

#: dv48-008: the script's echo of a failed run's exit status
RC_FAILED = "RC=250 RUN_ID=dual8_tp4pp1dp2_smoke990_20260328_161716_DGX2-1\n"

#: dv32-003: steps said started under srun's rank tag, then each rank's end
TRIAL = """22: RANK 22: running step 1/10
17: RANK 17: running step 1/10
22: RANK 22: running step 2/10
17: RANK 17: running step 2/10
 4: RANK 4: COMPLETE!
16: RANK 16: COMPLETE!
"""


def _ends(tmp_path, text):
    return events_of(text_store(tmp_path, text), EventKind.PROGRAM_END)


def test_evaluation_after_the_loop_is_an_end_with_its_figures(tmp_path):
    ends = _ends(tmp_path, MEGATRON_END)
    said = ends["message"].to_list()
    assert any("8-sample draw from validation set" in m for m in said)
    assert ends.filter(ends["message"].str.contains("validation loss"))["where"].to_list() == ["result"]
    assert any(m.startswith("RC=0") for m in said)
    unknown = unknown_lines([tmp_path / "job.log"])
    assert unknown.filter(unknown["raw"].str.contains("validation loss|RC=0")).height == 0


def test_evaluation_on_the_test_set_is_an_end(tmp_path):
    assert _ends(tmp_path, TEST_SET)["message"].str.contains("on test set").any()


def test_the_loops_own_evaluation_is_no_end(tmp_path):
    assert _ends(tmp_path, IN_LOOP).height == 0


def test_a_failed_exit_status_is_no_end(tmp_path):
    assert _ends(tmp_path, RC_FAILED).height == 0


def test_rank_complete_and_step_started_name_their_rank(tmp_path):
    store = text_store(tmp_path, TRIAL)
    ends = events_of(store, EventKind.PROGRAM_END)
    assert sorted(ends["rank"].to_list()) == [4, 16]
    steps = events_of(store, EventKind.STEP)
    assert sorted(set(zip(steps["rank"].to_list(), steps["step"].to_list()))) == [(17, 1), (17, 2), (22, 1),
                                                                                  (22, 2)]
    assert "max_steps" not in steps.columns or steps["max_steps"].is_null().all()
    assert unknown_lines([tmp_path / "job.log"]).height == 0


def test_ranks_only_in_covers_the_ranks_seen_only_there(tmp_path):
    ev = Evidence(text_store(tmp_path, TRIAL, "trial.log"))
    files = set(ev.store.ranks["file"].to_list())
    assert file_ranks.ranks_only_in(ev, files) == set(ev.store.ranks["rank"].drop_nulls().to_list())
    assert file_ranks.ranks_only_in(ev, set()) == set()
    assert file_ranks.ranks_only_in(ev, {"elsewhere.log"}) == set()
    assert not file_ranks.names_no_rank(ev)
