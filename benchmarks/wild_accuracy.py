"""How tracekit does on real excerpts users posted (samples/wild/): each excerpt ingested alone, as a
new user would, its ranks, world size, hosts, versions, verdict and root cause against the labels a
human gave it (samples/wild/MANIFEST.*.jsonl), and how many of its lines tracekit decoded.

Usage: python benchmarks/wild_accuracy.py [--dir samples/wild] [--misses] [--only SUBSTRING]

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


def labels(folder: Path) -> list[dict]:
    """Every manifest line of ``folder`` whose excerpt exists, in file order."""
    out = []
    for m in sorted(folder.glob("MANIFEST.*.jsonl")):
        for n, line in enumerate(m.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"error: {m}:{n}: not JSON ({e.msg})") from None
            if (folder / d["file"]).is_file():
                out.append(d)
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


def score_one(path: Path, label: dict) -> Score:
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

    s.right["ranks"] = got["ranks"] == sorted(label["ranks"] or [])
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


def score_all(folder: Path = WILD, only: str | None = None) -> list[Score]:
    return [score_one(folder / d["file"], d) for d in labels(folder) if not only or only in d["file"]]


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
    lines, unknown = sum(s.lines for s in scores), sum(s.unknown for s in scores)
    f["unknown"] = {"lines": lines, "unknown": unknown, "share": unknown / lines if lines else 0.0}
    return f


def misses(scores: list[Score]) -> list[tuple[str, str, str, str]]:
    """(file, column, label, tracekit) for every column tracekit got wrong."""
    out = []
    for s in scores:
        for name, ok in s.right.items():
            if ok:
                continue
            if name in VERSIONS:
                want, got = (s.label.get("versions") or {}).get(name), s.got[name]
            elif name == "root_cause":
                want, got = s.label["root_cause"], f"{s.got['verdict']}: {s.got['summary']}"
            else:
                want, got = s.label[name], s.got[name]
            out.append((s.file, name, str(want), str(got)))
    return out


def _pct(c: dict) -> str:
    return f"{c['right']}/{c['of']} ({100 * c['right'] / c['of']:.0f}%)" if c["of"] else "0/0"


def one_line(f: dict) -> str:
    cols = " ".join(f"{k} {f[k]['right']}/{f[k]['of']}" for k in ("ranks", "world_size", "hosts", *VERSIONS))
    return (f"wild: {f['excerpts']} excerpts; {cols}; verdict {f['verdict']['right']}/{f['verdict']['of']} decisive "
            f"right, healthy-on-failure {f['healthy_on_failure']}, undecided {f['undecided']['right']}/{f['undecided']['of']}; "
            f"root cause {f['root_cause']['right']}/{f['root_cause']['of']}; "
            f"unknown {100 * f['unknown']['share']:.1f}% of {f['unknown']['lines']} lines")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="example: python benchmarks/wild_accuracy.py --misses")
    ap.add_argument("--dir", default=str(WILD), help="folder of excerpts and MANIFEST.*.jsonl (default samples/wild)")
    ap.add_argument("--misses", action="store_true", help="list every excerpt and column tracekit got wrong")
    ap.add_argument("--only", help="score only excerpts whose name contains this")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args(argv)
    folder = Path(a.dir)
    if not folder.is_dir():
        print(f"error: {folder}: not a folder", file=sys.stderr)
        return 2
    scores = score_all(folder, a.only)
    f = figures(scores)
    if a.json:
        print(json.dumps({**f, "misses": [dict(zip(("file", "column", "label", "tracekit"), m)) for m in misses(scores)]}))
        return 0
    target = {"ranks": "target 95%", "verdict": "target 95%"}
    print(f"{'column':<18} {'right':>14}  {'false claims':>12}")
    for k in ("ranks", "world_size", "hosts", *VERSIONS):
        print(f"{k:<18} {_pct(f[k]):>14}  {f[k]['false_claims']:>12}  {target.get(k, '')}")
    print(f"{'verdict decisive':<18} {_pct(f['verdict']):>14}  {'':>12}  target 95%")
    print(f"{'healthy on failure':<18} {f['healthy_on_failure']:>14}  {'':>12}  target 0")
    print(f"{'undecided honest':<18} {_pct(f['undecided']):>14}")
    print(f"{'root cause named':<18} {_pct(f['root_cause']):>14}")
    u = f["unknown"]
    print(f"{'unknown lines':<18} {100 * u['share']:>13.1f}%  {u['unknown']} of {u['lines']}  target <= 5%")
    if a.misses:
        print()
        for file, name, want, got in misses(scores):
            print(f"{file[:52]:<52} {name:<11} label {want[:60]!s:<60} tracekit {got[:90]}")
    print(one_line(f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
