"""ascend-for-volcano's multi-level scheduling (mind-cluster ``internal/npu/policy/
multilevelscheduling``): which nodes an Ascend job takes, level by level.

A job annotated ``huawei.com/schedule_policy: multilevel`` and ``huawei.com/affinity-config:
level1=a,level2=b,…`` is placed whole nodes at a time (each pod asks for every NPU of its
node: a node whose free ``huawei.com/Ascend910`` count differs is not a candidate) into the
tree the scheduler configuration's ``init-params`` ``resource-level-config`` describes
(``{"<tree>": {"level1": {"label": …, "reservedNode": n}, …}}``, level1 narrowest; a node's
tree is its ``huawei.com/topotree`` label, default ``default``): groups of ``a`` pods each in
one level1 domain, groups of ``b`` pods in one level2 domain, and so on. ``reservedNode``
keeps that many nodes of each level1 domain out of the first pass; a second pass may use
them. The domains are tried smallest-fragment first, and of several trees the one left
least fragmented wins. A job with only a level1 size is first tried with all its groups in
one level2 domain. Volcano picks the selected nodes (the plugin scores them far above any
other); Go's map order decides among equals there, name order here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from labeler.core.capacity import Node

NPU = "huawei.com/Ascend910"
TREE_LABEL = "huawei.com/topotree"
DEFAULT_TREE = "default"
POLICY = "huawei.com/schedule_policy"
AFFINITY = "huawei.com/affinity-config"
FRAGMENT_SCALE = 10


def affinity_blocks(annotations: Mapping[str, str]) -> dict[str, int] | str | None:
    """``GetAffinityBlocks``: None for a job that is not multi-level, a string on error."""
    if annotations.get(POLICY) != "multilevel":
        return None
    raw = annotations.get(AFFINITY)
    if raw is None:
        return "job is not multilevel job (no huawei.com/affinity-config)"
    out: dict[str, int] = {}
    for part in raw.split(","):
        pair = part.split("=")
        if len(pair) != 2:
            return "config pair is not correct"
        if not re.fullmatch(r"[+-]?\d+", pair[1]):
            return "value of pair is not integer"
        out[pair[0]] = int(pair[1])
    return out


def task_levels(blocks: Mapping[str, int], tasks: int) -> list[int] | str:
    """``GetTaskTreeLevels``: pods per group from the job down to one node (or why not)."""
    if not blocks:
        return "affinity blocks is empty"
    levels = [tasks]
    for i in range(len(blocks), 0, -1):
        key = f"level{i}"
        if key not in blocks:
            return (
                f"affinity block {key} is not exist, please check if level numbers are continuous"
            )
        n = blocks[key]
        if n == 0 or levels[-1] % n:
            return (
                f"affinity block {key}'s value {n} can not be divided by upper level's value "
                f"{levels[-1]}"
            )
        levels.append(n)
    return [*levels, 1]


@dataclass(frozen=True)
class TreeLevels:
    """One tree of ``resource-level-config``: labels widest first, level1's reservedNode."""

    labels: tuple[str, ...]
    reserved: int = 0


def resource_levels(conf: Mapping[str, object]) -> dict[str, TreeLevels] | str:
    """``getConfigLevels`` from the init-params arguments (or why they are unusable)."""
    raw = conf.get("resource-level-config")
    if raw is None:
        return "resource-level-config doesn't exist"
    try:
        doc = json.loads(str(raw))
    except ValueError as e:
        return f"ummarshal config failed, {e}"  # Volcano's spelling
    out: dict[str, TreeLevels] = {}
    for tree, levels in doc.items() if isinstance(doc, dict) else ():
        if not isinstance(levels, dict):
            continue
        keys = [f"level{i}" for i in range(len(levels), 0, -1)]
        if any(k not in levels or not isinstance(levels[k], dict) for k in keys):
            continue  # "topo-level config is not continuous": the tree is dropped
        reserved = levels["level1"].get("reservedNode", 0)
        if not isinstance(reserved, int) or isinstance(reserved, bool):
            return "ummarshal config failed: reservedNode is not an integer"
        out[str(tree)] = TreeLevels(tuple(str(levels[k].get("label", "")) for k in keys), reserved)
    return out or "no valid resource config exist"


