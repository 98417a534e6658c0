"""Hostile replies to every reader of the API, not only the bulk writer's (the same rules for
the readers of Kueue's, Volcano's and kube-scheduler's objects, DRA ResourceSlices, pods, the
custom objects emit writes, and the one watch reader all watches share): a LIST whose
continue token loops, a page or an item of another kind, a GET answered with another
object, and watch streams that are framed, sized, timed or worded as no API server would.
Against the fake API server behind the hostile relay (tests/kube/hostile.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from labeler.kube import raw
from labeler.kube.client import Api, for_host
from labeler.kube.custom import CustomObjects
from labeler.kube.errors import KubeError
from labeler.kube.kueue import get_workload, list_kueue_kind, list_workloads, watch_workloads
from labeler.kube.nodes import get_node, list_nodes, watch_nodes
from labeler.kube.podgroups import list_pod_groups
from labeler.kube.pods import list_pods
from labeler.kube.resourceslices import read_resource_slices, watch_slices
from labeler.kube.volcano import get_configmap, get_podgroup, list_volcano_objects
from tests.fakekube import FakeKube
from tests.kube.hostile import CLOSE, Relay, Rule, Script, answer, says, trickle

HN = "topology.volcano.sh/v1alpha1"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"


def api_for(relay: Relay, read_timeout: float = 60.0) -> Api:
    return for_host(relay.url, request_timeout=(5.0, read_timeout))


def ok(doc: Any) -> bytes:
    return answer("200 OK", json.dumps(doc).encode(), "Content-Type: application/json")


# --- LISTs -----------------------------------------------------------------------------

# (reader, the path of the LIST the relay answers, the kind of its items)
LISTS: dict[str, tuple[Callable[[Api], Any], str, str]] = {
    "nodes": (list_nodes, "/api/v1/nodes", "Node"),
    "pods": (list_pods, "/api/v1/pods", "Pod"),
    "kueue workloads": (list_workloads, f"{KUEUE}/workloads", "Workload"),
    "kueue objects": (
        lambda api: list_kueue_kind(api, "topologies", "Topology"),
        f"{KUEUE}/topologies",
        "Topology",
    ),
    "volcano": (list_volcano_objects, f"/apis/{HN}/hypernodes", "HyperNode"),
    "podgroups": (list_pod_groups, "/apis/scheduling.k8s.io/v1beta1/podgroups", "PodGroup"),
    "dra slices": (
        lambda api: read_resource_slices(api, ["gpu.nvidia.com"]),
        "/apis/resource.k8s.io/v1/resourceslices",
        "ResourceSlice",
    ),
    "custom objects": (
        lambda api: CustomObjects(api).list_names(HN, "HyperNode", "app=x"),
        f"/apis/{HN}/hypernodes",
        "HyperNode",
    ),
}

# (the page the relay answers with, given the kind listed; the error)
PAGES: dict[str, tuple[Callable[[str], dict[str, Any]], str]] = {
    "a continue token that loops": (
        lambda kind: {"kind": f"{kind}List", "metadata": {"continue": "again"}, "items": []},
        "gave the continue token of page 1 again",
    ),
    "a Status with 200": (
        lambda kind: {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"},
        "page 1 is a 'Status', not a ",
    ),
    "items of another kind": (
        lambda kind: {
            "kind": f"{kind}List",
            "items": [{"kind": "Secret", "metadata": {"name": "s"}}],
        },
        "page 1, item 1 is a 'Secret', not a ",
    ),
    "an item without a name": (
        lambda kind: {"kind": f"{kind}List", "items": [{"metadata": {"namespace": "a"}}]},
        "page 1, item 1 is not a named object",
    ),
    "items that are not a list": (
        lambda kind: {"kind": f"{kind}List", "items": {"a": {"metadata": {"name": "a"}}}},
        "page 1: its items are not a list",
    ),
}


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("reader", LISTS)
def test_every_list_reader_refuses_what_no_api_server_lists(
    fake_kube: FakeKube, reader: str, page: str
) -> None:
    read, path, kind = LISTS[reader]
    doc, error = PAGES[page]
    rule = Rule("GET", path, says(ok(doc(kind))), times=0)
    with Relay(fake_kube, [rule]) as relay, pytest.raises(KubeError, match=error) as caught:
        read(api_for(relay))
    assert "between us and the API server" in str(caught.value) or "not the API server" in str(
        caught.value
    )
    assert sum(r.target.split("?")[0] == path for r in relay.seen) <= 2  # never retried on


def test_a_trickled_kueue_list_ends_at_the_deadline_and_is_retried(fake_kube: FakeKube) -> None:
    fake_kube.add_object("Namespace", {"metadata": {"name": "a"}})
    for i in range(3):
        wl = {"metadata": {"name": f"w{i}", "namespace": "a"}, "spec": {"podSets": []}}
        fake_kube.add_object("Workload", wl, namespace="a")

    def slow(req: Any, forward: Any) -> Script:
        return trickle(forward(req), 20, 0.1)

    with Relay(fake_kube, [Rule("GET", f"{KUEUE}/workloads", slow)]) as relay:
        start = time.monotonic()
        items, _, version = list_workloads(api_for(relay, read_timeout=1.0))
        took = time.monotonic() - start
    assert [w["metadata"]["name"] for w in items] == ["w0", "w1", "w2"] and version == "v1beta2"
    assert 1.0 <= took < 15.0


# --- GETs of one object ----------------------------------------------------------------


def _objects(fake: FakeKube) -> None:
    fake.add_object("Namespace", {"metadata": {"name": "team-a"}})
    fake.add_object("Namespace", {"metadata": {"name": "volcano-system"}})
    wl = {"metadata": {"name": "wl", "namespace": "team-a"}, "spec": {"podSets": []}}
    fake.add_object("Workload", wl, namespace="team-a")
    pg = {"metadata": {"name": "pg", "namespace": "team-a"}, "spec": {"minMember": 2}}
    fake.add_object("podgroups.scheduling.volcano.sh", pg, namespace="team-a")
    cm = {"metadata": {"name": "conf", "namespace": "volcano-system"}, "data": {"a": "b"}}
    fake.add_object("ConfigMap", cm, namespace="volcano-system")
    fake.add_object("HyperNode", {"metadata": {"name": "hn-1"}, "spec": {"tier": 1}})


HYPERNODE = {"apiVersion": HN, "kind": "HyperNode", "metadata": {"name": "hn-1"}}
# (reader, the object's path, its kind, namespace and name)
GETS: dict[str, tuple[Callable[[Api], Any], str, str, str, str]] = {
    "kueue workload": (
        lambda api: get_workload(api, "team-a", "wl"),
        f"{KUEUE}/namespaces/team-a/workloads/wl",
        "Workload",
        "team-a",
        "wl",
    ),
    "volcano podgroup": (
        lambda api: get_podgroup(api, "team-a", "pg"),
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/team-a/podgroups/pg",
        "PodGroup",
        "team-a",
        "pg",
    ),
    "volcano configmap": (
        lambda api: get_configmap(api, "volcano-system", "conf"),
        "/api/v1/namespaces/volcano-system/configmaps/conf",
        "ConfigMap",
        "volcano-system",
        "conf",
    ),
    "custom object": (
        lambda api: CustomObjects(api).get(HYPERNODE),
        f"/apis/{HN}/hypernodes/hn-1",
        "HyperNode",
        "",
        "hn-1",
    ),
}


@pytest.mark.parametrize("reader", GETS)
def test_a_get_answered_with_another_object_is_dropped_and_asked_again(
    fake_kube: FakeKube, reader: str
) -> None:
    read, path, kind, namespace, name = GETS[reader]
    _objects(fake_kube)
    other = {"kind": kind, "metadata": {"name": "other", "namespace": namespace or None}}
    with Relay(fake_kube, [Rule("GET", path, says(ok(other)))]) as relay:
        obj = read(api_for(relay))
    assert obj["metadata"]["name"] == name and obj["kind"] == kind
    assert [r.target for r in relay.seen].count(path) == 2


@pytest.mark.parametrize("reader", GETS)
def test_a_get_answered_with_another_kind_or_namespace_is_an_error(
    fake_kube: FakeKube, reader: str
) -> None:
    read, path, kind, namespace, name = GETS[reader]
    wrong_kind = {"kind": "Secret", "metadata": {"name": name, "namespace": namespace or None}}
    error = f"the answer is a 'Secret', not a {kind}"
    rule = Rule("GET", path, says(ok(wrong_kind)))
    with Relay(fake_kube, [rule]) as relay, pytest.raises(KubeError, match=error):
        read(api_for(relay))
    if namespace:
        elsewhere = {"kind": kind, "metadata": {"name": name, "namespace": "kube-system"}}
        error = "the answer is in namespace 'kube-system'"
        rule = Rule("GET", path, says(ok(elsewhere)))
        with Relay(fake_kube, [rule]) as relay, pytest.raises(KubeError, match=error):
            read(api_for(relay))


def test_a_get_always_answered_for_another_object_gives_up_with_the_reason(
    fake_kube: FakeKube,
) -> None:
    read, path, *_ = GETS["kueue workload"]
    other = {"kind": "Workload", "metadata": {"name": "other", "namespace": "team-a"}}
    error = r"holds object 'other', not 'wl'.*gave up after 5"
    rule = Rule("GET", path, says(ok(other)), times=0)
    with Relay(fake_kube, [rule]) as relay, pytest.raises(KubeError, match=error):
        read(api_for(relay))


# --- watches ---------------------------------------------------------------------------

# (reader, the watched path, the kind of its objects)
WATCHES: dict[str, tuple[Callable[[Api], Any], str, str]] = {
    "nodes": (
        lambda api: list(watch_nodes(api, resource_version="1", timeout_seconds=5)),
        "/api/v1/nodes",
        "Node",
    ),
    "dra slices": (
        lambda api: list(
            watch_slices(api, "gpu.nvidia.com", resource_version="1", timeout_seconds=5)
        ),
        "/apis/resource.k8s.io/v1/resourceslices",
        "ResourceSlice",
    ),
    "kueue workloads": (
        lambda api: list(
            watch_workloads(api, version="v1beta2", resource_version="1", timeout_seconds=5)
        ),
        f"{KUEUE}/workloads",
        "Workload",
    ),
}
STREAM_HEAD = answer("200 OK", b"", "Content-Type: application/json", "Transfer-Encoding: chunked")


def stream(*chunks: bytes) -> list[Any]:
    """A chunked watch answer of ``chunks`` (each framed as its own chunk), then the
    connection left open for longer than any test waits."""
    return [STREAM_HEAD, *(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks), 30.0, CLOSE]


def event(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


# Framing http.client reads its own way (a chunk size it takes for another, a status line
# it takes for 200), then nothing more: the watch may not yield an event from it, and ends
# with an error by the deadline of its whole answer at the latest.
FRAMINGS: dict[str, list[Any]] = {
    "a negative chunk size": [STREAM_HEAD, b"-6\r\n", b"x" * 100, 30.0, CLOSE],
    "a chunk size of 10**12": [STREAM_HEAD, b"e8d4a51000\r\n", b"x" * 100, 30.0, CLOSE],
    "a chunk longer than its size": [STREAM_HEAD, b"2\r\n{}xx\r\n", 30.0, CLOSE],
    "a status of 2_00": [STREAM_HEAD.replace(b"200 OK", b"2_00 OK"), 30.0, CLOSE],
}


@pytest.mark.parametrize("hostile", FRAMINGS)
def test_a_watch_framed_as_no_api_server_frames_it_ends_by_its_deadline(
    fake_kube: FakeKube, monkeypatch: pytest.MonkeyPatch, hostile: str
) -> None:
    monkeypatch.setattr(raw, "WATCH_MARGIN", 1)
    rule = Rule("GET", "/api/v1/nodes", lambda req, fwd: list(FRAMINGS[hostile]), times=0)
    with Relay(fake_kube, [rule]) as relay:
        start = time.monotonic()
        events = watch_nodes(api_for(relay), resource_version="1", timeout_seconds=1)
        with pytest.raises(KubeError, match="watch nodes"):
            assert not list(events)
        assert time.monotonic() - start < 10.0


# (the bytes after the head, the error); every one comes at once, never at the deadline
STREAMS: dict[str, tuple[Callable[[str], list[Any]], str]] = {
    "a line of 9 MiB": (
        lambda kind: stream(*[b"x" * (1 << 20)] * 9),
        "too large",
    ),
    "a line that is not JSON": (
        lambda kind: stream(b"<html>busy</html>\n"),
        "a line that is not a watch event: b'<html>",
    ),
    "an event type the API does not send": (
        lambda kind: stream(event("UPSERTED", {"kind": kind, "metadata": {"name": "a"}})),
        "not a watch event",
    ),
    "an event without an object": (
        lambda kind: stream(b'{"type": "ADDED", "object": [1]}\n'),
        "not a watch event",
    ),
    "an object of another kind": (
        lambda kind: stream(event("ADDED", {"kind": "Secret", "metadata": {"name": "a"}})),
        "the object of a ADDED event is a 'Secret', not a ",
    ),
    "an object without a name": (
        lambda kind: stream(event("MODIFIED", {"kind": kind, "metadata": {}})),
        "the object of a MODIFIED event is not a named object",
    ),
    "a bookmark of another kind": (
        lambda kind: stream(event("BOOKMARK", {"kind": "Pod", "metadata": {}})),
        "a BOOKMARK of a 'Pod'",
    ),
}


@pytest.mark.parametrize("hostile", STREAMS)
@pytest.mark.parametrize("reader", WATCHES)
def test_every_watch_refuses_a_stream_no_api_server_sends_at_once(
    fake_kube: FakeKube, reader: str, hostile: str
) -> None:
    read, path, kind = WATCHES[reader]
    script, error = STREAMS[hostile]
    rule = Rule("GET", path, lambda req, fwd: script(kind), times=0)
    with Relay(fake_kube, [rule]) as relay:
        start = time.monotonic()
        with pytest.raises(KubeError, match=error):
            read(api_for(relay))
        assert time.monotonic() - start < 10.0


def test_a_watch_trickled_for_ever_ends_at_its_deadline(
    fake_kube: FakeKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events a byte at a time, each byte well within any per-receive timeout: the watch's
    whole answer is bounded by its timeoutSeconds and the margin after it."""
    monkeypatch.setattr(raw, "WATCH_MARGIN", 1)
    line = event("ADDED", {"kind": "Node", "metadata": {"name": "n1"}})

    def forever(req: Any, forward: Any) -> Script:
        return [STREAM_HEAD, *trickle(b"%x\r\n%s\r\n" % (len(line), line) * 1000, 1, 0.05)]

    with Relay(fake_kube, [Rule("GET", "/api/v1/nodes", forever)]) as relay:
        start = time.monotonic()
        events = watch_nodes(api_for(relay), resource_version="1", timeout_seconds=1)
        with pytest.raises(KubeError, match="watch nodes"):
            for _ in events:
                pass
        took = time.monotonic() - start
    assert 2.0 <= took < 10.0


