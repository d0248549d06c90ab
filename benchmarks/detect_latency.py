"""How soon `tracekit run` prints the verdict of a stalled or failed job, and whether it is right.

Each run is a real gloo job of 4 ranks (samples/repro/live_job.py: a slow first step, uneven steps,
an evaluation every 8 steps, a checkpoint save at step 12) under `tracekit run` with its defaults.
At step 20 one rank stops (deadlock), raises (crash), all_reduces another size (mismatch) or gets
6 s slower every step (slow); the faulting rank records the wall-clock time it starts. The
latency is the time from then to the first `tracekit: verdict` line on tracekit run's output.
Healthy runs (evals, a checkpoint, uneven steps, no fault) count the verdicts printed anyway:
false alarms; and the stall dump rounds taken (a dump round alone prints no verdict).

The baseline is the former `tracekit run`: dumps once no log grew for --stall 300 s, the second
round 60 s later, and no verdict until someone runs `tracekit ingest`.

Usage: python benchmarks/detect_latency.py [RUNS] [SCENARIO ...]   (default 5 runs of each of
deadlock crash mismatch slow healthy). The last line: median detection X s (the slowest fault
scenario's median), wrong verdicts N, false alarms M.
"""

import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "samples/repro/live_job.py"
EXPECT = {"deadlock": ("deadlock", [3]), "crash": ("crashed-rank", [3]), "mismatch": ("mismatch", [1]),
          "slow": ("slow-progress", None), "healthy": (None, None)}
VERDICT = re.compile(r"^tracekit: verdict \((?P<how>.*?)\): (?P<kind>[A-Z][A-Z-]+): (?P<summary>.*)")
EXITS = {"crash", "mismatch"}  # gloo ends these jobs itself: their verdict comes at exit
RUN_S = 150  # a run that has not ended by then is stopped


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def once(scenario: str, tmp: Path) -> dict:
    out, fault = tmp / "run", tmp / "fault.txt"
    env = dict(os.environ, TK_SCENARIO=scenario, TK_FAULT_FILE=str(fault), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    cmd = [sys.executable, "-m", "tracekit.cli", "run", "--quiet", "--out", str(out), "--",
           sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=4", f"--master_port={free_port()}", str(JOB)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)  # its own process group: stopped whole once the verdict is in
    lines: list[tuple[float, str]] = []
    first: list[tuple[float, re.Match]] = []

    def read():
        for line in proc.stdout:
            lines.append((time.time(), line.rstrip("\n")))
            m = VERDICT.match(line)
            if m and not first:
                first.append((time.time(), m))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.time() + RUN_S
    while proc.poll() is None and time.time() < deadline and not (first and scenario in ("deadlock", "slow")):
        time.sleep(0.2)
    if first:
        time.sleep(1.0)  # verdict.json is written just after the verdict is printed
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(timeout=5)
    r = {"scenario": scenario, "verdict": None, "latency_s": None, "ranks": None, "tail": [x for _, x in lines[-8:]],
         "rounds": sum(1 for _, x in lines if "stall dump" in x), "verdicts": sum(1 for _, x in lines if VERDICT.match(x))}
    if first:
        at, m = first[0]
        r["verdict"] = m["kind"].lower()
        if fault.exists():
            r["latency_s"] = at - float(fault.read_text().split()[0])
        try:
            r["ranks"] = json.loads((out / "verdict.json").read_text())["verdict"]["ranks"]
        except (OSError, ValueError, KeyError):
            pass
    return r


def right(r: dict) -> bool:
    kind, ranks = EXPECT[r["scenario"]]
    return r["verdict"] == kind and (ranks is None or r["ranks"] == ranks)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    scenarios = sys.argv[2:] or ["deadlock", "crash", "mismatch", "slow", "healthy"]
    results = []
    for scenario in scenarios:
        for i in range(runs):
            with tempfile.TemporaryDirectory(prefix="tk-detect-") as tmp:
                r = once(scenario, Path(tmp))
            results.append(r)
            lat = f"{r['latency_s']:5.1f} s" if r["latency_s"] is not None else "    - "
            print(f"{scenario:9} run {i + 1}: {lat}  {r['verdict'] or 'no verdict':14} ranks {r['ranks']}  "
                  f"{'right' if right(r) else 'WRONG'}  ({r['rounds']} dump rounds, {r['verdicts']} verdict lines)", flush=True)
            if not right(r):  # what tracekit run said last
                print("".join(f"    | {x[:200]}\n" for x in r["tail"]), end="", flush=True)
    print("baseline (the former tracekit run): first dumps 300 s after the logs stop, the second round 60 s later, "
          "no verdict printed (tracekit ingest by hand)")
    medians = {}
    for scenario in scenarios:
        rs = [r for r in results if r["scenario"] == scenario]
        lats = [r["latency_s"] for r in rs if r["latency_s"] is not None]
        if EXPECT[scenario][0] is None:
            print(f"{scenario:9} {len(rs)} runs: {sum(r['verdicts'] > 0 for r in rs)} with a verdict printed (false alarms), "
                  f"{sum(r['rounds'] for r in rs)} dump rounds in all")
            continue
        if lats:
            medians[scenario] = statistics.median(lats)
            print(f"{scenario:9} {len(rs)} runs: median {medians[scenario]:.1f} s, range {min(lats):.1f}-{max(lats):.1f} s; "
                  f"{sum(right(r) for r in rs)}/{len(rs)} right (baseline: " + ("no verdict printed at exit)" if scenario in EXITS
                                                                        else "first dumps after 300 s, no verdict)"))
        else:
            print(f"{scenario:9} {len(rs)} runs: no verdict printed")
    faults = [r for r in results if EXPECT[r["scenario"]][0] is not None]
    wrong = sum(not right(r) for r in faults)
    alarms = sum(r["verdicts"] > 0 for r in results if EXPECT[r["scenario"]][0] is None)
    worst = max(medians.values()) if medians else float("nan")
    print(f"median detection {worst:.1f} s, wrong verdicts {wrong}, false alarms {alarms}")


if __name__ == "__main__":
    from usage import answer_help

    answer_help(__doc__)
    main()
