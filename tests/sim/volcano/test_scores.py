"""Which node (and HyperNode) Volcano picks among those that fit: binpack, nodeorder and
network-topology-aware's scores. The first two cases are Volcano's own
``TestNodeLevelScoreWithNetWorkTopologies`` and ``TestHyperNodeBinpackWithNetWorkTopologies``
(allocate_test.go), in our words."""

from __future__ import annotations

from collections import Counter

from labeler.sim.volcano.conf import parse_conf
from tests.builders import node
from tests.sim.volcano.objects import bound, host, hypernode, member, podgroup, queue, simulate

BINPACK_NTA = parse_conf(
    """
actions: "allocate"
tiers:
- plugins:
  - name: gang
  - name: predicates
  - name: binpack
  - name: network-topology-aware
""",
    "test",
)
NTA = parse_conf(
    "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n"
    "  - name: network-topology-aware\n",
    "test",
)


def two_sized_racks() -> list[dict]:
    """s0, s1: a 4-CPU and an 8-CPU node each, under s2."""
    return [
        host("s0-n1", cpu="4", memory="8Gi").obj(),
        host("s0-n2", cpu="8", memory="16Gi").obj(),
        host("s1-n3", cpu="4", memory="8Gi").obj(),
        host("s1-n4", cpu="8", memory="16Gi").obj(),
        hypernode("s0", 1, nodes=("s0-n1", "s0-n2")),
        hypernode("s1", 1, nodes=("s1-n3", "s1-n4")),
        hypernode("s2", 2, children=("s0", "s1")),
    ]


def test_binpack_puts_the_gang_on_the_nodes_already_in_use() -> None:
    """Another job's pods half-fill s0's nodes: binpack scores them highest, and the
    HyperNode binpack of network-topology-aware prefers s0 for the whole gang."""
    items = [
        podgroup(2, mode="hard", tier=1),
        member("p1", "master", memory="4Gi").obj(),
        member("p2", "worker", cpu="4", memory="8Gi").obj(),
        podgroup(2, name="pg2", phase="Running"),
        member("p3", "master", group="pg2", memory="4Gi").on("s0-n1").phase("Running").obj(),
        member("p4", "worker", group="pg2", cpu="4", memory="8Gi")
        .on("s0-n2")
        .phase("Running")
        .obj(),
        *two_sized_racks(),
        queue(),
    ]
    assert bound(simulate(items, BINPACK_NTA)) == {"c1/p1": "s0-n1", "c1/p2": "s0-n2"}


def test_pods_follow_the_hypernode_the_job_already_uses() -> None:
    """Four 4-CPU pods, three two-node tier-1 HyperNodes under one tier-2: no tier-1 one
    holds the gang, so it goes to the tier-2; inside it each pod prefers nodes whose
    HyperNode is closest to where the job's pods already are, then where more of them are:
    two HyperNodes take two pods each."""
    items = [podgroup(4, mode="hard", tier=2), queue()]
    items += [
        member(f"p{i}", "master" if i == 1 else "worker", cpu="4", memory="8Gi").obj()
        for i in range(1, 5)
    ]
    for hn in ("s0", "s1", "s2"):
        names = (f"{hn}-a", f"{hn}-b")
        items += [host(n, cpu="4", memory="8Gi").obj() for n in names] + [
            hypernode(hn, 1, nodes=names)
        ]
    items.append(hypernode("s3", 2, children=("s0", "s1", "s2")))
    verdict = simulate(items, NTA)
    assert sorted(Counter(p.hypernode for p in verdict.binds).values()) == [2, 2]


def test_nodeorder_spreads_where_binpack_packs() -> None:
    """nodeorder's LeastAllocated (on by default) picks the emptier node; binpack, with a
    heavier weight, the fuller one."""
    items = [
        podgroup(1),
        member("p1", cpu="1", memory="1Gi").obj(),
        host("big", cpu="16", memory="64Gi").obj(),
        host("small", memory="8Gi").obj(),
        queue(),
    ]
    spread = parse_conf(
        "actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n", "t"
    )
    pack = parse_conf(
        "actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n"
        "  - name: binpack\n    arguments: {binpack.weight: 10}\n",
        "t",
    )
    assert bound(simulate(items, spread)) == {"c1/p1": "big"}
    assert bound(simulate(items, pack)) == {"c1/p1": "small"}


def test_prefer_no_schedule_taint_and_preferred_affinity_score() -> None:
    """nodeorder: a PreferNoSchedule taint costs a node; preferred node affinity adds."""
    plain = parse_conf(
        "actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n", "t"
    )
    items = [
        podgroup(1),
        member("p1", cpu="1", memory="1Gi").obj(),
        host("a", cpu="4", memory="8Gi")
        .taints([{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}])
        .obj(),
        host("b", cpu="4", memory="8Gi").obj(),
        queue(),
    ]
    assert bound(simulate(items, plain)) == {"c1/p1": "b"}
    wants_a = member("p1", cpu="1", memory="1Gi").obj()
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}
    preferred = [{"weight": 100, "preference": term}]
    wants_a["spec"]["affinity"] = {
        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}
    }
    items = [
        podgroup(1),
        wants_a,
        node("a")
        .labels({"zone": "z1"})
        .allocatable(cpu="4", memory="8Gi", pods="10")
        .capacity()
        .obj(),
        host("b", cpu="4", memory="8Gi").obj(),
        queue(),
    ]
    assert bound(simulate(items, plain)) == {"c1/p1": "a"}


def test_preferred_affinity_counts_its_weight_unnormalized() -> None:
    """nodeorder scores preferred node affinity with NodeAffinity's Score alone: a term of
    weight 10 adds 10 × nodeaffinity.weight (2), not the 100 a normalized score would give;
    so here the emptier node's resource scores win over a weight-10 preference and lose to
    a weight-100 one."""
    plain = parse_conf(
        "actions: allocate\ntiers:\n- plugins:\n  - name: predicates\n  - name: nodeorder\n", "t"
    )
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}

    def wanting(weight: int) -> list[dict[str, object]]:
        p = member("p1", memory="2Gi").obj()
        preferred = [{"weight": weight, "preference": term}]
        p["spec"]["affinity"] = {
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}
        }
        small = (
            node("small")
            .labels({"zone": "z1"})
            .allocatable(cpu="4", memory="8Gi", pods="10")
            .capacity()
            .obj()
        )
        return [
            podgroup(1),
            p,
            small,
            host("big", cpu="16", memory="32Gi").obj(),
            queue(),
        ]

    assert bound(simulate(wanting(10), plain)) == {"c1/p1": "big"}
    assert bound(simulate(wanting(100), plain)) == {"c1/p1": "small"}
