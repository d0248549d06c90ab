"""The Flight Recorder analyzer's checks as tracekit's own (tracekit/fr_checks.py), on real per-rank dumps.

Each scenario ports a case of PyTorch's test/distributed/flight_recorder/test_fr_analysis.py
(``test_match_one_event``, ``test_all_events``, ``testBuildDB``) or one the issue names, written as the
pickled dumps torch writes (``<prefix><rank>``), read by ``tracekit.ingest``, and checked once with the
analyzer itself (torchfrtrace's ``main``) on the same files. Where the answers differ on purpose, the
scenario says why.
"""

from __future__ import annotations

import pickle
import shutil
import subprocess

from pathlib import Path

import pytest

from tracekit import fr_checks
from tracekit.sources import fr as sources_fr
from tracekit.outcome import Match
from tracekit.ingest import ingest

F = "Float"
SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def entry(rid, name, ins, outs, state="completed", seq=1, p2p_seq=0, in_dtype=F, out_dtype=F,
          pg=("0", "default_pg")):
    """One ring-buffer entry as ProcessGroupNCCL records it (torch/csrc/distributed/c10d/FlightRecorder)."""
    p2p = name.split(" ")[0] in ("send", "recv")
    return {"record_id": rid, "pg_id": int(pg[0]), "process_group": pg,
            "collective_seq_id": 0 if p2p else seq,
            "p2p_seq_id": p2p_seq, "op_id": rid + 1, "is_p2p": p2p, "profiling_name": f"nccl:{name}",
            "input_sizes": ins, "output_sizes": outs, "input_dtypes": [in_dtype] * len(ins),
            "output_dtypes": [out_dtype if s else "" for s in outs] if outs != [[]] else [""],
            "state": state, "time_created_ns": 1_000 + rid, "time_discovered_started_ns": None,
            "time_discovered_completed_ns": 2_000 + rid if state == "completed" else None, "retired": True,
            "timeout_ms": 600_000, "duration_ms": None, "frames": []}


def write_dumps(folder, dumps: dict[int, list[dict]], groups=None, status=None):
    """``folder/rank_<r>`` for each rank: version, pg_config, pg_status (from the entries unless given)."""
    ranks = sorted(dumps)
    groups = groups or {"0": ("default_pg", ranks)}
    folder.mkdir(parents=True, exist_ok=True)
    for r, entries in dumps.items():
        cfg = {name: {"name": name, "desc": desc, "ranks": str(members(r) if callable(members) else members)}
               for name, (desc, members) in groups.items()}
        seqs = [e["collective_seq_id"] for e in entries if not e["is_p2p"]]
        done = [e["collective_seq_id"] for e in entries if not e["is_p2p"] and e["state"] == "completed"]
        st = (status or {}).get(r) or {"last_enqueued_collective": max(seqs, default=-1),
                                       "last_started_collective": max(seqs, default=-1),
                                       "last_completed_collective": max(done, default=-1)}
        dump = {"version": "2.8", "nccl_version": "2.21.5", "rank": r, "pg_config": cfg,
                "pg_status": {"0": st}, "entries": entries}
        (folder / f"rank_{r}").write_bytes(pickle.dumps(dump))
    return folder


def two(*pair, **kw):
    """The same entries on ranks 0 and 1, or ``(rank 0's, rank 1's)``."""
    a, b = pair if len(pair) == 2 else (pair[0], pair[0])
    return {0: a if isinstance(a, list) else [a], 1: b if isinstance(b, list) else [b]}


AR = entry(0, "all_reduce", [[4, 4]], [[4, 4]])
SYNTAX, TYPE = "SIZE_OR_SYNTAX_MISMATCH", "COLLECTIVE_TYPE_MISMATCH"
DTYPE, STATE = "COLLECTIVE_DTYPE_MISMATCH", "COLLECTIVE_STATE_MISMATCH"


