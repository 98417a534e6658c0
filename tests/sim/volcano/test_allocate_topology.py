"""Volcano's ``TestAllocateWithNetWorkTopologies`` (actions/allocate/allocate_test.go), as ours.

The same situations and expected bindings, in our words: four (or eight) 2-CPU nodes, two
per tier-1 HyperNode, every pod asking 2 CPUs, a session with gang, predicates and
network-topology-aware. Where Volcano's test checks only how many pods were bound, so do
we (ties between nodes are broken at random there). Two fixtures of the upstream table are
written as they mean rather than as typed: its first cases list HyperNodes only by tier
(no objects, which leaves the session with the cluster top alone; with the objects the
answer is the same), and its highestTierName cases name two HyperNode objects "s1".
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sim.volcano.objects import (
    binds_as,
    member,
    podgroup,
    selector_cluster,
    three_tiers,
    two_racks,
)

ROLES = ("master", "worker", "worker")
TASK, JOB, TOPMOST = "volcano.sh/task-spec", "volcano.sh/job-spec", "volcano.sh/hypernode-spec"
NAMED = {1: TASK, 2: JOB, 3: TOPMOST}  # tier → tierName


def pending(n: int) -> list[dict[str, Any]]:
    return [member(f"p{i + 1}", ROLES[i]).obj() for i in range(n)]


def running_in(nodes: tuple[str, str], *, pending_too: int = 1) -> list[dict[str, Any]]:
    """p1, p2 running on ``nodes`` (filling them), then pending pods."""
    out = [
        member("p1", "master").on(nodes[0]).phase("Running").obj(),
        member("p2", "worker").on(nodes[1]).phase("Running").obj(),
    ]
    out += [member(f"p{3 + i}", "worker").obj() for i in range(pending_too)]
    return out


def racks(*, names: bool = False) -> list[dict[str, Any]]:
    return two_racks(tier_names=NAMED if names else None)


def master_with_selector() -> dict[str, Any]:
    return member("p1", "master").node_selector({"nodeRole": "master"}).obj()


def only_racks_without_parent(*, names: bool = False) -> list[dict[str, Any]]:
    return [x for x in racks(names=names) if x["metadata"]["name"] != "s2"]


CASES: list[tuple[str, list[dict[str, Any]], int | dict[str, str]]] = [
    ("soft: enough resources, the whole gang is bound",
     [podgroup(3, mode="soft", tier=0), *pending(3), *racks()], 3),
    ("soft: minAvailable below the replicas, every pod still bound",
     [podgroup(1, mode="soft", tier=0), *pending(2), *racks()], 2),
    ("soft: of two HyperNodes, the one whose node matches the nodeSelector",
     [podgroup(1, mode="soft", tier=0), master_with_selector(), *selector_cluster()],
     {"c1/p1": "s1-n2"}),
    ("soft: a job running in a full HyperNode places its new pod in the other",
     [podgroup(2, mode="soft", tier=0), *running_in(("s0-n1", "s0-n2")), *racks()], 1),
    ("soft: the same with minAvailable equal to the replicas",
     [podgroup(3, mode="soft", tier=0), *running_in(("s0-n1", "s0-n2")), *racks()], 1),
    ("soft: three tiers, the running HyperNode is full, the pod goes beyond it",
     [podgroup(2, mode="soft", tier=0), *running_in(("s3-n1", "s3-n2")), *three_tiers()], 1),
    ("hard tier 1: three pods never fit a two-node HyperNode",
     [podgroup(3, mode="hard", tier=1), *pending(3), *racks()], 0),
    ("hard tier 2: the tier-2 HyperNode holds the gang",
     [podgroup(3, mode="hard", tier=2), *pending(3), *racks()], 3),
    ("hard tier 1: two pods fit either tier-1 HyperNode",
     [podgroup(2, mode="hard", tier=1), *pending(2), *racks()], 2),
    ("hard tier 1: minAvailable below the replicas",
     [podgroup(1, mode="hard", tier=1), *pending(2), *racks()], 2),
    ("hard tier 1: of two HyperNodes, the one whose node matches the nodeSelector",
     [podgroup(1, mode="hard", tier=1), master_with_selector(), *selector_cluster()],
     {"c1/p1": "s1-n2"}),
    ("hard tier 2: running in a full HyperNode, the new pod goes to its sibling",
     [podgroup(2, mode="hard", tier=2), *running_in(("s0-n1", "s0-n2")), *racks()], 1),
    ("hard tier 2: the same with minAvailable equal to the replicas",
     [podgroup(3, mode="hard", tier=2), *running_in(("s0-n1", "s0-n2")), *racks()], 1),
    ("hard tier 2: three tiers, the sibling under the same tier-2 HyperNode",
     [podgroup(2, mode="hard", tier=2), *running_in(("s3-n1", "s3-n2")), *three_tiers()], 1),
    ("hard tier 1: running in a full tier-1 HyperNode, no room left inside it",
     [podgroup(2, mode="hard", tier=1), *running_in(("s0-n1", "s0-n2")), *racks()], 0),
    ("hard tier 1: three tiers, the running tier-1 HyperNode is full",
     [podgroup(2, mode="hard", tier=1), *running_in(("s3-n1", "s3-n2")), *three_tiers()], 0),
    ("hard tier 2 with only tier-1 HyperNodes: the cluster top (tier 2) is allowed",
     [podgroup(2, mode="hard", tier=2), *running_in(("s0-n1", "s0-n2")),
      *only_racks_without_parent()], 1),
    ("highestTierName of tier 1: three pods never fit",
     [podgroup(3, mode="hard", tier_name=TASK), *pending(3), *racks(names=True)], 0),
    ("highestTierName of tier 2: the gang fits there",
     [podgroup(3, mode="hard", tier_name=JOB), *pending(3), *racks(names=True)], 3),
    ("highestTierName of tier 1: two pods fit",
     [podgroup(2, mode="hard", tier_name=TASK), *pending(2), *racks(names=True)], 2),
    ("highestTierName of tier 2: running in a full HyperNode, the new pod in its sibling",
     [podgroup(2, mode="hard", tier_name=JOB), *running_in(("s0-n1", "s0-n2")),
      *racks(names=True)], 1),
    ("highestTierName of tier 2: the same with minAvailable equal to the replicas",
     [podgroup(3, mode="hard", tier_name=JOB), *running_in(("s0-n1", "s0-n2")),
      *racks(names=True)], 1),
    ("highestTierName of tier 2, three tiers; the running pods are on nodes the cluster lacks",
     [podgroup(2, mode="hard", tier_name=JOB), *running_in(("s0-n1", "s0-n2")),
      *three_tiers(tier_names=NAMED)], 1),
    ("highestTierName of tier 1: running in a full HyperNode, nothing fits",
     [podgroup(2, mode="hard", tier_name=TASK), *running_in(("s0-n1", "s0-n2")),
      *racks(names=True)], 0),
    ("highestTierName no HyperNode carries: the bound is dropped and the pod is placed",
     [podgroup(2, mode="hard", tier_name="volcano.sh/hypercluster"),
      *running_in(("s0-n1", "s0-n2")), *only_racks_without_parent(names=True)], 1),
]  # fmt: skip


@pytest.mark.parametrize(("items", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_allocate_with_network_topologies(
    items: list[dict[str, Any]], expected: int | dict[str, str]
) -> None:
    binds_as(items, expected)
