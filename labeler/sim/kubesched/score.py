"""Scores: which node a pod takes inside a placement, and which placement a group takes.

**Nodes.** Of the default profile's score plugins, the resource ones are modelled, weight 1
each, 0..100 and summed: NodeResourcesFit with its default LeastAllocated strategy over CPU
and memory, counting every pod on the node and the incoming one with the non-zero defaults
(a container without a CPU or memory request counts 100m / 200Mi: ``NonZeroRequested``), and
NodeResourcesBalancedAllocation over the same resources with what the pods really request
(``useRequested``), scoring how much the pod improves or worsens the node's balance (1.37's
``balancedResourceScorer``), skipped for a pod that requests neither. The highest sum wins;
kube-scheduler breaks ties at random, the simulator by node name. TaintToleration's
PreferNoSchedule count, preferred node affinity, pod topology spread and image locality are
not modelled: they change which node inside the chosen domain a pod gets, not the domain.

**Placements** (``findBestPlacement``; the default ``placementScore`` plugins, weight 1
each): PodGroupPodsCount (the group's scheduled pods plus those the placement would bind,
normalised so the largest is 100) plus NodeResourcesFit's placement score (MostAllocated
over the placement's nodes: what their pods request plus what the group would add, against
their allocatable, per resource 0..100, weighted by NodeResourcesFit's resource weights,
CPU and memory 1 by default; non-zero defaults as above). The highest total wins;
kube-scheduler breaks ties at random, the simulator takes the first domain in name order
and says it was a tie.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from labeler.core.capacity import Node
from labeler.sim.kubesched.objects import SCORED_RESOURCES as SCORED
from labeler.sim.kubesched.objects import GroupPod

MAX_SCORE = 100
DEFAULT_WEIGHTS: Mapping[str, int] = {"cpu": 1, "memory": 1}
"""NodeResourcesFit's default scoring resources (its args' ``scoringStrategy.resources``)."""
PODS_COUNT = "PodGroupPodsCount"
FIT = "NodeResourcesFit"


def _fraction_score(requested: int, capacity: int, *, most: bool) -> int:
    requested = min(requested, capacity)
    if most:
        return requested * MAX_SCORE // capacity
    return (capacity - requested) * MAX_SCORE // capacity


def _balance(fractions: Sequence[float]) -> int:
    """``balancedResourceScore``: (1 - the fractions' standard deviation) × 100."""
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_SCORE)


def _go_div(a: int, b: int) -> int:
    """Go's integer division (truncates towards zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def node_score(
    node: Node, requested: Mapping[str, int], free: Mapping[str, int], pod: GroupPod
) -> int:
    """LeastAllocated + BalancedAllocation for ``pod`` on ``node``: ``requested`` is what the
    node's pods request with the non-zero defaults, ``free`` what their real requests leave.

    BalancedAllocation (1.37, ``balancedResourceScorer``) scores the change the pod brings:
    50 + (50 + balance with the pod - balance without it) / 2, so a node the pod leaves as
    balanced as it was scores 75, whatever its balance."""
    least = weights = 0
    before: list[float] = []
    after: list[float] = []
    best_effort = not any(pod.shape.requests.get(r, 0) for r in SCORED)
    for res in SCORED:
        cap = node.allocatable.get(res, 0)
        if cap <= 0:
            continue
        least += _fraction_score(requested.get(res, 0) + pod.scored[res], cap, most=False)
        weights += 1
        if not best_effort:
            used = cap - free.get(res, 0)
            before.append(min(used / cap, 1.0))
            after.append(min((used + pod.shape.requests.get(res, 0)) / cap, 1.0))
    score = least // weights if weights else 0
    if best_effort or not after:
        return score
    return score + balanced_allocation(before, after)


def balanced_allocation(before: Sequence[float], after: Sequence[float]) -> int:
    """BalancedAllocation's score from the node's used fractions before and after the pod:
    50 + (50 + balance after - balance before) / 2, in Go's integer arithmetic."""
    half = MAX_SCORE // 2
    return half + _go_div(half + _balance(after) - _balance(before), 2)


def pods_count_scores(counts: Sequence[int]) -> list[int]:
    """PodGroupPodsCount, normalised: each count over the largest, 0..100."""
    top = max(counts, default=0)
    return [c * MAX_SCORE // top if top else 0 for c in counts]


def fit_placement_score(
    nodes: Iterable[Node],
    proposed: Iterable[tuple[GroupPod, str]],
    requested: Mapping[str, Mapping[str, int]],
    weights: Mapping[str, int] = DEFAULT_WEIGHTS,
) -> int:
    """NodeResourcesFit's placement score (MostAllocated) of one placement.

    ``requested`` is what each node's pods request now. A resource other than CPU and
    memory counts only when a proposed pod asks for it; one no node has is skipped.
    """
    want = dict.fromkeys(weights, 0)
    for pod, _node in proposed:
        for res in weights:
            want[res] += pod.scored[res] if res in SCORED else pod.shape.requests.get(res, 0)
    alloc = dict.fromkeys(weights, 0)
    for node in nodes:
        for res in weights:
            if res not in SCORED and want[res] == 0:
                continue
            alloc[res] += node.allocatable.get(res, 0)
            want[res] += requested.get(node.name, {}).get(res, 0)
    total = weight_sum = 0
    for res, weight in weights.items():
        if alloc[res] <= 0:
            continue
        total += _fraction_score(want[res], alloc[res], most=True) * weight
        weight_sum += weight
    return total // weight_sum if weight_sum else 0
