"""The ownership rules (docs/architecture.md), as a pure function."""

import json

import pytest

from labeler.core.node import OWNED_ANNOTATION, OWNERS_ANNOTATION, SOURCE_IDS_ANNOTATION, NodeLabels
from labeler.core.plan import Desired, Writer, plan_labels
from tests.builders import node

K1, K2, K3 = "x.io/island", "x.io/block", "x.io/rack"


def test_new_keys_are_set_and_claimed() -> None:
    plan = plan_labels(node("n1").plan_view(), Desired(set={K1: "a", K2: "b"}))
    assert plan.labels == {K1: "a", K2: "b"}
    assert plan.annotations[OWNED_ANNOTATION] == f"{K2},{K1}"


def test_only_changed_keys_are_in_the_patch() -> None:
    current = owned_by({K1: "a", K2: "old"}, {K1: Writer.AGENT, K2: Writer.AGENT})
    plan = plan_labels(current, Desired(set={K1: "a", K2: "b"}))
    assert plan.labels == {K2: "b"}
    assert plan.annotations == {}
    assert plan.unchanged == (K1,)


def test_unchanged_rerun_is_a_noop() -> None:
    current = node("n1").labels({K1: "a"}).owned(K1).source_ids({K1: "ocid.a"}).plan_view()
    plan = plan_labels(current, Desired(set={K1: "a"}, source_ids={K1: "ocid.a"}))
    assert plan.is_noop


def test_equal_value_set_by_someone_else_is_left_alone_without_claim() -> None:
    plan = plan_labels(
        node("n1").labels({K1: "a"}).plan_view(),
        Desired(set={K1: "a"}, source_ids={K1: "id"}),
    )
    assert plan.is_noop


def test_foreign_value_is_a_conflict_not_overwritten() -> None:
    plan = plan_labels(
        node("n1").labels({K1: "theirs"}).plan_view(),
        Desired(set={K1: "ours", K2: "b"}),
    )
    assert plan.labels == {K2: "b"}
    assert [(c.key, c.current, c.wanted) for c in plan.conflicts] == [(K1, "theirs", "ours")]
    assert "--adopt" in str(plan.conflicts[0])


def test_adopt_takes_over_a_foreign_value() -> None:
    plan = plan_labels(
        node("n1").labels({K1: "theirs"}).plan_view(),
        Desired(set={K1: "ours"}),
        adopt=True,
    )
    assert plan.labels == {K1: "ours"}
    assert plan.annotations[OWNED_ANNOTATION] == K1
    assert not plan.conflicts


def test_stale_owned_key_in_scope_is_removed() -> None:
    current = node("n1").labels({K1: "a", K3: "r"}).owned(K1, K3).plan_view()
    plan = plan_labels(current, Desired(set={K1: "a"}, prune=frozenset({K1, K3})))
    assert plan.labels == {K3: None}
    assert plan.annotations[OWNED_ANNOTATION] == K1


def test_key_outside_scope_is_never_removed_even_if_owned() -> None:
    current = node("n1").labels({K1: "a", K2: "bulk"}).owned(K1, K2).plan_view()
    plan = plan_labels(current, Desired(set={K1: "a"}, prune=frozenset({K1})))
    assert plan.is_noop


def test_unowned_key_in_scope_is_not_pruned() -> None:
    plan = plan_labels(
        node("n1").labels({K3: "hand"}).plan_view(),
        Desired(set={K1: "a"}, prune=frozenset({K1, K3})),
    )
    assert plan.labels == {K1: "a"}


def test_delete_removes_owned_and_reports_foreign() -> None:
    current = node("n1").labels({K1: "a", K2: "theirs"}).owned(K1).plan_view()
    plan = plan_labels(current, Desired(remove=frozenset({K1, K2, K3})))
    assert plan.labels == {K1: None}
    assert plan.annotations[OWNED_ANNOTATION] is None
    assert [(c.key, c.wanted) for c in plan.conflicts] == [(K2, None)]


