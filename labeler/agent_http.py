"""``/metrics``, ``/healthz`` and ``/readyz`` for the agent, on one port (stdlib server).

- ``/healthz``: the reconcile loop is still turning (liveness).
- ``/readyz``: the first reconcile succeeded or the source said "no data" for certain.
- ``/metrics``: this process's own registry in the Prometheus text format.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger(__name__)


class HealthServer:
    """A small threaded HTTP server; ``port`` is the bound port (useful with port 0)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        ready: Callable[[], bool],
        alive: Callable[[], bool],
        port: int = 8080,
        address: str = "",
    ) -> None:
        handler = _handler(registry, ready, alive)
        self._server = ThreadingHTTPServer((address, port), handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, name="http", daemon=True)

    def start(self) -> HealthServer:
        self._thread.start()
        log.info("serving /metrics /healthz /readyz port=%d", self.port)
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(
    registry: CollectorRegistry, ready: Callable[[], bool], alive: Callable[[], bool]
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "topology-labeler"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                ok = alive()
                self._send(200 if ok else 503, b"ok\n" if ok else b"reconcile loop stalled\n")
            elif path == "/readyz":
                ok = ready()
                self._send(200 if ok else 503, b"ok\n" if ok else b"not reconciled yet\n")
            else:
                self._send(404, b"not found: try /metrics, /healthz or /readyz\n")

        def _send(self, status: int, body: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("http %s", format % args)

    return Handler
