"""Contract: cluster-scoped custom objects (Kueue, Volcano) via CustomObjectsApi."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import (
    ApiException,
    ConflictException,
    NotFoundException,
    UnprocessableEntityException,
)

from tests.realkube.adapter import Kube

KUEUE = ("kueue.x-k8s.io", "v1beta2")
VOLCANO = ("topology.volcano.sh", "v1alpha1")


@pytest.fixture
def co(api: Kube) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api.api_client())


def topology(name: str = "default") -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": "r"}, {"nodeLabel": "kubernetes.io/hostname"}]},
    }


def test_kueue_topology_crud(api: Kube, co) -> None:
    """Custom resources (CRD registry): POST 201 with the object (client 37 returns None for a
    200), GET, LIST (items keep kind/apiVersion: unstructured), PUT with resourceVersion,
    merge PATCH, DELETE answering a Success Status; a metadata change keeps the generation.
    Kueue's CRD makes spec.levels immutable (CEL ``self == oldSelf``): a PUT changing the
    levels is 422."""
    created, status, _ = co.create_cluster_custom_object_with_http_info(
        *KUEUE, "topologies", topology()
    )
    assert status == 201
    assert created["metadata"]["generation"] == 1 and created["metadata"]["uid"]
    got = co.get_cluster_custom_object(*KUEUE, "topologies", "default")
    assert got["spec"] == topology()["spec"]
    lst = co.list_cluster_custom_object(*KUEUE, "topologies")
    assert lst["kind"] == "TopologyList" and lst["items"][0]["kind"] == "Topology"
    changed = json.loads(json.dumps(got))
    changed["spec"]["levels"].insert(0, {"nodeLabel": "b"})
    with pytest.raises(UnprocessableEntityException) as exc:
        co.replace_cluster_custom_object(*KUEUE, "topologies", "default", changed)
    cause = json.loads(exc.value.body)["details"]["causes"][0]
    assert cause == {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: field is immutable",
        "field": "spec.levels",
    }
    got["metadata"]["labels"] = {"y": "1"}
    replaced = co.replace_cluster_custom_object(*KUEUE, "topologies", "default", got)
    assert replaced["metadata"]["generation"] == 1  # metadata-only change
    patched = co.patch_cluster_custom_object(  # merge patch: CustomObjectsApi's default
        *KUEUE, "topologies", "default", {"metadata": {"labels": {"x": "1"}}}
    )
    assert patched["metadata"]["generation"] == 1 and patched["metadata"]["labels"]["x"] == "1"
    deleted = co.delete_cluster_custom_object(*KUEUE, "topologies", "default")
    assert (deleted["kind"], deleted["status"]) == ("Status", "Success")
    assert deleted["details"]["name"] == "default" and deleted["details"]["kind"] == "topologies"
    with pytest.raises(NotFoundException) as exc:
        co.get_cluster_custom_object(*KUEUE, "topologies", "default")
    assert json.loads(exc.value.body)["details"]["group"] == "kueue.x-k8s.io"


def test_custom_object_already_exists(co) -> None:
    """POST of an existing name: 409 AlreadyExists "topologies.kueue.x-k8s.io "x" already
    exists" (GroupResource string includes the group)."""
    co.create_cluster_custom_object(*KUEUE, "topologies", topology("x"))
    with pytest.raises(ConflictException) as exc:
        co.create_cluster_custom_object(*KUEUE, "topologies", topology("x"))
    assert json.loads(exc.value.body)["message"] == 'topologies.kueue.x-k8s.io "x" already exists'


