"""check_positions: completeness, nesting, validity and the exclusive node states."""

from hypothesis import given
from hypothesis import strategies as st

from labeler.core.check import NodeState, check_positions
from labeler.core.model import Level, NodePosition, Topology
from labeler.core.profiles import ascend_superpod

TOPO = Topology(
    "t", (Level("x/island", "island"), Level("x/block", "block"), Level("x/rack", "rack"))
)


def P(node: str, *values: str | None) -> NodePosition:
    return NodePosition(node, tuple(values))


def test_clean_cluster_is_ok_with_domain_sizes() -> None:
    ps = [P("n1", "i1", "b1", "r1"), P("n2", "i1", "b1", "r1"), P("n3", "i1", "b2", "r2")]
    r = check_positions(TOPO, ps)
    assert r.ok
    assert r.nodes == 3
    assert dict(r.domain_sizes["x/rack"]) == {"r1": 2, "r2": 1}
    assert dict(r.domain_sizes["x/island"]) == {"i1": 3}
    stats = r.size_stats("x/rack")
    assert stats is not None and (stats.domains, stats.min, stats.median, stats.max) == (
        2,
        1,
        1.5,
        2,
    )
    assert all(r.node_state(p) == NodeState.LABELED for p in ps)
    assert r.problems() == []


def test_missing_labels_are_listed_by_level_and_states_are_exclusive() -> None:
    ps = [
        P("full", "i1", "b1", "r1"),
        P("nolevel", None, None, None),
        P("b-nomiss", "i1", None, "r1"),
        P("a-norack", "i1", "b1", None),
    ]
    r = check_positions(TOPO, ps)
    assert not r.ok
    assert r.missing["x/block"] == ("b-nomiss", "nolevel")
    assert r.missing["x/rack"] == ("a-norack", "nolevel")
    assert r.missing["x/island"] == ("nolevel",)
    states = {p.node: r.node_state(p) for p in ps}
    assert states == {
        "full": NodeState.LABELED,
        "nolevel": NodeState.UNLABELED,
        "b-nomiss": NodeState.PARTIAL,
        "a-norack": NodeState.PARTIAL,
    }
    assert any("2 node(s) lack x/rack" in line for line in r.problems())


def test_child_with_two_parents_is_a_violation_naming_both() -> None:
    ps = [
        P("n1", "i1", "b1", "r1"),
        P("n2", "i2", "b1", "r2"),  # b1 under i1 and i2
        P("n3", "i2", "b2", "r3"),
    ]
    r = check_positions(TOPO, ps)
    assert not r.ok
    assert len(r.nesting) == 1
    v = r.nesting[0]
    assert v.level.key == "x/block" and v.value == "b1"
    assert v.parents == ("i1", "i2")
    assert v.nodes == ("n1", "n2")
    assert r.node_state(ps[0]) == NodeState.INCONSISTENT
    assert r.node_state(ps[2]) == NodeState.LABELED
    msg = r.problems()[0]
    assert "x/block=b1" in msg and "i1, i2" in msg and "x/island" in msg


def test_narrowest_value_reused_in_two_blocks_is_caught() -> None:
    ps = [P("n1", "i1", "b1", "r1"), P("n2", "i1", "b2", "r1")]
    r = check_positions(TOPO, ps)
    assert [(v.level.name, v.value, v.parents) for v in r.nesting] == [("rack", "r1", ("b1", "b2"))]


def test_invalid_and_empty_values_and_duplicates() -> None:
    ps = [P("n1", "i1", "b1", "x" * 64), P("n2", "i1", "b1", ""), P("n2", "i1", "b1", "r")]
    r = check_positions(TOPO, ps)
    assert not r.ok
    text = "\n".join(r.invalid)
    assert "node n1" in text and "64 characters" in text
    assert "node n2: invalid value '' for x/rack" in text
    assert "node n2 appears 2 times" in text


def test_empty_tree_label() -> None:
    prof = ascend_superpod("tree-a")
    topo = prof.topology
    ps = [P("a", "0", "1"), P("b", "0", "2")]
    r = check_positions(topo, ps, {"a": "", "b": "tree-a"})
    assert r.empty_tree_label == ("a",)
    assert not r.ok
    assert any("huawei.com/topotree" in line for line in r.problems())
    assert check_positions(topo, ps, {"b": "tree-a"}).ok


def test_empty_input_is_ok() -> None:
    r = check_positions(TOPO, [])
    assert r.ok and r.nodes == 0 and r.size_stats("x/rack") is None


_vals = st.sampled_from(["a", "b", "c", None])


@given(st.lists(st.tuples(_vals, _vals, _vals), max_size=30))
def test_states_partition_nodes_and_nesting_matches_brute_force(rows: list) -> None:  # type: ignore[type-arg]
    ps = [P(f"n{i}", *row) for i, row in enumerate(rows)]
    r = check_positions(TOPO, ps)
    states = [r.node_state(p) for p in ps]
    assert all(s in NodeState for s in states)
    # brute force: a value at level i is a violation if two nodes give it different parents
    expected = set()
    for i in (1, 2):
        for a in ps:
            for b in ps:
                va, vb, pa, pb = a.values[i], b.values[i], a.values[i - 1], b.values[i - 1]
                if va is not None and va == vb and pa and pb and pa != pb:
                    expected.add((i, va))
    got = {(TOPO.index(v.level.key), v.value) for v in r.nesting}
    assert got == expected
    assert r.ok == (not expected and all(p.complete for p in ps))
