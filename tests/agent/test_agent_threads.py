"""No agent thread dies or hangs while /healthz says 200: an unexpected exception in the
source is a source error (logged, counted, retried); a crash of the watch restarts it; a
thread that stops making progress fails /healthz by name. In-process against the fake API
server, with the real probe server over HTTP, on a fake clock the test moves."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from labeler.agent import loop
from labeler.agent.config import AgentConfig
from labeler.agent.loop import Agent
from labeler.base.http import ProbeServer, flag_probe
from labeler.base.metrics import agent_metrics
from labeler.core.labels import parse_encoding
from labeler.core.profiles import oci_rdma
from labeler.sources import NoData, Reading
from labeler.sources.oci_imds import ISLAND, LOCAL_BLOCK, NETWORK_BLOCK, ROLES
from tests.clock import FakeClock
from tests.fakekube import FakeKube
from tests.helpers import http_get, wait_for
from tests.live import ended

P = oci_rdma()
K = P.keys_for(ROLES)
IDS = {ISLAND: "ocid1.i", NETWORK_BLOCK: "ocid1.nb", LOCAL_BLOCK: "ocid1.lb"}


class Deep:
    """A source that fails as ``json.loads('[' * 100_000)`` does, then reads fine."""

    name = "deep"
    roles = ROLES

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.reads = 0

    def read(self) -> Reading | NoData:
        self.reads += 1
        if self.reads <= self.failures:
            raise RecursionError("maximum recursion depth exceeded while decoding a JSON array")
        return Reading(IDS)


class Stuck:
    """A source whose second read hangs until released (a call without a deadline)."""

    name = "stuck"
    roles = ROLES

    def __init__(self) -> None:
        self.release = threading.Event()
        self.reads = 0

    def read(self) -> Reading | NoData:
        self.reads += 1
        if self.reads > 1:
            self.release.wait(30)
        return Reading(IDS)


def errors(agent: Agent, thread: str) -> float:
    got = agent.metrics.registry.get_sample_value(
        "topology_labeler_agent_thread_errors_total", {"thread": thread}
    )
    return 0.0 if got is None else got


def healthz(agent: Agent) -> tuple[int, str]:
    server = ProbeServer(
        agent.metrics.registry,
        healthz=agent.health,
        readyz=flag_probe(lambda: agent.ready, "not reconciled yet"),
        port=0,
        address="127.0.0.1",
    ).start()
    try:
        return http_get(f"http://127.0.0.1:{server.port}/healthz")
    finally:
        server.close()


def test_recursion_error_in_the_source_is_a_source_error_and_reading_goes_on(
    fake_kube: FakeKube, running: Callable[..., Agent], clock: FakeClock
) -> None:
    fake_kube.add_node("n1")
    source = Deep(failures=3)
    agent = running(source)
    clock.run(
        "source",
        lambda: K[LOCAL_BLOCK] in fake_kube.get_node("n1")["metadata"]["labels"],
        what="labeled",
    )
    assert source.reads >= 4  # read again after each failure, then labeled
    assert errors(agent, "source") == 3
    reg = agent.metrics.registry
    assert (
        reg.get_sample_value(
            "topology_labeler_source_reads_total", {"source": "deep", "result": "error"}
        )
        == 3
    )
    assert healthz(agent) == (200, "ok\n")


def test_once_reports_an_unexpected_source_exception_as_a_one_line_error(
    fake_kube: FakeKube,
) -> None:
    fake_kube.add_node("n1")
    config = AgentConfig(node="n1", profile=P, encoding=parse_encoding("hash"))
    agent = Agent(fake_kube.cluster(), Deep(1), config, metrics=agent_metrics(CollectorRegistry()))
    result = agent.once()
    assert result.exit_code == 1
    assert result.message.startswith("unexpected RecursionError: maximum recursion depth")
    assert "\n" not in result.message


def test_a_hung_source_read_fails_healthz_naming_the_thread(
    fake_kube: FakeKube, running: Callable[..., Agent], clock: FakeClock
) -> None:
    fake_kube.add_node("n1")
    source = Stuck()
    agent = running(source, stall_after=0.5)
    wait_for(lambda: agent.ready, 5)
    clock.run("source", lambda: source.reads >= 2, what="the second read")
    assert healthz(agent) == (200, "ok\n")  # the read is not late yet
    clock.advance(1.0)  # past stall_after
    clock.idle("loop")  # which beats as it waits
    status, text = healthz(agent)
    assert status == 503
    assert text.startswith("thread source made no progress for ")
    assert "loop" not in text and "watch" not in text
    source.release.set()  # progress again: healthy again
    wait_for(lambda: healthz(agent)[0] == 200, 5, what="200 after the read returned")


def test_a_crashed_watch_is_counted_and_started_again(
    fake_kube: FakeKube,
    running: Callable[..., Agent],
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = loop.watch_nodes
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise KeyError("a bug in event handling")
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "watch_nodes", flaky)
    fake_kube.add_node("n1")
    agent = running(Deep(0), api_backoff=0.05)
    wait_for(lambda: agent.ready, 5)
    # Started again after the backoff.
    clock.run(
        "watch", lambda: errors(agent, "watch") == 1 and calls["n"] >= 2, what="watch restart"
    )
    # The restarted watch still repairs a hand-deleted label.
    fake_kube.set_node_labels("n1", {K[LOCAL_BLOCK]: None})
    wait_for(lambda: K[LOCAL_BLOCK] in fake_kube.get_node("n1")["metadata"]["labels"], 5)
    assert healthz(agent)[0] == 200


def test_a_dead_loop_fails_healthz_naming_it(
    fake_kube: FakeKube, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_kube.add_node("n1")
    config = AgentConfig(node="n1", profile=P, encoding=parse_encoding("hash"), interval=0.1)
    metrics = agent_metrics(CollectorRegistry())
    agent = Agent(fake_kube.cluster(), Deep(0), config, metrics=metrics, clock=clock)

    def broken(node: Any) -> None:
        raise RuntimeError("a bug in reconcile")

    monkeypatch.setattr(agent, "_reconcile_and_schedule", broken)
    with pytest.raises(RuntimeError):
        agent.run()
    agent.shutdown()
    ended(fake_kube, agent)  # the source and watch threads it started end too
    assert errors(agent, "loop") == 1
    status, text = healthz(agent)
    assert status == 503 and "thread loop died: RuntimeError: a bug in reconcile" in text