def both(*ranks):
    """The same kind of finding naming each rank in turn."""
    return lambda kind: [(kind, [r]) for r in ranks]


# name (the analyzer test ported): dumps; tracekit's (kind, ranks named) in order; the analyzer's
# MatchStates on the same dumps; why they differ (None where they agree)
SCENARIOS = {
    "match_one_event_same": (two(AR), [], set(), None),
    "match_one_event_type": (two(AR, entry(0, "all_gather", [[4, 4]], [[32]])),
                             [(Match.OP_TYPE, [1])], {TYPE}, None),
    "match_one_event_all_to_all": (two(entry(0, "all_to_all", [[4, 4]], [[4, 4]])), [], set(), None),
    "match_one_event_input_size": (two(AR, entry(0, "all_reduce", [[5, 4]], [[4, 4]])),
                                   [(Match.SIZE, [1]), (Match.SHAPE, [1])], {SYNTAX}, None),
    "match_one_event_output_size": (two(AR, entry(0, "all_reduce", [[4, 4]], [[5, 4]])),
                                    [(Match.SIZE, [1]), (Match.SHAPE, [1])], {SYNTAX}, None),
    # the analyzer compares one entry with itself here; tracekit names the rule each rank's entry breaks
    "match_one_event_all_reduce_in_out": (two(entry(0, "all_reduce", [[4, 4]], [[5, 4]])),
                                          both(0, 1)(Match.SHAPE), {SYNTAX}, None),
    "match_one_event_state": (two(entry(0, "all_reduce", [[4, 4]], [[4, 4]], state="scheduled"), AR),
                              [(Match.STATE, [0])], {STATE}, None),
    # two ranks have no majority: the cross-rank finding takes rank 0's Half as the reference; the
    # per-entry one names rank 0, which reads Float and writes Half
    "match_one_event_dtype": (two(entry(0, "all_reduce", [[4, 4]], [[4, 4]], out_dtype="Half"), AR),
                              [(Match.DTYPE, [1]), (Match.DTYPE, [0])], {DTYPE}, None),
    "match_one_event_gather_root": (two(entry(0, "gather", [[4, 4]], [[4, 4], [4, 4]]),
                                        entry(0, "gather", [[4, 4]], [[]])), [], set(), None),
    "build_db_coalesced_all_reduce": (two(entry(0, "allreduce_coalesced", [[4, 4]], [[4, 4]])),
                                      [], set(), None),
    "build_db_coalesced_broadcasts": (two([entry(0, "broadcast", [[4, 4]], [[4, 4]]),
                                           entry(1, "broadcast", [[4, 4]], [[4, 4]]),
                                           entry(2, "coalesced", [], [])]), [], set(), None),
    "build_db_uneven_broadcast_oop": (two([entry(0, "_broadcast_oop", [[4, 4]], [[4, 4]]),
                                           entry(1, "_broadcast_oop", [[5, 5]], [[5, 5]]),
                                           entry(2, "ALLGATHER_coalesced", [], [])],
                                          [entry(0, "_broadcast_oop", [[4, 4]], [[4, 4]]),
                                           entry(1, "_broadcast_oop", [[4, 4]], [[4, 4]]),
                                           entry(2, "ALLGATHER_coalesced", [], [])]),
                                      [(Match.SIZE, [1])], {SYNTAX}, None),
    "build_db_reduce_oop_coalesced": (two([entry(0, "_reduce_oop", [[4, 4]], [[4, 4]]),
                                           entry(1, "_reduce_oop", [[4, 4]], [[4, 4]]),
                                           entry(2, "REDUCE_SCATTER_coalesced", [], [])]), [], set(), None),
    # rank 1 ran a coalesced group of two reduces under the sequence number of rank 0's lone all_reduce:
    # the analyzer says rank 0 did not join the first reduce (and still passes it); tracekit says rank 1
    # ran 4 ops under seq 1 where rank 0 ran 1
    "build_db_empty_coalesced_on_rank_0": (two([AR], [AR, entry(1, "_reduce_oop", [[4, 4]], [[4, 4]]),
                                                     entry(2, "_reduce_oop", [[4, 4]], [[4, 4]]),
                                                     entry(3, "REDUCE_SCATTER_coalesced", [], [])]),
                                           [(Match.COALESCED, [1])], {"missing"}, None),
    "p2p_send_recv_sizes": (two(entry(0, "send 0->1", [[4]], [[4]], p2p_seq=1),
                                entry(0, "recv 1<-0", [[8]], [[8]], p2p_seq=1)),
                            [(Match.P2P_SIZE, [1])], {SYNTAX}, None),
    "p2p_send_recv_match": (two(entry(0, "send 0->1", [[4]], [[4]], p2p_seq=1),
                                entry(0, "recv 1<-0", [[4]], [[4]], p2p_seq=1)), [], set(), None),
    "all_gather_numel": (two(entry(0, "all_gather", [[4]], [[6]])), both(0, 1)(Match.SHAPE), {SYNTAX}, None),
    "all_gather_list_wrong_count": (two(entry(0, "all_gather", [[4, 4]], [[4, 4]] * 3)),
                                    both(0, 1)(Match.SHAPE), {SYNTAX}, None),
    "all_gather_list": (two(entry(0, "all_gather", [[4, 4]], [[4, 4], [4, 4]])), [], {SYNTAX},
                        "the analyzer compares the first output tensor with input x group size; a list "
                        "all_gather has one output per rank, so tracekit compares the totals"),
    "reduce_scatter_numel": (two(entry(0, "reduce_scatter", [[4, 4]], [[4]])), both(0, 1)(Match.SHAPE),
                             {SYNTAX}, None),
    "all_gather_variants": (two(entry(0, "all_gather", [[4, 4]], [[4, 4], [4, 4]]),
                                entry(0, "_all_gather_base", [[4, 4]], [[32]])), [], {TYPE},
                            "both run one ncclAllGather of the same bytes, so neither rank waits on the "
                            "other"),
    "all_to_all_unbalanced": (two(entry(0, "all_to_all", [[4]], [[3]])), [(Match.SIZE, [0, 1])], {SYNTAX},
                              None),
    # the analyzer blames the ranks that differ from whichever dump it reads first (os.walk's order: ranks
    # 1 and 2, or rank 0); two of three ranks agree, so tracekit names rank 0, whatever the order
    "majority_names_the_odd_rank": ({0: [entry(0, "all_reduce", [[5, 4]], [[5, 4]])], 1: [AR], 2: [AR]},
                                    [(Match.SIZE, [0])], {SYNTAX}, None),
}