def test_delete_with_adopt_removes_foreign_too() -> None:
    plan = plan_labels(
        node("n1").labels({K2: "theirs"}).plan_view(),
        Desired(remove=frozenset({K2})),
        adopt=True,
    )
    assert plan.labels == {K2: None}


def test_hand_deleted_owned_label_is_restored() -> None:
    current = owned_by({}, {K1: Writer.AGENT})
    plan = plan_labels(current, Desired(set={K1: "a"}, prune=frozenset({K1})))
    assert plan.labels == {K1: "a"}
    assert plan.annotations == {}


def test_source_ids_recorded_for_owned_keys_and_dropped_with_them() -> None:
    plan = plan_labels(
        node("n1").plan_view(),
        Desired(set={K1: "h1"}, source_ids={K1: "ocid1.long"}),
    )
    assert json.loads(str(plan.annotations[SOURCE_IDS_ANNOTATION])) == {K1: "ocid1.long"}
    current = node("n1").labels({K1: "h1"}).owned(K1).source_ids({K1: "ocid1.long"}).plan_view()
    gone = plan_labels(current, Desired(prune=frozenset({K1})))
    assert gone.labels == {K1: None}
    assert gone.annotations[SOURCE_IDS_ANNOTATION] is None


def test_corrupt_source_ids_annotation_is_rewritten() -> None:
    current = NodeLabels("n1", {K1: "h"}, {OWNED_ANNOTATION: K1, SOURCE_IDS_ANNOTATION: "{bad"})
    plan = plan_labels(current, Desired(set={K1: "h"}, source_ids={K1: "id"}))
    assert json.loads(str(plan.annotations[SOURCE_IDS_ANNOTATION])) == {K1: "id"}


@pytest.mark.parametrize("owned", [f"{K1} {K2}", f"{K1}\n{K2}\n", f" {K1},\t{K2} "])
def test_hand_edited_owned_list_separated_by_spaces_or_lines_keeps_ownership(owned: str) -> None:
    """No label key holds whitespace, so "a b" or one key per line (a hand edit, a YAML
    block) lists two keys. Read as one unknown key, both were forgotten: the annotation was
    deleted and our labels became foreign for good (a new reading = a conflict forever)."""
    current = (
        node("n1").labels({K1: "a", K2: "b"}).annotations({OWNED_ANNOTATION: owned}).plan_view()
    )
    assert current.owned == {K1, K2}
    plan = plan_labels(current, Desired(set={K1: "a2", K2: "b"}, prune=frozenset({K1, K2})))
    assert plan.labels == {K1: "a2"}
    assert not plan.conflicts
    assert OWNED_ANNOTATION not in plan.annotations  # same keys: nothing to rewrite


def test_patch_carries_resource_version_and_nulls() -> None:
    plan = plan_labels(
        node("n1").labels({K1: "a"}).owned(K1).plan_view(),
        Desired(remove=frozenset({K1})),
    )
    body = plan.patch("7")
    assert body == {
        "metadata": {
            "labels": {K1: None},
            "annotations": {OWNED_ANNOTATION: None},
            "resourceVersion": "7",
        }
    }


def test_fill_sets_only_where_the_node_has_no_value() -> None:
    desired = Desired(fill={K1: "default"}, prune=frozenset({K2}))
    assert plan_labels(node("n1").plan_view(), desired).labels == {K1: "default"}
    assert plan_labels(
        node("n1").labels({K1: "theirs"}).plan_view(), desired
    ).is_noop  # a real value is never replaced
    assert plan_labels(
        node("n1").labels({K1: "ours"}).owned(K1).plan_view(), desired
    ).is_noop  # not even an owned one
    empty = plan_labels(
        node("n1").labels({K1: ""}).plan_view(), desired
    )  # empty is no value, but not ours: conflict
    assert [(c.key, c.current) for c in empty.conflicts] == [(K1, "")]
    # A filled key is wanted, so a prune of the same key does not remove it.
    both = Desired(fill={K1: "default"}, prune=frozenset({K1}))
    assert plan_labels(node("n1").labels({K1: "default"}).owned(K1).plan_view(), both).is_noop


