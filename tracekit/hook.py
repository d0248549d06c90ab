"""In-process evidence collection for one rank: the header line, and dumps when progress stops.

Two ways in:
- ``attach(run_dir)``, called for every rank by ``tracekit run`` (through its sitecustomize): sends
  the rank's stdout and stderr (file descriptors 1 and 2, so C++ and NCCL lines too) to
  ``rank<R>.<host>.<pid>.log``, prints the header, registers the process in ``procs/``, arms
  faulthandler on SIGUSR1, and dumps the Flight Recorder and the Python stacks each time the
  launcher touches ``dump.<host>.<launcher pid>.request``. Twice a second it reads how far its
  collectives got (the Flight Recorder's ``pg_status``: 4 us on gloo, 0.2 ms on NCCL) and, when that
  moved, writes it to ``procs/beat.<host>.<launcher pid>.<pid>``: the launcher's stall detector
  reads those. It adds no work to the training loop.
- ``install(out)``, for scripts that call ``progress()`` themselves: prints the
  ``[tracekit] rank=... host=... pid=...`` header that ties this process's lines to its rank, and
  starts a daemon thread that, when ``progress()`` has not been called for ``stall_s`` seconds,
  writes this rank's Flight Recorder buffer (``fr_rank<R>.pkl``) and a py-spy-format dump of every
  Python thread (``stacks_rank<R>.txt``). It never stops the job unless ``exit_after_dump`` asks
  it to (tests use that to end a hang quickly).
"""

from __future__ import annotations

import os
import pickle
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

_state = {"last": None, "dumped": False}  # the stall clock starts at the first progress()


def progress() -> None:
    """Call once per step (or per collective): the stall clock starts again."""
    _state["last"] = time.monotonic()
    _state["dumped"] = False


def header() -> str:
    from importlib import metadata

    def version(name):
        try:
            return metadata.version(name).split("+")[0]
        except metadata.PackageNotFoundError:
            return ""
    from tracekit.escape import name

    def env(key, default=""):  # a value with a space or a newline cannot make a field or a line of its own
        return name(os.environ.get(key, default)).replace(" ", "\\x20")
    return (f"[tracekit] rank={env('RANK')} local_rank={env('LOCAL_RANK')} "
            f"world_size={env('WORLD_SIZE')} node_rank={env('GROUP_RANK', os.environ.get('NODE_RANK', ''))} "
            f"host={name(socket.gethostname())} pid={os.getpid()} torch={version('torch')} "
            f"deepspeed={version('deepspeed')}")


def shown(path: str) -> str:
    """``path`` relative to the working folder where it lies inside it, so that a recording names
    ``samples/repro/train.py``, not the recording machine's ``/home/someone/...``; else as it is.
    On one line whatever it holds (a newline in an argument or a name is written ``\\n``)."""
    from tracekit.escape import name

    here = os.getcwd().rstrip(os.sep) + os.sep
    return name(path[len(here):] if path.startswith(here) else path)


