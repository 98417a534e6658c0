"""After a working watch breaks: a prompt reconnect, the right error, and a /readyz and a
gauge that say when the exporter's figures are stale.

Against the fake API server, cutting watches mid-stream and taking the server away as a
network does. The bounds are generous (they fail only on the old backoff's 16 s, not on a
slow machine); what is asserted is the behaviour: the backoff starts again from its first
delay after every healthy watch, errors are named for what they are.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest

from labeler.agent.loop import Agent
from labeler.audit.options import ExporterOptions
from labeler.audit.serve import AuditExporter
from labeler.sources import Reading
from tests.agent.test_agent_loop import FAST_API, IDS, Scripted, labeled
from tests.fakekube import FakeKube
from tests.helpers import wait_for

CUT = "cut off between chunks"


def node_watches(fake: FakeKube) -> int:
    return len(fake.requests("GET", "/api/v1/nodes", verb="watch"))


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def stale_seconds(exp: AuditExporter) -> float:
    value = exp.registry.get_sample_value(
        "topology_labeler_audit_stale_seconds", {"resource": "nodes", "driver": ""}
    )
    assert value is not None
    return value


def event_then_cut(fake: FakeKube, exp: AuditExporter, node: str) -> None:
    """A node event reaches the exporter's watch, then the watch is cut; returns once a new
    watch has been opened (within a bound only the old 8 s and longer waits miss)."""
    fake.add_node(node, allocatable={"nvidia.com/gpu": "8"})
    wait_for(lambda: node in {f.name for f in exp.store.snapshot()[1]}, what=f"{node} seen")
    opened = node_watches(fake)
    assert fake.cut_watches("nodes") == 1
    wait_for(lambda: node_watches(fake) > opened, timeout=4, what="a new watch")


def test_the_exporter_reconnects_promptly_after_every_break_of_a_healthy_watch(
    fake_kube: FakeKube, exporter_of: Callable[..., tuple[AuditExporter, str]]
) -> None:
    fake_kube.add_node("gpu-1", allocatable={"nvidia.com/gpu": "8"})
    exp, _ = exporter_of()
    wait_for(lambda: exp.readyz()[0], what="ready")
    for i in range(6):  # the old loop waited 1, 2, 4, 8, 16, then 30 s
        event_then_cut(fake_kube, exp, f"late-{i}")
        assert exp._node_watch.reconnect.failures == 1  # a new run of failures each time
    assert exp.counters.relists._value.get() == 1  # resumed, never re-listed
    wait_for(lambda: stale_seconds(exp) == 0.0, what="the gauge back at 0")


def test_readyz_and_the_gauge_say_when_the_node_watch_has_been_down_too_long(
    fake_kube: FakeKube, exporter_of: Callable[..., tuple[AuditExporter, str]]
) -> None:
    fake_kube.add_node("gpu-1", allocatable={"nvidia.com/gpu": "8"})
    exp, url = exporter_of(options=ExporterOptions(watch_timeout=30, stale_after=0.5))
    wait_for(lambda: get(url + "/readyz")[0] == 200, what="ready")
    assert stale_seconds(exp) == 0.0
    fake_kube.go_away()
    try:
        wait_for(lambda: get(url + "/readyz")[0] == 503, timeout=10, what="not ready")
        text = get(url + "/readyz")[1]
        assert "the node watch has been down for" in text
        assert "Connection refused" in text  # the failure that keeps it down
        assert stale_seconds(exp) > 0.5
        assert get(url + "/healthz")[0] == 200  # the process is fine: no restart
    finally:
        fake_kube.come_back()
    wait_for(lambda: get(url + "/readyz")[0] == 200, timeout=20, what="ready again")
    assert stale_seconds(exp) == 0.0


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (404, "node 'n1' does not exist"),
        (403, "403 Forbidden: the RBAC role lacks 'get' on 'nodes/n1'"),
    ],
)
def test_the_agent_reports_what_its_re_read_after_a_cut_watch_met(
    fake_kube: FakeKube,
    running: Callable[..., Agent],
    status: int,
    says: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The node gone (404), or RBAC taken away (403), while the watch is cut: the agent's
    re-read is reported as that (once per try, no retries inside a try), never as the cut."""
    fake_kube.add_node("n1")
    agent = running(Scripted(Reading(IDS)), **{**FAST_API, "watch_timeout": 30})
    assert wait_for(lambda: agent.ready and labeled(fake_kube))
    caplog.set_level(logging.INFO)
    fake_kube.faults.add(method="GET", path="/api/v1/nodes/n1", status=status, times=None)
    wait_for(lambda: fake_kube.cut_watches("nodes") == 1, what="the agent's watch to cut")
    reports = wait_for(
        lambda: [r for r in caplog.records if r.getMessage().startswith("cannot read node")],
        what="the re-read's report",
    )
    assert says in reports[0].getMessage()
    assert all(CUT not in r.getMessage() for r in reports)
    assert not [r for r in caplog.records if r.getMessage().startswith("retrying verb=get")]


def test_the_agent_reads_its_node_again_at_once_after_a_410(
    fake_kube: FakeKube, running: Callable[..., Agent], caplog: pytest.LogCaptureFixture
) -> None:
    """410 Expired on the watch is the server's answer, not a failure: the agent reads its
    node again and watches from there without waiting its API backoff (20 s here)."""
    fake_kube.add_node("n1")
    agent = running(Scripted(Reading(IDS)), **{**FAST_API, "api_backoff": 20.0})
    assert wait_for(lambda: agent.ready and labeled(fake_kube))
    caplog.set_level(logging.INFO)
    fault = fake_kube.faults.add(method="GET", path="/api/v1/nodes", status=410, times=1)
    wait_for(lambda: fault.hits == 1, what="the watch answered 410")
    opened = node_watches(fake_kube)
    wait_for(lambda: node_watches(fake_kube) > opened, timeout=5, what="a watch after the 410")
    assert any("watch expired node=n1" in r.getMessage() for r in caplog.records)
    assert not any("retry_in=20" in r.getMessage() for r in caplog.records)
