"""Seeded random Volcano scenarios, written as the files a user gives ``advise``.

One scenario is a folder with ``snapshot.yaml`` (what ``kubectl get nodes,pods,hypernodes,
queues,podgroups -A -o yaml`` prints, plus the scheduler's ConfigMap) and ``job.yaml`` (the
advised scheduling.volcano.sh PodGroup and its pending pods; its running pods, when the gang
is partly running, are in the snapshot only, as kubectl gives them). The same seed gives
the same files.

What varies: one to three HyperNode tiers whose names share prefixes (``r1``, ``r10``),
members by exactMatch, anchored regexMatch or labelMatch, nodes outside every HyperNode;
node sizes, taints, NotReady nodes (with the taint the node controller adds), cordoned
nodes; other jobs' running pods; queues with a capability; the configuration's plugins;
the job's tasks, requests, nodeSelector, tolerations, required and preferred affinity,
minMember, hard or soft network topology with highestTierAllowed or highestTierName, and
members already running. A share of the PodGroups (``SUBGROUP_SHARE``) partition some tasks
as a Volcano Job's ``partitionPolicy`` does: pods labelled ``volcano.sh/partition-id``, one
``subGroupPolicy`` per partitioned task (subGroupSize, minSubGroups, its own network
topology; now and then a field left out), ``minMember`` and ``minTaskMember`` as the job
controller sets them or not.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

TIER_NAMES = ("leaf", "spine", "core")
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_LABEL = "volcano.sh/task-spec"
PARTITION_LABEL = "volcano.sh/partition-id"
SUBGROUP_SHARE = 0.25  # scenarios whose PodGroup has a subGroupPolicy
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
Obj = dict[str, Any]


@dataclass
class Scenario:
    """The objects of one scenario, before they are written."""

    snapshot: list[Obj] = field(default_factory=list)
    job: list[Obj] = field(default_factory=list)
    tiers: int = 0


def _node(rng: random.Random, name: str, labels: dict[str, str]) -> Obj:
    gpus = rng.choice((0, 4, 8, 8))
    alloc = {"cpu": str(rng.choice((32, 64))), "memory": "256Gi", "pods": "110"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    spec: Obj = {}
    taints: list[Obj] = []
    ready = "True"
    roll = rng.random()
    if roll < 0.08:
        taints.append({"key": "dedicated", "value": "infra", "effect": "NoSchedule"})
    elif roll < 0.13:
        ready = "False"
        taints.append(dict(NOT_READY_TAINT))
    elif roll < 0.18:
        spec["unschedulable"] = True
        taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    if taints:
        spec["taints"] = taints
    labels = {
        **labels,
        "kubernetes.io/hostname": name,
        "role": "gpu" if gpus else "cpu",
        "zone": rng.choice(("a", "b")),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [{"type": "Ready", "status": ready}],
        },
    }


def _hypernode(name: str, tier: int, members: list[Obj]) -> Obj:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "tierName": TIER_NAMES[tier - 1], "members": members},
    }


def _leaf_members(rng: random.Random, leaf: str, nodes: list[str]) -> list[Obj]:
    how = rng.random()
    if how < 0.5:
        return [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    if how < 0.75:
        return [{"type": "Node", "selector": {"regexMatch": {"pattern": f"^n-{leaf}-"}}}]
    return [{"type": "Node", "selector": {"labelMatch": {"matchLabels": {"leaf": leaf}}}}]


def _topology(rng: random.Random, sc: Scenario) -> list[Obj]:
    """HyperNodes over the nodes; returns the nodes."""
    sc.tiers = rng.choice((1, 2, 2, 3))
    fan = [rng.choice((2, 3)) for _ in range(sc.tiers)]
    # Indexes 1, 10, 11 make names that are prefixes of each other (r1, r10, r11).
    index = [1, 10, 11, 2]
    nodes: list[Obj] = []

    def grow(tier: int, prefix: str) -> list[str]:
        names = []
        for k in range(fan[tier - 1]):
            name = f"{prefix}{'rsc'[tier - 1]}{index[k]}"
            if tier == 1:
                members_n = [f"n-{name}-{j}" for j in range(rng.choice((2, 3, 4)))]
                for n in members_n:
                    nodes.append(_node(rng, n, {"leaf": name}))
                sc.snapshot.append(_hypernode(name, 1, _leaf_members(rng, name, members_n)))
            else:
                kids = grow(tier - 1, f"{name}-")
                sel = [{"type": "HyperNode", "selector": {"exactMatch": {"name": c}}} for c in kids]
                sc.snapshot.append(_hypernode(name, tier, sel))
            names.append(name)
        return names

    grow(sc.tiers, "")
    for j in range(rng.choice((0, 0, 1, 2))):  # nodes outside every HyperNode
        nodes.append(_node(rng, f"loose-{j}", {}))
    return nodes


def _requests(rng: random.Random, gpu: bool) -> dict[str, str]:
    req = {"cpu": str(rng.choice((1, 2, 4, 8, 16))), "memory": f"{rng.choice((4, 16, 64))}Gi"}
    if gpu:
        req["nvidia.com/gpu"] = str(rng.choice((1, 2, 4, 8)))
    return req


def _pod(ns: str, name: str, group: str | None, task: str, req: dict[str, str]) -> Obj:
    meta: Obj = {"name": name, "namespace": ns, "labels": {TASK_LABEL: task}}
    if group:
        meta["annotations"] = {GROUP_ANNOTATION: group}
    container = {"name": "main", "image": "trainer", "resources": {"requests": dict(req)}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"schedulerName": "volcano", "containers": [container]},
        "status": {"phase": "Pending"},
    }


def _podgroup(ns: str, name: str, queue: str, min_member: int, phase: str) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minMember": min_member, "queue": queue},
        "status": {"phase": phase},
    }


def _background(rng: random.Random, sc: Scenario, nodes: list[Obj]) -> None:
    """Other jobs' pods already running, each in a Running PodGroup of one pod."""
    usable = [n for n in nodes if not n["spec"].get("taints")]
    for i in range(rng.choice((0, 1, 2, 4))):
        if not usable:
            return
        node = rng.choice(usable)
        gpu = "nvidia.com/gpu" in node["status"]["allocatable"]
        req = _requests(rng, gpu)
        if gpu:
            req["nvidia.com/gpu"] = str(
                min(
                    int(req["nvidia.com/gpu"]), int(node["status"]["allocatable"]["nvidia.com/gpu"])
                )
            )
        pod = _pod("other", f"bg-{i}", f"bg-{i}", "main", req)
        pod["spec"]["nodeName"] = node["metadata"]["name"]
        pod["status"]["phase"] = "Running"
        pg = _podgroup("other", f"bg-{i}", "default", 1, "Running")
        pg["status"]["running"] = 1
        sc.snapshot += [pg, pod]