def _kinds(findings):
    return [(f.kind, f.missing) for f in findings]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(tmp_path, name):
    dumps, expected, _, _ = SCENARIOS[name]
    findings, windows = fr_checks.check_store(ingest([write_dumps(tmp_path / name, dumps)]))
    assert _kinds(findings) == expected
    assert all(f.evidence and f.label and "rank" in f.label for f in findings)
    # each piece of evidence is a dump's record: its file and record id, printed as "file: record N"
    assert all(e.file and e.record is not None and str(e) == f"{e.file}: record {e.record}"
               and Path(e.file).exists() for f in findings for e in f.evidence)
    assert bool(windows) == (not expected and not any(e["is_p2p"] for es in dumps.values() for e in es))


def test_reasons_name_ranks_sizes_dtypes_states(tmp_path):
    def first(name):
        return fr_checks.check_store(ingest([write_dumps(tmp_path / name, SCENARIOS[name][0])]))[0][0].label

    assert first("build_db_uneven_broadcast_oop") == (
        "process group 0 (default_pg): nccl:_broadcast_oop seq 1, op 2 of its coalesced group: input sizes "
        "differ: rank 0: [5x5]; rank 1: [4x4]")
    assert first("match_one_event_state").endswith("states differ: rank 1: completed; rank 0: scheduled")
    assert first("match_one_event_dtype").endswith("output dtypes differ: rank 0: Half; rank 1: Float")
    assert first("p2p_send_recv_sizes") == (
        "process group 0 (default_pg): rank 0's nccl:send 0->1 (p2p seq 1) sends [4]; "
        "rank 1's nccl:recv 1<-0 (p2p seq 1) takes it into [8]")
    assert first("all_gather_list_wrong_count").endswith(
        "rank 0's entry gathers into 3 tensors in a group of 2")
    assert first("all_to_all_unbalanced").endswith(
        "the group sends 8 elements in all and receives 6: rank 0 sends 4 and receives 3; rank 1 sends 4 and "
        "receives 3")


