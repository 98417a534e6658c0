"""Nodes, pods, PodGroups and CompositePodGroups as plain API objects, for kube-scheduler's
topology-aware scheduling scenarios (each node: 2 CPUs, labels rack and zone)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from labeler.sim.common.cluster import snapshot_from_objects
from labeler.sim.kubesched.objects import collect
from labeler.sim.kubesched.schedule import Advice, advise
from tests.builders import node, pod

Obj = dict[str, Any]


def tainted(obj: Obj, key: str) -> Obj:
    """The node with a ``key:NoSchedule`` taint (no value)."""
    obj["spec"] = {"taints": [{"key": key, "effect": "NoSchedule"}]}
    return obj


def prefers(obj: Obj, node_name: str) -> Obj:
    """The pod with a preferred node affinity for one node (weight 100, by metadata.name)."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    obj["spec"]["affinity"] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": term}]
        }
    }
    return obj


def _constraints(key: str | None) -> Obj:
    return {"schedulingConstraints": {"topology": [{"key": key}]}} if key else {}


def gang(name: str, key: str | None, min_count: int, parent: str | None = None) -> Obj:
    spec: Obj = {"schedulingPolicy": {"gang": {"minCount": min_count}}, **_constraints(key)}
    if parent:
        spec["parentCompositePodGroupName"] = parent
        spec["workloadRef"] = {"workloadName": "workload", "templateName": name}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }


def basic(name: str, key: str | None, parent: str | None = None) -> Obj:
    obj = gang(name, key, 1, parent)
    obj["spec"]["schedulingPolicy"] = {"basic": {}}
    return obj


def composite(name: str, key: str | None, min_groups: int | None, parent: str | None = None) -> Obj:
    policy: Obj = {"gang": {"minGroupCount": min_groups}} if min_groups else {"basic": {}}
    spec: Obj = {
        "workloadRef": {"workloadName": "workload", "templateName": "cpg"},
        "schedulingPolicy": policy,
        **_constraints(key),
    }
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }


def run(cluster: Iterable[Obj], asked: Iterable[Obj]) -> Advice:
    """advise over ``cluster`` (nodes and bound pods) for the file's objects ``asked``."""
    cluster = list(cluster)
    snap = snapshot_from_objects({"kind": "List", "items": cluster}, "snapshot")
    objs = collect(
        [(o, f"file: items[{i}]") for i, o in enumerate(asked)],
        [(o, f"snapshot: items[{i}]") for i, o in enumerate(cluster)],
    )
    return advise(objs, snap.nodes, "file")


def nodes_of(advice: Advice) -> dict[str, str | None]:
    return {p.pod.name: p.node for p in advice.pods}


def bound_as(advice: Advice, cpu: str = "1") -> list[Obj]:
    """The pods ``advice`` binds, as running pods: the cluster of the next decision."""
    return [
        pod(p.pod.name)
        .namespace("ns")
        .requests(cpu=cpu)
        .scheduling_group(p.pod.group)
        .on(p.node)
        .obj()
        for p in advice.pods
        if p.node
    ]


def one_domain(advice: Advice, pods: Sequence[str], cluster: Iterable[Obj], key: str) -> bool:
    """The named pods are all bound, all in one domain of ``key``."""
    labels = {
        o["metadata"]["name"]: o["metadata"]["labels"] for o in cluster if o["kind"] == "Node"
    }
    got = nodes_of(advice)
    if any(got[p] is None for p in pods):
        return False
    return len({labels[str(got[p])].get(key) for p in pods}) == 1


def within(advice: Advice, pods: Sequence[str], nodes: set[str]) -> bool:
    """The named pods are all bound on these nodes."""
    got = nodes_of(advice)
    return all(got[p] in nodes for p in pods)


def rack_node(name: str, labels: dict[str, str]) -> Obj:
    """A node of these scenarios: 2 CPUs, 110 pod slots, its hostname label and ``labels``."""
    return node(name).hostname().labels(labels).allocatable(cpu="2", pods="110").obj()


def member(name: str, group: str, cpu: str) -> Obj:
    """A pending pod of PodGroup ``group`` in namespace ``ns`` asking for ``cpu``."""
    return pod(name).namespace("ns").requests(cpu=cpu).scheduling_group(group).obj()
