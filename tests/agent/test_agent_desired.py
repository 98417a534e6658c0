"""desired_from_outcome and the plan it leads to: the agent's decisions without any I/O."""

from __future__ import annotations

import hashlib

import pytest

from labeler.agent.decide import (
    ReconcileResult,
    Status,
    desired_from_outcome,
    isolated_value,
    node_is_labeled,
    unknown_labels,
)
from labeler.core.labels import InvalidLabelValue, parse_encoding
from labeler.core.node import (
    OWNED_ANNOTATION,
    OWNERS_ANNOTATION,
    SLINKY_ANNOTATION,
    SOURCE_IDS_ANNOTATION,
    NodeLabels,
)
from labeler.core.plan import LabelPlan, describe, plan_labels
from labeler.core.profiles import (
    ASCEND_GROUP,
    ASCEND_SUPERPOD,
    ASCEND_TREE_LABEL,
    NVIDIA_CLIQUE,
    ascend_superpod,
    nvlink,
    oci_rdma,
)
from labeler.core.slinky import Slinky, topology_names
from labeler.sources import NoData, Reading, ascend, oci_imds
from labeler.sources import nvlink as nvlink_source
from labeler.sources.oci_imds import FABRIC, HOST, ISLAND, LOCAL_BLOCK, NETWORK_BLOCK

P = oci_rdma()
K = P.keys_for(oci_imds.ROLES)  # role → label key, the agent's scope
AK = ascend_superpod().keys_for(ascend.ROLES)
HASH = parse_encoding("hash")
OCID = "ocid1.computelocalblock.oc1.iad.anuwcljrg5pyaeycu6xkmkpz4o3oub4a4qrp5f6tsoy2hfb4p6ya"
READING = Reading(
    ids={
        ISLAND: "ocid1.hpcisland.oc1.iad.aaaa",
        NETWORK_BLOCK: "ocid1.computenetworkblock.oc1.iad.bbbb",
        LOCAL_BLOCK: OCID,
        HOST: "ocid1.computebaremetalhost.oc1.iad.cccc",
    }
)
LABEL_IDS = {K[role]: sid for role, sid in READING.ids.items()}


def h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def written(plan: LabelPlan) -> NodeLabels:
    """Node n1 after ``plan``, a first write, was applied: its labels and annotations, none
    removed."""
    return NodeLabels(
        "n1",
        {k: v for k, v in plan.labels.items() if v is not None},
        {k: v for k, v in plan.annotations.items() if v is not None},
    )


def test_reading_sets_every_id_hashed_and_prunes_the_whole_profile_scope() -> None:
    d = desired_from_outcome(P, READING, HASH, "n1", keys=K)
    assert d is not None
    assert d.set == {k: h(v) for k, v in LABEL_IDS.items()}
    assert d.prune == frozenset(P.all_keys)
    assert d.source_ids == LABEL_IDS


def test_suffix_11_matches_oracles_labeler() -> None:
    d = desired_from_outcome(P, READING, parse_encoding("suffix:11"), "n1", keys=K)
    assert d is not None
    assert d.set[K[LOCAL_BLOCK]] == OCID[-11:]


def test_raw_encoding_of_an_ocid_is_a_clear_error() -> None:
    with pytest.raises(InvalidLabelValue, match=r"local_block_id.*use --encoding hash"):
        desired_from_outcome(P, READING, parse_encoding("raw"), "n1", keys=K)


def test_equal_ids_give_equal_values_on_two_nodes() -> None:
    a = desired_from_outcome(P, READING, HASH, "n1", keys=K)
    b = desired_from_outcome(P, READING, HASH, "n2", keys=K)
    assert a is not None and b is not None and a.set == b.set


def test_no_data_with_skip_writes_nothing_at_all() -> None:
    assert desired_from_outcome(P, NoData("404"), HASH, "n1", "skip", keys=K) is None


def isolate_plan(node: str, labels: dict[str, str]) -> LabelPlan:
    d = desired_from_outcome(P, NoData("404"), HASH, node, "isolate", keys=K)
    assert d is not None and not d.set and not d.prune and not d.remove
    return plan_labels(NodeLabels(node, labels), d)


def test_no_data_with_isolate_gives_a_per_node_unique_value_on_each_level() -> None:
    a = isolate_plan("n1", {}).added
    b = isolate_plan("n2", {}).added
    assert set(a) == set(P.level_keys)  # levels only, no host ID
    assert len(set(a.values())) == 1 and a[K[LOCAL_BLOCK]] == isolated_value("n1")
    assert a[K[LOCAL_BLOCK]] != b[K[LOCAL_BLOCK]]


