"""Seeded random scenarios for kube-scheduler's pod-group scheduling, written as the files a
user gives ``advise``: ``snapshot.yaml`` (the cluster: nodes, the pods already running,
the PodGroups those pods belong to) and ``podgroups.yaml`` (``-f``: one PodGroup or one
CompositePodGroup hierarchy and its pending pods).

What shows up: one to three topology levels whose domain names share prefixes (``rack-1``,
``rack-10``, ``rack-1a``), nodes missing a level's label; taints and tolerations,
nodeSelectors and required node affinity; not-ready nodes (the ``Ready=False`` condition
and the ``node.kubernetes.io/not-ready`` taint the node lifecycle controller sets) and
cordoned ones (``spec.unschedulable`` with its taint); extended resources; pods of other
workloads running; gang and basic PodGroups with and without a topology constraint,
CompositePodGroups over them, groups some of whose pods already run, and gangs short of
their minCount.

Every scenario has its own namespace and node names (``s<seed>-<i>``), so that one control
plane runs a whole batch without one scenario seeing another's objects.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Obj = dict[str, Any]

PREFIX = "topology.example.com/"
LEVELS = ("zone", "block", "rack")
GPU = "example.com/gpu"
DEDICATED = "dedicated"
POOL = "example.com/pool"


@dataclass
class Scenario:
    name: str
    namespace: str
    nodes: list[Obj] = field(default_factory=list)
    running: list[Obj] = field(default_factory=list)
    """Pods already bound (other workloads' and the groups' own)."""
    groups: list[Obj] = field(default_factory=list)
    """The file's groups, children before their parents (the order they are created in)."""
    pending: list[Obj] = field(default_factory=list)

    @property
    def snapshot(self) -> Obj:
        """What ``kubectl get nodes,pods -A -o yaml`` would give."""
        return {"apiVersion": "v1", "kind": "List", "items": self.nodes + self.running}

    @property
    def file(self) -> Obj:
        return {"apiVersion": "v1", "kind": "List", "items": self.groups + self.pending}

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "snapshot.yaml").write_text(yaml.safe_dump(self.snapshot, sort_keys=False))
        (folder / "podgroups.yaml").write_text(yaml.safe_dump(self.file, sort_keys=False))
        return folder


def _values(rng: random.Random, level: str, n: int) -> list[str]:
    """``n`` domain names of one level, some sharing a prefix with another."""
    pool = [f"{level}-1", f"{level}-10", f"{level}-1a", f"{level}-2", f"{level}-11", f"{level}-3"]
    rng.shuffle(pool)
    return sorted(pool[:n])


def _node(rng: random.Random, sc: Scenario, i: int, labels: dict[str, str]) -> Obj:
    name = f"{sc.name}-n{i:02d}"
    cpu = rng.choice(["2", "4", "4", "8"])
    alloc = {"cpu": cpu, "memory": rng.choice(["8Gi", "16Gi"]), "pods": "110"}
    if rng.random() < 0.1:
        alloc["pods"] = str(rng.randint(1, 3))
    if rng.random() < 0.3:
        alloc[GPU] = rng.choice(["4", "8"])
    taints: list[Obj] = []
    if rng.random() < 0.12:
        taints.append({"key": DEDICATED, "value": "infra", "effect": "NoSchedule"})
    ready = True
    spec: Obj = {}
    roll = rng.random()
    if roll < 0.06:
        ready = False  # as the node lifecycle controller leaves a node that stopped reporting
        taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
    elif roll < 0.12:
        spec["unschedulable"] = True
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    if rng.random() < 0.2:
        labels[POOL] = rng.choice(["a", "b"])
    if taints:
        spec["taints"] = taints
    condition = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "NodeStatusUnknown",
        "message": "ready" if ready else "Kubelet stopped posting node status.",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": spec,
        "status": {"capacity": dict(alloc), "allocatable": alloc, "conditions": [condition]},
    }


def _nodes(rng: random.Random, sc: Scenario) -> list[str]:
    """The nodes; returns the topology keys in use, widest first."""
    depth = rng.randint(1, 3)
    keys = [PREFIX + lvl for lvl in LEVELS[3 - depth :]]
    count = rng.randint(3, 14)
    # a tree: each level's domains are split among the level above's
    tops = _values(rng, LEVELS[3 - depth], rng.randint(1, 3))
    for i in range(count):
        labels: dict[str, str] = {}
        path = rng.choice(tops)
        labels[keys[0]] = path
        for key in keys[1:]:
            lvl = key.removeprefix(PREFIX)
            child = rng.choice(_values(random.Random(f"{path}"), lvl, 3)[:2])
            path = f"{path}.{child}" if rng.random() < 0.3 else child
            labels[key] = path
        if rng.random() < 0.08:
            labels.pop(rng.choice(keys))  # a node some level does not see
        sc.nodes.append(_node(rng, sc, i, labels))
    return keys


