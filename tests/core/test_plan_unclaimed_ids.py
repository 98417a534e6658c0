"""Without ``claim`` (bulk apply), a value someone else already set to what we want is not
claimed, so no write at all. The agent claims such a value instead (test_plan.py)."""

from labeler.core.node import OWNED_ANNOTATION, SOURCE_IDS_ANNOTATION, NodeLabels
from labeler.core.plan import Desired, plan_labels

SP = "huawei.com/topotree.superpodid"
TREE = "huawei.com/topotree"


def test_equal_foreign_value_is_a_noop_even_with_source_ids() -> None:
    node = NodeLabels("n1", labels={SP: "7", TREE: "default"})
    desired = Desired(set={SP: "7", TREE: "default"}, source_ids={SP: "7"})
    plan = plan_labels(node, desired)
    assert plan.is_noop and plan.unchanged == (TREE, SP)


def test_only_written_keys_get_claimed_and_traced() -> None:
    node = NodeLabels("n1", labels={SP: "7"})
    desired = Desired(set={SP: "7", TREE: "default"}, source_ids={SP: "7", TREE: "default"})
    plan = plan_labels(node, desired)
    assert plan.labels == {TREE: "default"}
    assert plan.annotations[OWNED_ANNOTATION] == TREE
    assert plan.annotations[SOURCE_IDS_ANNOTATION] == '{"huawei.com/topotree":"default"}'
