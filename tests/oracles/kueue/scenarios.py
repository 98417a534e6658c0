"""Seeded random situations for Kueue's Topology-Aware Scheduling, written as the files a
user gives ``advise``: a snapshot (``kubectl get nodes,pods,workloads,topologies,
resourceflavors,localqueues,clusterqueues -A -o json``) and either a pending Workload
(``advise -f``) or an admitted one with failed nodes (``advise --workload --failed-node``).

Every feature the Kueue simulator models shows up: topologies of one to four levels with
domain names that share prefixes, a topology whose lowest level is not the hostname,
taints, tolerations, nodeSelectors and required node affinity, not-ready and cordoned
nodes, pods that are not Kueue's, admitted Workloads (also of another ClusterQueue, through
a second ResourceFlavor on the same nodes), leader/worker groups, slices, required,
preferred and unconstrained requests, balanced placement, and failed nodes under the
node-replacement gates (a Workload owned by a single Pod, two failures at once).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NS = "team"
HOST = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"
LEVEL_KEYS = ("example.com/zone", "example.com/block", "example.com/rack")
# Domain names that share prefixes ("b1", "b10", "b1x"), so that no code may confuse a
# value with another's prefix.
SUFFIXES = ("1", "10", "1x", "2", "11", "3")
TAINT = {"key": "example.com/maintenance", "value": "soon", "effect": "NoSchedule"}
SOFT_TAINT = {"key": "example.com/noisy", "value": "yes", "effect": "PreferNoSchedule"}
GATES = (
    "TASBalancedPlacement=true",
    "TASProfileMixed=false",
    "TASFailedNodeReplacementFailFast=false",
)


@dataclass
class Scenario:
    """One situation: its files and the arguments both sides get."""

    name: str
    kind: str  # "place" or "failure"
    snapshot: list[dict[str, Any]]
    workload: dict[str, Any] | None = None
    admitted: str = ""  # NS/NAME for a failure
    failed: list[str] = field(default_factory=list)
    gates: str = ""

    @classmethod
    def read(cls, folder: Path) -> Scenario:
        """The scenario ``write`` wrote into ``folder``."""
        args = json.loads((folder / "scenario.json").read_text())
        snapshot = json.loads((folder / "snapshot.json").read_text())["items"]
        wl_file = folder / "workload.json"
        workload = json.loads(wl_file.read_text()) if wl_file.exists() else None
        return cls(
            folder.name,
            args["kind"],
            snapshot,
            workload=workload,
            admitted=args["admitted"],
            failed=list(args["failed"]),
            gates=args["gates"],
        )

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        snap = {"apiVersion": "v1", "kind": "List", "items": self.snapshot}
        (folder / "snapshot.json").write_text(json.dumps(snap, indent=1) + "\n")
        if self.workload is not None:
            (folder / "workload.json").write_text(json.dumps(self.workload, indent=1) + "\n")
        args = {
            "kind": self.kind,
            "admitted": self.admitted,
            "failed": self.failed,
            "gates": self.gates,
        }
        (folder / "scenario.json").write_text(json.dumps(args, indent=1) + "\n")


def _node(rng: random.Random, name: str, levels: dict[str, str], pools: bool) -> dict[str, Any]:
    gpus = rng.choice((0, 4, 8, 8))
    labels = dict(levels)
    labels[HOST] = name
    if pools:
        labels["example.com/pool"] = rng.choice(("a", "b"))
    alloc = {"cpu": str(rng.choice((16, 32, 64))), "memory": f"{rng.choice((64, 256))}Gi"}
    alloc["pods"] = str(rng.choice((110, 110, 110, 3, 2)))
    if gpus:
        alloc[GPU] = str(gpus)
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}]},
    }
    roll = rng.random()
    if roll < 0.06:
        node["status"]["conditions"] = [
            {"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]
    elif roll < 0.10:
        node["spec"]["unschedulable"] = True
        node["spec"]["taints"] = [
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
        ]
    elif roll < 0.18:
        node["spec"]["taints"] = [dict(TAINT)]
    elif roll < 0.22:
        node["spec"]["taints"] = [dict(SOFT_TAINT)]
    return node


def _cluster(rng: random.Random) -> tuple[list[str], list[dict[str, Any]]]:
    """The topology's levels (widest first) and its nodes."""
    depth = rng.choice((0, 1, 2, 2, 3))
    keys = list(LEVEL_KEYS[3 - depth :]) if depth else []
    hostname_level = rng.random() > 0.08 or not keys
    pools = rng.random() < 0.3
    nodes = []
    count = rng.randint(3, 14)
    fan = [rng.randint(1, 3) for _ in keys]
    for i in range(count):
        levels = {}
        index = i
        for key, width in zip(reversed(keys), reversed(fan), strict=True):
            levels[key] = key.split("/")[1][0] + SUFFIXES[index % width % len(SUFFIXES)]
            index //= width
        # Parent values are folded into child values, so a rack name never repeats
        # under two blocks (Kueue's domain IDs would merge them otherwise, and so would ours).
        path = ""
        for key in keys:
            path = f"{path}{levels[key]}-" if path else f"{levels[key]}-"
            levels[key] = path.rstrip("-")
        nodes.append(_node(rng, f"n{SUFFIXES[i % len(SUFFIXES)]}-{i}", levels, pools))
    levels_out = keys + ([HOST] if hostname_level else [])
    return levels_out, nodes


