"""The tree of topology domains Kueue builds for one TAS ResourceFlavor, and free pod slots.

Which nodes enter (kueue ``tasNodesCache``): those matching every flavor node label,
carrying every level label (an empty value counts), Ready and not cordoned. When the lowest
level is ``kubernetes.io/hostname`` each node is a leaf, named by that label's value;
otherwise (kueue ``topologyTree.addNode``) a leaf is one lowest-level domain and its capacity
is the sum of its nodes'. A domain is identified by its whole path of values (kueue
``TASFlavorSnapshot.initialize``), so block ``b1`` under two different network blocks is two
domains.

Nodes left out are reported with the reason, because "Kueue cannot see this node" is the
most common answer to "why is my job pending".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from labeler.core.capacity import Node
from labeler.core.model import HOSTNAME_LABEL, Topology
from labeler.sim.common.cluster import first_untolerated
from labeler.sim.common.shape import PodShape


class Domain:
    """One topology domain. ``pods``/``slices`` are scratch state of one simulation run.

    Mutable on purpose: the algorithm rewrites counts level by level as Kueue's does
    (``domainState``); every run resets them first, so results never leak between runs.
    """

    __slots__ = (
        "children",
        "leaders",
        "level",
        "members",
        "node",
        "parent",
        "pods",
        "pods_wl",
        "slices",
        "slices_wl",
        "values",
    )

    def __init__(self, values: tuple[str, ...], parent: Domain | None, node: Node | None) -> None:
        self.values = values
        self.level = len(values) - 1
        self.parent = parent
        self.children: list[Domain] = []
        self.node = node
        # the nodes of a leaf: one when the lowest level is the hostname, else all of the
        # lowest-level domain's nodes
        self.members: list[Node] = [node] if node is not None else []
        self.pods = 0
        self.slices = 0
        # kueue domainState.podCountWithLeader / sliceCountWithLeader / leaderCount: what
        # the domain holds when it also hosts the group's leader
        self.pods_wl = 0
        self.slices_wl = 0
        self.leaders = 0

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

    @property
    def hostname_leaves(self) -> bool:
        """Kueue ``isLowestLevelNode``: leaves are nodes, filtered by taints and selectors."""
        return self.keys[-1] == HOSTNAME_LABEL


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
    return build_tree_for_levels(
        topology.kueue_levels(),
        nodes,
        flavor_labels=flavor_labels,
        topology_name=topology_name or topology.name,
    )


def build_tree_for_levels(
    level_keys: Sequence[str],
    nodes: Iterable[Node],
    *,
    flavor_labels: Mapping[str, str] | None = None,
    topology_name: str,
) -> Tree:
    """The domain tree of a Kueue Topology's ``spec.levels`` (label keys, widest first)."""
    keys = tuple(level_keys)
    if not keys:
        raise ValueError("a topology needs at least one level")
    by_node = keys[-1] == HOSTNAME_LABEL
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
            if not by_node and path in index:
                index[path].members.append(node)
                continue
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
        leaf = Domain(path, parent, node if by_node else None)
        if not by_node:
            leaf.members.append(node)
        index[path] = leaf
        levels[-1].append(leaf)
        if parent is not None:
            parent.children.append(leaf)
        leaves.append(leaf)
    return Tree(topology_name, keys, levels, leaves, outside, nodes=given)


@dataclass(frozen=True)
class ExclusionStats:
    """Why nodes in the tree could take none of the pods (kueue ``tasExclusionStats``)."""

    total_nodes: int = 0
    taints: Mapping[str, int] = field(default_factory=dict)
    node_selector: int = 0
    resources: Mapping[str, int] = field(default_factory=dict)
    affinity: int = 0
    topology_domain: int = 0  # outside the domain a node replacement is confined to

    @property
    def any(self) -> bool:
        return bool(self.node_selector or self.affinity or self.taints or self.resources) or bool(
            self.topology_domain
        )

    def reasons(self) -> str:
        """Kueue's ``formatReasons``: every reason formatted, then sorted as strings."""
        parts = []
        if self.node_selector:
            parts.append(f"nodeSelector: {self.node_selector}")
        if self.affinity:
            parts.append(f"affinity: {self.affinity}")
        if self.topology_domain:
            parts.append(f"topologyDomain: {self.topology_domain}")
        parts += [f'taint "{t}": {n}' for t, n in self.taints.items()]
        parts += [f'resource "{r}": {n}' for r, n in self.resources.items()]
        return ", ".join(sorted(parts))


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
    """Free pod slots per leaf of a tree (aligned with ``tree.leaves``) and the exclusions.

    With a leader (a PodSet group), ``leaders`` is 1 where the leader fits and
    ``pods_with_leader`` what is left for workers once it is there.
    """

    pods: tuple[int, ...]
    stats: ExclusionStats
    blocked: tuple[str, ...] = ()  # per leaf: why it takes no pod ("" when it takes some)
    leaders: tuple[int, ...] = ()
    pods_with_leader: tuple[int, ...] = ()

    def leader_at(self, i: int) -> tuple[int, int]:
        """(leaders, pods with the leader) of leaf ``i``; without a leader, (0, pods)."""
        if not self.leaders:
            return 0, self.pods[i]
        return self.leaders[i], self.pods_with_leader[i]


