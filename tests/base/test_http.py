"""The HTTP endpoints (agent and audit exporter): probes follow the process's state;
metrics use its registry."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import threading
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from labeler.base.errors import UsageError
from labeler.base.http import ProbeServer, flag_probe, serve_until_signal
from labeler.base.metrics import agent_metrics
from tests.helpers import http_get


def test_probes_and_metrics() -> None:
    registry = CollectorRegistry()
    metrics = agent_metrics(registry)
    metrics.node_labeled.set(1)
    state = {"ready": False, "alive": True}
    server = ProbeServer(
        registry,
        healthz=flag_probe(lambda: state["alive"], "reconcile loop stalled"),
        readyz=flag_probe(lambda: state["ready"], "not reconciled yet"),
        port=0,
        address="127.0.0.1",
    ).start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        assert http_get(base + "/readyz", timeout=5)[0] == 503
        state["ready"] = True
        assert http_get(base + "/readyz", timeout=5) == (200, "ok\n")
        assert http_get(base + "/healthz", timeout=5)[0] == 200
        state["alive"] = False
        assert http_get(base + "/healthz", timeout=5)[0] == 503
        status, text = http_get(base + "/metrics", timeout=5)
        assert status == 200
        assert "topology_labeler_node_labeled 1.0" in text
        assert 'topology_labeler_build_info{component="agent"' in text
        assert http_get(base + "/nope", timeout=5)[0] == 404
    finally:
        server.close()


def test_probe_text_and_keep_alive() -> None:
    """A probe's own text is the body; one connection serves many requests (HTTP/1.1)."""
    answer = (False, "not ready: waiting for the first list of nodes")
    server = ProbeServer(
        CollectorRegistry(),
        healthz=lambda: (True, "ok"),
        readyz=lambda: answer,
        port=0,
        address="127.0.0.1",
    ).start()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        for _ in range(3):
            conn.request("GET", "/readyz")
            resp = conn.getresponse()
            assert (resp.status, resp.read()) == (503, (answer[1] + "\n").encode())
            assert resp.version == 11 and not resp.will_close
        conn.request("GET", "/healthz?verbose")
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (200, b"ok\n")
    finally:
        conn.close()
        server.close()


def test_port_in_use_is_a_usage_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=f"cannot listen on 127.0.0.1:{port}"):
            ProbeServer(
                CollectorRegistry(),
                healthz=lambda: (True, "ok"),
                readyz=lambda: (True, "ok"),
                port=port,
                address="127.0.0.1",
            )


@pytest.fixture
def keep_signal_handlers() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def _probe_server() -> ProbeServer:
    ok = flag_probe(lambda: True, "")
    return ProbeServer(CollectorRegistry(), healthz=ok, readyz=ok, port=0, address="127.0.0.1")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_until_signal_serves_then_stops_on_the_signal_and_closes(
    keep_signal_handlers: None, sig: signal.Signals
) -> None:
    server = _probe_server()
    base = f"http://127.0.0.1:{server.port}"
    stop = threading.Event()
    seen: list[int] = []

    def client() -> None:
        seen.append(http_get(base + "/healthz", timeout=5)[0])
        os.kill(os.getpid(), sig)

    calls: list[str] = []

    def on_signal() -> None:
        calls.append("signal")
        stop.set()

    threading.Thread(target=client, daemon=True).start()
    serve_until_signal(server, stop, on_signal=on_signal)
    assert seen == [200]
    assert calls == ["signal"] and stop.is_set()
    assert http_get(base + "/healthz", timeout=1)[0] == 0  # closed


def test_serve_until_signal_returns_when_the_work_sets_stop(keep_signal_handlers: None) -> None:
    server = _probe_server()
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    serve_until_signal(server, stop)
    assert http_get(f"http://127.0.0.1:{server.port}/healthz", timeout=1)[0] == 0
