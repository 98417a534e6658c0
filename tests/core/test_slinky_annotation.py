"""The Slinky topology annotation: owned like labels, computed from the node's labels."""

from __future__ import annotations

from labeler.core.model import Level, Topology
from labeler.core.node import OWNED_ANNOTATIONS_ANNOTATION, SLINKY_ANNOTATION, NodeLabels
from labeler.core.plan import Desired, Writer, plan_labels
from labeler.core.slinky import Slinky, topology_names

TOPO = Topology("default", (Level("x/rack", "rack", block=True), Level("x/leaf", "leaf")))
SLINKY = Slinky(TOPO, topology_names(TOPO, "gb"))
SPEC = "gb:leaf-l1,gb-block:rack-r1"
BY_AGENT = f'{{"{SLINKY_ANNOTATION}":"agent"}}'


def _plan(node: NodeLabels, desired: Desired, adopt: bool = False) -> dict[str, str | None]:
    return dict(plan_labels(node, SLINKY.add_to(desired, node.labels), adopt=adopt).annotations)


def test_written_and_owned_then_unchanged() -> None:
    node = NodeLabels("n", {})
    ann = _plan(node, Desired(set={"x/rack": "r1", "x/leaf": "l1"}))
    assert ann[SLINKY_ANNOTATION] == SPEC and ann[OWNED_ANNOTATIONS_ANNOTATION] == BY_AGENT
    written = {k: v for k, v in ann.items() if v is not None}
    done = NodeLabels("n", {"x/rack": "r1", "x/leaf": "l1"}, written)
    plan = plan_labels(done, SLINKY.add_to(Desired(set=dict(done.labels)), done.labels))
    assert plan.is_noop


def test_foreign_value_is_a_conflict_unless_adopted() -> None:
    node = NodeLabels("n", {"x/rack": "r1", "x/leaf": "l1"}, {SLINKY_ANNOTATION: "other:s0"})
    desired = SLINKY.add_to(Desired(set=dict(node.labels)), node.labels)
    plan = plan_labels(node, desired)
    assert not plan.annotations and [c.key for c in plan.conflicts] == [SLINKY_ANNOTATION]
    assert plan_labels(node, desired, adopt=True).annotations[SLINKY_ANNOTATION] == SPEC


def test_equal_foreign_value_is_left_alone_and_not_claimed() -> None:
    node = NodeLabels("n", {"x/rack": "r1", "x/leaf": "l1"}, {SLINKY_ANNOTATION: SPEC})
    assert _plan(node, Desired(set=dict(node.labels))) == {}


def test_removed_with_the_levels_only_if_ours() -> None:
    ours = {SLINKY_ANNOTATION: SPEC, OWNED_ANNOTATIONS_ANNOTATION: BY_AGENT}
    node = NodeLabels("n", {"x/rack": "r1", "x/leaf": "l1"}, ours)
    ann = _plan(node, Desired(remove=frozenset({"x/leaf"})), adopt=True)
    assert ann == {SLINKY_ANNOTATION: None, OWNED_ANNOTATIONS_ANNOTATION: None}
    foreign = NodeLabels("n", {"x/rack": "r1"}, {SLINKY_ANNOTATION: "x:y"})
    assert _plan(foreign, Desired(set={"x/rack": "r1"})) == {}


def test_another_writer_of_ours_owns_it_like_a_label() -> None:
    labels = {"x/rack": "r1", "x/leaf": "l2"}
    ours = {SLINKY_ANNOTATION: SPEC, OWNED_ANNOTATIONS_ANNOTATION: BY_AGENT}
    node = NodeLabels("n", labels, ours)
    desired = SLINKY.add_to(Desired(set=labels, writer=Writer.BULK), labels)
    plan = plan_labels(node, desired)
    (conflict,) = plan.conflicts
    assert conflict.key == SLINKY_ANNOTATION and conflict.owner == "agent"
    assert "owned by the topology-labeler agent" in str(conflict)
    taken = plan_labels(node, desired, adopt=True).annotations
    assert taken[SLINKY_ANNOTATION] == "gb:leaf-l2,gb-block:rack-r1"
    assert taken[OWNED_ANNOTATIONS_ANNOTATION] == f'{{"{SLINKY_ANNOTATION}":"bulk"}}'
    # the agent's own value it changes without adopt
    again = plan_labels(node, SLINKY.add_to(Desired(set=labels), labels))
    assert not again.conflicts and again.annotations[SLINKY_ANNOTATION].startswith("gb:leaf-l2")


def test_an_equal_value_is_claimed_by_the_agent_like_its_labels() -> None:
    labels = {"x/rack": "r1", "x/leaf": "l1"}
    node = NodeLabels("n", labels, {SLINKY_ANNOTATION: SPEC})
    plan = plan_labels(node, SLINKY.add_to(Desired(set=labels, claim=True), labels))
    assert plan.annotations[OWNED_ANNOTATIONS_ANNOTATION] == BY_AGENT
    assert SLINKY_ANNOTATION not in plan.annotations and not plan.labels
    assert SLINKY_ANNOTATION in plan.claimed
