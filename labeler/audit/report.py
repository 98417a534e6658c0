"""The audit report: which in-scope nodes the schedulers can use, and what the rest cost.

States (labeled, partial, unlabeled, inconsistent) are exclusive and sum to the nodes in
scope; the judgement itself is :mod:`labeler.check`'s, so ``check`` and ``audit`` can never
disagree. "Foreign" — level labels present but not recorded in our owned-labels annotation
— is a separate dimension: such a node may well be usable, but topology-labeler will not
maintain its labels."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from labeler.audit.facts import NodeFacts
from labeler.check import (
    INCONSISTENT,
    LABELED,
    NODE_STATES,
    PARTIAL,
    UNLABELED,
    CheckReport,
    NestingViolation,
    check_positions,
)
from labeler.model import Topology

UNUSABLE_STATES = (PARTIAL, UNLABELED)


@dataclass(frozen=True)
class AuditFigures:
    """One consistent set of audit numbers, as the exporter publishes them (no per-node
    series). Plain values, so the report stays free of the Prometheus client."""

    states: Mapping[str, int]  # labeled / partial / unlabeled / inconsistent -> nodes
    unlabeled_accelerators: Mapping[str, int]  # resource -> on partial + unlabeled nodes
    nesting_violations: Mapping[str, int]  # level name -> values with several parents
    domains: Mapping[str, int]  # level name -> distinct values
    foreign_nodes: int  # nodes with level labels not set by topology-labeler
    last_sync: float | None  # unix time the state was last known current


@dataclass(frozen=True)
class AuditReport:
    """Everything the table, the JSON and the metrics show, computed once."""

    profile: str
    scope: str
    topology: Topology
    check: CheckReport
    states: Mapping[str, tuple[str, ...]]  # state -> nodes, sorted; every state present
    missing: Mapping[str, tuple[str, ...]]  # partial node -> level names it lacks
    foreign: Mapping[str, tuple[str, ...]]  # node -> topology keys not set by us
    accelerators: Mapping[str, int]  # resource -> allocatable on all in-scope nodes
    unusable_accelerators: Mapping[str, int]  # resource -> on partial + unlabeled nodes

    @property
    def nodes(self) -> int:
        return self.check.nodes

    @property
    def ok(self) -> bool:
        """True when every node in scope is fully and consistently labeled."""
        return len(self.states[LABELED]) == self.nodes

    def counts(self) -> dict[str, int]:
        return {s: len(self.states[s]) for s in NODE_STATES}

    @property
    def nesting(self) -> tuple[NestingViolation, ...]:
        return self.check.nesting

    def figures(self, last_sync: float | None) -> AuditFigures:
        """The numbers the exporter publishes (no per-node series)."""
        per_level = Counter(v.level.name for v in self.nesting)
        resources = {r: self.unusable_accelerators.get(r, 0) for r in self.accelerators}
        return AuditFigures(
            states=self.counts(),
            unlabeled_accelerators=resources,
            nesting_violations={lv.name: per_level.get(lv.name, 0) for lv in self.topology.levels},
            domains={
                lv.name: len(self.check.domain_sizes.get(lv.key, {})) for lv in self.topology.levels
            },
            foreign_nodes=len(self.foreign),
            last_sync=last_sync,
        )

    def to_json(self) -> dict[str, Any]:
        levels = self.topology.levels
        return {
            "profile": self.profile,
            "scope": self.scope,
            "ok": self.ok,
            "nodesInScope": self.nodes,
            "counts": self.counts(),
            "nodes": {s: list(self.states[s]) for s in NODE_STATES},
            "missing": {n: list(lv) for n, lv in self.missing.items()},
            "foreignLabels": {n: list(keys) for n, keys in self.foreign.items()},
            "accelerators": dict(self.accelerators),
            "unlabeledAccelerators": dict(self.unusable_accelerators),
            "nestingViolations": [
                {
                    "level": v.level.name,
                    "key": v.level.key,
                    "value": v.value,
                    "parentLevel": self.check.parent_level(v).name,
                    "parents": list(v.parents),
                    "nodes": list(v.nodes),
                }
                for v in self.nesting
            ],
            "invalid": list(self.check.invalid),
            "emptyTreeLabel": list(self.check.empty_tree_label),
            "levels": [
                {
                    "name": lv.name,
                    "key": lv.key,
                    "domains": dict(sorted(self.check.domain_sizes.get(lv.key, {}).items())),
                }
                for lv in levels
            ],
        }


def build_report(
    profile: str, scope: str, topology: Topology, facts: Iterable[NodeFacts]
) -> AuditReport:
    """Judge every in-scope node and total the accelerators the schedulers cannot see."""
    facts = sorted(facts, key=lambda f: f.name)
    positions = [f.position for f in facts]
    tree = topology.tree_label
    tree_labels = {p.node: p.extra[tree] for p in positions if tree in p.extra} if tree else None
    check = check_positions(topology, positions, tree_labels)
    states: dict[str, list[str]] = {s: [] for s in NODE_STATES}
    missing: dict[str, tuple[str, ...]] = {}
    total: Counter[str] = Counter()
    unusable: Counter[str] = Counter()
    for f, p in zip(facts, positions, strict=True):
        state = check.node_state(p)
        states[state].append(f.name)
        for resource, count in f.accelerators:
            total[resource] += count
            if state in UNUSABLE_STATES:
                unusable[resource] += count
        if state == PARTIAL:
            missing[f.name] = tuple(lv.name for lv in p.missing(topology))
    return AuditReport(
        profile=profile,
        scope=scope,
        topology=topology,
        check=check,
        states={s: tuple(nodes) for s, nodes in states.items()},
        missing=missing,
        foreign={f.name: f.foreign for f in facts if f.foreign},
        accelerators=dict(sorted(total.items())),
        unusable_accelerators=dict(sorted(unusable.items())),
    )


__all__ = [
    "INCONSISTENT",
    "LABELED",
    "PARTIAL",
    "UNLABELED",
    "AuditReport",
    "build_report",
]
