"""In-process evidence collection for one rank: the header line, and dumps when progress stops.

``install(out)`` prints the ``[tracekit] rank=... host=... pid=...`` header that ties this
process's lines to its rank, and starts a daemon thread that, when ``progress()`` has not been
called for ``stall_s`` seconds, writes this rank's Flight Recorder buffer (``fr_rank<R>.pkl``) and
a py-spy-format dump of every Python thread (``stacks_rank<R>.txt``). It never stops the job
unless ``exit_after_dump`` asks it to (tests use that to end a hang quickly).
"""

from __future__ import annotations

import os
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
    env = os.environ
    return (f"[tracekit] rank={env.get('RANK', '')} local_rank={env.get('LOCAL_RANK', '')} "
            f"world_size={env.get('WORLD_SIZE', '')} node_rank={env.get('GROUP_RANK', env.get('NODE_RANK', ''))} "
            f"host={socket.gethostname()} pid={os.getpid()} torch={version('torch')} deepspeed={version('deepspeed')}")


def dump_stacks(path: Path, rank: str) -> None:
    """Every Python thread's stack, innermost frame first, as py-spy prints it."""
    names = {t.ident: t.name for t in threading.enumerate()}
    lines = [f"# tracekit stack dump rank={rank}", f"Process {os.getpid()}: {' '.join(sys.argv)}",
             f"Python v{sys.version.split()[0]}", ""]
    for ident, frame in sys._current_frames().items():
        if ident == threading.get_ident():
            continue
        name = names.get(ident, "?")
        lines.append(f'Thread {os.getpid() if name == "MainThread" else ident} (active): "{name}"')
        for fs in reversed(traceback.extract_stack(frame)):
            lines.append(f"    {fs.name} ({fs.filename}:{fs.lineno})")
        lines.append("")
    path.write_text("\n".join(lines))


def dump_fr(path: Path) -> bool:
    try:
        import torch

        path.write_bytes(torch._C._distributed_c10d._dump_fr_trace())
        return True
    except Exception:  # noqa: BLE001 - no process group yet, or FR disabled
        return False


def dump_now(out: str | Path) -> None:
    out = Path(out)
    rank = os.environ.get("RANK", str(os.getpid()))
    dump_fr(out / f"fr_rank{rank}.pkl")
    dump_stacks(out / f"stacks_rank{rank}.txt", rank)


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
