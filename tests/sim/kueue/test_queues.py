"""LocalQueue → ClusterQueue → flavor order, and the flavors Kueue's flavor assigner skips
(``checkFlavorForPodSets`` / ``checkPodSetAndFlavorMatchForTAS`` in
``pkg/scheduler/flavorassigner``), in Kueue's words."""

from __future__ import annotations

from typing import Any

import pytest

from labeler.base.errors import InputError
from labeler.sim.kueue.queues import choose_flavors, queue_of
from labeler.sim.kueue.workload import workloads_from_object
from tests.sim.kueue.objects import flavor

RACK = "cloud.com/rack"
HOST = "kubernetes.io/hostname"


def objects(*flavors: dict[str, Any], order: list[list[str]] | None = None) -> list[dict[str, Any]]:
    groups = order or [[f["metadata"]["name"] for f in flavors]]
    return [
        {
            "kind": "Topology",
            "metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]},
        },
        {
            "kind": "Topology",
            "metadata": {"name": "flat"},
            "spec": {"levels": [{"nodeLabel": HOST}]},
        },
        *flavors,
        {
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": "ns"},
            "spec": {"clusterQueue": "cq"},
        },
        {
            "kind": "LocalQueue",
            "metadata": {"name": "default", "namespace": "other"},
            "spec": {"clusterQueue": "cq"},
        },
        {
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "resourceGroups": [
                    {"coveredResources": ["cpu"], "flavors": [{"name": n} for n in names]}
                    for names in groups
                ]
            },
        },
    ]


def workload(ns: str = "ns", queue: str | None = "q", **spec: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    pod.update(spec)
    obj: dict[str, Any] = {
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": ns},
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": pod},
                    "topologyRequest": {"required": RACK},
                }
            ]
        },
    }
    if queue:
        obj["spec"]["queueName"] = queue
    return obj


def choose(objs: list[dict[str, Any]], wl: dict[str, Any]) -> Any:
    podsets = workloads_from_object(wl, "test")[0].podsets
    return choose_flavors(objs, wl, podsets, "snap")


def test_the_cluster_queues_order_and_kueues_reasons_for_skipping() -> None:
    tainted = flavor(
        "tainted", nodeTaints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}]
    )
    choice = choose(
        objects(flavor("plain", None), flavor("flat", "flat"), tainted, flavor("a"), flavor("b")),
        workload(),
    )
    assert (choice.local_queue, choice.cluster_queue) == ("ns/q", "cq")
    assert [f.name for f in choice.candidates] == ["a", "b"]
    assert choice.skipped == (
        ("plain", 'Flavor "plain" does not support TopologyAwareScheduling'),
        ("flat", 'Flavor "flat" does not contain the requested level'),
        ("tainted", "untolerated taint spot=true:NoSchedule in flavor tainted"),
    )


def test_a_node_selector_on_the_flavors_own_label_keys_decides() -> None:
    choice = choose(
        objects(flavor("a"), flavor("b")), workload(nodeSelector={"pool": "b", "zone": "z"})
    )
    assert [f.name for f in choice.candidates] == ["b"]
    assert choice.skipped == (("a", "flavor a doesn't match node affinity"),)


def test_affinity_terms_on_other_keys_match_every_flavor() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["b"]}]}
                ]
            }
        }
    }
    assert [
        f.name
        for f in choose(objects(flavor("a"), flavor("b")), workload(affinity=affinity)).candidates
    ] == ["b"]
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ].append({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z"]}]})
    # a term with no expression left on the flavor's keys: the affinity no longer decides
    assert [
        f.name
        for f in choose(objects(flavor("a"), flavor("b")), workload(affinity=affinity)).candidates
    ] == ["a", "b"]


def test_the_namespaces_default_queue_and_no_queue_at_all() -> None:
    assert (
        choose(objects(flavor("a")), workload(ns="other", queue=None)).local_queue
        == "other/default"
    )
    assert choose(objects(flavor("a")), workload(queue=None)) is None
    assert choose([flavor("a")], workload()) is None  # no LocalQueue in the snapshot
    job = {"kind": "Job", "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}}}
    assert queue_of(job) == "q"


def test_missing_queues_are_errors_and_no_usable_flavor_is_kueues_pending_message() -> None:
    with pytest.raises(InputError, match="no LocalQueue ns/nope"):
        choose(objects(flavor("a")), workload(queue="nope"))
    objs = objects(flavor("a"))
    objs = [o for o in objs if o["kind"] != "ClusterQueue"]
    with pytest.raises(InputError, match="points to ClusterQueue 'cq', which is not in"):
        choose(objs, workload())
    none = choose(objects(flavor("plain", None)), workload())
    assert none is not None and none.candidates == ()
    assert none.message == (
        'couldn\'t assign flavors to pod set main: Flavor "plain" does not support '
        "TopologyAwareScheduling"
    )
