"""plan_labels against a frozen reference copy of itself, over random nodes and wishes.

The ownership rules are the product's safety rules; plan_labels has fast paths for the
bulk case (each annotation parsed once, parsed values cached by their text, the annotation
pass skipped when nothing can come of it). The oracle below is the implementation as it
was before those fast paths, copied here (helpers renamed, NodeLabels' properties as
functions, comments dropped) and frozen on purpose: a test oracle,
not a second implementation to maintain. A rule change is made in labeler/core/plan.py and
here together, with the hand-written cases of test_plan.py saying why.

Any difference — a change, a conflict, their order, an annotation's text — is a failure.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from labeler.core.node import (
    OWNED_ANNOTATION,
    OWNED_ANNOTATIONS_ANNOTATION,
    OWNERS_ANNOTATION,
    SLINKY_ANNOTATION,
    SOURCE_IDS_ANNOTATION,
    NodeLabels,
)
from labeler.core.plan import Conflict, Desired, LabelPlan, Writer, plan_labels

# --- the reference: plan_labels and what it called, as they were ---------------------


def _ref_parse_owned(text: str) -> frozenset[str]:
    return frozenset(text.replace(",", " ").split())


def _ref_parse_json_map(text: str) -> dict[str, str]:
    try:
        doc = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    return {str(k): str(v) for k, v in doc.items()}


def _ref_owned(node: NodeLabels) -> frozenset[str]:
    return _ref_parse_owned(node.annotations.get(OWNED_ANNOTATION, ""))


def _ref_owners(node: NodeLabels) -> dict[str, str]:
    owned = _ref_owned(node)
    recorded = _ref_parse_json_map(node.annotations.get(OWNERS_ANNOTATION, ""))
    return {k: v for k, v in recorded.items() if k in owned and v}


def _ref_format_owned(keys: Iterable[str]) -> str:
    return ",".join(sorted(set(keys)))


def _ref_json(doc: Mapping[str, str]) -> str | None:
    return json.dumps(doc, sort_keys=True, separators=(",", ":")) if doc else None


@dataclass
class _RefKeys:
    owned: set[str]
    owners: dict[str, str]
    changes: dict[str, str | None] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    claimed: list[str] = field(default_factory=list)


def _ref_diff_keys(
    node: str,
    current: Mapping[str, str],
    keys: _RefKeys,
    desired: Desired,
    *,
    set_: Mapping[str, str],
    fill: Mapping[str, str],
    prune: frozenset[str],
    remove: frozenset[str],
    adopt: bool,
) -> _RefKeys:
    me = desired.writer
    owned, owners = keys.owned, keys.owners
    placeholder = desired.placeholders

    def other(key: str) -> str | None:
        writer = owners.get(key) if key in owned else None
        return writer if writer != me else None

    wanted = {**set_, **fill}
    for key, value in sorted(wanted.items()):
        now = current.get(key)
        if now == value:
            keys.unchanged.append(key)
            if desired.claim and key in set_ and other(key) is None:
                if key not in owned or owners.get(key) != me:
                    keys.claimed.append(key)
                owned.add(key)
                owners[key] = me
        elif now is None or now in placeholder or adopt or (key in owned and other(key) is None):
            keys.changes[key] = value
            owned.add(key)
            if key in fill:
                owners.pop(key, None)
            else:
                owners[key] = me
        else:
            keys.conflicts.append(Conflict(node, key, now, value, other(key)))

    mine = {k for k in owned if other(k) is None}
    stale = (prune - wanted.keys()) & mine
    for key in sorted(stale | remove):
        now = current.get(key)
        if now is None:
            continue
        if key in mine or adopt:
            keys.changes[key] = None
            owned.discard(key)
        elif key in remove:
            keys.conflicts.append(Conflict(node, key, now, None, other(key)))

    final = {**current, **keys.changes}
    keys.owned = {k for k in owned if final.get(k) is not None}
    keys.owners = {k: w for k, w in owners.items() if k in keys.owned}
    return keys


def reference_plan(node: NodeLabels, desired: Desired, *, adopt: bool = False) -> LabelPlan:
    me = desired.writer
    placeholder = desired.placeholders
    fill = {k: v for k, v in desired.fill.items() if node.labels.get(k) in (None, "", *placeholder)}
    labels = _ref_diff_keys(
        node.name,
        node.labels,
        _RefKeys(set(_ref_owned(node)), _ref_owners(node)),
        desired,
        set_=desired.set,
        fill=fill,
        prune=desired.prune - desired.fill.keys(),
        remove=desired.remove,
        adopt=adopt,
    )
    owned, new_owners = labels.owned, labels.owners
    annotations: dict[str, str | None] = {}
    if owned != set(_ref_owned(node)):
        annotations[OWNED_ANNOTATION] = _ref_format_owned(owned) if owned else None
    if new_owners != _ref_parse_json_map(node.annotations.get(OWNERS_ANNOTATION, "")):
        annotations[OWNERS_ANNOTATION] = _ref_json(new_owners)

    ann_owners = _ref_parse_json_map(node.annotations.get(OWNED_ANNOTATIONS_ANNOTATION, ""))
    others = _ref_diff_keys(
        node.name,
        node.annotations,
        _RefKeys(set(ann_owners), {k: w for k, w in ann_owners.items() if w}),
        dataclasses.replace(desired, placeholders=frozenset()),
        set_=desired.annotations,
        fill={},
        prune=desired.prune_annotations,
        remove=frozenset(),
        adopt=adopt,
    )
    annotations.update(others.changes)
    new_ann_owners = {k: others.owners.get(k, "") for k in others.owned}
    if new_ann_owners != ann_owners:
        annotations[OWNED_ANNOTATIONS_ANNOTATION] = _ref_json(new_ann_owners)

    ids = _ref_parse_json_map(node.annotations.get(SOURCE_IDS_ANNOTATION, ""))
    new_ids = {k: v for k, v in ids.items() if k in owned}
    wanted = {**desired.set, **fill}
    final_labels = {**node.labels, **labels.changes}
    new_ids.update(
        (k, v)
        for k, v in desired.source_ids.items()
        if k in owned and new_owners.get(k, me) == me and final_labels.get(k) == wanted.get(k)
    )
    if new_ids != ids:
        annotations[SOURCE_IDS_ANNOTATION] = _ref_json(new_ids)
    return LabelPlan(
        node=node.name,
        labels=labels.changes,
        annotations=annotations,
        conflicts=tuple(labels.conflicts + others.conflicts),
        unchanged=tuple(labels.unchanged),
        claimed=tuple(labels.claimed + others.claimed),
    )


# --- random nodes and wishes ---------------------------------------------------------

KEYS = ["x.io/a", "x.io/b", "x.io/c", "x.io/d"]
ANN_KEYS = [SLINKY_ANNOTATION, "x.io/note"]
VALUES = ["v1", "v2", "", "unknown", "N/A"]
WRITERS = [Writer.AGENT, Writer.BULK, "", "someone"]

values = st.sampled_from(VALUES)
keys = st.sampled_from(KEYS)
ann_keys = st.sampled_from(ANN_KEYS)
key_sets = st.frozensets(keys)


@st.composite
def owned_text(draw: st.DrawFn) -> str:
    """owned-labels as written by us, by hand (spaces, newlines), or broken."""
    listed = draw(st.lists(st.sampled_from([*KEYS, "x.io/gone"]), max_size=5))
    sep = draw(st.sampled_from([",", ", ", "\n", " ,", ",,"]))
    return draw(st.sampled_from(["", "  ", sep.join(listed), f" {sep.join(listed)} "]))


@st.composite
def json_text(draw: st.DrawFn, pool: list[str]) -> str:
    """A JSON map annotation: well-formed, with odd values, or corrupt."""
    doc = draw(st.dictionaries(st.sampled_from([*pool, "x.io/gone"]), st.sampled_from(WRITERS)))
    good = json.dumps(doc, sort_keys=draw(st.booleans()))
    compact = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    odd = json.dumps({k: draw(st.sampled_from([None, 1, True, [], "v1"])) for k in doc})
    corrupt = draw(st.sampled_from(["{", "[]", '"x"', "null", "1", "", "{}"]))
    return draw(st.sampled_from([good, compact, odd, corrupt]))


@st.composite
def nodes(draw: st.DrawFn) -> NodeLabels:
    labels = draw(st.dictionaries(keys, values))
    annotations: dict[str, str] = draw(st.dictionaries(ann_keys, values))
    if draw(st.booleans()):
        annotations[OWNED_ANNOTATION] = draw(owned_text())
    if draw(st.booleans()):
        annotations[OWNERS_ANNOTATION] = draw(json_text(KEYS))
    if draw(st.booleans()):
        annotations[OWNED_ANNOTATIONS_ANNOTATION] = draw(json_text(ANN_KEYS))
    if draw(st.booleans()):
        annotations[SOURCE_IDS_ANNOTATION] = draw(json_text(KEYS))
    return NodeLabels("n1", labels, annotations, "7")


desireds = st.builds(
    Desired,
    set=st.dictionaries(keys, values),
    fill=st.dictionaries(keys, values),
    prune=key_sets,
    remove=key_sets,
    source_ids=st.dictionaries(keys, st.sampled_from(["v1", "ocid.long", ""])),
    writer=st.sampled_from([Writer.AGENT, Writer.BULK]),
    claim=st.booleans(),
    placeholders=st.frozensets(st.sampled_from(["unknown", "N/A", ""])),
    annotations=st.dictionaries(ann_keys, values),
    prune_annotations=st.frozensets(ann_keys),
)


def same(got: LabelPlan, want: LabelPlan) -> None:
    """Equal, and in the same order: the patch body and the reports follow dict order."""
    assert got == want
    assert list(got.labels.items()) == list(want.labels.items())
    assert list(got.annotations.items()) == list(want.annotations.items())


@settings(max_examples=1000, deadline=None)
@given(nodes(), desireds, st.booleans())
def test_plan_labels_matches_the_reference(node: NodeLabels, desired: Desired, adopt: bool) -> None:
    before = {k: dict(v) for k, v in (("l", node.labels), ("a", node.annotations))}
    want = reference_plan(node, desired, adopt=adopt)
    same(plan_labels(node, desired, adopt=adopt), want)
    # Again on the same node: nothing cached or shared was changed by the first plan.
    same(plan_labels(node, desired, adopt=adopt), want)
    assert {"l": dict(node.labels), "a": dict(node.annotations)} == before


@settings(max_examples=200, deadline=None)
@given(st.lists(nodes(), min_size=2, max_size=6), desireds, st.booleans())
def test_nodes_sharing_annotation_text_plan_independently(
    many: list[NodeLabels], desired: Desired, adopt: bool
) -> None:
    """Bulk lists hold the same annotation text on many nodes: plans of one never leak into
    another's, whatever order they are made in."""
    wants = [reference_plan(n, desired, adopt=adopt) for n in many]
    for n, want in zip(many, wants, strict=True):
        same(plan_labels(n, desired, adopt=adopt), want)
    for n, want in reversed(list(zip(many, wants, strict=True))):
        same(plan_labels(n, desired, adopt=adopt), want)
