"""One PodSet's placement, end to end: counts, the level search, the descent to the nodes.

``simulate`` is Kueue's ``findTopologyAssignment``: phase 1 (``fill_counts``), phase 2a
(``find_level``, or with ``TASBalancedPlacement`` and a preferred request, the balanced
search of :mod:`labeler.sim.kueue.balanced`, falling back to the normal search when it finds
nothing), phase 2b (``descend``) and the assignment sorted by domain values.
"""

from __future__ import annotations

from labeler.sim.kueue.assign import (
    Algorithm,
    Job,
    Mode,
    NodeAssignment,
    NoFit,
    Outcome,
    Unit,
    fill_counts,
    fill_to_minimum,
    find_level,
    slice_sizes_at_levels,
    sorted_domains,
)
from labeler.sim.kueue.balanced import balanced_domains
from labeler.sim.kueue.gates import BALANCED, DEFAULT_GATES, PROFILE_MIXED, Gates
from labeler.sim.kueue.tree import Capacity, Domain, Tree


def descend(
    tree: Tree,
    chosen: list[Domain],
    fit_level: int,
    job: Job,
    slice_level: int,
    inner: dict[int, int],
    algorithm: Algorithm,
    *,
    pooled: bool = True,
) -> list[Domain]:
    """Phase 2b of ``findTopologyAssignment``: from the chosen domains down to the leaves.

    Above the slice level the children of all chosen domains are pooled and filled greedily
    (not after a balanced placement, ``pooled=False``); below, and from the slice level
    down, each parent's count (and its leader) is split among its own children, in groups
    of the slice size above the slice level and of the inner slice size where a layer asks
    for one (slice counts of the children are then recomputed for that size, after
    sorting, as Kueue does).
    """
    last = tree.depth - 1
    lead = job.leaders
    current = fill_to_minimum(chosen, job.count, job.slice_size, algorithm, Unit.SLICES, lead)
    level = fit_level
    while pooled and level < min(last, slice_level):
        children = sorted_domains([c for d in current for c in d.children], algorithm)
        current = fill_to_minimum(children, job.count, job.slice_size, algorithm, Unit.SLICES, lead)
        level += 1
    while level < last:
        size = job.slice_size if level < slice_level else inner.get(level + 1, 1)
        nxt: list[Domain] = []
        for dom in current:
            kids = sorted_domains(dom.children, algorithm)
            if size > 1:
                for kid in kids:
                    kid.slices = kid.pods // size
                    kid.slices_wl = kid.pods_wl // size
            unit = Unit.SLICES if size > 1 else Unit.PODS
            nxt += fill_to_minimum(kids, dom.pods, size, algorithm, unit, dom.leaders)
        current = nxt
        level += 1
    return current


def _leaf_assignment(leaf: Domain, count: int) -> NodeAssignment:
    # a node leaf is named by its node; a lowest-level domain has no single node
    name = leaf.node.name if leaf.node is not None else ""
    return NodeAssignment(node=name, count=count, values=leaf.values)


def simulate(tree: Tree, capacity: Capacity, job: Job, gates: Gates = DEFAULT_GATES) -> Outcome:
    """Where Kueue would put the job's pods now, or Kueue's reason why it cannot."""
    last = tree.depth - 1
    least_free = job.mode == Mode.UNCONSTRAINED and gates.on(PROFILE_MIXED)
    algorithm = Algorithm.LEAST_FREE_CAPACITY if least_free else Algorithm.BEST_FIT
    if job.slices:
        slice_level, slice_size = job.slices[0].level, job.slices[0].size
    else:
        slice_level, slice_size = last, 1
    if job.mode != Mode.UNCONSTRAINED:
        if job.level is None:
            raise ValueError(f"a {job.mode} request needs a level")
        level = job.level
    else:
        # levelKey: a slice-only request is placed from the top; unconstrained from the leaves
        level = 0 if job.slices else last
    balanced = None
    try:
        if level > slice_level:
            raise NoFit(
                f"podset slice topology {tree.keys[slice_level]} is above the podset "
                f"topology {tree.keys[level]}"
            )
        inner = slice_sizes_at_levels(tree, job.slices)
        fill_counts(tree, capacity, slice_size, slice_level, inner, job.leaders > 0)
        if gates.on(BALANCED) and job.mode == Mode.PREFERRED:
            balanced = balanced_domains(tree, job, level, slice_level)
        if balanced is not None:
            fit_level, chosen = balanced
        else:
            fit = find_level(tree, level, job, capacity.stats, algorithm)
            fit_level, chosen, spread = fit.level, fit.domains, fit.spread
    except NoFit as e:
        return Outcome(fits=False, message=str(e))
    pooled = balanced is None
    ends = descend(tree, chosen, fit_level, job, slice_level, inner, algorithm, pooled=pooled)
    leaves = sorted(ends, key=lambda d: d.values)
    assignment = tuple(_leaf_assignment(leaf, leaf.pods) for leaf in leaves if leaf.pods > 0)
    leader = tuple(_leaf_assignment(leaf, leaf.leaders) for leaf in leaves if leaf.leaders > 0)
    if balanced is not None:
        # the balanced domains share one parent; report them at the requested level
        fit_level = level
        spread = len({a.values[: level + 1] for a in assignment + leader}) > 1
    return Outcome(
        fits=True,
        message="",
        fit_level=fit_level,
        spread=spread,
        assignment=assignment,
        leader_assignment=leader,
        balanced=balanced is not None,
    )
