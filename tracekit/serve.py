"""Hand a trace to the Perfetto UI: serve the file once on 127.0.0.1:9001 (the port the UI's
content policy allows) with CORS for https://ui.perfetto.dev, and give the deep link that opens it.
"""

from __future__ import annotations

import http.server
import threading
from pathlib import Path
from urllib.parse import quote

ORIGIN = "https://ui.perfetto.dev"


def deep_link(name: str, port: int = 9001) -> str:
    return f"{ORIGIN}/#!/?url=http://127.0.0.1:{port}/{quote(name)}"


def serve_once(path: str | Path, port: int = 9001, timeout_s: float | None = None,
               ready: threading.Event | None = None) -> bool:
    """Serve ``path`` until one GET of it has been answered (True) or ``timeout_s`` passes (False)."""
    path = Path(path)
    body = path.read_bytes()
    done = threading.Event()

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

    with http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler) as httpd:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        if ready:
            ready.set()
        served = done.wait(timeout_s)
        httpd.shutdown()
    return served
