"""Launch the reproduction: ``python samples/repro/run.py {1x4|2x2} SCENARIO OUT``.

1x4 is one torchrun with 4 ranks; 2x2 is two torchrun launches with ``--nnodes=2`` (node ranks
0 and 1, 2 ranks each) meeting at an IPv6 master address, as in the ms-swift report. Each
launcher's own output goes to ``OUT/torchrun_node<N>.log``. Returns when both launchers end.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket(socket.AF_INET6) as s:
        s.bind(("::1", 0))
        return s.getsockname()[1]


def script(name: str) -> str:
    """``samples/repro/NAME`` as the launch names it: relative to the working folder where it lies
    inside it, so the recorded command line and stack dumps carry no machine's absolute path."""
    try:
        return str((HERE / name).relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(HERE / name)


def launch(topology: str, scenario: str, out: str, timeout: float = 120) -> list[int]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TK_OUT=str(out), TK_SCENARIO=scenario, TORCH_FR_BUFFER_SIZE="2000",
               OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="lo", PYTHONUNBUFFERED="1")
    port = str(free_port())
    nodes = [("1", "4", "0")] if topology == "1x4" else [("2", "2", "0"), ("2", "2", "1")]
    procs = []
    for nnodes, nproc, node_rank in nodes:
        cmd = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nnodes}", f"--node_rank={node_rank}",
               f"--nproc_per_node={nproc}", "--master_addr=::1", f"--master_port={port}",
               script("train.py")]
        log = open(out / f"torchrun_node{node_rank}.log", "w")
        log.write("$ " + " ".join(cmd[1:]) + f"\n# TK_SCENARIO={scenario}\n")
        log.flush()
        procs.append((subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), log))
    codes = []
    for p, log in procs:
        try:
            codes.append(p.wait(timeout=timeout))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
        log.close()
    return codes


if __name__ == "__main__":
    print(launch(*sys.argv[1:4]))
