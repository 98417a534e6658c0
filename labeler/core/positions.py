"""Where nodes sit, read from the bulk tool's CSV or from today's node labels.

The CSV is MindCluster's format (first column ``nodeName``, then label keys), read by
:mod:`labeler.core.sheet`, the same validator ``apply`` uses: the same ``file:line:column``
errors, all reported together before anything is generated, and the same leniency (BOM,
CRLF, blank rows). An empty cell means "no label". This module only adds the profile's
demand that every level has a column, and picks the nodes of the tree.

For a topology with a tree label (Ascend's ``huawei.com/topotree``) only the nodes of that
tree are in scope: those whose tree label equals the tree name, or that lack it when the
tree is ``default`` — as ascend-for-volcano decides. A present-but-empty tree label stays in
scope so that the check can report it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from labeler.core.model import NodePosition, Topology, level_values
from labeler.core.sheet import LabelSheet, parse_label_csv, read_label_csv


@dataclass(frozen=True)
class PositionSet:
    """Placements of the nodes in scope, their tree labels, and where they came from."""

    origin: str
    positions: list[NodePosition]
    tree_labels: Mapping[str, str] = field(default_factory=dict)
    out_of_scope: int = 0  # nodes of other trees
    scope: str | None = None  # from a cluster: which nodes were looked at (labeler.core.scope)
    not_in_scope: int = 0  # cluster nodes outside that scope (CPU, control plane, ...)
    # nodes of other trees, by tree name: their values must not reuse this tree's
    other_trees: Mapping[str, tuple[NodePosition, ...]] = field(default_factory=dict)


DEFAULT_TREE = "default"  # the tree of a node without the tree label


def in_tree(topology: Topology, tree_value: str | None) -> bool:
    if topology.tree_label is None:
        return True
    if tree_value is None:
        return topology.name == DEFAULT_TREE
    return tree_value in ("", topology.name)


def select(
    topology: Topology, origin: str, nodes: Iterable[tuple[str, Mapping[str, str]]]
) -> PositionSet:
    """Placements (sorted by node) of the nodes in this topology's tree."""
    positions: list[NodePosition] = []
    trees: dict[str, str] = {}
    skipped = 0
    tree_label = topology.tree_label
    keys = topology.keys
    others: dict[str, list[NodePosition]] = {}
    for name, labels in nodes:
        tree = labels.get(tree_label) if tree_label else None
        if not in_tree(topology, tree):
            skipped += 1
            other = DEFAULT_TREE if tree is None else tree
            others.setdefault(other, []).append(NodePosition(name, level_values(keys, labels)))
            continue
        if tree is not None:
            trees[name] = tree
        positions.append(NodePosition(name, level_values(keys, labels)))
    positions.sort(key=lambda p: p.node)
    return PositionSet(
        origin,
        positions,
        trees,
        skipped,
        other_trees={t: tuple(ps) for t, ps in sorted(others.items())},
    )


def read_csv(path: str | Path, topology: Topology, *, flag: str = "--from-csv") -> PositionSet:
    """Read a bulk CSV with the bulk tool's validator; InputError lists every problem."""
    sheet = read_label_csv(path, flag=flag, level_keys=topology.keys)
    return from_sheet(topology, sheet)


def parse_csv(data: bytes | str, topology: Topology, *, origin: str) -> PositionSet:
    """Like :func:`read_csv`, from the file's bytes or text (``origin`` names it in errors)."""
    return from_sheet(topology, parse_label_csv(data, origin, level_keys=topology.keys))


def from_sheet(topology: Topology, sheet: LabelSheet) -> PositionSet:
    """The positions of a validated sheet's nodes that are in this topology's tree."""
    return select(topology, sheet.path, ((r.node, r.values) for r in sheet.rows))
