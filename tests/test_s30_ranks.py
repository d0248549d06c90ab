"""Rank identity (issue 31 item 4), session 30: srun's ``--label`` task prefix padded to the width of the job's
largest task id (` 8: ` beside `12: `, parsers/prefixes.py; a pretty-printed dict's ` 1: ` beside ` 10: ` is no
task, parsers/slurm.py), Megatron-LM's per-rank memory report wherever
the prints of several ranks land on one line (parsers/rank_words.py), and sglang's scheduler tag `TPn` under
a Ray actor's prefix, an RL job's rollout engine whose TP rank is the engine's own (parsers/launcher.py), and
NeMo-RL's Ray actor named by its worker's rank (`(MegatronPolicyWorker[rank=8] pid=..)`, parsers/prefixes.py).
Real dev excerpts and real lines from them; each names the ranks the lines attribute, and none an engine's
group-local number."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from tests.factory import file_ranks, text_ranks

WILD = ROOT / "samples" / "wild"


@pytest.mark.parametrize("excerpt, want", [
    # srun -l of 32 tasks: ` 0: RANK 0: running step 1/10` .. `31: RANK 31: ...` (ranks 0-9 padded)
    ("dv32-003-perlmutter-ddp-trial-hang-step1-ranks-0-25-missing.txt", list(range(32))),
    # srun -l of 16 tasks over NCCL INFO lines (` 4: cgpu08:14067:14648 [4] NCCL INFO ...`): as before
    ("dv33-001-srun-16rank-ib-completion-error-12-timelimit.txt", list(range(16))),
    # Megatron's `[Rank N] (after 10 iterations) memory (MB) | ...` of 128 ranks, three of them mid-line
    ("dv30-025-bigscience-megatron-gpt2-n32-tp4-pp32-steady-then-scancel.txt", list(range(128))),
    # slime's rollout engines: `(SGLangEngine pid=516714) [2026-01-27 06:50:01 TP4] Cache flushed successfully!`
    ("dev-031-slime-sglang-rollout-finished.txt", []),
    # sglang's own scheduler lines with no Ray prefix still name the TP rank (dv12-023: `[.. TP0]`, `[.. TP1]`)
    ("dv12-023-sglang-docker-compose-2x4090-tp2-startup-no-p2p.txt", [0, 1]),
    # NeMo-RL's Ray worker named by its rank: `(MegatronPolicyWorker[rank=8] pid=3294808, ip=10.109.19.209)`
    ("dv42-004-megatron-worker-rank8-stack.txt", [8]),
])
def test_dev_excerpts_count_the_ranks_their_lines_attribute(excerpt, want):
    assert file_ranks(WILD / excerpt) == want


def test_srun_label_padded_task_ids_are_tasks(tmp_path):
    # (lines of dv32-003: srun pads task ids below 10 with a blank when the job has 10 or more tasks)
    text = "".join(f"{i:>2}: RANK {i}: running step 1/10\n" for i in (3, 11, 0, 25, 7))
    assert text_ranks(tmp_path, text) == [0, 3, 7, 11, 25]


def test_padded_numbers_of_unequal_width_are_no_srun_tasks(tmp_path):
    # a pretty-printed dict (pprint: one blank before each key, whatever its width) is no srun --label output
    text = "{0: 'node-a',\n" + "".join(f" {i}: 'node-{i}',\n" for i in range(1, 12)) + "}\n"
    assert text_ranks(tmp_path, text) == []


def test_megatron_memory_report_mid_line_names_its_writer(tmp_path):
    # (dv37-015's line 8: two ranks' prints on one line)
    text = ("[Rank 7] (after 20 iterations) memory (MB) | allocated: 21633.0859375 | max allocated: "
            "24432.009765625 | reserved: 29316.0 | max reserved: 29316.0[Rank 6] (after 20 iterations) memory "
            "(MB) | allocated: 21633.0859375 | max allocated: 24432.009765625 | reserved: 29316.0 | max reserved: "
            "29316.0\n")
    assert text_ranks(tmp_path, text) == [6, 7]


def test_sglang_tp_tag_under_ray_actor_is_no_global_rank(tmp_path):
    engine = ("(SGLangEngine pid=516714) [2026-01-27 06:50:01 TP4] Cache flushed successfully!\n"
              "(SGLangEngine pid=516714) [2026-01-27 06:50:01 TP7] Cache flushed successfully!\n")
    assert text_ranks(tmp_path, engine) == []
    # the same tag without the actor's prefix: the server's own scheduler, its TP rank the global one
    assert text_ranks(tmp_path, engine.replace("(SGLangEngine pid=516714) ", "")) == [4, 7]


def test_ray_actor_named_by_its_rank_is_that_rank(tmp_path):
    # (dv42-004's prefix; the actor's name alone, no rank, names none)
    line = ("(MegatronPolicyWorker[rank=8] pid=3294808, ip=10.109.19.209)   File \"/opt/ray_venvs/x.py\", "
            "line 1775, in _call_impl\n")
    assert text_ranks(tmp_path, line) == [8]
    assert text_ranks(tmp_path, line.replace("[rank=8]", "")) == []
