"""Unit tests of the emitters' rules: names, limits, member selectors, flags."""

from __future__ import annotations

import re

import pytest

from labeler.base.errors import InputError
from labeler.core.model import Level, NodePosition, Topology
from labeler.core.profiles import ASCEND_GROUP, ASCEND_SUPERPOD, ascend_superpod, oci_rdma
from labeler.emit import hypernodes, kueue, volcano

DNS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@pytest.mark.parametrize(
    "value",
    ["0", "abc123", "UPPER", "a.b", "a_b", "", "x" * 63, "ocid1.computelocalblock.oc1.iad.aaaa"],
)
def test_hypernode_names_are_dns_safe_and_short(value: str) -> None:
    name = hypernodes.hypernode_name(Level("k/x", "local_block"), value, "oci-")
    assert DNS.fullmatch(name) and len(name) <= 63
    assert name == hypernodes.hypernode_name(Level("k/x", "local_block"), value, "oci-")


def test_hypernode_names_keep_distinct_values_apart() -> None:
    lv = Level("k/x", "rack")
    names = {hypernodes.hypernode_name(lv, v) for v in ["A", "a", "a.b", "a-b", "a_b"]}
    assert len(names) == 5
    assert hypernodes.hypernode_name(lv, "r1") == "rack-r1"  # readable when already safe


def test_long_node_names_use_an_anchored_regex() -> None:
    long = "n" * 60 + ".example.com"
    m = hypernodes.node_member(long)
    assert m["selector"] == {"regexMatch": {"pattern": "^" + "n" * 60 + r"\.example\.com$"}}
    assert re.fullmatch(m["selector"]["regexMatch"]["pattern"], long)
    assert not re.search(m["selector"]["regexMatch"]["pattern"], "x" + long)
    assert hypernodes.node_member("gpu-1") == {
        "type": "Node",
        "selector": {"exactMatch": {"name": "gpu-1"}},
    }


def test_tier_name_is_the_label_key_like_discovery_and_only_from_1_14() -> None:
    # Volcano 1.14's label discovery names each tier after its label key; static
    # HyperNodes must use the same name so one highestTierName works on both paths
    topo = ascend_superpod().topology
    ps = [NodePosition("a", ("0", "1"))]
    new = hypernodes.build_hypernodes(topo, ps)
    old = hypernodes.build_hypernodes(
        topo, ps, hypernodes.HyperNodeOptions(volcano_version=hypernodes.parse_version("v1.13.2"))
    )
    assert [d["spec"].get("tierName") for d in new] == [ASCEND_SUPERPOD, ASCEND_GROUP]
    assert all("tierName" not in d["spec"] for d in old)
    for d in new + old:
        assert hypernodes.DISCOVERY_SOURCE_LABEL not in d["metadata"]["labels"]


def test_label_members_and_conflicting_parents_with_force() -> None:
    topo = ascend_superpod().topology
    ps = [
        NodePosition("a", ("0", "1")),
        NodePosition("b", ("0", "1")),
        NodePosition("c", ("1", "1")),
    ]
    docs = hypernodes.build_hypernodes(
        topo, ps, hypernodes.HyperNodeOptions(node_members=hypernodes.NodeMembers.LABELS)
    )
    assert docs[0]["spec"]["members"] == [
        {
            "type": "Node",
            "selector": {"labelMatch": {"matchLabels": {"huawei.com/topotree.superpodid": "1"}}},
        }
    ]
    groups = {d["metadata"]["name"]: d["spec"]["members"] for d in docs if d["spec"]["tier"] == 2}
    assert groups == {
        "group-0": [{"type": "HyperNode", "selector": {"exactMatch": {"name": "superpod-1"}}}]
    }  # majority parent wins; group 1 has no child left, so no HyperNode


def test_bad_options_are_rejected() -> None:
    topo = oci_rdma().topology
    with pytest.raises(InputError, match="hypernode-prefix"):
        hypernodes.build_hypernodes(topo, [], hypernodes.HyperNodeOptions(prefix="Bad_"))
    with pytest.raises(InputError, match="Volcano version"):
        hypernodes.parse_version("latest")


