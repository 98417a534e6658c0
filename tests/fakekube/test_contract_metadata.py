"""Contract: metadata-only answers (Accept ``as=PartialObjectMetadata[List]``), over HTTP.

The API server's rules (k8s.io/apiserver endpoints/handlers: negotiation and
transformResponseObject): the Accept's media ranges are tried in order, one it cannot
serve or a conversion it does not offer is skipped, and with none left it answers its
default, plain JSON; a LIST converted to PartialObjectMetadataList keeps the list's
resourceVersion, continue token and remainingItemCount, each item being kind
PartialObjectMetadata with only its metadata; the Content-Type stays application/json.
Asking a LIST for PartialObjectMetadata, or one object for PartialObjectMetadataList, is
406 NotAcceptable even when a fallback follows (the conversion fails after negotiation).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.fakekube import FakeKube
from tests.realkube.adapter import Kube

META = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
# What the labeler sends for a LIST of metadata: JSON, then plain JSON. (client-go's metadata
# client puts protobuf first, which a real server answers in protobuf; the fake serves no
# protobuf and skips that range.)
JSON_LIST = f"application/json;{META},application/json"
ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


def get(kube: Kube, path: str, accept: str | None) -> tuple[int, str, dict[str, Any]]:
    req = urllib.request.Request(kube.url + path, headers={"Accept": accept} if accept else {})
    try:
        with kube.urlopen(req) as resp:
            return resp.status, resp.headers["Content-Type"], json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], json.loads(err.read())


def add_nodes(kube: Kube) -> Kube:
    for i in range(5):
        kube.add_node(f"n{i}", labels={"rack": str(i % 2)}, annotations={"a": str(i)})
    return kube


@pytest.fixture
def fake(api: Kube) -> Kube:
    return add_nodes(api)


def test_list_as_partial_object_metadata_list(fake: Kube) -> None:
    status, ctype, full = get(fake, "/api/v1/nodes", "application/json")
    assert (status, ctype, full["kind"]) == (200, "application/json", "NodeList")
    status, ctype, doc = get(fake, "/api/v1/nodes", JSON_LIST)
    assert (status, ctype) == (200, "application/json")
    assert (doc["kind"], doc["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    # The list's resourceVersion is kept; a real server's may move on between two reads
    # (any write in the cluster, a lease renewal, bumps it).
    assert int(doc["metadata"]["resourceVersion"]) >= int(full["metadata"]["resourceVersion"])
    assert [i.keys() for i in doc["items"]] == [{"kind", "apiVersion", "metadata"}] * 5
    assert {(i["kind"], i["apiVersion"]) for i in doc["items"]} == {
        ("PartialObjectMetadata", "meta.k8s.io/v1")
    }
    assert [i["metadata"] for i in doc["items"]] == [n["metadata"] for n in full["items"]]


def same_page(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same list metadata but for the resourceVersion the page was read at (which the
    continue token carries)."""

    def shape(meta: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in meta.items() if k not in ("resourceVersion", "continue")}

    return shape(a) == shape(b) and ("continue" in a) == ("continue" in b)


def test_pagination_and_selectors_are_those_of_the_full_list(fake: Kube) -> None:
    accept = f"application/json;{META},application/json"
    for query in ("limit=2", "limit=2&labelSelector=rack%3D0"):
        path = f"/api/v1/nodes?{query}"
        pages, full = [get(fake, path, accept)[2]], [get(fake, path, None)[2]]
        while "continue" in full[-1]["metadata"]:
            token = full[-1]["metadata"]["continue"]
            assert same_page(pages[-1]["metadata"], full[-1]["metadata"])
            pages.append(get(fake, f"{path}&continue={token}", accept)[2])
            full.append(get(fake, f"{path}&continue={token}", None)[2])
        assert len(pages) == len(full)
        assert all(
            same_page(p["metadata"], f["metadata"]) for p, f in zip(pages, full, strict=True)
        )
        assert [p["kind"] for p in pages] == ["PartialObjectMetadataList"] * len(full)
        names = [[i["metadata"]["name"] for i in p["items"]] for p in pages]
        assert names == [[i["metadata"]["name"] for i in f["items"]] for f in full]
    assert len(names) == 2 and names[0] == ["n0", "n2"]  # the selector's two pages
    assert len(pages[0]["items"]) == 2 and len(full) == 2


def test_a_server_without_the_metadata_form_answers_plain_json(fake_kube: FakeKube) -> None:
    """Fake only: the real server (1.37) always offers the metadata form."""
    fake = add_nodes(fake_kube)
    fake.partial_metadata = False  # as a server before 1.15
    for accept in (JSON_LIST, f"application/json;{META}"):
        status, ctype, doc = get(fake, "/api/v1/nodes", accept)
        assert (status, ctype, doc["kind"]) == (200, "application/json", "NodeList")
        assert "status" in doc["items"][0]


def test_one_object_as_partial_object_metadata(fake: Kube) -> None:
    status, ctype, doc = get(fake, "/api/v1/nodes/n1", f"{ONE},application/json")
    assert (status, ctype) == (200, "application/json")
    assert doc == {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": fake.get_node("n1")["metadata"],
    }


def test_a_patch_answers_in_the_form_asked_for(fake: Kube) -> None:
    """The patch handler negotiates its answer like a GET: the change is made either way,
    and the echo is the metadata only when that is asked for."""
    for accept, label in ((f"{ONE},application/json", "x"), ("application/json", "y")):
        req = urllib.request.Request(
            fake.url + "/api/v1/nodes/n1",
            data=json.dumps({"metadata": {"labels": {"k": label}}}).encode(),
            method="PATCH",
            headers={"Accept": accept, "Content-Type": "application/merge-patch+json"},
        )
        with fake.urlopen(req) as resp:
            doc = json.loads(resp.read())
        assert fake.get_node("n1")["metadata"]["labels"]["k"] == label
        assert doc["metadata"]["labels"]["k"] == label
        if label == "x":
            assert (doc["kind"], doc.keys()) == (
                "PartialObjectMetadata",
                {"kind", "apiVersion", "metadata"},
            )
        else:
            assert doc["kind"] == "Node" and "status" in doc


@pytest.mark.parametrize(
    ("path", "accept"),
    [
        ("/api/v1/nodes/n1", f"application/json;{META},application/json"),
        ("/api/v1/nodes", f"{ONE},application/json"),
    ],
)
def test_a_kind_that_does_not_fit_is_406(fake: Kube, path: str, accept: str) -> None:
    status, _, body = get(fake, path, accept)
    assert (status, body["kind"], body["reason"], body["code"]) == (
        406,
        "Status",
        "NotAcceptable",
        406,
    )
