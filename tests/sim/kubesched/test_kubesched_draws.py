"""What kube-scheduler draws at random, as advise reports it: the node among several of
equal top score (``selectHost``), and the message naming the domains a group's running
pods are in (TopologyPlacement meets them in the order of Go maps)."""

from __future__ import annotations

from labeler.sim.kubesched.report import advice_dict, advice_text
from labeler.sim.kubesched.schedule import advise
from labeler.sim.kubesched.state import PreferDomain, State
from tests.builders import pod
from tests.sim.kubesched.podgroups import basic, composite, gang, member, rack_node, run

HELD = "cannot determine domain for already scheduled pods: "


def _three_racks() -> list[dict[str, object]]:
    return [rack_node(f"node{i}", {"rack": "rack-1", "zone": "zone-1"}) for i in (1, 2, 3)]


def test_a_pod_whose_top_score_several_nodes_share_reports_them_all() -> None:
    advice = run(_three_racks(), [basic("pg", None), member("p1", "pg", cpu="1")])
    (p1,) = advice.pods
    assert p1.node == "node1"
    assert p1.tied == ("node1", "node2", "node3")
    assert advice_dict(advice)["pods"][0]["tied_nodes"] == ["node1", "node2", "node3"]
    text = advice_text(advice)
    assert "kube-scheduler picks at random among 3 equal nodes: node1, node2, node3" in text


def test_a_node_of_its_own_best_score_is_no_tie() -> None:
    # node1 already runs a pod: the empty nodes score higher and tie; the next pod's best
    # is the empty node left, alone
    cluster = [
        *_three_racks(),
        pod("busy").namespace("other").requests(cpu="1").on("node1").obj(),
    ]
    advice = run(
        cluster, [basic("pg", None), member("p1", "pg", cpu="1"), member("p2", "pg", cpu="1")]
    )
    p1, p2 = advice.pods
    assert (p1.node, p1.tied) == ("node2", ("node2", "node3"))
    assert (p2.node, p2.tied) == ("node3", ())
    assert (
        "Node ties" in advice_text(advice)
        and "ns/p2" not in advice_text(advice).split("Node ties")[1]
    )


def test_a_preference_picks_among_the_tied_nodes_only() -> None:
    from labeler.sim.common.cluster import snapshot_from_objects
    from labeler.sim.kubesched.objects import GroupPod, collect

    cluster = _three_racks()
    asked = [basic("pg", None), member("p1", "pg", cpu="1"), member("p2", "pg", cpu="1")]
    snap = snapshot_from_objects({"kind": "List", "items": cluster}, "snapshot")
    objs = collect([(o, "file") for o in asked], [(o, "snapshot") for o in cluster])
    offered: list[tuple[str, ...]] = []

    def last(pod: GroupPod, nodes: tuple[str, ...], state: State) -> str:
        offered.append(nodes)
        return nodes[-1]

    advice = advise(objs, snap.nodes, "file", prefer=last)
    # p1 takes node3 of three equal nodes; node3 then scores lower, p2 has two left
    assert [p.node for p in advice.pods] == ["node3", "node2"]
    assert offered == [("node1", "node2", "node3"), ("node1", "node2")]
    assert [p.tied for p in advice.pods] == [("node1", "node2", "node3"), ("node1", "node2")]


def test_running_pods_in_three_domains_give_every_message_the_walk_can_give() -> None:
    cluster = [
        rack_node("a", {"rack": "rack-1", "zone": "zone-a"}),
        rack_node("b", {"rack": "rack-1", "zone": "zone-b"}),
        rack_node("c", {"rack": "rack-1", "zone": "zone-c"}),
        pod("r0").namespace("ns").requests(cpu="1").scheduling_group("pg0").on("a").obj(),
        pod("r1").namespace("ns").requests(cpu="1").scheduling_group("pg1").on("b").obj(),
        pod("r2").namespace("ns").requests(cpu="1").scheduling_group("pg1").on("c").obj(),
    ]
    advice = run(
        cluster,
        [
            composite("cpg", "zone", 2),
            gang("pg0", None, 2, parent="cpg"),
            gang("pg1", None, 3, parent="cpg"),
            member("p0", "pg0", cpu="1"),
            member("p1", "pg1", cpu="1"),
        ],
    )
    root = advice.results[0]
    two = HELD + "more than 1 domain found for pod group: "
    # pg1's pods come together: once it starts, its own two zones meet first
    said = {root.message, *root.alternatives}
    assert said == {
        two + "zone-a, zone-b",
        two + "zone-a, zone-c",
        two + "zone-b, zone-c",
        two + "zone-c, zone-b",
    }
    assert root.message == two + "zone-a, zone-b"
    assert advice_dict(advice)["groups"][0]["alternatives"] == sorted(said - {root.message})
    assert "may instead end: more than 1 domain found" in advice_text(advice)


def test_one_domain_and_a_pod_without_the_key_may_name_either() -> None:
    cluster = [
        rack_node("a", {"rack": "rack-1", "zone": "zone-a"}),
        rack_node("b", {"rack": "rack-1", "zone": "zone-a"}),
        rack_node("x", {"rack": "rack-1"}),
        pod("r0").namespace("ns").requests(cpu="1").scheduling_group("pg").on("a").obj(),
        pod("r1").namespace("ns").requests(cpu="1").scheduling_group("pg").on("x").obj(),
    ]
    advice = run(cluster, [gang("pg", "zone", 3), member("p0", "pg", cpu="1")])
    root = advice.results[0]
    # whichever pod is met first: the unlabelled one is named either way
    assert root.error and root.message == HELD + "no topology domain found for pod ns/r1"
    assert root.alternatives == []


def test_a_domain_preference_picks_among_the_tied_placements_only() -> None:
    from labeler.sim.common.cluster import snapshot_from_objects
    from labeler.sim.kubesched.objects import Group, collect

    racks = [rack_node(f"{r}1", {"rack": f"rack-{i}", "zone": "z"}) for i, r in enumerate("abc")]
    busy = pod("busy").namespace("other").requests(cpu="1").on("c1").obj()
    asked = [gang("pg", "rack", 1), member("p1", "pg", cpu="1")]
    offered: list[tuple[str | None, ...]] = []

    def last(group: Group, domains: tuple[str | None, ...]) -> str | None:
        offered.append(domains)
        return domains[-1]

    def domain(
        cluster: list[dict[str, object]], prefer_domain: PreferDomain | None = None
    ) -> str | None:
        snap = snapshot_from_objects({"kind": "List", "items": cluster}, "snapshot")
        objs = collect([(o, "file") for o in asked], [(o, "snapshot") for o in cluster])
        return advise(objs, snap.nodes, "file", prefer_domain=prefer_domain).results[0].domain

    assert domain(racks) == "rack-0"  # three equal racks: the first by name
    assert domain(racks, prefer_domain=last) == "rack-2"
    assert offered == [("rack-0", "rack-1", "rack-2")]
    # a busy node makes its rack's placement score higher (MostAllocated): no tie to offer
    offered.clear()
    assert domain([*racks, busy], prefer_domain=last) == "rack-2" and offered == []
