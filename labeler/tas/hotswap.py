"""The hot-swap view: for every admitted TAS Workload, could Kueue replace each of its
nodes if that node alone failed now? (``audit``, its exporter and the map show it.)

Per node it is Kueue's own search (:mod:`labeler.tas.replace`): the domain the rule of
:func:`labeler.core.hotswap.replacement_domain` confines it to, and the free pod slots of
the PodSet's shape there on the other nodes, after what every admitted Workload holds. A
PodSet without slices fits exactly when those slots add up to the pods the node held (a
required level searches one domain; preferred and unconstrained requests climb to spread
over the whole flavor), so that is summed once per shape and domain; a PodSet with slices
runs the full search. A Workload with a failed node already, or whose assignment another
failure would leave stale, loses to a second failure (the node controller evicts it).
Workloads Kueue does not reassign (one Pod owns it, a topology without hostnames, the
replacement gate off) are ``exempt``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from labeler.base.errors import InputError
from labeler.core.capacity import Node
from labeler.core.hotswap import (
    EXEMPT,
    NOT_REPLACEABLE,
    REPLACEABLE,
    HotSwapView,
    NodeSpare,
    Path,
    WorkloadSpare,
    replacement_domain,
)
from labeler.tas.admitted import admitted_from_object, is_admitted, tas_flavor_names
from labeler.tas.assign import REQUIRED
from labeler.tas.failure import Admitted, AdmittedPodSet, node_failures
from labeler.tas.gates import (
    DEFAULT_GATES,
    FAIL_FAST,
    KUEUE_VERSION,
    REPLACEMENT,
    SKIP_POD_OWNED,
    Gates,
)
from labeler.tas.replace import leaf_id, search, without
from labeler.tas.tree import Domain, PodShape, Tree, build_tree_for_levels, leaf_capacity
from labeler.tas.usage import TasFlavor, admitted_usage, tas_flavor
from labeler.tas.workload import with_tolerations


@dataclass
class _Flavor:
    """One flavor's tree, the usage on it, and free pod slots per shape (cached)."""

    flavor: TasFlavor
    tree: Tree
    held: Mapping[str, Mapping[str, int]]
    index: dict[str, Domain]
    position: dict[str, int]  # leaf ID → its place in tree.leaves
    slots: dict[Any, tuple[tuple[int, ...], dict[Path, int]]] = field(default_factory=dict)

    def free(self, shape: PodShape) -> tuple[tuple[int, ...], dict[Path, int]]:
        """Per leaf, and summed per domain path (``()`` the whole flavor)."""
        key = (
            tuple(sorted(shape.requests.items())),
            shape.tolerations,
            tuple(sorted(shape.node_selector.items())),
            shape.affinity,
        )
        if key not in self.slots:
            pods = leaf_capacity(self.tree, shape, used=self.held).pods
            totals: dict[Path, int] = {}
            for leaf, n in zip(self.tree.leaves, pods, strict=True):
                if n:
                    for depth in range(len(leaf.values)):
                        path = leaf.values[:depth]
                        totals[path] = totals.get(path, 0) + n
            self.slots[key] = (pods, totals)
        return self.slots[key]


def hot_swap(
    nodes: Sequence[Node],
    objects: Sequence[Mapping[str, Any]],
    gates: Gates = DEFAULT_GATES,
    *,
    source: str = "",
) -> HotSwapView:
    """Judge every admitted TAS Workload in ``objects`` (Kueue's objects) on ``nodes``."""
    workloads = [o for o in objects if o.get("kind") == "Workload" and is_admitted(o)]
    names = tas_flavor_names(objects)
    flavors: dict[str, _Flavor | str] = {}
    by_name = {n.name: n for n in nodes}
    out: list[WorkloadSpare] = []
    problems: list[str] = []
    for obj in workloads:
        meta = obj.get("metadata") or {}
        where = f"Workload {meta.get('namespace')}/{meta.get('name')}"
        try:
            wl = admitted_from_object(obj, names, where)
        except InputError as e:
            problems.append(str(e))
            continue
        states: dict[str, _Flavor] = {}
        for ps in wl.podsets:
            state = flavors.get(ps.flavor)
            if state is None:
                state = flavors[ps.flavor] = _load(objects, ps.flavor, nodes, workloads)
            if isinstance(state, str):
                problems.append(f"{where}: {state}")
                break
            states[ps.flavor] = state
        else:
            out.append(_judge(with_flavor_tolerations(wl, states), states, by_name, gates))
    source = source or "nodes' allocatable minus what pods and admitted Workloads request"
    return HotSwapView(
        workloads=tuple(sorted(out, key=lambda w: (w.cluster_queue, w.key))),
        problems=tuple(problems),
        fail_fast=gates.on(FAIL_FAST),
        source=f"{source}; Kueue rules of {KUEUE_VERSION}",
    )


