"""Kueue Topology-Aware Scheduling placement for one PodSet, re-implemented from its rules.

The reference is kubernetes-sigs/kueue ``pkg/cache/scheduler/tas_flavor_snapshot.go``
(``findTopologyAssignment`` and the functions it calls) and KEP-2724 "Computing the
assignment". This module follows Kueue's default profile (``TASProfileMixed``, default since
v0.15): BestFit for required and preferred requests, LeastFreeCapacity for unconstrained
ones. PodSet groups (a leader and its workers) use the leader-aware counts and orderings.

Two phases, as in Kueue:

1. ``fill_counts`` — free pods and slices per domain, bottom-up.
2. ``find_level`` picks the domain(s) at the requested level (climbing for preferred), then
   ``place.descend`` splits the count level by level down to the nodes (``place.simulate``
   runs both; ``balanced`` is the alternative to ``find_level`` with
   ``TASBalancedPlacement``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from labeler.sim.kueue.tree import Capacity, Domain, ExclusionStats, Tree


class Mode(StrEnum):
    """A PodSet's topology request: every pod within one domain of the level (required),
    as few domains as fit, climbing when one does not (preferred), or anywhere
    (unconstrained). The values are Kueue's ``topologyRequest`` fields."""

    REQUIRED = "required"
    PREFERRED = "preferred"
    UNCONSTRAINED = "unconstrained"


class Algorithm(StrEnum):
    """How domains are ordered and chosen. ``TASProfileMixed`` (Kueue's default) uses
    LeastFreeCapacity for unconstrained requests and BestFit for the others."""

    BEST_FIT = "BestFit"
    LEAST_FREE_CAPACITY = "LeastFreeCapacity"


class Unit(StrEnum):
    """What a domain's count is taken in: pods, or slices of the slice size."""

    PODS = "pods"
    SLICES = "slices"


# Compared per domain in the loops below: a module global costs a tenth of an enum's class
# attribute.
_SLICES = Unit.SLICES


@dataclass(frozen=True)
class SliceLayer:
    """Each group of ``size`` pods must sit in one domain at tree level ``level``."""

    level: int
    size: int


@dataclass(frozen=True)
class Job:
    """One PodSet's topology request. ``level`` is a tree level index (0 = widest)."""

    count: int
    mode: Mode = Mode.UNCONSTRAINED
    level: int | None = None
    slices: tuple[SliceLayer, ...] = ()
    leaders: int = 0  # 1 when placed together with a group's leader PodSet

    @property
    def slice_size(self) -> int:
        return self.slices[0].size if self.slices else 1


@dataclass(frozen=True)
class NodeAssignment:
    """Pods on one node, and the node's domain value at every level (widest first)."""

    node: str
    count: int
    values: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    """The verdict. ``fit_level`` is where the domains were chosen; ``spread`` means more
    than one domain at that level was needed."""

    fits: bool
    message: str
    fit_level: int | None = None
    spread: bool = False
    assignment: tuple[NodeAssignment, ...] = ()
    leader_assignment: tuple[NodeAssignment, ...] = ()
    balanced: bool = False  # placed by TASBalancedPlacement

    @property
    def total(self) -> int:
        return sum(a.count for a in self.assignment)


class NoFit(Exception):
    """Carries Kueue's failure reason out of the level search."""


def not_fit_message(
    topology: str, fit: int, total: int, slice_size: int, stats: ExclusionStats
) -> str:
    """Kueue's ``notFitMessage``, word for word, with the exclusion statistics appended."""
    unit = "pod" if slice_size == 1 else "slice"
    if fit == 0:
        text = f'topology "{topology}" doesn\'t allow to fit any of {total} {unit}(s)'
    else:
        text = f'topology "{topology}" allows to fit only {fit} out of {total} {unit}(s)'
    if stats.any:
        text += f". Total nodes: {stats.total_nodes}; excluded: {stats.reasons()}"
    return text


