"""Session 23 (issue 31, the first call): rich's boxed traceback (Textualize/rich rich/traceback.py:809-823,
``Traceback._render_stack``: ``path:lineno in name`` inside the panel's ``│`` borders) is a Python traceback
like CPython's: pasted without its exception, outside any collective, it says the process raised there."""

from pathlib import Path

import polars as pl

from tracekit.ingest import ingest
from tracekit.schema import EventKind
from tracekit.verdict import Kind, decide

WILD = Path(__file__).resolve().parent.parent / "samples" / "wild"

#: a rich panel as rich/traceback.py renders one frame (its path, `:`, line, ` in `, the function, then the
#: frame's code with line numbers and `❱` at the line), pasted from its second frame on and cut before the
#: exception under the panel, as dv4-029 was
PANEL = """\
│ in main:12                                                                                       │
│                                                                                                  │
│ /opt/conda/lib/python3.10/site-packages/mylib/loader.py:88 in load_shards                        │
│                                                                                                  │
│    85 │   │   for name in names:                                                                 │
│    86 │   │   │   path = os.path.join(root, name)                                                │
│    87 │   │   │   with open(path, "rb") as f:                                                    │
│ ❱  88 │   │   │   │   shards.append(torch.load(f))                                               │
│    89 │   │   return shards                                                                      │
"""


def test_a_rich_panel_is_read_as_a_traceback(tmp_path):
    (tmp_path / "out.log").write_text(PANEL)
    st = ingest([tmp_path / "out.log"]).events.filter(pl.col("kind").cast(pl.Utf8) == str(EventKind.STACK))
    assert st.height == 1 and st["where"][0].startswith("load_shards (")
    assert "loader.py:88" in st["where"][0] and st["frames"][0].endswith("main (?:12)")


def test_a_rich_traceback_cut_on_a_dev_excerpt_is_a_process_that_raised():
    # dv4-029: DeepSpeedEngine._configure_optimizer's frame of a rich panel, its exception below the cut
    v = decide(ingest([WILD / "dv4-029-deepspeed-rich-traceback-configure-optimizer.txt"]))
    # (fail31b: raised_alone's UNDECIDED, where it raised said: its exception is below the cut)
    assert v.kind == Kind.UNDECIDED and "_configure_optimizer" in v.summary
