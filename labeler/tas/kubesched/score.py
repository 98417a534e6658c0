"""Scores: which node a pod takes inside a placement, and which placement a group takes.

**Nodes.** Of the default profile's score plugins, the resource ones are modelled:
NodeResourcesFit with its default LeastAllocated strategy and NodeResourcesBalancedAllocation,
both over CPU and memory with weight 1, each 0..100 and summed. The highest sum wins; kube-scheduler
breaks ties at random, the simulator by node name. TaintToleration's PreferNoSchedule count,
preferred node affinity, pod topology spread and image locality are not modelled: they
change which node inside the chosen domain a pod gets, not the domain.

**Placements** (``findBestPlacement``): every feasible placement gets PodGroupPodsCount
(the group's scheduled pods plus those the placement would bind, normalised so the
largest is 100) plus PlacementBinPacking (MostAllocated over the placement's nodes: what
their pods request plus what the group would add, against their allocatable, per resource
0..100, weighted; CPU and memory with weight 1 by default). Both count CPU and memory with
the scheduler's non-zero defaults. The highest total wins; kube-scheduler breaks ties at
random, the simulator takes the first domain in name order and says it was a tie.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from labeler.core.capacity import Node
from labeler.tas.kubesched.objects import SCORED_RESOURCES as SCORED
from labeler.tas.kubesched.objects import GroupPod

MAX_SCORE = 100
DEFAULT_WEIGHTS: Mapping[str, int] = {"cpu": 1, "memory": 1}
"""PlacementBinPacking's default scoring resources (MostAllocated)."""


def _fraction_score(requested: int, capacity: int, *, most: bool) -> int:
    requested = min(requested, capacity)
    if most:
        return requested * MAX_SCORE // capacity
    return (capacity - requested) * MAX_SCORE // capacity


def node_score(node: Node, requested: Mapping[str, int], pod: GroupPod) -> int:
    """LeastAllocated + BalancedAllocation for ``pod`` on ``node`` (``requested``: what the
    node's pods already request, CPU and memory as scoring counts them)."""
    least = weights = 0
    fractions: list[float] = []
    for res in SCORED:
        cap = node.allocatable.get(res, 0)
        if cap <= 0:
            continue
        want = requested.get(res, 0) + pod.scored[res]
        least += _fraction_score(want, cap, most=False)
        weights += 1
        fractions.append(min(want / cap, 1.0))
    if not weights:
        return 0
    spread = abs(fractions[0] - fractions[1]) / 2 if len(fractions) == 2 else 0.0
    return least // weights + int((1 - spread) * MAX_SCORE)


def pods_count_scores(counts: Sequence[int]) -> list[int]:
    """PodGroupPodsCount, normalised: each count over the largest, 0..100."""
    top = max(counts, default=0)
    return [c * MAX_SCORE // top if top else 0 for c in counts]


def bin_packing(
    nodes: Iterable[Node],
    proposed: Iterable[tuple[GroupPod, str]],
    requested: Mapping[str, Mapping[str, int]],
    weights: Mapping[str, int] = DEFAULT_WEIGHTS,
) -> int:
    """PlacementBinPacking (MostAllocated) of one placement.

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
