"""The rest of kube-scheduler's CompositePodGroup integration scenarios
(test/integration/scheduler/podgroup/topology_aware_scheduling/cpg_tas_test.go,
TestCPGTopologyAwareScheduling), as our own cases: every node has 2 CPUs, every pod asks
for 1; a step that creates a second hierarchy, deletes a pod or adds one is its own case,
with the earlier decision's pods bound where it put them."""

from __future__ import annotations

from tests.builders import pod
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


def test_one_child_constrained_the_other_uses_the_parents_zone() -> None:
    cluster = [
        # for the whole group to fit, pg1 must take node1; the taint keeps pg2 off it
        tainted(
            rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
            "taint",
        ),
        rack_node("node2-z1-r2", {"rack": "rack-2", "zone": "zone-1"}),
        rack_node("node3-z1-r3", {"rack": "rack-3", "zone": "zone-1"}),
        rack_node("node4-z2-r1", {"rack": "rack-1", "zone": "zone-2"}),
        rack_node("node5-z2-r2", {"rack": "rack-2", "zone": "zone-2"}),
        pod("existing-z2")
        .namespace("ns")
        .requests(cpu="1")
        .on("node5-z2-r2")
        .obj(),  # zone-2 holds 3 pods: too few
        pod("existing-z1-r2")
        .namespace("ns")
        .requests(cpu="1")
        .on("node2-z1-r2")
        .obj(),  # racks 2 and 3 hold 1 each
        pod("existing-z1-r3").namespace("ns").requests(cpu="1").on("node3-z1-r3").obj(),
    ]
    tolerate = [{"key": "taint"}]
    advice = run(
        cluster,
        [
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
            # preferring zone-2's node changes nothing: zone-2 cannot hold both groups
            prefers(
                member("p3", "pg2", cpu="1"),
                "node4-z2-r1",
            ),
            prefers(
                member("p4", "pg2", cpu="1"),
                "node4-z2-r1",
            ),
        ],
    )
    assert advice.fits
    assert one_domain(advice, ["p1", "p2", "p3", "p4"], cluster, "zone")
    assert within(advice, ["p1", "p2"], {"node1-z1-r1"})
    assert within(advice, ["p3", "p4"], {"node2-z1-r2", "node3-z1-r3"})


def _zones_racks(*racks: tuple[str, str, int]) -> list[dict]:
    """Nodes ``node{i}-z{zone}-r{rack}`` numbered in order, ``count`` per (zone, rack)."""
    out, i = [], 0
    for zone, rack, count in racks:
        for _ in range(count):
            i += 1
            out.append(rack_node(f"node{i}-z{zone[-1]}-r{rack[-1]}", {"rack": rack, "zone": zone}))
    return out


