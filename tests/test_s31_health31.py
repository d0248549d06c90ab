"""Session 31, health31: healthy program output read as undecided (issue 31). Covers:

- parsers/loop_ends.py: the last epoch's counters at their totals (``Epoch 3/3: 100%|...| 469/469``,
  ``Epoch [2/2], Step [600/600]``) are the loop's end, one epoch's bar at its total is not; a bare end word on
  the last line (``Done.``, ``Finished!``) after progress lines is the program's end, after a download or a
  set-up (torchvision's ``Processing...`` then ``Done!``, samples/wild/dv17-005) it is not;
- parsers/work_done.py: a finish sentence after the rank the script names first (``Rank 0: Test passed``),
  a test's or the best figure over the run (``Test accuracy: 97.8%``, ``Best val acc: 0.92``, the CIFAR-10
  tutorial's ``Accuracy of the network on the 10000 test images: 54 %``);
- progress_figures.cumulative: an elapsed time that counts up on each rank's interleaved lines is no time
  per step (no SLOW_PROGRESS from ``[rank1]: iter 10/100 elapsed 5.2s`` ... ``15.3s``).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.factory import events_of, text_store
from tracekit.progress_figures import cumulative
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

WILD = Path(__file__).parent.parent / "samples" / "wild"
#: tqdm's bars as a training script prints one per epoch (tqdm/std.py format_meter's `{l_bar}{bar}| {n_fmt}/
#: {total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]`, with `desc=f"Epoch {e}/{n}"`)
BARS = ("Epoch 1/3: 100%|██████████| 469/469 [00:21<00:00, 21.8it/s]\n"
        "Epoch 2/3: 100%|██████████| 469/469 [00:20<00:00, 22.9it/s]\n"
        "Epoch 3/3: 100%|██████████| 469/469 [00:20<00:00, 22.8it/s]\n")
INIT = ("gpu1:1001:1050 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1234 "
        "- Init COMPLETE\n"
        "gpu1:1002:1051 [1] NCCL INFO comm 0x55e0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 3b000 commId 0x1234 "
        "- Init COMPLETE\n")


def _ends(store) -> pl.DataFrame:
    return events_of(store, EventKind.PROGRAM_END)


def test_the_last_epochs_bar_at_its_total_is_the_loops_end_and_healthy(tmp_path):
    s = text_store(tmp_path, INIT + BARS)
    ends = _ends(s)
    assert ends.height == 1 and "the last epoch (3/3) completed its 469 steps" in ends["message"][0]
    v = decide(s)
    assert v.kind == Kind.HEALTHY and "3/3" in v.summary


def test_an_epochs_bar_at_its_total_before_the_last_epoch_is_no_end(tmp_path):
    s = text_store(tmp_path, INIT + "".join(BARS.splitlines(keepends=True)[:2]))
    assert not _ends(s).height
    assert decide(s).kind != Kind.HEALTHY  # (a job that stops at an epoch's end may hang there)


def test_epoch_and_step_counters_both_at_their_totals_end_the_loop(tmp_path):
    text = ("Epoch [1/2], Step [100/600], Loss: 0.2154\nEpoch [2/2], Step [500/600], Loss: 0.0712\n"
            "Epoch [2/2], Step [600/600], Loss: 0.0567\n")
    ends = _ends(text_store(tmp_path, text))
    assert ends["line"].to_list() == [3]


@pytest.mark.parametrize("last", ["Done.", "Finished!", "All done"])
def test_a_bare_end_word_after_progress_lines_is_the_programs_end(tmp_path, last):
    s = text_store(tmp_path, "Epoch 1: train_loss=0.52\nEpoch 2: train_loss=0.41\nEpoch 3: train_loss=0.37\n"
                   + last + "\n")
    ends = _ends(s)
    assert ends["line"].to_list() == [4] and ends["where"].to_list() == ["program"]
    assert decide(s).kind == Kind.HEALTHY


def test_a_bare_end_word_after_a_download_is_no_end(tmp_path):
    # (torchvision's MNIST download, as samples/wild/dv17-005 shows it, with its bar)
    text = ("Downloading http://yann.lecun.com/exdb/mnist/train-images-idx3-ubyte.gz\n"
            "100%|██████████| 9912422/9912422 [00:01<00:00, 8912345.12it/s]\n"
            "Extracting ./data/MNIST/raw/train-images-idx3-ubyte.gz to ./data/MNIST/raw\n"
            "Processing...\nDone!\n")
    s = text_store(tmp_path, text)
    assert not _ends(s).height and decide(s).kind == Kind.UNDECIDED
    # (the real excerpt: a job silent after its download)
    assert not _ends(text_store(tmp_path, next(WILD.glob("dv17-005-*.txt")).read_text(), "b.log")).height


def test_a_bare_end_word_that_is_not_the_last_line_is_no_end(tmp_path):
    s = text_store(tmp_path, "Epoch 1: train_loss=0.52\nEpoch 2: train_loss=0.41\nDone\nEpoch 3: train_loss=0.3\n")
    assert not _ends(s).height


def test_a_finish_sentence_after_the_rank_it_names_is_that_ranks_end(tmp_path):
    s = text_store(tmp_path, "NCCL version 2.21.5+cuda12.4\nRank 0: Test passed\nRank 1: Test passed\n")
    ends = _ends(s)
    assert sorted(ends["rank"].to_list()) == [0, 1]
    v = decide(s)
    assert v.kind == Kind.HEALTHY and "ranks 0-1 each ended cleanly" in v.summary
    # (a set-up's end after the rank stays none)
    assert not _ends(text_store(tmp_path, "Rank 0: init done\nRank 1: init done\n", "b.log")).height


@pytest.mark.parametrize("line", ["Test accuracy: 97.8%", "Best val acc: 0.92",
                                  "Accuracy of the network on the 10000 test images: 54 %"])
def test_a_test_or_best_figure_over_the_run_is_a_result(tmp_path, line):
    s = text_store(tmp_path, "Epoch 1 | train loss 0.41\nEpoch 2 | train loss 0.33\n" + line + "\n")
    ends = _ends(s)
    assert ends["where"].to_list() == ["result"] and line in ends["message"][0]


def test_a_test_figure_printed_each_epoch_is_no_result(tmp_path):
    s = text_store(tmp_path, "Epoch 1 | test acc: 0.88\nEpoch 2 | test acc: 0.90\n")
    assert not _ends(s).height


def test_each_ranks_elapsed_time_counting_up_is_no_time_per_step():
    f = pl.DataFrame({"rank": [1, 0, 1, 0, 1, 0], "step": [10, 10, 20, 20, 30, 30],
                      "took": [5.2, 5.1, 10.3, 10.2, 15.4, 15.3]})
    assert cumulative(f)
    # (one rank's time per step that creeps up is no timer since the start)
    assert not cumulative(f.with_columns(pl.Series("took", [5.2, 5.1, 5.4, 5.3, 12.0, 11.9])))


def test_interleaved_ranks_elapsed_times_are_not_read_as_a_slowing_run(tmp_path):
    text = ("[rank1]: iter 10/100 elapsed 5.2s\n[rank0]: iter 10/100 elapsed 5.1s\n"
            "[rank1]: iter 20/100 elapsed 10.3s\n[rank0]: iter 20/100 elapsed 10.2s\n"
            "[rank1]: iter 30/100 elapsed 15.4s\n[rank0]: iter 30/100 elapsed 15.3s\n")
    v = decide(text_store(tmp_path, text))
    assert v.kind == Kind.HEALTHY


def test_a_progress_line_that_names_its_rank_first_is_that_ranks_step(tmp_path):
    s = text_store(tmp_path, "rank 0 step 1 loss 2.1\nrank 1 step 1 loss 2.1\nRank 0, epoch 0, step 2, loss 1.9\n"
                   "Rank 1, epoch 0, step 2, loss 1.9\n")
    steps = events_of(s, EventKind.STEP).sort("line")
    assert steps["rank"].to_list() == [0, 1, 0, 1]


def test_progress_on_the_ranks_seen_names_every_rank_whose_lines_advance(tmp_path):
    v = decide(text_store(tmp_path, "Rank 0, epoch 0, step 0, loss 2.302\nRank 1, epoch 0, step 0, loss 2.301\n"
                          "Rank 0, epoch 0, step 50, loss 1.201\nRank 1, epoch 0, step 50, loss 1.198\n"))
    assert v.kind == Kind.HEALTHY and "ranks 0-1's lines each advanced" in v.summary
