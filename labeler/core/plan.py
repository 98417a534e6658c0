"""The label diff: what one writer should change on one node, as a pure function.

Ownership rules (docs/architecture.md, "Label ownership"): the project owns only the keys
it wrote, recorded in the ``topology-labeler.io/owned-labels`` annotation, and
``topology-labeler.io/owned-by`` records which writer of ours (the agent, bulk apply) owns
each. A writer changes or removes a key that is absent, its own, or owned by no particular
writer (a default, or written by an earlier version); a key another writer of ours owns, or
a different value the project does not own, is a conflict, taken over only with ``adopt``.
A key that already holds the wanted value is left alone; the agent (``Desired.claim``)
records it as its own when no writer of ours owns it, so a later change is its to make.
Annotations other tools read (the Slinky topology spec) follow the same rules, their owners
kept in ``topology-labeler.io/owned-annotations``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from labeler.base.prog import command
from labeler.core.node import (
    OWNED_ANNOTATION,
    OWNED_ANNOTATIONS_ANNOTATION,
    OWNERS_ANNOTATION,
    SOURCE_IDS_ANNOTATION,
    NodeLabels,
    json_map,
    owners_of,
)


class Writer(StrEnum):
    """A writer of ours, as the owners annotation records it."""

    AGENT = "agent"
    BULK = "bulk"


def writer_name(owner: str) -> str:
    """How a conflict names the writer of ours that owns a key (bulk's commands as the user
    invokes them)."""
    if owner == Writer.AGENT:
        return "the topology-labeler agent"
    if owner == Writer.BULK:
        return command("apply/delete")
    return f"the writer {owner!r}"


@dataclass(frozen=True)
class Desired:
    """What one writer wants on one node.

    - ``set``: key → value to have.
    - ``fill``: key → value to have only where the node has no value (absent or empty): a
      default that never replaces or prunes a real value. Judged against the node being planned, so
      it stays right when a 409 makes the writer re-read the node and plan again. A filled
      key is owned by no particular writer, so any writer of ours may replace the default.
    - ``prune``: keys in this writer's scope that should go if owned and not in ``set``
      (the agent's profile keys; empty for ``apply``, whose empty cells mean "leave it").
    - ``remove``: keys to delete outright if owned, or with adopt (``delete``).
    - ``source_ids``: key → full source ID, recorded so a hashed value can be traced back.
    - ``writer``: who asks; recorded as the owner of what it writes.
    - ``claim``: a ``set`` key that already holds the wanted value and that no writer of
      ours owns is recorded as this writer's (an annotation write, the label untouched).
    - ``placeholders``: values that mean "nothing known" (another labeler's): a key holding
      one counts as absent for ``set`` and ``fill``, so it is replaced without adopt.
    - ``annotations`` / ``prune_annotations``: ``set`` / ``prune`` for annotations other
      tools read (the Slinky topology spec), under the same ownership rules and ``claim``.
    """

    set: Mapping[str, str] = field(default_factory=dict)
    fill: Mapping[str, str] = field(default_factory=dict)
    prune: frozenset[str] = frozenset()
    remove: frozenset[str] = frozenset()
    source_ids: Mapping[str, str] = field(default_factory=dict)
    writer: Writer = Writer.AGENT
    claim: bool = False
    placeholders: frozenset[str] = frozenset()
    annotations: Mapping[str, str] = field(default_factory=dict)
    prune_annotations: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Conflict:
    """A key holds a value the project did not write, or another writer of ours owns."""

    node: str
    key: str
    current: str
    wanted: str | None  # None: delete was asked for a key we do not own
    owner: str | None = None  # the other writer of ours that owns the key; None: not ours

    @property
    def whose(self) -> str:
        if self.owner is None:
            return "not set by topology-labeler"
        return "owned by " + writer_name(self.owner)

    def __str__(self) -> str:
        if self.wanted is None:
            return (
                f"{self.node}: {self.key}={self.current!r} was {self.whose}; "
                "left in place (use --adopt to remove it)"
            )
        return (
            f"{self.node}: {self.key} is {self.current!r}, wanted {self.wanted!r}; "
            f"the value is {self.whose} and is left in place "
            "(use --adopt to take it over)"
        )


@dataclass(frozen=True)
class LabelPlan:
    """The minimal change to one node: label key → new value, or None to delete."""

    node: str
    labels: Mapping[str, str | None]
    annotations: Mapping[str, str | None]
    conflicts: tuple[Conflict, ...] = ()
    unchanged: tuple[str, ...] = ()
    claimed: tuple[str, ...] = ()  # unchanged keys recorded as this writer's

    @property
    def is_noop(self) -> bool:
        return not self.labels and not self.annotations

    @property
    def added(self) -> dict[str, str]:
        return {k: v for k, v in self.labels.items() if v is not None}

    @property
    def removed(self) -> list[str]:
        return sorted(k for k, v in self.labels.items() if v is None)

    def patch(self, resource_version: str | None) -> dict[str, object]:
        """A JSON merge patch; the resourceVersion makes a concurrent change answer 409."""
        meta: dict[str, object] = {}
        if self.labels:
            meta["labels"] = dict(self.labels)
        if self.annotations:
            meta["annotations"] = dict(self.annotations)
        if resource_version:
            meta["resourceVersion"] = resource_version
        return {"metadata": meta}


BOOKKEEPING = "topology-labeler.io/"  # our ownership annotations: not worth a line


def change_lines(
    plan: LabelPlan,
    current: Mapping[str, str],
    *,
    source_ids: Mapping[str, str] | None = None,
) -> list[str]:
    """A plan for people, one greppable line per label, without the node name.

    ``add k=v`` / ``change k: a → b`` / ``remove k (was 'a')``, then one ``conflict k: …``
    line per conflict. ``current`` is the node's labels the plan was made against; with
    ``source_ids``, an added value that is an encoding of a longer ID shows that ID too.
    """
    lines = []
    for key, value in sorted(plan.labels.items()):
        old = current.get(key)
        if value is None:
            lines.append(f"remove {key} (was {old!r})")
        elif old is None:
            sid = (source_ids or {}).get(key)
            lines.append(f"add {key}={value}" + (f"  ({sid})" if sid and sid != value else ""))
        else:
            lines.append(f"change {key}: {old} → {value}")
    for key, ann in sorted(plan.annotations.items()):
        if key.startswith(BOOKKEEPING):
            continue
        lines.append(f"remove annotation {key}" if ann is None else f"annotate {key}={ann}")
    return lines + [conflict_line(c) for c in plan.conflicts]


def describe(
    plan: LabelPlan,
    current: Mapping[str, str],
    *,
    source_ids: Mapping[str, str] | None = None,
    show_unchanged: bool = False,
) -> list[str]:
    """Every plan as people read it (``plan``, ``apply``, ``delete``, ``agent --dry-run``):
    ``node: <line>`` for each ``change_lines`` line, then ``node: claim k=v`` for a value
    already on the node that this writer takes over (only the agent claims: an annotation
    write, the label untouched); ``node: unchanged`` for none of these with
    ``show_unchanged``."""
    lines = change_lines(plan, current, source_ids=source_ids)
    lines += [f"claim {key}={current.get(key)}  (already set)" for key in plan.claimed]
    if not lines and show_unchanged:
        lines = ["unchanged"]
    return [f"{plan.node}: {line}" for line in lines]


def conflict_line(c: Conflict) -> str:
    """``conflict k: has 'x' (not ours), …`` and what ``--adopt`` would do about it."""
    whose = "not ours" if c.owner is None else c.whose
    if c.wanted is None:
        return f"conflict {c.key}: has {c.current!r} ({whose}), left in place (--adopt removes it)"
    return (
        f"conflict {c.key}: has {c.current!r} ({whose}), wanted {c.wanted!r} "
        "(--adopt takes it over)"
    )


def format_owned(keys: Iterable[str]) -> str:
    return ",".join(sorted(set(keys)))


# One encoder for every annotation (json.dumps with options builds a new one per call).
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def _json(doc: Mapping[str, str]) -> str | None:
    return _ENCODER.encode(doc) if doc else None


@dataclass
class _Keys:
    """One writer's diff of one kind of key (labels, or annotations) on one node."""

    owned: set[str]
    owners: dict[str, str]  # owned key → writer; an owned key without one is anyone's of ours
    changes: dict[str, str | None] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    claimed: list[str] = field(default_factory=list)


def _after(current: Mapping[str, str], changes: Mapping[str, str | None], key: str) -> str | None:
    """``key``'s value once ``changes`` are written over ``current`` (None: absent)."""
    return changes[key] if key in changes else current.get(key)


def _diff_keys(
    node: str,
    current: Mapping[str, str],
    keys: _Keys,
    desired: Desired,
    *,
    set_: Mapping[str, str],
    fill: Mapping[str, str],
    prune: frozenset[str],
    remove: frozenset[str],
    placeholders: frozenset[str],
    adopt: bool,
) -> _Keys:
    """The ownership rules for one kind of key; ``keys`` is updated and returned."""
    me = str(desired.writer)  # a plain str: compared with every owner, once per key
    owned, owners = keys.owned, keys.owners

    def other(key: str) -> str | None:
        """The other writer of ours that owns ``key``, if any."""
        writer = owners.get(key) if key in owned else None
        return writer if writer != me else None

    wanted = {**set_, **fill}
    for key, value in sorted(wanted.items()):
        now = current.get(key)
        if now == value:
            keys.unchanged.append(key)
            # Equal is no fight: claim it unless another writer of ours owns it.
            if desired.claim and key in set_ and other(key) is None:
                if key not in owned or owners.get(key) != me:
                    keys.claimed.append(key)
                owned.add(key)
                owners[key] = me
        elif now is None or now in placeholders or adopt or (key in owned and other(key) is None):
            keys.changes[key] = value
            owned.add(key)
            if key in fill:
                owners.pop(key, None)  # a default: any writer of ours may replace it
            else:
                owners[key] = me
        else:
            keys.conflicts.append(Conflict(node, key, now, value, other(key)))

    if prune or remove:  # (bulk apply asks neither: no need to list the keys it may touch)
        mine = {k for k in owned if other(k) is None}
        stale = (prune - wanted.keys()) & mine
        for key in sorted(stale | remove):
            now = current.get(key)
            if now is None:
                continue  # nothing to remove; its ownership is forgotten below
            if key in mine or adopt:
                keys.changes[key] = None
                owned.discard(key)
            elif key in remove:
                keys.conflicts.append(Conflict(node, key, now, None, other(key)))

    # Forget ownership of keys that someone else removed and nobody wants back.
    keys.owned = {k for k in owned if _after(current, keys.changes, k) is not None}
    keys.owners = {k: w for k, w in owners.items() if k in keys.owned}
    return keys


def plan_labels(node: NodeLabels, desired: Desired, *, adopt: bool = False) -> LabelPlan:
    """Diff ``desired`` against ``node`` under the ownership rules. Pure; no I/O."""
    # Planning runs once per node of a bulk apply (10,000s at a time), so our annotations are
    # read once each here (NodeLabels' properties would parse again), and inputs that are
    # empty in the usual case (fill, prune, annotations, source IDs) are tested before the
    # work they would feed: each only skips building an empty result.
    fill: dict[str, str] = {}
    if desired.fill:
        absent = (None, "", *desired.placeholders)
        fill = {k: v for k, v in desired.fill.items() if node.labels.get(k) in absent}
    owned_before = node.owned
    owners_text = node.annotations.get(OWNERS_ANNOTATION, "")
    labels = _diff_keys(
        node.name,
        node.labels,
        _Keys(set(owned_before), owners_of(owned_before, owners_text)),
        desired,
        set_=desired.set,
        fill=fill,
        prune=desired.prune - desired.fill.keys() if desired.prune else desired.prune,
        remove=desired.remove,
        placeholders=desired.placeholders,
        adopt=adopt,
    )
    annotations: dict[str, str | None] = {}
    if labels.owned != owned_before:
        annotations[OWNED_ANNOTATION] = format_owned(labels.owned) if labels.owned else None
    # Compared with the annotation as written, so stale entries are dropped with a write
    # that happens anyway, or on their own.
    if labels.owners != json_map(owners_text):
        annotations[OWNERS_ANNOTATION] = _json(labels.owners)
    others = _annotation_pass(node, desired, adopt, annotations)
    _record_source_ids(node, desired, fill, labels, annotations)
    conflicts, claimed = labels.conflicts, labels.claimed
    if others is not None:
        conflicts, claimed = conflicts + others.conflicts, claimed + others.claimed
    return LabelPlan(
        node=node.name,
        labels=labels.changes,
        annotations=annotations,
        conflicts=tuple(conflicts),
        unchanged=tuple(labels.unchanged),
        claimed=tuple(claimed),
    )


def _annotation_pass(
    node: NodeLabels, desired: Desired, adopt: bool, annotations: dict[str, str | None]
) -> _Keys | None:
    """The diff of the annotations other tools read, added to ``annotations`` with their
    owners' record; None when there was nothing to diff."""
    ann_owners = json_map(node.annotations.get(OWNED_ANNOTATIONS_ANNOTATION, ""))
    # With no annotation wanted or to prune and none owned, this pass has nothing to set,
    # remove, claim or forget: skipped (the usual bulk apply).
    if not (desired.annotations or desired.prune_annotations or ann_owners):
        return None
    others = _diff_keys(
        node.name,
        node.annotations,
        _Keys(set(ann_owners), {k: w for k, w in ann_owners.items() if w}),
        desired,
        set_=desired.annotations,
        fill={},
        prune=desired.prune_annotations,
        remove=frozenset(),
        placeholders=frozenset(),  # "nothing known" is a label value
        adopt=adopt,
    )
    annotations.update(others.changes)
    new_ann_owners = {k: others.owners.get(k, "") for k in others.owned}
    if new_ann_owners != ann_owners:
        annotations[OWNED_ANNOTATIONS_ANNOTATION] = _json(new_ann_owners)
    return others


def _record_source_ids(
    node: NodeLabels,
    desired: Desired,
    fill: Mapping[str, str],
    labels: _Keys,
    annotations: dict[str, str | None],
) -> None:
    """Keep the source IDs of the owned keys, add the wanted ones this writer may record,
    and put the annotation into ``annotations`` when that changes it."""
    ids = json_map(node.annotations.get(SOURCE_IDS_ANNOTATION, ""))
    owned = labels.owned
    new_ids = {k: v for k, v in ids.items() if k in owned} if ids else {}
    if desired.source_ids:
        me = str(desired.writer)
        wanted = {**desired.set, **fill}
        # Only keys this writer may write: a value someone else set (the same one we want)
        # and did not let us claim is not recorded, which would be a write where none is
        # needed.
        new_ids.update(
            (k, v)
            for k, v in desired.source_ids.items()
            if k in owned
            and labels.owners.get(k, me) == me
            and _after(node.labels, labels.changes, k) == wanted.get(k)
        )
    if new_ids != ids:
        annotations[SOURCE_IDS_ANNOTATION] = _json(new_ids)
