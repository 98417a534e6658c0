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

from tests.fakekube import FakeKube

KUEUE = ("kueue.x-k8s.io", "v1beta2")
VOLCANO = ("topology.volcano.sh", "v1alpha1")


@pytest.fixture
def co(fake_kube: FakeKube) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(fake_kube.api_client())


def topology(name: str = "default") -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": "r"}, {"nodeLabel": "kubernetes.io/hostname"}]},
    }


def test_kueue_topology_crud(fake_kube: FakeKube, co) -> None:
    """Custom resources (CRD registry): POST 201 with the object (client 37 returns None for a
    200), GET, LIST (items keep kind/apiVersion: unstructured), PUT with resourceVersion,
    merge PATCH, DELETE returning the object; generation counts spec changes."""
    created = co.create_cluster_custom_object(*KUEUE, "topologies", topology())
    assert fake_kube.journal[-1].status == 201
    assert created["metadata"]["generation"] == 1 and created["metadata"]["uid"]
    got = co.get_cluster_custom_object(*KUEUE, "topologies", "default")
    assert got["spec"] == topology()["spec"]
    lst = co.list_cluster_custom_object(*KUEUE, "topologies")
    assert lst["kind"] == "TopologyList" and lst["items"][0]["kind"] == "Topology"
    got["spec"]["levels"].insert(0, {"nodeLabel": "b"})
    replaced = co.replace_cluster_custom_object(*KUEUE, "topologies", "default", got)
    assert replaced["metadata"]["generation"] == 2
    patched = co.patch_cluster_custom_object(
        *KUEUE, "topologies", "default", {"metadata": {"labels": {"x": "1"}}}
    )
    assert fake_kube.journal[-1].content_type == "application/merge-patch+json"
    assert patched["metadata"]["generation"] == 2  # metadata-only change
    deleted = co.delete_cluster_custom_object(*KUEUE, "topologies", "default")
    assert deleted["metadata"]["name"] == "default"
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


def test_volcano_hypernode_crud_and_json_patch(fake_kube: FakeKube, co) -> None:
    """Volcano HyperNode (cluster-scoped): create, JSON patch, list by label, delete."""
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
    assert out["spec"]["tier"] == 2
    lst = co.list_cluster_custom_object(
        *VOLCANO, "hypernodes", label_selector="volcano.sh/network-topology-source=x"
    )
    assert [i["metadata"]["name"] for i in lst["items"]] == ["s0"]
    co.delete_cluster_custom_object(*VOLCANO, "hypernodes", "s0")
    assert fake_kube.objects("HyperNode") == []


def test_resource_flavor_server_side_apply_creates(fake_kube: FakeKube, co) -> None:
    """Server-side apply creates a missing object (201) and updates it later (200)."""
    rf = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "gpu"},
        "spec": {"nodeLabels": {"pool": "gpu"}, "topologyName": "default"},
    }
    kw = {"field_manager": "labeler", "_content_type": "application/apply-patch+yaml"}
    co.patch_cluster_custom_object(*KUEUE, "resourceflavors", "gpu", rf, **kw)
    assert fake_kube.journal[-1].status == 201
    rf["spec"]["nodeLabels"] = {"pool": "gpu2"}
    out = co.patch_cluster_custom_object(*KUEUE, "resourceflavors", "gpu", rf, force=True, **kw)
    assert fake_kube.journal[-1].status == 200 and out["spec"]["nodeLabels"] == {"pool": "gpu2"}
    assert fake_kube.journal[-1].query["force"] == "true"


def test_unknown_custom_resource_is_404(co) -> None:
    """A resource no CRD serves answers 404 NotFound."""
    with pytest.raises(ApiException) as exc:
        co.list_cluster_custom_object("example.com", "v1", "widgets")
    assert exc.value.status == 404


def test_discovery_documents(fake_kube: FakeKube) -> None:
    """Discovery: /version, /api, /apis (incl. kueue, volcano, events.k8s.io) and
    APIResourceList with kinds, namespaced flags, verbs and shortNames."""
    v = client.VersionApi(fake_kube.api_client()).get_code()
    assert (v.git_version, v.major, v.minor) == ("v1.32.4", "1", "32")
    groups = client.ApisApi(fake_kube.api_client()).get_api_versions()
    names = {g.name for g in groups.groups}
    assert {"kueue.x-k8s.io", "topology.volcano.sh", "events.k8s.io"} <= names
    res = client.CoreV1Api(fake_kube.api_client()).get_api_resources()
    nodes = next(r for r in res.resources if r.name == "nodes")
    assert nodes.kind == "Node" and not nodes.namespaced and "no" in nodes.short_names
    assert "patch" in nodes.verbs and "watch" in nodes.verbs
    hn = client.CustomObjectsApi(fake_kube.api_client()).get_api_resources(*VOLCANO)
    assert hn.resources[0].short_names == ["hn"]
