"""Contract: fault injection, latency and the request journal.

Fake only: these are the fake's own instruments (a real server cannot be told to fail,
delay or log a given request); tests/realkube makes real faults with real components.
"""

from __future__ import annotations

import json
import time

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fakekube import FakeKube


@pytest.fixture
def core(fake_kube: FakeKube) -> client.CoreV1Api:
    fake_kube.add_node("n1")
    return client.CoreV1Api(fake_kube.api_client())


def test_fault_429_with_retry_after(fake_kube: FakeKube, core) -> None:
    """API priority and fairness: an overloaded server answers 429 TooManyRequests with a
    Retry-After header and details.retryAfterSeconds.  Faults match in order and count down."""
    fake_kube.faults.add(
        method="PATCH", path=r"/api/v1/nodes/.*", status=429, retry_after=1, times=2
    )
    for _ in range(2):
        with pytest.raises(ApiException) as exc:
            core.patch_node("n1", {"metadata": {"labels": {"a": "1"}}})
        assert exc.value.status == 429
        assert exc.value.headers["Retry-After"] == "1"
        body = json.loads(exc.value.body)
        assert body["reason"] == "TooManyRequests" and body["details"]["retryAfterSeconds"] == 1
    core.patch_node("n1", {"metadata": {"labels": {"a": "1"}}})  # third succeeds
    assert [r.status for r in fake_kube.requests("PATCH")] == [429, 429, 200]


def test_client_retries_get_on_429_with_retry_after(fake_kube: FakeKube, core) -> None:
    """urllib3 (under client 37) silently retries a GET answered 429 with Retry-After; the
    journal shows both requests."""
    fake_kube.faults.add(method="GET", path="/api/v1/nodes/n1", status=429, retry_after=0)
    assert core.read_node("n1").metadata.name == "n1"
    assert [r.status for r in fake_kube.requests("GET", "/api/v1/nodes/n1")] == [429, 200]


def test_fault_500(fake_kube: FakeKube, core) -> None:
    """A 5xx fault answers a Status with reason InternalError."""
    fake_kube.faults.add(path="/api/v1/nodes", status=500)
    with pytest.raises(ApiException) as exc:
        core.list_node()
    assert exc.value.status == 500
    assert json.loads(exc.value.body)["reason"] == "InternalError"


def test_fault_delay(fake_kube: FakeKube, core) -> None:
    """delay= slows one response down without failing it."""
    fake_kube.faults.add(method="GET", path="/api/v1/nodes", delay=0.3)
    start = time.monotonic()
    core.list_node()
    assert time.monotonic() - start >= 0.3


def test_fault_drop_closes_connection(fake_kube: FakeKube, core) -> None:
    """drop=True closes the connection without a response (PATCH is not retried)."""
    fake_kube.faults.add(method="PATCH", drop=True)
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.patch_node("n1", {"metadata": {"labels": {"a": "1"}}})
    assert fake_kube.requests("PATCH")[0].status == 0
    core.patch_node("n1", {"metadata": {"labels": {"a": "1"}}})


def test_fault_truncate_applies_the_request_and_cuts_the_answer(fake_kube: FakeKube, core) -> None:
    """truncate=True carries the request out, then breaks the connection mid-answer."""
    fake_kube.faults.add(method="PATCH", truncate=True)
    resp = core.patch_node(
        "n1",
        {"metadata": {"labels": {"cut": "1"}}},
        _content_type="application/merge-patch+json",
        _preload_content=False,
    )
    with pytest.raises(urllib3.exceptions.HTTPError):
        resp.read()
    assert fake_kube.get_node("n1")["metadata"]["labels"]["cut"] == "1"