# --- which writer of ours owns a key ---------------------------------------------------


def owned_by(labels: dict[str, str], owners: dict[str, str], owned: str = "") -> NodeLabels:
    ann = {OWNED_ANNOTATION: owned or ",".join(sorted(owners))}
    ann[OWNERS_ANNOTATION] = json.dumps(owners)
    return NodeLabels("n1", labels, ann, "7")


def test_each_writer_records_itself_as_the_owner_of_what_it_writes() -> None:
    agent = plan_labels(node("n1").plan_view(), Desired(set={K1: "a"}))
    assert json.loads(str(agent.annotations[OWNERS_ANNOTATION])) == {K1: Writer.AGENT}
    bulk = plan_labels(node("n1").plan_view(), Desired(set={K1: "a"}, writer=Writer.BULK))
    assert json.loads(str(bulk.annotations[OWNERS_ANNOTATION])) == {K1: Writer.BULK}
    assert bulk.annotations[OWNED_ANNOTATION] == K1  # the union stays, for older readers


def test_bulk_changing_an_agent_key_is_a_conflict_naming_the_agent() -> None:
    current = owned_by({K1: "a"}, {K1: Writer.AGENT})
    plan = plan_labels(current, Desired(set={K1: "hand"}, writer=Writer.BULK))
    assert plan.is_noop
    [c] = plan.conflicts
    assert (c.key, c.current, c.wanted, c.owner) == (K1, "a", "hand", Writer.AGENT)
    assert "owned by the topology-labeler agent" in str(c) and "--adopt" in str(c)


def test_agent_changing_a_bulk_key_is_a_conflict_not_a_revert() -> None:
    current = owned_by({K1: "hand"}, {K1: Writer.BULK})
    plan = plan_labels(current, Desired(set={K1: "a"}, prune=frozenset({K1}), claim=True))
    assert plan.is_noop
    assert [(c.key, c.owner) for c in plan.conflicts] == [(K1, Writer.BULK)]
    assert "topology-labeler apply/delete" in str(plan.conflicts[0])


def test_adopt_takes_over_another_writers_key() -> None:
    current = owned_by({K1: "a", K2: "b"}, {K1: Writer.AGENT, K2: Writer.AGENT})
    plan = plan_labels(current, Desired(set={K1: "hand"}, writer=Writer.BULK), adopt=True)
    assert plan.labels == {K1: "hand"}
    assert json.loads(str(plan.annotations[OWNERS_ANNOTATION])) == {
        K1: Writer.BULK,
        K2: Writer.AGENT,
    }
    assert OWNED_ANNOTATION not in plan.annotations  # the same keys are ours


def test_equal_value_of_another_writer_is_neither_a_conflict_nor_claimed() -> None:
    current = owned_by({K1: "a"}, {K1: Writer.BULK})
    assert plan_labels(current, Desired(set={K1: "a"}, claim=True)).is_noop
    assert plan_labels(current, Desired(set={K1: "a"}, claim=True)).conflicts == ()


def test_prune_and_delete_leave_another_writers_key() -> None:
    current = owned_by({K1: "a", K2: "b"}, {K1: Writer.BULK, K2: Writer.AGENT})
    pruned = plan_labels(current, Desired(prune=frozenset({K1, K2})))
    assert pruned.labels == {K2: None} and not pruned.conflicts
    deleted = plan_labels(current, Desired(remove=frozenset({K1, K2}), writer=Writer.BULK))
    assert deleted.labels == {K1: None}
    assert [(c.key, c.wanted, c.owner) for c in deleted.conflicts] == [(K2, None, Writer.AGENT)]
    assert "owned by the topology-labeler agent" in str(deleted.conflicts[0])


