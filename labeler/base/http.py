"""``/metrics``, ``/healthz`` and ``/readyz`` on one port, for the agent and the audit exporter.

Stdlib only. A probe is a callable returning ``(ok, text)``: 200 and the text when ok, 503
and the text when not. Probes answer from in-memory state, never from the API server: a
slow API server must not make the kubelet restart a healthy process.

HTTP/1.1 keep-alive, because Prometheus reuses its scrape connection. On a kept-alive
connection the headers and the body go out as two small writes; with Nagle's algorithm the
body would wait for the client's delayed ACK of the headers (~40 ms on Linux) on every
scrape, so ``TCP_NODELAY`` is set. An idle kept-alive connection is dropped after
``IDLE_TIMEOUT`` seconds so that a scraper that vanished does not hold a thread forever.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from labeler.base.errors import UsageError
from labeler.base.logs import logger

log = logger(__name__)

Probe = Callable[[], tuple[bool, str]]

IDLE_TIMEOUT = 60.0
TEXT = "text/plain; charset=utf-8"
HTML = "text/html; charset=utf-8"


def flag_probe(check: Callable[[], bool], failing: str) -> Probe:
    """A probe from a yes/no check: ``ok`` when it holds, ``failing`` when it does not."""

    def probe() -> tuple[bool, str]:
        return (True, "ok") if check() else (False, failing)

    return probe


class ProbeServer:
    """A small threaded HTTP server, bound on construction; ``port`` is the bound port
    (useful with port 0). ``start`` serves in a daemon thread, ``close`` stops it."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        healthz: Probe,
        readyz: Probe,
        port: int = 8080,
        address: str = "",
        pages: Mapping[str, Probe] | None = None,
    ) -> None:
        handler = _handler(registry, healthz, readyz, pages or {})
        try:
            self._server = ThreadingHTTPServer((address, port), handler)
        except OSError as e:
            raise UsageError(f"cannot listen on {address or '*'}:{port}: {e}") from e
        self._server.daemon_threads = True
        host, bound = self._server.server_address[:2]
        self.address = str(host)
        self.port = int(bound)
        # serve_forever polls for shutdown; its default 0.5 s would be most of the agent's
        # SIGTERM budget (the kubelet waits, then kills; a node agent should exit at once),
        # so poll more often.
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="http",
            daemon=True,
        )

    def start(self) -> ProbeServer:
        self._thread.start()
        log.info("serving /metrics /healthz /readyz address=%s port=%d", self.address, self.port)
        return self

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()


def serve_until_signal(
    server: ProbeServer, stop: threading.Event, on_signal: Callable[[], None] | None = None
) -> None:
    """Start ``server`` and serve until SIGTERM/SIGINT or until ``stop`` is set; then
    close it.

    A signal calls ``on_signal`` (default: set ``stop``), which must end with ``stop`` set.
    Call from the main thread (only it may install signal handlers), after starting the
    work the server reports on.
    """

    def handler(signum: int, _frame: object) -> None:
        log.info("stopping signal=%s", signal.Signals(signum).name)
        (on_signal or stop.set)()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    server.start()
    # A short wait: CPython runs a signal handler only between waits, so the wait bounds
    # how long SIGTERM takes to be noticed.
    while not stop.wait(0.1):
        pass
    server.close()


def _handler(
    registry: CollectorRegistry, healthz: Probe, readyz: Probe, pages: Mapping[str, Probe]
) -> type[BaseHTTPRequestHandler]:
    probes = {"/healthz": healthz, "/readyz": readyz}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "topology-labeler"
        disable_nagle_algorithm = True
        timeout = IDLE_TIMEOUT

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path in probes:
                ok, text = probes[path]()
                self._send(200 if ok else 503, (text + "\n").encode())
            elif path in pages:  # an HTML page, or the text saying why there is none yet
                ok, text = pages[path]()
                self._send(200 if ok else 503, text.encode(), HTML if ok else TEXT)
            else:
                self._send(404, b"not found: try /metrics, /healthz or /readyz\n")

        def _send(self, status: int, body: bytes, ctype: str = TEXT) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("http " + format, *args)

    return Handler