def test_recv_from_any_source_is_paired(tmp_path):
    """gloo's ``recv 1<-?`` takes the sends to rank 1 that no exact recv took; the analyzer cannot
    read the name (``int('?')``) and stops."""
    dumps = {0: [entry(0, "send 0->1", [[4]], [[4]], p2p_seq=1)],
             1: [entry(0, "recv 1<-?", [[8]], [[8]], p2p_seq=1)],
             2: [entry(0, "send 2->1", [[8]], [[8]], p2p_seq=1)]}
    findings, _ = fr_checks.check_store(ingest([write_dumps(tmp_path / "any", dumps)]))
    assert _kinds(findings) == [(Match.P2P_SIZE, [1])] and "recv 1<-?" in findings[0].label
    dumps[1] = [entry(0, "recv 1<-?", [[4]], [[4]], p2p_seq=1),
                entry(1, "recv 1<-?", [[8]], [[8]], p2p_seq=2)]
    dumps[2][0]["time_created_ns"] = 5_000  # (rank 2's send came second)
    assert fr_checks.check_store(ingest([write_dumps(tmp_path / "any2", dumps)]))[0] == []


#: Every op the analyzer knows (its types.py, COLLECTIVES)
ANALYZER_OPS = sorted("""ALLGATHER_coalesced REDUCE_SCATTER_coalesced _all_gather_base _broadcast_oop
    _reduce_oop _reduce_scatter_base all_gather all_gather_into_tensor_coalesced all_gather_single
    all_gather_v all_reduce all_reduce_barrier all_to_all all_to_all_single all_to_all_v_single
    allreduce_coalesced barrier broadcast gather new_window reduce reduce_scatter reduce_scatter_single
    reduce_scatter_tensor_coalesced reduce_scatter_v scatter split""".split())


def test_analyzer_ops_are_its_own():
    types = pytest.importorskip("torch.distributed.flight_recorder.components.types")
    assert sorted(types.COLLECTIVES) == ANALYZER_OPS


@pytest.mark.parametrize("name", ANALYZER_OPS)
def test_all_events(tmp_path, name):
    """Every op the analyzer knows, the same on both ranks, in the shapes its test gives: no finding."""
    outs = {"reduce_scatter": [[8]], "all_gather": [[32]]}
    kind = next((k for k in outs if k in name.lower().replace("allgather", "all_gather")), None)
    dumps = two(entry(0, name, [[4, 4]], outs.get(kind, [[4, 4]])))
    findings, windows = fr_checks.check_store(ingest([write_dumps(tmp_path / name, dumps)]))
    assert findings == [] and [w.collectives for w in windows] == [1]


def test_healthy_window_needs_every_rank_completed_and_pg_status_agreeing(tmp_path):
    dumps = two([entry(i, "all_reduce", [[4, 4]], [[4, 4]], seq=i + 1) for i in range(5)])
    _, windows = fr_checks.check_store(ingest([write_dumps(tmp_path / "ok", dumps)]))
    assert [w.message for w in windows] == [
        "process group 0 (default_pg): healthy in the last 5 collectives the dumps hold "
        "(seq 1-5 on ranks 0-1: all completed, pg_status agrees)"]
    late = {1: {"last_enqueued_collective": 6, "last_started_collective": 5, "last_completed_collective": 5}}
    assert fr_checks.check_store(ingest([write_dumps(tmp_path / "late", dumps, status=late)]))[1] == []
    dumps[1] = dumps[1][:4]  # rank 1's dump ends a collective earlier
    assert fr_checks.check_store(ingest([write_dumps(tmp_path / "short", dumps)]))[1] == []


