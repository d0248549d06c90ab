"""Which ranks a run says it shows: the run header counts a rank numbered by its local rank as its verdict does,
a rank DeepSpeed's launcher names by its last command is not read as the failed one, and sglang's DP-attention
TP rank is the job's."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from tracekit.cli import main
from tracekit.coverage import coverage
from tracekit.ingest import ingest

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"
DS_LAST = WILD / "dev-035-llamafactory-zero3-local-rank4-return-code-1.txt"  # `--local_rank=4` ... exits
TORCHRUN = WILD / "dv2-030-egovlp-4gpu-local-rank3-exitcode-9.txt"  # `failed (exitcode: -9) local_rank: 3`


def test_the_coverage_says_the_launchers_rank_is_its_last_workers_not_the_failed_ones():
    # deepspeed/launcher/launch.py, sigkill_handler: `logger.error(f"{cmd} exits with return code = {code}")`,
    # `cmd` being the launch loop's last command: the node's last worker, whichever one failed
    text = coverage(ingest([DS_LAST])).describe()
    assert "rank 4 numbered by local rank (rank 4 from the DeepSpeed launcher's last command: its last worker, " \
           "not always the one that ended), no line showing a second node" in text


def test_a_torchrun_local_rank_alone_says_no_launcher_command():
    assert "launcher" not in coverage(ingest([TORCHRUN])).describe()


def test_each_runs_header_counts_the_rank_its_verdict_numbers_by_local_rank(tmp_path):
    # two attempts side by side, each one file whose only rank is a local one: the header said
    # "no rank named" while the verdict under it counted the rank
    for name, src in (("a1", TORCHRUN), ("a2", DS_LAST)):
        (tmp_path / name).mkdir()
        shutil.copy(src, tmp_path / name)
    out = CliRunner().invoke(main, ["verdict", str(tmp_path)]).output
    heads = [ln for ln in out.splitlines() if ln.startswith("run ")]
    assert len(heads) == 2
    assert any("rank 3 numbered by local rank, 1 file(s)" in h for h in heads)
    assert any("rank 4 numbered by local rank, 1 file(s)" in h for h in heads)
    assert "no rank named" not in out


# sglang's scheduler names its process `[{asctime} DP{dp_rank} TP{tp_rank}]` (scheduler.py run_scheduler_process);
# under DP attention dp_rank = tp_rank // (tp_size // dp_size) (layers/dp_attention.py), the TP rank the job's


def test_sglangs_tp_rank_under_dp_attention_is_the_jobs_rank():
    s = ingest([WILD / "dv16-033-sglang-mtp-watchdog-pyspy-dp1-tp3-draft.txt"])  # DP3 TP7, DP1 TP3: k = 2
    from tests.factory import ranks_of
    assert ranks_of(s) == [3, 7]


def test_sglangs_tp_rank_of_plain_data_parallel_replicas_is_not_the_jobs(tmp_path):
    # two replicas, each its own TP group: TP1 of DP0 and TP1 of DP1 are two processes, neither rank 1
    log = tmp_path / "sglang.log"
    log.write_text("[2025-06-05 08:28:03 DP0 TP1] Load weight end. type=LlamaForCausalLM, avail mem=60.1 GB\n"
                   "[2025-06-05 08:28:03 DP1 TP1] Load weight end. type=LlamaForCausalLM, avail mem=60.1 GB\n")
    from tests.factory import ranks_of
    assert ranks_of(ingest([log])) == []