def test_no_data_with_isolate_never_overwrites_present_levels() -> None:
    current = {K[ISLAND]: "x", K[NETWORK_BLOCK]: "y", K[LOCAL_BLOCK]: "z"}
    assert isolate_plan("n1", current).is_noop
    partial = isolate_plan("n1", {K[ISLAND]: "x"}).added
    assert K[ISLAND] not in partial and K[LOCAL_BLOCK] in partial


def test_tree_label_is_a_default_and_never_pruned_for_a_profile_with_one() -> None:
    p = ascend_superpod("pod-a")
    reading = Reading(ids={ascend.SUPERPOD: "7"})
    d = desired_from_outcome(p, reading, parse_encoding("raw"), "n1", keys=AK)
    assert d is not None
    assert d.set == {ASCEND_SUPERPOD: "7"}
    assert d.fill == {ASCEND_TREE_LABEL: "pod-a"}
    assert plan_labels(NodeLabels("n1"), d).added == {
        ASCEND_SUPERPOD: "7",
        ASCEND_TREE_LABEL: "pod-a",
    }
    assert ASCEND_TREE_LABEL not in d.prune
    # The group ID is the planning sheet's: no role of the agent's source, never pruned.
    assert ASCEND_GROUP not in d.prune
    no_data = desired_from_outcome(p, NoData("no spod"), parse_encoding("raw"), "n1", keys=AK)
    assert no_data is None


def test_an_existing_tree_is_never_changed_by_the_agent() -> None:
    # lld/apply put the node in tree "prod"; an agent started with the default tree name
    # must not move it (nor remove it), or the two writers would fight.
    p = ascend_superpod("default")
    reading = Reading(ids={ascend.SUPERPOD: "7"})
    raw = parse_encoding("raw")
    d = desired_from_outcome(p, reading, raw, "n1", keys=AK)
    assert d is not None
    assert ASCEND_TREE_LABEL not in d.prune
    current = {ASCEND_TREE_LABEL: "prod", ASCEND_SUPERPOD: "7"}
    annotations = {
        OWNED_ANNOTATION: f"{ASCEND_TREE_LABEL},{ASCEND_SUPERPOD}",
        OWNERS_ANNOTATION: '{"huawei.com/topotree.superpodid":"agent"}',
        SOURCE_IDS_ANNOTATION: '{"huawei.com/topotree.superpodid":"7"}',
    }
    owned = NodeLabels("n1", current, annotations)
    assert plan_labels(owned, d).is_noop
    # An empty tree label is no tree (Volcano rejects it): the agent fills it in.
    empty = NodeLabels("n1", {ASCEND_TREE_LABEL: ""}, {OWNED_ANNOTATION: ASCEND_TREE_LABEL})
    assert plan_labels(empty, d).added[ASCEND_TREE_LABEL] == "default"


def test_scope_narrows_what_is_pruned() -> None:
    d = desired_from_outcome(P, READING, HASH, "n1", keys={LOCAL_BLOCK: K[LOCAL_BLOCK]})
    assert d is not None and d.prune == frozenset({K[LOCAL_BLOCK]})
    assert d.set == {K[LOCAL_BLOCK]: h(OCID)}  # a role without a key is not written


# --- through plan_labels: the ownership rules as the agent meets them ------------------


def test_first_run_sets_labels_claims_them_and_records_source_ids() -> None:
    d = desired_from_outcome(P, READING, HASH, "n1", keys=K)
    assert d is not None
    plan = plan_labels(NodeLabels("n1", {"other": "x"}), d)
    assert plan.added == d.set
    assert plan.annotations[OWNED_ANNOTATION] == ",".join(sorted(d.set))
    ann = plan.annotations[SOURCE_IDS_ANNOTATION]
    assert ann is not None and OCID in ann
    assert "other" not in plan.labels


def test_second_run_is_a_noop() -> None:
    d = desired_from_outcome(P, READING, HASH, "n1", keys=K)
    assert d is not None
    first = plan_labels(NodeLabels("n1"), d)
    node = written(first)
    assert plan_labels(node, d).is_noop


def test_a_foreign_value_is_a_conflict_unless_adopted() -> None:
    d = desired_from_outcome(P, READING, HASH, "n1", keys=K)
    assert d is not None
    node = NodeLabels("n1", {K[LOCAL_BLOCK]: "hand-made"})
    plan = plan_labels(node, d)
    assert [c.key for c in plan.conflicts] == [K[LOCAL_BLOCK]]
    assert K[LOCAL_BLOCK] not in plan.labels
    assert plan_labels(node, d, adopt=True).labels[K[LOCAL_BLOCK]] == h(OCID)