def _pod(rng: random.Random, i: int, node: dict[str, Any]) -> dict[str, Any]:
    req = {"cpu": str(rng.choice((1, 4, 8))), "memory": "8Gi"}
    if GPU in node["status"]["allocatable"] and rng.random() < 0.6:
        req[GPU] = str(rng.choice((1, 4)))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"other-{i}", "namespace": "default"},
        "spec": {
            "nodeName": node["metadata"]["name"],
            "containers": [{"name": "c", "resources": {"requests": req}}],
        },
        "status": {"phase": rng.choice(("Running", "Running", "Running", "Succeeded"))},
    }


def _kueue_objects(
    levels: list[str], sibling: bool, flavor_labels: dict[str, str]
) -> list[dict[str, Any]]:
    v = "kueue.x-k8s.io/v1beta2"
    quota = [
        {"name": r, "nominalQuota": q}
        for r, q in (("cpu", "100000"), ("memory", "1000Ti"), (GPU, "100000"))
    ]
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": v,
            "kind": "Topology",
            "metadata": {"name": "topo"},
            "spec": {"levels": [{"nodeLabel": k} for k in levels]},
        }
    ]
    cqs = [("cq1", "main", "q1")] + ([("cq2", "sibling", "q2")] if sibling else [])
    for cq, flavor, lq in cqs:
        spec: dict[str, Any] = {"topologyName": "topo"}
        if flavor_labels:
            spec["nodeLabels"] = flavor_labels
        objs.append(
            {"apiVersion": v, "kind": "ResourceFlavor", "metadata": {"name": flavor}, "spec": spec}
        )
        objs.append(
            {
                "apiVersion": v,
                "kind": "ClusterQueue",
                "metadata": {"name": cq},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory", GPU],
                            "flavors": [{"name": flavor, "resources": quota}],
                        }
                    ],
                },
            }
        )
        objs.append(
            {
                "apiVersion": v,
                "kind": "LocalQueue",
                "metadata": {"name": lq, "namespace": NS},
                "spec": {"clusterQueue": cq},
            }
        )
    return objs


def _requests(rng: random.Random) -> dict[str, str]:
    req = {"cpu": str(rng.choice((1, 2, 4, 8))), "memory": f"{rng.choice((1, 4, 16))}Gi"}
    if rng.random() < 0.6:
        req[GPU] = str(rng.choice((1, 2, 4, 8)))
    return req


