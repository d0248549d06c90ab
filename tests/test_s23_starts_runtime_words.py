"""Session 23 (issue 31, the first call): a runtime's own word that another rank failed first decides
CRASHED_RANK where nothing else in the excerpt says why (``runtime_failures``)."""

from pathlib import Path

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"


def _verdict(path):
    return decide(ingest([path]))


def test_horovods_shut_down_on_a_dev_excerpt_is_another_ranks_failure():
    # dv10-018: TensorFlow's `AbortedError (see above for traceback): Horovod has been shut down. This has been
    # ca|used by an exception on one of the rank ...` (horovod/common/common.h:232 SHUT_DOWN_ERROR, hard-wrapped)
    v = _verdict(WILD / "dv10-018-horovod-tf-shut-down-broadcast.txt")
    assert v.kind == Kind.CRASHED_RANK
    assert "Horovod has been shut down" in v.summary
