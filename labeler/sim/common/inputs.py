"""Where the simulator's nodes and pods come from: a snapshot file or the live cluster.

The simulator itself is pure; this is its only module that reads anything. The cluster
is read through :mod:`labeler.kube` (imported only when asked, so that a snapshot run
never loads the Kubernetes client).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import yaml

from labeler.base.errors import InputError, yaml_problem
from labeler.base.files import read_text
from labeler.core.capacity import Node, node_from_info
from labeler.core.node import TERMINATED_PHASES, NodeInfo
from labeler.sim.common import kubeyaml
from labeler.sim.common.cluster import (
    Snapshot,
    items_of,
    snapshot_from_objects,
    usage_by_node,
    with_pods,
)

# kubectl's YAML for 10,000 nodes and their pods is a few hundred MB.
MAX_SNAPSHOT_BYTES = 1 << 30


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector. A snapshot is a tree of a few million dicts,
    lists and strings without a reference cycle, freed by reference counting; the
    collector's passes over them, triggered by every few hundred allocations, were 40 %
    of reading one (bench/README.md)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_snapshot(path: str) -> Snapshot:
    """Read a snapshot file (YAML stream or JSON) into nodes with usage."""
    with no_cycle_collection():
        return snapshot_from_objects(load_snapshot(path), path)


def read_snapshot_objects(
    path: str, *, tas_pods_via_workloads: bool | None = None
) -> tuple[Snapshot, list[Any]]:
    """The snapshot and every object in it (PodGroups and pods too); for
    ``tas_pods_via_workloads`` see ``snapshot_from_objects``."""
    with no_cycle_collection():
        doc = load_snapshot(path)
        snap = snapshot_from_objects(doc, path, tas_pods_via_workloads=tas_pods_via_workloads)
        return snap, items_of(doc, path)


SNAPSHOT_HINT = "give the output of 'kubectl get nodes,pods -A -o yaml' (or -o json)"


def load_snapshot(path: str) -> Any:
    """A snapshot file (YAML stream or JSON) as parsed, every problem naming the file."""
    return load_file(path, what="snapshot", hint=SNAPSHOT_HINT)


def load_file(path: str, *, what: str, hint: str) -> Any:
    """A file of Kubernetes objects (YAML stream or JSON) as parsed; every problem names
    the file, says it is a ``what`` and ends with ``hint``."""
    text = read_text(path, MAX_SNAPSHOT_BYTES, what=what)
    try:
        if text.lstrip()[:1] in ("{", "["):
            doc: Any = json.loads(text)
        else:
            doc = kubeyaml.load(text, path)
    except RecursionError as e:
        raise InputError(f"{path}: nested too deeply to be a {what}; {hint}") from e
    except (json.JSONDecodeError, yaml.YAMLError) as e:
        where = yaml_problem(path, e) if isinstance(e, yaml.YAMLError) else f"{path}: {e}"
        raise InputError(f"{where}; not valid YAML/JSON: {hint}") from e
    return doc


def read_cluster(api: Any, *, skip_tas: bool = False, dra_drivers: Sequence[str] = ()) -> Snapshot:
    """Nodes, non-terminated pods and the ResourceSlices of ``dra_drivers`` from the API
    server (paginated LISTs); with ``skip_tas`` TAS pods are left to their Workloads'
    topology assignments."""
    return read_cluster_objects(api, skip_tas=skip_tas, dra_drivers=dra_drivers)[0]


def read_cluster_objects(
    api: Any, *, skip_tas: bool = False, dra_drivers: Sequence[str] = ()
) -> tuple[Snapshot, list[dict[str, Any]]]:
    """``read_cluster``, and the pods as read (each with its kind set)."""
    from labeler.kube.nodes import list_nodes

    infos, _ = list_nodes(api)
    snap, pods, problems = cluster_snapshot(api, infos, skip_tas=skip_tas, dra_drivers=dra_drivers)
    if problems:
        raise InputError(problems, heading="the cluster has nodes the simulator cannot read:")
    return snap, pods


def cluster_snapshot(
    api: Any, infos: Sequence[NodeInfo], *, skip_tas: bool = False, dra_drivers: Sequence[str] = ()
) -> tuple[Snapshot, list[dict[str, Any]], list[str]]:
    """The nodes already listed, with what the cluster's non-terminated pods use (one
    paginated LIST) and the ResourceSlices of ``dra_drivers``; the pods as read (each with
    its kind set); the problems of the nodes the simulator cannot read, which are left out."""
    from labeler.kube.pods import list_pods
    from labeler.kube.resourceslices import read_resource_slices

    pods = list_pods(api, field_selector=",".join(f"status.phase!={p}" for p in TERMINATED_PHASES))
    problems: list[str] = []
    nodes: list[Node] = []
    for info in infos:
        try:
            nodes.append(node_from_info(info, f"node {info.name}"))
        except InputError as e:
            problems.extend(e.problems)
    usage = usage_by_node(pods, skip_tas=skip_tas)
    slices = tuple(read_resource_slices(api, dra_drivers))
    snap = with_pods(nodes, pods, usage, slices)
    return snap, [{**p, "kind": "Pod"} for p in pods], problems
