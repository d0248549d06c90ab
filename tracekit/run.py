"""``tracekit run``: launch a training command with evidence collection on every rank.

The launcher changes nothing in the user's command. It sets, for every process it starts (the
user's own settings win):
- NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS (INIT,NET,COLL by default), NCCL_DEBUG_FILE per host and pid;
- the Flight Recorder (TORCH_FR_BUFFER_SIZE, dump on watchdog timeout into the run folder);
- a sitecustomize (tracekit/boot) that makes each rank write its stdout/stderr into its own log with
  a header naming its rank, host and pid, and dump its Flight Recorder and stacks on request.
Rank 0's log is echoed to the terminal. It records the command, the environment and the installed
packages in ``launch.<host>.<pid>.txt``, copies the launcher's own output to ``launcher.<host>.<pid>.log``,
and runs a stall detector (``tracekit.live.Watchdog``): when the ranks' collectives and logs stop
advancing for longer than the job's own rhythm allows (or ``stall_s``, where given) it takes py-spy
dumps of every local rank (faulthandler through SIGUSR1 where py-spy cannot attach) and asks the
ranks for Flight Recorder dumps, ``rounds`` rounds ``repeat_s`` apart; then the launcher of rank 0
prints the verdict ``tracekit ingest`` would give and writes it to ``verdict.txt`` and
``verdict.json``, again when the job moves again and when it exits with an error. It never kills or
slows the job; the exit code is the command's, as a shell gives it (128+N for a job ended by signal N).

Signals: the job runs in its own process group. SIGINT (Ctrl-C) or SIGTERM to the launcher is
forwarded to that group and the launcher waits for the job to finish (its own shutdown handlers, a
checkpoint on signal); a second one sends SIGKILL to the group. When the job exits, whatever it
left running in its group (children it forked and did not wait for) gets SIGTERM, then SIGKILL
after a while, and is reaped (the launcher is their subreaper while the job runs): tracekit/job.py.

Run once per node with the same ``out`` (a shared folder) or one folder per node; ``tracekit ingest``
reads them all.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable

import tracekit
from tracekit import escape, live
from tracekit.job import Abandon, Job, shell_code, subreaper
from tracekit.run_verdicts import Verdicts
from tracekit.wording import who

BOOT = Path(__file__).resolve().parent / "boot"
RECORDED_ENV = ("NCCL_", "TORCH_", "CUDA_", "GLOO_", "MASTER_", "WORLD_SIZE", "NNODES", "NODE_RANK", "WANDB_",
                "OMP_NUM_THREADS", "PYTORCH_", "DS_", "HF_", "TRANSFORMERS_", "NPROC_PER_NODE",
                "LD_LIBRARY_PATH")
SECRET = ("KEY", "TOKEN", "SECRET", "PASSWORD")
#: the job's own logs; tracekit's notes (launcher.*) and dumps are not progress
PROGRESS_LOGS = ("rank", "nccl.")
TICK_S = 0.5


@dataclass
class Settings:
    out: Path
    stall_s: float | None = None  # None: learned from the job's rhythm (tracekit.live.Watchdog)
    repeat_s: float | None = None  # None: the stall's own limit, at most 60 s
    rounds: int = 2
    nccl_subsys: str = "INIT,NET,COLL"
    fr_buffer: int = 2000
    profile_steps: str | None = None  # "WAIT:ACTIVE": a Kineto window of HF Trainer steps per rank
    extra_env: dict[str, str] = field(default_factory=dict)


def rank_env(s: Settings, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every process of the run gets: ``base`` plus tracekit's settings it lacks."""
    env = dict(os.environ if base is None else base)
    if base is None:  # polars' allocator settings, written when it loaded, are not the run's
        env.pop("_RJEM_MALLOC_CONF", None)
        if tracekit.USER_ALLOCATOR is not None:
            env["_RJEM_MALLOC_CONF"] = tracekit.USER_ALLOCATOR
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
    """The ``launch.<host>.txt`` text: host, time, command, recorded environment, packages. One line
    per item whatever the values hold: a newline or a control character in a value, a name or the
    command is written escaped (``\\n``), so no value can be read back as a log line of its own."""
    host = socket.gethostname()
    one = escape.name
    lines = [f"[tracekit-run] host={one(host)}",
             f"[tracekit-run] started={datetime.now(timezone.utc).isoformat()}",
             f"[tracekit-run] cwd={one(os.getcwd())}", f"[tracekit-run] argv={escape.shell(argv)}",
             f"[tracekit-run] settings=stall_s:{s.stall_s or 'auto'} repeat_s:{s.repeat_s or 'auto'} "
             f"rounds:{s.rounds}"]
    for k in sorted(env):
        if k.startswith(RECORDED_ENV) and k != "TRACEKIT_RUN_DIR":
            v = "<redacted>" if any(x in k for x in SECRET) else env[k]
            lines.append(f"[tracekit-run] env {one(k)}={one(v)}")
    pkgs = sorted({(d.metadata["Name"] or "").lower(): d.version for d in metadata.distributions()}.items())
    lines += [f"[tracekit-run] package {one(n)}=={one(v)}" for n, v in pkgs if n]
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


