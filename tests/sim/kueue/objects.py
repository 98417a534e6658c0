"""Build Kubernetes Node/Pod objects and snapshot files for the placement tests.

Tests describe clusters as compact specs (path of domain values, free pods) and get the
same plain dicts ``kubectl get nodes,pods -A -o yaml`` would print.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from labeler.core.model import Level, Topology
from labeler.sim.common.cluster import snapshot_from_objects
from labeler.sim.kueue.tree import Tree, build_tree
from tests.builders import node, pod

HOST = "kubernetes.io/hostname"
BLOCK = "cloud.com/topology-block"
RACK = "cloud.com/topology-rack"


def topology(*keys: str, name: str = "default") -> Topology:
    return Topology(name, tuple(Level(k, k.rsplit("/", 1)[-1]) for k in keys))


def flavor(name: str, topology: str | None = "t", **spec: Any) -> dict[str, Any]:
    """A ResourceFlavor of nodes labeled ``pool: name``, with ``topology`` (None: none)."""
    body: dict[str, Any] = {"nodeLabels": {"pool": name}, **spec}
    if topology:
        body["topologyName"] = topology
    return {"kind": "ResourceFlavor", "metadata": {"name": name}, "spec": body}


def podset(
    name: str,
    count: int,
    requests: Mapping[str, str],
    *,
    required: str | None = None,
    preferred: str | None = None,
    unconstrained: bool = False,
    group: str | None = None,
    slice_level: str | None = None,
    slice_size: int | None = None,
    spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A Workload's PodSet: ``count`` pods of one container asking for ``requests``, its
    topology request from the keywords; ``spec``, more of the pod spec."""
    tr: dict[str, Any] = {}
    if required:
        tr["required"] = required
    if preferred:
        tr["preferred"] = preferred
    if unconstrained:
        tr["unconstrained"] = True
    if group:
        tr["podSetGroupName"] = group
    if slice_level:
        tr["podSetSliceRequiredTopology"] = slice_level
        tr["podSetSliceSize"] = slice_size
    pod_spec = {"containers": [{"name": "c", "resources": {"requests": dict(requests)}}]}
    pod_spec.update(spec or {})
    return {"name": name, "count": count, "template": {"spec": pod_spec}, "topologyRequest": tr}


def gpu_nodes(
    keys: Sequence[str], spec: Iterable[tuple[Sequence[str], str, int, int]]
) -> list[dict[str, Any]]:
    """Nodes from (domain values widest first, name, GPUs allocatable, GPUs used) tuples;
    the used GPUs become one running pod on the node."""
    items: list[dict[str, Any]] = []
    for values, name, gpus, used in spec:
        labels = dict(zip(keys, values, strict=True))
        items.append(
            node(name)
            .hostname()
            .labels(labels)
            .allocatable({"nvidia.com/gpu": str(gpus), "pods": "110"})
            .obj()
        )
        if used:
            items.append(pod(f"busy-{name}").on(name).requests({"nvidia.com/gpu": str(used)}).obj())
    return items


def as_list(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def write_snapshot(path: Path, items: Sequence[Mapping[str, Any]], *, fmt: str = "yaml") -> Path:
    doc = as_list(items)
    if fmt == "json":
        path.write_text(json.dumps(doc), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def tree_of(topo: Topology, items: Sequence[Mapping[str, Any]], **kw: Any) -> Tree:
    snap = snapshot_from_objects(as_list(items), "test")
    return build_tree(topo, snap.nodes, **kw)


def cpu_nodes(
    keys: Sequence[str], spec: Iterable[tuple[Sequence[str], str, str]]
) -> list[dict[str, Any]]:
    """Nodes from (domain values, hostname, CPUs allocatable) with room for 10 pods."""
    return [
        node(name)
        .hostname()
        .labels(dict(zip(keys, values, strict=True)))
        .allocatable({"cpu": cpu, "pods": "10"})
        .obj()
        for values, name, cpu in spec
    ]