def test_custom_object_put_needs_current_resource_version(co) -> None:
    """customResourceStrategy.AllowUnconditionalUpdate is false: PUT without
    resourceVersion is 422; with a stale one 409 Conflict."""
    obj = co.create_cluster_custom_object(*KUEUE, "topologies", topology("x"))
    stale = json.loads(json.dumps(obj))
    co.patch_cluster_custom_object(*KUEUE, "topologies", "x", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(ConflictException):
        co.replace_cluster_custom_object(*KUEUE, "topologies", "x", stale)
    del stale["metadata"]["resourceVersion"]
    with pytest.raises(UnprocessableEntityException):
        co.replace_cluster_custom_object(*KUEUE, "topologies", "x", stale)


def test_volcano_hypernode_crud_and_json_patch(api: Kube, co) -> None:
    """Volcano HyperNode (cluster-scoped): create, JSON patch (a spec change: generation 2),
    list by label, delete."""
    hn = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "s0", "labels": {"volcano.sh/network-topology-source": "x"}},
        "spec": {
            "tier": 1,
            "members": [{"type": "Node", "selector": {"exactMatch": {"name": "a"}}}],
        },
    }
    co.create_cluster_custom_object(*VOLCANO, "hypernodes", hn)
    ops = [{"op": "replace", "path": "/spec/tier", "value": 2}]
    out = co.patch_cluster_custom_object(
        *VOLCANO, "hypernodes", "s0", ops, _content_type="application/json-patch+json"
    )
    assert out["spec"]["tier"] == 2 and out["metadata"]["generation"] == 2
    lst = co.list_cluster_custom_object(
        *VOLCANO, "hypernodes", label_selector="volcano.sh/network-topology-source=x"
    )
    assert [i["metadata"]["name"] for i in lst["items"]] == ["s0"]
    co.delete_cluster_custom_object(*VOLCANO, "hypernodes", "s0")
    assert api.objects("HyperNode") == []


def test_resource_flavor_server_side_apply_creates(api: Kube, co) -> None:
    """Server-side apply creates a missing object (201) and updates it later (200)."""
    rf = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "gpu"},
        "spec": {"nodeLabels": {"pool": "gpu"}},
    }
    kw = {"field_manager": "labeler", "_content_type": "application/apply-patch+yaml"}
    _, status, _ = co.patch_cluster_custom_object_with_http_info(
        *KUEUE, "resourceflavors", "gpu", rf, **kw
    )
    assert status == 201
    rf["spec"]["nodeLabels"] = {"pool": "gpu2"}
    out, status, _ = co.patch_cluster_custom_object_with_http_info(
        *KUEUE, "resourceflavors", "gpu", rf, force=True, **kw
    )
    assert status == 200 and out["spec"]["nodeLabels"] == {"pool": "gpu2"}


def test_resource_flavor_with_a_topology_keeps_its_node_labels(co) -> None:
    """Kueue's CRD: once spec.topologyName is set, nodeLabels, tolerations and topologyName
    are immutable (x-kubernetes-validations on spec); each change is its own cause."""
    rf = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "gpu"},
        "spec": {"nodeLabels": {"pool": "gpu"}, "topologyName": "default"},
    }
    co.create_cluster_custom_object(*KUEUE, "resourceflavors", rf)
    change = {"spec": {"nodeLabels": {"pool": "gpu2"}, "topologyName": "other"}}
    with pytest.raises(UnprocessableEntityException) as exc:
        co.patch_cluster_custom_object(*KUEUE, "resourceflavors", "gpu", change)
    body = json.loads(exc.value.body)
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        ("spec", "Invalid value: nodeLabels are immutable when topologyName is set"),
        ("spec", "Invalid value: topologyName is immutable when topologyName is set"),
    ]
    labels = {"metadata": {"labels": {"team": "a"}}}
    out = co.patch_cluster_custom_object(*KUEUE, "resourceflavors", "gpu", labels)
    assert out["spec"]["nodeLabels"] == {"pool": "gpu"}


def test_unknown_custom_resource_is_404(co) -> None:
    """A resource no CRD serves answers 404 NotFound."""
    with pytest.raises(ApiException) as exc:
        co.list_cluster_custom_object("example.com", "v1", "widgets")
    assert exc.value.status == 404


def test_discovery_documents(api: Kube) -> None:
    """Discovery: /version, /api, /apis (incl. kueue, volcano, events.k8s.io) and
    APIResourceList with kinds, namespaced flags, verbs and shortNames."""
    v = client.VersionApi(api.api_client()).get_code()
    major, minor, patch = api.version
    assert (v.git_version, v.major, v.minor) == (f"v{major}.{minor}.{patch}", "1", str(minor))
    groups = client.ApisApi(api.api_client()).get_api_versions()
    names = {g.name for g in groups.groups}
    assert {"kueue.x-k8s.io", "topology.volcano.sh", "events.k8s.io"} <= names
    res = client.CoreV1Api(api.api_client()).get_api_resources()
    nodes = next(r for r in res.resources if r.name == "nodes")
    assert nodes.kind == "Node" and not nodes.namespaced and "no" in nodes.short_names
    assert "patch" in nodes.verbs and "watch" in nodes.verbs
    hn = client.CustomObjectsApi(api.api_client()).get_api_resources(*VOLCANO)
    assert [r.short_names for r in hn.resources if r.name == "hypernodes"] == [["hn"]]
