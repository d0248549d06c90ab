"""A ``Timeline`` as a Perfetto protobuf trace (``.pftrace``), with the ``perfetto`` package's
TraceProtoBuilder: a process track per rank, a child track per process group, BEGIN/END slices,
flow ids linking one collective across ranks, instant events where a rank stops.
Format: https://perfetto.dev/docs/reference/synthetic-track-event
"""

from __future__ import annotations

from pathlib import Path

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TrackEvent
from perfetto.trace_builder.proto_builder import TraceProtoBuilder

from tracekit.reports.timeline import Timeline

SEQ_ID = 1
CLEARED = 1  # TracePacket.SEQ_INCREMENTAL_STATE_CLEARED


def _debug(event: TrackEvent, args: dict) -> None:
    for k, v in args.items():
        if v is None:
            continue
        a = event.debug_annotations.add()
        a.name = k
        if isinstance(v, bool):
            a.bool_value = v
        elif isinstance(v, int):
            a.int_value = v
        else:
            a.string_value = str(v)


def build(tl: Timeline) -> bytes:
    b = TraceProtoBuilder()
    first = True

    def packet():
        nonlocal first
        p = b.add_packet()
        p.trusted_packet_sequence_id = SEQ_ID
        if first:
            p.sequence_flags = CLEARED
            first = False
        return p

    track_uuid = {}
    for pid, name in sorted(tl.processes.items()):
        p = packet()
        p.track_descriptor.uuid = pid
        p.track_descriptor.process.pid = pid
        p.track_descriptor.process.process_name = name
    for (pid, track), order in sorted(tl.tracks.items(), key=lambda kv: kv[1]):
        uuid = 10_000_000 + order
        track_uuid[(pid, track)] = uuid
        p = packet()
        p.track_descriptor.uuid = uuid
        p.track_descriptor.parent_uuid = pid
        p.track_descriptor.name = track
        p.track_descriptor.sibling_order_rank = order
    for s in sorted(tl.slices, key=lambda s: s.start_ns):
        uuid = track_uuid[(s.pid, s.track)]
        p = packet()
        p.timestamp = s.start_ns
        e = p.track_event
        e.type = TrackEvent.TYPE_SLICE_BEGIN
        e.track_uuid = uuid
        e.name = s.name
        e.categories.append("verdict" if s.highlight else "collective")
        if s.flow is not None:
            (e.terminating_flow_ids if s.last_in_flow else e.flow_ids).append(s.flow)
        _debug(e, s.args)
        p = packet()
        p.timestamp = s.end_ns
        p.track_event.type = TrackEvent.TYPE_SLICE_END
        p.track_event.track_uuid = uuid
    for i in tl.instants:
        p = packet()
        p.timestamp = i.ts_ns
        e = p.track_event
        e.type = TrackEvent.TYPE_INSTANT
        e.track_uuid = track_uuid.get((i.pid, i.track), i.pid)
        e.name = i.name
        e.categories.append("verdict")
        _debug(e, i.args)
    return b.serialize()


def write(tl: Timeline, path: str | Path) -> Path:
    path = Path(path)
    path.write_bytes(build(tl))
    return path
