"""The label diff: what one writer should change on one node, as a pure function.

Ownership rules (docs/architecture.md, "Label ownership"): the project owns only the keys
it wrote, recorded in the ``topology-labeler.io/owned-labels`` annotation. A writer removes
a key only if the key is in its scope and owned. A key that already holds the wanted value
is left alone and not claimed. A different value that the project does not own is a
conflict, overwritten only with ``adopt``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from labeler.node import OWNED_ANNOTATION, SOURCE_IDS_ANNOTATION, NodeLabels


@dataclass(frozen=True)
class Desired:
    """What one writer wants on one node.

    - ``set``: key → value to have.
    - ``fill``: key → value to have only where the node has no value (absent or empty): a
      default that never replaces or prunes a real value. Judged against the node being planned, so
      it stays right when a 409 makes the writer re-read the node and plan again.
    - ``prune``: keys in this writer's scope that should go if owned and not in ``set``
      (the agent's profile keys; empty for ``apply``, whose empty cells mean "leave it").
    - ``remove``: keys to delete outright if owned, or with adopt (``delete``).
    - ``source_ids``: key → full source ID, recorded so a hashed value can be traced back.
    - ``placeholders``: values that mean "nothing known" (another labeler's): a key holding
      one counts as absent for ``set`` and ``fill``, so it is replaced without adopt.
    """

    set: Mapping[str, str] = field(default_factory=dict)
    fill: Mapping[str, str] = field(default_factory=dict)
    prune: frozenset[str] = frozenset()
    remove: frozenset[str] = frozenset()
    source_ids: Mapping[str, str] = field(default_factory=dict)
    placeholders: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Conflict:
    """A key holds a value the project did not write and does not own."""

    node: str
    key: str
    current: str
    wanted: str | None  # None: delete was asked for a key we do not own

    def __str__(self) -> str:
        if self.wanted is None:
            return (
                f"{self.node}: {self.key}={self.current!r} was not set by topology-labeler; "
                "left in place (use --adopt to remove it)"
            )
        return (
            f"{self.node}: {self.key} is {self.current!r}, wanted {self.wanted!r}; "
            "the value was not set by topology-labeler and is left in place "
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
    return lines + [conflict_line(c) for c in plan.conflicts]


def conflict_line(c: Conflict) -> str:
    """``conflict k: has 'x' (not ours), …`` and what ``--adopt`` would do about it."""
    if c.wanted is None:
        return f"conflict {c.key}: has {c.current!r} (not ours), left in place (--adopt removes it)"
    return (
        f"conflict {c.key}: has {c.current!r} (not ours), wanted {c.wanted!r} "
        "(--adopt takes it over)"
    )


def format_owned(keys: Iterable[str]) -> str:
    return ",".join(sorted(set(keys)))


def plan_labels(node: NodeLabels, desired: Desired, *, adopt: bool = False) -> LabelPlan:
    """Diff ``desired`` against ``node`` under the ownership rules. Pure; no I/O."""
    owned = set(node.owned)
    changes: dict[str, str | None] = {}
    conflicts: list[Conflict] = []
    unchanged: list[str] = []

    placeholder = desired.placeholders
    wanted = dict(desired.set)
    wanted.update(
        (k, v) for k, v in desired.fill.items() if node.labels.get(k) in (None, "", *placeholder)
    )
    for key, value in sorted(wanted.items()):
        current = node.labels.get(key)
        if current == value:
            unchanged.append(key)
        elif current is None or current in placeholder or key in owned or adopt:
            changes[key] = value
            owned.add(key)
        else:
            conflicts.append(Conflict(node.name, key, current, value))

    stale = (desired.prune - wanted.keys() - desired.fill.keys()) & owned
    for key in sorted(stale | desired.remove):
        current = node.labels.get(key)
        if current is None:
            owned.discard(key)
        elif key in owned or adopt:
            changes[key] = None
            owned.discard(key)
        elif key in desired.remove:
            conflicts.append(Conflict(node.name, key, current, None))

    # Forget ownership of keys that someone else removed and nobody wants back.
    final_labels = {**node.labels, **changes}
    owned = {k for k in owned if final_labels.get(k) is not None}
    annotations: dict[str, str | None] = {}
    if owned != set(node.owned):
        annotations[OWNED_ANNOTATION] = format_owned(owned) if owned else None

    ids = node.source_ids
    new_ids = {k: v for k, v in ids.items() if k in owned}
    # Only keys we own: a value someone else set (the same one we want) is not claimed, and
    # recording its source ID would be a write where a node that already agrees needs none.
    new_ids.update(
        (k, v)
        for k, v in desired.source_ids.items()
        if k in owned and final_labels.get(k) == wanted.get(k)
    )
    if new_ids != ids:
        annotations[SOURCE_IDS_ANNOTATION] = (
            json.dumps(new_ids, sort_keys=True, separators=(",", ":")) if new_ids else None
        )
    return LabelPlan(
        node=node.name,
        labels=changes,
        annotations=annotations,
        conflicts=tuple(conflicts),
        unchanged=tuple(unchanged),
    )
