"""Property tests: the four emitted level orders agree, and HyperNodes form a proper tree."""

from __future__ import annotations

import json
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from labeler.core.model import HOSTNAME_LABEL, Level, NodePosition, Topology
from labeler.emit import hypernodes, kueue, volcano

_names = st.lists(
    st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), min_size=1, max_size=15, unique=True
)


def _topology(names: list[str], reserved: int | None) -> Topology:
    levels = [Level(f"example.com/{n}", n) for n in names]
    levels[-1] = Level(levels[-1].key, levels[-1].name, reserved_node=reserved)
    return Topology("tree", tuple(levels))


@given(_names, st.one_of(st.none(), st.integers(0, 5)))
def test_all_four_orders_agree(names: list[str], reserved: int | None) -> None:
    topo = _topology(names, reserved)
    widest_first = [f"example.com/{n}" for n in names]

    kueue_levels = [lv["nodeLabel"] for lv in kueue.topology_object(topo, "t")["spec"]["levels"]]
    assert kueue_levels == [*widest_first, HOSTNAME_LABEL]

    arguments = volcano.init_params_snippet(topo)["configurations"][0]["arguments"]
    config = json.loads(arguments["resource-level-config"])["tree"]
    assert list(config) == [f"level{i}" for i in range(1, len(names) + 1)]
    assert [config[f"level{i}"]["label"] for i in range(len(names), 0, -1)] == widest_first
    assert [k for k, v in config.items() if "reservedNode" in v] == (
        ["level1"] if reserved is not None else []
    )

    disc = volcano.discovery_config(topo, "t", volcano.DiscoveryOptions.interval)[
        "networkTopologyDiscovery"
    ][0]
    types = disc["config"]["networkTopologyTypes"]["t"]
    assert [t["nodeLabel"] for t in types] == [*widest_first, HOSTNAME_LABEL]

    # one node per chain of values: the HyperNode tiers must name the same labels
    node = NodePosition("n1", tuple(f"v-{n}" for n in names))
    docs = hypernodes.build_hypernodes(topo, [node])
    tier_label = {
        d["spec"]["tier"]: d["metadata"]["annotations"][hypernodes.LEVEL_ANNOTATION] for d in docs
    }
    assert [tier_label[t].split("=")[0] for t in range(len(names), 0, -1)] == widest_first


_value = st.sampled_from(["a", "b", "c"])


@settings(max_examples=60)
@given(st.lists(st.tuples(_value, _value, _value), min_size=1, max_size=25))
def test_hypernodes_form_a_tree_covering_every_node(rows: list[tuple[str, str, str]]) -> None:
    topo = _topology(["island", "block", "rack"], None)
    # make the values nest by construction: child values carry their parent's path
    ps = [NodePosition(f"n{i}", (a, a + b, a + b + c)) for i, (a, b, c) in enumerate(rows)]
    docs = hypernodes.build_hypernodes(topo, ps)
    by_name = {d["metadata"]["name"]: d for d in docs}
    assert len(by_name) == len(docs)
    node_members = Counter(
        m["selector"]["exactMatch"]["name"]
        for d in docs
        for m in d["spec"]["members"]
        if m["type"] == "Node"
    )
    assert node_members == Counter(p.node for p in ps)  # each node in exactly one tier-1
    parents: Counter[str] = Counter()
    for d in docs:
        for m in d["spec"]["members"]:
            if m["type"] == "HyperNode":
                child = by_name[m["selector"]["exactMatch"]["name"]]
                assert child["spec"]["tier"] == d["spec"]["tier"] - 1
                parents[child["metadata"]["name"]] += 1
    for d in docs:
        expected = 0 if d["spec"]["tier"] == 3 else 1
        assert parents[d["metadata"]["name"]] == expected
