"""The HyperNode tree as Volcano's scheduler builds it (``api/hyper_node_info.go``,
``framework/session.go``).

A HyperNode (``topology.volcano.sh/v1alpha1``) has a ``tier`` (1 is nearest the nodes), an
optional ``tierName`` and members: Nodes, chosen by ``exactMatch``, ``regexMatch``
(unanchored, as Go's ``MatchString``) or ``labelMatch``; or HyperNodes, by ``exactMatch``
only. Each HyperNode has one parent. The session adds a virtual HyperNode above every
parentless one, one tier above the highest: it holds every node, so a job can always fall
back to the whole cluster when its bound allows that tier.

What Volcano's cache refuses (a cycle, a HyperNode claimed by two parents) stops it from
scheduling any job with a network topology; a node in two HyperNodes of the lowest tier
makes the scheduler's node-to-HyperNode lookup ambiguous. All three are errors here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labeler.base.errors import InputError
from labeler.core.capacity import Node
from labeler.core.volcano import MemberType
from labeler.sim.common.fields import as_map
from labeler.sim.volcano.model import label_selector, named

TOP = "<cluster-top-hypernode>"
API_GROUP = "topology.volcano.sh"


@dataclass
class HyperNode:
    name: str
    tier: int
    tier_name: str = ""
    parent: str = ""
    children: list[str] = field(default_factory=list)
    nodes: frozenset[str] = frozenset()  # every node under it, directly or through children


@dataclass(frozen=True)
class _Spec:
    name: str
    tier: int
    tier_name: str
    node_members: tuple[Mapping[str, Any], ...]
    children: tuple[str, ...]
    where: str


def _spec(obj: Mapping[str, Any], where: str) -> _Spec:
    _, spec, name = named(obj, where, "HyperNode")
    here = f"{where} (HyperNode {name})"
    tier = spec.get("tier")
    if isinstance(tier, bool) or not isinstance(tier, int):
        raise InputError(f"{here}: spec.tier must be a whole number, got {tier!r}")
    nodes: list[Mapping[str, Any]] = []
    children: list[str] = []
    for i, m in enumerate(spec.get("members") or []):
        m = as_map(m)
        selector = as_map(m.get("selector"))
        if m.get("type") == MemberType.HYPERNODE:
            child = as_map(selector.get("exactMatch")).get("name")
            if not child:  # HyperNode members resolve by exactMatch only
                raise InputError(
                    f"{here}: members[{i}]: a HyperNode member needs selector.exactMatch.name"
                )
            children.append(str(child))
        elif m.get("type") == MemberType.NODE:
            nodes.append(selector)
        else:
            raise InputError(f"{here}: members[{i}].type must be {' or '.join(MemberType)}")
    return _Spec(name, tier, str(spec.get("tierName") or ""), tuple(nodes), tuple(children), here)


def _members(selector: Mapping[str, Any], nodes: Sequence[Node], where: str) -> set[str]:
    """``GetMembers``: the node names one Node member selects."""
    out: set[str] = set()
    exact = as_map(selector.get("exactMatch"))
    if exact.get("name"):
        out.add(str(exact["name"]))
    regex = selector.get("regexMatch")
    if regex is not None:
        pattern = str(as_map(regex).get("pattern") or "")
        try:
            compiled = re.compile(pattern)
        except re.error as e:
            raise InputError(
                f"{where}: regexMatch pattern {pattern!r} does not compile: {e}"
            ) from None
        out.update(n.name for n in nodes if compiled.search(n.name))
    labels = selector.get("labelMatch")
    if labels is not None and (
        as_map(labels).get("matchLabels") or as_map(labels).get("matchExpressions")
    ):
        sel = label_selector(labels, f"{where}: labelMatch")
        out.update(n.name for n in nodes if sel.matches(n.labels))
    return out


class HyperNodeTree:
    """HyperNodes by name (the virtual top included), their tiers and the node sets."""

    def __init__(self, specs: Sequence[_Spec], nodes: Sequence[Node]) -> None:
        self.notes: list[str] = []
        self.hypernodes: dict[str, HyperNode] = {
            s.name: HyperNode(s.name, s.tier, s.tier_name) for s in specs
        }
        by_name = {s.name: s for s in specs}
        self._link(specs)
        self._check_cycles()
        direct = {s.name: _direct_nodes(s, nodes) for s in specs}
        known = {n.name for n in nodes}
        self._fill_nodes(by_name, direct, known)
        top_tier = max((s.tier for s in specs), default=0) + 1
        top = HyperNode(TOP, max(top_tier, 1), nodes=frozenset(known))
        top.children = sorted(n for n, h in self.hypernodes.items() if not h.parent)
        for child in top.children:
            self.hypernodes[child].parent = TOP
        self.hypernodes[TOP] = top
        self.tiers = sorted({h.tier for h in self.hypernodes.values()})
        self.by_tier = {
            t: sorted(n for n, h in self.hypernodes.items() if h.tier == t) for t in self.tiers
        }
        self.tier_names: dict[str, int] = {}
        for s in specs:
            if s.tier_name:
                self.tier_names[s.tier_name] = s.tier
        self.leaf_of = self._leaves()
        self._ancestors: dict[str, tuple[str, ...]] = {}

    def _link(self, specs: Sequence[_Spec]) -> None:
        claimed: dict[str, str] = {}
        for s in specs:
            for child in s.children:
                if child in claimed and claimed[child] != s.name:
                    raise InputError(
                        f"{s.where}: HyperNode {child} already has a parent {claimed[child]}, "
                        f"and cannot set another parent {s.name} (a HyperNode has one "
                        "parent; Volcano stops scheduling jobs with a network topology "
                        "until this is fixed)"
                    )
                claimed[child] = s.name
                if child not in self.hypernodes:
                    self.notes.append(
                        f"HyperNode {s.name} lists member HyperNode {child}, which does not "
                        "exist: it adds no nodes"
                    )
                    continue
                self.hypernodes[child].parent = s.name
                self.hypernodes[s.name].children.append(child)

    def _check_cycles(self) -> None:
        for start in self.hypernodes:
            seen = [start]
            cur = self.hypernodes[start].parent
            while cur:
                if cur in seen:
                    chain = " -> ".join([*seen[seen.index(cur) :], cur])
                    raise InputError(
                        f"HyperNode {cur}: cyclic dependency ({chain}): a HyperNode cannot "
                        "contain itself; Volcano stops scheduling jobs with a network "
                        "topology until this is fixed"
                    )
                seen.append(cur)
                cur = self.hypernodes[cur].parent

    def _fill_nodes(
        self, specs: Mapping[str, _Spec], direct: Mapping[str, set[str]], known: set[str]
    ) -> None:
        done: dict[str, frozenset[str]] = {}

        def fill(name: str) -> frozenset[str]:
            if name in done:
                return done[name]
            out = set(direct[name]) & known
            for child in self.hypernodes[name].children:
                out |= fill(child)
            done[name] = frozenset(out)
            return done[name]

        for name in specs:
            self.hypernodes[name].nodes = fill(name)

    def _leaves(self) -> dict[str, str]:
        """``FindHyperNodeForNode``: the HyperNode of the lowest tier holding each node."""
        lowest = self.tiers[0]
        out: dict[str, str] = {}
        for name in self.by_tier[lowest]:
            if name == TOP:
                continue
            for node in self.hypernodes[name].nodes:
                if node in out:
                    raise InputError(
                        f"node {node} is a member of two tier-{lowest} HyperNodes, "
                        f"{out[node]} and {name}: Volcano's node-to-HyperNode lookup would "
                        "pick one at random; make each node a member of one of them"
                    )
                out[node] = name
        return out

    # --- queries ---------------------------------------------------------------------

    def __getitem__(self, name: str) -> HyperNode:
        return self.hypernodes[name]

    @property
    def real(self) -> list[HyperNode]:
        """The HyperNodes of the cluster, without the virtual top."""
        return [h for n, h in self.hypernodes.items() if n != TOP]

    def ancestors(self, name: str) -> tuple[str, ...]:
        """``GetAncestors``: the HyperNode, its parent, … up to the top."""
        got = self._ancestors.get(name)
        if got is None:
            chain = [name]
            cur = self.hypernodes[name].parent if name in self.hypernodes else ""
            while cur:
                chain.append(cur)
                cur = self.hypernodes[cur].parent
            got = self._ancestors[name] = tuple(chain)
        return got

    def lca(self, a: str, b: str) -> str:
        """``GetLCAHyperNode``: "" stands for "none yet" and yields the other."""
        if not a:
            return b
        if not b:
            return a
        mine = set(self.ancestors(a))
        return next((x for x in self.ancestors(b) if x in mine), "")

    def top_tier(self) -> int:
        return self.hypernodes[TOP].tier


def _direct_nodes(spec: _Spec, nodes: Sequence[Node]) -> set[str]:
    out: set[str] = set()
    for selector in spec.node_members:
        out |= _members(selector, nodes, spec.where)
    return out


def is_hypernode(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "HyperNode" and str(obj.get("apiVersion", API_GROUP)).startswith(
        API_GROUP
    )


def build_tree(
    objects: Iterable[tuple[str, Mapping[str, Any]]], nodes: Sequence[Node]
) -> HyperNodeTree:
    """The tree of the HyperNode objects, each with where it was read, over ``nodes``
    (InputError naming the object)."""
    specs: list[_Spec] = []
    seen: dict[str, str] = {}
    for where, obj in objects:
        s = _spec(obj, where)
        if s.name in seen:
            raise InputError(f"{s.where}: HyperNode {s.name} appears twice (first {seen[s.name]})")
        seen[s.name] = s.where
        specs.append(s)
    return HyperNodeTree(specs, nodes)


def describe_tiers(tree: HyperNodeTree) -> str:
    """``tier 1 (rack): 12, tier 2: 3`` for the summary line."""
    parts = []
    for tier in tree.tiers:
        names = [n for n in tree.by_tier[tier] if n != TOP]
        if not names:
            continue
        label = {tree[n].tier_name for n in names} - {""}
        tag = f" ({', '.join(sorted(label))})" if label else ""
        parts.append(f"tier {tier}{tag}: {len(names)}")
    return ", ".join(parts) or "none"


def tier_name_of(tree: HyperNodeTree, tier: int) -> str:
    return next((k for k, v in sorted(tree.tier_names.items()) if v == tier), "")