def _topology_request(rng: random.Random, levels: list[str], count: int) -> dict[str, Any]:
    mode = rng.choice(("required", "required", "preferred", "preferred", "unconstrained"))
    tr: dict[str, Any] = {}
    if mode == "unconstrained":
        tr["unconstrained"] = True
    else:
        tr[mode] = rng.choice(levels)
    if mode == "required" and rng.random() < 0.25:
        for size in (4, 3, 2):
            if count % size == 0 and count > size:
                tr["podSetSliceRequiredTopology"] = rng.choice(
                    levels[levels.index(tr["required"]) :]
                )
                tr["podSetSliceSize"] = size
                break
    return tr


def _template(rng: random.Random, req: dict[str, str], pools: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": req}}]}
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}]
    if pools and rng.random() < 0.4:
        if rng.random() < 0.5:
            spec["nodeSelector"] = {"example.com/pool": rng.choice(("a", "b"))}
        else:
            term = {
                "matchExpressions": [
                    {
                        "key": "example.com/pool",
                        "operator": "In",
                        "values": [rng.choice(("a", "b"))],
                    }
                ]
            }
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                }
            }
    return {"spec": spec}


def _workload(name: str, queue: str, podsets: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
        "spec": {"queueName": queue, "podSets": podsets},
    }


def _pending(rng: random.Random, levels: list[str], pools: bool) -> dict[str, Any]:
    podsets = []
    if rng.random() < 0.2:
        level = rng.choice(levels)
        mode = rng.choice(("required", "preferred"))
        for name, count in (("leader", 1), ("workers", rng.randint(1, 6))):
            tr = {mode: level, "podSetGroupName": "group"}
            podsets.append(
                {
                    "name": name,
                    "count": count,
                    "template": _template(rng, _requests(rng), pools),
                    "topologyRequest": tr,
                }
            )
    else:
        for i in range(rng.choice((1, 1, 1, 2))):
            count = rng.randint(1, 8)
            podsets.append(
                {
                    "name": f"ps{i}",
                    "count": count,
                    "template": _template(rng, _requests(rng), pools),
                    "topologyRequest": _topology_request(rng, levels, count),
                }
            )
    return _workload("pending", "q1", podsets)


def _times(quantity: str, count: int) -> str:
    """A request of the generator's forms ("4", "16Gi") times count."""
    digits = quantity.rstrip("GiMK")
    return f"{int(digits) * count}{quantity[len(digits) :]}"


def _admit(
    wl: dict[str, Any], cq: str, flavor: str, hosts: list[list[str]], owner_pod: bool = False
) -> dict[str, Any]:
    """Mark wl admitted, its PodSets on the given hostnames (one pod per entry)."""
    psas = []
    for ps, names in zip(wl["spec"]["podSets"], hosts, strict=True):
        counts: dict[str, int] = {}
        for n in names:
            counts[n] = counts.get(n, 0) + 1
        order = sorted(counts)
        requests = ps["template"]["spec"]["containers"][0]["resources"]["requests"]
        # Kueue writes the PodSet's total requests beside its flavors; a re-admission
        # (the replacement of a failed node) reads them from there.
        usage = {r: _times(q, ps["count"]) for r, q in requests.items()}
        psas.append(
            {
                "name": ps["name"],
                "count": ps["count"],
                "flavors": {r: flavor for r in requests},
                "resourceUsage": usage,
                "topologyAssignment": {
                    "levels": [HOST],
                    "slices": [
                        {
                            "domainCount": len(order),
                            "valuesPerLevel": [{"individual": {"roots": order}}],
                            "podCounts": {"individual": [counts[n] for n in order]},
                        }
                    ],
                },
            }
        )
    cond = {
        "status": "True",
        "reason": "Admitted",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    wl["status"] = {
        "admission": {"clusterQueue": cq, "podSetAssignments": psas},
        "conditions": [
            {"type": "QuotaReserved", **cond, "reason": "QuotaReserved"},
            {"type": "Admitted", **cond},
        ],
    }
    if owner_pod:
        wl["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "single",
                "uid": "uid-single",
                "controller": True,
            }
        ]
    return wl