def _progress_logs(out: Path) -> list[Path]:
    try:
        return [f for f in out.iterdir() if f.name.startswith(PROGRESS_LOGS) and f.name.endswith(".log")]
    except OSError:
        return []


def _beats(out: Path, host: str) -> dict[int, dict[str, str]]:
    """pid -> what each local rank's hook last wrote: its rank and how far its collectives got."""
    found = {}
    for f in (out / "procs").glob(f"beat.{host}.{os.getpid()}.*"):
        try:
            pairs = (p.split("=", 1) for p in f.read_text().split() if "=" in p)
            found[int(f.name.rsplit(".", 1)[1])] = dict(pairs)
        except (ValueError, OSError):
            continue
    return found


def _progress(out: Path, host: str) -> tuple:
    """What moves while the job advances: each local rank's collectives, once the hooks report them
    (a dying job's tracebacks grow its logs too); before that, or without a Flight Recorder, the
    size of its logs (step lines, NCCL COLL lines)."""
    beats = _beats(out, host)
    if beats:
        return "collectives", tuple(sorted((pid, b.get("enqueued"), b.get("completed"))
                                           for pid, b in beats.items()))
    size = 0
    for f in _progress_logs(out):
        try:
            size += f.stat().st_size
        except OSError:
            pass
    return "logs", size


def _where(beats: dict[int, dict[str, str]]) -> str:
    """``ranks 0-2 at collective 57, rank 3 at 56``: how far each local rank's collectives got."""
    at: dict[int, list[int]] = {}
    for b in beats.values():
        if b.get("rank", "").isdigit() and b.get("enqueued", "").isdigit():
            at.setdefault(int(b["enqueued"]), []).append(int(b["rank"]))
    if not at:
        return ""
    parts = [f"{who(r)} at collective {n}" for n, r in sorted(at.items(), reverse=True)]
    return "; local " + ", ".join(parts)


def _ack(out: Path, host: str, pid: int) -> int:
    try:
        return int((out / "procs" / f"ack.{host}.{os.getpid()}.{pid}").read_text())
    except (OSError, ValueError):
        return 0


def dump_round(out: Path, host: str, n: int, note: Callable[[str], None], wait_s: float = 5.0) -> None:
    """Round ``n`` of evidence: py-spy (or faulthandler) stacks of each local rank, taken at once,
    and FR dumps; returns when every local rank wrote its FR dump (or after ``wait_s``)."""
    pyspy = shutil.which("py-spy")
    ranks = _local_ranks(out, host)
    (out / f"dump.{host}.{os.getpid()}.request").write_text(("fr" if pyspy else "fr,stacks") + f" {n}")

    def stacks(pid: int, rank: str) -> None:
        target = out / f"pyspy.{host}.{pid}.{n}.txt"
        ok = False
        if pyspy:
            try:
                r = subprocess.run([pyspy, "dump", "--pid", str(pid)], capture_output=True, text=True,
                                   timeout=30)
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

    if ranks:
        with ThreadPoolExecutor(len(ranks)) as pool:
            list(pool.map(lambda r: stacks(*r), ranks))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and any(_ack(out, host, pid) < n for pid, _ in ranks):
        time.sleep(0.1)
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


