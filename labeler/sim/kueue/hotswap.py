"""The hot-swap view: for every admitted TAS Workload, could Kueue replace each of its
nodes if that node alone failed now? (``audit``, its exporter and the map show it.)

Per node it is what Kueue's search (:mod:`labeler.sim.kueue.replace`) decides, computed the cheap
way: the domain the rule of :func:`labeler.core.hotswap.replacement_domain` confines it
to, and the free pod slots of the PodSet's shape there on the other nodes, after what
every admitted Workload holds. Without slices the search fits exactly when those slots add
up to the pods the node held (one domain of the level for a required request with nothing
left to stay near; preferred and unconstrained requests spread over the whole flavor), so
slots are summed once per shape and domain. With slices, a confined search runs Kueue's
placement on a copy of that domain, and a search over the whole flavor counts whole slices
per domain of the slice level. ``tests/sim/kueue/test_hotswap.py`` checks the verdicts against
the full search, node by node. A Workload with a failed node already, or whose assignment another
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
    HotSwapView,
    NodeSpare,
    Path,
    SwapState,
    WorkloadSpare,
    replacement_domain,
)
from labeler.sim.common.shape import PodShape
from labeler.sim.kueue.admitted import admitted_from_object, is_admitted, tas_flavor_names
from labeler.sim.kueue.assign import Mode
from labeler.sim.kueue.balanced import clone
from labeler.sim.kueue.failure import Admitted, AdmittedPodSet, node_failures
from labeler.sim.kueue.gates import (
    DEFAULT_GATES,
    FAIL_FAST,
    KUEUE_VERSION,
    REPLACEMENT,
    SKIP_POD_OWNED,
    Gates,
)
from labeler.sim.kueue.place import simulate
from labeler.sim.kueue.replace import leaf_id, recut_slices, search, without
from labeler.sim.kueue.tree import Domain, Tree, build_tree_for_levels, leaf_capacity
from labeler.sim.kueue.usage import TasFlavor, admitted_usage, sharing_usage, tas_flavor
from labeler.sim.kueue.workload import to_job, with_tolerations


@dataclass
class _Flavor:
    """One flavor's tree, the usage on it, and free pod slots per shape (cached)."""

    flavor: TasFlavor
    tree: Tree
    held: Mapping[str, Mapping[str, int]]
    index: dict[str, Domain]
    position: dict[str, int]  # leaf ID → its place in tree.leaves
    slots: dict[Any, tuple[tuple[int, ...], dict[Path, int]]] = field(default_factory=dict)

    def subtree(self, path: Path, without: str) -> Tree:
        """A copy of the domain ``path`` (and its ancestors, each with that one child),
        without the leaf ``without``: where a confined search runs."""
        domain = next(d for d in self.tree.levels[len(path) - 1] if d.values == path)
        top = clone(domain)
        for level in range(len(path) - 1, self.tree.depth - 1):
            for d in _at(top, level):
                d.children = [c for c in d.children if c.id != without]
        while domain.parent is not None:
            domain = domain.parent
            up = Domain(domain.values, None, None)
            up.children, top.parent = [top], up
            top = up
        levels = [_at(top, lv) for lv in range(self.tree.depth)]
        return Tree(self.tree.topology_name, self.tree.keys, levels, levels[-1], nodes=[])

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
    source = source or "free: nodes' allocatable minus what pods and admitted Workloads request"
    return HotSwapView(
        workloads=tuple(sorted(out, key=lambda w: (w.cluster_queue, w.key))),
        problems=tuple(problems),
        fail_fast=gates.on(FAIL_FAST),
        source=f"{source}; the rules of {KUEUE_VERSION}",
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
    held = admitted_usage(workloads, flavors=sharing_usage(objects, flavor)).by_leaf
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
        return WorkloadSpare(wl.namespace, wl.name, cq, flavor, SwapState.EXEMPT, note=exempt)
    failed = [f.node for f in node_failures(wl, nodes, (), {}, gates) if f.podsets]
    spares = [
        _node(ps, node, flavors[ps.flavor], gates, failed) for ps in wl.podsets for node in ps.nodes
    ]
    state = (
        SwapState.REPLACEABLE if all(s.replaceable for s in spares) else SwapState.NOT_REPLACEABLE
    )
    note = ""
    if failed:
        note = f"a node of its assignment has failed already ({', '.join(sorted(set(failed)))})"
    elif state == SwapState.NOT_REPLACEABLE and not gates.on(FAIL_FAST):
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
        return NodeSpare(node, podset.name, lost, (), "", 0, replaceable=False, reason=why)
    paths = [(state.index[leaf_id(tree, v)].values, n) for v, n in kept]
    required = keys.index(req.level) if req.mode == Mode.REQUIRED and req.level in keys else None
    if req.slices:
        return _sliced(ps, node, state, gates, paths, required, lost)
    domain = replacement_domain(required, (), paths, lost)
    if domain is None:  # the whole flavor: one domain of a required level, or anywhere
        return _whole_flavor_slices(ps, node, state, required, (tree.depth - 1, 1), lost)
    pods, totals = state.free(podset.shape)
    spare = totals.get(domain, 0)
    own = state.index.get(node)
    if own is not None and own.values[: len(domain)] == domain:
        spare -= pods[state.position[node]]  # the failed node takes no pod
    level = keys[len(domain) - 1] if domain else ""
    why = "" if spare >= lost else f"{spare} free pod slot(s) for {lost} pod(s)"
    return NodeSpare(
        node, podset.name, lost, domain, level, spare, replaceable=spare >= lost, reason=why
    )


def _sliced(
    ps: AdmittedPodSet,
    node: str,
    state: _Flavor,
    gates: Gates,
    paths: Sequence[tuple[Path, int]],
    required: int | None,
    lost: int,
) -> NodeSpare:
    """A PodSet with slices: Kueue's search itself, on the domain it is confined to (a
    copy of that subtree without the failed node), else slices counted over the flavor."""
    tree, podset = state.tree, ps.podset
    keys = list(tree.keys)
    layers = [(keys.index(k), size) for k, size in podset.request.slices if k in keys]
    domain = replacement_domain(required, layers, paths, lost)
    if domain is None and len(layers) > 1:  # inner layers round per domain: search it all
        alone = build_tree_for_levels(
            tree.keys,
            [n for n in tree.nodes if n.name != node],
            flavor_labels=state.flavor.node_labels,
            topology_name=tree.topology_name,
        )
        r = search(alone, podset, ps.assignment, node, state.held, gates)
        spare = sum(n for _, n in r.candidates)
        return NodeSpare(
            node, podset.name, lost, (), "", spare, replaceable=r.replaced, reason=r.message
        )
    if domain is None:
        return _whole_flavor_slices(ps, node, state, required, layers[0], lost)
    part = state.subtree(domain, node)
    capacity = leaf_capacity(part, podset.shape, used=state.held)
    job = to_job(recut_slices(podset, lost, domain), tree.keys)
    spare = sum(capacity.pods)
    level = keys[len(domain) - 1]
    if isinstance(job, str):
        return NodeSpare(
            node, podset.name, lost, domain, level, spare, replaceable=False, reason=job
        )
    out = simulate(part, capacity, job, gates)
    ok = out.fits and bool(out.assignment)
    why = "" if ok else f"{spare} free pod slot(s), not {lost} in whole slices"
    return NodeSpare(node, podset.name, lost, domain, level, spare, ok, why)


def _whole_flavor_slices(
    ps: AdmittedPodSet,
    node: str,
    state: _Flavor,
    required: int | None,
    layer: tuple[int, int],
    lost: int,
) -> NodeSpare:
    """Nothing to stay near (no slices, or whole slices lost): Kueue fits the pods where the
    flavor holds that many slices, each within one domain of the slice level (required: all
    in one domain of the required level; else spread over every domain)."""
    level, size = layer
    pods, _ = state.free(ps.podset.shape)
    per_domain: dict[Path, int] = {}
    for leaf, n in zip(state.tree.leaves, pods, strict=True):
        if n and leaf.id != node:
            key = leaf.values[: level + 1]
            per_domain[key] = per_domain.get(key, 0) + n
    at: dict[Path, int] = {}
    for key, n in per_domain.items():
        top = key[: required + 1] if required is not None else ()
        at[top] = at.get(top, 0) + n // size
    slices = max(at.values(), default=0)
    ok = slices * size >= lost
    if ok:
        why = ""
    elif size > 1:
        why = f"{slices} whole slice(s) of {size} free, not {lost // size}"
    else:
        where = " in one domain of the required level" if required is not None else ""
        why = f"{slices} free pod slot(s){where} for {lost} pod(s)"
    return NodeSpare(node, ps.podset.name, lost, (), "", slices * size, ok, why)


def with_flavor_tolerations(wl: Admitted, flavors: Mapping[str, _Flavor]) -> Admitted:
    """The Workload with each flavor's tolerations added to its PodSets (as Kueue does)."""
    podsets = tuple(
        replace(ps, podset=with_tolerations(ps.podset, flavors[ps.flavor].flavor.tolerations))
        for ps in wl.podsets
    )
    return replace(wl, podsets=podsets)


def _at(root: Domain, level: int) -> list[Domain]:
    """The domains of ``root``'s subtree at tree level ``level``."""
    found = [root]
    while found and found[0].level < level:
        found = [c for d in found for c in d.children]
    return found