def _zone_rack_gangs(root_key: str | None, sub_key: str | None, leaf_key: str | None):
    """cpg-root ⊃ cpg-sub1 (pg1, pg2), cpg-sub2 (pg3, pg4), each gang of 2, pods p1..p8."""
    return [
        composite("cpg-root", root_key, 2),
        composite("cpg-sub1", sub_key, 2, parent="cpg-root"),
        composite("cpg-sub2", sub_key, 2, parent="cpg-root"),
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


def test_three_levels_bottom_unconstrained() -> None:
    # zone-1: two racks of 4 CPUs; zone-2: one rack of 4
    cluster = _zones_racks(
        ("zone-1", "rack-1", 2), ("zone-1", "rack-2", 2), ("zone-2", "rack-3", 2)
    )
    advice = run(cluster, _zone_rack_gangs("zone", "rack", None))
    assert advice.fits
    assert one_domain(advice, [f"p{i}" for i in range(1, 9)], cluster, "zone")
    assert one_domain(advice, ["p1", "p2", "p3", "p4"], cluster, "rack")
    assert one_domain(advice, ["p5", "p6", "p7", "p8"], cluster, "rack")


def test_three_levels_a_bound_leaf_pod_holds_both_levels_above() -> None:
    # two zones of 8 CPUs, each two racks of two nodes
    cluster = _zones_racks(
        ("zone-1", "rack-1", 2),
        ("zone-1", "rack-2", 2),
        ("zone-2", "rack-1", 2),
        ("zone-2", "rack-2", 2),
    )
    # a pod of pg1 already runs in zone-2 rack-1: cpg-sub1 is held there, cpg-root to zone-2
    cluster.append(
        pod("existing-pg1")
        .namespace("ns")
        .requests(cpu="1")
        .scheduling_group("pg1")
        .on("node5-z2-r1")
        .obj()
    )
    asked = [
        *_zone_rack_gangs("zone", "rack", None)[:7],
        member("p1", "pg1", cpu="1"),
        *(member(f"p{i}", "pg2", cpu="1") for i in (2, 3)),
        *(member(f"p{i}", "pg3", cpu="1") for i in (4, 5)),
        *(member(f"p{i}", "pg4", cpu="1") for i in (6, 7)),
    ]
    advice = run(cluster, asked)
    assert advice.fits
    assert within(advice, ["p1", "p2", "p3"], {"node5-z2-r1", "node6-z2-r1"})
    assert within(advice, ["p4", "p5", "p6", "p7"], {"node7-z2-r2", "node8-z2-r2"})


def _two_racks(*existing: dict) -> list[dict]:
    return [*_zones_racks(("zone-1", "rack-1", 2), ("zone-1", "rack-2", 2)), *existing]


def test_composite_takes_the_placement_with_most_allocation() -> None:
    cluster = _two_racks(pod("existing").namespace("ns").requests(cpu="1").on("node1-z1-r1").obj())
    advice = run(
        cluster,
        [
            composite("cpg-root", "rack", 2),
            gang("pg1", None, 1, parent="cpg-root"),
            gang("pg2", None, 2, parent="cpg-root"),
            member("p1", "pg1", cpu="1"),
            member("p2", "pg2", cpu="1"),
            member("p3", "pg2", cpu="1"),
        ],
    )
    assert within(advice, ["p1", "p2", "p3"], {"node1-z1-r1", "node2-z1-r1"})
    # both racks take all 3 pods; rack-1 would be full (4 of 4 CPUs), rack-2 3 of 4
    scores = {p.domain: p.scores for p in advice.results[0].placements}
    assert scores == {
        "rack-1": {"PodGroupPodsCount": 100, "NodeResourcesFit": 100, "total": 200},
        "rack-2": {"PodGroupPodsCount": 100, "NodeResourcesFit": 75, "total": 175},
    }


def test_composite_takes_the_placement_that_holds_more_pods() -> None:
    cluster = _two_racks(pod("existing").namespace("ns").requests(cpu="1").on("node1-z1-r1").obj())
    advice = run(
        cluster,
        [
            # the pods come before their CompositePodGroup; it is a gang of one child
            member("p1", "pg1", cpu="1"),
            member("p2", "pg1", cpu="1"),
            member("p3", "pg2", cpu="1"),
            member("p4", "pg2", cpu="1"),
            gang("pg1", None, 2, parent="cpg-root"),
            gang("pg2", None, 2, parent="cpg-root"),
            composite("cpg-root", "rack", 1),
        ],
    )
    assert advice.fits
    assert within(advice, ["p1", "p2", "p3", "p4"], {"node3-z1-r2", "node4-z1-r2"})
    scores = {p.domain: p.scores for p in advice.results[0].placements}
    # rack-1 holds pg1 only (2 pods, 3 of 4 CPUs); rack-2 both groups, full
    assert scores["rack-1"] == {"PodGroupPodsCount": 50, "NodeResourcesFit": 75, "total": 125}
    assert scores["rack-2"] == {"PodGroupPodsCount": 100, "NodeResourcesFit": 100, "total": 200}


def test_composite_with_fewer_children_needed_than_it_has() -> None:
    cluster = _two_racks(
        pod("existing1").namespace("ns").requests(cpu="2").on("node3-z1-r2").obj(),
        pod("existing2").namespace("ns").requests(cpu="2").on("node4-z1-r2").obj(),
    )
    asked = [
        composite("cpg-root", "rack", 2),
        *(gang(f"pg{i}", None, 2, parent="cpg-root") for i in (1, 2, 3)),
        *(
            pod(f"p{i}")
            .namespace("ns")
            .requests(cpu="1")
            .scheduling_group(f"pg{(i + 1) // 2}")
            .obj()
            for i in range(1, 7)
        ),
    ]
    advice = run(cluster, asked)
    got = nodes_of(advice)
    assert within(advice, ["p1", "p2", "p3", "p4"], {"node1-z1-r1", "node2-z1-r1"})
    assert got["p5"] is None and got["p6"] is None
    assert advice.message == "0/2 nodes are available: 2 Insufficient cpu."
    assert advice.results[0].ok and advice.results[0].domain == "rack-1"


def test_basic_composite_places_what_fits_then_the_rest_once_room_is_freed() -> None:
    racks = [
        rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node2-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
    ]
    existing = pod("existing").namespace("ns").requests(cpu="2").on("node1-z1-r1").obj()
    tree = [
        composite("cpg-root", "rack", None),
        basic("pg1", None, parent="cpg-root"),
        basic("pg2", None, parent="cpg-root"),
    ]
    pg1 = [
        member("p1", "pg1", cpu="1"),
        member("p2", "pg1", cpu="1"),
    ]
    pg2 = [
        member("p3", "pg2", cpu="1"),
        member("p4", "pg2", cpu="1"),
    ]
    first = run([*racks, existing], [*tree, *pg1, *pg2])
    assert nodes_of(first) == {"p1": "node2-z1-r1", "p2": "node2-z1-r1", "p3": None, "p4": None}
    # the existing pod is deleted; p1 and p2 run where the first decision put them
    second = run([*racks, *bound_as(first)], [*tree, *pg2])
    assert second.fits
    assert within(second, ["p3", "p4"], {"node1-z1-r1"})


def _root(name: str, children: tuple[str, str]) -> list[dict]:
    """A gang CompositePodGroup on one rack with two gangs of 2 pods, ``name``'s pods
    named ``p{n}-1``..``p{n}-4``."""
    n = name[-1]
    a, b = children
    return [
        composite(name, "rack", 2),
        gang(a, None, 2, parent=name),
        gang(b, None, 2, parent=name),
        *(member(f"p{n}-{i}", a, cpu="1") for i in (1, 2)),
        *(member(f"p{n}-{i}", b, cpu="1") for i in (3, 4)),
    ]


def test_two_hierarchies_one_after_the_other_each_on_its_own_rack() -> None:
    cluster = _two_racks()
    first = run(cluster, _root("cpg-root1", ("pg1-1", "pg1-2")))
    assert first.fits and first.results[0].tie  # both racks equal: kube-scheduler draws
    assert one_domain(first, ["p1-1", "p1-2", "p1-3", "p1-4"], cluster, "rack")
    second = run([*cluster, *bound_as(first)], _root("cpg-root2", ("pg2-1", "pg2-2")))
    assert second.fits
    assert one_domain(second, ["p2-1", "p2-2", "p2-3", "p2-4"], cluster, "rack")
    assert second.results[0].domain != first.results[0].domain
    both = run(
        cluster, [*_root("cpg-root1", ("pg1-1", "pg1-2")), *_root("cpg-root2", ("pg2-1", "pg2-2"))]
    )
    assert [r.domain for r in both.results] == ["rack-1", "rack-2"]


def test_second_hierarchy_stays_pending_when_no_rack_is_left() -> None:
    cluster = [
        rack_node("node1-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("node2-z1-r1", {"rack": "rack-1", "zone": "zone-1"}),
    ]
    first = run(cluster, _root("cpg-root1", ("pg1-1", "pg1-2")))
    assert first.fits
    second = run([*cluster, *bound_as(first)], _root("cpg-root2", ("pg2-1", "pg2-2")))
    assert not second.fits and set(nodes_of(second).values()) == {None}
    assert second.results[0].message == (
        "pod group is unschedulable, 0/1 placements are available, first placement status: "
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    )


def test_sub_composite_and_direct_children_with_their_own_constraints() -> None:
    cluster = _zones_racks(
        ("zone-1", "rack-1", 2),
        ("zone-1", "rack-2", 2),
        ("zone-2", "rack-1", 1),
        ("zone-2", "rack-2", 1),
    )
    asked = [
        composite("cpg-root", "zone", 3),
        composite("cpg-sub1", "rack", 2, parent="cpg-root"),
        gang("pg1", None, 2, parent="cpg-sub1"),
        gang("pg2", None, 2, parent="cpg-sub1"),
        gang("pg3", "rack", 2, parent="cpg-root"),
        gang("pg4", None, 2, parent="cpg-root"),
        *(
            pod(f"p{i}")
            .namespace("ns")
            .requests(cpu="1")
            .scheduling_group(f"pg{(i + 1) // 2}")
            .obj()
            for i in range(1, 9)
        ),
    ]
    advice = run(cluster, asked)
    assert advice.fits
    assert one_domain(advice, [f"p{i}" for i in range(1, 9)], cluster, "zone")
    assert one_domain(advice, ["p1", "p2", "p3", "p4"], cluster, "rack")
    assert one_domain(advice, ["p5", "p6"], cluster, "rack")
