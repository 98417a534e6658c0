"""Sort the objects of a snapshot (or the cluster) into what the Volcano simulator reads.

``kubectl get nodes,pods,hypernodes,queues,podgroups.scheduling.volcano.sh -A -o yaml``
gives one List; Nodes and Pods become nodes with their usage (``labeler.sim.common.cluster``, the
same accounting the map and the Kueue advisor use), the rest is read by kind and API group.
Two kinds share the name PodGroup: only ``scheduling.volcano.sh`` ones are Volcano's
(``scheduling.k8s.io`` is kube-scheduler's gang API and is left alone here).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labeler.base.errors import InputError
from labeler.core.capacity import Node
from labeler.sim.common.cluster import snapshot_from_objects
from labeler.sim.volcano.hypernodes import is_hypernode
from labeler.sim.volcano.model import PODGROUP_API, Queue, podgroup_from_object, queue_from_object
from labeler.sim.volcano.simulate import Cluster

JOB_API = "batch.volcano.sh"


def api_group(obj: Mapping[str, Any]) -> str:
    return str(obj.get("apiVersion") or "").partition("/")[0]


def is_volcano_podgroup(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "PodGroup" and api_group(obj) == PODGROUP_API


def is_volcano_job(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Job" and api_group(obj) == JOB_API


@dataclass(frozen=True)
class Objects:
    """A snapshot's objects, by what the simulator does with them."""

    cluster: Cluster
    podgroups: Mapping[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    jobs: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    configmaps: tuple[tuple[str, Mapping[str, Any]], ...] = ()


@dataclass
class _Sorted:
    core: list[Any] = field(default_factory=list)
    pods: list[Mapping[str, Any]] = field(default_factory=list)
    hypernodes: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    queues: dict[str, Queue] = field(default_factory=dict)
    podgroups: dict[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    jobs: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    configmaps: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)


def _sort(items: Iterable[Any], origin: str) -> _Sorted:
    out = _Sorted()
    problems: list[str] = []
    for i, item in enumerate(items):
        where = f"{origin}: items[{i}]"
        if not isinstance(item, Mapping):
            out.core.append(item)  # snapshot_from_objects names it
            continue
        kind = item.get("kind")
        try:
            if kind in ("Node", "Pod"):
                out.core.append(item)
                if kind == "Pod":
                    out.pods.append(item)
            elif is_hypernode(item):
                out.hypernodes.append((where, item))
            elif kind == "Queue" and api_group(item) == PODGROUP_API:
                q = queue_from_object(item, where)
                out.queues[q.name] = q
            elif is_volcano_podgroup(item):
                pg = podgroup_from_object(item, where)
                out.podgroups[pg.ref] = (where, item)
            elif is_volcano_job(item):
                out.jobs.append((where, item))
            elif kind == "ConfigMap":
                out.configmaps.append((where, item))
        except InputError as e:
            problems.extend(e.problems)
    if problems:
        raise InputError(problems, heading=f"{origin}: invalid snapshot:")
    return out


def _objects(s: _Sorted, nodes: tuple[Node, ...], pods: Sequence[Mapping[str, Any]]) -> Objects:
    groups = tuple(podgroup_from_object(obj, where) for where, obj in s.podgroups.values())
    cluster = Cluster(
        nodes=nodes,
        pods=tuple(pods),
        hypernodes=tuple(s.hypernodes),
        queues=s.queues,
        podgroups=groups,
    )
    return Objects(cluster, s.podgroups, tuple(s.jobs), tuple(s.configmaps))


def split(items: Iterable[Any], origin: str) -> Objects:
    """Every item of a snapshot, numbered as in the file; InputError lists every bad one."""
    s = _sort(items, origin)
    snap = snapshot_from_objects({"kind": "List", "items": s.core}, origin)
    return _objects(s, snap.nodes, s.pods)


def from_parts(
    nodes: tuple[Node, ...], pods: Sequence[Mapping[str, Any]], items: Iterable[Any], origin: str
) -> Objects:
    """The cluster's nodes (with usage) and pods, and its Volcano objects."""
    return _objects(_sort(items, origin), nodes, pods)
