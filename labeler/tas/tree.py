"""The tree of topology domains Kueue builds for one TAS ResourceFlavor, and free pod slots.

Which nodes enter (kueue ``tasNodesCache``): those matching every flavor node label,
carrying every level label (an empty value counts), Ready and not cordoned. Each node is a
leaf at the ``kubernetes.io/hostname`` level, named by that label's value, under one domain
per profile level; a domain is identified by its whole path of values (kueue
``TASFlavorSnapshot.initialize``), so block ``b1`` under two different network blocks is two
domains.

Nodes left out are reported with the reason, because "Kueue cannot see this node" is the
most common answer to "why is my job pending".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from labeler.model import HOSTNAME_LABEL, Topology
from labeler.quantity import PODS
from labeler.tas.cluster import Node, Toleration, first_untolerated


class Domain:
    """One topology domain. ``pods``/``slices`` are scratch state of one simulation run.

    Mutable on purpose: the algorithm rewrites counts level by level as Kueue's does
    (``domainState``); every run resets them first, so results never leak between runs.
    """

    __slots__ = ("children", "level", "node", "parent", "pods", "slices", "values")

    def __init__(self, values: tuple[str, ...], parent: Domain | None, node: Node | None) -> None:
        self.values = values
        self.level = len(values) - 1
        self.parent = parent
        self.children: list[Domain] = []
        self.node = node
        self.pods = 0
        self.slices = 0

    @property
    def value(self) -> str:
        return self.values[-1]

    @property
    def id(self) -> str:
        """Kueue's TopologyDomainID: the hostname for a node, else the values joined by ','."""
        return self.values[-1] if self.node is not None else ",".join(self.values)

    def __repr__(self) -> str:
        return f"Domain({'/'.join(self.values)}, pods={self.pods}, slices={self.slices})"


@dataclass(frozen=True)
class Outside:
    """A node Kueue leaves out of the flavor's tree, and why."""

    node: str
    reason: str


@dataclass
class Tree:
    """Domains per level (level 0 = widest, last = hostname) and the leaves (nodes)."""

    topology_name: str
    keys: tuple[str, ...]
    levels: list[list[Domain]]
    leaves: list[Domain]
    outside: list[Outside] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)  # every node given, in and outside

    @property
    def depth(self) -> int:
        return len(self.keys)


def outside_reason(node: Node, keys: Sequence[str], flavor_labels: Mapping[str, str]) -> str | None:
    """Why a node is not in the tree (None if it is)."""
    for k, v in flavor_labels.items():
        if node.labels.get(k) != v:
            return f"does not match flavor node label {k}={v}"
    missing = [k for k in keys if k not in node.labels]
    if missing:
        return f"missing level label {missing[0]}"
    if not node.ready:
        return "not Ready"
    if node.unschedulable:
        return "cordoned (spec.unschedulable)"
    return None


def build_tree(
    topology: Topology,
    nodes: Iterable[Node],
    *,
    flavor_labels: Mapping[str, str] | None = None,
    topology_name: str | None = None,
) -> Tree:
    """The flavor's domain tree; levels are the profile's plus ``kubernetes.io/hostname``."""
    keys = tuple(topology.kueue_levels())
    flavor = dict(flavor_labels or {})
    levels: list[list[Domain]] = [[] for _ in keys]
    index: dict[tuple[str, ...], Domain] = {}
    leaves: list[Domain] = []
    outside: list[Outside] = []
    given: list[Node] = []
    for node in nodes:
        given.append(node)
        reason = outside_reason(node, keys, flavor)
        if reason is None:
            path = tuple(node.labels[k] for k in keys)
            if path in index:
                reason = (
                    f"{HOSTNAME_LABEL}={path[-1]} is also the hostname of another node "
                    "in the same domain"
                )
        if reason is not None:
            outside.append(Outside(node.name, reason))
            continue
        parent: Domain | None = None
        for depth in range(1, len(keys)):
            prefix = path[:depth]
            dom = index.get(prefix)
            if dom is None:
                dom = Domain(prefix, parent, None)
                index[prefix] = dom
                levels[depth - 1].append(dom)
                if parent is not None:
                    parent.children.append(dom)
            parent = dom
        leaf = Domain(path, parent, node)
        index[path] = leaf
        levels[-1].append(leaf)
        if parent is not None:
            parent.children.append(leaf)
        leaves.append(leaf)
    return Tree(
        topology_name=topology_name or topology.name,
        keys=keys,
        levels=levels,
        leaves=leaves,
        outside=outside,
        nodes=given,
    )


