"""Hand a trace to the Perfetto UI: serve the file once on 127.0.0.1:9001 (the port the UI's
content policy allows) with CORS for https://ui.perfetto.dev, and give the deep link that opens it.
"""

from __future__ import annotations

import http.server
import json
import mmap
import threading
from pathlib import Path
from urllib.parse import quote

from tracekit import inputs

ORIGIN = "https://ui.perfetto.dev"
PACKETS_CHECKED = 1000  # a Perfetto trace is a run of packets; the first ones tell it from other bytes


def deep_link(name: str, port: int = 9001) -> str:
    return f"{ORIGIN}/#!/?url=http://127.0.0.1:{port}/{quote(name)}"


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while i < len(data):
        b = data[i]
        value |= (b & 0x7F) << shift
        i += 1
        if not b & 0x80:
            return value, i
        shift += 7
        if shift > 63:
            break
    raise ValueError("bad varint")


def _is_perfetto(data: bytes) -> bool:
    """A Perfetto ``Trace`` (perfetto/protos/perfetto/trace/trace.proto) holds only field 1,
    ``repeated TracePacket packet``: tag byte 0x0a, a length, the packet, again and again."""
    i = n = 0
    while i < len(data) and n < PACKETS_CHECKED:
        if data[i] != 0x0A:
            return False
        try:
            size, i = _varint(data, i + 1)
        except ValueError:
            return False
        i, n = i + size, n + 1
    return n > 0 and (i == len(data) or (n == PACKETS_CHECKED and i <= len(data)))


def _is_chrome_json(data: bytes) -> bool:
    """Chrome trace-event JSON: an object with a ``traceEvents`` list, or a bare list of events."""
    head = data[:64].lstrip()[:1]
    if head not in (b"{", b"["):
        return False
    try:
        obj = json.loads(data)
    except ValueError:
        return False
    if isinstance(obj, dict):
        return isinstance(obj.get("traceEvents"), list)
    return isinstance(obj, list) and all(isinstance(e, dict) and "ph" in e for e in obj[:100])


def _content(path: str | Path, gunzip: bool = True):
    """The file's bytes through the input layer (a FIFO or a device is refused, a .gz inflated
    within its limits); an OSError saying why where nothing could be read."""
    got = inputs.read(str(path), gunzip=gunzip)
    if got.data is None:
        raise OSError(got.notes[0].what if got.notes else "cannot read")
    return got


def trace_kind(path: str | Path) -> str | None:
    """``"perfetto"`` or ``"chrome-json"`` (gzipped or not) when the file is a trace the UI opens,
    else None."""
    got = _content(path)
    if got.gzip and any("gzip" in n.what for n in got.notes):  # cut short or past its limit
        return None
    data = got.data[:] if isinstance(got.data, mmap.mmap) else got.data  # (json.loads takes bytes)
    if _is_chrome_json(data):
        return "chrome-json"
    if _is_perfetto(data):
        return "perfetto"
    return None


class OneShot:
    """The file's server, bound to 127.0.0.1:``port`` when made (an ``OSError`` then, before any
    link is given, when the port is taken; port 0: one the system picks, ``port`` then says it);
    ``wait`` serves until one GET of the file is answered. Only that one: a second client, at the
    same moment or later, gets 410 Gone."""

    def __init__(self, path: str | Path, port: int = 9001):
        self.path = path = Path(path)
        body = _content(path, gunzip=False).data
        self.done = done = threading.Event()
        claimed = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def _cors(self):
                self.send_header("Access-Control-Allow-Origin", ORIGIN)
                self.send_header("Access-Control-Allow-Methods", "GET, OPTIONS")
                self.send_header("Access-Control-Allow-Headers", "*")

            def do_OPTIONS(self):  # noqa: N802 - the stdlib's naming
                self.send_response(204)
                self._cors()
                self.end_headers()

            def do_GET(self):  # noqa: N802
                if self.path.lstrip("/").split("?")[0] != quote(path.name):
                    self.send_response(404)
                    self._cors()
                    self.end_headers()
                    return
                if not claimed.acquire(blocking=False):  # served once already, or being served
                    self.send_response(410)
                    self._cors()
                    self.end_headers()
                    return
                self.send_response(200)
                self._cors()
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                done.set()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.httpd.server_address[1]

    def wait(self, timeout_s: float | None = None) -> bool:
        """Serve until the file has been fetched once (True) or ``timeout_s`` passes (False)."""
        with self.httpd:
            threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
            served = self.done.wait(timeout_s)
            self.httpd.shutdown()
        return served


def serve_once(path: str | Path, port: int = 9001, timeout_s: float | None = None) -> bool:
    """Serve ``path`` until one GET of it has been answered (True) or ``timeout_s`` passes (False)."""
    return OneShot(path, port).wait(timeout_s)
