"""Contract: watch streams, via kubernetes.watch.Watch and raw HTTP."""

from __future__ import annotations

import json
import queue
import threading
import time
import urllib.request

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.fakekube import FakeKube
from tests.realkube.adapter import Kube
from tests.sim.volcano.objects import hypernode


def collect(fake: Kube, n: int, **kwargs) -> tuple[queue.Queue, threading.Thread]:
    """Run Watch().stream(list_node, **kwargs) in a thread, pushing (type, name, labels)."""
    core = client.CoreV1Api(fake.api_client())
    out: queue.Queue = queue.Queue()

    def run() -> None:
        w = watch.Watch()
        seen = 0
        try:
            for ev in w.stream(core.list_node, **kwargs):
                meta = ev["raw_object"]["metadata"]
                out.put((ev["type"], meta.get("name"), meta.get("labels", {})))
                seen += 1
                if seen >= n:
                    w.stop()
        except Exception as exc:  # surfaced to the test through the queue
            out.put(exc)
        out.put(None)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return out, t


def take(q: queue.Queue, n: int) -> list:
    return [q.get(timeout=5) for _ in range(n)]


def test_watch_sends_added_for_existing_then_modified(api: Kube) -> None:
    """API concepts "Efficient detection of changes": without resourceVersion a watch starts
    with synthetic ADDED events for current objects, then streams MODIFIED on changes."""
    api.add_node("n1")
    q, t = collect(api, 2, timeout_seconds=10)
    assert take(q, 1)[0][:2] == ("ADDED", "n1")
    core = client.CoreV1Api(api.api_client())
    core.patch_node("n1", {"metadata": {"labels": {"x": "1"}}})
    ev = take(q, 1)[0]
    assert ev[:2] == ("MODIFIED", "n1") and ev[2]["x"] == "1"
    t.join(5)


def test_watch_deleted_event(api: Kube) -> None:
    """Deleting an object sends DELETED."""
    api.add_node("n1")
    rv = client.CoreV1Api(api.api_client()).list_node().metadata.resource_version
    q, t = collect(api, 1, resource_version=rv, timeout_seconds=10)
    time.sleep(0.2)
    api.delete_node("n1")
    assert take(q, 1)[0][:2] == ("DELETED", "n1")
    t.join(5)


def test_watch_selector_transitions(api: Kube) -> None:
    """cache_watcher.go convertToWatchEvent: with a selector, an object that starts matching
    is ADDED, keeps matching is MODIFIED, stops matching is DELETED."""
    api.add_node("n1", labels={"pool": "a"})
    api.add_node("n2", labels={"pool": "b"})
    q, t = collect(api, 4, label_selector="pool=a", timeout_seconds=10)
    assert take(q, 1)[0][:2] == ("ADDED", "n1")
    api.set_node_labels("n2", {"pool": "a"})
    assert take(q, 1)[0][:2] == ("ADDED", "n2")
    api.set_node_labels("n2", {"x": "y"})
    assert take(q, 1)[0][:2] == ("MODIFIED", "n2")
    api.set_node_labels("n1", {"pool": "c"})
    ev = take(q, 1)[0]
    assert ev[:2] == ("DELETED", "n1") and ev[2]["pool"] == "a"  # previous state
    t.join(5)


def test_watch_field_selector(api: Kube) -> None:
    """Watch honours fieldSelector metadata.name (how a node agent watches its own node)."""
    api.add_node("n1")
    api.add_node("n2")
    q, t = collect(api, 2, field_selector="metadata.name=n2", timeout_seconds=10)
    assert take(q, 1)[0][:2] == ("ADDED", "n2")
    api.set_node_labels("n1", {"a": "1"})
    api.set_node_labels("n2", {"a": "1"})
    assert take(q, 1)[0][:2] == ("MODIFIED", "n2")
    t.join(5)


