"""The map's model: nodes → nested domains, each node with its audit state and free capacity.

Pure. The states and what a partial node misses are the audit's own
(:func:`labeler.core.states.build_report`), so the map, ``audit`` and the exporter's
metrics can never disagree. Free accelerators are allocatable minus what bound pods
request (:meth:`labeler.core.capacity.Node.free`, the numbers ``domains`` starts from).

Nodes with every level label are drawn inside the domain their path of values names (a
domain is its whole path, as Kueue identifies it, so an inconsistent node shows up in a
second copy of its narrow domain). Partial and unlabeled nodes sit apart, in the group
"outside the topology", with the levels they miss.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from labeler.base.text import natural_key
from labeler.core.capacity import Node
from labeler.core.check import NodeState
from labeler.core.dra import Devices
from labeler.core.model import Topology
from labeler.core.node import NodeInfo
from labeler.core.overlay import JobOverlay
from labeler.core.quantity import format_units
from labeler.core.scope import Scope
from labeler.core.states import AuditReport, NodeFacts, build_report, node_facts

_UNLABELED = NodeState.UNLABELED  # read per node: a module global, not the class attribute


@dataclass(frozen=True)
class NodeDetail:
    """What the map shows of a node beyond its position: labels, taints, free capacity."""

    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[str, ...] = ()
    free: Mapping[str, int] | None = None  # accelerator resource -> free; None: not known


@dataclass(frozen=True)
class MapDomain:
    path: tuple[str, ...]
    level: int
    parent: int  # index in TopologyMap.domains, -1 for a widest-level domain
    nodes: int
    total: int
    free: int | None


@dataclass(frozen=True)
class MapNode:
    name: str
    state: NodeState
    domain: int  # narrowest domain's index; -1 when outside the topology
    values: tuple[str | None, ...]
    total: int
    free: int | None
    missing: tuple[str, ...]  # level names, for partial and unlabeled nodes
    labels: Mapping[str, str]
    taints: tuple[str, ...]


@dataclass(frozen=True)
class TopologyMap:
    title: str
    origin: str
    profile: str
    scope: str
    levels: tuple[str, ...]
    resources: tuple[str, ...]
    counts: Mapping[str, int]
    domains: tuple[MapDomain, ...]
    nodes: tuple[MapNode, ...]  # sorted by name, numbers by value (natural_key)
    job: JobOverlay | None = None
    refresh: int = 0  # seconds between reloads of a served page; 0 = never
    marks: Mapping[int, str] = field(default_factory=dict)  # domain index -> warning

    @property
    def outside(self) -> tuple[MapNode, ...]:
        return tuple(n for n in self.nodes if n.domain < 0)

    def partial_in_domains(self) -> list[int]:
        """Per domain, the nodes outside the topology whose wider labels name it: a node
        that lacks only its local block counts in its network block and island. The
        overview shows them on the domain's row (they are there, but no scheduler sees
        them)."""
        index = {d.path: i for i, d in enumerate(self.domains)}
        counts = [0] * len(self.domains)
        for n in self.outside:
            prefix: tuple[str, ...] = ()
            for value in n.values:
                if value is None:
                    break
                prefix = (*prefix, value)
                i = index.get(prefix)
                if i is None:
                    break
                counts[i] += 1
        return counts

    def domain_index(self, path: Sequence[str]) -> int:
        for i, d in enumerate(self.domains):
            if d.path == tuple(path):
                return i
        return -1

    def to_json(self) -> dict[str, Any]:
        """Compact, for 10,000 nodes in a few MB: nodes are arrays, label pairs interned."""
        pairs: dict[str, int] = {}

        def intern(text: str) -> int:
            return pairs.setdefault(text, len(pairs))

        states = list(NodeState)
        job = self.job
        nodes = []
        for n in self.nodes:
            row: list[Any] = [
                n.name,
                states.index(n.state),
                n.domain,
                n.total,
                -1 if n.free is None else n.free,
                [intern(f"{k}={v}") for k, v in sorted(n.labels.items())],
                list(n.taints),
                list(n.missing),
            ]
            if job is not None:
                row += [job.pods.get(n.name, 0), job.blocked.get(n.name, "")]
            nodes.append(row)
        out: dict[str, Any] = {
            "title": self.title,
            "origin": self.origin,
            "profile": self.profile,
            "scope": self.scope,
            "levels": list(self.levels),
            "resources": list(self.resources),
            "states": states,
            "counts": dict(self.counts),
            "domains": [
                [
                    d.path[-1],
                    d.level,
                    d.parent,
                    d.nodes,
                    d.total,
                    -1 if d.free is None else d.free,
                    partial,
                ]
                for d, partial in zip(self.domains, self.partial_in_domains(), strict=True)
            ],
            "nodes": nodes,
            "pairs": list(pairs),
            "refresh": self.refresh,
        }
        if self.marks:
            out["marks"] = {str(i): text for i, text in self.marks.items()}
        if job is not None:
            out["job"] = {
                "scheduler": job.scheduler,
                "fits": job.fits,
                "headline": job.headline,
                "message": job.message,
                "domain": self.domain_index(job.domain) if job.domain else -1,
                "role": job.domain_role,
                "notes": list(job.notes),
            }
        return out


def facts_from_nodes(
    topology: Topology,
    scope: Scope,
    nodes: Iterable[Node],
    devices: Mapping[str, Devices] | None = None,
) -> list[NodeFacts]:
    """The audit's facts of the simulator's nodes that are in scope (the same filter and
    the same accelerator count as ``audit``); ``devices``: node → its DRA devices."""
    devices = devices or {}
    out = []
    for n in nodes:
        info = NodeInfo(
            name=n.name,
            labels=dict(n.labels),
            allocatable={r: format_units(r, v) for r, v in n.allocatable.items()},
            ready=n.ready,
            unschedulable=n.unschedulable,
            taints=n.taints,
        )
        facts = node_facts(topology, scope, info, devices.get(n.name, ()))
        if facts is not None:
            out.append(facts)
    return out


def details_from_nodes(
    nodes: Iterable[Node], resources: Mapping[str, Sequence[str]], *, usage: bool = True
) -> dict[str, NodeDetail]:
    """Labels, scheduling taints and free accelerators of each node named in ``resources``
    (node -> its accelerator resources). Without ``usage`` (no pods read), free is unknown;
    so it is on a node with DRA devices (a resource that is no allocatable resource of the
    node: what DRA claims hold is not read)."""
    out = {}
    for n in nodes:
        if n.name not in resources:
            continue
        known = usage and all(r in n.allocatable for r in resources[n.name])
        free = n.free() if known else None
        taints = tuple(str(t) for t in n.taints)
        if not n.ready:
            taints += ("(node not Ready)",)
        if n.unschedulable:
            taints += ("(cordoned)",)
        out[n.name] = NodeDetail(
            labels=dict(n.labels),
            taints=taints,
            free=None if free is None else {r: max(0, free.get(r, 0)) for r in resources[n.name]},
        )
    return out


@dataclass
class _Domains:
    """The domains of the map as they are met, a node at a time (index = order of first
    sight); a domain is its whole path of values, widest first."""

    index: dict[tuple[str, ...], int] = field(default_factory=dict)
    paths: list[tuple[str, ...]] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)
    frees: list[int | None] = field(default_factory=list)  # None once any node's is unknown

    def add(self, path: tuple[str, ...], total: int, free: int | None) -> int:
        """Count a node in every domain along ``path``; the narrowest domain's index."""
        index, nodes, totals, frees = self.index, self.nodes, self.totals, self.frees
        parent = -1
        for depth in range(1, len(path) + 1):
            prefix = path[:depth]
            i = index.get(prefix)
            if i is None:
                i = index[prefix] = len(self.paths)
                self.paths.append(prefix)
                self.parents.append(parent)
                nodes.append(0)
                totals.append(0)
                frees.append(0)
            nodes[i] += 1
            totals[i] += total
            f_i = frees[i]
            frees[i] = None if f_i is None or free is None else f_i + free
            parent = i
        return parent

    def in_order(self) -> tuple[tuple[MapDomain, ...], dict[int, int]]:
        """The domains sorted by path, numbers by value (lb-2 before lb-10), so that
        siblings are drawn in a stable, readable order; and each old index's new one."""
        paths, parents = self.paths, self.parents
        order = sorted(range(len(paths)), key=lambda i: tuple(map(natural_key, paths[i])))
        new = {old: k for k, old in enumerate(order)}
        domains = tuple(
            MapDomain(
                path=paths[i],
                level=len(paths[i]) - 1,
                parent=new[parents[i]] if parents[i] >= 0 else -1,
                nodes=self.nodes[i],
                total=self.totals[i],
                free=self.frees[i],
            )
            for i in order
        )
        return domains, new


