"""``advise --html`` for Volcano: the overlay the map draws, and the map's levels taken from
the HyperNode tiers when no profile is given."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labeler.sim.volcano.advice import Advice, advise
from labeler.sim.volcano.model import gang_of, podgroup_from_object
from labeler.sim.volcano.overlay import TIER_KEY, tier_profile, volcano_overlay
from labeler.sim.volcano.simulate import cluster_tree
from labeler.sim.volcano.snapshot import split
from tests.sim.volcano.objects import TEST_CONF, host, member, podgroup, queue, two_racks


def advice_of(items: Sequence[Mapping[str, Any]]) -> Advice:
    objects = split(items, "test")
    where, obj = next(iter(objects.podgroups.values()))
    gang = gang_of(podgroup_from_object(obj, where), objects.cluster.pods, "test")
    return advise(gang, objects.cluster, TEST_CONF, cluster_tree(objects.cluster))


def test_the_map_levels_are_the_hypernode_tiers_widest_first() -> None:
    items = [
        *two_racks(),
        host("cpu-0").obj(),
        queue(),
    ]
    objects = split(items, "test")
    tree = cluster_tree(objects.cluster)
    got = tier_profile(tree, objects.cluster.nodes)
    assert got is not None
    profile, nodes = got
    assert [lv.name for lv in profile.topology.levels] == ["tier 2", "tier 1"]
    labels = {
        n.name: {k: v for k, v in n.labels.items() if k.startswith("hypernode.")} for n in nodes
    }
    assert labels["s1-n3"] == {TIER_KEY.format(2): "s2", TIER_KEY.format(1): "s1"}
    assert labels["cpu-0"] == {}  # outside every HyperNode: drawn apart, missing its levels


def test_no_hypernodes_no_tier_levels() -> None:
    objects = split([host("n1").obj(), queue()], "test")
    assert tier_profile(cluster_tree(objects.cluster), objects.cluster.nodes) is None


def test_a_fitting_gang_outlines_its_hypernode_and_counts_pods_per_node() -> None:
    items = [
        *two_racks(),
        queue(),
        podgroup(2, mode="hard", tier=1),
        member("p1").obj(),
        member("p2").obj(),
    ]
    advice = advice_of(items)
    assert advice.fits
    got = tier_profile(advice.tree, split(items, "test").cluster.nodes)
    assert got is not None
    profile, nodes = got
    overlay = volcano_overlay(profile.topology, advice, nodes)
    hn = advice.verdict.hypernode
    assert overlay.fits and overlay.domain == ("s2", hn) and overlay.domain_role == "placement"
    assert sum(overlay.pods.values()) == 2 and set(overlay.pods) <= advice.tree[hn].nodes
    assert overlay.headline == f"FITS now (Volcano): 2 pod(s) within HyperNode {hn} (tier 1)"


def test_a_gang_that_does_not_fit_says_why_node_by_node() -> None:
    items = [
        *two_racks(),
        host("big", cpu="8").obj(),  # outside every HyperNode: the hard bound keeps the gang out
        queue(),
        podgroup(3, mode="hard", tier=1),
        *(member(f"p{i}").obj() for i in range(3)),
    ]
    advice = advice_of(items)
    assert not advice.fits
    got = tier_profile(advice.tree, split(items, "test").cluster.nodes)
    assert got is not None
    profile, nodes = got
    overlay = volcano_overlay(profile.topology, advice, nodes)
    assert not overlay.fits and overlay.pods == {} and overlay.scheduler == "Volcano"
    assert overlay.message == advice.verdict.message
    assert overlay.blocked == {"big": "outside every HyperNode of tier ≤ 1"}
    # the best of the narrowest tier that holds three pods now: the tier-2 HyperNode
    assert overlay.domain == ("s2",) and overlay.domain_role == "best"
