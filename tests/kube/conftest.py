"""Fixtures for the in-process tests against the fake API server."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from labeler.agent.loop import Agent
from labeler.agent.reconcile import AgentConfig
from labeler.audit.serve import AuditExporter, ExporterOptions
from labeler.base.http import ProbeServer
from labeler.base.metrics import agent_metrics
from labeler.core.labels import parse_encoding
from labeler.core.profiles import oci_rdma
from labeler.core.scope import Scope
from labeler.kube.events import NodeEvents
from labeler.sources import Source
from tests.fakekube import FakeKube
from tests.kube import servers

P = oci_rdma()


@pytest.fixture
def running(fake_kube: FakeKube) -> Iterator[Callable[..., Agent]]:
    """``running(source, **config)``: an agent for node n1 running in a thread, fast
    timings (re-read every 0.1 s); stopped at the end of the test."""
    agents: list[tuple[Agent, threading.Thread]] = []

    def start(source: Source, **overrides: Any) -> Agent:
        api = fake_kube.cluster()
        settings: dict[str, Any] = {
            "interval": 0.1,
            "jitter": 0.0,
            "error_backoff": 0.05,
            "min_write_interval": 0.0,
            **overrides,
        }
        config = AgentConfig(node="n1", profile=P, encoding=parse_encoding("hash"), **settings)
        agent = Agent(
            api,
            source,
            config,
            metrics=agent_metrics(CollectorRegistry()),
            events=NodeEvents(api, "n1"),
        )
        thread = threading.Thread(target=agent.run, daemon=True)
        thread.start()
        agents.append((agent, thread))
        return agent

    yield start
    for agent, thread in agents:
        agent.shutdown()
        thread.join(2)
        assert not thread.is_alive()


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on loopback with a self-signed certificate for 127.0.0.1."""
    yield from servers.tls_server(tmp_path)


@pytest.fixture
def exporter(fake_kube: FakeKube) -> Iterator[tuple[AuditExporter, str]]:
    """An audit exporter of oci-rdma (default scope) serving /metrics on a free port."""
    exp = AuditExporter(fake_kube.cluster(), P, Scope(), options=ExporterOptions(watch_timeout=30))
    server = ProbeServer(
        exp.registry, healthz=exp.healthz, readyz=exp.readyz, port=0, address="127.0.0.1"
    ).start()
    exp.start()
    try:
        yield exp, f"http://127.0.0.1:{server.port}"
    finally:
        exp.stop()
        server.close()
