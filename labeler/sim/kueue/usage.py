"""Capacity held by admitted Workloads, and the Kueue Topology and ResourceFlavor in use.

Kueue's TAS cache subtracts, per leaf of a flavor's topology, what every admitted Workload
was assigned: for each PodSet assignment with a ``topologyAssignment``, each domain's pod
count times the PodSet's single-pod requests (from its template) plus one ``pods`` slot per
pod (``workload.totalRequestsFromAdmission``, ``ComputeUsagePerDomain``). Domains are keyed
by their values joined with ``,`` — the hostname alone when the lowest level is the
hostname — and an assignment to a leaf the flavor does not have is skipped, as Kueue does.
Pods of those Workloads carry the podset topology annotations and are left out of the
non-TAS usage so that nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any

from labeler.base.errors import InputError
from labeler.core.capacity import Node
from labeler.core.model import HOSTNAME_LABEL
from labeler.core.quantity import PODS
from labeler.sim.common.cluster import Toleration, pod_requests
from labeler.sim.common.fields import as_map
from labeler.sim.common.shape import toleration_from_dict


def _value(values: Mapping[str, Any], i: int) -> str:
    if values.get("universal") is not None:
        return str(values["universal"])
    ind = as_map(values.get("individual"))
    return f"{ind.get('prefix') or ''}{ind['roots'][i]}{ind.get('suffix') or ''}"


def assignment_domains(ta: Mapping[str, Any], where: str) -> list[tuple[tuple[str, ...], int]]:
    """(values, pod count) per domain of a ``topologyAssignment``.

    Reads both encodings: v1beta1 ``domains: [{values, count}]`` and the compressed v1beta2
    ``slices`` (per slice ``domainCount``, per level ``universal`` or ``individual``
    prefix/roots/suffix, ``podCounts`` universal or individual).
    """
    out: list[tuple[tuple[str, ...], int]] = []
    try:
        for d in ta.get("domains") or []:
            out.append((tuple(str(v) for v in d["values"]), int(d["count"])))
        for s in ta.get("slices") or []:
            levels = s.get("valuesPerLevel") or []
            counts = as_map(s.get("podCounts"))
            for i in range(int(s.get("domainCount") or 0)):
                values = tuple(_value(as_map(lv), i) for lv in levels)
                if counts.get("universal") is not None:
                    n = int(counts["universal"])
                else:
                    n = int(counts["individual"][i])
                out.append((values, n))
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise InputError(f"{where}: topologyAssignment is not in Kueue's format ({e!r})") from e
    return out


def is_finished(wl: Mapping[str, Any]) -> bool:
    for c in as_map(wl.get("status")).get("conditions") or []:
        if as_map(c).get("type") == "Finished" and as_map(c).get("status") == "True":
            return True
    return False


@dataclass(frozen=True)
class HeldUsage:
    """Resources held per leaf ID by admitted Workloads, and how many Workloads hold some."""

    by_leaf: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    workloads: int = 0


def admitted_usage(
    workloads: Iterable[Mapping[str, Any]],
    *,
    flavors: Set[str] | None = None,
    skip: tuple[str, str] | None = None,
) -> HeldUsage:
    """What admitted, unfinished Workloads hold. With ``flavors`` (``sharing_usage``), only
    PodSet assignments to those ResourceFlavors count; ``skip`` (namespace, name) leaves out
    the Workload being advised, whose own admission would otherwise count against itself."""
    by_leaf: dict[str, dict[str, int]] = {}
    holders = 0
    for i, wl in enumerate(workloads):
        meta = as_map(wl.get("metadata"))
        ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or f"#{i}")
        if skip is not None and (ns, name) == skip:
            continue
        admission = as_map(as_map(wl.get("status")).get("admission"))
        if not admission or is_finished(wl):
            continue
        templates = {
            str(as_map(ps).get("name")): as_map(ps).get("template")
            for ps in as_map(wl.get("spec")).get("podSets") or []
        }
        held = False
        for psa in admission.get("podSetAssignments") or []:
            psa = as_map(psa)
            ta = psa.get("topologyAssignment")
            if not isinstance(ta, Mapping):
                continue
            assigned = {str(v) for v in as_map(psa.get("flavors")).values()}
            if flavors is not None and assigned and not assigned & flavors:
                continue
            where = f"Workload {ns}/{name} podSet {psa.get('name')}"
            single = pod_requests(
                {"spec": as_map(as_map(templates.get(str(psa.get("name")))).get("spec"))}, where
            )
            for values, count in assignment_domains(ta, where):
                leaf = by_leaf.setdefault(",".join(values), {})
                for res, v in single.items():
                    leaf[res] = leaf.get(res, 0) + v * count
                leaf[PODS] = leaf.get(PODS, 0) + count
                held = True
        holders += held
    return HeldUsage(by_leaf=by_leaf, workloads=holders)


def with_held(nodes: Iterable[Node], held: HeldUsage) -> tuple[Node, ...]:
    """``nodes`` with what admitted Workloads hold on each added to its usage, for the views
    that place on nodes without a Workload's flavor (the flag form of ``advise``,
    ``domains``, the map). A node's leaf ID in a topology whose lowest level is the
    hostname is its hostname label; an assignment to a wider domain (a topology without
    hostnames) is no one node's and is left out. Not in ``resident``: on an empty cluster
    no Workload holds anything, as in Kueue's ``simulateEmpty``."""
    out = []
    for node in nodes:
        extra = held.by_leaf.get(node.labels.get(HOSTNAME_LABEL, ""))
        if extra:
            used = dict(node.used)
            for res, v in extra.items():
                used[res] = used.get(res, 0) + v
            node = replace(node, used=used)
        out.append(node)
    return tuple(out)


