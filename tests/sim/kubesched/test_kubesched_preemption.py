"""kube-scheduler's CompositePodGroup scenarios with workload-aware preemption
(cpg_tas_test.go, TestCPGTopologyAwareSchedulingWorkloadAwarePreemption), as our own cases.

The simulator does not preempt, so each scenario is two decisions: with the low-priority
pods running, the hierarchy does not fit now (what kube-scheduler finds before it
preempts); with them gone (what preemption frees), it is placed where upstream verifies.
Every node has 2 CPUs; every pod asks for 1; a low-priority pod fills its node."""

from __future__ import annotations

from tests.builders import node, pod
from tests.sim.kubesched.podgroups import (
    basic,
    bound_as,
    composite,
    gang,
    member,
    nodes_of,
    one_domain,
    prefers,
    rack_node,
    run,
    tainted,
    within,
)

UNSCHEDULABLE = "pod group is unschedulable, "
NOT_ENOUGH_CHILDREN = (
    "placements are available, first placement status: "
    "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
)


def low(name: str, on: str, cpu: str = "2") -> dict:
    """A low-priority pod: the victim preemption would evict."""
    return pod(name).namespace("ns").requests(cpu=cpu).on(on).obj()


def _rack_children(children: str = "gang") -> list[dict]:
    """cpg-root (gang of 2, one rack) ⊃ pg1, pg2 without a constraint."""
    kids = (
        [gang("pg1", None, 2, parent="cpg-root"), gang("pg2", None, 2, parent="cpg-root")]
        if children == "gang"
        else [basic("pg1", None, parent="cpg-root"), basic("pg2", None, parent="cpg-root")]
    )
    return [composite("cpg-root", "rack", 2), *kids]


