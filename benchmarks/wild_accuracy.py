"""How tracekit does on real excerpts users posted (samples/wild/): each excerpt ingested alone, as a
new user would, its ranks, world size, hosts, versions, verdict and root cause against the labels a
human gave it (samples/wild/MANIFEST.*.jsonl), and how many of its lines tracekit decoded.

Usage: python benchmarks/wild_accuracy.py [--split dev|test|all] [--dir samples/wild] [--misses] [--only SUBSTRING]

Two splits (samples/wild/LABELS.md): dev = samples/wild/MANIFEST.*.jsonl, the excerpts rules are written
against; test = samples/wild/test/MANIFEST.test.jsonl, collected and labelled apart and never read while
rules are written. For the test split the output gives only counts and file names, never what tracekit
said of an excerpt (its verdict's text would teach the developers the excerpt).

Per split: verdicts of a kind the label accepts ("accept"); of those, the ones whose summary says the
label's fact (the regex "fact", case-insensitive; a null fact is said by any accepted verdict);
decisive verdicts that contradict the excerpt (a decisive kind the label does not accept; a failed
ingest counts as one); UNDECIDED where the label accepts no undecided; the count of visible global ranks
right ("visible_ranks"); the verdict of the label's own first kind ("first call": where the label
also accepts UNDECIDED, an expert who decides gives this kind); and the three miss classes: "undecided" (UNDECIDED where an expert decides),
"fact" (an accepted kind whose summary does not say the fact), "wrong-kind" (a decisive kind not accepted).

Columns (right / labelled): ranks (the global ranks in ``store.ranks`` equal the label's; a null
label wants no rank claimed), world size, hosts (distinct host names in ``store.ranks``), each
version (every version tracekit read equals the label's, numerically: 2.18.5+cuda12.1 is 2.18.5);
verdicts (decisive ones right / decisive given; HEALTHY given on an excerpt that shows a failure;
UNDECIDED given where the label is undecided); root cause (the verdict's summary or evidence names the
root-cause line as file:line or quotes its text); unknown lines (not decoded by any parser) as a share
of non-blank lines. A column's value tracekit gives where the label has none is a false claim.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WILD = ROOT / "samples" / "wild"
TEST_MANIFEST = Path("test") / "MANIFEST.test.jsonl"  # under the dev folder
SPLITS = ("dev", "test")
MISS_CLASSES = ("undecided", "fact", "wrong-kind")
VERSIONS = ("nccl", "torch", "deepspeed")
TARGETS = {"ranks": 0.95, "verdict": 0.95, "healthy_on_failure": 0, "unknown": 0.05}


@dataclass
class Score:
    """One excerpt: what the label says and what tracekit said, per column (None: not labelled)."""

    file: str
    label: dict
    got: dict
    right: dict = field(default_factory=dict)  # column -> True / False; absent: not scored
    lines: int = 0
    unknown: int = 0
    split: str = "dev"

    @property
    def accept(self) -> list[str]:
        return list(self.label.get("accept") or [self.label["verdict"]])

    @property
    def miss(self) -> str | None:
        """The miss class of the verdict (MISS_CLASSES), None when of an accepted kind that says the fact."""
        if self.right.get("fact"):
            return None
        if self.got["verdict"] == "undecided" and "undecided" not in self.accept:
            return "undecided"
        return "fact" if self.right.get("accepted") else "wrong-kind"


def manifest_lines(manifests: list[Path]) -> list[dict]:
    """Every line of the manifests as a dict (a line that is not JSON stops the scorer)."""
    out = []
    for m in manifests:
        for n, line in enumerate(m.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"error: {m}:{n}: not JSON ({e.msg})") from None
            out.append(d)
    return out


def manifests(folder: Path, split: str = "dev") -> list[Path]:
    """The manifests of a split: dev = ``folder``/MANIFEST.*.jsonl, test = ``folder``/test/MANIFEST.test.jsonl."""
    if split == "test":
        m = folder / TEST_MANIFEST
        return [m] if m.is_file() else []
    return sorted(folder.glob("MANIFEST.*.jsonl"))


def split_folder(folder: Path, split: str = "dev") -> Path:
    """Where a split's excerpts lie."""
    return folder / TEST_MANIFEST.parent if split == "test" else folder


def labels(folder: Path, split: str = "dev") -> list[dict]:
    """Every manifest line of a split whose excerpt exists, in file order (a missing test folder: none)."""
    where = split_folder(folder, split)
    out = [d for d in manifest_lines(manifests(folder, split)) if (where / d["file"]).is_file()]
    return sorted(out, key=lambda d: d["file"])


