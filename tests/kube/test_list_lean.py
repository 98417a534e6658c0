"""The label writers' LIST asks for metadata only; the tools that need status do not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from labeler.core.node import OWNED_ANNOTATION
from labeler.kube.nodes import METADATA_LIST, list_node_labels, list_nodes
from tests.fakekube import FakeKube

G = "huawei.com/topotree.groupid"


@pytest.fixture
def fake() -> Iterator[FakeKube]:
    with FakeKube() as f:
        f.seed_nodes(
            7,
            labels_fn=lambda i: {G: str(i // 2), "rack": str(i % 3)},
            annotations={OWNED_ANNOTATION: G, "node.alpha.kubernetes.io/ttl": "0"},
            allocatable={"nvidia.com/gpu": "8"},
        )
        yield f


def accepts(fake: FakeKube) -> list[str | None]:
    return [r.accept for r in fake.requests(verb="list")]


@pytest.mark.parametrize("selector", [None, "rack in (0,2)"])
def test_metadata_list_reads_what_a_full_list_reads(fake: FakeKube, selector: str | None) -> None:
    fake.clear_journal()
    lean = list_node_labels(fake.cluster(), label_selector=selector, page_size=2)
    assert accepts(fake) == [METADATA_LIST] * len(accepts(fake)) and len(accepts(fake)) >= 3
    assert all(r.status == 200 for r in fake.requests(verb="list"))

    fake.partial_metadata = False  # a server that answers full Nodes to the same header
    full = list_node_labels(fake.cluster(), label_selector=selector, page_size=2)
    assert lean == full
    assert len(lean) == (7 if selector is None else 5)
    assert lean[0].labels[G] == "0" and lean[0].resource_version
    assert lean[0].annotations == {OWNED_ANNOTATION: G}  # only the project's own


def test_406_falls_back_to_the_full_list(fake: FakeKube) -> None:
    fake.faults.add("GET", "/api/v1/nodes", status=406)
    fake.clear_journal()
    nodes = list_node_labels(fake.cluster(), page_size=5)
    assert [n.name for n in nodes] == [f"node-{i:05d}" for i in range(7)]
    records = fake.requests(verb="list")
    assert [(r.accept, r.status) for r in records] == [
        (METADATA_LIST, 406),
        ("application/json", 200),
        ("application/json", 200),
    ]


def test_list_nodes_keeps_full_objects(fake: FakeKube) -> None:
    fake.clear_journal()
    nodes, version = list_nodes(fake.cluster())
    assert accepts(fake) == ["application/json"]
    assert version and nodes[0].allocatable["nvidia.com/gpu"] == "8" and nodes[0].ready
