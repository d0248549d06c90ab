"""Does a verdict keep its cause when ordinary lines come with it? A check that needs no labels.

Real logs are never only the failure: progress bars, warnings and loading messages come before it,
clean-up lines (a second warning of the process group's destructor, wandb's sync lines, a shell prompt)
after it. This benchmark takes the dev excerpts whose verdict is decisive and accepted by the label (as
``benchmarks/wild_accuracy.py`` scores them now, or as a saved dump says: ``--dump``, one JSON line per
excerpt with its ``file``, ``label``, ``got`` and ``right``), writes three variants of each and ingests
each alone, as ``benchmarks/wild_accuracy.py`` does:

- ``before``: 30 ordinary progress lines before the excerpt;
- ``among``: one ordinary line after every 5th line (never inside a traceback or a wrapped line);
- ``after``: 10 clean-up lines after it.

It prints, per variant, how many verdicts changed (kind, rank count; the summary's change is counted
apart) and the changed excerpts. The ordinary lines are lines of dev excerpts labelled ``healthy`` that
tracekit reads as no event, no rank and no host (checked here by ingesting them), in the classes of
``ORDINARY``; the clean-up lines are ``CLEAN_UP``, each with where it is printed.

Usage: python benchmarks/mix_invariance.py [--sample 120] [--seed 1] [--only PREFIX] [--dump DEV.jsonl]
(every dev excerpt: dv18-dv21, the transfer check of sessions 18-21, are ordinary dev excerpts now).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WILD = ROOT / "samples" / "wild"
HELD_OUT: tuple[str, ...] = ()  # dev excerpts kept out (a transfer check no one opens), by prefix

# Classes of ordinary lines taken from healthy excerpts: (name, pattern).
ORDINARY = (
    ("progress bar", re.compile(r"\d+%\|.*\|\s*\d+/\d+|\d+(?:\.\d+)?(?:it/s|s/it)\]")),
    ("loss dict", re.compile(r"\{'loss': ")),
    ("python warning", re.compile(r"(?:User|Future|Deprecation)Warning: ")),
    ("model loading", re.compile(r"Some weights of|loading (?:file|configuration file|weights)|Special tokens have been added")),
    ("wandb", re.compile(r"^wandb: ")),
    ("pip notice", re.compile(r"^\[notice\] ")),
)  # (and "healthy line": any other line of a healthy excerpt that reads as no event, QUIET_NOT aside)
PROGRESS = ("progress bar", "loss dict")
#: a healthy excerpt's other lines are taken as ordinary where they read as no event, unless they carry what
#: makes them evidence without an event (NCCL's lines: communicators, versions; an address: a host; a
#: launcher's world or a program's end; a step or an epoch, which a series reads)
QUIET_NOT = (r"(?i)NCCL|RCCL|HCCL|\d+\.\d+\.\d+\.\d+|world|size|step|epoch|iter|done|finish|complete|success"
             r"|exit|end\b|pass|ok\b|%|/s\b|torch|version|\bv?\d+\.\d+")

# Clean-up printed after a failure, as the runtimes print it.
CLEAN_UP = (
    # pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (~Backend destructor, 2.4+), as quoted
    # verbatim in samples/wild/dv2-014-colossalai-pg-not-destroyed-then-sigterm-7.txt (without the
    # launcher's [rankN]: prefix, which is a rank's own label and not clean-up)
    "[W219 09:17:03.293812312 ProcessGroupNCCL.cpp:1168] Warning: WARNING: process group has NOT been destroyed "
    "before we destruct ProcessGroupNCCL. On normal program exit, the application should call destroy_process_group "
    "to ensure that any pending NCCL operations have finished in this process. In rare cases this process can exit "
    "before this point and block the progress of another member of the process group. This constraint has always "
    "been present,  but this warning has only been added since PyTorch 2.4 (function operator())",
    # wandb wandb/sdk/wandb_run.py:4018 (View run), :4028 (Synced ... file(s)), :4046 (Find logs at)
    "wandb: 🚀 View run glowing-sun-12 at: https://wandb.ai/team/proj/runs/3k2j1h0g",
    "wandb: Synced 5 W&B file(s), 0 media file(s), 2 artifact file(s) and 0 other file(s)",
    "wandb: Find logs at: ./wandb/run-20240311_101512-3k2j1h0g/logs",
    # wandb/sdk/wandb_run.py:4107 / :4154 (printer.grid titles)
    "wandb: Run history:",
    "wandb: Run summary:",
    # CPython Python/errors.c (PyErr_WriteUnraisable: "Exception ignored in: <obj>"), at interpreter exit
    "Exception ignored in atexit callback: <function _exit_function at 0x7f3c2a1b3e20>",
    # a shell prompt after the job returns
    "(base) user@gpu-node-01:~/project$ ",
    "user@gpu-node-01:~/project$ nvidia-smi",
    "",
)


def _held_out(name: str) -> bool:
    return name.startswith(HELD_OUT)


def candidates(rows: list[dict]) -> list[dict]:
    """The dump's excerpts with a decisive verdict of a kind the label accepts (none kept out)."""
    return [r for r in rows if not _held_out(r["file"]) and r["got"]["verdict"] not in ("undecided", None)
            and r["right"].get("accepted")]