def _version(v: str | None) -> str | None:
    """The leading dotted number: '2.18.5+cuda12.1' and '2.18.5 (RCCL)' are both 2.18.5."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", v or "")
    return m.group(1) if m else None


def _same_version(label: str, got: str) -> bool:
    a, b = _version(label), _version(got)
    if a is None or b is None:
        return False
    # a label of 1.10 is right for 1.10.0 and 1.10.2; 2.1 is not right for 2.13
    short, long_ = sorted((a.split("."), b.split(".")), key=len)
    return long_[:len(short)] == short


def root_cause_line(path: Path, text: str) -> int | None:
    for n, line in enumerate(path.read_text(errors="replace").split("\n"), 1):
        if text in line:
            return n
    return None


def visible_ranks(label: dict) -> int:
    """The label's count of visible global ranks ("visible_ranks", else len(ranks))."""
    n = label.get("visible_ranks")
    return n if n is not None else len(label.get("ranks") or [])


def score_one(path: Path, label: dict, split: str = "dev") -> Score:
    from tracekit.ingest import ingest
    from tracekit.verdict import decide

    try:
        store = ingest([path])
        verdict = decide(store)
    except Exception as e:  # noqa: BLE001 - a version of tracekit that fails on an excerpt misses all of it
        got = {"ranks": ["failed"], "world_size": None, "hosts": None, "verdict": "failed",
               "summary": f"{type(e).__name__}: {e}".splitlines()[0], "evidence": [], **{k: ["failed"] for k in VERSIONS}}
        s = Score(path.name, label, got)
        s.lines = s.unknown = sum(1 for ln in path.read_text(errors="replace").split("\n") if ln.strip())
    else:
        r = store.ranks
        got = {
            "ranks": sorted(set(r["rank"].drop_nulls().to_list())),
            "world_size": r["world_size"].max(),
            "hosts": r["host"].drop_nulls().n_unique(),
            "verdict": verdict.to_dict()["kind"],
            "summary": verdict.summary,
            "evidence": list(verdict.evidence),
        }
        for k in VERSIONS:
            got[k] = sorted(set(r[f"{k}_version"].drop_nulls().to_list()))
        s = Score(path.name, label, got)
        s.lines = int((store.files["lines"] - store.files["blank"]).sum() or 0)
        s.unknown = int(store.files["unknown"].sum() or 0)

    s.split = split
    s.right["ranks"] = got["ranks"] == sorted(label["ranks"] or [])
    s.right["visible_ranks"] = (0 if got["ranks"] == ["failed"] else len(got["ranks"])) == visible_ranks(label)
    s.right["accepted"] = got["verdict"] in s.accept
    fact = label.get("fact")
    s.right["fact"] = s.right["accepted"] and (not fact or re.search(fact, got["summary"] or "", re.I) is not None)
    s.right["world_size"] = got["world_size"] == label["world_size"]
    s.right["hosts"] = (got["hosts"] or None) == label["hosts"]
    for k in VERSIONS:
        want = (label.get("versions") or {}).get(k)
        s.right[k] = (bool(got[k]) and all(_same_version(want, v) for v in got[k])) if want else not got[k]
    want, kind = label["verdict"], got["verdict"]
    if kind != "undecided":  # (a failed ingest counts as a wrong decisive verdict)
        s.right["verdict"] = kind == want
    if label.get("root_cause"):
        line = root_cause_line(path, label["root_cause"])
        said = [got["summary"]] + got["evidence"]
        at = f"{path}:{line}" if line else None
        s.right["root_cause"] = any((at and (at + ":" in e or e.endswith(at))) or label["root_cause"].strip()[:100] in e
                                    for e in said)
    return s


def score_all(folder: Path = WILD, only: str | None = None, split: str = "dev") -> list[Score]:
    where = split_folder(folder, split)
    return [score_one(where / d["file"], d, split) for d in labels(folder, split) if not only or only in d["file"]]


