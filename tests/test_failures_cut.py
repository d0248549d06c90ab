"""A Python traceback cut before its error line (the excerpt ends inside it) is a process that raised: the
crash says where, the innermost frame the excerpt shows."""

from tracekit.ingest import ingest
from tracekit.verdict import Kind, decide

CUT = """\
(Worker_TP2 pid=967) INFO 12-16 02:10:29 [kv_cache_utils.py:1286] GPU KV cache size: 282,240 tokens
Traceback (most recent call last):
  File "/srv/app/executor.py", line 817, in worker_busy_loop
    output = func(*args, **kwargs)
  File "/srv/app/worker_base.py", line 320, in initialize_from_config
    self.worker.initialize_from_config(kv_cache_config)
"""


def test_a_cut_traceback_says_where_it_raised(tmp_path):
    (tmp_path / "worker.log").write_text(CUT)
    v = decide(ingest([tmp_path / "worker.log"]))
    assert v.kind == Kind.CRASHED_RANK
    assert "it raised in initialize_from_config (/srv/app/worker_base.py:320)" in v.summary


def test_a_whole_traceback_says_its_exception_not_a_frame(tmp_path):
    (tmp_path / "worker.log").write_text(CUT + "ValueError: kv cache of 0 blocks\n")
    v = decide(ingest([tmp_path / "worker.log"]))
    assert v.kind == Kind.CRASHED_RANK and "ValueError: kv cache of 0 blocks" in v.summary
    assert "it raised in" not in v.summary