@dataclass(frozen=True)
class ExclusionStats:
    """Why nodes in the tree could take none of the pods (kueue ``tasExclusionStats``)."""

    total_nodes: int = 0
    taints: Mapping[str, int] = field(default_factory=dict)
    node_selector: int = 0
    resources: Mapping[str, int] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        return bool(self.node_selector or self.taints or self.resources)

    def reasons(self) -> str:
        """Kueue's ``formatReasons``: every reason formatted, then sorted as strings."""
        parts = []
        if self.node_selector:
            parts.append(f"nodeSelector: {self.node_selector}")
        parts += [f'taint "{t}": {n}' for t, n in self.taints.items()]
        parts += [f'resource "{r}": {n}' for r, n in self.resources.items()]
        return ", ".join(sorted(parts))


@dataclass(frozen=True)
class PodShape:
    """What one pod needs and tolerates: requests in Kueue units, tolerations, nodeSelector."""

    requests: Mapping[str, int]
    tolerations: tuple[Toleration, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)

    def with_pod_slot(self) -> dict[str, int]:
        """The requests plus ``pods: 1`` (kueue adds ``OnePodRequest`` to every pod)."""
        out = dict(self.requests)
        out[PODS] = out.get(PODS, 0) + 1
        return out


def count_in(requests: Mapping[str, int], free: Mapping[str, int]) -> tuple[int, str]:
    """How many pods fit in ``free``, and the limiting resource.

    Kueue's ``CountInWithLimitingResource``: per requested resource floor(free / request),
    negatives clamped to 0, zero requests ignored; the minimum wins, ties go to the
    alphabetically first resource name.
    """
    best: int | None = None
    limiting = ""
    for res, req in requests.items():
        if req <= 0:
            continue
        n = max(0, free.get(res, 0) // req)
        if best is None or n < best or (n == best and res < limiting):
            best, limiting = n, res
    return (best if best is not None else 2**31 - 1), limiting


@dataclass(frozen=True)
class Capacity:
    """Free pod slots per leaf of a tree (aligned with ``tree.leaves``) and the exclusions."""

    pods: tuple[int, ...]
    stats: ExclusionStats
    blocked: tuple[str, ...] = ()  # per leaf: why it takes no pod ("" when it takes some)


def leaf_capacity(tree: Tree, shape: PodShape, *, empty: bool = False) -> Capacity:
    """Pods of ``shape`` each node can take now, or on an empty cluster (only DaemonSet and
    static pods left running, like Kueue's ``simulateEmpty`` which drops TAS usage only).

    Follows ``FindFeasibleNodes`` (untolerated NoSchedule/NoExecute taint first, then the
    nodeSelector) and ``fillLeafCounts`` (count by free capacity; a node that fits none
    records its limiting resource).
    """
    requests = shape.with_pod_slot()
    taints: dict[str, int] = {}
    resources: dict[str, int] = {}
    selector_misses = 0
    counts: list[int] = []
    blocked: list[str] = []
    for leaf in tree.leaves:
        node = leaf.node
        assert node is not None
        taint = first_untolerated(node.taints, shape.tolerations)
        if taint is not None:
            taints[str(taint)] = taints.get(str(taint), 0) + 1
            counts.append(0)
            blocked.append(f"taint {taint}")
            continue
        if any(node.labels.get(k) != v for k, v in shape.node_selector.items()):
            selector_misses += 1
            counts.append(0)
            blocked.append("nodeSelector")
            continue
        n, limiting = count_in(requests, node.free(empty=empty))
        if n == 0 and limiting:
            resources[limiting] = resources.get(limiting, 0) + 1
        counts.append(n)
        blocked.append(f"full ({limiting})" if n == 0 and limiting else "")
    stats = ExclusionStats(
        total_nodes=len(tree.leaves),
        taints=taints,
        node_selector=selector_misses,
        resources=resources,
    )
    return Capacity(pods=tuple(counts), stats=stats, blocked=tuple(blocked))