def test_watch_resumes_from_resource_version(api: Kube) -> None:
    """API concepts "Resource versions": watch from resourceVersion=N sends exactly the
    changes after N, no synthetic ADDED."""
    api.add_node("n1")
    rv = api.get_node("n1")["metadata"]["resourceVersion"]
    api.set_node_labels("n1", {"a": "1"})
    api.set_node_labels("n1", {"a": "2"})
    q, t = collect(api, 2, resource_version=rv, timeout_seconds=10)
    evs = take(q, 2)
    assert [(e[0], e[2]["a"]) for e in evs] == [("MODIFIED", "1"), ("MODIFIED", "2")]
    t.join(5)


def test_watch_too_old_resource_version_is_410_expired() -> None:
    """API concepts "410 Gone responses": a resourceVersion older than the kept history gets
    an ERROR event carrying a 410 Expired Status "too old resource version: N (M)"; the
    client's Watch (with timeout_seconds, i.e. no retry) raises ApiException(410).
    Fake only: it needs a history of five writes; a real server's window (its watch cache)
    cannot be set from a test."""
    with FakeKube(history=5) as fake:
        fake.add_node("n1")
        for i in range(10):
            fake.set_node_labels("n1", {"i": str(i)})
        raw = urllib.request.urlopen(
            fake.url + "/api/v1/nodes?watch=true&resourceVersion=2", timeout=5
        ).read()
        ev = json.loads(raw.splitlines()[0])
        assert ev["type"] == "ERROR"
        assert ev["object"]["code"] == 410 and ev["object"]["reason"] == "Expired"
        assert ev["object"]["message"].startswith("too old resource version: 2 (")
        core = client.CoreV1Api(fake.api_client())
        with pytest.raises(ApiException) as exc:
            for _ in watch.Watch().stream(core.list_node, resource_version="2", timeout_seconds=2):
                pass
        assert exc.value.status == 410


def test_watch_timeout_seconds_ends_stream(api: Kube) -> None:
    """timeoutSeconds ends the watch: the stream closes cleanly after it."""
    core = client.CoreV1Api(api.api_client())
    start = time.monotonic()
    evs = list(watch.Watch().stream(core.list_node, timeout_seconds=1))
    assert evs == [] and time.monotonic() - start < 5


def test_watch_bookmarks(api: Kube) -> None:
    """allowWatchBookmarks: the server may send BOOKMARK events carrying metadata.resourceVersion
    (and, after a watch's initial ADDED events, the annotation k8s.io/initial-events-end)."""
    api.bookmark_interval = 0.2
    core = client.CoreV1Api(api.api_client())
    w = watch.Watch()
    types = []
    for ev in w.stream(core.list_node, allow_watch_bookmarks=True, timeout_seconds=2):
        types.append(ev["type"])
        if ev["type"] == "BOOKMARK":
            assert set(ev["raw_object"]["metadata"]) <= {"resourceVersion", "annotations"}
            assert ev["raw_object"]["metadata"]["resourceVersion"]
            w.stop()
    assert "BOOKMARK" in types


def test_watch_ends_when_server_stops() -> None:
    """Open watches end promptly when the fake stops. Fake only: it is about the fake's own
    shutdown (the real API server's restart under a watch is tests/realkube's)."""
    fake = FakeKube().start()
    _, t = collect(fake, 99)
    time.sleep(0.3)
    start = time.monotonic()
    fake.stop()
    t.join(5)
    assert not t.is_alive() and time.monotonic() - start < 5


def test_watch_custom_objects(api: Kube) -> None:
    """Watch works for cluster-scoped custom objects (CustomObjectsApi)."""
    co = client.CustomObjectsApi(api.api_client())
    api.add_object("HyperNode", hypernode("hn1", 1, nodes=("a",)))  # admission wants a member
    w = watch.Watch()
    for ev in w.stream(
        co.list_cluster_custom_object,
        "topology.volcano.sh",
        "v1alpha1",
        "hypernodes",
        timeout_seconds=5,
    ):
        assert ev["type"] == "ADDED" and ev["object"]["kind"] == "HyperNode"
        w.stop()
