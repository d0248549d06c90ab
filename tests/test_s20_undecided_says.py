"""UNDECIDED says where the log stops (issue 31: "the situation + what is missing to decide + what to
collect, never a generic sentence"): the file's own last line where every line was decoded and none is an
event, and the interfaces NCCL chose where set-up is all it logged. Real dev excerpts (samples/wild)."""

from __future__ import annotations

import gzip
from pathlib import Path

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parents[1] / "samples" / "wild"


def _verdict(name: str):
    return decide(ingest([WILD / name]))


def test_a_line_read_as_a_command_alone_is_quoted():
    # dv8-050: ColossalAI's launcher's one line, `Error: failed to run torchrun --nproc_per_node=4 ...`: the
    # launcher parser reads its command (a world of 4) and no rule decides; the summary quotes it
    v = _verdict("dv8-050-colossalai-run-torchrun-failed-no-reason.txt")
    assert v.kind == Kind.UNDECIDED
    assert 'the last line: "Error: failed to run torchrun --nproc_per_node=4' in v.summary
    assert "dv8-050-colossalai-run-torchrun-failed-no-reason.txt:1" in v.summary


def test_a_rich_tracebacks_last_line_is_quoted_without_its_box():
    # (session 23: rich's boxed frames are read as a traceback, parsers/pyspy, named by its frame without the
    # box; s31: a traceback cut before its exception is UNDECIDED saying where it raised, rules_raised)
    v = _verdict("dv4-029-deepspeed-rich-traceback-configure-optimizer.txt")
    assert v.kind == Kind.UNDECIDED
    assert "raised in _configure_optimizer (" in v.summary and "│" not in v.summary


def test_nccl_set_up_alone_names_the_interfaces_it_chose():
    # dv2-009: a Kubeflow job's NCCL set-up with `NET/Socket : Using [0]lo:127.0.0.1<0> [1]eth0:...` and no
    # Init COMPLETE: loopback first is what an expert looks at
    v = _verdict("dv2-009-kubeflow-master0-nccl-socket-lo-first.txt")
    assert v.kind == Kind.UNDECIDED
    assert "sockets over [0]lo:127.0.0.1<0>" in v.summary and "no Init COMPLETE" in v.summary


def test_the_last_line_is_quoted_as_read_without_its_launcher_prefix_and_from_a_gzip(tmp_path):
    # the quote comes from the lines as ingest read them (the files table's last_text): torchrun's
    # `[default0]:` prefix is taken off, and a gzip stream is quoted from what it decompresses to
    line = "Error: failed to run torchrun --nproc_per_node=4 --nnodes=1 train.py on 127.0.0.1, is localhost: True"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "out.log").write_text(f"[default0]:{line}\n")
    v = decide(ingest([tmp_path / "a" / "out.log"]))
    assert v.kind == Kind.UNDECIDED and f'the last line: "{line}" (out.log:1)' in v.summary
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "out.log.gz").write_bytes(gzip.compress(f"{line}\n".encode()))
    v = decide(ingest([tmp_path / "b" / "out.log.gz"]))
    assert v.kind == Kind.UNDECIDED and f'the last line: "{line}" (out.log.gz:1)' in v.summary
