"""Contract: create, read, update, delete and errors of core objects, via the real client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from kubernetes import client
from kubernetes.client.exceptions import (
    ConflictException,
    NotFoundException,
    UnprocessableEntityException,
)

from tests.builders import node
from tests.realkube.adapter import Kube


@pytest.fixture
def core(api: Kube) -> client.CoreV1Api:
    return client.CoreV1Api(api.api_client())


def test_create_answers_201_then_already_exists_409(api: Kube, core) -> None:
    """API concepts "Create": POST answers 201 Created; a second POST of the same name is
    409 AlreadyExists (k8s.io/apimachinery/pkg/api/errors NewAlreadyExists)."""
    assert core.create_node_with_http_info(node("n1").obj())[1] == 201
    with pytest.raises(ConflictException) as exc:
        core.create_node(node("n1").obj())
    body = json.loads(exc.value.body)
    assert body["reason"] == "AlreadyExists"
    assert body["message"] == 'nodes "n1" already exists'
    assert body["details"] == {"name": "n1", "kind": "nodes"}


def test_errors_are_status_objects(core) -> None:
    """API concepts "Responses": every error body is a meta/v1 Status with kind, apiVersion,
    status=Failure, message, reason, details and code."""
    with pytest.raises(NotFoundException) as exc:
        core.read_node("missing")
    body = json.loads(exc.value.body)
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'nodes "missing" not found',
        "reason": "NotFound",
        "details": {"name": "missing", "kind": "nodes"},
        "code": 404,
    }


def test_unknown_path_is_status_404(api: Kube) -> None:
    """An unserved path answers a Status NotFound "the server could not find the requested
    resource" (apiserver NotFoundHandler)."""
    with pytest.raises(urllib.error.HTTPError) as exc:
        api.urlopen(api.url + "/api/v1/nodes/x/scale")
    assert exc.value.code == 404
    body = json.loads(exc.value.read())
    assert body["message"] == "the server could not find the requested resource"


def test_global_resource_version_increases(api: Kube, core) -> None:
    """API concepts "Resource versions": one cluster-wide counter; every write gets a larger
    resourceVersion than any earlier write, across objects and kinds."""
    a = core.create_node(node("a").obj()).metadata.resource_version
    b = core.create_node(node("b").obj()).metadata.resource_version
    p = core.patch_node("a", {"metadata": {"labels": {"x": "1"}}}).metadata.resource_version
    ev = core.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    rvs = [int(a), int(b), int(p), int(ev.metadata.resource_version)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 4
    lst = core.list_node()
    assert int(lst.metadata.resource_version) >= rvs[-1]


def test_noop_patch_does_not_bump_resource_version(core) -> None:
    """etcd3 store GuaranteedUpdate: an update that leaves the object byte-identical is not
    written, so resourceVersion stays and no watch event is sent."""
    core.create_node(node("n1").labels({"a": "1"}).obj())
    rv1 = core.patch_node("n1", {"metadata": {"labels": {"a": "2"}}}).metadata.resource_version
    rv2 = core.patch_node("n1", {"metadata": {"labels": {"a": "2"}}}).metadata.resource_version
    assert rv1 == rv2


def test_create_sets_uid_timestamp_and_resource_version(core) -> None:
    """ObjectMeta: uid, creationTimestamp and resourceVersion are set by the server."""
    n = core.create_node(node("n1").obj())
    assert n.metadata.uid and n.metadata.creation_timestamp and n.metadata.resource_version


def test_put_with_stale_resource_version_is_409_conflict(core) -> None:
    """API concepts "Resource versions" / optimistic concurrency: an update whose
    metadata.resourceVersion is not current fails with 409 Conflict and the canonical message."""
    n = core.create_node(node("x").obj())
    core.patch_node("x", {"metadata": {"labels": {"bump": "1"}}})
    n.metadata.labels = {"mine": "1"}
    with pytest.raises(ConflictException) as exc:
        core.replace_node("x", n)
    body = json.loads(exc.value.body)
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on nodes "x": the object has been modified; please '
        "apply your changes to the latest version and try again"
    )