def _queues(rng: random.Random) -> tuple[list[Obj], str]:
    def queue(name: str, weight: int, cap: dict[str, str] | None) -> Obj:
        spec: Obj = {"weight": weight, "reclaimable": True}
        if cap:
            spec["capability"] = cap
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": spec,
            "status": {"state": "Open"},
        }

    cap = {"nvidia.com/gpu": str(rng.choice((4, 8, 16, 64)))} if rng.random() < 0.3 else None
    qs = [queue("default", 1, None), queue("train", rng.choice((1, 2)), cap)]
    return qs, rng.choice(("default", "train", "train"))


def _conf(rng: random.Random) -> Obj:
    second = ["predicates", "proportion", "nodeorder"]
    if rng.random() < 0.5:
        second.insert(0, "drf")
    if rng.random() < 0.5:
        second.append("binpack")
    if rng.random() < 0.8:
        second.append("network-topology-aware")
    text = yaml.safe_dump(
        {
            "actions": "enqueue, allocate, backfill",
            "tiers": [
                {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
                {"plugins": [{"name": p} for p in second]},
            ],
        },
        sort_keys=False,
    )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
        "data": {"volcano-scheduler.conf": text},
    }


def _constrain(rng: random.Random, pod: Obj, gpu: bool) -> None:
    spec = pod["spec"]
    if rng.random() < 0.5:
        spec["nodeSelector"] = {"role": "gpu" if gpu else rng.choice(("gpu", "cpu"))}
    if rng.random() < 0.2:
        spec["tolerations"] = [
            {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}
        ]
    if rng.random() < 0.2:
        term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
        spec.setdefault("affinity", {})["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    if rng.random() < 0.2:
        pref = {
            "weight": 10,
            "preference": {
                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]
            },
        }
        spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})[
            "preferredDuringSchedulingIgnoredDuringExecution"
        ] = [pref]


def _network_topology(rng: random.Random, tiers: int) -> Obj | None:
    roll = rng.random()
    if roll < 0.25:
        return None
    nt: Obj = {"mode": "hard" if roll < 0.75 else "soft"}
    if rng.random() < 0.3:
        nt["highestTierName"] = TIER_NAMES[rng.randrange(tiers)]
    elif rng.random() < 0.9:
        nt["highestTierAllowed"] = rng.randint(1, tiers + 1)
    return nt


