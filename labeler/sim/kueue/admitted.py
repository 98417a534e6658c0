"""An admitted Workload as the node-failure rules need it, read from its object.

From ``status.admission``: the ClusterQueue, and per PodSet its admitted count, its TAS
flavor (the one of ``flavors`` that has a topology) and its ``topologyAssignment`` (either
encoding); from the spec the PodSets' shapes and requests; ``status.unhealthyNodes``; and
whether a single Pod owns it (``workload.OwnedBySinglePod``: one owner reference, a v1 Pod,
and not a pod group).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from labeler.base.errors import InputError
from labeler.core.model import HOSTNAME_LABEL
from labeler.sim.common.cluster import Snapshot
from labeler.sim.common.fields import as_map
from labeler.sim.kueue.failure import (
    Admitted,
    AdmittedPodSet,
    FailureAnswer,
    FlavorState,
    failure_answer,
    node_failures,
)
from labeler.sim.kueue.gates import DEFAULT_GATES, Gates, Timing
from labeler.sim.kueue.usage import (
    admitted_usage,
    assignment_domains,
    is_finished,
    sharing_usage,
    tas_flavor,
)
from labeler.sim.kueue.workload import with_tolerations, workloads_from_object

GROUP_ANNOTATION = "kueue.x-k8s.io/is-group-workload"


def is_admitted(obj: Mapping[str, Any]) -> bool:
    """Admitted, not finished, and at least one PodSet with a topology assignment."""
    admission = as_map(as_map(obj.get("status")).get("admission"))
    if not admission or is_finished(obj):
        return False
    return any(
        isinstance(as_map(psa).get("topologyAssignment"), Mapping)
        for psa in admission.get("podSetAssignments") or []
    )


def assigned_nodes(obj: Mapping[str, Any], where: str) -> set[str]:
    """The nodes (hostname values) the Workload's topology assignments name."""
    admission = as_map(as_map(obj.get("status")).get("admission"))
    out: set[str] = set()
    for psa in admission.get("podSetAssignments") or []:
        ta = as_map(psa).get("topologyAssignment")
        if isinstance(ta, Mapping):
            out |= {values[-1] for values, _ in assignment_domains(ta, where) if values}
    return out


def require_admitted(obj: Mapping[str, Any], where: str) -> None:
    if not is_admitted(obj):
        meta = as_map(obj.get("metadata"))
        raise InputError(
            f"{where}: {obj.get('kind')} {meta.get('namespace')}/{meta.get('name')} is not an "
            "admitted Workload with a topology assignment (status.admission…"
            "topologyAssignment): nothing of it runs on a node that could fail; without "
            "--failed-node advise places it as Kueue would now"
        )


def pod_owned(obj: Mapping[str, Any]) -> bool:
    meta = as_map(obj.get("metadata"))
    refs = [r for r in meta.get("ownerReferences") or [] if isinstance(r, Mapping)]
    if len(refs) != 1 or as_map(meta.get("annotations")).get(GROUP_ANNOTATION) == "true":
        return False
    return refs[0].get("kind") == "Pod" and refs[0].get("apiVersion") == "v1"


def admitted_from_object(
    obj: Mapping[str, Any], tas_flavors: Collection[str], where: str
) -> Admitted:
    """The admitted Workload ``obj``; ``tas_flavors`` names the ResourceFlavors with a
    topology."""
    require_admitted(obj, where)
    meta = as_map(obj.get("metadata"))
    ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    status = as_map(obj.get("status"))
    admission = as_map(status.get("admission"))
    specs = {ps.name: ps for ps in workloads_from_object(obj, where)[0].podsets}
    podsets: list[AdmittedPodSet] = []
    for i, raw in enumerate(admission.get("podSetAssignments") or []):
        psa = as_map(raw)
        ta = psa.get("topologyAssignment")
        ps_name = str(psa.get("name") or "main")
        if not isinstance(ta, Mapping) or ps_name not in specs:
            continue
        at = f"{where}: status.admission.podSetAssignments[{i}]"
        flavors = [str(v) for v in as_map(psa.get("flavors")).values()]
        flavor = next((f for f in flavors if f in tas_flavors), None)
        if flavor is None:
            raise InputError(
                f"{at}: none of its flavors ({', '.join(sorted(set(flavors))) or 'none'}) is a "
                "ResourceFlavor with a topologyName in the snapshot (add 'kubectl get "
                "resourceflavors,topologies -o yaml')"
            )
        levels = [str(x) for x in ta.get("levels") or []]
        spec = specs[ps_name]
        count = psa.get("count")
        podset = replace(spec, count=count if isinstance(count, int) else spec.count)
        podsets.append(
            AdmittedPodSet(
                podset=podset,
                flavor=flavor,
                assignment=tuple(assignment_domains(ta, at)),
                by_hostname=bool(levels) and levels[-1] == HOSTNAME_LABEL,
            )
        )
    unhealthy = tuple(
        str(as_map(u).get("name"))
        for u in status.get("unhealthyNodes") or []
        if as_map(u).get("name")
    )
    return Admitted(
        namespace=ns,
        name=name,
        cluster_queue=str(admission.get("clusterQueue") or ""),
        podsets=tuple(podsets),
        unhealthy=unhealthy,
        pod_owned=pod_owned(obj),
    )


def tas_flavor_names(objects: Sequence[Mapping[str, Any]]) -> set[str]:
    """The ResourceFlavors that name a Topology."""
    return {
        str(as_map(o.get("metadata")).get("name"))
        for o in objects
        if o.get("kind") == "ResourceFlavor" and as_map(o.get("spec")).get("topologyName")
    }


def what_if(
    snap: Snapshot,
    obj: Mapping[str, Any],
    failed: Sequence[str] = (),
    gates: Gates = DEFAULT_GATES,
    *,
    timing: Timing,
    origin: str = "snapshot",
) -> FailureAnswer:
    """What Kueue does to the admitted Workload ``obj`` of ``snap`` when ``failed`` nodes
    fail too (they are gone: out of every flavor's topology), as they fail in ``timing``."""
    objects = list(snap.kueue)
    where = f"{origin}: Workload"
    wl = admitted_from_object(obj, tas_flavor_names(objects), where)
    gone = set(failed)
    alive = [n for n in snap.nodes if n.name not in gone]
    if timing is Timing.ONE_BY_ONE:
        alive = list(snap.nodes)
    workloads = [o for o in objects if o.get("kind") == "Workload"]
    flavors: dict[str, FlavorState] = {}
    podsets = []
    for ps in wl.podsets:
        if ps.flavor not in flavors:
            flavor = tas_flavor(objects, ps.flavor, origin)
            held = admitted_usage(workloads, flavors=sharing_usage(objects, flavor)).by_leaf
            flavors[ps.flavor] = FlavorState(flavor, alive, held)
        tolerations = flavors[ps.flavor].flavor.tolerations
        podsets.append(replace(ps, podset=with_tolerations(ps.podset, tolerations)))
    wl = replace(wl, podsets=tuple(podsets))
    nodes = {n.name: n for n in snap.nodes if n.name not in gone}
    running = snap.running.get((wl.namespace, wl.name), {})
    failures = node_failures(wl, nodes, failed, running, gates)
    return failure_answer(wl, failures, flavors, gates, timing=timing)
