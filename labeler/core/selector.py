"""Label selectors, matched on our side as the API server matches them.

Used by the node scope (labeler.core.scope, ``--node-selector``). The audit exporter watches
every node and keeps its scope itself: a server-side selector on a watch would make a node
that stops matching vanish without a trace, and a node's accelerators (the default scope)
cannot be selected server-side at all. The syntax is
kubectl's: ``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)``, ``k notin (a,b)``,
joined by commas.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from labeler.base.errors import UsageError
from labeler.core.labels import key_problems, value_problems

_SET_RE = re.compile(r"^\s*(\S+)\s+(in|notin)\s*\(([^)]*)\)\s*$")


@dataclass(frozen=True)
class Requirement:
    """One clause of a selector: ``op`` is one of =, !=, in, notin, exists, !exists."""

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        if self.op == "exists":
            return value is not None
        if self.op == "!exists":
            return value is None
        if self.op in ("=", "in"):
            return value is not None and value in self.values
        # != and notin also match a node that lacks the key, as the API server does.
        return value is None or value not in self.values


@dataclass(frozen=True)
class Selector:
    text: str
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return self.text


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_selector(text: str) -> Selector:
    """Parse a label selector, reporting the clause and the rule it breaks."""
    if not text.strip():
        raise UsageError("empty label selector; use e.g. --node-selector node-role/gpu=true")
    reqs = [_parse_clause(clause.strip(), text) for clause in _split(text)]
    return Selector(text=text, requirements=tuple(reqs))


def _parse_clause(clause: str, text: str) -> Requirement:
    def bad(why: str) -> UsageError:
        return UsageError(f"label selector {text!r}: clause {clause!r}: {why}")

    if not clause:
        raise bad("is empty (stray comma?)")
    m = _SET_RE.match(clause)
    if m:
        key, op, raw = m.group(1), m.group(2), m.group(3)
        values = [v.strip() for v in raw.split(",")]
        req = Requirement(key, op, frozenset(values))
        checks = values
    elif "!=" in clause:
        key, _, value = (s.strip() for s in clause.partition("!="))
        req, checks = Requirement(key, "!=", frozenset([value])), [value]
    elif "=" in clause:
        key, _, value = clause.partition("==") if "==" in clause else clause.partition("=")
        key, value = key.strip(), value.strip()
        req, checks = Requirement(key, "=", frozenset([value])), [value]
    elif clause.startswith("!"):
        key = clause[1:].strip()
        req, checks = Requirement(key, "!exists"), []
    else:
        key = clause
        req, checks = Requirement(key, "exists"), []
    problems = [f"key {key!r} {p}" for p in key_problems(key)]
    for v in checks:
        problems += [f"value {v!r} {p}" for p in value_problems(v)]
    if problems:
        raise bad("; ".join(problems))
    return req
