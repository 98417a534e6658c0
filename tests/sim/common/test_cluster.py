"""Nodes, pods, taints and snapshot files as the simulator reads them."""

from __future__ import annotations

from pathlib import Path

import pytest

from labeler.base.errors import InputError
from labeler.core.node import Taint
from labeler.sim.common.cluster import (
    Toleration,
    first_untolerated,
    pod_requests,
    snapshot_from_objects,
)
from tests.builders import node, pod
from tests.sim.kueue.objects import as_list


def test_pod_requests_follow_kubernetes_rules() -> None:
    p = {
        "spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                {"resources": {"requests": {"cpu": "500m"}}},
            ],
            "initContainers": [
                {"resources": {"requests": {"cpu": "4"}}},  # runs alone: pod needs 4
                {"restartPolicy": "Always", "resources": {"requests": {"memory": "1Gi"}}},
                {"resources": {"requests": {"memory": "3Gi"}}},  # + the sidecar: 4Gi
            ],
            "overhead": {"cpu": "100m"},
        }
    }
    assert pod_requests(p) == {"cpu": 4100, "memory": 4 * 2**30}


def test_pod_level_requests_win() -> None:
    p = {
        "spec": {
            "resources": {"requests": {"cpu": "8"}},
            "containers": [{"resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "2"}}}],
        }
    }
    assert pod_requests(p) == {"cpu": 8000, "nvidia.com/gpu": 2}


def test_bad_quantity_names_the_pod() -> None:
    items = [
        node("n1").hostname().allocatable(cpu="4", pods="110").obj(),
        pod("p1").on("n1").requests({"cpu": "lots"}).obj(),
    ]
    with pytest.raises(InputError, match=r"snap: pod default/p1: containers\[0\].*cpu"):
        snapshot_from_objects(as_list(items), "snap")


def test_usage_counts_running_pods_and_a_pod_slot_each() -> None:
    items = [
        node("n1").hostname().allocatable(cpu="4", pods="110").obj(),
        pod("a").on("n1").requests({"cpu": "1"}).obj(),
        pod("b").on("n1").phase("Pending").requests({"cpu": "1"}).obj(),
        pod("done").on("n1").phase("Succeeded").requests({"cpu": "1"}).obj(),
        pod("failed").on("n1").phase("Failed").requests({"cpu": "1"}).obj(),
    ]
    snap = snapshot_from_objects(as_list(items), "snap")
    assert snap.nodes[0].used == {"cpu": 2000, "pods": 2}


def test_taints_and_tolerations() -> None:
    taints = (
        Taint("soft", "", "PreferNoSchedule"),
        Taint("gpu", "bad", "NoSchedule"),
        Taint("drain", "", "NoExecute"),
    )
    assert str(first_untolerated(taints, ())) == "gpu=bad:NoSchedule"
    tol = (Toleration.parse("gpu=bad:NoSchedule"),)
    assert str(first_untolerated(taints, tol)) == "drain:NoExecute"
    assert first_untolerated(taints, (*tol, Toleration.parse("drain"))) is None
    assert first_untolerated(taints, (Toleration.parse("*"),)) is None
    assert first_untolerated(taints, (Toleration.parse("gpu=good"),)) is not None


def test_toleration_syntax_errors() -> None:
    with pytest.raises(InputError, match="effect"):
        Toleration.parse("k=v:Sometimes")
    with pytest.raises(InputError, match="KEY"):
        Toleration.parse("=v")


def test_snapshot_reports_every_problem_with_its_item() -> None:
    doc = as_list(
        [
            node("n1").hostname().allocatable(cpu="4", pods="110").obj(),
            {"kind": "Node", "metadata": {}},
            "junk",
            node("n1").hostname().allocatable(cpu="4", pods="110").obj(),
        ]
    )
    with pytest.raises(InputError) as e:
        snapshot_from_objects(doc, "f.yaml")
    text = str(e.value)
    assert "f.yaml: items[1]: a Node needs metadata.name" in text
    assert "items[2]: expected an object" in text
    assert "items[3]: node n1 appears twice (first at f.yaml: items[0])" in text


def test_snapshot_names_malformed_node_fields() -> None:
    bad_labels = {"kind": "Node", "metadata": {"name": "a", "labels": ["x"]}}
    bad_alloc = {"kind": "Node", "metadata": {"name": "b"}, "status": {"allocatable": "8"}}
    bad_qty = node("c").hostname().allocatable({"nvidia.com/gpu": "eight"}).obj()
    with pytest.raises(InputError) as e:
        snapshot_from_objects(as_list([bad_labels, bad_alloc, bad_qty]), "f.yaml")
    text = str(e.value)
    assert "f.yaml: items[0] (a): metadata.labels must be a mapping" in text
    assert "f.yaml: items[1] (b): allocatable: expected a mapping" in text
    assert "f.yaml: items[2] (c): allocatable: nvidia.com/gpu: 'eight'" in text


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"spec": "x"}, "spec must be a mapping"),
        ({"status": [1]}, "status must be a mapping"),
        ({"spec": {"taints": "NoSchedule"}}, "spec.taints must be a list"),
        ({"status": {"conditions": 5}}, "status.conditions must be a list"),
    ],
)
def test_snapshot_names_a_spec_or_status_no_api_server_serves(
    fields: dict[str, object], error: str
) -> None:
    bad = {"kind": "Node", "metadata": {"name": "a"}, **fields}
    with pytest.raises(InputError, match=rf"f\.yaml: items\[0\] \(a\): {error}"):
        snapshot_from_objects(as_list([bad]), "f.yaml")


def test_snapshot_accepts_node_list_and_streams() -> None:
    node_list = {"kind": "NodeList", "items": [{"metadata": {"name": "a"}}]}
    assert [n.name for n in snapshot_from_objects(node_list, "x").nodes] == ["a"]
    stream = [
        as_list([node("a").hostname().allocatable(cpu="4", pods="110").obj()]),
        pod("p").on("a").requests({"cpu": "1"}).obj(),
    ]
    snap = snapshot_from_objects(stream, "x")
    assert snap.pods == 1 and snap.nodes[0].used["cpu"] == 1000


def test_not_a_list_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="kubectl get nodes,pods -A -o yaml"):
        snapshot_from_objects({"hello": 1}, "x")


def test_an_empty_cluster_keeps_daemonset_and_static_pods() -> None:
    ds = pod("ds").on("n1").requests({"cpu": "500m"}).obj()
    ds["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "agent"}]
    static = pod("etcd").on("n1").requests({"cpu": "250m"}).obj()
    static["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    items = [
        node("n1").hostname().allocatable(cpu="4", pods="110").obj(),
        ds,
        static,
        pod("job").on("n1").requests({"cpu": "2"}).obj(),
    ]
    n = snapshot_from_objects(as_list(items), "snap").nodes[0]
    assert n.free() == {"cpu": 4000 - 2750, "pods": 107}
    assert n.free(empty=True) == {"cpu": 4000 - 750, "pods": 108}