@dataclass(eq=False)
class _Node:
    """``schedulingTreeNode``: a domain (or node) and the search's bookkeeping."""

    name: str
    depth: int
    parent: _Node | None = None
    children: dict[str, _Node] = field(default_factory=dict)
    traversed: bool = False
    allocatable: int = 1
    fragment: int = 0
    free: list[list[str]] = field(default_factory=list)  # groups (their node names) made
    reserved: bool = False
    sufficient: bool = True


class _Tree:
    def __init__(self, name: str, levels: TreeLevels, nodes: Sequence[Node], sizes: Sequence[int]):
        self.sizes = list(sizes)  # pods per group by depth: job, levelN … level1, node
        depth_labels = list(levels.labels[len(levels.labels) - (len(sizes) - 2) :])
        self.reserved = levels.reserved
        self.root = _Node(name, 0)
        self.by_depth: list[list[_Node]] = [[self.root]] + [[] for _ in depth_labels] + [[]]
        for n in sorted(nodes, key=lambda x: x.name):
            cur = self.root
            for d, key in enumerate([*depth_labels, ""], start=1):
                child_name = n.labels[key] if key else n.name
                child = cur.children.get(child_name)
                if child is None:
                    child = cur.children[child_name] = _Node(child_name, d, cur)
                    self.by_depth[d].append(child)
                cur = child
        self.last = len(sizes) - 1
        for d in range(self.last, -1, -1):
            for tn in self.by_depth[d]:
                self._init(tn)

    def per_child(self, depth: int) -> int:
        return 0 if depth >= self.last else self.sizes[depth] // self.sizes[depth + 1]

    def _init(self, tn: _Node) -> None:
        if tn.depth == self.last:
            return
        limit = self.reserved if tn.depth == self.last - 1 else 0
        count = acc = subs = 0
        for child in sorted(tn.children.values(), key=lambda c: c.name):
            if count < limit:
                count += 1
                child.reserved = True
            if child.reserved or not child.sufficient:
                continue
            acc += child.fragment
            subs += child.allocatable
        tn.sufficient = count >= limit
        per = self.per_child(tn.depth)
        tn.allocatable = subs // per
        tn.fragment = (subs % per) * self.sizes[tn.depth + 1] + acc * FRAGMENT_SCALE

    def schedule(self) -> list[list[str]] | None:
        got = self._tree(self.root, 1)
        return got if got is not None else self._remaining()

    def _tree(self, tn: _Node, unscheduled: int) -> list[list[str]] | None:
        if tn.depth == self.last:
            return self._build(tn)
        siblings = {
            c.name: c
            for c in tn.children.values()
            if not c.reserved and c.sufficient and c.allocatable > 0
        }
        return self._siblings(siblings, unscheduled * self.per_child(tn.depth))

    def _siblings(self, siblings: dict[str, _Node], unscheduled: int) -> list[list[str]] | None:
        left = [unscheduled]
        for tn in sorted(siblings.values(), key=lambda c: (c.fragment, c.allocatable, c.name)):
            if tn.allocatable > left[0]:
                continue
            del siblings[tn.name]
            got = self._visit(tn, left)
            if got is not None or left[0] <= 0:
                return got
        for tn in sorted(siblings.values(), key=lambda c: (c.allocatable, c.fragment, c.name)):
            got = self._visit(tn, left)
            if got is not None or left[0] <= 0:
                return got
        return None

    def _visit(self, tn: _Node, left: list[int]) -> list[list[str]] | None:
        tn.traversed = True
        take = min(tn.allocatable, left[0])
        got = self._tree(tn, take)
        if got is None:
            left[0] -= take
        return got

    def _build(self, tn: _Node) -> list[list[str]] | None:
        """A node becomes a one-pod group of its parent; a full group climbs on."""
        group = [tn.name]
        cur: _Node | None = tn.parent
        while cur is not None:
            cur.free.append(group)
            per = self.per_child(cur.depth)
            if len(cur.free) < per:
                return None
            group = [n for g in cur.free[:per] for n in g]
            cur.free = cur.free[per:]
            if cur.depth == 0:
                return [group]
            cur = cur.parent
        return None

    def _remaining(self) -> list[list[str]] | None:
        """``traverseLevelForRemainingNodes``: the nodes not tried yet, reserved included,
        grouped by how many reserved nodes their level1 domain has."""
        if self.last < 1:
            return None
        groups: list[list[list[_Node]]] = [[] for _ in range(self.reserved + 1)]
        for parent in self.by_depth[self.last - 1]:
            count, plain, tail = 0, [], None
            for tn in sorted(parent.children.values(), key=lambda c: c.name):
                if tn.traversed:
                    continue
                if tn.reserved:
                    count += 1
                    tail = [tn]
                    groups[min(count, self.reserved)].append(tail)
                else:
                    plain.append(tn)
            if plain:
                if tail is None:
                    groups[count].append(plain)
                else:
                    tail.extend(plain)
        for bucket in reversed(groups):
            for nodes in bucket:
                got = self._siblings({n.name: n for n in nodes}, sum(n.allocatable for n in nodes))
                if got is not None:
                    return got
        return None

    def fragment(self) -> int:
        return self.root.fragment


