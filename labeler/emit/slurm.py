"""Slurm network topology: ``topology.conf`` (tree plugin) and ``topology.yaml`` (25.05+).

Rules, from Slurm's topology.conf(5), topology.yaml(5) and the block plugin's reader
(docs/compatibility.md lists the versions read):

- tree: one switch per domain of every level; a leaf switch (narrowest level) lists its
  ``Nodes``, a wider one its child ``Switches``, both as Slurm hostlist expressions. A
  switch name is at most 64 characters. Without a common root switch no job spans two
  top-level domains, so a ``root`` switch joins them (Kueue also lets a job span them).
- block (only when the profile marks a level ``block: true``): one block per domain of
  that level. ``block_sizes[0]`` is the base block size: every block needs at least that
  many nodes, so it is the smallest block's node count. Each further size is the base
  times a power of two; Slurm aggregates *consecutive* blocks into those larger blocks, so
  blocks are listed grouped by their parent domain and a larger size is offered only when
  every parent's block count divides into it (an aggregate never spans two parents).

Switch and block names, and the Slinky node annotation that repeats them on each node,
are :mod:`labeler.core.slinky`'s: stable when nodes are added, computed from a node's own
labels.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from labeler.base.errors import InputError
from labeler.base.logs import logger
from labeler.core.model import NodePosition, Topology
from labeler.emit import Emitter, Output, Target
from labeler.emit.hypernodes import choose_parents
from labeler.emit.kinds import Kind
from labeler.emit.yamlio import dump

if TYPE_CHECKING:
    from labeler.core.slinky import SlurmNames

log = logger(__name__)

MAX_BLOCK_LEVELS = 16  # the block plugin rejects a size more than 2**15 base blocks
# Slurm's config reader keeps one logical line in a fixed buffer; longer lines are cut.
MAX_LINE = 4095
ROOT_SWITCH = "root"  # no generated name lacks a '-', so it cannot collide
_NODE_OK = re.compile(r"[A-Za-z0-9._-]+")


def _node_problems(positions: Sequence[NodePosition]) -> list[str]:
    return [
        f"node {p.node!r}: Slurm node names take letters, digits, '.', '_' and '-' only"
        for p in positions
        if not _NODE_OK.fullmatch(p.node)
    ]


@dataclass(frozen=True)
class _Tree:
    """Domains per level (widest = 0): switch name → sorted child names."""

    switches: tuple[dict[str, list[str]], ...]
    roots: tuple[str, ...]  # switches without a parent, sorted
    left_out: tuple[str, ...]  # nodes without the narrowest value


def _tree(topology: Topology, positions: Sequence[NodePosition]) -> _Tree:
    from labeler.core.slinky import switch_name

    levels = topology.levels
    last = len(levels) - 1
    children: list[defaultdict[str, set[str]]] = [defaultdict(set) for _ in levels]
    left_out = []
    for p in positions:
        v = p.values[last]
        if v is None:
            left_out.append(p.node)
        else:
            children[last][v].add(p.node)
    has_parent: list[set[str]] = [set() for _ in levels]
    for i in range(last, 0, -1):
        for child, parent in choose_parents(topology, positions, i).items():
            if child in children[i]:
                children[i - 1][parent].add(child)
                has_parent[i].add(child)
    switches = []
    roots = []
    for i, level in enumerate(levels):
        named: dict[str, list[str]] = {}
        for value, members in children[i].items():
            if not members:
                continue
            kids = (
                sorted(members)
                if i == last
                else sorted(switch_name(levels[i + 1], c) for c in members)
            )
            name = switch_name(level, value)
            if name in named:
                raise InputError(
                    f"Slurm switch name {name!r} stands for two values of {level.key}; "
                    "rename the level in the profile"
                )
            named[name] = kids
            if value not in has_parent[i]:
                roots.append(name)
        switches.append(named)
    return _Tree(tuple(switches), tuple(sorted(roots)), tuple(sorted(left_out)))


def _hostlist(names: Sequence[str]) -> str:
    import hostlist

    return str(hostlist.collect_hostlist(list(names)))


def tree_lines(tree: _Tree) -> list[tuple[str, str, str]]:
    """(switch, "Nodes"/"Switches", hostlist), leaves first, then wider levels, then root."""
    out: list[tuple[str, str, str]] = []
    last = len(tree.switches) - 1
    for i in range(last, -1, -1):
        kind = "Nodes" if i == last else "Switches"
        for name in sorted(tree.switches[i]):
            out.append((name, kind, _hostlist(tree.switches[i][name])))
    if len(tree.roots) > 1:
        out.append((ROOT_SWITCH, "Switches", _hostlist(tree.roots)))
    return out


@dataclass(frozen=True)
class SlurmFiles:
    conf: str  # topology.conf
    yaml: str  # topology.yaml


def build(topology: Topology, positions: Sequence[NodePosition], names: SlurmNames) -> SlurmFiles:
    """Both files from the same positions (nodes without the narrowest value are left out,
    with a warning)."""
    problems = _node_problems(positions)
    if problems:
        raise InputError(problems, heading="cannot write the Slurm topology:")
    tree = _tree(topology, positions)
    _warn_left_out(topology, tree)
    lines = tree_lines(tree)
    yaml_text = "# Slurm topology.yaml (Slurm 25.05 or later), written by topology-labeler\n"
    return SlurmFiles(
        conf=_conf_text(topology, lines),
        yaml=yaml_text + dump(_yaml_doc(topology, positions, names, lines)),
    )


def _conf_text(topology: Topology, tree: list[tuple[str, str, str]]) -> str:
    lines = [
        "# Slurm topology.conf (TopologyPlugin=topology/tree), written by topology-labeler",
        f"# levels: {', '.join(f'{lv.name} ({lv.key})' for lv in topology.levels)}",
    ]
    for name, kind, members in tree:
        line = f"SwitchName={name} {kind}={members}"
        if len(line) > MAX_LINE:
            raise InputError(
                f"topology.conf: the line of switch {name} is {len(line)} characters, more "
                f"than Slurm reads ({MAX_LINE}); its node names do not compress into a short "
                "hostlist. Use topology.yaml (Slurm 25.05 or later), which has no such limit"
            )
        lines.append(line)
    return "\n".join(lines) + "\n"


def _warn_left_out(topology: Topology, tree: _Tree) -> None:
    if tree.left_out:
        shown = ", ".join(tree.left_out[:5]) + (" …" if len(tree.left_out) > 5 else "")
        log.warning(
            "%d node(s) without %s are left out of the Slurm topology: %s",
            len(tree.left_out),
            topology.levels[-1].key,
            shown,
        )


def block_sizes(counts_per_parent: Sequence[Sequence[int]]) -> list[int]:
    """Valid ``block_sizes`` for blocks grouped by parent (node count of each block).

    The base is the smallest block; a size base·2^k is offered while 2^k blocks fit in
    every parent group and every group's count is a multiple of 2^k (so Slurm's aggregates
    of consecutive blocks stay inside one parent). One group: up to the first 2^k that
    covers all blocks, as Slurm's default does.
    """
    flat = [n for group in counts_per_parent for n in group]
    if not flat:
        return []
    base = min(flat)
    sizes = [base]
    groups = [len(g) for g in counts_per_parent]
    k = 1
    while k < MAX_BLOCK_LEVELS:
        span = 2**k
        if len(groups) == 1:
            if 2 ** (k - 1) >= groups[0]:
                break
        elif any(g < span or g % span for g in groups):
            break
        sizes.append(base * span)
        k += 1
    return sizes


def _blocks(
    topology: Topology, positions: Sequence[NodePosition]
) -> tuple[list[tuple[str, list[str]]], list[int]]:
    """(block name, nodes) grouped by parent domain, and their block_sizes."""
    from labeler.core.slinky import switch_name

    level = topology.block_level
    assert level is not None
    i = topology.index(level.key)
    members: defaultdict[str, set[str]] = defaultdict(set)
    for p in positions:
        v = p.values[i]
        if v is not None:
            members[v].add(p.node)
    parent_of = choose_parents(topology, positions, i) if i > 0 else {}
    groups: defaultdict[str, list[str]] = defaultdict(list)
    for value in members:
        groups[parent_of.get(value, "")].append(value)
    ordered: list[tuple[str, list[str]]] = []
    counts: list[list[int]] = []
    for parent in sorted(groups):
        values = sorted(groups[parent], key=lambda v: switch_name(level, v))
        ordered += [(switch_name(level, v), sorted(members[v])) for v in values]
        counts.append([len(members[v]) for v in values])
    return ordered, block_sizes(counts)


def _yaml_doc(
    topology: Topology,
    positions: Sequence[NodePosition],
    names: SlurmNames,
    tree: list[tuple[str, str, str]],
) -> list[dict[str, Any]]:
    """The tree (cluster default) and, if a level is marked, the block topology."""
    switches = [
        {"switch": name, "nodes" if kind == "Nodes" else "children": members}
        for name, kind, members in tree
    ]
    doc: list[dict[str, Any]] = [
        {"topology": names.tree, "cluster_default": True, "tree": {"switches": switches}}
    ]
    if topology.block_level is not None and names.block is not None:
        blocks, sizes = _blocks(topology, positions)
        if blocks:
            doc.append(
                {
                    "topology": names.block,
                    "cluster_default": False,
                    "block": {
                        "block_sizes": sizes,
                        "blocks": [{"block": b, "nodes": _hostlist(n)} for b, n in blocks],
                    },
                }
            )
    return doc


FOLDER = "slurm"  # under --output-dir: files for the Slurm controller, not for kubectl


@dataclass(frozen=True)
class SlurmOptions:
    """``--slurm-topology-name``: topology.yaml's name of the tree topology."""

    topology_name: str | None = None  # default: the profile name


def outputs(target: Target, opts: SlurmOptions) -> list[Output]:
    """topology.conf and topology.yaml, for the Slurm controller's folder; none without
    positions."""
    if target.positions is None:
        return []
    from labeler.core.slinky import topology_names

    names = topology_names(target.topology, opts.topology_name or target.profile_name)
    files = build(target.topology, target.positions, names)
    return [
        Output(
            "topology.conf",
            "Slurm topology.conf (TopologyPlugin=topology/tree): next to slurm.conf",
            (),
            applicable=False,
            raw=files.conf,
            folder=FOLDER,
        ),
        Output(
            "topology.yaml",
            f"Slurm topology.yaml (25.05+; topologies {names.tree}"
            + (f", {names.block}" if names.block else "")
            + "): next to slurm.conf, instead of topology.conf",
            (),
            applicable=False,
            raw=files.yaml,
            folder=FOLDER,
        ),
    ]


EMITTER = Emitter(Kind.SLURM, SlurmOptions(), outputs)