def test_wrapped_ring_buffer_is_not_paired(tmp_path):
    """Rank 1's dump lost its oldest records (first record 7): its first recv is not rank 0's first send."""
    dumps = two(entry(0, "send 0->1", [[4]], [[4]], p2p_seq=1),
                entry(7, "recv 1<-0", [[8]], [[8]], p2p_seq=9))
    assert fr_checks.check_store(ingest([write_dumps(tmp_path / "wrap", dumps)]))[0] == []


def test_groups_of_one_name_split_by_members(tmp_path):
    """The analyzer's testBuildDB case 1: a sub-group named "1" on each rank, of itself alone."""
    sub = ("1", "sub_pg")
    dumps = two([AR, entry(1, "all_reduce", [[5, 5]], [[5, 5]], pg=sub)])
    groups = {"0": ("default_pg", [0, 1]), "1": ("sub_pg", lambda r: [r])}
    findings, windows = fr_checks.check_store(ingest([write_dumps(tmp_path / "split", dumps, groups)]))
    assert findings == [] and sorted((w.pg, tuple(w.ranks)) for w in windows) == [("0", (0, 1)), ("1", (0,)),
                                                                                     ("1", (1,))]


def _analyzer(folder):
    """torchfrtrace's own answer on ``folder``: the MatchStates of its failed collectives, and "missing"
    where it found ranks not joining."""
    fr_trace = pytest.importorskip("torch.distributed.flight_recorder.fr_trace")
    out = folder.parent / f"{folder.name}.db"
    fr_trace.main([str(folder), "-p", "rank_", "-o", str(out)])
    _, db = pickle.loads(out.read_bytes())
    got = {m.type_of_mismatch.state.name for c in db.collectives
           for m in (c.mismatch_collectives or {}).values()}
    return got | ({"missing"} if any(c.missing_ranks for c in db.collectives) else set())


@pytest.mark.skipif(shutil.which("torchfrtrace") is None, reason="torchfrtrace is not installed")
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_torchfrtrace_on_the_same_dumps(tmp_path, name):
    dumps, expected, analyzer, why = SCENARIOS[name]
    folder = write_dumps(tmp_path / name, dumps)
    assert _analyzer(folder) == analyzer
    agrees = {m for k, _ in expected for m in KIND_STATES[k]} == analyzer
    assert agrees == (why is None), why


KIND_STATES = {Match.OP_TYPE: {"COLLECTIVE_TYPE_MISMATCH"}, Match.SIZE: {"SIZE_OR_SYNTAX_MISMATCH"},
               Match.SHAPE: {"SIZE_OR_SYNTAX_MISMATCH"}, Match.P2P_SIZE: {"SIZE_OR_SYNTAX_MISMATCH"},
               Match.DTYPE: {"COLLECTIVE_DTYPE_MISMATCH"}, Match.STATE: {"COLLECTIVE_STATE_MISMATCH"},
               Match.COALESCED: {"missing"}}