def ordinary_pool(rows: list[dict], per_class: int = 40) -> dict[str, list[str]]:
    """Ordinary lines, ingested together: progress bars and loss dicts of healthy dev excerpts (read as
    progress or step events and nothing else), and the other classes of ORDINARY from any dev excerpt
    (read as no event at all); a line that names a rank, a node or a host is never taken. Progress
    lines keep their excerpt's order, as one series per excerpt (``series``: one bar's lines, the
    way a real log prints them before a failure)."""
    from tracekit.ingest import ingest

    found: dict[str, tuple[str, str]] = {}
    for r in rows:
        if _held_out(r["file"]):
            continue
        healthy = r["label"]["verdict"] == "healthy"
        for text in (WILD / r["file"]).read_text(errors="replace").splitlines():
            if re.search(r"rank|\[\d+(?:,\d+)?\]|node|host|gpu\d|error|fail|timeout|exception", text, re.I) or len(text) > 300:
                continue
            for name, pat in ORDINARY:
                if pat.search(text) and (healthy or name not in PROGRESS):
                    found.setdefault(text, (name, r["file"]))
                    break
            else:  # (any other line of a healthy excerpt with words, not NCCL's or a launcher's own)
                if healthy and re.search(r"[A-Za-z]{4}", text) and not re.search(QUIET_NOT, text):
                    found.setdefault(text, ("healthy line", r["file"]))
    texts = list(found)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "pool.log"
        p.write_text("\n".join(texts) + "\n")
        ev = ingest([p]).events
    kinds: dict[int, set] = {}
    for line, kind in zip(ev["line"].to_list(), ev["kind"].cast(str).to_list()):
        kinds.setdefault(line, set()).add(kind)
    kept: dict[str, list[str]] = {name: [] for name, _ in ORDINARY}
    kept["healthy line"] = []
    series: dict[str, list[str]] = {}
    for n, text in enumerate(texts, 1):
        name, file = found[text]
        allowed = {"step", "progress"} if name in PROGRESS else set()
        if not kinds.get(n, set()) <= allowed:
            continue
        if name in PROGRESS:
            series.setdefault(file, []).append(text)
        elif len(kept[name]) < per_class:
            kept[name].append(text)
    kept["series"] = [s for s in series.values() if len(s) >= 5]
    return kept


def _no_insert_after(lines: list[str]) -> set[int]:
    """Indexes after which no line may go: inside a traceback, or before a wrapped (indented) line."""
    prefix = re.compile(r"^(?:\[?rank\d+\]?:\s?|\[\d+\]:|\S+:\s)?")  # a launcher's label, kept off
    blocked: set[int] = set()
    in_tb = False
    for i, text in enumerate(lines):
        body = prefix.sub("", text, count=1)
        nxt = prefix.sub("", lines[i + 1], count=1) if i + 1 < len(lines) else ""
        if "Traceback (most recent call last)" in text:
            in_tb = True
        elif in_tb and body.strip() and not re.match(r"\s|File \"|\^", body):
            in_tb = False  # the exception's own line ends the traceback
        chained = re.match(r"\s*$|During handling|The above exception|Traceback", nxt)
        if in_tb or re.match(r"\s", nxt) or (chained and i + 1 < len(lines) and nxt.strip()):
            blocked.add(i)
    return blocked


