"""Which TAS flavors Kueue tries for a Workload: LocalQueue → ClusterQueue → flavor order.

A Workload names its LocalQueue (``spec.queueName``; a Job, JobSet or LeaderWorkerSet the
label ``kueue.x-k8s.io/queue-name``; neither: the namespace's LocalQueue ``default`` when
there is one); the LocalQueue names its ClusterQueue; the ClusterQueue lists, per resource
group, its flavors in order. Kueue's flavor assigner walks the flavors of the groups that
cover the Workload's resources in that order and skips the ones that cannot take it
(``checkFlavorForPodSets``, ``checkPodSetAndFlavorMatchForTAS``): no topology, a requested
level missing from the flavor's Topology, a flavor taint the PodSet does not tolerate, a
nodeSelector or required affinity term that the flavor's node labels contradict (only the
terms on the flavor's own label keys count). ClusterQueue quota is not modelled: the
candidates are tried in order and the first on which every PodSet fits is Kueue's answer
(it moves to the next flavor, over scheduling cycles, when one does not fit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labeler.base.errors import InputError
from labeler.core.node import taints_of
from labeler.sim.common.affinity import NodeAffinity, Term
from labeler.sim.common.cluster import first_untolerated
from labeler.sim.common.fields import as_map
from labeler.sim.kueue.usage import TasFlavor, tas_flavor
from labeler.sim.kueue.workload import PodSet

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
DEFAULT_QUEUE = "default"


@dataclass(frozen=True)
class FlavorChoice:
    """The LocalQueue and ClusterQueue used, the flavors to try in order, and the ones
    skipped with Kueue's reason."""

    local_queue: str  # namespace/name
    cluster_queue: str
    candidates: tuple[TasFlavor, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    podset: str = ""  # the PodSet a skipped flavor could not take, for the message

    @property
    def message(self) -> str:
        """Kueue's pending message when no flavor can take the Workload (the flavor
        assigner's ``Status.Message``: its reasons sorted and joined with ", ")."""
        reasons = ", ".join(sorted(why for _, why in self.skipped)) or "no flavor"
        return f"couldn't assign flavors to pod set {self.podset}: {reasons}"


def queue_of(obj: Mapping[str, Any]) -> str | None:
    """The LocalQueue a Workload (or the job Kueue makes it from) names, if any."""
    if obj.get("kind") == "Workload":
        name = as_map(obj.get("spec")).get("queueName")
    else:
        name = as_map(as_map(obj.get("metadata")).get("labels")).get(QUEUE_LABEL)
    return str(name) if name else None


def _named(objects: Sequence[Mapping[str, Any]], kind: str) -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {}
    for o in objects:
        if o.get("kind") == kind:
            meta = as_map(o.get("metadata"))
            out[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = o
    return out


def choose_flavors(
    objects: Sequence[Mapping[str, Any]],
    obj: Mapping[str, Any],
    podsets: Sequence[PodSet],
    origin: str,
) -> FlavorChoice | None:
    """The flavors Kueue would try for ``podsets`` of ``obj``; None when the snapshot has
    no LocalQueue for it to follow (the caller falls back to the only TAS flavor)."""
    queues = _named(objects, "LocalQueue")
    ns = str(as_map(obj.get("metadata")).get("namespace") or "")
    name = queue_of(obj)
    if name is None and (ns, DEFAULT_QUEUE) in queues:
        name = DEFAULT_QUEUE
    if name is None or not queues:
        return None
    lq = queues.get((ns, name))
    if lq is None:
        raise InputError(
            f"{origin}: no LocalQueue {ns}/{name}, which the Workload names (add 'kubectl get "
            "localqueues -A -o yaml' to the snapshot, or give --flavor)"
        )
    cq_name = str(as_map(lq.get("spec")).get("clusterQueue") or "")
    cq = _named(objects, "ClusterQueue").get(("", cq_name))
    if cq is None:
        raise InputError(
            f"{origin}: LocalQueue {ns}/{name} points to ClusterQueue {cq_name!r}, which is "
            "not in the snapshot (add 'kubectl get clusterqueues -o yaml', or give --flavor)"
        )
    requested = {r for ps in podsets for r in ps.shape.requests}
    candidates: list[TasFlavor] = []
    skipped: list[tuple[str, str]] = []
    podset = podsets[0].name if podsets else ""
    for flavor in _flavor_order(cq, requested):
        why = _unfit(objects, flavor, podsets, origin)
        if isinstance(why, tuple):
            if not skipped:
                podset = why[0]
            skipped.append((flavor, why[1]))
        else:
            candidates.append(why)
    # No candidate: Kueue keeps the Workload pending with the reasons (FlavorChoice.message).
    return FlavorChoice(f"{ns}/{name}", cq_name, tuple(candidates), tuple(skipped), podset)


def _flavor_order(cq: Mapping[str, Any], requested: set[str]) -> list[str]:
    """The flavors of the resource groups covering a requested resource, in the
    ClusterQueue's order, each once."""
    out: list[str] = []
    for rg in as_map(cq.get("spec")).get("resourceGroups") or []:
        rg = as_map(rg)
        if not requested & {str(r) for r in rg.get("coveredResources") or []}:
            continue
        for f in rg.get("flavors") or []:
            name = str(as_map(f).get("name") or "")
            if name and name not in out:
                out.append(name)
    return out


def _unfit(
    objects: Sequence[Mapping[str, Any]], name: str, podsets: Sequence[PodSet], origin: str
) -> TasFlavor | tuple[str, str]:
    """The flavor, or the PodSet it cannot take and Kueue's reason why."""
    first = podsets[0].name if podsets else ""
    rf = _named(objects, "ResourceFlavor").get(("", name))
    if rf is None:
        return first, f"flavor {name} not found"
    spec = as_map(rf.get("spec"))
    if not spec.get("topologyName"):
        return first, f'Flavor "{name}" does not support TopologyAwareScheduling'
    try:
        flavor = tas_flavor(objects, name, origin)
    except InputError as e:
        return first, str(e)
    taints = taints_of({"taints": spec.get("nodeTaints")})
    for ps in podsets:
        req = ps.request
        if any(k not in flavor.levels for k in (req.level, *(k for k, _ in req.slices)) if k):
            return ps.name, f'Flavor "{name}" does not contain the requested level'
        taint = first_untolerated(taints, ps.shape.tolerations + flavor.tolerations)
        if taint is not None:
            return ps.name, f"untolerated taint {taint} in flavor {name}"
        if not _matches(ps, flavor.node_labels):
            return ps.name, f"flavor {name} doesn't match node affinity"
    return flavor


def _matches(ps: PodSet, labels: Mapping[str, str]) -> bool:
    """``flavorSelector``: the nodeSelector and required affinity, on the flavor's own
    label keys only, against its node labels (a term left empty matches every flavor)."""
    for k, v in ps.shape.node_selector.items():
        if k in labels and labels[k] != v:
            return False
    affinity = ps.shape.affinity
    if affinity is None:
        return True
    terms = []
    for term in affinity.terms:
        kept = tuple(r for r in term.expressions if r.key in labels)
        if not kept:
            return True
        terms.append(Term(kept))
    return NodeAffinity(tuple(terms)).matches("", labels)