def leaf_free(leaf: Domain, *, empty: bool) -> dict[str, int]:
    """A leaf's free resources: its node's, or the sum over a lowest-level domain's nodes."""
    if leaf.node is not None:
        return leaf.node.free(empty=empty)
    out: dict[str, int] = {}
    for node in leaf.members:
        for res, v in node.free(empty=empty).items():
            out[res] = out.get(res, 0) + v
    return out


def _feasible(node: Node, shape: PodShape) -> tuple[str, str]:
    """(kind, detail) of the first filter that rejects the node, ("", "") when none does.

    Order of ``FindFeasibleNodes``: untolerated taint, nodeSelector, required affinity.
    """
    taint = first_untolerated(node.taints, shape.tolerations)
    if taint is not None:
        return "taint", str(taint)
    if any(node.labels.get(k) != v for k, v in shape.node_selector.items()):
        return "nodeSelector", ""
    if shape.affinity is not None and not shape.affinity.matches(node.name, node.labels):
        return "affinity", ""
    return "", ""


@dataclass
class _Exclusions:
    """The leaves that take no pod, counted by reason as ``ExclusionStats`` reports them."""

    taints: dict[str, int] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)
    node_selector: int = 0
    affinity: int = 0

    def filtered(self, kind: str, detail: str) -> str:
        """Count a node that a filter of :func:`_feasible` rejects; the leaf's reason."""
        if kind == "taint":
            self.taints[detail] = self.taints.get(detail, 0) + 1
            return f"taint {detail}"
        if kind == "nodeSelector":
            self.node_selector += 1
            return "nodeSelector"
        self.affinity += 1
        return "node affinity"

    def stats(self, total_nodes: int) -> ExclusionStats:
        return ExclusionStats(
            total_nodes=total_nodes,
            taints=self.taints,
            node_selector=self.node_selector,
            resources=self.resources,
            affinity=self.affinity,
        )


def leaf_capacity(
    tree: Tree,
    shape: PodShape,
    *,
    empty: bool = False,
    used: Mapping[str, Mapping[str, int]] | None = None,
    leader: PodShape | None = None,
) -> Capacity:
    """Pods of ``shape`` each leaf can take now, or on an empty cluster (only DaemonSet and
    static pods left running, and no Workload's TAS usage, like Kueue's ``simulateEmpty``).

    ``used`` is more usage per leaf ID (``Domain.id``): capacity held by admitted Workloads
    and by the PodSets placed before this one; it applies in both cases for the PodSets of
    the same Workload, so the caller passes what fits the case.

    Follows ``FindFeasibleNodes`` (untolerated NoSchedule/NoExecute taint first, then the
    nodeSelector, then required node affinity; only when leaves are nodes) and
    ``fillLeafCounts`` (count by free capacity; a leaf that fits none records its limiting
    resource; the leader, if any, takes its share first).
    """
    requests = shape.with_pod_slot()
    leader_req = leader.with_pod_slot() if leader is not None else None
    excluded = _Exclusions()
    counts: list[int] = []
    blocked: list[str] = []
    leaders: list[int] = []
    with_leader: list[int] = []
    by_node = tree.hostname_leaves
    for leaf in tree.leaves:
        if by_node:
            assert leaf.node is not None
            kind, detail = _feasible(leaf.node, shape)
            if kind:
                blocked.append(excluded.filtered(kind, detail))
                counts.append(0)
                leaders.append(0)
                with_leader.append(0)
                continue
        free = leaf_free(leaf, empty=empty)
        extra = used.get(leaf.id) if used else None
        if extra:
            for res, v in extra.items():
                free[res] = free.get(res, 0) - v
        n, limiting = count_in(requests, free)
        if n == 0 and limiting:
            excluded.resources[limiting] = excluded.resources.get(limiting, 0) + 1
            blocked.append(f"full ({limiting})")
        else:
            blocked.append("")
        counts.append(n)
        if leader_req is not None:  # the leader takes its share first
            if count_in(leader_req, free)[0] > 0:
                leaders.append(1)
                for res, v in leader_req.items():
                    free[res] = free.get(res, 0) - v
            else:
                leaders.append(0)
            with_leader.append(count_in(requests, free)[0])
    return Capacity(
        pods=tuple(counts),
        stats=excluded.stats(len(tree.leaves)),
        blocked=tuple(blocked),
        leaders=tuple(leaders) if leader_req is not None else (),
        pods_with_leader=tuple(with_leader) if leader_req is not None else (),
    )