def build_map(
    topology: Topology,
    facts: Sequence[NodeFacts],
    *,
    profile: str,
    scope: str,
    origin: str,
    details: Mapping[str, NodeDetail] | None = None,
    job: JobOverlay | None = None,
    title: str = "",
    refresh: int = 0,
    report: AuditReport | None = None,
) -> TopologyMap:
    """The map of the nodes in ``facts``; ``report`` may be given when already built from
    the same facts (the exporter has one)."""
    report = report or build_report(profile, scope, topology, facts)
    state_of = {n: s for s, names in report.states.items() for n in names}
    details = details or {}
    every_level = tuple(lv.name for lv in topology.levels)
    domains = _Domains()
    add_domain = domains.add
    resources: set[str] = set()
    out_nodes: list[MapNode] = []
    for f in sorted(facts, key=lambda f: natural_key(f.name)):
        state = state_of[f.name]
        values = f.position.values
        total = sum(n for _, n in f.accelerators)
        resources.update(r for r, _ in f.accelerators)
        detail = details.get(f.name, NodeDetail())
        free = None if detail.free is None else sum(detail.free.values())
        domain = -1
        if all(v is not None for v in values):  # then the values are the domain's path
            domain = add_domain(cast("tuple[str, ...]", values), total, free)
        out_nodes.append(
            MapNode(
                name=f.name,
                state=state,
                domain=domain,
                values=values,
                total=total,
                free=free,
                missing=every_level if state is _UNLABELED else report.missing.get(f.name, ()),
                labels=detail.labels or _position_labels(topology, f),
                taints=detail.taints,
            )
        )
    drawn, new = domains.in_order()
    remapped = tuple(n if n.domain < 0 else replace(n, domain=new[n.domain]) for n in out_nodes)
    return TopologyMap(
        title=title or f"Topology of {profile}",
        origin=origin,
        profile=profile,
        scope=scope,
        levels=every_level,
        resources=tuple(sorted(resources)),
        counts=report.counts(),
        domains=drawn,
        nodes=remapped,
        job=job,
        refresh=refresh,
    )


def _position_labels(topology: Topology, f: NodeFacts) -> dict[str, str]:
    """Without the node's labels (a CSV, the exporter's facts): its level labels."""
    out = {k: v for k, v in zip(topology.keys, f.position.values, strict=True) if v is not None}
    out.update(f.position.extra)
    return out
