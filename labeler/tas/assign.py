"""Kueue Topology-Aware Scheduling placement for one PodSet, re-implemented from its rules.

The reference is kubernetes-sigs/kueue ``pkg/cache/scheduler/tas_flavor_snapshot.go``
(``findTopologyAssignment`` and the functions it calls) and KEP-2724 "Computing the
assignment". This module follows Kueue's default profile (``TASProfileMixed``, default since
v0.15): BestFit for required and preferred requests, LeastFreeCapacity for unconstrained
ones. Not modelled: leader/worker PodSet groups, balanced placement (alpha, off by
default), node replacement, preferred node affinity, elastic workloads.

Two phases, as in Kueue:

1. ``fill_counts`` — free pods and slices per domain, bottom-up.
2. ``find_level`` picks the domain(s) at the requested level (climbing for preferred), then
   ``descend`` splits the count level by level down to the nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from labeler.tas.tree import Capacity, Domain, ExclusionStats, Tree

REQUIRED = "required"
PREFERRED = "preferred"
UNCONSTRAINED = "unconstrained"


@dataclass(frozen=True)
class SliceLayer:
    """Each group of ``size`` pods must sit in one domain at tree level ``level``."""

    level: int
    size: int


@dataclass(frozen=True)
class Job:
    """One PodSet's topology request. ``level`` is a tree level index (0 = widest)."""

    count: int
    mode: str = UNCONSTRAINED
    level: int | None = None
    slices: tuple[SliceLayer, ...] = ()

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

    @property
    def total(self) -> int:
        return sum(a.count for a in self.assignment)


