"""A short torch.profiler window of training steps per rank, written as Kineto traces that
``tracekit ingest`` reads (``kineto_rank<R>.<host>.<pid>.json.gz``).

For HF Trainer, and so for ms-swift (its trainers are HF Trainers):
- ``callback(out, wait, active)``: a ``transformers.TrainerCallback`` that profiles optimizer steps
  ``wait+1 .. wait+active`` (one warm-up step before them) on every rank;
- ``profile_trainers(out, wait, active)``: every Trainer built after the call gets that callback,
  for code you do not own (``swift pt``): call it first in your entry script, or let
  ``tracekit run --profile-steps WAIT:ACTIVE`` do it in every rank (through ``TRACEKIT_PROFILE``).

transformers is imported only when a callback is made; nothing here runs without a Trainer.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import socket
import sys
from pathlib import Path

ENV = "TRACEKIT_PROFILE"  # "WAIT:ACTIVE", set by `tracekit run --profile-steps`


def trace_path(out: str | Path) -> Path:
    rank = os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0"))
    return Path(out) / f"kineto_rank{rank}.{socket.gethostname()}.{os.getpid()}.json.gz"


def parse_window(spec: str) -> tuple[int, int]:
    """``"5:3"`` -> (wait 5 steps, profile 3); raises ValueError on anything else."""
    wait, _, active = spec.partition(":")
    w, a = int(wait), int(active or 3)
    if w < 0 or a < 1:
        raise ValueError(f"profile window {spec!r}: want WAIT:ACTIVE with WAIT >= 0, ACTIVE >= 1")
    return w, a


def callback(out: str | Path | None = None, wait: int = 5, active: int = 3):
    """A TrainerCallback recording steps ``wait+2 .. wait+1+active`` (after one warm-up step)."""
    import torch
    from transformers import TrainerCallback

    out = Path(out or os.environ.get("TRACEKIT_RUN_DIR") or "tracekit-profile")

    class TracekitProfilerCallback(TrainerCallback):
        def __init__(self):
            self.prof = None

        def on_train_begin(self, args, state, control, **kwargs):
            out.mkdir(parents=True, exist_ok=True)
            acts = [torch.profiler.ProfilerActivity.CPU]
            if torch.cuda.is_available():
                acts.append(torch.profiler.ProfilerActivity.CUDA)
            self.prof = torch.profiler.profile(
                activities=acts, schedule=torch.profiler.schedule(wait=wait, warmup=1, active=active,
                                                                  repeat=1),
                on_trace_ready=lambda p: p.export_chrome_trace(str(trace_path(out))))
            self.prof.start()

        def on_step_end(self, args, state, control, **kwargs):
            if self.prof is not None:
                self.prof.step()

        def on_train_end(self, args, state, control, **kwargs):
            if self.prof is not None:
                self.prof.stop()  # a window cut short by the end of training is still written
                self.prof = None

    return TracekitProfilerCallback()


def _add_to(trainer_module, out, wait, active) -> None:
    cls = trainer_module.Trainer
    if getattr(cls, "_tracekit_profiled", False):
        return
    init = cls.__init__

    def __init__(self, *a, **k):
        init(self, *a, **k)
        if not getattr(self, "_tracekit_callback", None):  # subclasses call this once per instance
            self._tracekit_callback = callback(out, wait, active)
            self.add_callback(self._tracekit_callback)

    cls.__init__, cls._tracekit_profiled = __init__, True


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then(module)`` right after ``name`` is first imported (transformers loads late)."""

    def __init__(self, name, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        real = spec.loader.exec_module

        def exec_module(module):
            real(module)
            self.then(module)

        spec.loader.exec_module = exec_module
        return spec


def profile_trainers(out: str | Path | None = None, wait: int = 5, active: int = 3) -> None:
    """Give every HF Trainer made from now on the profiler callback (now, or when transformers loads)."""
    def then(module):
        _add_to(module, out, wait, active)

    if "transformers.trainer" in sys.modules:
        then(sys.modules["transformers.trainer"])
    else:
        sys.meta_path.insert(0, _AfterImport("transformers.trainer", then))
