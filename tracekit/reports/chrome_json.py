"""A ``Timeline`` as Chrome trace-event JSON (what the legacy catapult viewer and chrome://tracing
read): ``X`` slices in microseconds, ``M`` metadata naming processes and threads, v2 flows
(``bind_id`` with ``flow_out`` / ``flow_in``), ``i`` instants.
Format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
"""

from __future__ import annotations

import json
from pathlib import Path

from tracekit.reports.timeline import Timeline


def build(tl: Timeline) -> dict:
    events = []
    tids = {}
    for pid, name in tl.processes.items():
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
    for (pid, track), order in tl.tracks.items():
        tids[(pid, track)] = order + 1
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": order + 1,
                       "args": {"name": track}})
    t0 = min((s.start_ns for s in tl.slices), default=0)
    for s in tl.slices:
        e = {"ph": "X", "name": s.name, "cat": "verdict" if s.highlight else "collective", "pid": s.pid,
             "tid": tids[(s.pid, s.track)], "ts": (s.start_ns - t0) / 1000,
             "dur": (s.end_ns - s.start_ns) / 1000,
             "args": {k: v for k, v in s.args.items() if v is not None}}
        if s.flow is not None:
            e["bind_id"] = s.flow
            if not s.first_in_flow:
                e["flow_in"] = True
            if not s.last_in_flow:
                e["flow_out"] = True
        events.append(e)
    for i in tl.instants:
        events.append({"ph": "i", "s": "p", "name": i.name, "pid": i.pid,
                       "tid": tids.get((i.pid, i.track), 0), "ts": (i.ts_ns - t0) / 1000, "args": i.args})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"title": tl.title, "axis": tl.axis, "x axis": tl.axis_note()}}


def write(tl: Timeline, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(build(tl)))
    return path
