"""What the schedulers can see of each in-scope node: its facts and its state.

A node's *facts* are what is kept of it: its level values, which of them topology-labeler
does not own ("foreign"), its accelerators. A Node object is a few kilobytes, its facts a
few hundred bytes, so the audit exporter keeps only facts (10,000 nodes fit in a few
megabytes) and decides from them whether a watch event changed anything at all — most
node updates are status heartbeats that do not.

A node's *state* (labeled, partial, unlabeled, inconsistent) is exclusive, and the states
sum to the nodes in scope; the judgement itself is :mod:`labeler.core.check`'s, so
``check``, ``audit``, its metrics and the map can never disagree. "Foreign" is a separate
dimension: such a node may well be usable, but topology-labeler will not maintain its
labels.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from labeler.core.check import CheckReport, NestingViolation, NodeState, check_positions
from labeler.core.dra import Devices
from labeler.core.model import NodePosition, Topology, level_values
from labeler.core.node import NodeInfo
from labeler.core.scope import Scope


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """One in-scope node, reduced to what the audit needs.

    The position is built once per watch event, not once per recomputation.
    """

    position: NodePosition  # level values widest first (None = missing); tree label in extra
    foreign: tuple[str, ...]  # topology keys present on the node but not owned by us
    accelerators: tuple[tuple[str, int], ...]  # (resource, allocatable count > 0)

    @property
    def name(self) -> str:
        return self.position.node


def node_facts(
    topology: Topology, scope: Scope, node: NodeInfo, devices: Devices = ()
) -> NodeFacts | None:
    """The node's facts, or None when it is out of scope; ``devices``: its DRA devices."""
    facts = candidate_facts(topology, scope, node)
    return None if facts is None else in_scope(scope, facts, devices)


def in_scope(scope: Scope, facts: NodeFacts, devices: Devices) -> NodeFacts | None:
    """A candidate's facts with its DRA devices counted, or None when it is out of scope
    (no selector, and no accelerator either way)."""
    counted = scope.counted(devices)
    if counted:
        facts = replace(facts, accelerators=tuple(sorted((*facts.accelerators, *counted))))
    if scope.selector is None and not facts.accelerators:
        return None
    return facts


def candidate_facts(topology: Topology, scope: Scope, node: NodeInfo) -> NodeFacts | None:
    """The node's facts from the node alone (its allocatable accelerators), or None when
    the scope's selector leaves it out. Whether it is in scope may still depend on its DRA
    devices (:func:`in_scope`): the exporter keeps every candidate, since a node's slices
    can come and go without the node changing."""
    if scope.selector is not None and not scope.selector.matches(node.labels):
        return None
    accelerators = scope.accelerators(node)
    labels: Mapping[str, str] = node.labels
    keys: Sequence[str] = topology.keys
    extra: dict[str, str] = {}
    if topology.tree_label:
        keys = (topology.tree_label, *keys)
        if topology.tree_label in labels:
            extra[topology.tree_label] = labels[topology.tree_label]
    owned = node.owned
    return NodeFacts(
        position=NodePosition(
            node=node.name, values=level_values(topology.keys, labels), extra=extra
        ),
        foreign=tuple(k for k in keys if k in labels and k not in owned),
        accelerators=accelerators,
    )


UNUSABLE_STATES = (NodeState.PARTIAL, NodeState.UNLABELED)
_PARTIAL = NodeState.PARTIAL  # read per node: a module global, not the class attribute


@dataclass(frozen=True)
class AuditReport:
    """Everything the table, the JSON and the metrics show, computed once."""

    profile: str
    scope: str
    topology: Topology
    check: CheckReport
    states: Mapping[NodeState, tuple[str, ...]]  # state -> nodes, sorted; every state present
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
        return len(self.states[NodeState.LABELED]) == self.nodes

    def counts(self) -> dict[str, int]:
        return {s: len(self.states[s]) for s in NodeState}

    @property
    def nesting(self) -> tuple[NestingViolation, ...]:
        return self.check.nesting

    def to_json(self) -> dict[str, Any]:
        levels = self.topology.levels
        return {
            "profile": self.profile,
            "scope": self.scope,
            "ok": self.ok,
            "nodesInScope": self.nodes,
            "counts": self.counts(),
            "nodes": {s.value: list(self.states[s]) for s in NodeState},
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
    states: dict[NodeState, list[str]] = {s: [] for s in NodeState}
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
        if state is _PARTIAL:
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
    "AuditReport",
    "NodeFacts",
    "build_report",
    "candidate_facts",
    "in_scope",
    "node_facts",
]
