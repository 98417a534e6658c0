"""The four level orders (docs/architecture.md), from one model."""

import pytest

from labeler.core.model import HOSTNAME_LABEL, Level, NodePosition, Topology
from labeler.core.profiles import ascend_superpod, oci_rdma


def three_levels() -> Topology:
    return Topology(
        "t",
        (Level("x/island", "island"), Level("x/block", "block"), Level("x/rack", "rack", 2)),
    )


def test_kueue_order_is_widest_first_then_hostname() -> None:
    assert three_levels().kueue_levels() == ["x/island", "x/block", "x/rack", HOSTNAME_LABEL]


def test_volcano_level1_is_narrowest_and_keys_continuous() -> None:
    levels = three_levels().volcano_levels()
    assert list(levels) == ["level1", "level2", "level3"]
    assert levels["level1"].key == "x/rack"
    assert levels["level1"].reserved_node == 2
    assert levels["level3"].key == "x/island"


def test_hypernode_tier1_is_narrowest() -> None:
    tiers = three_levels().hypernode_tiers()
    assert [(t, lv.key) for t, lv in tiers] == [(1, "x/rack"), (2, "x/block"), (3, "x/island")]


def test_discovery_order_ends_with_hostname() -> None:
    assert three_levels().discovery_levels()[-1] == HOSTNAME_LABEL
    assert three_levels().discovery_levels()[0] == "x/island"


def test_level_lookup_by_key_or_name_and_clear_error() -> None:
    t = three_levels()
    assert t.level("block") is t.level("x/block")
    with pytest.raises(KeyError, match="the levels are: island"):
        t.level("nope")


@pytest.mark.parametrize(
    "levels",
    [
        (),
        (Level("a/b", "b"), Level("a/b", "c")),
        (Level("a/b", "b"), Level("a/c", "b")),
        (Level(HOSTNAME_LABEL, "host"),),
    ],
)
def test_invalid_topologies_are_rejected(levels: tuple[Level, ...]) -> None:
    with pytest.raises(ValueError):
        Topology("t", levels)


def test_builtin_profiles_follow_design() -> None:
    oci = oci_rdma().topology
    assert oci.keys == (
        "oci.oraclecloud.com/rdma.hpc_island_id",
        "oci.oraclecloud.com/rdma.network_block_id",
        "oci.oraclecloud.com/rdma.local_block_id",
    )
    ascend = ascend_superpod("tree-a").topology
    assert ascend.tree_label == "huawei.com/topotree"
    assert ascend.name == "tree-a"
    assert ascend.volcano_levels()["level1"].key == "huawei.com/topotree.superpodid"
    assert ascend.volcano_levels()["level2"].key == "huawei.com/topotree.groupid"


def test_placement_round_trip_and_missing_levels() -> None:
    t = three_levels()
    p = NodePosition.from_labels(t, "n1", {"x/island": "i1", "x/rack": "r1", "other": "v"})
    assert p.values == ("i1", None, "r1")
    assert not p.complete
    assert [lv.name for lv in p.missing(t)] == ["block"]
    assert p.labels(t) == {"x/island": "i1", "x/rack": "r1", "other": "v"}
