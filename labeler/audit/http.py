"""A tiny HTTP front: /metrics, /healthz, /readyz on one port (stdlib only).

Probes answer from in-memory flags, never from the API server: a slow API server must
not make the kubelet restart a healthy exporter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)

Probe = Callable[[], tuple[bool, str]]


def make_server(
    host: str, port: int, registry: CollectorRegistry, *, healthz: Probe, readyz: Probe
) -> ThreadingHTTPServer:
    """Bind (port 0 picks a free one; see ``server.server_address``) without serving yet."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path in ("/healthz", "/readyz"):
                ok, text = (healthz if path == "/healthz" else readyz)()
                self._send(200 if ok else 503, (text + "\n").encode(), "text/plain")
            else:
                self._send(404, b"not found: try /metrics, /healthz or /readyz\n", "text/plain")

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("http " + format, *args)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
