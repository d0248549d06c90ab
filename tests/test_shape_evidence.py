"""Evidence as records: each piece a ``Cited`` with its file, line or Flight Recorder record, and text
as fields (made from the store's columns, never parsed back out of a string), still printed as the
``file:line: text`` the verdict always said."""

import copy
import pickle

from tests.conftest import SAMPLES
from tracekit import verdict
from tracekit.cli import _load_run
from tracekit.outcome import Cited, Finding, Match


def test_a_cited_line_a_record_and_a_figure():
    line, record = Cited("a.log", 3, "NCCL WARN x"), Cited("d.pkl", None, record=7)
    figure = Cited(None, None, "2 s")
    assert (line, line.where, line.text) == ("a.log:3: NCCL WARN x", "a.log:3", "NCCL WARN x")
    assert (record, record.where, record.record, record.line) == ("d.pkl: record 7",) * 2 + (7, None)
    assert (figure, figure.where, figure.file) == ("2 s", "", None)
    assert Cited("a.log", 3) == "a.log:3" and Cited("a.log", None, "said") == "a.log: said"
    for c in (line, record, figure):  # a copy or a pickle (a verdict sent between processes) keeps the fields
        for again in (copy.deepcopy(c), pickle.loads(pickle.dumps(c))):
            fields = (again.file, again.line, again.text, again.record)
            assert again == c and fields == (c.file, c.line, c.text, c.record)


def test_a_finding_holds_records_and_a_plain_string_is_a_text():
    f = Finding(Match.MISSING, "fr", "0", None, 3, "allreduce", None, None, [0], [1],
                evidence=[Cited("r0.pkl", None, record=4), "computed"])
    assert isinstance(f.evidence, tuple) and [type(e) for e in f.evidence] == [Cited, Cited]
    assert f.evidence[1].file is None and f.to_dict()["evidence"] == ["r0.pkl: record 4", "computed"]


def test_real_findings_carry_their_file_and_line_or_record():
    for name in ("gpu_nccl_mismatch", "gpu_nccl_deadlock", "gloo_2x2_deadlock"):
        v = verdict.decide(_load_run(str(SAMPLES / name)))
        # (the Flight Recorder analyzer's own checks, fr_checks.py, still give strings: texts, no file)
        cited = [e for f in v.findings for e in f.evidence if e.file]
        assert cited and all(isinstance(e, Cited) and str(SAMPLES / name) in e.file for e in cited)
        # a log line or a dump's record
        assert all((e.line is not None) != (e.record is not None) for e in cited)
        assert any(e.record is not None for e in cited)  # the Flight Recorder dumps' entries
        if name != "gloo_2x2_deadlock":
            assert any(e.line is not None and e.file.endswith(".log") for e in cited)  # NCCL's lines
        # the verdict cites the finding's records themselves, not strings made of them
        assert any(e is c for e in v.evidence for c in cited) or v.kind.name != "DEADLOCK"
