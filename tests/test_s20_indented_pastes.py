"""A paste indented as a whole (a code block inside a list item, a quoted mail, a tab before every line)
reads as its lines do (parsers/text._dedent); a traceback's tail, whose frames sit two blanks in as Python
prints them, keeps its frames."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracekit.ingest import ingest
from tracekit.verdict import decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"
# dev excerpts whose verdict rests on lines at the margin: a spawn's ncclInvalidArgument at the first
# collective, Megatron-DeepSpeed's index-select assert, torchelastic's SUCCEEDED events
EXCERPTS = ("dv11-023-fairseq-spawn-init-allreduce-invalid-argument-process3.txt",
            # (Open MPI's `[1,0]<stdout>:` behind a clock, and a traceback whose frames lost their blanks)
            "dv4-006-nccl-2183-mpirun-cuda-invalid-argument-proxy-connect.txt",
            "dv8-041-verl-dapo-duplicate-gpu-rank9-rank1-reversed.txt",
            "dv16-001-megatron-ds-indexselect-assert-pp2.txt",
            "dv11-007-yolov5-torchelastic-worker-succeeded-events.txt")


def _read(tmp_path: Path, name: str, text: str):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "log.txt").write_text(text)
    store = ingest([folder / "log.txt"])
    return store, decide(store)


@pytest.mark.parametrize("excerpt", EXCERPTS)
@pytest.mark.parametrize("margin", ["    ", "\t", "  ", ">     "])  # (dv16-001 is quoted already)
def test_an_indented_paste_gets_the_verdict_of_the_plain_one(tmp_path, excerpt, margin):
    text = (WILD / excerpt).read_text()
    _, plain = _read(tmp_path, "plain", text)
    indented = "\n".join(margin + line if line.strip() else line for line in text.split("\n"))
    store, verdict = _read(tmp_path, "indented", indented)
    assert verdict.kind == plain.kind
    assert verdict.summary == plain.summary.replace("plain/", "indented/")
    assert store.files["unknown"].sum() == ingest([tmp_path / "plain" / "log.txt"]).files["unknown"].sum()


def test_a_tracebacks_tail_keeps_its_frames(tmp_path):
    # dev-005 starts mid-traceback: `  File "..."` at the margin, code four blanks in; every line stays read
    text = (WILD / "dev-005-lightning-logdict-traceback-broadcast.txt").read_text()
    store, _ = _read(tmp_path, "tail", text)
    assert store.files["unknown"].sum() == 0
    store2, _ = _read(tmp_path, "deeper", "\n".join("    " + ln if ln.strip() else ln for ln in text.split("\n")))
    assert store2.files["unknown"].sum() == 0