def test_keys_owned_before_writers_were_recorded_are_any_writers_of_ours() -> None:
    """An annotation written by an earlier version lists keys without writers: each writer
    of ours may still change or remove them, as before, and records itself when it does."""
    legacy = node("n1").labels({K1: "a", K2: "b"}).owned(K1, K2).plan_view()
    assert legacy.owners == {}
    bulk = plan_labels(legacy, Desired(set={K1: "hand"}, writer=Writer.BULK))
    assert bulk.labels == {K1: "hand"} and not bulk.conflicts
    assert json.loads(str(bulk.annotations[OWNERS_ANNOTATION])) == {K1: Writer.BULK}
    pruned = plan_labels(legacy, Desired(prune=frozenset({K2})))
    assert pruned.labels == {K2: None}


def test_owner_entries_for_keys_not_in_owned_labels_are_ignored_and_dropped() -> None:
    """An older version removed the key (and its owned-labels entry) without knowing the
    owned-by annotation; the stale entry must not make a hand-set value ours."""
    stale = NodeLabels(
        "n1",
        {K1: "hand"},
        {OWNERS_ANNOTATION: json.dumps({K1: Writer.AGENT}), OWNED_ANNOTATION: ""},
    )
    assert stale.owners == {}
    plan = plan_labels(stale, Desired(set={K1: "a"}))
    assert [(c.key, c.owner) for c in plan.conflicts] == [(K1, None)]
    assert plan.annotations == {OWNERS_ANNOTATION: None}


def test_a_filled_default_is_owned_by_no_writer_so_any_may_replace_it() -> None:
    plan = plan_labels(node("n1").plan_view(), Desired(fill={K1: "default"}))
    assert plan.annotations[OWNED_ANNOTATION] == K1
    assert OWNERS_ANNOTATION not in plan.annotations
    filled = node("n1").labels({K1: "default"}).owned(K1).plan_view()
    sheet = plan_labels(filled, Desired(set={K1: "pod-a"}, writer=Writer.BULK))
    assert sheet.labels == {K1: "pod-a"} and not sheet.conflicts


# --- the agent claims an equal value no writer of ours owns ----------------------------


def test_agent_claims_an_equal_foreign_value_with_one_annotation_write() -> None:
    current = node("n1").labels({K1: "a", K2: "b"}).owned(K2).source_ids({K2: "id.b"}).plan_view()
    desired = Desired(set={K1: "a", K2: "b"}, source_ids={K1: "id.a", K2: "id.b"}, claim=True)
    plan = plan_labels(current, desired)
    assert plan.labels == {}  # the label is untouched
    assert plan.claimed == (K2, K1)  # K2 was ours without a writer: now the agent's
    assert plan.annotations[OWNED_ANNOTATION] == f"{K2},{K1}"
    assert json.loads(str(plan.annotations[OWNERS_ANNOTATION])) == {
        K1: Writer.AGENT,
        K2: Writer.AGENT,
    }
    assert json.loads(str(plan.annotations[SOURCE_IDS_ANNOTATION])) == {
        K1: "id.a",
        K2: "id.b",
    }
    after = NodeLabels("n1", current.labels, {k: str(v) for k, v in plan.annotations.items()})
    assert plan_labels(after, desired).is_noop  # steady state: no write after the claim


def test_a_claimed_key_is_then_the_agents_to_change() -> None:
    claimed = owned_by({K1: "a"}, {K1: Writer.AGENT})
    plan = plan_labels(claimed, Desired(set={K1: "new"}, claim=True))
    assert plan.labels == {K1: "new"} and not plan.conflicts


def test_without_claim_an_equal_foreign_value_is_still_left_alone() -> None:
    plan = plan_labels(
        node("n1").labels({K1: "a"}).plan_view(),
        Desired(set={K1: "a"}, writer=Writer.BULK),
    )
    assert plan.is_noop and plan.claimed == ()