def _lowest_levels(objects: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each TAS ResourceFlavor's name → the lowest level of its Topology ("" if missing)."""
    lowest = {}
    for o in objects:
        if o.get("kind") == "Topology":
            levels = as_map(o.get("spec")).get("levels") or []
            last = as_map(levels[-1]).get("nodeLabel") if levels else ""
            lowest[str(as_map(o.get("metadata")).get("name"))] = str(last or "")
    out = {}
    for o in objects:
        spec = as_map(o.get("spec"))
        if o.get("kind") == "ResourceFlavor" and spec.get("topologyName"):
            name = str(as_map(o.get("metadata")).get("name"))
            out[name] = lowest.get(str(spec["topologyName"]), "")
    return out


def sharing_usage(objects: Sequence[Mapping[str, Any]], flavor: TasFlavor) -> frozenset[str]:
    """The TAS flavors whose admitted usage Kueue subtracts when it places in ``flavor``.

    Two flavors may cover the same nodes (another ClusterQueue's flavor with other node
    labels or tolerations). With ``TASHandleOverlappingFlavors`` (beta, on since Kueue 0.18)
    the scheduler's snapshot sums, per node, the usage of every TAS flavor whose topology's
    lowest level is the hostname (``Cache.snapshotTopologyDomainUsages``) and gives that sum
    to each such flavor; a flavor whose topology ends above the hostname keeps its own."""
    lowest = _lowest_levels(objects)
    if flavor.levels[-1] != HOSTNAME_LABEL:
        return frozenset({flavor.name})
    sharing = {name for name, last in lowest.items() if last == HOSTNAME_LABEL}
    return frozenset(sharing | {flavor.name})


@dataclass(frozen=True)
class TasFlavor:
    """A TAS ResourceFlavor and its Topology: what a Workload in that flavor is placed on."""

    name: str
    topology: str
    levels: tuple[str, ...]
    node_labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()


def tas_flavor(objects: Sequence[Mapping[str, Any]], name: str | None, origin: str) -> TasFlavor:
    """The ResourceFlavor ``name`` (or the only one with a ``topologyName``) and its
    Topology's levels, from Kueue objects read from the cluster or a snapshot."""
    flavors = {
        str(as_map(o.get("metadata")).get("name")): o
        for o in objects
        if o.get("kind") == "ResourceFlavor" and as_map(o.get("spec")).get("topologyName")
    }
    topologies = {
        str(as_map(o.get("metadata")).get("name")): o
        for o in objects
        if o.get("kind") == "Topology"
    }
    if name is None:
        if len(flavors) != 1:
            known = ", ".join(sorted(flavors)) or "none"
            raise InputError(
                f"{origin}: {len(flavors)} ResourceFlavor(s) with a topologyName ({known}); "
                "name one with --flavor"
                + ("" if flavors else ", or give --profile for a profile's topology")
            )
        name = next(iter(flavors))
    if name not in flavors:
        known = ", ".join(sorted(flavors)) or "none"
        raise InputError(f"{origin}: no TAS ResourceFlavor {name!r} (known: {known})")
    spec = as_map(flavors[name].get("spec"))
    topo_name = str(spec["topologyName"])
    topo = topologies.get(topo_name)
    if topo is None:
        raise InputError(
            f"{origin}: ResourceFlavor {name} names Topology {topo_name!r}, which is missing "
            "(add 'kubectl get topologies -o yaml' to the snapshot)"
        )
    levels = tuple(
        str(as_map(lv).get("nodeLabel")) for lv in as_map(topo.get("spec")).get("levels") or []
    )
    if not levels or "None" in levels:
        raise InputError(f"{origin}: Topology {topo_name} has no spec.levels[].nodeLabel")
    return TasFlavor(
        name=name,
        topology=topo_name,
        levels=levels,
        node_labels={str(k): str(v) for k, v in as_map(spec.get("nodeLabels")).items()},
        tolerations=tuple(
            toleration_from_dict(t, f"ResourceFlavor {name}: tolerations[{i}]")
            for i, t in enumerate(spec.get("tolerations") or [])
        ),
    )
