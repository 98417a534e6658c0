"""Is a labeled node set usable by the schedulers? Completeness, nesting, valid values.

Why each rule matters:
- Kueue silently leaves out a node that lacks any level label, and Volcano label discovery
  stops at a node's first missing label (that node is left out of that tier and the wider
  ones; the other nodes are published): so every missing label is listed by level.
- Volcano discovery and ascend-for-volcano use a label value as a *global* domain ID, so a
  narrower value must sit under exactly one value of the next wider level, cluster-wide.
- ascend-for-volcano rejects a node whose tree label is present but empty.
- With several trees (``huawei.com/topotree``), a level value must not be used by two
  trees: Volcano's label discovery ignores the tree label and makes one HyperNode per
  (label, value) across all nodes, so the trees would merge there, and MindCluster asks
  level values to be unique in the whole cluster.

Everything here is one linear pass over the positions (the audit runs it on 100,000 nodes),
with value validation cached per distinct value.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from types import MappingProxyType
from typing import Any

from labeler.base.prog import command
from labeler.base.text import a_few
from labeler.core.labels import value_problems
from labeler.core.model import Level, NodePosition, Topology


class NodeState(StrEnum):
    """How a node's level labels look to a topology-aware scheduler: every level present
    and nested, some missing (Kueue TAS ignores it), none, or present but a value sits
    under two parents. Exclusive: the states sum to the nodes checked."""

    LABELED = "labeled"
    PARTIAL = "partial"
    UNLABELED = "unlabeled"
    INCONSISTENT = "inconsistent"


# Read once per node of 100,000: a module global costs a tenth of an enum's class attribute.
_LABELED, _PARTIAL = NodeState.LABELED, NodeState.PARTIAL
_UNLABELED, _INCONSISTENT = NodeState.UNLABELED, NodeState.INCONSISTENT


@dataclass(frozen=True)
class NestingViolation:
    """A value at a narrower level found under several values of the next wider level."""

    level: Level  # the narrower level whose value has several parents
    value: str
    parents: tuple[str, ...]  # distinct values at the next wider level, sorted
    nodes: tuple[str, ...]  # nodes carrying that value, sorted

    def message(self, parent_level: Level, *, max_nodes: int = 5) -> str:
        return (
            f"{self.level.key}={self.value} sits under {len(self.parents)} values of "
            f"{parent_level.key} ({', '.join(self.parents)}); "
            f"nodes: {a_few(self.nodes, max_nodes)}. "
            "A value must nest under one parent cluster-wide: relabel the nodes or give "
            "each block its own value"
        )


@dataclass(frozen=True)
class SizeStats:
    """Nodes per domain at one level."""

    domains: int
    min: int
    median: float
    max: int


def _median(values: list[int]) -> float:
    """statistics.median, without importing statistics (and its random, decimal and
    fractions modules) into every command that checks: the middle value, or the mean of
    the two middle values."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


@dataclass(frozen=True)
class CheckReport:
    """The result of :func:`check_positions`; ``ok`` is False on any error."""

    topology: Topology
    nodes: int
    missing: Mapping[str, tuple[str, ...]]  # level key -> nodes missing it (sorted)
    nesting: tuple[NestingViolation, ...]
    invalid: tuple[str, ...]  # messages naming node, key, value and rule
    empty_tree_label: tuple[str, ...]  # nodes whose tree label is present but empty
    domain_sizes: Mapping[str, Mapping[str, int]]  # level key -> value -> node count

    @cached_property
    def _inconsistent_nodes(self) -> frozenset[str]:
        return frozenset(n for v in self.nesting for n in v.nodes)

    def node_state(self, position: NodePosition) -> NodeState:
        """One of labeled / partial / unlabeled / inconsistent: exclusive, so the states
        sum to the nodes checked."""
        present = sum(v is not None for v in position.values)
        if present == 0:
            return _UNLABELED
        if present < len(position.values):
            return _PARTIAL
        if position.node in self._inconsistent_nodes:
            return _INCONSISTENT
        return _LABELED

    @property
    def ok(self) -> bool:
        return not (
            any(self.missing.values()) or self.nesting or self.invalid or self.empty_tree_label
        )

    def size_stats(self, key: str) -> SizeStats | None:
        """Min / median / max nodes per domain for a level key; None when it has no domain."""
        sizes = list(self.domain_sizes.get(key, {}).values())
        if not sizes:
            return None
        return SizeStats(len(sizes), min(sizes), _median(sizes), max(sizes))

    def parent_level(self, violation: NestingViolation) -> Level:
        return self.topology.levels[self.topology.index(violation.level.key) - 1]

    def problems(self, *, max_nodes: int = 10) -> list[str]:
        """Every error as a line an operator can act on (missing labels grouped by level)."""
        out: list[str] = []
        for key, nodes in self.missing.items():
            if nodes:
                out.append(
                    f"{len(nodes)} node(s) lack {key} (Kueue ignores them; Volcano discovery "
                    f"leaves them out at this tier and above): {a_few(nodes, max_nodes)}"
                )
        out += [v.message(self.parent_level(v), max_nodes=max_nodes) for v in self.nesting]
        out += list(self.invalid)
        if self.empty_tree_label:
            label = self.topology.tree_label
            nodes = self.empty_tree_label
            out.append(
                f"{len(nodes)} node(s) have an empty {label} (ascend-for-volcano rejects "
                f"them; set it to the tree name or remove it): {a_few(nodes, max_nodes)}"
            )
        return out


