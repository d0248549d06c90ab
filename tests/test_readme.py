"""README's transcripts are real: every quoted `$ tracekit ...` command, run as written (from a folder
holding a copy of the samples it names, so that nothing lands in samples/), prints what README quotes."""

import re
import shlex

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT, copy_sample
from tracekit.cli import main

README = (ROOT / "README.md").read_text()
#: fenced blocks that open with a tracekit command; `run`, `watch` and `open` wait on a live job or a browser
TRANSCRIPTS = [(m["cmd"], m["out"]) for m in re.finditer(r"```\n\$ (?P<cmd>tracekit [^\n]+)\n(?P<out>.*?)```\n",
                                                          README, re.S)
               if shlex.split(m["cmd"])[1] not in ("run", "watch", "open")]


def test_readme_has_transcripts_and_its_first_screen_is_one():
    first = README.split("What the first command prints (real output):\n\n```\n", 1)[1]
    assert first.startswith("$ tracekit ingest samples/gloo_2x2_deadlock\nverdict   DEADLOCK: ")
    assert len(TRANSCRIPTS) >= 4


@pytest.mark.parametrize("cmd, quoted", TRANSCRIPTS, ids=[c for c, _ in TRANSCRIPTS])
def test_each_transcript_is_what_the_command_prints(cmd, quoted, tmp_path, monkeypatch):
    """When the wording changes, run the command and paste its output into README.md."""
    for name in set(re.findall(r"\bsamples/([\w.\-]+)", cmd)):
        copy_sample(name, tmp_path / "samples" / name)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, shlex.split(cmd)[1:])
    assert r.exit_code == 0, r.output
    assert r.stdout == quoted
