"""Hand a trace to the Perfetto UI: serve the file once on 127.0.0.1:9001 (the port the UI's
content policy allows) with CORS for https://ui.perfetto.dev, and give the deep link that opens it.
"""

from __future__ import annotations

import gzip
import http.server
import json
import threading
import zlib
from pathlib import Path
from urllib.parse import quote

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


def trace_kind(path: str | Path) -> str | None:
    """``"perfetto"`` or ``"chrome-json"`` (gzipped or not) when the file is a trace the UI opens,
    else None."""
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error):
            return None
    if _is_chrome_json(data):
        return "chrome-json"
    if _is_perfetto(data):
        return "perfetto"
    return None


class OneShot:
    """The file's server, bound to 127.0.0.1:``port`` when made (an ``OSError`` then, before any
    link is given, when the port is taken); ``wait`` serves until one GET of the file is answered."""

    def __init__(self, path: str | Path, port: int = 9001):
        self.path = path = Path(path)
        body = path.read_bytes()
        self.done = done = threading.Event()

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
