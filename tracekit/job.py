"""The job ``tracekit run`` launches, as a shell would run it: its own process group, the launcher's
SIGINT and SIGTERM forwarded to it (a second one kills it), what it leaves running ended and reaped,
and its exit code as a shell reports it."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from typing import Callable

KILL_AFTER_S = 5.0  # what the job left running: SIGTERM, then SIGKILL after this long
PR_SET_CHILD_SUBREAPER = 36


def shell_code(returncode: int) -> int:
    """A child's exit status as a shell reports it: 128+N for a child ended by signal N (Popen: -N)."""
    return 128 - returncode if returncode < 0 else returncode


def subreaper(on: bool) -> bool:
    """Make this process the subreaper of the job's orphans (Linux), so that what the job leaves is
    reaped here; returns whether it was one before. False where the call is not there."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        was = ctypes.c_int(0)
        libc.prctl(PR_SET_CHILD_SUBREAPER + 1, ctypes.byref(was), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
        libc.prctl(PR_SET_CHILD_SUBREAPER, int(bool(on)), 0, 0, 0)
        return bool(was.value)
    except (OSError, AttributeError):
        return False


class Abandon(BaseException):
    """A signal after the job is gone: the launcher stops what it still does (the verdict)."""


class Job:
    """The job's process group, and the launcher's SIGINT/SIGTERM while it runs: the first is
    forwarded to the group, a second sends SIGKILL; once the job is gone, one abandons the exit
    verdict."""

    def __init__(self, proc: subprocess.Popen, note: Callable[[str], None]):
        self.proc, self.pgid, self.note = proc, proc.pid, note
        self.signals = 0
        self.before = {}
        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.before[sig] = signal.signal(sig, self._on_signal)

    def _on_signal(self, sig: int, frame) -> None:
        self.signals += 1
        name = signal.Signals(sig).name
        if self.proc.poll() is not None:
            raise Abandon()
        if self.signals == 1:
            self.note(f"{name}: forwarded to the job's process group; waiting for it to finish "
                      f"({name} again to kill it)")
            self._kill(sig)
        else:
            self.note(f"{name} again: SIGKILL to the job's process group")
            self._kill(signal.SIGKILL)

    def _kill(self, sig: int) -> bool:
        try:
            os.killpg(self.pgid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def _alive(self) -> bool:
        """Whether any process of the job's group is still there (reaping the ones that ended)."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)  # orphans of the job, reparented here
            except ChildProcessError:
                break
            if pid == 0:
                break
        return self._kill(0)

    def reap(self) -> None:
        """After the job exits: SIGTERM to what it left in its group, SIGKILL after KILL_AFTER_S."""
        if self.proc.poll() is None or not self._alive():
            return
        self.note("the job left processes running in its process group: SIGTERM to them")
        self._kill(signal.SIGTERM)
        deadline = time.monotonic() + KILL_AFTER_S
        while self._alive():
            if time.monotonic() > deadline:
                self.note(f"still running after {KILL_AFTER_S:.0f}s: SIGKILL")
                self._kill(signal.SIGKILL)
                deadline = float("inf")
            time.sleep(0.05)

    def restore(self) -> None:
        for sig, handler in self.before.items():
            signal.signal(sig, handler)
        self.before = {}