def test_an_owned_key_missing_from_a_new_reading_is_removed() -> None:
    old = Reading(ids={**READING.ids, FABRIC: "ocid1.fabric.x"})
    d_old = desired_from_outcome(P, old, HASH, "n1", keys=K)
    assert d_old is not None
    first = plan_labels(NodeLabels("n1"), d_old)
    node = written(first)
    d_new = desired_from_outcome(P, READING, HASH, "n1", keys=K)
    assert d_new is not None
    assert plan_labels(node, d_new).labels == {K[FABRIC]: None}


def test_node_is_labeled_needs_every_level_present_and_current() -> None:
    d = desired_from_outcome(P, READING, HASH, "n1", keys=K)
    assert d is not None
    assert node_is_labeled(P, d.set, d)
    assert not node_is_labeled(P, {**d.set, K[LOCAL_BLOCK]: "old"}, d)
    missing = {k: v for k, v in d.set.items() if k != K[NETWORK_BLOCK]}
    assert not node_is_labeled(P, missing, d)
    assert node_is_labeled(P, {k: "v" for k in P.level_keys}, None)


def test_a_dry_run_reads_like_plan_with_source_ids_once_per_annotation_and_no_bookkeeping() -> None:
    # agent --dry-run prints through plan's renderer: one line per change, the full source
    # ID beside a hashed value, the Slinky annotation once, our bookkeeping hidden.
    d = desired_from_outcome(P, READING, HASH, "n1", keys=K)
    assert d is not None
    node = NodeLabels("n1")
    slinky = Slinky(P.topology, topology_names(P.topology, "ib"))
    d = slinky.add_to(d, node.labels)
    lines = describe(plan_labels(node, d), node.labels, source_ids=d.source_ids)
    assert f"n1: add {K[LOCAL_BLOCK]}={h(OCID)}  ({OCID})" in lines
    assert [ln for ln in lines if SLINKY_ANNOTATION in ln] == [
        f"n1: annotate {SLINKY_ANNOTATION}={d.annotations[SLINKY_ANNOTATION]}"
    ]
    assert not [ln for ln in lines if "topology-labeler.io/" in ln]


def test_a_claim_is_a_line_of_its_own_and_a_current_node_is_unchanged() -> None:
    d = desired_from_outcome(P, READING, HASH, "n1", keys=K)
    assert d is not None
    equal = NodeLabels("n1", dict(d.set))  # set by another labeler, the same values
    lines = describe(plan_labels(equal, d), equal.labels, show_unchanged=True)
    assert f"n1: claim {K[LOCAL_BLOCK]}={h(OCID)}  (already set)" in lines
    assert len(lines) == len(d.set)
    claimed = {k: v for k, v in plan_labels(equal, d).annotations.items() if v is not None}
    done = NodeLabels("n1", dict(d.set), claimed)
    assert describe(plan_labels(done, d), done.labels, show_unchanged=True) == ["n1: unchanged"]


@pytest.mark.parametrize(
    ("status", "code"),
    [("labeled", 0), ("no_data", 0), ("conflict", 3), ("error", 1), ("waiting", 1)],
)
def test_exit_codes_follow_the_design(status: str, code: int) -> None:
    assert ReconcileResult(Status(status)).exit_code == code


def test_unknown_labels_name_the_key_and_why_for_the_metric() -> None:
    # A missing level and the narrower one under it; an extra the document did not have.
    reading = Reading(
        ids={ISLAND: "i"},
        unknown={
            NETWORK_BLOCK: "field missing",
            LOCAL_BLOCK: "a wider level is unknown",
            HOST: "x",
        },
    )
    assert unknown_labels(oci_imds.ROLES, reading, K) == {
        K[NETWORK_BLOCK]: ("missing", "field missing"),
        K[LOCAL_BLOCK]: ("wider-unknown", "a wider level is unknown"),
        K[HOST]: ("missing", "x"),
    }
    # A source's own cause wins; roles outside the scope and no data report nothing.
    pending = Reading(ids={}, unknown={"nvlink_clique": "GPU 3"}, causes={"nvlink_clique": "p"})
    roles = nvlink_source.ROLES
    assert unknown_labels(roles, pending, nvlink().keys_for(roles)) == {
        NVIDIA_CLIQUE: ("p", "GPU 3")
    }
    assert unknown_labels(roles, pending, {}) == {}
    assert unknown_labels(oci_imds.ROLES, NoData("none"), K) == {}
