"""``tracekit run``: launch a training command with evidence collection on every rank.

The launcher changes nothing in the user's command. It sets, for every process it starts (the
user's own settings win):
- NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS (INIT,NET,COLL by default), NCCL_DEBUG_FILE per host and pid;
- the Flight Recorder (TORCH_FR_BUFFER_SIZE, dump on watchdog timeout into the run folder);
- a sitecustomize (tracekit/boot) that makes each rank write its stdout/stderr into its own log with
  a header naming its rank, host and pid, and dump its Flight Recorder and stacks on request.
Rank 0's log is echoed to the terminal. It records the command, the environment and the installed packages in ``launch.<host>.<pid>.txt``,
copies the launcher's own output to ``launcher.<host>.<pid>.log``, and runs a stall watchdog: when no log in the
folder grows for ``stall_s`` seconds it takes py-spy dumps of every local rank (faulthandler through
SIGUSR1 where py-spy cannot attach) and asks the ranks for Flight Recorder dumps, ``rounds`` times
``repeat_s`` apart, then waits for progress again. It never kills or slows the job; the exit code is
the command's.

Run once per node with the same ``out`` (a shared folder) or one folder per node; ``tracekit ingest``
reads them all.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable

import tracekit

BOOT = Path(__file__).resolve().parent / "boot"
RECORDED_ENV = ("NCCL_", "TORCH_", "CUDA_", "GLOO_", "MASTER_", "WORLD_SIZE", "NNODES", "NODE_RANK", "WANDB_",
                "OMP_NUM_THREADS", "PYTORCH_", "DS_", "HF_", "TRANSFORMERS_", "NPROC_PER_NODE", "LD_LIBRARY_PATH")
SECRET = ("KEY", "TOKEN", "SECRET", "PASSWORD")
PROGRESS_LOGS = ("rank", "nccl.", "launcher.")


@dataclass
class Settings:
    out: Path
    stall_s: float = 300.0
    repeat_s: float = 60.0
    rounds: int = 2
    nccl_subsys: str = "INIT,NET,COLL"
    fr_buffer: int = 2000
    profile_steps: str | None = None  # "WAIT:ACTIVE": a Kineto window of HF Trainer steps per rank
    extra_env: dict[str, str] = field(default_factory=dict)


def rank_env(s: Settings, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every process of the run gets: ``base`` plus tracekit's settings it lacks."""
    env = dict(os.environ if base is None else base)
    if base is None and tracekit.ALLOCATOR_SET:  # tracekit's own allocator setting is not the run's
        env.pop("_RJEM_MALLOC_CONF", None)
    out = str(s.out.resolve())
    defaults = {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": s.nccl_subsys,
        "NCCL_DEBUG_FILE": os.path.join(out, "nccl.%h.%p.log"),
        "TORCH_FR_BUFFER_SIZE": str(s.fr_buffer),
        "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE": os.path.join(out, "fr_timeout_rank"),
        "PYTHONUNBUFFERED": "1",
        "PYTHONFAULTHANDLER": "1",
    }
    for k, v in defaults.items():
        env.setdefault(k, v)
    if s.profile_steps:
        env["TRACEKIT_PROFILE"] = s.profile_steps
    env.update(s.extra_env)
    env["TRACEKIT_RUN_DIR"] = out
    env["TRACEKIT_LAUNCHER"] = str(os.getpid())
    env["PYTHONPATH"] = os.pathsep.join([str(BOOT)] + [p for p in [env.get("PYTHONPATH", "")] if p])
    return env


def launch_record(argv: list[str], env: dict[str, str], s: Settings) -> str:
    """The ``launch.<host>.txt`` text: host, time, command, recorded environment, packages."""
    host = socket.gethostname()
    lines = [f"[tracekit-run] host={host}", f"[tracekit-run] started={datetime.now(timezone.utc).isoformat()}",
             f"[tracekit-run] cwd={os.getcwd()}", f"[tracekit-run] argv={shlex.join(argv)}",
             f"[tracekit-run] settings=stall_s:{s.stall_s} repeat_s:{s.repeat_s} rounds:{s.rounds}"]
    for k in sorted(env):
        if k.startswith(RECORDED_ENV) and k != "TRACEKIT_RUN_DIR":
            v = "<redacted>" if any(x in k for x in SECRET) else env[k]
            lines.append(f"[tracekit-run] env {k}={v}")
    pkgs = sorted({(d.metadata["Name"] or "").lower(): d.version for d in metadata.distributions()}.items())
    lines += [f"[tracekit-run] package {n}=={v}" for n, v in pkgs if n]
    return "\n".join(lines) + "\n"