def variants(lines: list[str], pool: dict, rng: random.Random) -> dict[str, list[str]]:
    """``before``: the first 30 lines of one healthy excerpt's progress series; ``among``: an ordinary line
    that is no progress (a warning, a loading line) after every 5th line, where nothing is cut by it;
    ``after``: CLEAN_UP. (A progress line among the failure's lines would itself say the run went on.)"""
    before = rng.choice(pool["series"])[:30] + lines
    quiet = [t for n, ts in pool.items() if n != "series" and n not in PROGRESS for t in ts]
    blocked = _no_insert_after(lines)
    among: list[str] = []
    for i, text in enumerate(lines):
        among.append(text)
        if (i + 1) % 5 == 0 and i not in blocked:
            among.append(rng.choice(quiet))
    after = lines + list(CLEAN_UP)
    return {"before": before, "among": among, "after": after}


def scored_dev(only: str | None = None) -> list[dict]:
    """Every dev excerpt's label; those whose name holds ``only`` (all where None) scored too, as
    ``benchmarks/wild_accuracy.py`` scores them (their verdict and rights)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import wild_accuracy as wa

    out = []
    for d in wa.labels(WILD, "dev"):
        row = {"file": d["file"], "label": d, "got": {"verdict": None}, "right": {}}
        if (not only or only in d["file"]) and not _held_out(d["file"]):
            s = wa.score_one(WILD / d["file"], d, "dev")
            row.update(got={"verdict": s.got["verdict"]}, right=s.right)
        out.append(row)
    return out


def judge(path: Path) -> dict:
    from tracekit.ingest import ingest
    from tracekit.verdict import decide

    store = ingest([path])
    v = decide(store)
    return {"verdict": v.to_dict()["kind"], "summary": v.summary,
            "ranks": len(set(store.ranks["rank"].drop_nulls().to_list()))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dump", type=Path, default=None, help="a saved dev dump (default: score the dev split now)")
    ap.add_argument("--sample", type=int, default=0, help="how many excerpts (0: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default=None)
    ap.add_argument("--json", type=Path, default=None, help="write every variant's result here")
    ap.add_argument("--show-pool", action="store_true")
    a = ap.parse_args(argv)
    rows = ([json.loads(x) for x in a.dump.read_text().splitlines() if x.strip()] if a.dump
            else scored_dev(a.only))
    pool = ordinary_pool(rows)
    if a.show_pool:
        for name, ts in pool.items():
            print(f"## {name}: {len(ts)}")
            for t in ts[:8]:
                print("   ", str(t)[:150])
    rng = random.Random(a.seed)
    base = [r for r in candidates(rows) if not a.only or a.only in r["file"]]
    if a.sample and a.sample < len(base):
        base = rng.sample(base, a.sample)
    changed: dict[str, list[tuple[str, str]]] = {"before": [], "among": [], "after": []}
    summary_only: Counter = Counter()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in sorted(base, key=lambda r: r["file"]):
            lines = (WILD / r["file"]).read_text(errors="replace").splitlines()
            was = judge(WILD / r["file"])
            for name, vlines in variants(lines, pool, random.Random(f"{a.seed}:{r['file']}")).items():
                p = Path(tmp) / r["file"]
                p.write_text("\n".join(vlines) + "\n")
                now = judge(p)
                what = []
                if now["verdict"] != was["verdict"]:
                    what.append(f"{was['verdict']} -> {now['verdict']}")
                if now["ranks"] != was["ranks"]:
                    what.append(f"ranks {was['ranks']} -> {now['ranks']}")
                if what:
                    changed[name].append((r["file"], "; ".join(what)))
                elif now["summary"] != was["summary"]:
                    summary_only[name] += 1
                out.append({"file": r["file"], "variant": name, "was": was, "now": now})
    print(f"{len(base)} excerpts (decisive, accepted), seed {a.seed}")
    for name, items in changed.items():
        kinds = Counter(w for _, w in items)
        print(f"{name:7s} changed {len(items):3d}  (summary only: {summary_only[name]})  "
              + ", ".join(f"{k}: {n}" for k, n in kinds.most_common()))
        for f, w in items:
            print(f"    {f}: {w}")
    if a.json:
        a.json.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
