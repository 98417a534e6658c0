"""The search for a failed node's replacement, for one PodSet (``findReplacementAssignment``).

Kueue takes the failed node out of the PodSet's topology assignment; the pods it held are
the count to place. An assignment naming another node the flavor's topology no longer has
is stale, and Kueue gives up. Otherwise it runs its ordinary placement for those pods with
the PodSet's own request, confined to the domain :func:`labeler.core.hotswap.
replacement_domain` names (the nodes outside count as excluded, "topologyDomain"); when the
lost pods are not whole slices, the slices are re-cut to the innermost layer they still
divide. What it finds is merged into the assignment, sorted by domain values.

Capacity is what the flavor's nodes have free after every admitted Workload, the failing one
included (its pods still hold their nodes), and after the replacements already made for
earlier PodSets in the same round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from labeler.core.hotswap import Path, replacement_domain
from labeler.sim.kueue.assign import Mode, Outcome
from labeler.sim.kueue.gates import DEFAULT_GATES, Gates
from labeler.sim.kueue.place import simulate
from labeler.sim.kueue.tree import Capacity, Domain, ExclusionStats, Tree, leaf_capacity
from labeler.sim.kueue.workload import PodSet, to_job

Assigned = tuple[tuple[str, ...], int]  # (values as the topology assignment writes them, pods)


@dataclass(frozen=True)
class Replacement:
    """One PodSet's search for one failed node's pods."""

    podset: str
    failed: str
    pods: int  # the PodSet's pods on the failed node
    domain: Path | None  # where Kueue searched (None: the whole flavor)
    outcome: Outcome  # its placement of those pods (assignment = the replacement)
    candidates: tuple[tuple[str, int], ...]  # (leaf, free pod slots) where it searched
    assignment: tuple[Assigned, ...] = ()  # the PodSet's new assignment ((): none)
    message: str = ""  # Kueue's reason when there is no replacement

    @property
    def replaced(self) -> bool:
        return not self.message


def leaf_index(tree: Tree) -> dict[str, Domain]:
    """Leaf ID → leaf: the hostname when leaves are nodes, else the joined values."""
    return {leaf.id: leaf for leaf in tree.leaves}


def leaf_id(tree: Tree, values: Sequence[str]) -> str:
    return values[-1] if tree.hostname_leaves else ",".join(values)


def without(assignment: Sequence[Assigned], failed: str) -> tuple[list[Assigned], int]:
    """``deleteDomain``: the assignment without ``failed``'s entry, and the pods it held
    (a node is matched by the last value, as Kueue matches it to the node's name)."""
    kept = [a for a in assignment if a[0][-1] != failed]
    lost = sum(n for values, n in assignment if values[-1] == failed)
    return kept, lost


def confined(
    tree: Tree,
    podset: PodSet,
    used: Mapping[str, Mapping[str, int]],
    domain: Path | None,
) -> Capacity:
    """Free pod slots per leaf with only ``domain``'s leaves counted (``fillLeafCounts``
    with a required replacement domain): a feasible node outside it is "topologyDomain",
    and resources are judged on the nodes inside only."""
    everywhere = leaf_capacity(tree, podset.shape, used=used)
    if domain is None:
        return everywhere
    n = len(domain)
    inside = [leaf for leaf in tree.leaves if leaf.values[:n] == domain]
    part = Tree(tree.topology_name, tree.keys, [], inside)
    sub = leaf_capacity(part, podset.shape, used=used)
    by_leaf = dict(zip((id(leaf) for leaf in inside), sub.pods, strict=True))
    pods = tuple(by_leaf.get(id(leaf), 0) for leaf in tree.leaves)
    all_stats, in_stats = everywhere.stats, sub.stats
    infeasible_outside = _infeasible(all_stats) - _infeasible(in_stats)
    stats = replace(
        all_stats,
        resources=in_stats.resources,
        topology_domain=len(tree.leaves) - len(inside) - infeasible_outside,
    )
    return Capacity(pods=pods, stats=stats)


def _infeasible(stats: ExclusionStats) -> int:
    return stats.node_selector + stats.affinity + sum(stats.taints.values())


def recut_slices(podset: PodSet, lost: int, domain: Path | None) -> PodSet:
    """The PodSet as Kueue searches for ``lost`` pods: that count, and when they are not
    whole slices of a confined search, one layer: the innermost whose size they divide."""
    request = podset.request
    slices = request.slices
    if slices and domain is not None and lost % slices[0][1]:
        fitting = [(key, size) for key, size in reversed(slices) if lost % size == 0]
        request = replace(request, slices=tuple(fitting[:1]))
    return replace(podset, count=lost, request=request)


def merge(tree: Tree, a: Sequence[Assigned], b: Sequence[Assigned]) -> tuple[Assigned, ...]:
    """``mergeTopologyAssignments``: both, sorted by the leaves' full values, the counts of
    one leaf added up."""
    index = leaf_index(tree)

    def full(entry: Assigned) -> tuple[str, ...]:
        leaf = index.get(leaf_id(tree, entry[0]))
        return leaf.values if leaf is not None else entry[0]

    out: list[Assigned] = []
    for values, count in sorted([*a, *b], key=full):
        if out and out[-1][0] == values:
            out[-1] = (values, out[-1][1] + count)
        else:
            out.append((values, count))
    return tuple(out)


def search(
    tree: Tree,
    podset: PodSet,
    assignment: Sequence[Assigned],
    failed: str,
    used: Mapping[str, Mapping[str, int]],
    gates: Gates = DEFAULT_GATES,
) -> Replacement:
    """Kueue's replacement search for ``failed``'s pods of ``podset``."""
    kept, lost = without(assignment, failed)
    index = leaf_index(tree)
    for values, _ in kept:
        if leaf_id(tree, values) not in index:
            msg = (
                "Cannot replace the node, because the existing topologyAssignment is invalid, "
                f"as it contains the stale domain {values[0]}"
            )
            return _none(podset, failed, lost, None, msg)
    paths = [(index[leaf_id(tree, v)].values, n) for v, n in kept]
    req = podset.request
    keys = list(tree.keys)
    layers = [(keys.index(k), size) for k, size in req.slices if k in keys]
    required = keys.index(req.level) if req.mode == Mode.REQUIRED and req.level in keys else None
    domain = replacement_domain(required, layers, paths, lost)
    job = to_job(recut_slices(podset, lost, domain), tree.keys)
    if isinstance(job, str):
        return _none(podset, failed, lost, domain, job)
    capacity = confined(tree, podset, used, domain)
    outcome = simulate(tree, capacity, job, gates)
    candidates = _candidates(tree, capacity, domain)
    if not outcome.fits:
        return _none(podset, failed, lost, domain, outcome.message, outcome, candidates)
    if not outcome.assignment:
        msg = f"cannot find replacement assignment for unhealthy node: {failed}"
        return _none(podset, failed, lost, domain, msg, outcome, candidates)
    found = [(_written(tree, a.values), a.count) for a in outcome.assignment]
    return Replacement(
        podset.name, failed, lost, domain, outcome, candidates, merge(tree, kept, found)
    )


def _written(tree: Tree, values: tuple[str, ...]) -> tuple[str, ...]:
    # Kueue writes only the hostname when the lowest level is the hostname
    return values[-1:] if tree.hostname_leaves else values


def _candidates(tree: Tree, capacity: Capacity, domain: Path | None) -> tuple[tuple[str, int], ...]:
    """The leaves where Kueue searched with room for a pod, most room first (its BestFit
    order: the tightest one that holds the pods is then taken)."""
    n = len(domain or ())
    found = [
        (leaf.id, pods)
        for leaf, pods in zip(tree.leaves, capacity.pods, strict=True)
        if pods > 0 and (domain is None or leaf.values[:n] == domain)
    ]
    return tuple(sorted(found, key=lambda c: (-c[1], c[0])))


def _none(
    podset: PodSet,
    failed: str,
    lost: int,
    domain: Path | None,
    message: str,
    outcome: Outcome | None = None,
    candidates: tuple[tuple[str, int], ...] = (),
) -> Replacement:
    return Replacement(
        podset.name,
        failed,
        lost,
        domain,
        outcome or Outcome(fits=False, message=message),
        candidates,
        (),
        message,
    )
