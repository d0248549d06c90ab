"""A watchdog timeout says its fact even where it stays UNDECIDED (issue 31): the op, SeqNum and process
group, the timeout, each rank's last enqueued and completed work in c10d's words, which ranks timed out and
which left no record; c10d's words that say "failed or timed out" are no timeout; and a traceback cut
before its error line is decoded once (parsers/pyspy) and weighed in the evidence. Lines as
ProcessGroupNCCL.cpp and Python print them."""

from tracekit.evidence import Evidence
from tracekit.ingest import ingest
from tracekit.outcome import EventKind
from tracekit.verdict import Kind, decide


def _decide(tmp_path, text, name="rank0.log"):
    (tmp_path / name).write_text(text)
    s = ingest([tmp_path])
    return s, decide(s)


def _watchdog(rank, seq=1, op="ALLGATHER"):
    return (f"[E ProcessGroupNCCL.cpp:821] [Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType={op}, Timeout(ms)=1800000) ran for 1808940 milliseconds before "
            "timing out.\n")


def test_a_timeout_in_the_first_collective_says_so(tmp_path):
    _, v = _decide(tmp_path, _watchdog(1) + _watchdog(0))
    assert v.kind == Kind.UNDECIDED
    assert "ranks 0-1 timed out in ALLGATHER SeqNum=1 after 1800 s" in v.summary
    assert "first collective" in v.summary


def test_a_later_collective_is_not_called_the_first(tmp_path):
    _, v = _decide(tmp_path, _watchdog(2, seq=4, op="BROADCAST"))
    assert "BROADCAST SeqNum=4" in v.summary and "first collective" not in v.summary


def test_last_enqueued_and_completed_work_in_c10ds_words_grouped(tmp_path):
    text = "".join(f"[rank{r}]:[E912 09:28:22.641421137 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank {r}] "
                   "Timeout at NCCL work: 2, last enqueued NCCL work: 2, last completed NCCL work: 1.\n"
                   for r in (2, 4, 6))
    _, v = _decide(tmp_path, text)
    assert v.kind == Kind.UNDECIDED and v.ranks == [2, 4, 6]
    assert ("ranks 2,4,6 at NCCL work: 2, last enqueued NCCL work: 2, last completed NCCL work: 1"
            in v.summary)


def test_a_timeout_cut_before_its_last_word_is_still_a_timeout(tmp_path):
    s, v = _decide(tmp_path, "[rank3]:[E ProcessGroupNCCL.cpp:1182] [Rank 3] NCCL watchdog thread terminated "
                   "with exception: [Rank 3] Watchdog caught collective operation.\n")
    assert Evidence.gather(s).timeouts.height == 1
    assert v.kind == Kind.UNDECIDED and "rank 3 timed out" in v.summary


def test_either_an_error_or_a_timeout_does_not_say_timeout(tmp_path):
    # the words say neither; the status line itself (its last enqueued / completed work) still counts as the
    # watchdog's word that a collective did not complete
    s, _ = _decide(tmp_path, "[rank6]:[E912 09:28:22.641402409 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) "
                   "Rank 6] Exception (either an error or timeout) detected by watchdog at work: 2, last "
                   "enqueued NCCL work: 2, last completed NCCL work: 1.\n")
    assert not s.events.filter(s.events["says"].list.contains("timeout")).height


def test_a_timeout_that_names_no_collective_quotes_its_words(tmp_path):
    _, v = _decide(tmp_path, "[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL communicator "
                   "and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but "
                   "store->get('0') got error: Socket Timeout\n")
    assert "store->get('0') got error: Socket Timeout" in v.summary


TORCHRUN_CUT = ("Traceback (most recent call last):\n"
                "  File \"/opt/conda/bin/torchrun\", line 33, in <module>\n"
                "    sys.exit(load_entry_point('torch==2.0.1', 'console_scripts', 'torchrun')())\n"
                "  File \"/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py\", line 785, in run\n"
                "    elastic_launch(\n"
                "  File \"/opt/conda/lib/python3.10/site-packages/torch/distributed/launcher/api.py\", line 134, "
                "in __call__\n    return launch_agent(self._config, self._entrypoint, list(args))\n")


def test_torchruns_agent_raising_with_its_error_cut_is_the_launchers_not_a_ranks(tmp_path):
    _, v = _decide(tmp_path, TORCHRUN_CUT)
    assert v.kind == Kind.UNDECIDED and "torchrun's agent raised in __call__" in v.summary
    assert "ChildFailedError" in v.summary and "RendezvousTimeoutError" in v.summary


def test_a_cut_traceback_in_the_programs_code_is_a_crash_and_in_torchruns_agent_is_not(tmp_path):
    # the program's own frame: a rank raised (nothing else in the file says more)
    _, v = _decide(tmp_path, "Traceback (most recent call last):\n  File \"train.py\", line 47, in train\n"
                   "    loss.backward()\n")
    assert v.kind == Kind.CRASHED_RANK and "traceback" in v.summary
    # torchrun's agent: the launcher raised; its exception is not counted as a rank's crash
    s, _ = _decide(tmp_path, TORCHRUN_CUT, name="launcher.log")
    ev = Evidence.gather(s)
    assert ev.crashes.filter(ev.crashes["file"].str.ends_with("launcher.log")).height == 0
    assert ev.kinds(EventKind.STACK).height == 2  # (both files' cut tracebacks, one stack each)