def dump_stacks(path: Path, rank: str) -> None:
    """Every Python thread's stack, innermost frame first, as py-spy prints it (paths inside the
    working folder relative to it)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    lines = [f"# tracekit stack dump rank={rank}", f"Process {os.getpid()}: {' '.join(map(shown, sys.argv))}",
             f"Python v{sys.version.split()[0]}", ""]
    for ident, frame in sys._current_frames().items():
        if ident == threading.get_ident():
            continue
        name = names.get(ident, "?")
        lines.append(f'Thread {os.getpid() if name == "MainThread" else ident} (active): "{name}"')
        for fs in reversed(traceback.extract_stack(frame)):
            lines.append(f"    {fs.name} ({shown(fs.filename)}:{fs.lineno})")
        lines.append("")
    path.write_text("\n".join(lines))


def _importing_elsewhere() -> bool:
    """True while another thread is inside an import statement."""
    me = threading.get_ident()
    for ident, frame in sys._current_frames().items():
        while ident != me and frame is not None:
            if frame.f_code.co_filename.startswith("<frozen importlib"):
                return True
            frame = frame.f_back
    return False


def dump_fr(path: Path) -> bool:
    """Write this process's Flight Recorder buffer: NCCL's where torch has one, else the generic one
    (Gloo). False when there is nothing to write (no process group yet, or FR disabled)."""
    # Never import from this thread: the main thread may be half-way through importing torch.
    # Symbolising FR stack traces imports ~800 modules the first time (torch 2.13); racing the main
    # thread's import of torch._dynamo that way made a rank die of an ImportError. While another
    # thread imports, the dump goes without stack traces.
    stacks = not _importing_elsewhere()
    torch = sys.modules.get("torch")
    c10d = getattr(getattr(torch, "_C", None), "_distributed_c10d", None)
    if c10d is None or "torch.distributed" not in sys.modules:
        return False
    for name in ("_dump_nccl_trace", "_dump_fr_trace"):
        fn = getattr(c10d, name, None)
        if fn is None:
            continue
        try:
            data = fn(includeStackTraces=stacks)
            if pickle.loads(data).get("entries") or name == "_dump_fr_trace":
                path.write_bytes(data)
                return True
        except Exception:  # noqa: BLE001 - never let a dump fail the rank
            continue
    return False


def collectives_done() -> tuple[int, int] | None:
    """How far this process's collectives got, summed over its process groups: (last enqueued,
    last completed) from the Flight Recorder's ``pg_status``, without its entries (4 us on gloo, 0.2 ms
    on NCCL; NCCL's watchdog marks a completion a moment after the kernel ends). None
    before a process group exists."""
    torch = sys.modules.get("torch")
    c10d = getattr(getattr(torch, "_C", None), "_distributed_c10d", None)
    if c10d is None or "torch.distributed" not in sys.modules:
        return None
    groups = []
    for name in ("_dump_nccl_trace", "_dump_fr_trace"):
        fn = getattr(c10d, name, None)
        if fn is None:
            continue
        try:
            status = pickle.loads(fn(includeCollectives=False, includeStackTraces=False,
                                     onlyActive=True)).get("pg_status")
        except Exception:  # noqa: BLE001 - never let a look fail the rank
            continue
        groups += list((status or {}).values())
    if not groups:
        return None
    return (sum(max(g.get("last_enqueued_collective", -1), 0) for g in groups),
            sum(max(g.get("last_completed_collective", -1), 0) for g in groups))


def dump_now(out: str | Path) -> None:
    out = Path(out)
    rank = os.environ.get("RANK", str(os.getpid()))
    dump_fr(out / f"fr_rank{rank}.pkl")
    dump_stacks(out / f"stacks_rank{rank}.txt", rank)


def _redirect(path: Path) -> None:
    """Send fd 1 and 2 (Python, C++ and NCCL output alike) to ``path``; the launcher echoes rank 0."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(line_buffering=True)
        except (AttributeError, ValueError):
            pass


def _guard_gloo_exit() -> None:
    """With the Flight Recorder on, a CPU (gloo) rank can abort in C++ static destructors after
    Python has finished (``terminate called without an active exception``, SIGABRT; measured on
    torch 2.13 with an HF Trainer DDP run: 3 exits in 10, none without the Flight Recorder), which
    fails a run that succeeded. So such a rank leaves with ``os._exit`` and the code Python would
    have returned (``sys.exit``'s argument, 1 after an uncaught exception, else 0), once every other
    exit handler has run (this one is registered first, so it runs last). GPU ranks (CUDA initialised)
    and runs without the Flight Recorder exit as usual."""
    import atexit

    state = {"code": 0}
    real_exit, real_hook = sys.exit, sys.excepthook

    def exit(code=None):
        state["code"] = code
        real_exit(code)

    def excepthook(kind, value, tb):
        state["code"] = 1
        real_hook(kind, value, tb)

    def leave():
        torch = sys.modules.get("torch")
        if (torch is None or "torch.distributed" not in sys.modules
                or int(os.environ.get("TORCH_FR_BUFFER_SIZE", "0") or 0) <= 0
                or getattr(torch, "cuda", None) is None or torch.cuda.is_initialized()):
            return
        code = state["code"]
        if code is not None and not isinstance(code, int):
            code = 1  # sys.exit("message"): Python printed the message already
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code or 0)

    sys.exit, sys.excepthook = exit, excepthook
    atexit.register(leave)