class _NoFit(Exception):
    """Internal: carries Kueue's failure reason out of the level search."""


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
    multiples of that next layer's size. Raises ``_NoFit`` with Kueue's wording when layers
    are out of order or sizes do not divide.
    """
    sizes: dict[int, int] = {}
    if len(layers) < 2:
        return sizes
    prev = layers[0]
    for layer in layers[1:]:
        if layer.level <= prev.level:
            raise _NoFit(
                f"additional slice layer topology {tree.keys[layer.level]} must be at a "
                f"lower level than {tree.keys[prev.level]}"
            )
        if prev.size % layer.size:
            raise _NoFit(
                f"additional slice layer size {layer.size} must evenly divide parent "
                f"layer size {prev.size}"
            )
        for lvl in range(prev.level + 1, layer.level + 1):
            sizes[lvl] = layer.size
        prev = layer
    return sizes


def fill_counts(
    tree: Tree, capacity: Capacity, slice_size: int, slice_level: int, inner: dict[int, int]
) -> None:
    """Phase 1 (``fillInCounts`` / ``fillInCountsHelper``): pods and slices per domain.

    A parent's pods are its children's, each rounded down to the inner slice size of the
    child's level when one applies; its slices are its children's slices, except at the
    slice level where they are recomputed as pods // slice size. Below the slice level
    slices are 0.
    """
    last = tree.depth - 1
    for leaf, pods in zip(tree.leaves, capacity.pods, strict=True):
        leaf.pods = pods
        leaf.slices = pods // slice_size if last == slice_level else 0
    for lvl in range(last - 1, -1, -1):
        size = inner.get(lvl + 1)
        for dom in tree.levels[lvl]:
            pods = 0
            slices = 0
            for child in dom.children:
                pods += (child.pods // size) * size if size else child.pods
                slices += child.slices
            dom.pods = pods
            dom.slices = pods // slice_size if lvl == slice_level else slices


def sorted_domains(domains: Sequence[Domain], least_free: bool) -> list[Domain]:
    """``sortedDomains``: BestFit = slices descending, LeastFreeCapacity = slices ascending;
    then pods ascending, then the level values lexicographically."""
    if least_free:
        return sorted(domains, key=lambda d: (d.slices, d.pods, d.values))
    return sorted(domains, key=lambda d: (-d.slices, d.pods, d.values))


def best_fit(domains: Sequence[Domain], needed: int, by_slices: bool) -> Domain:
    """``findBestFitDomainBy``: the first domain with the smallest count ≥ needed, else the
    first domain."""
    best: Domain | None = None
    best_count = 2**31
    for dom in domains:
        count = dom.slices if by_slices else dom.pods
        if needed <= count < best_count:
            best, best_count = dom, count
    return best if best is not None else domains[0]


def fill_to_minimum(
    domains: Sequence[Domain], count: int, slice_size: int, least_free: bool, by_slices: bool
) -> list[Domain]:
    """``updateCountsToMinimumGeneric`` without leaders: take domains in order, each as full
    as it can be, and with BestFit swap in the tightest domain that holds the remainder.

    Rewrites ``pods`` (and ``slices``) of the chosen domains to what they are assigned.
    """
    remaining = count // slice_size if by_slices else count
    chosen: list[Domain] = []
    for i, dom in enumerate(domains):
        have = dom.slices if by_slices else dom.pods
        if not least_free and have >= remaining:
            dom = best_fit(domains[i:], remaining, by_slices)
            have = dom.slices if by_slices else dom.pods
        chosen.append(dom)
        if have >= remaining:
            if by_slices:
                dom.pods = remaining * slice_size
                dom.slices = remaining
            else:
                dom.pods = remaining
            return chosen
        if by_slices:
            dom.pods = dom.slices * slice_size
        remaining -= have
    raise AssertionError(f"capacity was counted but cannot be assigned: {remaining} left")


def find_level(
    tree: Tree,
    level: int,
    job: Job,
    stats: ExclusionStats,
    *,
    required: bool,
    unconstrained: bool,
    multi_layer: bool,
) -> tuple[int, list[Domain], bool]:
    """``findLevelWithFitDomains``: the domain(s) at ``level`` that hold the job.

    BestFit: the domain with the most slices, or if it fits, the tightest one that fits.
    LeastFreeCapacity: the first fitting domain in ascending order. Required fails if no
    single domain fits; preferred climbs one level and retries; at the top (or when
    unconstrained) domains are taken greedily. Returns (level, domains, spread).
    """
    least_free = unconstrained
    need = job.count // job.slice_size
    while True:
        domains = tree.levels[level]
        if not domains:
            raise _NoFit(f"no topology domains at level: {tree.keys[level]}")
        ordered = sorted_domains(domains, least_free)
        top = ordered[0]
        if not least_free and top.slices >= need:
            top = best_fit(ordered, need, True)

        def fail(fit: int, at: int = level) -> _NoFit:
            if multi_layer:
                return _NoFit(multi_layer_message(tree, at, job, stats))
            return _NoFit(not_fit_message(tree.topology_name, fit, need, job.slice_size, stats))

        if least_free:
            for dom in ordered:
                if dom.slices >= need:
                    return level, [dom], False
            if required:  # unreachable with Kueue's profiles; kept for its message
                raise fail(ordered[-1].pods)
        if top.slices >= need:
            return level, [top], False
        if required:
            raise fail(top.slices)
        if level > 0 and not unconstrained:
            level -= 1
            continue
        chosen: list[Domain] = []
        remaining = need
        for i, dom in enumerate(ordered):
            if remaining <= 0:
                break
            if not least_free and dom.slices >= remaining:
                dom = best_fit(ordered[i:], remaining, True)
            chosen.append(dom)
            remaining -= dom.slices
        if remaining > 0:
            raise fail(need - remaining)
        return level, chosen, True


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


def descend(
    tree: Tree,
    chosen: list[Domain],
    fit_level: int,
    job: Job,
    slice_level: int,
    inner: dict[int, int],
    least_free: bool,
) -> list[Domain]:
    """Phase 2b of ``findTopologyAssignment``: from the chosen domains down to the nodes.

    Above the slice level the children of all chosen domains are pooled and filled greedily;
    from the slice level down each parent's count is split among its own children, in groups
    of the inner slice size where a layer asks for one (slice counts of the children are then
    recomputed for that size, after sorting, as Kueue does).
    """
    last = tree.depth - 1
    current = fill_to_minimum(chosen, job.count, job.slice_size, least_free, True)
    level = fit_level
    while level < min(last, slice_level):
        pooled = [c for d in current for c in d.children]
        current = fill_to_minimum(
            sorted_domains(pooled, least_free), job.count, job.slice_size, least_free, True
        )
        level += 1
    while level < last:
        size = inner.get(level + 1, 1)
        nxt: list[Domain] = []
        for dom in current:
            kids = sorted_domains(dom.children, least_free)
            if size > 1:
                for kid in kids:
                    kid.slices = kid.pods // size
            nxt += fill_to_minimum(kids, dom.pods, size, least_free, size > 1)
        current = nxt
        level += 1
    return current


def simulate(tree: Tree, capacity: Capacity, job: Job) -> Outcome:
    """Where Kueue would put the job's pods now, or Kueue's reason why it cannot."""
    last = tree.depth - 1
    required = job.mode == REQUIRED
    unconstrained = job.mode == UNCONSTRAINED
    if job.slices:
        slice_level, slice_size = job.slices[0].level, job.slices[0].size
    else:
        slice_level, slice_size = last, 1
    if job.mode in (REQUIRED, PREFERRED):
        if job.level is None:
            raise ValueError(f"a {job.mode} request needs a level")
        level = job.level
    else:
        # levelKey: a slice-only request is placed from the top; unconstrained from the nodes
        level = 0 if job.slices else last
    try:
        if level > slice_level:
            raise _NoFit(
                f"podset slice topology {tree.keys[slice_level]} is above the podset "
                f"topology {tree.keys[level]}"
            )
        inner = slice_sizes_at_levels(tree, job.slices)
        fill_counts(tree, capacity, slice_size, slice_level, inner)
        fit_level, chosen, spread = find_level(
            tree,
            level,
            job,
            capacity.stats,
            required=required,
            unconstrained=unconstrained,
            multi_layer=bool(inner),
        )
    except _NoFit as e:
        return Outcome(fits=False, message=str(e))
    leaves = descend(tree, chosen, fit_level, job, slice_level, inner, unconstrained)
    assignment = tuple(
        NodeAssignment(node=leaf.node.name, count=leaf.pods, values=leaf.values)
        for leaf in sorted(leaves, key=lambda d: d.values)
        if leaf.pods > 0 and leaf.node is not None
    )
    return Outcome(fits=True, message="", fit_level=fit_level, spread=spread, assignment=assignment)
