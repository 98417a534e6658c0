"""Fixtures that run the agent, the audit exporter and a TLS server in-process against the
fake API server, for the agent, audit, kube and browser tests (``tests/conftest.py`` shares
them)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from labeler.agent.config import AgentConfig
from labeler.agent.loop import Agent
from labeler.audit.options import ExporterOptions
from labeler.audit.serve import AuditExporter
from labeler.base.metrics import agent_metrics
from labeler.core.labels import parse_encoding
from labeler.core.profiles import oci_rdma
from labeler.core.scope import Scope
from labeler.kube.events import NodeEvents
from labeler.sources import Source
from tests.audit.exporters import running as running_exporter
from tests.clock import FakeClock
from tests.fakekube import FakeKube
from tests.helpers import wait_for
from tests.kube import servers

P = oci_rdma()


@pytest.fixture
def clock() -> FakeClock:
    """The fake clock of the agents ``running`` starts: time moves when the test says."""
    return FakeClock()


@pytest.fixture
def running(fake_kube: FakeKube, clock: FakeClock) -> Iterator[Callable[..., Agent]]:
    """``running(source, **config)``: an agent for node n1 running in a thread named
    "loop" on the fake ``clock`` (re-reads every 0.1 s of it, so a test moves time to have
    the source read again); stopped, and every thread of it joined, at the end of the
    test."""
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
            events=NodeEvents(api, "n1", clock=clock.monotonic),
            clock=clock,
        )
        agents.append((agent, started(agent)))
        return agent

    yield start
    for agent, thread in agents:
        stopped(fake_kube, agent, thread)


def started(agent: Agent) -> threading.Thread:
    """``agent.run`` in a thread named "loop" (the name its clock knows it by)."""
    thread = threading.Thread(target=agent.run, name="loop", daemon=True)
    thread.start()
    return thread


def stopped(fake: FakeKube, agent: Agent, thread: threading.Thread) -> None:
    """Shut ``agent`` down and join every thread of it, or fail."""
    agent.shutdown()
    thread.join(5)
    assert not thread.is_alive()
    ended(fake, agent)


def ended(fake: FakeKube, agent: Agent) -> None:
    """Join the source and watch threads of ``agent``, shut down, or fail. Its watch would
    end only at its next event: the server ends it (again, should one open meanwhile)."""

    def joined() -> bool:
        fake.end_watches()
        return agent.join(0.05)

    wait_for(joined, what="the agent's threads to end")


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on loopback with a self-signed certificate for 127.0.0.1."""
    yield from servers.tls_server(tmp_path)


@pytest.fixture
def exporter_of(fake_kube: FakeKube) -> Iterator[Callable[..., tuple[AuditExporter, str]]]:
    """``exporter_of(**AuditExporter keywords)``: an audit exporter of oci-rdma (default
    scope) serving on a free port, and its base URL; stopped, its threads joined, at the end
    of the test."""
    with ExitStack() as stack:

        def start(**keywords: Any) -> tuple[AuditExporter, str]:
            keywords.setdefault("options", ExporterOptions(watch_timeout=30))
            exp = AuditExporter(fake_kube.cluster(), P, Scope(), **keywords)
            return exp, stack.enter_context(running_exporter(fake_kube, exp))

        yield start


@pytest.fixture
def exporter(exporter_of: Callable[..., tuple[AuditExporter, str]]) -> tuple[AuditExporter, str]:
    """An audit exporter of oci-rdma (default scope) serving /metrics on a free port."""
    return exporter_of()
