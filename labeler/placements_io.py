"""Where nodes sit, read from the bulk tool's CSV or from today's node labels.

The CSV is MindCluster's format (DESIGN §6): first column ``nodeName``, every other header a
label key in any order, UTF-8 with or without BOM. An empty cell means "no label". Every
problem in the file is collected and reported together with its line number, before
anything is generated. (The bulk helper's full validator could later share this reader.)

For a topology with a tree label (Ascend's ``huawei.com/topotree``) only the nodes of that
tree are in scope: those whose tree label equals the tree name, or that lack it when the
tree is ``default`` — as ascend-for-volcano decides. A present-but-empty tree label stays in
scope so that the check can report it.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from labeler.errors import InputError
from labeler.labels import dns1123_subdomain_problems, key_problems
from labeler.model import Placement, Topology

NODE_NAME = "nodeName"
MAX_PROBLEMS = 50
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class PlacementSet:
    """Placements of the nodes in scope, their tree labels, and where they came from."""

    origin: str
    placements: list[Placement]
    tree_labels: Mapping[str, str] = field(default_factory=dict)
    out_of_scope: int = 0  # nodes of other trees


def in_tree(topology: Topology, tree_value: str | None) -> bool:
    if topology.tree_label is None:
        return True
    if tree_value is None:
        return topology.name == "default"
    return tree_value in ("", topology.name)


def select(
    topology: Topology, origin: str, nodes: Iterable[tuple[str, Mapping[str, str]]]
) -> PlacementSet:
    """Placements (sorted by node) of the nodes in this topology's tree."""
    placements: list[Placement] = []
    trees: dict[str, str] = {}
    skipped = 0
    tree_label = topology.tree_label
    keys = topology.keys
    for name, labels in nodes:
        tree = labels.get(tree_label) if tree_label else None
        if not in_tree(topology, tree):
            skipped += 1
            continue
        if tree is not None:
            trees[name] = tree
        placements.append(Placement(name, tuple(labels.get(k) for k in keys)))
    placements.sort(key=lambda p: p.node)
    return PlacementSet(origin, placements, trees, skipped)


def read_csv(path: str | Path, topology: Topology) -> PlacementSet:
    """Read a bulk CSV; raise InputError listing every problem (file, line, node, column)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise InputError(f"{p}: cannot read the CSV: {e.strerror or e}") from e
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{p}: not UTF-8 (byte {e.start}): save the file as UTF-8 (with or without BOM)"
        ) from e
    return parse_csv(text, topology, origin=str(p))


def parse_csv(text: str, topology: Topology, *, origin: str) -> PlacementSet:
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if not header or not any(h.strip() for h in header):
        raise InputError(
            f"{origin}: the CSV is empty; the first line must be nodeName,<label keys>"
        )
    header = [h.strip() for h in header]
    problems: list[str] = []
    if header[0] != NODE_NAME:
        problems.append(f"{origin}:1: the first column must be {NODE_NAME!r}, not {header[0]!r}")
    seen: dict[str, int] = {}
    for col, key in enumerate(header[1:], start=2):
        if key in seen:
            problems.append(f"{origin}:1: column {col} repeats {key!r} (also column {seen[key]})")
        seen.setdefault(key, col)
        for prob in key_problems(key):
            problems.append(f"{origin}:1: column {col} {key!r} is not a valid label key: {prob}")
    wanted = [k for k in topology.keys if k not in seen]
    if wanted:
        problems.append(
            f"{origin}:1: no column for level label(s) {', '.join(wanted)}; the profile's "
            f"levels are {', '.join(topology.keys)}"
        )
    if problems:
        raise InputError(problems, heading=f"{origin}: invalid CSV header:")
    width = len(header)
    rows: list[tuple[str, dict[str, str]]] = []
    first_line: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        if not row or all(not c.strip() for c in row):
            continue
        if len(problems) >= MAX_PROBLEMS:
            break
        if len(row) != width:
            problems.append(f"{origin}:{line}: {len(row)} fields, the header has {width}")
            continue
        node = row[0].strip()
        valid = len(node) <= 253 and _NODE_NAME.fullmatch(node)  # fast path
        name_problems = [] if valid else dns1123_subdomain_problems(node)
        if name_problems:
            problems.append(f"{origin}:{line}: node name {node!r} " + "; ".join(name_problems))
            continue
        if node in first_line:
            problems.append(
                f"{origin}:{line}: node {node} is listed again (first on line {first_line[node]})"
            )
            continue
        first_line[node] = line
        labels = {k: c.strip() for k, c in zip(header[1:], row[1:], strict=True) if c.strip()}
        rows.append((node, labels))
    if problems:
        more = " (stopped after the first 50 problems)" if len(problems) >= MAX_PROBLEMS else ""
        raise InputError(problems, heading=f"{origin}: invalid CSV{more}:")
    return select(topology, origin, rows)
