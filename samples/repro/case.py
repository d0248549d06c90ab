"""Reproduce the ms-swift 2x2 hang's candidate causes on CPU, each under ``tracekit run``.

Usage: python samples/repro/case.py SCENARIO [--topology 2x2|1x4] [--fixed] [--out DIR]

Every run is DeepSpeed ZeRO-3 with CPU offload of parameters and optimizer (ms-swift's
zero3_offload settings, samples/repro/zero3_offload.json) on a tiny Qwen3 over gloo
(samples/repro/train_zero3.py). 2x2 is two torchrun launches with ``--nnodes=2`` meeting at the
IPv6 master address fd00::1, each in its own network namespace (tk0 / tk1, joined by a veth pair
named eth0, samples/repro/netns.sh) with its own host name (node0 / node1); where namespaces are
not available (no root, or TK_NO_NETNS=1) the two "nodes" share the host and meet at ::1. 1x4 is
one torchrun.

SCENARIO   cause (../shared/case/README.md)                 --fixed applies
healthy    -                                                 -
divergence 2: node 1's rank runs one micro-batch fewer       the same data on every rank
wandb      4: rank 0 blocked before the first step           WANDB_MODE=offline
crash      2: a rank on node 1 raises                         (no crash)
iface      3: GLOO_SOCKET_IFNAME=lo: each node advertises   GLOO_SOCKET_IFNAME=eth0
           an address the other cannot reach
slow       1: big all-gathers every micro-step               ZeRO-2 (no parameter all-gathers)

The run folder (OUT/<scenario>[_fixed]_<topology>) holds every rank's log, the NCCL/Gloo settings,
Flight Recorder and stack dumps; ``tracekit ingest`` on it prints the verdict.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCENARIOS = {
    # name: (TK_SCENARIO, extra env, extra env when fixed)
    "healthy": ("healthy", {}, {}),
    "divergence": ("divergence", {}, {"TK_SCENARIO": "healthy"}),
    "wandb": ("wandb_stall", {}, {"WANDB_MODE": "offline"}),
    "crash": ("crash", {}, {"TK_SCENARIO": "healthy"}),
    "iface": ("healthy", {"GLOO_SOCKET_IFNAME": "lo"}, {"GLOO_SOCKET_IFNAME": "eth0"}),
    "slow": ("slow", {"TK_SLOW_NUMEL": str(16 << 20), "TK_SLOW_REPEAT": "4", "TK_STEPS": "3", "TK_STALL": "2"},
             {"TK_ZERO_STAGE": "2", "TK_SCENARIO": "healthy"}),
}


def netns_ready() -> bool:
    if os.environ.get("TK_NO_NETNS") or os.geteuid() != 0 or not shutil.which("ip"):
        return False
    up = subprocess.run(["bash", str(HERE / "netns.sh"), "check"], capture_output=True)
    if up.returncode != 0:
        subprocess.run(["bash", str(HERE / "netns.sh"), "down"], capture_output=True)
        up = subprocess.run(["bash", str(HERE / "netns.sh"), "up"], capture_output=True)
    return up.returncode == 0


def run(scenario: str, topology: str, fixed: bool, out: Path, timeout: float = 240) -> Path:
    tk, env_extra, fix = SCENARIOS[scenario]
    folder = out / f"{scenario}{'_fixed' if fixed else ''}_{topology}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = dict(os.environ, TK_SCENARIO=tk, TK_TIMEOUT_S="30", TK_STEPS="4", TK_EVAL_EVERY="2", OMP_NUM_THREADS="1",
               TK_PROFILE="1" if scenario == "healthy" else "0", PYTHONPATH=str(ROOT))
    env.update(env_extra)
    if fixed:
        env.update(fix)
    env.pop("TK_OUT", None)
    stall = env.pop("TK_STALL", "6")  # the slow run's steps outlast a 2 s stall: dumps a few seconds apart
    run_cmd = [sys.executable, "-m", "tracekit.cli", "run", "--quiet", "--out", str(folder), "--stall", stall,
               "--repeat", "3", "--rounds", "3"]
    train = HERE / "train_zero3.py"  # named relative to the working folder where inside it: no machine's path recorded
    train = str(train.relative_to(Path.cwd().resolve()) if train.is_relative_to(Path.cwd().resolve()) else train)
    port = 29600 + os.getpid() % 300
    procs = []
    if topology == "1x4":
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
        cmd = run_cmd + ["--", sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=4",
                         "--master_addr=::1", f"--master_port={port}", train]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
    else:
        ns = netns_ready()
        master = "fd00::1" if ns else "::1"
        for node in (0, 1):
            e = dict(env)
            e.setdefault("GLOO_SOCKET_IFNAME", "eth0" if ns else "lo")
            cmd = run_cmd + ["--", sys.executable, "-m", "torch.distributed.run", "--nnodes=2", f"--node_rank={node}",
                             "--nproc_per_node=2", f"--master_addr={master}", f"--master_port={port}", train]
            if ns:  # its own network namespace and host name: a node of its own
                cmd = ["ip", "netns", "exec", f"tk{node}", "unshare", "--uts", "sh", "-c",
                       f'hostname node{node} && exec "$@"', "sh"] + cmd
            procs.append(subprocess.Popen(cmd, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:  # whatever is left of either node (a torchrun agent waiting for a dead peer) goes too
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        p.wait()
    for junk in ("procs",):
        shutil.rmtree(folder / junk, ignore_errors=True)
    for f in folder.glob("dump.*.request"):
        f.unlink()
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--topology", choices=["2x2", "1x4"], default="2x2")
    ap.add_argument("--fixed", action="store_true", help="apply the scenario's fix")
    ap.add_argument("--out", type=Path, default=Path("case-runs"))
    a = ap.parse_args()
    print(run(a.scenario, a.topology, a.fixed, a.out))


if __name__ == "__main__":
    main()