def test_a_good_watch_still_reads_every_event_however_it_is_cut(fake_kube: FakeKube) -> None:
    """The strict reader changes nothing for the API server's own streams: events split
    across chunks, several in one chunk, a bookmark, then the end of the answer."""
    objs = [
        {"kind": "Node", "metadata": {"name": f"n{i}", "resourceVersion": str(i)}} for i in range(3)
    ]
    body = b"".join(event("ADDED", o) for o in objs) + event(
        "BOOKMARK", {"kind": "Node", "metadata": {"resourceVersion": "9"}}
    )
    pieces = [body[:7], body[7:150], body[150:]]

    def good(req: Any, forward: Any) -> Script:
        return [STREAM_HEAD, *(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces), b"0\r\n\r\n"]

    with Relay(fake_kube, [Rule("GET", "/api/v1/nodes", good)]) as relay:
        got = list(watch_nodes(api_for(relay), resource_version="1", timeout_seconds=5))
    assert [(k, n.name or n.resource_version) for k, n in got] == [
        ("ADDED", "n0"),
        ("ADDED", "n1"),
        ("ADDED", "n2"),
        ("BOOKMARK", "9"),
    ]


# A Node whose spec or status has a shape the API server's schema does not allow: refused
# as an answer no API server gives (a KubeError the agent's loop backs off on), not a
# reader's thread crashed by the first field it reads.
@pytest.mark.parametrize(
    ("field", "value"), [("spec", "x"), ("status", [1]), ("status", {"conditions": 5})]
)
def test_a_node_whose_spec_or_status_no_api_server_serves_is_refused(
    fake_kube: FakeKube, field: str, value: Any
) -> None:
    fake_kube.add_node("n1")
    node = {"kind": "Node", "metadata": {"name": "n1"}, field: value}
    error = "not a Node as the API server serves one .its spec or status cannot be read"
    listed = {"kind": "NodeList", "metadata": {}, "items": [node]}
    readers: list[tuple[str, Callable[[Api], Any], bytes | list[Any]]] = [
        ("/api/v1/nodes/n1", lambda api: get_node(api, "n1"), ok(node)),
        ("/api/v1/nodes", list_nodes, ok(listed)),
        ("/api/v1/nodes", WATCHES["nodes"][0], stream(event("MODIFIED", node))),
    ]
    for path, read, reply in readers:
        script = reply if isinstance(reply, list) else [reply]
        rule = Rule("GET", path, lambda req, fwd, s=script: list(s), times=0)
        with Relay(fake_kube, [rule]) as relay, pytest.raises(KubeError, match=error):
            read(api_for(relay))
