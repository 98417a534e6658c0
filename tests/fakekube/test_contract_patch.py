"""Contract: the four PATCH content types, via the real client."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException, UnprocessableEntityException

from tests.fakekube import FakeKube
from tests.realkube.adapter import Kube

MERGE = "application/merge-patch+json"
JSONPATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


@pytest.fixture
def core(api: Kube) -> client.CoreV1Api:
    api.add_node("n1", labels={"a": "1", "example.com/rack": "r1"})
    return client.CoreV1Api(api.api_client())


def test_default_patch_content_type_of_client_37(fake_kube: FakeKube) -> None:
    """kubernetes client 37: patch_node with a dict body sends strategic-merge-patch (rest.py
    swaps its json-patch default for non-list bodies); a list body sends JSON patch.
    Fake only: what the client sent is seen only in the fake's journal of requests."""
    fake_kube.add_node("n1")
    core = client.CoreV1Api(fake_kube.api_client())
    core.patch_node("n1", {"metadata": {"labels": {"b": "2"}}})
    assert fake_kube.journal[-1].content_type == STRATEGIC
    core.patch_node("n1", [{"op": "add", "path": "/metadata/labels/c", "value": "3"}])
    assert fake_kube.journal[-1].content_type == JSONPATCH


def test_merge_patch_null_deletes(core) -> None:
    """RFC 7386 JSON Merge Patch: null removes a member, other members merge."""
    out = core.patch_node(
        "n1", {"metadata": {"labels": {"a": None, "b": "2"}}}, _content_type=MERGE
    )
    assert "a" not in out.metadata.labels and out.metadata.labels["b"] == "2"
    assert out.metadata.labels["example.com/rack"] == "r1"


def test_merge_patch_replaces_lists(core) -> None:
    """RFC 7386: arrays are replaced wholesale."""
    taints = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    core.patch_node("n1", {"spec": {"taints": taints}}, _content_type=MERGE)
    out = core.patch_node(
        "n1", {"spec": {"taints": [{"key": "z", "effect": "NoExecute"}]}}, _content_type=MERGE
    )
    assert [t.key for t in out.spec.taints] == ["z"]


def test_json_patch_pointer_escaping(core) -> None:
    """RFC 6902 + RFC 6901: '/' in a label key is written ~1 (and '~' as ~0)."""
    ops = [
        {"op": "test", "path": "/metadata/labels/example.com~1rack", "value": "r1"},
        {"op": "replace", "path": "/metadata/labels/example.com~1rack", "value": "r2"},
        {"op": "add", "path": "/metadata/labels/example.com~1block", "value": "b1"},
        {"op": "remove", "path": "/metadata/labels/a"},
        {"op": "copy", "from": "/metadata/labels/example.com~1block", "path": "/metadata/labels/c"},
        {"op": "move", "from": "/metadata/labels/c", "path": "/metadata/labels/d"},
    ]
    out = core.patch_node("n1", ops, _content_type=JSONPATCH)
    labels = out.metadata.labels
    assert labels["example.com/rack"] == "r2" and labels["example.com/block"] == "b1"
    assert "a" not in labels and "c" not in labels and labels["d"] == "b1"


def test_json_patch_failed_test_is_422_and_atomic(core) -> None:
    """RFC 6902 section 5: if any operation fails the whole patch is not applied; the API
    server answers 422 for an application error."""
    ops = [
        {"op": "add", "path": "/metadata/labels/new", "value": "x"},
        {"op": "test", "path": "/metadata/labels/a", "value": "wrong"},
    ]
    with pytest.raises(UnprocessableEntityException):
        core.patch_node("n1", ops, _content_type=JSONPATCH)
    assert "new" not in core.read_node("n1").metadata.labels


def test_json_patch_test_on_resource_version(core) -> None:
    """A JSON patch "test" of /metadata/resourceVersion is the usual compare-and-swap."""
    rv = core.read_node("n1").metadata.resource_version
    ok = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
        {"op": "add", "path": "/metadata/labels/x", "value": "1"},
    ]
    core.patch_node("n1", ok, _content_type=JSONPATCH)
    with pytest.raises(UnprocessableEntityException):
        core.patch_node("n1", ok, _content_type=JSONPATCH)


def test_strategic_merge_patch_maps_merge(core) -> None:
    """Strategic merge patch ("Update API Objects in Place Using kubectl patch"): maps merge
    like a merge patch, null deletes; lists with a patchMergeKey merge by that key (through
    .../status: a write of the node itself keeps its status, nodeStrategy.PrepareForUpdate)."""
    custom = {"status": {"conditions": [{"type": "Custom", "status": "True"}]}}
    out = core.patch_node(
        "n1",
        {"metadata": {"labels": {"a": None, "z": "9"}}, **custom},
        _content_type=STRATEGIC,
    )
    assert "a" not in out.metadata.labels and out.metadata.labels["z"] == "9"
    assert [c.type for c in out.status.conditions] == ["Ready"]  # status is not written here
    out = core.patch_node_status("n1", custom, _content_type=STRATEGIC)
    assert {c.type for c in out.status.conditions} == {"Ready", "Custom"}


