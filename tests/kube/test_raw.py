"""Raw responses leave the client's keep-alive connections clean (against the fake server).

A response body left unread on a pooled connection would be read as the next response's
status line; a watch given up part-way still has data coming and must be closed. Checked
by requests that follow on the same client and by the connections its pool had to open.
"""

from __future__ import annotations

from labeler.core.node import Taint
from labeler.core.plan import Desired
from labeler.kube.client import Api
from labeler.kube.custom import CustomObjects
from labeler.kube.errors import Expired
from labeler.kube.nodes import LabelWriter, get_node, watch_nodes
from labeler.kube.readiness import CONDITION_TYPE, remove_taint, set_condition
from tests.fakekube import FakeKube

# Answers bigger than http.client's read buffer (8 KiB), as real Nodes are (status.images):
# a small answer is read with the headers, whatever the caller does.
BIG = {"example.com/padding": "x" * 64_000}
HYPERNODE = {
    "apiVersion": "topology.volcano.sh/v1alpha1",
    "kind": "HyperNode",
    "metadata": {"name": "hn-1", "labels": {"app": "x"}, "annotations": BIG},
    "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "n1"}}}]},
}


def connections_made(api: Api, url: str) -> int:
    """How many TCP connections the client's pool for ``url`` has opened so far.

    A connection left with an unread answer is not reusable: the client's next request on
    it fails (http.client: ResponseNotReady) and urllib3 retries on a new connection, so an
    unclean release shows up here as one more connection.
    """
    return int(api.pool.connection_from_url(url).num_connections)


def test_writes_read_their_answer_so_the_connection_is_reused(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1", annotations=BIG)
    api = fake_kube.cluster()
    writer = LabelWriter(api)
    objects = CustomObjects(api)
    changed = {**HYPERNODE, "metadata": {**HYPERNODE["metadata"], "labels": {"app": "y"}}}
    for i in range(3):
        writer.reconcile("n1", Desired(set={"x.io/a": str(i)}))  # GET, PATCH
        objects.apply(HYPERNODE)  # GET, POST
        objects.apply(changed)  # GET, PUT
        objects.delete(HYPERNODE["apiVersion"], "HyperNode", "hn-1")  # DELETE
        assert get_node(api, "n1").labels["x.io/a"] == str(i)
    assert fake_kube.objects("HyperNode") == []
    assert fake_kube.count("patch") == 3 and fake_kube.count("delete") == 3
    assert connections_made(api, fake_kube.url) == 1


def test_watch_closed_early_is_not_returned_to_the_pool(fake_kube: FakeKube) -> None:
    fake_kube.add_node("n1", annotations=BIG)
    api = fake_kube.cluster()
    for i in range(3):
        events = watch_nodes(api, resource_version="0", timeout_seconds=30)
        assert next(events)[0] == "ADDED"
        for j in range(5):  # events the caller will never read
            fake_kube.set_node_labels("n1", {"x.io/i": f"{i}-{j}"})
        events.close()
        assert get_node(api, "n1").labels["x.io/i"] == f"{i}-4"
    # The watch's connection was closed, so the pool reopened that same slot for the GET
    # each time (a reopened slot is not a new connection of the pool's); had it been given
    # back with events unread, the GET would have read them as its answer.
    assert connections_made(api, fake_kube.url) == 1


def test_expired_watch_leaves_the_client_usable() -> None:
    with FakeKube(history=2) as fake:
        fake.add_node("n1")
        api = fake.cluster()
        old = get_node(api, "n1").resource_version
        for i in range(5):
            fake.set_node_labels("n1", {"i": str(i)})
        try:
            list(watch_nodes(api, resource_version=old, timeout_seconds=5))
        except Expired:
            pass
        else:
            raise AssertionError("a watch from a compacted resourceVersion must raise Expired")
        assert get_node(api, "n1").labels["i"] == "4"
        # The watch's answer (a 410 event) was read to its end: its connection was clean
        # and served the GET.
        assert connections_made(api, fake.url) == 1


def test_an_answer_cut_mid_body_is_retried_or_ignored_never_a_traceback(
    fake_kube: FakeKube,
) -> None:
    """A read whose body breaks off is retried inside ``call`` (the body is read in the
    retried step). A write whose echo breaks off after its 200 status took effect: the
    rest of the echo is not needed, so it is dropped and the write counts as done."""
    fake_kube.add_node("n1", annotations=BIG)
    api = fake_kube.cluster()
    fake_kube.faults.add(method="GET", path="/api/v1/nodes/n1", truncate=True)
    assert get_node(api, "n1").name == "n1"
    assert len(fake_kube.requests(method="GET", path_prefix="/api/v1/nodes/n1")) == 2
    fake_kube.faults.add(method="PATCH", path="/api/v1/nodes/n1", truncate=True)
    result = LabelWriter(api).reconcile("n1", Desired(set={"x.io/a": "1"}))
    assert result.written
    assert fake_kube.get_node("n1")["metadata"]["labels"]["x.io/a"] == "1"
    assert get_node(api, "n1").labels["x.io/a"] == "1"  # the pooled client still works


def test_the_readiness_writes_give_their_connection_back(fake_kube: FakeKube) -> None:
    """The agent's taint removal and condition writes read their answer (the node echoed
    back) whole: each goes out on the one kept connection, none is left checked out."""
    startup = {"key": "topology.example.com/unlabeled", "effect": "NoSchedule"}
    fake_kube.add_node("n1", annotations=BIG, taints=[startup])
    api = fake_kube.cluster()
    for i in range(3):
        set_condition(api, "n1", "False", "Waiting", f"try {i}", transition=i == 0)
    remove_taint(api, "n1", 0, Taint(startup["key"], "", startup["effect"]))
    set_condition(api, "n1", "True", "Labeled", "done", transition=True)
    node = fake_kube.get_node("n1")
    assert not node["spec"].get("taints")
    (condition,) = [c for c in node["status"]["conditions"] if c["type"] == CONDITION_TYPE]
    assert (condition["status"], condition["reason"]) == ("True", "Labeled")
    assert fake_kube.count("patch") == 5
    assert connections_made(api, fake_kube.url) == 1
