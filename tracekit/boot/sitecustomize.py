"""Loaded by every Python process that ``tracekit run`` starts (its folder is put first on PYTHONPATH).

Only rank processes act (RANK or LOCAL_RANK set, TRACEKIT_RUN_DIR set, not already hooked by a
parent): ``tracekit.hook.attach`` sends the rank's stdout/stderr to its own log, prints the header,
arms faulthandler for stack dumps on SIGUSR1 and waits for dump requests. Then the user's own
sitecustomize, if any, is loaded as if this one were not there.
"""

import os
import sys


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    import importlib.util

    for d in sys.path:
        if os.path.abspath(d or ".") == here:
            continue
        f = os.path.join(d or ".", "sitecustomize.py")
        if os.path.isfile(f):
            spec = importlib.util.spec_from_file_location("_user_sitecustomize", f)
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


try:
    if os.environ.get("TRACEKIT_RUN_DIR") and ("RANK" in os.environ or "LOCAL_RANK" in os.environ):
        from tracekit import hook

        hook.attach(os.environ["TRACEKIT_RUN_DIR"])
except Exception as e:  # noqa: BLE001 - evidence collection must never stop the training
    why = str(e).splitlines()[0] if str(e) else ""  # one line: the rank's log is read line by line
    print(f"[tracekit] hook not installed: {type(e).__name__}: {why}", file=sys.stderr)
_chain()