def _held(
    rng: random.Random, nodes: list[dict[str, Any]], sibling: bool, hostname_level: bool
) -> list[dict[str, Any]]:
    """Admitted Workloads that hold capacity (Kueue counts them from admission)."""
    if not hostname_level:
        return []
    out = []
    for i in range(rng.choice((0, 1, 1, 2, 3))):
        cq, flavor, q = (
            ("cq2", "sibling", "q2") if sibling and rng.random() < 0.6 else ("cq1", "main", "q1")
        )
        count = rng.randint(1, 3)
        ps = {
            "name": "main",
            "count": count,
            "template": {
                "spec": {"containers": [{"name": "c", "resources": {"requests": _requests(rng)}}]}
            },
        }
        hosts = [rng.choice(nodes)["metadata"]["name"] for _ in range(count)]
        out.append(_admit(_workload(f"held-{i}", q, [ps]), cq, flavor, [hosts]))
    return out


def generate(seed: int) -> Scenario:
    rng = random.Random(seed)
    levels, nodes = _cluster(rng)
    pools = any("example.com/pool" in n["metadata"]["labels"] for n in nodes)
    sibling = rng.random() < 0.5
    flavor_labels = {"example.com/pool": "a"} if pools and rng.random() < 0.2 else {}
    pods = [_pod(rng, i, rng.choice(nodes)) for i in range(rng.randint(0, len(nodes)))]
    hostname_level = levels[-1] == HOST
    held = _held(rng, nodes, sibling, hostname_level)
    snapshot = nodes + pods + _kueue_objects(levels, sibling, flavor_labels) + held
    gates = rng.choice(GATES) if rng.random() < 0.3 else ""
    if hostname_level and rng.random() < 0.3:
        return _failure(rng, seed, snapshot, levels, nodes, gates)
    return Scenario(
        f"s{seed}", "place", snapshot, workload=_pending(rng, levels, pools), gates=gates
    )


def _failure(
    rng: random.Random,
    seed: int,
    snapshot: list[dict[str, Any]],
    levels: list[str],
    nodes: list[dict[str, Any]],
    gates: str,
) -> Scenario:
    """An admitted Workload on some nodes, one or two of which fail."""
    healthy = [
        n
        for n in nodes
        if not n["spec"].get("taints") and n["status"]["conditions"][0]["status"] == "True"
    ]
    if len(healthy) < 2:
        healthy = nodes
    count = rng.randint(1, min(4, len(healthy)))
    single_pod = count == 1 and rng.random() < 0.3
    req = _requests(rng)
    tr = _topology_request(rng, levels, count)
    tr.pop("podSetSliceRequiredTopology", None)
    tr.pop("podSetSliceSize", None)
    if tr.get("required"):
        # As Kueue admitted it: every pod inside one domain of the required level.
        groups: dict[str, list[dict[str, Any]]] = {}
        for n in healthy:
            groups.setdefault(n["metadata"]["labels"][tr["required"]], []).append(n)
        healthy = rng.choice(sorted(groups.values(), key=len, reverse=True)[:2])
    on = [healthy[i % len(healthy)] for i in range(count)]
    on = rng.sample(on, count)
    ps = {
        "name": "main",
        "count": count,
        "template": _template(rng, req, False),
        "topologyRequest": tr,
    }
    wl = _admit(
        _workload("victim", "q1", [ps]),
        "cq1",
        "main",
        [[n["metadata"]["name"] for n in on]],
        owner_pod=single_pod,
    )
    failed = [on[0]["metadata"]["name"]]
    others = sorted({n["metadata"]["name"] for n in on} - set(failed))
    if others and rng.random() < 0.25:
        failed.append(rng.choice(others))
    if rng.random() < 0.25:
        # Fail it in the snapshot instead: a taint the Workload does not tolerate.
        bad = next(
            n for n in snapshot if n.get("kind") == "Node" and n["metadata"]["name"] == failed[0]
        )
        bad["spec"]["taints"] = [{"key": "example.com/broken", "effect": "NoExecute"}]
        failed = failed[1:]
    return Scenario(
        f"s{seed}", "failure", [*snapshot, wl], admitted=f"{NS}/victim", failed=failed, gates=gates
    )