def select_nodes(
    candidates: Sequence[Node], levels: Mapping[str, TreeLevels], sizes: Sequence[int]
) -> tuple[list[str], str] | str:
    """The nodes the job gets and the tree they are in, or why there are none."""
    by_tree: dict[str, list[Node]] = {}
    for n in candidates:
        by_tree.setdefault(n.labels.get(TREE_LABEL, DEFAULT_TREE), []).append(n)
    attempts = [list(sizes)]
    if len(sizes) == 3:  # level1 only: first try every group inside one level2 domain
        attempts.insert(0, [sizes[0], sizes[0], *sizes[1:]])
    for want in attempts:
        best: tuple[int, list[str], str] | None = None
        for tree, lv in sorted(levels.items()):
            if len(lv.labels) + 2 < len(want) or not by_tree.get(tree):
                continue
            t = _Tree(tree, lv, by_tree[tree], want)
            got = t.schedule()
            if got is not None and (best is None or t.fragment() < best[0]):
                best = (t.fragment(), got[0], tree)
        if best is not None:
            return best[1], best[2]
    return "no tree of resource-level-config can hold the affinity-config's groups"


NOT_IN_CONFIG = "topology label does not match config"
NPU_MISMATCH = (
    "checkNodeNPUByTask the npus on this node don't satisfy the schedulable topology err: "
    "node usable npu not match task npu num"
)


@dataclass
class MultiLevel:
    """One multi-level job's rules, and the nodes chosen for the placement under way."""

    levels: Mapping[str, TreeLevels]
    sizes: list[int]
    chosen: frozenset[str] | None = None

    def node_reason(self, request: int, node: Node, free: int) -> str | None:
        """``CheckNodeNPUByTask``: the node's tree and level labels, and its free NPUs."""
        tree = self.levels.get(node.labels.get(TREE_LABEL, DEFAULT_TREE))
        if tree is None or any(lbl not in node.labels for lbl in tree.labels):
            return NOT_IN_CONFIG
        return None if free == request else NPU_MISMATCH

    def choose(self, candidates: Sequence[Node]) -> frozenset[str] | str:
        got = select_nodes(candidates, self.levels, self.sizes)
        if isinstance(got, str):
            return got
        return frozenset(got[0])


def plan(
    plugins: Sequence[str],
    configurations: Mapping[str, Mapping[str, object]],
    annotations: Mapping[str, str],
    npu_tasks: int,
) -> MultiLevel | str | None:
    """The job's multi-level rules; None when it is no multi-level job or no volcano-npu
    plugin runs; a string when ascend-for-volcano refuses the job (in its words)."""
    if not any(p.startswith("volcano-npu") for p in plugins):
        return None
    blocks = affinity_blocks(annotations)
    if blocks is None:
        return None
    if isinstance(blocks, str):
        return f"ascend-for-volcano: {blocks}"
    sizes = task_levels(blocks, npu_tasks)
    if isinstance(sizes, str):
        return f"ascend-for-volcano: block config is invalid: {sizes}"
    levels = resource_levels(configurations.get("init-params", {}))
    if isinstance(levels, str):
        return f"ascend-for-volcano: init-params: {levels}"
    return MultiLevel(levels, sizes)
