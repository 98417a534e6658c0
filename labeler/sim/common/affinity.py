"""Required node affinity (``requiredDuringSchedulingIgnoredDuringExecution``) as a filter.

Semantics of ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``: the terms are
ORed, the requirements of one term ANDed; a term with no requirement matches no node;
``matchFields`` knows only ``metadata.name``. Kueue applies the filter to every node of a
topology whose lowest level is the hostname and counts misses as ``affinity: N``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labeler.base.errors import InputError

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.operator == "In":
            return present and value in self.values
        if self.operator == "NotIn":
            return not present or value not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        # Gt / Lt: both sides integers, else no match
        if not present:
            return False
        try:
            have, want = int(value), int(self.values[0])
        except (ValueError, IndexError):
            return False
        return have > want if self.operator == "Gt" else have < want


@dataclass(frozen=True)
class Term:
    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        if not self.expressions and not self.fields:
            return False
        fields = {"metadata.name": name}
        return all(r.matches(labels) for r in self.expressions) and all(
            r.matches(fields) for r in self.fields
        )


@dataclass(frozen=True)
class NodeAffinity:
    """The required terms of a pod's node affinity; a node passes when any term matches."""

    terms: tuple[Term, ...]

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        return any(t.matches(name, labels) for t in self.terms)


def _requirements(raw: Any, where: str, *, fields: bool) -> tuple[Requirement, ...]:
    out = []
    for i, r in enumerate(raw or []):
        here = f"{where}[{i}]"
        if not isinstance(r, Mapping) or not isinstance(r.get("key"), str):
            raise InputError(f"{here}: a node selector requirement needs a key")
        op = r.get("operator")
        if op not in OPERATORS:
            raise InputError(f"{here}: operator {op!r} is not one of {', '.join(OPERATORS)}")
        values = tuple(str(v) for v in r.get("values") or [])
        if op in ("In", "NotIn") and not values:
            raise InputError(f"{here}: operator {op} needs values")
        if op in ("Gt", "Lt") and len(values) != 1:
            raise InputError(f"{here}: operator {op} needs exactly one integer value")
        if fields and (r["key"] != "metadata.name" or op not in ("In", "NotIn")):
            raise InputError(f"{here}: matchFields supports only metadata.name with In/NotIn")
        out.append(Requirement(r["key"], op, values))
    return tuple(out)


def parse_node_affinity(affinity: Any, where: str) -> NodeAffinity | None:
    """The required node affinity of a pod spec's ``affinity``, or None when it has none."""
    if not isinstance(affinity, Mapping):
        return None
    node = affinity.get("nodeAffinity")
    if not isinstance(node, Mapping):
        return None
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, Mapping):
        return None
    base = f"{where}: affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    raw_terms = required.get("nodeSelectorTerms")
    if not isinstance(raw_terms, Sequence) or not raw_terms:
        raise InputError(f"{base}: nodeSelectorTerms must list at least one term")
    terms = []
    for i, t in enumerate(raw_terms):
        t = t if isinstance(t, Mapping) else {}
        here = f"{base}.nodeSelectorTerms[{i}]"
        terms.append(
            Term(
                _requirements(t.get("matchExpressions"), f"{here}.matchExpressions", fields=False),
                _requirements(t.get("matchFields"), f"{here}.matchFields", fields=True),
            )
        )
    return NodeAffinity(tuple(terms))