def attach(run_dir: str | Path) -> None:
    """Evidence collection for one rank under ``tracekit run`` (see the module docstring)."""
    if os.environ.get("TRACEKIT_HOOKED") == f"{os.environ.get('RANK')}:{os.getppid()}":
        return  # a DataLoader worker or other child of a hooked rank: its parent already reports
    run = Path(run_dir)
    host, pid = socket.gethostname(), os.getpid()
    rank = os.environ.get("RANK", os.environ.get("LOCAL_RANK", "x"))
    rank = rank if rank.isascii() and rank.isdigit() else "x"  # it names files: no "/" or ".." in it
    os.environ["TRACEKIT_HOOKED"] = f"{rank}:{pid}"
    _guard_gloo_exit()
    _redirect(run / f"rank{rank}.{host}.{pid}.log")
    print(header(), flush=True)
    procs = run / "procs"
    procs.mkdir(exist_ok=True)
    launcher = os.environ.get("TRACEKIT_LAUNCHER", "0")
    (procs / f"{host}.{launcher}.{pid}").write_text(
        f"rank={rank} local_rank={os.environ.get('LOCAL_RANK', '')}\n")
    import faulthandler
    import signal

    fh = open(run / f"faulthandler.{host}.{pid}.txt", "a", buffering=1)
    fh.write(f"# tracekit stack dump rank={rank}\nProcess {pid}: {' '.join(map(shown, sys.argv))}\n")
    faulthandler.register(signal.SIGUSR1, file=fh, all_threads=True)
    request = run / f"dump.{host}.{launcher}.request"
    beat, ack = procs / f"beat.{host}.{launcher}.{pid}", procs / f"ack.{host}.{launcher}.{pid}"

    def put(path: Path, text: str) -> None:  # whole or not at all: the launcher reads it any time
        tmp = path.with_name("." + path.name)
        tmp.write_text(text)
        os.replace(tmp, path)

    def serve():
        seen = request.stat().st_mtime if request.exists() else 0.0
        n, last = 0, None
        while True:
            time.sleep(0.5)
            done = collectives_done()
            if done is not None and done != last:
                last = done
                try:
                    put(beat, f"rank={rank} enqueued={done[0]} completed={done[1]}\n")
                except OSError:
                    pass
            try:
                m = request.stat().st_mtime
            except OSError:
                continue
            if m != seen:
                try:
                    wanted = request.read_text()
                except OSError:
                    wanted = "stacks"
                # "fr,stacks 3": what to dump, and the launcher's round number (the files' suffix)
                word = wanted.split()[-1] if wanted.split() else ""
                seen, n = m, int(word) if word.isdigit() else n + 1
                dump_fr(run / f"fr_rank{rank}.{host}.{pid}.{n}.pkl")
                if "stacks" in wanted:
                    dump_stacks(run / f"stacks_rank{rank}.{host}.{pid}.{n}.txt", rank)
                try:
                    put(ack, f"{n}\n")
                except OSError:
                    pass

    threading.Thread(target=serve, name="tracekit-dumps", daemon=True).start()
    window = os.environ.get("TRACEKIT_PROFILE")
    if window:
        from tracekit import profiler

        profiler.profile_trainers(run, *profiler.parse_window(window))


def install(out: str | Path, stall_s: float = 30.0, exit_after_dump: float | None = None) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    print(header(), flush=True)

    def watch():
        while True:
            time.sleep(0.25)
            if _state["last"] is None:
                continue
            idle = time.monotonic() - _state["last"]
            if idle > stall_s and not _state["dumped"]:
                _state["dumped"] = True
                dump_now(out)
                print(f"[tracekit] stall: no progress for {idle:.1f}s, dumped FR and stacks", flush=True)
                if exit_after_dump is not None:
                    time.sleep(exit_after_dump)
                    os._exit(124)

    threading.Thread(target=watch, name="tracekit-watchdog", daemon=True).start()