@pytest.mark.skipif(shutil.which("torchfrtrace") is None, reason="torchfrtrace is not installed")
def test_torchfrtrace_command_reads_the_dumps(tmp_path):
    """The command itself, once: it reads these files and reports the mismatch tracekit finds."""
    folder = write_dumps(tmp_path / "cmd", SCENARIOS["match_one_event_type"][0])
    run = subprocess.run(["torchfrtrace", str(folder), "-p", "rank_"], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and "COLLECTIVE_TYPE_MISMATCH" in run.stdout + run.stderr


def test_decodes_what_the_checks_need(tmp_path):
    """The columns the rules read, from one dump: output shapes and count, every dtype, p2p ranks, ends."""
    dumps = {0: [entry(0, "all_gather", [[4, 4]], [[4, 4], [4, 4]], in_dtype="BFloat16", out_dtype="Half"),
                 entry(1, "send 0->1", [[4]], [[4]], p2p_seq=1),
                 entry(2, "recv 0<-?", [[8]], [[8]], p2p_seq=2),
                 entry(3, "ALLGATHER_coalesced", [], [], seq=2),
                 entry(4, "_broadcast_oop", [[2]], [[2]], seq=3)]}
    got = ingest([write_dumps(tmp_path / "one", dumps)]).collectives.sort("record_id")
    assert got.select("op", "out_sizes", "out_count", "dtypes", "out_dtypes", "p2p_src", "p2p_dst",
                      "coalesced_end").rows() == [
        ("all_gather", "4x4;4x4", 32, "BFloat16", "Half;Half", None, None, False),
        ("send", "4", 4, "Float", "Float", 0, 1, False), ("recv", "8", 8, "Float", "Float", None, 0, False),
        ("coalesced", "", 0, None, None, None, None, True),
        ("broadcast", "2", 2, "Float", "Float", None, None, False)]


@pytest.mark.parametrize("scenario", ["gpu_error_1st", "gpu_error_2nd", "lock_gil_1st", "lock_gil_2nd"])
def test_nvrx_dumps_break_no_rule(corpus, scenario):
    """NVRx's 16-rank dumps of real hangs (ranks that never issued a collective: align's finding): every
    entry the ranks share agrees, so none of these rules fires, and no window is called healthy."""
    findings, windows = fr_checks.check_store(ingest([corpus / "nvrx_fr" / scenario]))
    assert findings == [] and windows == []


@pytest.mark.parametrize("sample, kind, ranks, text", [
    # issue 33's case (c): rank 2 sends rank 0 16 floats where it expects 8 (its README names rank 2)
    ("gpu_nccl_alltoall", Match.SIZE, [2],
     "the group sends 136 elements in all and receives 128: rank 2 sends 40 and receives 32"),
    ("gpu_nccl_mismatch", Match.SIZE, [1], "input sizes differ: ranks 0,2-3: [8449]; rank 1: [8448]"),
    ("gpu_2x1_divergence", Match.OP_TYPE, [1], "collectives differ: rank 0: nccl:_reduce_scatter_base; "
                                               "rank 1: nccl:all_reduce"),
])
def test_real_nccl_runs(sample, kind, ranks, text):
    """Real NCCL runs' dumps (samples/, H200): the first check that fires, and the rank it names."""
    findings, windows = sources_fr.checks(ingest([SAMPLES / sample]))
    first = findings[0]  # (a state that differs comes last: gpu_nccl_alltoall's seq 33 has one)
    assert (first.kind, first.missing) == (kind, ranks) and text in first.label and windows == []


def test_the_verdict_says_what_the_checks_find(tmp_path):
    """End to end through `decide`: dumps alone that show every collective completed on every rank are
    HEALTHY with their window; an output size that differs is a MISMATCH naming the rank."""
    from tracekit.outcome import Kind
    from tracekit.verdict import decide

    ok = two([entry(i, "all_reduce", [[4, 4]], [[4, 4]], seq=i + 1) for i in range(5)])
    v = decide(ingest([write_dumps(tmp_path / "ok", ok)]))
    assert v.kind == Kind.HEALTHY and "healthy in the last 5 collectives the dumps hold" in v.summary, v.summary
    bad = {0: [entry(0, "all_gather", [[4]], [[8]])], 1: [entry(0, "all_gather", [[4]], [[9]])]}
    v = decide(ingest([write_dumps(tmp_path / "bad", bad)]))
    assert v.kind == Kind.MISMATCH and "rank" in v.summary and "9" in v.summary, v.summary