def _task_pods(
    rng: random.Random, ns: str, name: str, task: str, count: int, size: int
) -> list[Obj]:
    """``count`` pods of one task; with ``size`` > 0, labelled by partition as the job
    controller labels them (``volcano.sh/partition-id`` = index // size)."""
    gpu = rng.random() < 0.7
    req = _requests(rng, gpu)
    pods = []
    for i in range(count):
        pod = _pod(ns, f"{name}-{task}-{i}", name, task, req)
        if size:
            pod["metadata"]["labels"][PARTITION_LABEL] = str(i // size)
        _constrain(rng, pod, gpu)
        pods.append(pod)
    return pods


def _policy(rng: random.Random, task: str, size: int, parts: int, tiers: int) -> Obj:
    """One subGroupPolicy entry over a partitioned task, mostly as the job controller writes
    it (``getSubGroupPolicy``), sometimes with fields left out."""
    policy: Obj = {"name": task}
    if rng.random() < 0.9:
        policy["subGroupSize"] = size
    if rng.random() < 0.85:
        policy["minSubGroups"] = rng.randint(0, parts)
    if rng.random() < 0.9:
        policy["labelSelector"] = {"matchLabels": {TASK_LABEL: task}}
    if rng.random() < 0.9:
        policy["matchLabelKeys"] = [PARTITION_LABEL]
    if rng.random() < 0.75 and (nt := _network_topology(rng, tiers)):
        policy["networkTopology"] = nt
    return policy


def _job(rng: random.Random, sc: Scenario, nodes: list[Obj], queue: str) -> None:
    ns, name = "team", "train"
    pods: list[Obj] = []
    policies: list[Obj] = []
    task_min: dict[str, int] = {}
    subgroups = rng.random() < SUBGROUP_SHARE
    for t in range(rng.choice((1, 1, 2, 3))):
        task = f"t{t}"
        if subgroups and (t == 0 or rng.random() < 0.6):
            size, parts = rng.choice((1, 2, 2, 3, 4)), rng.choice((1, 2, 2, 3))
            if size * parts > 8:
                parts = max(1, 8 // size)
            pods += _task_pods(rng, ns, name, task, size * parts, size)
            policies.append(_policy(rng, task, size, parts, sc.tiers))
            task_min[task] = (policies[-1].get("minSubGroups") or 0) * size
        else:
            count = rng.choice((1, 2, 3, 4))
            pods += _task_pods(rng, ns, name, task, count, 0)
            task_min[task] = count
    total = len(pods)
    if subgroups and rng.random() < 0.6:  # as the job controller: the tasks' minAvailable
        min_member = max(1, sum(task_min.values()))
    else:
        min_member = total if rng.random() < 0.7 else rng.randint(1, total)
    running = 0
    if rng.random() < 0.25 and total > 1:  # a gang already partly running
        fits = [n for n in nodes if not n["spec"].get("taints")]
        for pod in pods[: rng.randint(1, total - 1)]:
            if not fits:
                break
            pod["spec"]["nodeName"] = rng.choice(fits)["metadata"]["name"]
            pod["status"]["phase"] = "Running"
            running += 1
    pg = _podgroup(ns, name, queue, min_member, "Running" if running else "Pending")
    if running:
        pg["status"]["running"] = running
    nt = _network_topology(rng, sc.tiers)
    if nt:
        pg["spec"]["networkTopology"] = nt
    if policies:
        pg["spec"]["subGroupPolicy"] = policies
        if rng.random() < 0.5:
            pg["spec"]["minTaskMember"] = task_min
    sc.snapshot.append(pg)
    sc.snapshot += [p for p in pods if p["spec"].get("nodeName")]
    sc.job = [pg] + [p for p in pods if not p["spec"].get("nodeName")]


def generate(seed: int) -> Scenario:
    """The scenario of ``seed``."""
    rng = random.Random(seed)
    sc = Scenario()
    nodes = _topology(rng, sc)
    sc.snapshot[:0] = nodes
    _background(rng, sc, nodes)
    queues, queue = _queues(rng)
    sc.snapshot += queues
    sc.snapshot.append(_conf(rng))
    _job(rng, sc, nodes, queue)
    return sc


def write(sc: Scenario, folder: Path) -> None:
    """``snapshot.yaml`` and ``job.yaml`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    listing = {"apiVersion": "v1", "kind": "List", "items": sc.snapshot}
    (folder / "snapshot.yaml").write_text(yaml.safe_dump(listing, sort_keys=False))
    (folder / "job.yaml").write_text(yaml.safe_dump_all(sc.job, sort_keys=False))