def slice_sizes_at_levels(tree: Tree, layers: Sequence[SliceLayer]) -> dict[int, int]:
    """Group size per level below the outermost slice layer (``buildSliceSizeAtLevel``).

    Every level from just under one layer down to the next layer's level distributes pods in
    multiples of that next layer's size. Raises ``NoFit`` with Kueue's wording when layers
    are out of order or sizes do not divide.
    """
    sizes: dict[int, int] = {}
    if len(layers) < 2:
        return sizes
    prev = layers[0]
    for layer in layers[1:]:
        if layer.level <= prev.level:
            raise NoFit(
                f"additional slice layer topology {tree.keys[layer.level]} must be at a "
                f"lower level than {tree.keys[prev.level]}"
            )
        if prev.size % layer.size:
            raise NoFit(
                f"additional slice layer size {layer.size} must evenly divide parent "
                f"layer size {prev.size}"
            )
        for lvl in range(prev.level + 1, layer.level + 1):
            sizes[lvl] = layer.size
        prev = layer
    return sizes


def fill_counts(
    tree: Tree,
    capacity: Capacity,
    slice_size: int,
    slice_level: int,
    inner: dict[int, int],
    leader_required: bool = False,
) -> None:
    """Phase 1 (``fillInCounts`` / ``fillInCountsHelper``): pods and slices per domain.

    A parent's pods are its children's, each rounded down to the inner slice size of the
    child's level when one applies; its slices are its children's slices, except at the
    slice level where they are recomputed as pods // slice size. Below the slice level
    slices are 0. With a leader, a parent holds the leader if any child does, and its
    counts with the leader lose the smallest loss among the children that can hold it.
    """
    last = tree.depth - 1
    for i, leaf in enumerate(tree.leaves):
        leaf.pods = capacity.pods[i]
        leaf.leaders, leaf.pods_wl = capacity.leader_at(i)
        if last == slice_level:
            leaf.slices = leaf.pods // slice_size
            leaf.slices_wl = leaf.pods_wl // slice_size
        else:
            leaf.slices = leaf.slices_wl = 0
    for lvl in range(last - 1, -1, -1):
        size = inner.get(lvl + 1)
        for dom in tree.levels[lvl]:
            pods = slices = leaders = 0
            loss_pods = loss_slices = None
            for child in dom.children:
                cp, cpw = child.pods, child.pods_wl
                if size:
                    cp, cpw = (cp // size) * size, (cpw // size) * size
                pods += cp
                slices += child.slices
                if not leader_required or child.leaders > 0:
                    lp, ls = cp - cpw, child.slices - child.slices_wl
                    loss_pods = lp if loss_pods is None else min(loss_pods, lp)
                    loss_slices = ls if loss_slices is None else min(loss_slices, ls)
                leaders = max(leaders, child.leaders)
            dom.pods = pods
            dom.leaders = leaders
            if loss_pods is not None and loss_slices is not None:
                dom.pods_wl = pods - loss_pods
                slices_wl = slices - loss_slices
            else:
                dom.pods_wl = slices_wl = 0
            if lvl == slice_level:
                slices, slices_wl = pods // slice_size, dom.pods_wl // slice_size
            dom.slices = slices
            dom.slices_wl = slices_wl


def sorted_domains(domains: Sequence[Domain], algorithm: Algorithm) -> list[Domain]:
    """``sortedDomains``: BestFit = slices descending, LeastFreeCapacity = slices ascending;
    then pods ascending, then the level values lexicographically."""
    if algorithm is Algorithm.LEAST_FREE_CAPACITY:
        return sorted(domains, key=lambda d: (d.slices, d.pods, d.values))
    return sorted(domains, key=lambda d: (-d.slices, d.pods, d.values))


def sorted_with_leader(domains: Sequence[Domain], algorithm: Algorithm) -> list[Domain]:
    """``sortedDomainsWithLeader``: domains holding the leader first, then as
    ``sorted_domains`` but by the counts with the leader. Without a leader it is the same
    order as ``sorted_domains``."""
    if algorithm is Algorithm.LEAST_FREE_CAPACITY:
        return sorted(domains, key=lambda d: (-d.leaders, d.slices_wl, d.pods_wl, d.values))
    return sorted(domains, key=lambda d: (-d.leaders, -d.slices_wl, d.pods_wl, d.values))


def _count(dom: Domain, unit: Unit, leaders: int) -> int:
    if leaders > 0:
        return dom.slices_wl if unit is _SLICES else dom.pods_wl
    return dom.slices if unit is _SLICES else dom.pods


def best_fit(domains: Sequence[Domain], needed: int, unit: Unit, leaders: int = 0) -> Domain:
    """``findBestFitDomainBy``: the first domain with the smallest count ≥ needed (with a
    leader: among those that hold it, by the counts with it), else the first domain."""
    best: Domain | None = None
    best_count = 2**31
    for dom in domains:
        if dom.leaders < leaders:
            continue
        count = _count(dom, unit, leaders)
        if needed <= count < best_count:
            best, best_count = dom, count
    return best if best is not None else domains[0]


def prioritize_leader(
    domains: list[Domain], count: int, leaders: int, slice_size: int, unit: Unit
) -> list[Domain]:
    """``prioritizeLeaderDomain``: move to the front the first domain that holds the leader
    and whose loss from hosting it still leaves room for the whole group."""
    if leaders == 0 or len(domains) < 2:
        return domains
    needed = count // slice_size if unit is Unit.SLICES else count
    available = sum(_count(d, unit, 0) for d in domains)
    for i, dom in enumerate(domains):
        if dom.leaders < leaders:
            continue
        loss = _count(dom, unit, 0) - _count(dom, unit, 1)
        if available - loss < needed:
            continue
        if i == 0:
            return domains
        return [dom, *domains[:i], *domains[i + 1 :]]
    return domains


def fill_to_minimum(
    domains: Sequence[Domain],
    count: int,
    slice_size: int,
    algorithm: Algorithm,
    unit: Unit,
    leaders: int = 0,
) -> list[Domain]:
    """``updateCountsToMinimumGeneric``: take domains in order, each as full as it can be,
    and with BestFit swap in the tightest domain that holds the remainder. While the leader
    is still to be placed, domains are taken by their counts with the leader.

    Rewrites ``pods`` (and ``slices``, ``leaders``) of the chosen domains to what they are
    assigned; ``pods`` counts workers only.
    """
    ordered = prioritize_leader(list(domains), count, leaders, slice_size, unit)
    by_slices = unit is Unit.SLICES
    best = algorithm is Algorithm.BEST_FIT
    step = slice_size if by_slices else 1
    remaining = count // slice_size if by_slices else count
    remaining_leaders = leaders
    chosen: list[Domain] = []
    for i, dom in enumerate(ordered):
        if remaining_leaders > 0:
            if best and _count(dom, unit, 1) >= remaining and dom.leaders >= remaining_leaders:
                dom = best_fit(ordered[i:], remaining, unit, remaining_leaders)
            have = _count(dom, unit, 1)
            chosen.append(dom)
            if have >= remaining and dom.leaders >= remaining_leaders:
                _assign(dom, remaining, step, unit)
                dom.leaders = remaining_leaders
                return chosen
            have = min(have, remaining)
            dom.leaders = min(dom.leaders, remaining_leaders)
            _assign(dom, have, step, unit)
            remaining_leaders -= dom.leaders
            remaining -= have
            continue
        have = _count(dom, unit, 0)
        if best and have >= remaining:
            dom = best_fit(ordered[i:], remaining, unit)
            have = _count(dom, unit, 0)
        dom.leaders = 0
        chosen.append(dom)
        if have >= remaining:
            _assign(dom, remaining, step, unit)
            return chosen
        if by_slices:
            dom.pods = dom.slices * slice_size
        remaining -= have
    raise AssertionError(f"capacity was counted but cannot be assigned: {remaining} left")


def _assign(dom: Domain, n: int, step: int, unit: Unit) -> None:
    if unit is Unit.SLICES:
        dom.slices = n
    dom.pods = n * step


@dataclass(frozen=True)
class LevelFit:
    """Where ``find_level`` put the job: the tree level the domains were chosen at, the
    domains, and whether more than one domain was needed there."""

    level: int
    domains: list[Domain]
    spread: bool


def find_level(
    tree: Tree, level: int, job: Job, stats: ExclusionStats, algorithm: Algorithm
) -> LevelFit:
    """``findLevelWithFitDomains``: the domain(s) at ``level`` that hold the job.

    BestFit: the domain with the most slices, or if it fits, the tightest one that fits.
    LeastFreeCapacity: the first fitting domain in ascending order. Required
    (``job.mode``) fails if no single domain fits; preferred climbs one level and
    retries; at the top (or when unconstrained) domains are taken greedily, the leader's
    first. With a leader, a domain fits only if it holds the leader too, counted with it.
    With more than one slice layer, a failure gives Kueue's per-layer message.
    """
    need = job.count // job.slice_size
    lead = job.leaders
    best = algorithm is Algorithm.BEST_FIT
    while True:
        domains = tree.levels[level]
        if not domains:
            raise NoFit(f"no topology domains at level: {tree.keys[level]}")
        ordered = sorted_with_leader(domains, algorithm)
        top = ordered[0]
        if best and top.slices_wl >= need and top.leaders >= lead:
            top = best_fit(ordered, need, Unit.SLICES, lead)

        def fail(fit: int, at: int = level) -> NoFit:
            if len(job.slices) > 1:
                return NoFit(multi_layer_message(tree, at, job, stats))
            return NoFit(not_fit_message(tree.topology_name, fit, need, job.slice_size, stats))

        if not best:
            for dom in ordered:
                if lead and dom.leaders < lead:
                    continue
                if _count(dom, _SLICES, lead) >= need:
                    return LevelFit(level, [dom], spread=False)
            if job.mode == Mode.REQUIRED:  # unreachable with Kueue's profiles; kept for its message
                raise fail(ordered[-1].pods)
        if top.slices_wl >= need and top.leaders >= lead:
            return LevelFit(level, [top], spread=False)
        if job.mode == Mode.REQUIRED:
            raise fail(top.slices)
        if level > 0 and job.mode != Mode.UNCONSTRAINED:
            level -= 1
            continue
        return LevelFit(level, _greedy(ordered, job, algorithm, fail), spread=True)


def _greedy(
    ordered: list[Domain], job: Job, algorithm: Algorithm, fail: Callable[[int], NoFit]
) -> list[Domain]:
    """At the top level, or for an unconstrained request: the leader's domains first, then
    the others in order, until the job's slices are held. Raises ``fail(fitted)``."""
    need = job.count // job.slice_size
    lead = job.leaders
    best = algorithm is Algorithm.BEST_FIT
    ordered = prioritize_leader(ordered, job.count, lead, job.slice_size, Unit.SLICES)
    chosen: list[Domain] = []
    remaining = need
    remaining_leaders = lead
    i = 0
    while remaining_leaders > 0 and i < len(ordered) and ordered[i].leaders > 0:
        dom = ordered[i]
        if best and dom.slices_wl >= remaining:
            dom = best_fit(ordered[i:], remaining, Unit.SLICES, remaining_leaders)
        chosen.append(dom)
        remaining_leaders -= dom.leaders
        remaining -= dom.slices_wl
        i += 1
    if remaining_leaders > 0:
        raise fail(lead - remaining_leaders)
    rest = sorted_domains(ordered[i:], algorithm)
    for j, dom in enumerate(rest):
        if remaining <= 0:
            break
        if best and dom.slices >= remaining:
            dom = best_fit(rest[j:], remaining, Unit.SLICES)
        chosen.append(dom)
        remaining -= dom.slices
    if remaining > 0:
        raise fail(need - remaining)
    return chosen


def multi_layer_message(tree: Tree, level: int, job: Job, stats: ExclusionStats) -> str:
    """``multiLayerNotFitMessage``: per layer, how many of its slices the best domain at
    ``level`` (most slices, then smallest ID) could hold."""
    text = f'topology "{tree.topology_name}" doesn\'t allow to fit'
    best: Domain | None = None
    for dom in tree.levels[level]:
        if (
            best is None
            or dom.slices > best.slices
            or (dom.slices == best.slices and dom.id < best.id)
        ):
            best = dom
    if best is None:
        return text
    for layer in job.slices:
        fit = _slices_in_subtree(best, layer.level, layer.size)
        text += f"; {fit}/{job.count // layer.size} slice(s) fit on level {tree.keys[layer.level]}"
    if stats.any:
        text += f". Total nodes: {stats.total_nodes}; excluded: {stats.reasons()}"
    return text


def _slices_in_subtree(dom: Domain, target: int, size: int) -> int:
    if dom.level == target:
        return dom.pods // size
    return sum(_slices_in_subtree(c, target, size) for c in dom.children)