def test_put_with_current_resource_version_succeeds(core) -> None:
    """A PUT carrying the current resourceVersion replaces the object."""
    n = core.create_node(node("x").obj())
    n.metadata.labels = {"mine": "1"}
    out = core.replace_node("x", n)
    assert out.metadata.labels == {"mine": "1"}
    assert int(out.metadata.resource_version) > int(n.metadata.resource_version)


def test_patch_carrying_stale_resource_version_is_409(core) -> None:
    """Patches are optimistic-concurrency checked when they set metadata.resourceVersion
    (API concepts "Patch" + apiserver patcher precondition)."""
    n = core.create_node(node("x").obj())
    core.patch_node("x", {"metadata": {"labels": {"bump": "1"}}})
    stale = {"metadata": {"resourceVersion": n.metadata.resource_version, "labels": {"a": "b"}}}
    with pytest.raises(ConflictException):
        core.patch_node("x", stale, _content_type="application/merge-patch+json")


@pytest.mark.parametrize(
    ("labels", "field_value", "message"),
    [
        (
            {"ok": "bad value"},
            "bad value",
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        ({"ok": "x" * 64}, "x" * 64, "must be no more than 63 bytes"),
        (
            {"Bad_Prefix/k": "v"},
            "Bad_Prefix/k",
            "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            {"example.com/" + "k" * 64: "v"},
            "example.com/" + "k" * 64,
            "name part must be no more than 63 bytes",
        ),
        ({"a/b/c": "v"}, "a/b/c", "a valid label key must consist of"),
    ],
)
def test_invalid_labels_are_422_with_causes(core, labels, field_value, message) -> None:
    """Labels and Selectors, "Syntax and character set" (apimachinery IsQualifiedName /
    IsValidLabelValue): an invalid key or value is 422 Invalid with a FieldValueInvalid cause
    on metadata.labels and the server's wording."""
    core.create_node(node("n1").obj())
    with pytest.raises(UnprocessableEntityException) as exc:
        core.patch_node("n1", {"metadata": {"labels": labels}})
    body = json.loads(exc.value.body)
    assert body["reason"] == "Invalid" and body["code"] == 422
    assert body["details"]["kind"] == "Node" and body["details"]["name"] == "n1"
    cause = body["details"]["causes"][0]
    assert cause["reason"] == "FieldValueInvalid"
    assert cause["field"] == "metadata.labels"
    assert cause["message"].startswith(f'Invalid value: "{field_value}": {message}')
    assert body["message"].startswith('Node "n1" is invalid: metadata.labels: Invalid value: ')


def test_valid_label_edge_cases_are_accepted(core) -> None:
    """Empty values, 63-character names and values, and a 253-character prefix are valid."""
    prefix = ".".join(["a" * 63] * 4)[:253].rstrip(".")
    labels = {"empty": "", "n" * 63: "v" * 63, prefix + "/k": "A-b_c.1"}
    core.create_node(node("n1").labels(labels).obj())
    assert core.read_node("n1").metadata.labels == labels


def test_invalid_node_name_is_422(core) -> None:
    """Nodes are named by DNS-1123 subdomains (ValidateNodeName = NameIsDNSSubdomain)."""
    with pytest.raises(UnprocessableEntityException) as exc:
        core.create_node(node("Bad_Name").obj())
    cause = json.loads(exc.value.body)["details"]["causes"][0]
    assert cause["field"] == "metadata.name"


def test_annotation_size_limit(core) -> None:
    """ValidateAnnotations: total size of keys and values must be <= 256 KiB."""
    core.create_node(node("n1").obj())
    with pytest.raises(UnprocessableEntityException) as exc:
        core.patch_node("n1", {"metadata": {"annotations": {"big": "x" * (256 * 1024)}}})
    cause = json.loads(exc.value.body)["details"]["causes"][0]
    assert cause["reason"] == "FieldValueTooLong" and cause["field"] == "metadata.annotations"


def test_delete_node_returns_success_status(core) -> None:
    """Registry Store.Delete without ReturnDeletedObject (nodes) answers a Success Status."""
    core.create_node(node("n1").obj())
    st = core.delete_node("n1")  # client 37 hands this back as a plain dict
    assert st["status"] == "Success" and st["details"]["name"] == "n1"
    with pytest.raises(NotFoundException):
        core.read_node("n1")


def test_namespaces_default_and_kube_system_exist(core) -> None:
    """A new cluster has the default and kube-system namespaces."""
    assert core.read_namespace("default").metadata.name == "default"
    assert core.read_namespace("kube-system").status.phase == "Active"
    with pytest.raises(NotFoundException):
        core.read_namespace("nope")


def test_create_in_missing_namespace_is_404(core) -> None:
    """NamespaceLifecycle admission: creating in a namespace that does not exist is 404."""
    with pytest.raises(NotFoundException) as exc:
        core.create_namespaced_config_map("nope", {"metadata": {"name": "c"}})
    assert json.loads(exc.value.body)["message"] == 'namespaces "nope" not found'


def test_configmap_crud(core) -> None:
    """ConfigMaps: create (201), get, replace, delete — for the Volcano scheduler config."""
    cm = core.create_namespaced_config_map(
        "kube-system", {"metadata": {"name": "volcano"}, "data": {"conf": "a"}}
    )
    cm.data = {"conf": "b"}
    core.replace_namespaced_config_map("volcano", "kube-system", cm)
    assert core.read_namespaced_config_map("volcano", "kube-system").data == {"conf": "b"}
    core.delete_namespaced_config_map("volcano", "kube-system")
    # (A real kube-system holds the API server's own ConfigMaps beside it.)
    left = core.list_namespaced_config_map("kube-system").items
    assert "volcano" not in [c.metadata.name for c in left]


def test_pods_create_get_delete(core) -> None:
    """Pods are namespaced; DELETE returns the pod (the pod registry returns the object)."""
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    created = core.create_namespaced_pod("default", pod)
    assert created.status.phase == "Pending"
    assert core.read_namespaced_pod("p", "default").metadata.namespace == "default"
    deleted = core.delete_namespaced_pod("p", "default")
    assert deleted.metadata.name == "p"


def test_core_events_create(api: Kube, core) -> None:
    """core/v1 Events: POST answers 201; listable by namespace."""
    ev = {
        "metadata": {"name": "n1.1"},
        "involvedObject": {"kind": "Node", "name": "n1"},
        "reason": "TopologyChanged",
        "message": "m",
        "type": "Normal",
    }
    assert core.create_namespaced_event_with_http_info("default", ev)[1] == 201
    assert [e.reason for e in core.list_namespaced_event("default").items] == ["TopologyChanged"]


def test_events_k8s_io_v1_create(api: Kube) -> None:
    """events.k8s.io/v1 Events: POST answers 201 with the Event; eventTime is a MicroTime
    (RFC 3339 with six fractional digits). Sent as raw JSON: client 37's EventsV1Api writes
    eventTime as ``2025-01-01T00:00:00+00:00``, which the API server refuses (400)."""
    ev = {
        "metadata": {"name": "n1.2"},
        "eventTime": "2025-01-01T00:00:00.000000Z",
        "reportingController": "topology-labeler",
        "reportingInstance": "x",
        "action": "Label",
        "reason": "TopologyChanged",
        "regarding": {"kind": "Node", "name": "n1"},
        "type": "Normal",
    }
    req = urllib.request.Request(
        api.url + "/apis/events.k8s.io/v1/namespaces/default/events",
        data=json.dumps(ev).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with api.urlopen(req) as answer:
        assert answer.status == 201
        out = json.loads(answer.read())
    assert (out["kind"], out["reason"]) == ("Event", "TopologyChanged")
    assert out["eventTime"] == "2025-01-01T00:00:00.000000Z"