def run(argv: list[str], s: Settings, echo: Callable[[str], None] | None = None,
        say: Callable[[str], None] | None = None) -> int:
    """Run ``argv`` with evidence collection (see the module docstring); returns its exit code.
    ``echo`` gets the job's output (rank 0's log, the launcher's), ``say`` tracekit's own lines."""
    s.out.mkdir(parents=True, exist_ok=True)
    host = socket.gethostname()
    env = rank_env(s)
    me = f"{host}.{os.getpid()}"  # several launchers may share a host (fake nodes) and a folder
    (s.out / f"launch.{me}.txt").write_text(launch_record(argv, env, s))
    log = open(s.out / f"launcher.{me}.log", "a", buffering=1)
    lock = threading.RLock()  # re-entered when a signal's note interrupts a note in the main thread
    say = say or echo

    def note(msg: str) -> None:
        line = f"[tracekit-run] {datetime.now().strftime('%Y-%m-%d %H:%M:%S')} {msg}"
        with lock:
            log.write(line + "\n")
        if say:
            say(line)

    reaper = subreaper(True)
    try:  # its own process group: a signal reaches the whole job through the launcher (Job)
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                process_group=0)
    except OSError as e:
        note(f"could not start {escape.name(argv[0])}: {e.strerror or e}")
        log.close()
        subreaper(reaper)
        return 127
    job = Job(proc, note)
    try:
        return _supervise(proc, job, s, host, note, log, lock, echo, say)
    except Abandon:  # a signal once the job was gone: its code, without the verdict
        note("verdict abandoned (a signal after the job ended)")
        return shell_code(proc.wait())
    finally:
        job.restore()
        job.reap()
        subreaper(reaper)
        log.close()


def _supervise(proc: subprocess.Popen, job: Job, s: Settings, host: str, note, log, lock, echo, say) -> int:
    """Echo the job, watch it for stalls and give verdicts until it exits; its exit code as a shell
    gives it."""

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
    verdicts = Verdicts(s.out, host, note, say)
    dog = live.Watchdog(fixed_s=s.stall_s, repeat_s=s.repeat_s, rounds=s.rounds)
    need = min(2, max(1, s.rounds))  # rounds before a verdict: two tell a hang from slow progress
    last, n = _progress(s.out, host), 0
    while proc.poll() is None:
        time.sleep(TICK_S)
        key = _progress(s.out, host)
        now = time.monotonic()
        idle = now - dog.last if dog.last is not None else 0.0
        acts = dog.tick(now, key != last, lambda: live.phase(_progress_logs(s.out)))
        last = key
        for act in acts:
            ep = dog.episode
            if act is live.Act.SUSPECT:
                note(f"stall: no progress for {idle:.0f}s (limit {ep.limit:.0f}s: {ep.why})"
                     f"{_where(_beats(s.out, host))}")
            kept = verdicts.kept
            if act is live.Act.SLOW and kept is not None and kept.kind.name == "SLOW_PROGRESS":
                verdicts.show(verdicts.kept, "stalled", idle, n)
                continue
            n += 1
            dump_round(s.out, host, n, note)
            last = _progress(s.out, host)  # our own dumps are not progress
            if act is live.Act.MOVED:
                verdicts.keep(idle)
            elif act is live.Act.RESUMED:
                note(f"progress again after {idle:.0f}s")
                verdicts.decide("moving", idle, n, again=True)
            elif act is live.Act.SLOW or ep.rounds >= need:
                verdicts.decide("stalled", idle, n, again=ep.printed)
                ep.printed = True
    job.reap()  # what the job left holds its output open, and must not run on while the verdict is taken
    reader.join(timeout=5)
    code = shell_code(proc.returncode)
    note(f"exit code {code}" + (f" (signal {-proc.returncode})" if proc.returncode < 0 else ""))
    if code != 0 or verdicts.shown:
        verdicts.decide("exited", 0.0, n, again=True, code=code)
    return code