def _pod(
    rng: random.Random, sc: Scenario, name: str, group: str | None, shape: Obj, node: str | None
) -> Obj:
    spec: Obj = {
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause",
                "resources": copy.deepcopy(shape["res"]),
            }
        ]
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    for k in ("tolerations", "nodeSelector", "affinity"):
        if shape.get(k):
            spec[k] = copy.deepcopy(shape[k])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": sc.namespace},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def _shape(rng: random.Random, keys: list[str], sc: Scenario) -> Obj:
    """Requests, tolerations and node constraints shared by a group's pods."""
    requests: Obj = {"cpu": rng.choice(["500m", "1", "1", "2"])}
    if rng.random() < 0.5:
        requests["memory"] = rng.choice(["1Gi", "2Gi", "4Gi"])
    if rng.random() < 0.2:
        requests[GPU] = rng.choice(["1", "2", "4"])
    res: Obj = {"requests": requests}
    if GPU in requests:
        res["limits"] = {GPU: requests[GPU]}
    shape: Obj = {"res": res}
    if rng.random() < 0.3:
        shape["tolerations"] = [
            {"key": DEDICATED, "operator": "Equal", "value": "infra", "effect": "NoSchedule"}
        ]
    if rng.random() < 0.08:
        shape["tolerations"] = [{"operator": "Exists"}]
    roll = rng.random()
    if roll < 0.12:
        shape["nodeSelector"] = {POOL: rng.choice(["a", "b"])}
    elif roll < 0.24:
        key = rng.choice(keys)
        values = sorted({n["metadata"]["labels"].get(key, "none") for n in sc.nodes})
        op = rng.choice(["In", "NotIn"])
        expr = {"key": key, "operator": op, "values": rng.sample(values, 1)}
        shape["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [expr]}]
                }
            }
        }
    return shape


def _policy(rng: random.Random, count_field: str, most: int) -> Obj:
    if rng.random() < 0.25:
        return {"basic": {}}
    return {"gang": {count_field: rng.randint(1, max(1, most))}}


def _group(
    sc: Scenario, kind: str, name: str, policy: Obj, key: str | None, parent: str | None
) -> Obj:
    spec: Obj = {"schedulingPolicy": policy}
    if key:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    if parent or kind != "PodGroup":
        # the API server refuses a child without it (a Workload's template names each group)
        spec["workloadRef"] = {"workloadName": "job", "templateName": name}
    if parent:
        spec["parentCompositePodGroupName"] = parent
    api = "scheduling.k8s.io/v1beta1" if kind == "PodGroup" else "scheduling.k8s.io/v1alpha3"
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": sc.namespace},
        "spec": spec,
    }


def _usable(node: Obj) -> bool:
    return not node["spec"].get("taints") and not node["spec"].get("unschedulable")


def _pod_group(
    rng: random.Random,
    sc: Scenario,
    keys: list[str],
    name: str,
    key: str | None,
    parent: str | None,
) -> None:
    """A PodGroup and its pods, some maybe already running in one domain of ``key``."""
    pods = rng.randint(1, 6)
    policy = _policy(rng, "minCount", pods)
    if "gang" in policy and rng.random() < 0.04:
        policy["gang"]["minCount"] = pods + rng.randint(1, 2)  # short of its quorum
    shape = _shape(rng, keys, sc)
    bound = rng.randint(1, 2) if rng.random() < 0.15 else 0
    hosts = [n for n in sc.nodes if _usable(n)]
    if bound and hosts:
        first = rng.choice(hosts)
        if key is not None and key in first["metadata"]["labels"]:
            domain = first["metadata"]["labels"][key]
            hosts = [n for n in hosts if n["metadata"]["labels"].get(key) == domain]
        if rng.random() < 0.1:
            hosts = [n for n in sc.nodes if _usable(n)]  # maybe two domains: an error
        for j in range(bound):
            host = rng.choice(hosts)["metadata"]["name"]
            sc.running.append(_pod(rng, sc, f"{name}-run{j}", name, shape, host))
    sc.groups.append(_group(sc, "PodGroup", name, policy, key, parent))
    for j in range(pods):
        sc.pending.append(_pod(rng, sc, f"{name}-{j}", name, shape, None))


def _others(rng: random.Random, sc: Scenario) -> None:
    """Pods of other workloads already running (outside any group)."""
    for i in range(rng.randint(0, 4)):
        host = rng.choice(sc.nodes)
        if not _usable(host):
            continue
        shape = {"res": {"requests": {"cpu": rng.choice(["500m", "1", "2"])}}}
        sc.running.append(_pod(rng, sc, f"other-{i}", None, shape, host["metadata"]["name"]))


def generate(seed: int, index: int) -> Scenario:
    """Scenario ``index`` of the batch of ``seed``."""
    rng = random.Random(f"kubesched-{seed}-{index}")
    tag = f"s{seed}-{index}"
    sc = Scenario(name=tag, namespace=tag)
    keys = _nodes(rng, sc)
    _others(rng, sc)
    if rng.random() < 0.65:
        key = rng.choice([*keys, None])
        _pod_group(rng, sc, keys, "pg", key, None)
        return sc
    # a CompositePodGroup over two or three PodGroups, each maybe held to a narrower level
    top = rng.choice([*keys[:-1], keys[0], None]) if len(keys) > 1 else rng.choice([*keys, None])
    narrower = keys[keys.index(top) + 1 :] if top in keys else keys
    kids = rng.randint(2, 3)
    for j in range(kids):
        key = rng.choice([*narrower, None]) if narrower else None
        _pod_group(rng, sc, keys, f"pg{j}", key, "cpg")
    sc.groups.append(
        _group(sc, "CompositePodGroup", "cpg", _policy(rng, "minGroupCount", kids), top, None)
    )
    return sc
