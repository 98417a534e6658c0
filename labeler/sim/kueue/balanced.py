"""Kueue's balanced placement (``TASBalancedPlacement``, alpha), for preferred requests.

Re-implemented from ``pkg/cache/scheduler/tas_balanced_placement.go``. Instead of filling
the fullest domains first, Kueue looks for the set of sibling domains at the requested
level that holds the job with the fewest domains, and spreads the slices evenly over
them: every chosen domain gets at least the *threshold* (the job's slices divided by the
number of domains the greedy fill would use, capped by the last such domain's capacity),
the leader's domain and then the others taking the rest.

1. ``best_domains``: for each parent one level up (or the whole top level), copy its
   children, prune every domain below the threshold, and keep the group with the highest
   threshold (then the fewest domains).
2. ``apply``: when the slices sit below the requested level, choose the requested-level
   domains first (``optimal_set``, a small dynamic programme: fewest domains, least spare
   capacity; domains with a leader, more capacity and evenly filled children first), then
   place the slices on their children (``place``); else place on the domains themselves.

Every failure falls back to the ordinary search (``None``). The work happens on copies of
the domains, so the tree's own counts stay as phase 1 left them for that fallback.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum
from functools import cmp_to_key

from labeler.sim.kueue.assign import Algorithm, Job, sorted_domains, sorted_with_leader
from labeler.sim.kueue.tree import Domain, Tree

Greedy = tuple[bool, int, Domain | None, Domain | None]
NO_SET = "TAS Balanced Placement: Cannot find optimal domain set to fit the request"


def greedy(domains: Sequence[Domain], slice_count: int, leaders: int) -> Greedy:
    """``evaluateGreedyAssignment``: does BestFit's greedy fill hold the request, with how
    many domains, and which were the last domain taken with and without the leader."""
    selected = 0
    remaining, remaining_leaders = slice_count, leaders
    last_leader: Domain | None = None
    last: Domain | None = None
    rest: list[Domain]
    if leaders > 0:
        ordered = sorted_with_leader(domains, Algorithm.BEST_FIT)
        i = 0
        while remaining_leaders > 0 and i < len(ordered) and ordered[i].leaders > 0:
            selected += 1
            last_leader = ordered[i]
            remaining_leaders -= ordered[i].leaders
            remaining -= ordered[i].slices_wl
            i += 1
        rest = sorted_domains(ordered[i:], Algorithm.BEST_FIT)
    else:
        rest = sorted_domains(domains, Algorithm.BEST_FIT)
    if remaining_leaders > 0:
        return False, 0, None, None
    for dom in rest:
        if remaining <= 0 or dom.slices <= 0:
            break
        selected += 1
        last = dom
        remaining -= dom.slices
    if remaining > 0:
        return False, 0, None, None
    return True, selected, last_leader, last


def threshold_value(
    slice_count: int, selected: int, last_leader: Domain | None, last: Domain | None
) -> int:
    """``balanceThresholdValue``: the most slices every chosen domain can get."""
    if selected == 0:
        return 0
    threshold = slice_count // selected
    if last_leader is not None:
        threshold = min(threshold, last_leader.slices_wl)
    if last is not None:
        threshold = min(threshold, last.slices)
    return threshold


def entropy(domains: Sequence[Domain]) -> float:
    """Shannon entropy (bits) of the pods over ``domains``: how evenly they are filled."""
    total = sum(d.pods for d in domains)
    if total == 0:
        return 0.0
    out = 0.0
    for d in domains:
        if d.pods > 0:
            p = d.pods / total
            out += -p * _log2(p)
    return out


def _log2(x: float) -> float:
    # Go's math.Log2: exact for powers of two, else Log(frac)/Ln2 + exp
    frac, exp = math.frexp(x)
    if frac == 0.5:
        return float(exp - 1)
    return math.log(frac) * (1 / math.log(2)) + exp


def _by_capacity_and_entropy(a: Domain, b: Domain) -> int:
    """``compareDomainCapacityAndEntropy``: leaders, then capacity with the leader, then
    the more evenly filled children, then the domain values."""
    if a.leaders != b.leaders:
        return b.leaders - a.leaders
    if a.slices_wl != b.slices_wl:
        return b.slices_wl - a.slices_wl
    ea, eb = entropy(a.children), entropy(b.children)
    if ea != eb:
        return 1 if eb > ea else -1
    return (a.values > b.values) - (a.values < b.values)


def by_capacity_and_entropy(domains: Sequence[Domain]) -> list[Domain]:
    return sorted(domains, key=cmp_to_key(_by_capacity_and_entropy))


class Order(StrEnum):
    """The order ``optimal_set`` tries domains in: by their level values, or (choosing the
    requested level's domains above the slices) by ``by_capacity_and_entropy``."""

    VALUES = "values"
    ENTROPY = "capacity-and-entropy"


def optimal_set(
    domains: Sequence[Domain], slice_count: int, leaders: int, slice_size: int, order: Order
) -> list[Domain] | None:
    """``selectOptimalDomainSetToFit``: the domains (as many as the greedy fill needs) that
    hold the leaders and the pods with the least capacity to spare; None when none do."""
    fits, size, _, _ = greedy(domains, slice_count, leaders)
    if not fits:
        return None
    if order is Order.ENTROPY:
        ordered = by_capacity_and_entropy(domains)
    else:
        ordered = sorted(domains, key=lambda d: d.values)
    # found[i][leaders left][pods left] = the first set of i domains that leaves them
    found: list[dict[int, dict[int, list[Domain]]]] = [{} for _ in range(size + 1)]
    found[0][leaders] = {slice_count * slice_size: []}
    for dom in ordered:
        for i in range(size, 0, -1):
            before = found[i - 1]
            for left in sorted(before):
                for pods in sorted(before[left]):
                    if left <= 0 and pods <= 0:
                        continue
                    chosen = [*before[left][pods], dom]
                    if left > 0 and dom.leaders > 0:
                        key = left - dom.leaders
                        found[i].setdefault(key, {}).setdefault(pods - dom.pods_wl, chosen)
                    if dom.slices > 0:
                        found[i].setdefault(left, {}).setdefault(pods - dom.pods, chosen)
    done = found[size].get(0, {})
    best = max((pods for pods in done if pods <= 0), default=None)
    return None if best is None else done[best]


def place(
    domains: Sequence[Domain], slice_count: int, leaders: int, slice_size: int, threshold: int
) -> tuple[list[Domain] | None, str]:
    """``placeSlicesOnDomainsBalanced``: ``threshold`` slices on each domain of the optimal
    set, the rest on the first ones (the leader's first), or Kueue's reason why not."""
    chosen = optimal_set(domains, slice_count, leaders, slice_size, Order.VALUES)
    if chosen is None:
        return None, NO_SET
    if slice_count < len(chosen) * threshold:
        return None, "TAS Balanced Placement: Not enough slices to meet the threshold"
    chosen = sorted_with_leader(chosen, Algorithm.BEST_FIT)
    extra = slice_count - len(chosen) * threshold
    leaders_left = leaders
    for dom in chosen:
        if leaders_left > 0:
            take = min(dom.slices_wl - threshold, extra)
            dom.leaders = 1
            leaders_left -= 1
        elif extra > 0:
            take = min(dom.slices - threshold, extra)
            dom.leaders = 0
        else:
            take = 0
            dom.leaders = 0
        dom.slices = dom.slices_wl = threshold + take
        dom.pods = dom.slices * slice_size
        dom.pods_wl = dom.pods - dom.leaders
        extra -= take
    if extra > 0 or leaders_left > 0:
        return None, "TAS Balanced Placement: Not all slices or leaders could be placed"
    return chosen, ""


def clone(dom: Domain, parent: Domain | None = None) -> Domain:
    """A copy of ``dom``'s subtree with its current counts (``cloneDomain``)."""
    out = Domain(dom.values, parent, dom.node)
    out.members = dom.members
    out.pods, out.slices, out.leaders = dom.pods, dom.slices, dom.leaders
    out.pods_wl, out.slices_wl = dom.pods_wl, dom.slices_wl
    out.children = [clone(c, out) for c in dom.children]
    return out


def _clear(dom: Domain, *, leader_only: bool) -> None:
    dom.pods_wl = dom.slices_wl = dom.leaders = 0
    if not leader_only:
        dom.pods = dom.slices = 0
    for child in dom.children:
        _clear(child, leader_only=leader_only)


def _prune_one(dom: Domain, threshold: int, leader_required: bool) -> None:
    if dom.slices < threshold:
        _clear(dom, leader_only=False)
    elif leader_required and dom.leaders > 0 and dom.slices_wl < threshold:
        # still usable for workers, but not as the leader's host at this threshold
        _clear(dom, leader_only=True)


def refill(dom: Domain, slice_size: int, slice_level: int, leader_required: bool) -> None:
    """``fillInCountsHelper`` on one subtree (no inner slice layers): a parent's counts
    from its children's, recomputed bottom-up."""
    if not dom.children:
        if dom.level == slice_level:
            dom.slices, dom.slices_wl = dom.pods // slice_size, dom.pods_wl // slice_size
        return
    pods = slices = leaders = 0
    loss_pods = loss_slices = None
    for child in dom.children:
        refill(child, slice_size, slice_level, leader_required)
        pods += child.pods
        slices += child.slices
        if not leader_required or child.leaders > 0:
            lp, ls = child.pods - child.pods_wl, child.slices - child.slices_wl
            loss_pods = lp if loss_pods is None else min(loss_pods, lp)
            loss_slices = ls if loss_slices is None else min(loss_slices, ls)
        leaders = max(leaders, child.leaders)
    dom.pods, dom.leaders = pods, leaders
    slices_wl = 0
    dom.pods_wl = 0
    if loss_pods is not None and loss_slices is not None:
        dom.pods_wl, slices_wl = pods - loss_pods, slices - loss_slices
    if dom.level == slice_level:
        slices, slices_wl = pods // slice_size, dom.pods_wl // slice_size
    dom.slices, dom.slices_wl = slices, slices_wl


def prune(
    domains: Sequence[Domain],
    threshold: int,
    slice_size: int,
    slice_level: int,
    leader_required: bool,
) -> None:
    """``pruneDomainsBelowThreshold``: drop the children (then the domains) that cannot take
    ``threshold`` slices, and recount the domains from what is left."""
    for dom in domains:
        for child in dom.children:
            _prune_one(child, threshold, leader_required)
    for dom in domains:
        refill(dom, slice_size, slice_level, leader_required)
        _prune_one(dom, threshold, leader_required)


def best_domains(tree: Tree, job: Job, level: int, slice_level: int) -> tuple[list[Domain], int]:
    """``findBestDomainsForBalancedPlacement``: the copied, pruned sibling domains at
    ``level`` with the highest threshold (then the fewest domains); threshold 0: none."""
    if level == 0:
        groups = [list(tree.levels[0])]
    else:
        parents = sorted(tree.levels[level - 1], key=lambda d: d.values)
        groups = [p.children for p in parents]
    best: list[Domain] = []
    best_threshold = best_count = 0
    for siblings in groups:
        found = _candidate(siblings, job, level, slice_level, best_threshold)
        if found is None:
            continue
        candidates, threshold, count = found
        if threshold > best_threshold or (threshold == best_threshold and count < best_count):
            best, best_threshold, best_count = candidates, threshold, count
    return best, best_threshold


def _candidate(
    siblings: Sequence[Domain], job: Job, level: int, slice_level: int, best: int
) -> tuple[list[Domain], int, int] | None:
    """One group of siblings at ``level``: its pruned copies, threshold and domain count,
    or None when the group cannot hold the job or cannot beat the ``best`` threshold."""
    slice_count = job.count // job.slice_size
    lead = job.leaders
    candidates = [clone(d) for d in siblings]
    lower = [c for d in candidates for c in d.children] if level < slice_level else candidates
    fits, selected, last_leader, last = greedy(lower, slice_count, lead)
    if not fits:
        return None
    threshold = threshold_value(slice_count, selected, last_leader, last)
    reserved = threshold
    if lead > 0 and last is not None:
        reserved = min(threshold, last.slices_wl)
    if threshold < best:
        return None
    prune(candidates, threshold, job.slice_size, slice_level, lead > 0)
    fits, count, _, _ = greedy(candidates, slice_count, lead)
    if not fits and reserved < threshold:
        # retry with a lower threshold that leaves room for the leader
        if reserved <= 0 or reserved < best:
            return None
        threshold = reserved
        candidates = [clone(d) for d in siblings]
        prune(candidates, threshold, job.slice_size, slice_level, lead > 0)
        fits, count, _, _ = greedy(candidates, slice_count, lead)
    return (candidates, threshold, count) if fits else None


def apply(
    domains: Sequence[Domain], job: Job, level: int, slice_level: int, threshold: int
) -> tuple[list[Domain] | None, int, str]:
    """``applyBalancedPlacementAlgorithm``: the domains to descend from and their level."""
    slice_count = job.count // job.slice_size
    chosen: Sequence[Domain] = domains
    fit_level = level
    if level < slice_level:
        top = optimal_set(domains, slice_count, job.leaders, job.slice_size, Order.ENTROPY)
        if top is None:
            return None, 0, NO_SET
        chosen = [c for d in top for c in d.children]
        fit_level = level + 1
    placed, reason = place(chosen, slice_count, job.leaders, job.slice_size, threshold)
    if placed is None:
        return None, 0, reason
    return placed, fit_level, ""


def balanced_domains(
    tree: Tree, job: Job, level: int, slice_level: int
) -> tuple[int, list[Domain]] | None:
    """Where the balanced placement starts its descent (level, domains), or None: the
    ordinary search decides (Kueue logs the reason and falls back to BestFit)."""
    candidates, threshold = best_domains(tree, job, level, slice_level)
    if threshold <= 0:
        return None
    placed, fit_level, _reason = apply(candidates, job, level, slice_level, threshold)
    if placed is None:
        return None
    return fit_level, placed
