"""Contract: list with label/field selectors and pagination, via the real client."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.realkube.adapter import Kube


@pytest.fixture
def core(api: Kube) -> client.CoreV1Api:
    api.add_node("a", labels={"env": "prod", "tier": "1"}, default_labels=False)
    api.add_node("b", labels={"env": "dev", "tier": "2"}, default_labels=False)
    api.add_node("c", labels={"env": "qa"}, default_labels=False, unschedulable=True)
    api.add_node("d", default_labels=False)
    return client.CoreV1Api(api.api_client())


def names(lst) -> list[str]:
    return [i.metadata.name for i in lst.items]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("env=prod", ["a"]),
        ("env==prod", ["a"]),
        ("env!=prod", ["b", "c", "d"]),  # != also matches nodes without the key
        ("env in (prod, dev)", ["a", "b"]),
        ("env notin (prod,dev)", ["c", "d"]),
        ("env in ()", []),  # an empty set is accepted: in matches nothing
        ("env notin ()", ["a", "b", "c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("env,!tier", ["c"]),
        ("  env = dev ,  tier in (2)  ", ["b"]),
        ("tier>1", ["b"]),
        ("", ["a", "b", "c", "d"]),
    ],
)
def test_label_selector_grammar(core, selector, expected) -> None:
    """Labels and Selectors: equality-based (=, ==, !=) and set-based (in, notin, exists,
    !exists) requirements, comma as AND, whitespace tolerated (apimachinery labels.Parse)."""
    assert names(core.list_node(label_selector=selector)) == expected


@pytest.mark.parametrize("selector", ["env in (", "a b", "=x", "bad key/x!=1", "a=b c"])
def test_invalid_label_selector_is_400(core, selector) -> None:
    """An unparsable labelSelector is 400 BadRequest."""
    with pytest.raises(ApiException) as exc:
        core.list_node(label_selector=selector)
    assert exc.value.status == 400
    assert json.loads(exc.value.body)["reason"] == "BadRequest"


def test_field_selector_on_nodes(core) -> None:
    """Field selectors: nodes support metadata.name (=, ==, !=) and spec.unschedulable."""
    assert names(core.list_node(field_selector="metadata.name=b")) == ["b"]
    assert names(core.list_node(field_selector="metadata.name!=b")) == ["a", "c", "d"]
    assert names(core.list_node(field_selector="spec.unschedulable=true")) == ["c"]
    assert names(core.list_node(field_selector="metadata.name=b,metadata.name!=b")) == []


def test_unsupported_field_label_is_400(core) -> None:
    """Field selectors: an unsupported field is 400 "field label not supported: <f>"."""
    with pytest.raises(ApiException) as exc:
        core.list_node(field_selector="status.phase=Running")
    body = json.loads(exc.value.body)
    assert exc.value.status == 400 and body["message"] == "field label not supported: status.phase"


def test_pod_field_selectors(api: Kube) -> None:
    """Pods support spec.nodeName, status.phase, metadata.name, metadata.namespace, across
    namespaces (/api/v1/pods) and within one."""
    api.add_pod("p1", node_name="a", labels={"job": "j"})
    api.add_pod("p2", node_name="b", labels={"job": "j"}, phase="Pending")
    api.add_pod("p3", namespace="kube-system", node_name="a", labels={"job": "k"})
    core = client.CoreV1Api(api.api_client())
    assert names(core.list_pod_for_all_namespaces(field_selector="spec.nodeName=a")) == [
        "p1",
        "p3",
    ]
    assert names(core.list_namespaced_pod("default", label_selector="job=j")) == ["p1", "p2"]
    assert names(
        core.list_pod_for_all_namespaces(
            field_selector="status.phase=Running,metadata.namespace=default"
        )
    ) == ["p1"]
    assert names(core.list_pod_for_all_namespaces(field_selector="metadata.name=p2")) == ["p2"]


def test_list_items_omit_kind_and_api_version(api: Kube, core) -> None:
    """Typed lists (NodeList) carry kind/apiVersion on the list, not on the items."""
    resp = core.list_node(_preload_content=False)
    data = json.loads(resp.data)
    assert data["kind"] == "NodeList" and data["apiVersion"] == "v1"
    assert "kind" not in data["items"][0] and "apiVersion" not in data["items"][0]
    assert data["metadata"]["resourceVersion"]


def test_pagination_returns_every_item_once(api: Kube) -> None:
    """API concepts "Retrieving large results sets in chunks": limit + opaque continue token;
    every object exactly once; remainingItemCount counts what is left; the last page has no
    continue token."""
    api.seed_nodes(1234)
    core = client.CoreV1Api(api.api_client())
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        lst = core.list_node(limit=100, _continue=token)
        pages += 1
        seen += names(lst)
        if pages == 1:
            assert lst.metadata.remaining_item_count == 1134
        token = lst.metadata._continue
        if not token:
            break
    assert pages == 13 and len(seen) == 1234 and len(set(seen)) == 1234
    assert seen == sorted(seen)


def test_pagination_with_selector(api: Kube) -> None:
    """Chunked lists with a selector fill pages from matching objects only."""
    api.seed_nodes(50, labels_fn=lambda i: {"even": str(i % 2 == 0).lower()})
    core = client.CoreV1Api(api.api_client())
    first = core.list_node(limit=10, label_selector="even=true")
    assert len(first.items) == 10 and first.metadata._continue
    assert first.metadata.remaining_item_count is None  # not computed with selectors
    rest = core.list_node(limit=100, label_selector="even=true", _continue=first.metadata._continue)
    assert len(first.items) + len(rest.items) == 25 and not rest.metadata._continue


def test_invalid_continue_token_is_400(core) -> None:
    """A malformed continue token is 400 BadRequest."""
    with pytest.raises(ApiException) as exc:
        core.list_node(limit=1, _continue="garbage!")
    assert exc.value.status == 400


def test_resource_version_param_accepted(core) -> None:
    """list accepts resourceVersion ("0" = any, or a specific version) and answers."""
    assert len(core.list_node(resource_version="0").items) == 4