def _local_ranks(out: Path, host: str) -> list[tuple[int, str]]:
    """(pid, rank) of the live rank processes this launcher started, from the hooks' registrations."""
    found = []
    for f in sorted((out / "procs").glob(f"{host}.{os.getpid()}.*")):
        try:
            pid = int(f.name.rsplit(".", 1)[1])
            os.kill(pid, 0)
        except (ValueError, OSError):
            continue
        kv = dict(p.split("=", 1) for p in f.read_text().split() if "=" in p)
        found.append((pid, kv.get("rank", "")))
    return found


def _log_size(out: Path) -> int:
    total = 0
    for f in out.iterdir():
        if f.name.startswith(PROGRESS_LOGS) and f.is_file():
            try:
                total += f.stat().st_size
            except OSError:
                pass
    return total


def dump_round(out: Path, host: str, n: int, note: Callable[[str], None]) -> None:
    """One round of evidence: py-spy (or faulthandler) stacks of each local rank, FR dumps."""
    pyspy = shutil.which("py-spy")
    ranks = _local_ranks(out, host)
    (out / f"dump.{host}.{os.getpid()}.request").write_text("fr" if pyspy else "fr,stacks")
    for pid, rank in ranks:
        target = out / f"pyspy.{host}.{pid}.{n}.txt"
        ok = False
        if pyspy:
            try:
                r = subprocess.run([pyspy, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=30)
                ok = r.returncode == 0 and "Thread" in r.stdout
                if ok:
                    target.write_text(f"# tracekit stack dump rank={rank}\n{r.stdout}")
            except (OSError, subprocess.TimeoutExpired):
                ok = False
        if not ok:
            try:
                os.kill(pid, signal.SIGUSR1)  # faulthandler in the rank writes faulthandler.<host>.<pid>.txt
            except OSError:
                pass
    note(f"stall dump {n}: stacks of {len(ranks)} local rank(s) ({'py-spy' if pyspy else 'faulthandler'}), "
         f"Flight Recorder requested")


def _follow(out: Path, host: str, echo: Callable[[str], None], proc: subprocess.Popen) -> None:
    """Echo rank 0's log (written on this host) to the terminal as it grows, tagged ``[rank0]:``."""
    f = None
    while proc.poll() is None:
        if f is None:
            found = sorted(out.glob(f"rank0.{host}.*.log"))
            if not found:
                time.sleep(0.5)
                continue
            f = open(found[-1], errors="replace")
        line = f.readline()
        if line:
            echo("[rank0]: " + line.rstrip("\n"))
        else:
            time.sleep(0.2)


def run(argv: list[str], s: Settings, echo: Callable[[str], None] | None = None) -> int:
    """Run ``argv`` with evidence collection (see the module docstring); returns its exit code."""
    s.out.mkdir(parents=True, exist_ok=True)
    host = socket.gethostname()
    env = rank_env(s)
    me = f"{host}.{os.getpid()}"  # several launchers may share a host (fake nodes) and a folder
    (s.out / f"launch.{me}.txt").write_text(launch_record(argv, env, s))
    log = open(s.out / f"launcher.{me}.log", "a", buffering=1)
    lock = threading.Lock()

    def note(msg: str) -> None:
        line = f"[tracekit-run] {datetime.now().strftime('%Y-%m-%d %H:%M:%S')} {msg}"
        with lock:
            log.write(line + "\n")
        if echo:
            echo(line)

    try:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        note(f"could not start {argv[0]}: {e.strerror or e}")
        log.close()
        return 127

    def pump():
        for raw in iter(proc.stdout.readline, b""):
            text = raw.decode("utf-8", errors="replace").rstrip("\n")
            with lock:
                log.write(text + "\n")
            if echo:
                echo(text)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    if echo:
        threading.Thread(target=_follow, args=(s.out, host, echo, proc), daemon=True).start()
    last_size, last_change, rounds_done, last_round = -1, time.monotonic(), 0, 0.0
    while proc.poll() is None:
        time.sleep(0.5)
        size = _log_size(s.out)
        now = time.monotonic()
        if size != last_size:
            last_size, last_change = size, now
            if rounds_done:
                note("progress again: logs grow")
            rounds_done = 0
            continue
        idle = now - last_change
        if idle >= s.stall_s and rounds_done < s.rounds and (rounds_done == 0 or now - last_round >= s.repeat_s):
            if rounds_done == 0:
                note(f"stall: no log in {s.out} grew for {idle:.0f}s")
            rounds_done += 1
            last_round = now
            dump_round(s.out, host, rounds_done, note)
            last_size = _log_size(s.out)  # our own dumps are not progress
    reader.join(timeout=5)
    note(f"exit code {proc.returncode}")
    log.close()
    return proc.returncode