def test_kueue_limits() -> None:
    def levels(n: int) -> Topology:
        return Topology("t", tuple(Level(f"x/l{i}", f"l{i}") for i in range(n)))

    assert len(kueue.topology_object(levels(15), "t")["spec"]["levels"]) == 16  # + hostname
    with pytest.raises(InputError, match="16 levels, and Kueue allows at most 16 including"):
        kueue.topology_object(levels(16), "t")  # the hostname would be the 17th
    with pytest.raises(InputError, match="use at most 15 levels in the profile"):
        kueue.topology_object(levels(17), "t")
    with pytest.raises(InputError, match="at least one --flavor-node-label"):
        kueue.resource_flavor("f", "t", {})
    with pytest.raises(InputError, match="at most 8"):
        kueue.resource_flavor("f", "t", {f"k{i}": "v" for i in range(9)})
    with pytest.raises(InputError, match="--topology-name"):
        kueue.topology_object(oci_rdma().topology, "Bad_Name")


def test_flag_parsers() -> None:
    # --flavor-node-label is parsed by labeler.commands._base.parse_pairs (tests/cli/test_flags.py)
    assert kueue.parse_toleration("nvidia.com/gpu:NoSchedule").as_dict() == {
        "key": "nvidia.com/gpu",
        "operator": "Exists",
        "effect": "NoSchedule",
    }
    assert kueue.parse_toleration("k=v:NoExecute").as_dict() == {
        "key": "k",
        "operator": "Equal",
        "value": "v",
        "effect": "NoExecute",
    }
    with pytest.raises(InputError, match="effect"):
        kueue.parse_toleration("k=v:Sometimes")


def test_discovery_name_rules() -> None:
    topo = oci_rdma().topology
    with pytest.raises(InputError, match="at most 20"):
        volcano.discovery_config(topo, "a" * 21, "1h")
    assert volcano.default_discovery_name(ascend_superpod("t1").topology, "ascend-superpod") == (
        "ascend-superpod-t1"
    )
    assert len(volcano.default_discovery_name(topo, "x" * 40)) == 20


def test_reserved_node_override() -> None:
    cfg = volcano.resource_level_config(ascend_superpod().topology, reserved_node=2)
    assert cfg == {
        "default": {
            "level1": {"label": "huawei.com/topotree.superpodid", "reservedNode": 2},
            "level2": {"label": "huawei.com/topotree.groupid"},
        }
    }


def test_default_object_names_are_dns_safe_profile_names() -> None:
    from labeler.emit import Target, bundle

    target = Target(oci_rdma().topology, profile_name="Lab_Fabric")
    opts = bundle.GenerateOptions(options=(kueue.KueueOptions(flavor_node_labels={"a": "b"}),))
    docs = [o.docs[0] for o in bundle.build(target, opts) if o.applicable]
    assert [d["metadata"]["name"] for d in docs] == ["lab-fabric", "lab-fabric"]
    assert docs[1]["spec"]["topologyName"] == "lab-fabric"


def test_every_output_kind_has_one_emitter_and_options_of_its_own() -> None:
    from labeler.emit import bundle
    from labeler.emit.kinds import Kind

    assert [e.kind for e in bundle.EMITTERS] == list(Kind)
    assert len({type(e.defaults) for e in bundle.EMITTERS}) == len(bundle.EMITTERS)
    opts = bundle.GenerateOptions(options=(volcano.VolcanoOptions(reserved_node=3),))
    assert opts.of(volcano.VOLCANO).reserved_node == 3
    assert opts.of(volcano.DISCOVERY) is volcano.DISCOVERY.defaults
    with pytest.raises(TypeError, match="VolcanoOptions"):
        bundle.GenerateOptions(options=(volcano.VolcanoOptions(), volcano.VolcanoOptions()))
    with pytest.raises(TypeError, match="Toleration"):
        bundle.GenerateOptions(options=(kueue.Toleration("k", ""),))
