"""Session 21 (issue 31), branch mix: a verdict keeps its cause when ordinary lines come with it.

A real log holds progress before its failure. HEALTHY reads progress; a failure's words after the last
progress line (a line no parser decodes, of a crash, a transport's failure, a wait or an error, with no
step, progress or end after it in its file) say the run did not go on from there: the rules that read
such words decide (`rules_salient.said_by_telling_lines`), else UNDECIDED, never HEALTHY over them
(`rules_progress.failed_after_progress`, applied in `verdict.decide`).

Each case is two real dev excerpts written as one log: a healthy excerpt's progress lines, then an
excerpt whose failure is read from its words (benchmarks/mix_invariance.py's ``before`` variant).
"""

from __future__ import annotations

from pathlib import Path

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"
# a healthy run's progress: fairseq's tqdm bars of 8 GPUs (label: healthy), HF Trainer's loss dicts (healthy)
FAIRSEQ_BARS = "dev-050-fairseq-8gpu-tqdm-3s-per-it.txt"
LOSS_DICTS = "dv15-037-opensloth-ipv6-fix-trainer-loss-dicts-epoch-0p72-0p91.txt"


def _progress_then(tmp_path: Path, progress: str, failure: str):
    lines = (WILD / progress).read_text().splitlines() + (WILD / failure).read_text().splitlines()
    log = tmp_path / "mixed.log"
    log.write_text("\n".join(lines) + "\n")
    return decide(ingest([log]))


def test_transport_failure_after_progress_is_said_not_healthy(tmp_path):
    # NVSHMEM's IBGDA transport failing (`Unable to create ah.`, `ibgda_rc_init2rtr failed`) after steps
    v = _progress_then(tmp_path, FAIRSEQ_BARS, "dv13-029-deepep-l20-ibgda-unable-to-create-ah-rc-init2rtr.txt")
    assert v.kind is Kind.TRANSPORT_ERROR
    assert "Unable to create ah" in v.summary


def test_start_up_failure_after_progress_is_not_healthy(tmp_path):
    # kubelet's `Back-off restarting failed container init-pytorch` after a run's loss dicts: the last word
    # is a failure; nothing decoded says which rank or why, so UNDECIDED quoting it
    v = _progress_then(tmp_path, LOSS_DICTS, "dv9-013-kubeflow-trainer-worker-init-pytorch-backoff.txt")
    assert v.kind is Kind.UNDECIDED
    assert "after the last progress line" in v.summary
    assert "Back-off restarting failed container" in v.summary


def test_unplaced_workers_after_progress_are_not_healthy(tmp_path):
    # Ray's autoscaler: `Error: No available node types can fulfill resource request` after steps
    v = _progress_then(tmp_path, FAIRSEQ_BARS, "dv14-041-vllm-ray-tp16-placement-group-wait-1270s.txt")
    assert v.kind is not Kind.HEALTHY
    assert "No available node types" in v.summary

