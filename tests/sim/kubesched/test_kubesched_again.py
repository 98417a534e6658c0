"""What kube-scheduler does after a pod-group cycle: the next cycle at once for a hierarchy
that fitted with pods left over (the queue puts it back without backoff), and which
placement's messages it may report when none is feasible."""

from __future__ import annotations

from labeler.sim.kubesched.report import advice_dict, advice_text
from tests.sim.kubesched.podgroups import basic, composite, gang, member, rack_node, run

UNSCHEDULABLE = "pod group is unschedulable"


def test_a_pod_left_over_under_a_fitting_hierarchy_ends_with_the_groups_error() -> None:
    # p0 fits, p1 (3 CPUs) fits nowhere: the hierarchy fits, so kube-scheduler tries p1
    # again at once; that cycle places nothing, the root's success becomes
    # "pod group is unschedulable" and pg, which succeeded under it, passes that on
    advice = run(
        [rack_node("n1", {})],
        [
            composite("cpg", None, None),
            gang("pg", None, 1, parent="cpg"),
            member("p0", "pg", "1"),
            member("p1", "pg", "3"),
        ],
    )
    said = {p.pod.name: (p.node, p.message) for p in advice.pods}
    assert said == {"p0": ("n1", ""), "p1": (None, UNSCHEDULABLE)}
    (root,) = advice.results
    assert root.ok and root.again is not None and not root.again.ok
    text = advice_text(advice)
    assert "pods left over: kube-scheduler tries them again at once" in text
    assert advice_dict(advice)["groups"][0]["again"]["message"] == UNSCHEDULABLE


def test_a_pod_left_over_by_a_pod_group_of_its_own_keeps_its_filter_message() -> None:
    # with no parent to take the root's status, the pod's own status of the next cycle
    # stands: its filter message with p0 on the node
    advice = run(
        [rack_node("n1", {})], [basic("pg", None), member("p0", "pg", "1"), member("p1", "pg", "2")]
    )
    said = {p.pod.name: (p.node, p.message) for p in advice.pods}
    assert said["p0"] == ("n1", "")
    assert said["p1"] == (None, "0/1 nodes are available: 1 Insufficient cpu.")
    assert advice.results[0].again is not None


def test_every_infeasible_placement_lists_the_messages_its_pods_would_end_with() -> None:
    # two identical zones' worth of tries: c2's try of zone-1 is the remembered outcome of
    # c1's, and must still name c2's pods
    cluster = [
        rack_node("a", {"rack": "rack-1", "zone": "zone-1"}),
        rack_node("b", {"rack": "rack-2", "zone": "zone-1"}),
    ]
    asked = [composite("root", None, None)]
    for c in ("c1", "c2"):
        asked += [composite(c, "zone", None, parent="root"), gang(f"{c}-pg", "rack", 2, parent=c)]
        asked += [member(f"{c}-p{i}", f"{c}-pg", "2") for i in range(2)]
    advice = run(cluster, asked)
    assert not advice.fits
    (root,) = advice.results
    gang_status = (
        "pod group is unschedulable, 0/2 placements are available, first placement status: "
        "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining"
    )
    for child in root.children:
        (zone,) = child.placements
        # in either rack p0 takes the node and p1 finds none: p0 gets its gang's status
        # behind the gang's error, p1 its filter message
        assert zone.pods == {
            f"ns/{child.group.name}-p0": [f"pod group is unschedulable, {gang_status}"],
            f"ns/{child.group.name}-p1": ["0/1 nodes are available: 1 Insufficient cpu."],
        }
