"""Sort the objects of a snapshot (or the cluster) into what the Volcano simulator reads.

``kubectl get nodes,pods,hypernodes,queues,podgroups -A -o yaml`` gives one List; Nodes and
Pods become nodes with their usage (``labeler.tas.cluster``, the same accounting the map and
the Kueue advisor use), the rest is read by kind and API group. Two kinds share the name
PodGroup: only ``scheduling.volcano.sh`` ones are Volcano's (``scheduling.k8s.io`` is
kube-scheduler's gang API and is left alone here).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from labeler.base.errors import InputError
from labeler.tas.cluster import snapshot_from_objects
from labeler.tas.volcano.hypernodes import is_hypernode
from labeler.tas.volcano.model import PODGROUP_API, podgroup_from_object, queue_from_object
from labeler.tas.volcano.simulate import Cluster

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


def split(items: Iterable[Any], origin: str) -> Objects:
    """Every item, numbered as in the file; InputError lists every bad one."""
    core: list[Any] = []
    pods: list[Mapping[str, Any]] = []
    hypernodes: list[tuple[str, Mapping[str, Any]]] = []
    queues = {}
    podgroups: dict[str, tuple[str, Mapping[str, Any]]] = {}
    jobs: list[tuple[str, Mapping[str, Any]]] = []
    configmaps: list[tuple[str, Mapping[str, Any]]] = []
    problems: list[str] = []
    for i, item in enumerate(items):
        where = f"{origin}: items[{i}]"
        if not isinstance(item, Mapping):
            core.append(item)  # snapshot_from_objects names it
            continue
        kind = item.get("kind")
        try:
            if kind in ("Node", "Pod"):
                core.append(item)
                if kind == "Pod":
                    pods.append(item)
            elif is_hypernode(item):
                hypernodes.append((where, item))
            elif kind == "Queue" and api_group(item) == PODGROUP_API:
                q = queue_from_object(item, where)
                queues[q.name] = q
            elif is_volcano_podgroup(item):
                pg = podgroup_from_object(item, where)
                podgroups[pg.ref] = (where, item)
            elif is_volcano_job(item):
                jobs.append((where, item))
            elif kind == "ConfigMap":
                configmaps.append((where, item))
        except InputError as e:
            problems.extend(e.problems)
    if problems:
        raise InputError(problems, heading=f"{origin}: invalid snapshot:")
    snap = snapshot_from_objects({"kind": "List", "items": core}, origin)
    groups = tuple(podgroup_from_object(obj, where) for where, obj in podgroups.values())
    cluster = Cluster(
        nodes=snap.nodes,
        pods=tuple(pods),
        hypernodes=tuple(hypernodes),
        queues=queues,
        podgroups=groups,
    )
    return Objects(cluster, podgroups, tuple(jobs), tuple(configmaps))
