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

On NCCL (TK_BACKEND=nccl, or where TK_BACKEND is unset and torch sees a GPU): the same job on 4 NCCL
ranks as two fake nodes of 2 ranks on GPU 0 (two `tracekit run` into one run folder, each over
`torchrun --nnodes=2 --nproc_per_node=2`; NCCL_HOSTID per rank, P2P/SHM/IB off, so NCCL talks over
NET/Socket on lo as between hosts), shorter (TK_STEPS 16, the fault at step 12, an eval every 6 steps,
a checkpoint at step 7, the NCCL timeout 45 s; each overridable by its variable); the latency is the
first verdict line of either node's `tracekit run`. NCCL does not end a hang by itself before its
timeout, so a run is stopped once the verdict is in. TK_DETECT_KEEP=DIR keeps each run's folder in
DIR/<scenario>[_<i>]/run, with tracekit run's output (console.node*.txt, each line stamped) and the
fault time (fault.txt), and lets each run end by itself (the NCCL timeout) instead of stopping it.

Usage: python benchmarks/detect_latency.py [RUNS] [SCENARIO ...]   (default 5 runs of each of
deadlock crash mismatch slow healthy). The last line: median detection X s (the slowest fault
scenario's median), wrong verdicts N, false alarms M.
"""

import json
import os
import re
import shutil
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
NCCL_JOB = {"TK_STEPS": "16", "TK_FAULT_STEP": "12", "TK_EVAL_EVERY": "6", "TK_EVAL_S": "3", "TK_CKPT_STEP": "7",
            "TK_CKPT_S": "3", "TK_FIRST_S": "3", "TK_TIMEOUT_S": "45"}
NCCL_NET = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1", "NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "lo",
            "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def backend() -> str:
    b = os.environ.get("TK_BACKEND")
    if b:
        return b.lower()
    try:
        import torch

        return "nccl" if torch.cuda.is_available() else "gloo"
    except ImportError:
        return "gloo"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def once(scenario: str, tmp: Path, nccl: bool = False, keep: Path | None = None) -> dict:
    out, fault = tmp / "run", tmp / "fault.txt"
    env = dict(os.environ, TK_SCENARIO=scenario, TK_FAULT_FILE=str(fault), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
    port = free_port()
    tk = [sys.executable, "-m", "tracekit.cli", "run", "--quiet", "--out", str(out), "--"]
    if nccl:
        env = {**NCCL_JOB, **NCCL_NET, **env, "TK_BACKEND": "nccl"}
        if scenario == "slow":
            env.setdefault("TK_FAULT_RANK", "3")  # the last rank
        env.setdefault("CUDA_VISIBLE_DEVICES", "0")
        launches = [(tk + [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", f"--node_rank={node}",
                           "--nproc_per_node=2", "--master_addr=127.0.0.1", f"--master_port={port}", str(JOB)],
                     dict(env, NCCL_HOSTID=f"fakenode{node}")) for node in (0, 1)]
    else:
        launches = [(tk + [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=4", f"--master_port={port}",
                           str(JOB)], env)]
    procs = [subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)  # its own process group: stopped whole once the verdict is in
             for cmd, e in launches]
    lines: list[tuple[float, str]] = []
    per: list[list[tuple[float, str]]] = [[] for _ in procs]
    first: list[tuple[float, re.Match]] = []

    def read(proc, mine):
        for line in proc.stdout:
            now = time.time()
            lines.append((now, line.rstrip("\n")))
            mine.append((now, line.rstrip("\n")))
            m = VERDICT.match(line)
            if m and not first:
                first.append((now, m))

    readers = [threading.Thread(target=read, args=(p, mine), daemon=True) for p, mine in zip(procs, per)]
    for reader in readers:
        reader.start()
    stop_at_verdict = keep is None and (nccl and scenario != "healthy" or scenario in ("deadlock", "slow"))
    deadline = time.time() + RUN_S
    while any(p.poll() is None for p in procs) and time.time() < deadline and not (first and stop_at_verdict):
        time.sleep(0.2)
    if first:
        time.sleep(1.0)  # verdict.json is written just after the verdict is printed
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for reader in readers:
        reader.join(timeout=5)
    r = {"scenario": scenario, "verdict": None, "latency_s": None, "ranks": None, "tail": [x for _, x in lines[-8:]],
         "rounds": sum(1 for _, x in lines if "stall dump" in x), "verdicts": sum(1 for _, x in lines if VERDICT.match(x))}
    if first:
        at, m = first[0]
        r["verdict"] = m["kind"].lower()
        if fault.exists():
            r["latency_s"] = at - float(fault.read_text().split()[0])
        r["line"] = m.group(0).rstrip()
        try:
            r["ranks"] = json.loads((out / "verdict.json").read_text())["verdict"]["ranks"]
        except (OSError, ValueError, KeyError):
            pass
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        if out.exists():
            shutil.copytree(out, keep / "run", symlinks=True, dirs_exist_ok=True)
        if fault.exists():
            shutil.copy(fault, keep / "fault.txt")
        for i, mine in enumerate(per):
            (keep / f"console.node{i}.txt").write_text("".join(f"{t:.3f} {x}\n" for t, x in mine))
        (keep / "result.json").write_text(json.dumps(r, indent=1) + "\n")
    return r


def right(r: dict) -> bool:
    kind, ranks = EXPECT[r["scenario"]]
    return r["verdict"] == kind and (ranks is None or r["ranks"] == ranks)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    scenarios = sys.argv[2:] or ["deadlock", "crash", "mismatch", "slow", "healthy"]
    nccl = backend() == "nccl"
    keep = Path(os.environ["TK_DETECT_KEEP"]) if os.environ.get("TK_DETECT_KEEP") else None
    print(f"backend {'nccl: 2 fake nodes x 2 ranks on GPU 0' if nccl else 'gloo: 4 ranks'}", flush=True)
    results = []
    for scenario in scenarios:
        for i in range(runs):
            with tempfile.TemporaryDirectory(prefix="tk-detect-") as tmp:
                where = None if keep is None else keep / (scenario if runs == 1 else f"{scenario}_{i + 1}")
                r = once(scenario, Path(tmp), nccl, where)
            results.append(r)
            lat = f"{r['latency_s']:5.1f} s" if r["latency_s"] is not None else "    - "
            print(f"{scenario:9} run {i + 1}: {lat}  {r['verdict'] or 'no verdict':14} ranks {r['ranks']}  "
                  f"{'right' if right(r) else 'WRONG'}  ({r['rounds']} dump rounds, {r['verdicts']} verdict lines)", flush=True)
            if r.get("line"):
                print(f"    {r['line'][:300]}", flush=True)
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