def _load(
    objects: Sequence[Mapping[str, Any]],
    name: str,
    nodes: Sequence[Node],
    workloads: Sequence[Mapping[str, Any]],
) -> _Flavor | str:
    try:
        flavor = tas_flavor(objects, name, "Kueue's objects")
    except InputError as e:
        return str(e)
    tree = build_tree_for_levels(
        flavor.levels, nodes, flavor_labels=flavor.node_labels, topology_name=flavor.topology
    )
    held = admitted_usage(workloads, flavor=name).by_leaf
    index = {leaf.id: leaf for leaf in tree.leaves}
    position = {leaf.id: i for i, leaf in enumerate(tree.leaves)}
    return _Flavor(flavor, tree, held, index, position)


def _judge(
    wl: Admitted, flavors: Mapping[str, _Flavor], nodes: Mapping[str, Node], gates: Gates
) -> WorkloadSpare:
    cq = wl.cluster_queue
    flavor = ", ".join(sorted({ps.flavor for ps in wl.podsets}))
    exempt = _exempt(wl, gates)
    if exempt:
        return WorkloadSpare(wl.namespace, wl.name, cq, flavor, EXEMPT, note=exempt)
    failed = [f.node for f in node_failures(wl, nodes, (), {}, gates) if f.podsets]
    spares = [
        _node(ps, node, flavors[ps.flavor], gates, failed) for ps in wl.podsets for node in ps.nodes
    ]
    state = REPLACEABLE if all(s.replaceable for s in spares) else NOT_REPLACEABLE
    note = ""
    if failed:
        note = f"a node of its assignment has failed already ({', '.join(sorted(set(failed)))})"
    elif state == NOT_REPLACEABLE and not gates.on(FAIL_FAST):
        note = "without fail-fast Kueue would keep it admitted, the failed node's pods lost"
    return WorkloadSpare(wl.namespace, wl.name, cq, flavor, state, tuple(spares), note)


def _exempt(wl: Admitted, gates: Gates) -> str:
    if not all(ps.by_hostname for ps in wl.podsets):
        return "its topology's lowest level is not the hostname: Kueue replaces no node"
    if not gates.on(REPLACEMENT):
        return f"{REPLACEMENT} is off: Kueue replaces no node"
    if wl.pod_owned and gates.on(SKIP_POD_OWNED):
        return f"owned by a single Pod ({SKIP_POD_OWNED}): Kueue keeps its assignment"
    return ""


def _node(
    ps: AdmittedPodSet, node: str, state: _Flavor, gates: Gates, failed: Sequence[str]
) -> NodeSpare:
    """Could Kueue replace ``node``'s pods of ``ps`` if it alone failed now?"""
    tree, podset = state.tree, ps.podset
    kept, lost = without(ps.assignment, node)
    keys = tree.keys
    others = [n for n in failed if n != node]
    stale = next((v[-1] for v, _ in kept if leaf_id(tree, v) not in state.index), None)
    req = podset.request
    if others or stale is not None:
        why = f"a second failure evicts it ({', '.join(others)} failed)" if others else ""
        why = why or f"its assignment would be stale: {stale} is gone"
        return NodeSpare(node, podset.name, lost, (), "", 0, False, why)
    if req.slices:  # the full search: slices are counted per domain
        r = search(tree, podset, ps.assignment, node, state.held, gates)
        level = keys[len(r.domain) - 1] if r.domain else ""
        spare = sum(n for _, n in r.candidates)
        return NodeSpare(
            node, podset.name, lost, r.domain or (), level, spare, r.replaced, r.message
        )
    paths = [(state.index[leaf_id(tree, v)].values, n) for v, n in kept]
    required = keys.index(req.level) if req.mode == REQUIRED and req.level in keys else None
    domain = replacement_domain(required, (), paths, lost) or ()
    pods, totals = state.free(podset.shape)
    spare = totals.get(domain, 0)
    own = state.index.get(node)
    if own is not None and own.values[: len(domain)] == domain:
        spare -= pods[state.position[node]]  # the failed node takes no pod
    level = keys[len(domain) - 1] if domain else ""
    why = "" if spare >= lost else f"{spare} free pod slot(s) for {lost} pod(s)"
    return NodeSpare(node, podset.name, lost, domain, level, spare, spare >= lost, why)


def with_flavor_tolerations(wl: Admitted, flavors: Mapping[str, _Flavor]) -> Admitted:
    """The Workload with each flavor's tolerations added to its PodSets (as Kueue does)."""
    podsets = tuple(
        replace(ps, podset=with_tolerations(ps.podset, flavors[ps.flavor].flavor.tolerations))
        for ps in wl.podsets
    )
    return replace(wl, podsets=podsets)
