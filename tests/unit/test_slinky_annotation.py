"""The Slinky topology annotation: owned like labels, computed from the node's labels."""

from __future__ import annotations

from labeler.emit.slurm import SLINKY_ANNOTATION, Slinky, topology_names
from labeler.model import Level, Topology
from labeler.node import OWNED_ANNOTATIONS_ANNOTATION, NodeLabels
from labeler.plan import Desired, plan_labels

TOPO = Topology("default", (Level("x/rack", "rack", block=True), Level("x/leaf", "leaf")))
SLINKY = Slinky(TOPO, topology_names(TOPO, "gb"))
SPEC = "gb:leaf-l1,gb-block:rack-r1"


def _plan(node: NodeLabels, desired: Desired, adopt: bool = False) -> dict[str, str | None]:
    return dict(plan_labels(node, SLINKY.add_to(desired, node.labels), adopt=adopt).annotations)


def test_written_and_owned_then_unchanged() -> None:
    node = NodeLabels("n", {})
    ann = _plan(node, Desired(set={"x/rack": "r1", "x/leaf": "l1"}))
    assert ann[SLINKY_ANNOTATION] == SPEC and ann[OWNED_ANNOTATIONS_ANNOTATION] == SLINKY_ANNOTATION
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
    ours = {SLINKY_ANNOTATION: SPEC, OWNED_ANNOTATIONS_ANNOTATION: SLINKY_ANNOTATION}
    node = NodeLabels("n", {"x/rack": "r1", "x/leaf": "l1"}, ours)
    ann = _plan(node, Desired(remove=frozenset({"x/leaf"})), adopt=True)
    assert ann == {SLINKY_ANNOTATION: None, OWNED_ANNOTATIONS_ANNOTATION: None}
    foreign = NodeLabels("n", {"x/rack": "r1"}, {SLINKY_ANNOTATION: "x:y"})
    assert _plan(foreign, Desired(set={"x/rack": "r1"})) == {}
