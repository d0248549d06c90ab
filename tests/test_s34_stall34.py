"""Session 34, stalls (stall34): where a hung process sits, said from its native stack.

Covers, on real lines from dev excerpts:
- ``parsers/gdb_backtrace``: a bare gdb/pstack backtrace (``#0  0x.. in FUNC (..) from LIB`` with no ``Thread N
  (Thread 0x.. (LWP n)):`` header; a long frame's ``from LIB`` wrapped onto the next line) is one ``stack`` event,
  its ``where`` the innermost frame that is not a libc wait, its rank a person's header right above it names;
  frames under a thread header stay parsers/pyspy's.
- ``parsers/pyspy.GDB_THREAD``: a named gdb thread (``(LWP 10683) "sglang::schedul"):``, the name inside the
  parentheses as gdb/thread.c writes it) is a thread header, its frames one stack.
- ``undecided``: where no rule reads the stacks, the UNDECIDED summary says where each dumped thread is and the
  communication call under it (Open MPI's ``PMPI_Gather``, NCCL's ``ncclCommDestroy``), never only the last line.
"""

from __future__ import annotations

import polars as pl

from tests.factory import events_of, text_store
from tracekit.outcome import Kind
from tracekit.parsers import gdb_backtrace
from tracekit.schema import EventKind
from tracekit.verdict import decide

# dv13-012 (oneCCL, gdb `bt` of the hung process; the long frames wrapped as pasted, shortened)
ONECCL = ("#0  0x0000145afa2a9e40 in ccl_executor::wait(ccl_request const*) () from /opt/ccl/lib/libccl.so.1\n"
          "#1  0x0000145afa164cf1 in ccl_coll_create(ccl_coll_param&, ccl_coll_attr const&) ()\n"
          "   from /opt/ccl/lib/libccl.so.1\n"
          "#2  0x0000145afa163a31 in ccl_allgather_impl(void const*, void*, unsigned long, ccl::v1::datatype,\n"
          "   from /opt/ccl/lib/libccl.so.1\n"
          "#4  0x0000145afa1633ce in ccl_allgather(void const*, void*, unsigned long, ccl::v1::datatype, ccl_\n"
          "   from /opt/ccl/lib/libccl.so.1\n")
# dv8-005 (Horovod's coordinator, gdb thread 2 under a person's `rank 0` header)
MPI = ("rank 0 (partial backtrace)\n\n```\nThread 2 (Thread 0x7fe9be0b1700 (LWP 442)):\n"
       "#0  0x00007fe934790bce in mca_btl_smcuda_component_progress ()\n"
       "   from /usr/local/openmpi/lib/openmpi/mca_btl_smcuda.so\n"
       "#1  0x00007fe93edd3dac in opal_progress ()\n   from /usr/local/openmpi/lib/libopen-pal.so.40\n"
       "#2  0x00007fe934152a85 in mca_pml_ob1_recv ()\n   from /usr/local/openmpi/lib/openmpi/mca_pml_ob1.so\n"
       "#3  0x00007fe93f41b8ff in ompi_coll_base_gather_intra_basic_linear ()\n"
       "   from /usr/local/openmpi/lib/libmpi.so.40\n"
       "#4  0x00007fe93f3e518d in PMPI_Gather ()\n   from /usr/local/openmpi/lib/libmpi.so.40\n")
# dv22-002 (a named thread: gdb puts the name inside the parentheses)
NAMED = ('Thread 1 (Thread 0x7fc514366280 (LWP 10683) "sglang::schedul"):\n'
         "#0  0x00007fc5146cac38 in clock_gettime ()\n"
         "#1  0x00007fc51444c66d in clock_gettime () from /usr/lib/x86_64-linux-gnu/libc.so.6\n"
         "#2  0x00007fc43ae697f4 in ?? () from /usr/lib/x86_64-linux-gnu/libcuda.so.1\n")
# dv22-008 (`thread apply all bt`: a header over its frames)
HEADED = ("(gdb) thread apply all bt\n\nThread 17 (Thread 0x7f7675fff700 (LWP 8166)):\n"
          "#0  0x00007f775c502cd7 in __pthread_clockjoin_ex () from /usr/lib/x86_64-linux-gnu/libpthread.so.0\n"
          "#1  0x00007f765098ffd7 in ?? () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
          "#3  0x00007f7650976d10 in ncclCommDestroy () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n")


def _lines(text: str) -> pl.DataFrame:
    rows = text.splitlines()
    return pl.DataFrame({"file": ["a.log"] * len(rows), "line": list(range(1, len(rows) + 1)), "text": rows})


def test_a_bare_backtrace_is_one_stack_whose_place_is_its_innermost_frame():
    p = gdb_backtrace.parse(_lines(ONECCL))
    st = p.tables["events"]
    assert st.height == 1 and st["kind"][0] == EventKind.STACK and st["line"][0] == 1
    assert st["where"][0] == "ccl_executor::wait (libccl.so.1)"
    # (the wrapped `from LIB` is the place of the frame above it; every line of the backtrace is claimed)
    assert "ccl_allgather (libccl.so.1)" in st["frames"][0] and p.claimed.height == 7


def test_frames_under_a_thread_header_are_pyspys_not_a_bare_backtrace():
    assert gdb_backtrace.parse(_lines(HEADED)).tables.get("events") is None
    assert gdb_backtrace.parse(_lines(MPI)).tables.get("events") is None


def test_a_named_gdb_thread_is_a_thread_header(tmp_path):
    st = events_of(text_store(tmp_path, NAMED), EventKind.STACK)
    assert st.height == 1 and st["thread"][0].startswith("MainThread") and "LWP 10683" in st["thread"][0]


def test_the_undecided_summary_says_where_a_native_stack_waits(tmp_path):
    v = decide(text_store(tmp_path, MPI))
    assert v.kind is Kind.UNDECIDED
    assert "rank 0 gdb thread 2" in v.summary and "under PMPI_Gather" in v.summary
    assert "inside a communication call" in v.summary
    v = decide(text_store(tmp_path, HEADED, "b.log"))
    assert v.kind is Kind.UNDECIDED and "is in ncclCommDestroy (libnccl.so.2)" in v.summary


def test_a_bare_backtrace_in_a_collective_reads_as_a_stack_not_as_nothing(tmp_path):
    v = decide(text_store(tmp_path, ONECCL))
    assert v.kind is Kind.UNDECIDED and v.rule != "nothing"
    assert "ccl_executor::wait" in v.summary and "a collective" in v.summary


def test_a_header_over_a_bare_backtrace_names_its_rank():
    text = "Rank 3 backtrace:\n" + ONECCL + "\nsome other line\n" + ONECCL
    st = gdb_backtrace.parse(_lines(text)).tables["events"]
    assert st["rank"].to_list() == [3, None]  # (the second is no longer right under the header)
