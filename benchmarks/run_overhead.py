"""What `tracekit run` costs a training job: steps/s of the same gloo data-parallel loop
(samples/repro/train.py, 4 ranks, TK_STEPS steps, the Flight Recorder off) launched plainly and
under `tracekit run` (per-rank logs, FR with 2,000 entries, the hooks' collective counters twice a
second, the stall detector), REPEAT pairs run one after the other (plain, then under) so that a
shared machine's changing load falls on both alike; best and median of each.

Usage: python benchmarks/run_overhead.py [STEPS] [REPEAT]   (default 400 steps, 3 pairs)
"""

import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "samples/repro/train.py"


def loop_seconds(folder: Path) -> float:
    for f in folder.glob("rank0*.log"):
        m = re.search(r"\[timing\] steps=\d+ seconds=([\d.]+)", f.read_text(errors="replace"))
        if m:
            return float(m.group(1))
    raise SystemExit(f"no timing line in {folder}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def once(steps: int, under: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TK_SCENARIO="timing", TK_STEPS=str(steps), OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo")
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=4",
                    f"--master_port={free_port()}", str(TRAIN)]
        if under:
            env.pop("TK_OUT", None)
            cmd = [sys.executable, "-m", "tracekit.cli", "run", "--quiet", "--out", tmp, "--"] + torchrun
        else:
            env["TK_OUT"] = tmp
            env.pop("TORCH_FR_BUFFER_SIZE", None)
            cmd = torchrun
        for attempt in range(3):  # a gloo rank now and then aborts in its exit (SIGABRT), plain or not
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if done.returncode == 0 or "[timing]" in "".join(p.read_text(errors="replace") for p in Path(tmp).glob("rank0*.log")):
                return steps / loop_seconds(Path(tmp))
        raise SystemExit(f"{' '.join(cmd[:4])}... failed ({done.returncode}):\n{done.stderr[-2000:]}")


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    pairs = [(once(steps, False), once(steps, True)) for _ in range(repeat)]
    plain, under = [p for p, _ in pairs], [u for _, u in pairs]
    print(f"{steps} steps, 4 gloo ranks, {repeat} pairs (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for name, f in (("best", max), ("median", statistics.median)):
        a, b = f(plain), f(under)
        print(f"{name:6}  plain torchrun {a:7.1f} steps/s, under tracekit run {b:7.1f} steps/s ({(1 - b / a) * 100:+.1f}% slower)")


if __name__ == "__main__":
    from usage import answer_help

    answer_help(__doc__)
    main()