def figures(scores: list[Score]) -> dict:
    """Per column: right, out of how many labelled, and false claims where the label shows none."""
    def col(name: str, shown) -> dict:
        scored = [s for s in scores if name in s.right]
        has = [s for s in scored if shown(s.label)]
        return {"right": sum(s.right[name] for s in has), "of": len(has),
                "false_claims": sum(not s.right[name] for s in scored if not shown(s.label))}

    f = {
        "excerpts": len(scores),
        "ranks": col("ranks", lambda lb: lb["ranks"] is not None),
        "world_size": col("world_size", lambda lb: lb["world_size"] is not None),
        "hosts": col("hosts", lambda lb: lb["hosts"] is not None),
    }
    for k in VERSIONS:
        f[k] = col(k, lambda lb, k=k: bool((lb.get("versions") or {}).get(k)))
    decisive = [s for s in scores if "verdict" in s.right]
    f["verdict"] = {"right": sum(s.right["verdict"] for s in decisive), "of": len(decisive)}
    f["healthy_on_failure"] = sum(1 for s in scores if s.got["verdict"] == "healthy" and s.label["failure_visible"])
    und = [s for s in scores if s.label["verdict"] == "undecided"]
    f["undecided"] = {"right": sum(s.got["verdict"] == "undecided" for s in und), "of": len(und)}
    rc = [s for s in scores if "root_cause" in s.right]
    f["root_cause"] = {"right": sum(s.right["root_cause"] for s in rc), "of": len(rc)}
    f["accepted"] = {"right": sum(s.right["accepted"] for s in scores), "of": len(scores)}
    f["fact"] = {"right": sum(s.right["fact"] for s in scores), "of": f["accepted"]["right"]}
    f["first_call"] = {"right": sum(s.got["verdict"] == s.label["verdict"] for s in scores), "of": len(scores)}
    f["contradicts"] = sum(1 for s in scores if s.got["verdict"] != "undecided" and not s.right["accepted"])
    f["undecided_where_decided"] = sum(1 for s in scores if s.miss == "undecided")
    f["visible_ranks"] = {"right": sum(s.right["visible_ranks"] for s in scores), "of": len(scores)}
    f["miss_classes"] = {c: sum(1 for s in scores if s.miss == c) for c in MISS_CLASSES}
    lines, unknown = sum(s.lines for s in scores), sum(s.unknown for s in scores)
    f["unknown"] = {"lines": lines, "unknown": unknown, "share": unknown / lines if lines else 0.0}
    return f


def verdict_misses(scores: list[Score]) -> list[tuple[str, str, str, str]]:
    """(file, miss class, the label's accepted kinds and fact, what tracekit said) per verdict missed."""
    return [(s.file, s.miss, f"{'|'.join(s.accept)} /{s.label.get('fact') or ''}/",
             f"{s.got['verdict']}: {s.got['summary']}") for s in scores if s.miss]


def misses(scores: list[Score]) -> list[tuple[str, str, str, str]]:
    """(file, column, label, tracekit) for every column tracekit got wrong (the verdict's classes apart)."""
    out = []
    for s in scores:
        for name, ok in s.right.items():
            if ok or name in ("accepted", "fact"):
                continue
            if name in VERSIONS:
                want, got = (s.label.get("versions") or {}).get(name), s.got[name]
            elif name == "root_cause":
                want, got = s.label["root_cause"], f"{s.got['verdict']}: {s.got['summary']}"
            elif name == "visible_ranks":
                want, got = visible_ranks(s.label), len(s.got["ranks"])
            else:
                want, got = s.label[name], s.got[name]
            out.append((s.file, name, str(want), str(got)))
    return out


def _pct(c: dict) -> str:
    return f"{c['right']}/{c['of']} ({100 * c['right'] / c['of']:.0f}%)" if c["of"] else "0/0"


def one_line(f: dict, split: str = "dev") -> str:
    cols = " ".join(f"{k} {f[k]['right']}/{f[k]['of']}" for k in ("ranks", "world_size", "hosts", *VERSIONS))
    mc = ", ".join(f"{c} {n}" for c, n in f["miss_classes"].items())
    return (f"wild {split}: {f['excerpts']} excerpts; accepted kind {f['accepted']['right']}/{f['accepted']['of']}, "
            f"saying the fact {f['fact']['right']}/{f['fact']['of']}, first call {f['first_call']['right']}, contradicting {f['contradicts']}, "
            f"undecided where decided {f['undecided_where_decided']}, visible ranks {f['visible_ranks']['right']}/"
            f"{f['visible_ranks']['of']}; misses: {mc}; {cols}; verdict {f['verdict']['right']}/{f['verdict']['of']} decisive "
            f"right, healthy-on-failure {f['healthy_on_failure']}, undecided {f['undecided']['right']}/{f['undecided']['of']}; "
            f"root cause {f['root_cause']['right']}/{f['root_cause']['of']}; "
            f"unknown {100 * f['unknown']['share']:.1f}% of {f['unknown']['lines']} lines")