FOUR = [
    member("p1", "pg1", cpu="1"),
    member("p2", "pg1", cpu="1"),
    member("p3", "pg2", cpu="1"),
    member("p4", "pg2", cpu="1"),
]
RACKS = [
    rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
    rack_node("node2-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
    rack_node("node3-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
    rack_node("node4-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
]


def test_one_rack_after_preempting() -> None:
    lows = [low("low1-z1-r1", "node1-z1-r1"), low("low2-z1-r1", "node2-z1-r1")]
    cluster = [*RACKS, pod("existing").namespace("ns").requests(cpu="2").on("node4-z1-r2").obj()]
    before = run([*cluster, *lows], [*_rack_children(), *FOUR])
    assert (
        not before.fits
        and before.results[0].message == UNSCHEDULABLE + "0/2 " + NOT_ENOUGH_CHILDREN
    )
    after = run(cluster, [*_rack_children(), *FOUR])
    assert after.fits and within(after, ["p1", "p2", "p3", "p4"], {"node1-z1-r1", "node2-z1-r1"})


def test_after_preempting_a_later_pod_is_held_to_the_full_rack() -> None:
    cluster = [*RACKS, pod("existing").namespace("ns").requests(cpu="2").on("node4-z1-r2").obj()]
    after = run(cluster, [*_rack_children(), *FOUR])
    assert within(after, ["p1", "p2", "p3", "p4"], {"node1-z1-r1", "node2-z1-r1"})
    # a fifth pod joins pg1: rack-2 has 2 CPUs free, but the hierarchy is held to rack-1
    later = run(
        [*cluster, *bound_as(after)],
        [
            *_rack_children(),
            member("p5", "pg1", cpu="1"),
        ],
    )
    assert nodes_of(later) == {"p5": None}
    assert later.results[0].domain == "rack-1"
    # pg1 has its two pods and pg2 all of its: the hierarchy fits without binding anything,
    # which the framework refuses; pg1 then takes the root's status, p5 untried
    assert later.results[0].message == "pod group is unschedulable"
    assert later.message == "pod group is unschedulable"


def test_a_bound_member_holds_the_rack_whose_low_pods_preemption_evicts() -> None:
    cluster = [
        *RACKS,
        pod("existing")
        .namespace("ns")
        .requests(cpu="1")
        .scheduling_group("pg1")
        .on("node4-z1-r2")
        .obj(),
    ]
    lows = [low("low1-z1-r2", "node3-z1-r2"), low("low2-z1-r2", "node4-z1-r2", cpu="1")]
    asked = [
        *_rack_children(),
        member("p1", "pg1", cpu="1"),
        member("p2", "pg2", cpu="1"),
        member("p3", "pg2", cpu="1"),
    ]
    before = run([*cluster, *lows], asked)
    assert (
        not before.fits
        and before.results[0].message == UNSCHEDULABLE + "0/1 " + NOT_ENOUGH_CHILDREN
    )
    after = run(cluster, asked)
    assert after.fits and within(after, ["p1", "p2", "p3"], {"node3-z1-r2", "node4-z1-r2"})


def test_basic_children_on_a_rack_after_preempting() -> None:
    cluster = [
        rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node2-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        pod("existing2").namespace("ns").requests(cpu="2").on("node2-z1-r2").obj(),
    ]
    asked = [
        *_rack_children("basic"),
        member("p1", "pg1", cpu="1"),
        member("p2", "pg2", cpu="1"),
    ]
    before = run([*cluster, low("low1-z1-r1", "node1-z1-r1")], asked)
    assert nodes_of(before) == {"p1": None, "p2": None}
    after = run(cluster, asked)
    assert after.fits and within(after, ["p1", "p2"], {"node1-z1-r1"})


def _zone_rack(*extra: dict) -> list[dict]:
    return [
        rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node2-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node3-z2-r1", {"rack": "rack-1", "zone": "zone-2"}),
        rack_node("node4-z2-r1", {"rack": "rack-1", "zone": "zone-2"}),
        *extra,
    ]


ZONE_OF_RACKS = [
    composite("cpg-root", "zone", 2),
    gang("pg1", "rack", 2, parent="cpg-root"),
    gang("pg2", "rack", 2, parent="cpg-root"),
]


def test_zone_and_rack_levels_after_preempting() -> None:
    cluster = _zone_rack(
        pod("existing-z2").namespace("ns").requests(cpu="1").on("node3-z2-r1").obj()
    )
    lows = [low("low-z1-r1", "node1-z1-r1"), low("low-z1-r2", "node2-z1-r2")]
    before = run([*cluster, *lows], [*ZONE_OF_RACKS, *FOUR])
    assert not before.fits  # zone-1 is full; zone-2 holds 3 pods
    after = run(cluster, [*ZONE_OF_RACKS, *FOUR])
    assert after.fits and within(after, ["p1", "p2", "p3", "p4"], {"node1-z1-r1", "node2-z1-r2"})
    assert one_domain(after, ["p1", "p2"], cluster, "rack")
    assert one_domain(after, ["p3", "p4"], cluster, "rack")


def test_preemption_does_not_help_a_child_held_to_a_full_zone() -> None:
    cluster = [
        rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node2-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node3-z1-r3", {"rack": "rack-3", "zone": "zone-1"}),
        rack_node("node4-z2-r1", {"rack": "rack-1", "zone": "zone-2"}),
        rack_node("node5-z2-r1", {"rack": "rack-1", "zone": "zone-2"}),
    ]
    lows = [low("low-z1-r3", "node3-z1-r3"), low("low-z2-r1", "node4-z2-r1")]
    # pg1 and pg2 fit in zone-1 without preempting anything
    first = run([*cluster, *lows], [*ZONE_OF_RACKS, *FOUR])
    assert first.fits and first.results[0].domain == "zone-1"
    assert one_domain(first, ["p1", "p2"], cluster, "rack")
    assert one_domain(first, ["p3", "p4"], cluster, "rack")
    # pg3 joins: only rack-3 of zone-1 could hold it, once its low pod is preempted
    pg3 = [
        gang("pg3", "rack", 2, parent="cpg-root"),
        member("p5", "pg3", cpu="1"),
        member("p6", "pg3", cpu="1"),
    ]
    placed = [*cluster, *bound_as(first)]
    before = run([*placed, *lows], [*ZONE_OF_RACKS, *pg3])
    assert nodes_of(before) == {"p5": None, "p6": None}
    after = run([*placed, lows[1]], [*ZONE_OF_RACKS, *pg3])
    assert within(after, ["p5", "p6"], {"node3-z1-r3"})
    # pg4 joins: zone-1 is full; preempting zone-2's low pod would free rack-1 there, but
    # the hierarchy is held to zone-1
    pg4 = [
        gang("pg4", "rack", 2, parent="cpg-root"),
        member("p7", "pg4", cpu="1"),
        member("p8", "pg4", cpu="1"),
    ]
    placed += bound_as(after)
    for running in ([*placed, lows[1]], placed):
        last = run(running, [*ZONE_OF_RACKS, pg3[0], *pg4])
        assert nodes_of(last) == {"p7": None, "p8": None}
        assert last.results[0].domain == "zone-1"


def test_one_child_constrained_the_other_uses_the_parents_zone_after_preempting() -> None:
    cluster = [
        tainted(
            rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
            "taint",
        ),
        rack_node("node2-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node3-z1-r3", {"rack": "rack-3", "zone": "zone-1"}),
        rack_node("node4-z2-r1", {"rack": "rack-1", "zone": "zone-2"}),
        rack_node("node5-z2-r2", {"rack": "rack-2", "zone": "zone-2"}),
        pod("existing-z2").namespace("ns").requests(cpu="1").on("node5-z2-r2").obj(),
        pod("existing-z1-r2").namespace("ns").requests(cpu="1").on("node2-z1-r2").obj(),
        pod("existing-z1-r3").namespace("ns").requests(cpu="1").on("node3-z1-r3").obj(),
    ]
    tolerate = [{"key": "taint"}]
    asked = [
        composite("cpg-root", "zone", 2),
        gang("pg1", "rack", 2, parent="cpg-root"),
        gang("pg2", None, 2, parent="cpg-root"),
        pod("p1")
        .namespace("ns")
        .requests(cpu="1")
        .scheduling_group("pg1")
        .tolerations(tolerate)
        .obj(),
        pod("p2")
        .namespace("ns")
        .requests(cpu="1")
        .scheduling_group("pg1")
        .tolerations(tolerate)
        .obj(),
        prefers(member("p3", "pg2", cpu="1"), "node4-z2-r1"),
        prefers(member("p4", "pg2", cpu="1"), "node4-z2-r1"),
    ]
    before = run([*cluster, low("low-z1-r1", "node1-z1-r1")], asked)
    assert not before.fits
    after = run(cluster, asked)
    assert after.fits and one_domain(after, ["p1", "p2", "p3", "p4"], cluster, "zone")
    assert one_domain(after, ["p1", "p2"], cluster, "rack")


def test_bound_members_and_low_pods_in_the_held_domains() -> None:
    cluster = [
        rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node2-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node3-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node4-z2-r1", {"rack": "rack-1", "zone": "zone-2"}),
        rack_node("node5-z2-r1", {"rack": "rack-1", "zone": "zone-2"}),
        pod("existing-z1")
        .namespace("ns")
        .requests(cpu="1")
        .scheduling_group("pg1")
        .on("node1-z1-r1")
        .obj(),
    ]
    lows = [low("low-z1-r1", "node1-z1-r1", cpu="1"), low("low-z1-r2", "node2-z1-r2")]
    asked = [
        *ZONE_OF_RACKS,
        member("p1", "pg1", cpu="1"),
        member("p2", "pg2", cpu="1"),
        member("p3", "pg2", cpu="1"),
    ]
    before = run([*cluster, *lows], asked)
    assert (
        not before.fits
        and before.results[0].message == UNSCHEDULABLE + "0/1 " + NOT_ENOUGH_CHILDREN
    )
    after = run(cluster, asked)
    assert within(after, ["p1"], {"node1-z1-r1"})
    assert within(after, ["p2", "p3"], {"node2-z1-r2", "node3-z1-r2"})


def _three_levels(root_key: str | None, sub_key: str | None, leaf_key: str | None) -> list[dict]:
    root = composite("cpg-root", root_key, 2 if root_key else None)
    return [
        root,
        composite("cpg-sub1", sub_key, 2 if sub_key else None, parent="cpg-root"),
        composite("cpg-sub2", sub_key, 2 if sub_key else None, parent="cpg-root"),
        *(gang(f"pg{i}", leaf_key, 2, parent=f"cpg-sub{(i + 1) // 2}") for i in range(1, 5)),
        *(
            pod(f"p{i}")
            .namespace("ns")
            .requests(cpu="1")
            .scheduling_group(f"pg{(i + 1) // 2}")
            .obj()
            for i in range(1, 9)
        ),
    ]


EIGHT = [f"p{i}" for i in range(1, 9)]


def test_three_levels_all_constrained_after_preempting() -> None:
    def n(name: str, zone: str, block: str, rack: str) -> dict:
        return (
            node(name)
            .hostname()
            .labels(block=block)
            .labels({"rack": rack, "zone": zone})
            .allocatable(cpu="2", pods="110")
            .obj()
        )

    cluster = [
        n("node1-z1-g1-r1", "zone-1", "block-1", "rack-1"),
        n("node2-z1-g1-r2", "zone-1", "block-1", "rack-2"),
        n("node3-z1-g2-r1", "zone-1", "block-2", "rack-1"),
        n("node4-z1-g2-r2", "zone-1", "block-2", "rack-2"),
        n("node5-z2-g1-r1", "zone-2", "block-1", "rack-1"),
        n("node6-z2-g1-r1", "zone-2", "block-1", "rack-1"),
    ]
    lows = [low(f"low-z1-{i}", cluster[i - 1]["metadata"]["name"]) for i in (1, 2, 3, 4)]
    asked = _three_levels("zone", "block", "rack")
    assert nodes_of(run([*cluster, *lows], asked)) == dict.fromkeys(EIGHT)
    after = run(cluster, asked)
    assert after.fits and one_domain(after, EIGHT, cluster, "zone")
    assert one_domain(after, EIGHT[:4], cluster, "block")
    assert one_domain(after, EIGHT[4:], cluster, "block")
    for a in range(0, 8, 2):
        assert one_domain(after, EIGHT[a : a + 2], cluster, "rack")


def test_three_levels_middle_unconstrained_after_preempting() -> None:
    cluster = [
        rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node2-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node3-z2-r1", {"rack": "rack-1", "zone": "zone-2"}),
    ]
    lows = [low("low-z1-r1", "node1-z1-r1"), low("low-z1-r2", "node2-z1-r2")]
    asked = [
        composite("cpg-root", "zone", 2),
        composite("cpg-sub1", None, None, parent="cpg-root"),
        composite("cpg-sub2", None, None, parent="cpg-root"),
        gang("pg1", "rack", 2, parent="cpg-sub1"),
        gang("pg2", "rack", 2, parent="cpg-sub2"),
        *FOUR,
    ]
    assert not run([*cluster, *lows], asked).fits
    after = run(cluster, asked)
    assert after.fits and one_domain(after, ["p1", "p2", "p3", "p4"], cluster, "zone")
    assert one_domain(after, ["p1", "p2"], cluster, "rack")
    assert one_domain(after, ["p3", "p4"], cluster, "rack")


def test_three_levels_top_unconstrained_after_preempting() -> None:
    cluster = [
        rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node2-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node3-z2-r3", {"rack": "rack-3", "zone": "zone-2"}),
        rack_node("node4-z2-r4", {"rack": "rack-4", "zone": "zone-2"}),
    ]
    lows = [low(f"low-{i}", n["metadata"]["name"]) for i, n in enumerate(cluster)]
    asked = _three_levels(None, "zone", "rack")
    assert nodes_of(run([*cluster, *lows], asked)) == dict.fromkeys(EIGHT)
    after = run(cluster, asked)
    assert after.fits
    assert one_domain(after, EIGHT[:4], cluster, "zone")
    assert one_domain(after, EIGHT[4:], cluster, "zone")
    for a in range(0, 8, 2):
        assert one_domain(after, EIGHT[a : a + 2], cluster, "rack")


def test_three_levels_bottom_unconstrained_after_preempting() -> None:
    cluster = [
        rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node2-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node3-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node4-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node5-z2-r3", {"rack": "rack-3", "zone": "zone-2"}),
        rack_node("node6-z2-r3", {"rack": "rack-3", "zone": "zone-2"}),
    ]
    lows = [low(f"low-{i}", n["metadata"]["name"]) for i, n in enumerate(cluster[:4])]
    asked = _three_levels("zone", "rack", None)
    assert not run([*cluster, *lows], asked).fits  # zone-2 holds 4 pods of 8
    after = run(cluster, asked)
    assert after.fits and one_domain(after, EIGHT, cluster, "zone")
    assert one_domain(after, EIGHT[:4], cluster, "rack")
    assert one_domain(after, EIGHT[4:], cluster, "rack")


def test_three_levels_a_bound_leaf_pod_and_low_pods_in_its_zone() -> None:
    cluster = [
        rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node2-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node3-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node4-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node5-z2-r1", {"rack": "rack-1", "zone": "zone-2"}),
        rack_node("node6-z2-r1", {"rack": "rack-1", "zone": "zone-2"}),
        rack_node("node7-z2-r2", {"rack": "rack-2", "zone": "zone-2"}),
        rack_node("node8-z2-r2", {"rack": "rack-2", "zone": "zone-2"}),
        pod("existing-pg1")
        .namespace("ns")
        .requests(cpu="1")
        .scheduling_group("pg1")
        .on("node5-z2-r1")
        .obj(),
    ]
    lows = [low("low-z2-r1", "node6-z2-r1"), low("low-z2-r2", "node7-z2-r2")]
    asked = [
        *_three_levels("zone", "rack", None)[:7],
        member("p1", "pg1", cpu="1"),
        *(member(f"p{i}", "pg2", cpu="1") for i in (2, 3)),
        *(member(f"p{i}", "pg3", cpu="1") for i in (4, 5)),
        *(member(f"p{i}", "pg4", cpu="1") for i in (6, 7)),
    ]
    before = run([*cluster, *lows], asked)
    assert not before.fits  # held to zone-2, cpg-sub1 to node5's rack: 1 CPU free there
    after = run(cluster, asked)
    assert after.fits
    assert within(after, ["p1", "p2", "p3"], {"node5-z2-r1", "node6-z2-r1"})
    assert within(after, ["p4", "p5", "p6", "p7"], {"node7-z2-r2", "node8-z2-r2"})
