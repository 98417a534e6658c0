"""The agent's HTTP endpoints: probes follow the agent's state; metrics use its registry."""

from __future__ import annotations

import urllib.error
import urllib.request

from prometheus_client import CollectorRegistry

from labeler.agent_http import HealthServer
from labeler.metrics import agent_metrics


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_probes_and_metrics() -> None:
    registry = CollectorRegistry()
    metrics = agent_metrics(registry)
    metrics.node_labeled.set(1)
    state = {"ready": False, "alive": True}
    server = HealthServer(
        registry,
        ready=lambda: state["ready"],
        alive=lambda: state["alive"],
        port=0,
        address="127.0.0.1",
    ).start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        assert get(base + "/readyz")[0] == 503
        state["ready"] = True
        assert get(base + "/readyz") == (200, "ok\n")
        assert get(base + "/healthz")[0] == 200
        state["alive"] = False
        assert get(base + "/healthz")[0] == 503
        status, text = get(base + "/metrics")
        assert status == 200
        assert "topology_labeler_node_labeled 1.0" in text
        assert 'topology_labeler_build_info{component="agent"' in text
        assert get(base + "/nope")[0] == 404
    finally:
        server.close()