def test_fault_drop_reply_applies_the_request_and_answers_nothing(
    fake_kube: FakeKube, core
) -> None:
    """drop_reply=True carries the request out, then closes the connection unanswered."""
    fake_kube.faults.add(method="PATCH", drop_reply=True)
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.patch_node(
            "n1",
            {"metadata": {"labels": {"lost": "1"}}},
            _content_type="application/merge-patch+json",
        )
    assert fake_kube.get_node("n1")["metadata"]["labels"]["lost"] == "1"
    assert fake_kube.requests("PATCH")[0].status == 200


def test_latency_applies_to_every_request(fake_kube: FakeKube, core) -> None:
    """fake.latency_ms delays every request and can change at runtime."""
    fake_kube.latency_ms = 100
    start = time.monotonic()
    core.read_node("n1")
    core.read_node("n1")
    assert time.monotonic() - start >= 0.2
    fake_kube.latency_ms = 0


def test_journal_counts_audit_verbs(fake_kube: FakeKube, core) -> None:
    """Requests are classified like audit verbs: get, list, watch, create, update, patch,
    delete; records carry method, path, query, content type, parsed body and status."""
    fake_kube.clear_journal()
    core.read_node("n1")
    core.list_node(label_selector="a=b")
    n = core.create_node({"metadata": {"name": "n2"}})
    core.replace_node("n2", n)
    core.patch_node("n2", {"metadata": {"labels": {"x": "1"}}})
    core.delete_node("n2")
    list(__import__("kubernetes").watch.Watch().stream(core.list_node, timeout_seconds=1))
    counts = {
        v: fake_kube.count(v)
        for v in ("get", "list", "watch", "create", "update", "patch", "delete")
    }
    assert counts == dict.fromkeys(counts, 1)
    rec = fake_kube.requests(method="GET", path_prefix="/api/v1/nodes")[1]
    assert rec.query == {"labelSelector": "a=b"} and rec.verb == "list"
    patch = fake_kube.requests("PATCH")[0]
    assert patch.body == {"metadata": {"labels": {"x": "1"}}} and patch.status == 200
    fake_kube.clear_journal()
    assert fake_kube.journal == []


def _open_watch(fake: FakeKube, plural: str = "nodes") -> urllib3.BaseHTTPResponse:
    http = urllib3.PoolManager()
    resp = http.request(
        "GET",
        f"{fake.url}/api/v1/{plural}?watch=true&resourceVersion=0",
        preload_content=False,
        retries=False,
    )
    assert resp.status == 200
    return resp


def test_cut_watches_breaks_an_open_watch_between_two_events(fake_kube: FakeKube, core) -> None:
    """cut_watches(plural) closes the connection of every open watch of that resource
    without the chunked answer's last chunk, as a network cut between the client and the
    API server does; other watches and the state are untouched."""
    fake_kube.add_pod("p1")  # the fake sends a watch's head with its first event
    nodes, pods = _open_watch(fake_kube), _open_watch(fake_kube, "pods")
    lines = nodes.stream(1024, decode_content=False)
    assert b'"ADDED"' in next(lines)  # the watch is streaming
    deadline = time.monotonic() + 5
    while fake_kube.cut_watches("nodes") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)  # the handler registers the stream just after its headers
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for _ in lines:
            pass
    assert b'"p1"' in next(pods.stream(1024, decode_content=False))
    assert core.read_node("n1").metadata.name == "n1"


def test_go_away_refuses_connections_and_come_back_keeps_the_state(
    fake_kube: FakeKube, core
) -> None:
    """go_away() is an API server outage: open connections are cut, new ones refused;
    come_back() listens on the same port again, with every object kept."""
    lines = _open_watch(fake_kube).stream(1024, decode_content=False)
    next(lines)
    fake_kube.go_away()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for _ in lines:
            pass
    with pytest.raises(urllib3.exceptions.NewConnectionError, match="Connection refused"):
        urllib3.PoolManager().request("GET", f"{fake_kube.url}/api/v1/nodes", retries=False)
    fake_kube.come_back()
    assert core.read_node("n1").metadata.name == "n1"