def test_strategic_merge_patch_unsupported_on_custom_resources(api: Kube) -> None:
    """Custom resources do not support strategic merge patch: 415 UnsupportedMediaType."""
    co = client.CustomObjectsApi(api.api_client())
    levels = [{"nodeLabel": "kubernetes.io/hostname"}]
    api.add_object("Topology", {"metadata": {"name": "t"}, "spec": {"levels": levels}})
    with pytest.raises(ApiException) as exc:
        co.patch_cluster_custom_object(
            "kueue.x-k8s.io", "v1beta2", "topologies", "t", {"spec": {}}, _content_type=STRATEGIC
        )
    assert exc.value.status == 415


def test_unsupported_content_type_is_415(core) -> None:
    """A PATCH body in an unknown format is 415 UnsupportedMediaType."""
    with pytest.raises(ApiException) as exc:
        core.patch_node("n1", {"metadata": {}}, _content_type="application/json")
    assert exc.value.status == 415
    assert json.loads(exc.value.body)["reason"] == "UnsupportedMediaType"


def test_server_side_apply_merges_and_takes_ownership(api: Kube, core) -> None:
    """Server-side apply (minimal): apply-patch+yaml needs fieldManager (422 from PatchOptions
    validation); fields the manager stops declaring are removed; another manager's different
    value conflicts (409) unless force=true."""
    cfg = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"t/a": "1"}}}
    apply = "application/apply-patch+yaml"
    with pytest.raises(ApiException) as exc:
        core.patch_node("n1", cfg, _content_type=apply)
    assert exc.value.status == 422
    assert json.loads(exc.value.body)["details"]["causes"][0]["field"] == "fieldManager"
    core.patch_node("n1", cfg, field_manager="labeler", _content_type=apply)
    cfg2 = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"t/b": "2"}}}
    out = core.patch_node("n1", cfg2, field_manager="labeler", _content_type=apply)
    assert "t/a" not in out.metadata.labels and out.metadata.labels["t/b"] == "2"
    assert out.metadata.labels["a"] == "1"  # never owned by "labeler": kept
    other = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"t/b": "3"}}}
    with pytest.raises(ApiException) as exc:
        core.patch_node("n1", other, field_manager="other", _content_type=apply)
    assert exc.value.status == 409
    assert 'conflict with "labeler"' in json.loads(exc.value.body)["message"]
    out = core.patch_node("n1", other, field_manager="other", force=True, _content_type=apply)
    assert out.metadata.labels["t/b"] == "3"


def test_node_status_subresource_merges_conditions_by_type_and_ignores_the_rest(
    api: Kube, core
) -> None:
    """PATCH nodes/{name}/status (strategic merge): conditions merge by ``type`` (the
    kubelet's Ready stays); the spec does not change through the subresource, but metadata
    does (nodeStatusStrategy keeps only the old spec)."""
    core.patch_node_status("n1", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    out = core.patch_node_status(
        "n1",
        {
            "metadata": {"labels": {"sneaky": "1"}},
            "spec": {"unschedulable": True},
            "status": {"conditions": [{"type": "TopologyLabeled", "status": "False"}]},
        },
        _content_type=STRATEGIC,
    )
    kinds = {c.type: c.status for c in out.status.conditions}
    assert kinds == {"Ready": "True", "TopologyLabeled": "False"}
    assert out.metadata.labels["sneaky"] == "1" and not out.spec.unschedulable
    # A new item goes before the server's (strategic merge's normalizeElementOrder).
    conditions = core.read_node_status("n1").status.conditions
    assert [c.type for c in conditions] == ["TopologyLabeled", "Ready"]


def test_json_patch_test_op_guards_a_taint_removal(api: Kube, core) -> None:
    """A failed ``test`` answers 422 and changes nothing: the removal of a taint by index
    cannot remove another taint that moved into its place."""
    taints = [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoSchedule"}]
    core.patch_node("n1", {"spec": {"taints": taints}}, _content_type=MERGE)
    ops = [{"op": "test", "path": "/spec/taints/0/key", "value": "b"}]
    with pytest.raises(UnprocessableEntityException):
        core.patch_node("n1", [*ops, {"op": "remove", "path": "/spec/taints/0"}])
    assert [t.key for t in core.read_node("n1").spec.taints] == ["a", "b"]
    ops = [{"op": "test", "path": "/spec/taints/1/key", "value": "b"}]
    core.patch_node("n1", [*ops, {"op": "remove", "path": "/spec/taints/1"}])
    assert [t.key for t in core.read_node("n1").spec.taints] == ["a"]