def report(split: str, scores: list[Score], show_misses: bool) -> None:
    """One split's table; for the test split, counts and file names only."""
    f = figures(scores)
    print(f"== {split} split: {f['excerpts']} excerpts")
    print(f"{'column':<24} {'right':>14}  {'false claims':>12}")
    print(f"{'verdict accepted kind':<24} {_pct(f['accepted']):>14}  {'':>12}  target 90% (with the fact)")
    print(f"{'  and saying the fact':<24} {_pct(f['fact']):>14}  {'':>12}  of {f['excerpts']}: "
          f"{100 * f['fact']['right'] / f['excerpts'] if f['excerpts'] else 0:.0f}%")
    print(f"{'first call':<24} {_pct(f['first_call']):>14}  {'':>12}  the verdict is the label's own first kind")
    print(f"{'decisive, contradicting':<24} {f['contradicts']:>14}  {'':>12}  target 0")
    print(f"{'undecided where decided':<24} {f['undecided_where_decided']:>14}")
    print(f"{'visible ranks':<24} {_pct(f['visible_ranks']):>14}  {'':>12}  target 90%")
    target = {"ranks": "target 95%", "verdict": "target 95%"}
    for k in ("ranks", "world_size", "hosts", *VERSIONS):
        print(f"{k:<24} {_pct(f[k]):>14}  {f[k]['false_claims']:>12}  {target.get(k, '')}")
    print(f"{'verdict decisive':<24} {_pct(f['verdict']):>14}  {'':>12}")
    print(f"{'healthy on failure':<24} {f['healthy_on_failure']:>14}  {'':>12}  target 0")
    print(f"{'undecided honest':<24} {_pct(f['undecided']):>14}")
    print(f"{'root cause named':<24} {_pct(f['root_cause']):>14}")
    u = f["unknown"]
    print(f"{'unknown lines':<24} {100 * u['share']:>13.1f}%  {u['unknown']} of {u['lines']}  target <= 5%")
    print("miss classes: " + ", ".join(f"{c} {n}" for c, n in f["miss_classes"].items()))
    if show_misses and split == "test":  # the file names and classes only: never what tracekit said
        print()
        for s in scores:
            if s.miss:
                print(f"{s.file:<60} {s.miss}")
    elif show_misses:
        print()
        for file, cls, want, got in verdict_misses(scores):
            print(f"{file[:52]:<52} {cls:<11} label {want[:60]!s:<60} tracekit {got[:140]}")
        for file, name, want, got in misses(scores):
            print(f"{file[:52]:<52} {name:<11} label {want[:60]!s:<60} tracekit {got[:90]}")
    print(one_line(f, split))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="example: python benchmarks/wild_accuracy.py --split dev --misses")
    ap.add_argument("--dir", default=str(WILD), help="folder of excerpts and MANIFEST.*.jsonl (default samples/wild)")
    ap.add_argument("--split", choices=("dev", "test", "all"), default="all",
                    help="dev: MANIFEST.*.jsonl; test: test/MANIFEST.test.jsonl; all: both, one table each (default)")
    ap.add_argument("--misses", action="store_true",
                    help="list every dev excerpt and column tracekit got wrong (test: the miss class and file name only)")
    ap.add_argument("--only", help="score only excerpts whose name contains this")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args(argv)
    folder = Path(a.dir)
    if not folder.is_dir():
        print(f"error: {folder}: not a folder", file=sys.stderr)
        return 2
    splits = SPLITS if a.split == "all" else (a.split,)
    scored = {sp: score_all(folder, a.only, sp) for sp in splits}
    if a.json:
        out = {}
        for sp, scores in scored.items():
            out[sp] = figures(scores)
            if sp == "test":
                out[sp]["misses"] = [{"file": s.file, "class": s.miss} for s in scores if s.miss]
            else:
                out[sp]["misses"] = [dict(zip(("file", "column", "label", "tracekit"), m)) for m in misses(scores)]
                out[sp]["verdict_misses"] = [dict(zip(("file", "class", "label", "tracekit"), m))
                                             for m in verdict_misses(scores)]
        print(json.dumps(out))
        return 0
    for n, (sp, scores) in enumerate(scored.items()):
        if n:
            print()
        report(sp, scores, a.misses)
    return 0


if __name__ == "__main__":
    sys.exit(main())