def shared_across_trees(
    topology: Topology,
    positions: Sequence[NodePosition],
    other_trees: Mapping[str, Sequence[NodePosition]],
    *,
    max_nodes: int = 3,
) -> list[str]:
    """One message per level value this tree shares with another tree, naming both."""
    out: list[str] = []
    for i, level in enumerate(topology.levels):
        ours: defaultdict[str, list[str]] = defaultdict(list)
        for p in positions:
            v = p.values[i]
            if v is not None:
                ours[v].append(p.node)
        for tree, theirs in other_trees.items():
            shared: defaultdict[str, list[str]] = defaultdict(list)
            for p in theirs:
                v = p.values[i]
                if v is not None and v in ours:
                    shared[v].append(p.node)
            for v in sorted(shared):
                out.append(
                    f"{level.key}={v} is used by tree {topology.name!r} (nodes "
                    f"{a_few(sorted(ours[v]), max_nodes)}) and tree {tree!r} (nodes "
                    f"{a_few(sorted(shared[v]), max_nodes)}): Volcano label discovery "
                    "ignores the tree label and would make one HyperNode of both trees, and "
                    "MindCluster wants level values unique in the cluster; renumber one tree "
                    f"(e.g. '{command('lld --group-offset')}')"
                )
    return out


@dataclass
class _Tally:
    """What one pass over the positions finds, per level index (widest = 0)."""

    missing: list[list[str]]  # nodes without a value
    sizes: list[Counter[str]]  # value -> how many nodes carry it
    parents: list[defaultdict[str, set[str]]]  # value -> values at level i-1 above it (i ≥ 1)
    carriers: list[defaultdict[str, list[str]]]  # value -> nodes carrying it
    invalid: list[str]
    seen: Counter[str]  # node -> rows


def _value_problems(value: str) -> list[str]:
    problems = value_problems(value)
    if value == "":
        problems.append("is empty; an empty level value puts every such node in one domain")
    return problems


def _tally(levels: Sequence[Level], positions: Sequence[NodePosition]) -> _Tally:
    """The one linear pass: missing values, domain sizes and members, parents, bad values."""
    n_levels = len(levels)
    missing: list[list[str]] = [[] for _ in levels]
    sizes: list[Counter[str]] = [Counter() for _ in levels]
    parents: list[defaultdict[str, set[str]]] = [defaultdict(set) for _ in levels]
    carriers: list[defaultdict[str, list[str]]] = [defaultdict(list) for _ in levels]
    invalid: list[str] = []
    seen: Counter[str] = Counter()
    value_ok: dict[str, list[str]] = {}  # validation cached per distinct value
    for p in positions:
        seen[p.node] += 1
        values = p.values
        if len(values) != n_levels:
            raise ValueError(f"position of {p.node} has {len(values)} values for {n_levels} levels")
        for i in range(n_levels):
            v = values[i]
            if v is None:
                missing[i].append(p.node)
                continue
            sizes[i][v] += 1
            carriers[i][v].append(p.node)
            if i > 0:
                parent = values[i - 1]
                if parent is not None:
                    parents[i][v].add(parent)
            problems = value_ok.get(v)
            if problems is None:
                problems = value_ok[v] = _value_problems(v)
            if problems:
                invalid.append(
                    f"node {p.node}: invalid value {v!r} for {levels[i].key}: "
                    + "; ".join(problems)
                )
    return _Tally(missing, sizes, parents, carriers, invalid, seen)


def _nesting(topology: Topology, t: _Tally) -> tuple[NestingViolation, ...]:
    """Every narrower value under more than one wider value, in level then value order."""
    levels = topology.levels
    found = [
        NestingViolation(
            level=levels[i],
            value=value,
            parents=tuple(sorted(ps)),
            nodes=tuple(sorted(t.carriers[i][value])),
        )
        for i in range(1, len(levels))
        for value, ps in t.parents[i].items()
        if len(ps) > 1
    ]
    found.sort(key=lambda v: (topology.index(v.level.key), v.value))
    return tuple(found)


def _tree_label_problems(
    topology: Topology, tree_labels: Mapping[str, str] | None, invalid: list[str]
) -> list[str]:
    """The nodes whose tree label is empty; an invalid one is added to ``invalid``."""
    empty: list[str] = []
    if topology.tree_label and tree_labels:
        for node, tree in tree_labels.items():
            if tree == "":
                empty.append(node)
            else:
                for problem in value_problems(tree):
                    invalid.append(
                        f"node {node}: invalid value {tree!r} for {topology.tree_label}: {problem}"
                    )
    return empty


def check_positions(
    topology: Topology,
    positions: Sequence[NodePosition],
    tree_labels: Mapping[str, str] | None = None,
    other_trees: Mapping[str, Sequence[NodePosition]] | None = None,
) -> CheckReport:
    """Check completeness, nesting and validity of the level labels of a node set.

    ``tree_labels`` maps node → its tree label value, for nodes that carry the tree label
    (only meaningful when the topology has one, e.g. ``huawei.com/topotree``);
    ``other_trees`` the nodes of the other trees, whose level values must differ.
    """
    levels = topology.levels
    t = _tally(levels, positions)
    invalid = t.invalid
    invalid += (
        f"node {node} appears {count} times; keep one row per node"
        for node, count in t.seen.items()
        if count > 1
    )
    nesting = _nesting(topology, t)
    if other_trees:
        invalid += shared_across_trees(topology, positions, other_trees)
    empty_tree = _tree_label_problems(topology, tree_labels, invalid)
    return CheckReport(
        topology=topology,
        nodes=len(positions),
        missing=MappingProxyType(
            {lv.key: tuple(sorted(m)) for lv, m in zip(levels, t.missing, strict=True)}
        ),
        nesting=nesting,
        invalid=tuple(sorted(invalid)),
        empty_tree_label=tuple(sorted(empty_tree)),
        domain_sizes=MappingProxyType(
            {lv.key: MappingProxyType(dict(s)) for lv, s in zip(levels, t.sizes, strict=True)}
        ),
    )


def state_counts(report: CheckReport, positions: Sequence[NodePosition]) -> dict[str, int]:
    """Nodes per state; the states are exclusive, so the counts sum to the nodes."""
    counts: dict[str, int] = dict.fromkeys(NodeState, 0)
    for p in positions:
        counts[report.node_state(p)] += 1
    return counts


def render_text(
    report: CheckReport,
    positions: Sequence[NodePosition],
    *,
    origin: str,
    max_nodes: int,
) -> list[str]:
    """The human report of ``check``: node states, domain sizes, then every error."""
    topo = report.topology
    counts = state_counts(report, positions)
    lines = [
        f"{origin}: {report.nodes} node(s) in tree {topo.name!r}: "
        + ", ".join(f"{n} {s}" for s, n in counts.items())
    ]
    for level in topo.levels:
        stats = report.size_stats(level.key)
        missing = len(report.missing.get(level.key, ()))
        if stats is None:
            lines.append(f"  {level.name} ({level.key}): no domains; {missing} node(s) missing")
        else:
            lines.append(
                f"  {level.name} ({level.key}): {stats.domains} domain(s), nodes per domain "
                f"min {stats.min} / median {stats.median:g} / max {stats.max}; "
                f"{missing} node(s) missing"
            )
    problems = report.problems(max_nodes=max_nodes)
    if problems:
        lines.append(f"{len(problems)} problem(s):")
        lines += [f"  - {p}" for p in problems]
    else:
        lines.append("ok: every node has every level label, values nest and are valid")
    return lines


def to_json(
    report: CheckReport,
    positions: Sequence[NodePosition],
    *,
    origin: str,
    scope: str | None = None,
    not_in_scope: int = 0,
) -> dict[str, Any]:
    """The machine report of ``check -o json``: the same findings as :func:`render_text`,
    every node listed. The keys are an interface; more may be added, none renamed."""
    sizes: dict[str, dict[str, Any] | None] = {}
    for level in report.topology.levels:
        s = report.size_stats(level.key)
        sizes[level.key] = (
            None
            if s is None
            else {"domains": s.domains, "min": s.min, "median": s.median, "max": s.max}
        )
    return {
        "source": origin,
        "scope": scope,
        "nodesNotInScope": not_in_scope,
        "tree": report.topology.name,
        "ok": report.ok,
        "nodes": report.nodes,
        "states": state_counts(report, positions),
        "missing": {k: list(v) for k, v in report.missing.items()},
        "nesting": [
            {
                "key": v.level.key,
                "value": v.value,
                "parentKey": report.parent_level(v).key,
                "parents": list(v.parents),
                "nodes": list(v.nodes),
            }
            for v in report.nesting
        ],
        "invalid": list(report.invalid),
        "emptyTreeLabel": list(report.empty_tree_label),
        "domainSizes": sizes,
    }
