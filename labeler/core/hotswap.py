"""Hot swap: where Kueue looks for a node to replace a failed one, and what audit shows.

Kueue (``TASFlavorSnapshot.requiredReplacementDomain``) confines the search for a failed
node's replacement to one domain of the flavor's topology, or to none:

- a PodSet with slices whose lost pods are not whole slices: the domain at the innermost
  slice layer the loss breaks whose remaining pods plus the lost ones make whole slices
  again (``findIncompleteSliceDomain``); none when no such domain exists;
- else a required request: the domain at the required level holding the first pods left
  in the assignment;
- else (preferred, unconstrained, whole slices lost) no domain: the whole flavor.

``replacement_domain`` is that rule, pure: ``advise --failed-node`` (``labeler.sim.kueue.replace``)
and the hot-swap view (``labeler.sim.kueue.hotswap``, shown by ``audit``) both use it. The view's
records are plain data here so that ``audit``, its metrics and the map read them without
knowing the simulator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

Path = tuple[str, ...]


class SwapState(StrEnum):
    """Could Kueue replace each node of an admitted Workload if it failed now."""

    REPLACEABLE = "replaceable"
    NOT_REPLACEABLE = "not_replaceable"
    EXEMPT = "exempt"  # Kueue keeps the assignment as it is: no replacement, no eviction


def replacement_domain(
    required_level: int | None,
    layers: Sequence[tuple[int, int]],
    remaining: Sequence[tuple[Path | None, int]],
    lost: int,
) -> Path | None:
    """The domain (its values, widest first) Kueue searches for ``lost`` pods, or None for
    the whole flavor.

    ``required_level``: the requested level's index for a required request, else None.
    ``layers``: the slice layers as (level index, size), outermost first. ``remaining``:
    what stays of the PodSet's assignment, each entry's leaf path (None when the leaf is no
    longer in the flavor's topology) and pods, in the assignment's order.
    """
    if not remaining:
        return None  # the failed node held all of it: nothing to stay near
    if layers and lost % layers[0][1]:
        broken = layers[0]
        if len(layers) > 1:
            broken = next(((lv, size) for lv, size in reversed(layers) if lost % size), broken)
        return incomplete_slice_domain(remaining, lost, *broken)
    if required_level is None:
        return None
    first = remaining[0][0]
    return None if first is None else first[: required_level + 1]


def incomplete_slice_domain(
    remaining: Sequence[tuple[Path | None, int]], lost: int, level: int, size: int
) -> Path | None:
    """The domain at ``level`` whose pods plus ``lost`` make whole slices of ``size``.

    Kueue walks a Go map here, so when several domains qualify its choice is arbitrary;
    this takes the first by values, which is one of Kueue's possible answers.
    """
    pods: dict[Path, int] = {}
    for path, count in remaining:
        if path is not None:
            key = path[: level + 1]
            pods[key] = pods.get(key, 0) + count
    return next((key for key in sorted(pods) if (pods[key] + lost) % size == 0), None)


# --- the hot-swap view (audit) -------------------------------------------------------------


@dataclass(frozen=True)
class NodeSpare:
    """One node of a Workload's assignment: could Kueue replace it if it failed now?"""

    node: str
    podset: str
    pods: int  # the PodSet's pods on it
    domain: Path  # where Kueue would search (empty: the whole flavor)
    domain_level: str  # that domain's level key ("" for the whole flavor)
    spare: int  # pod slots for this PodSet in that domain on the other nodes
    replaceable: bool
    reason: str = ""  # Kueue's message when it is not


@dataclass(frozen=True)
class WorkloadSpare:
    """One admitted TAS Workload and its nodes' answers."""

    namespace: str
    name: str
    cluster_queue: str
    flavor: str
    state: SwapState
    nodes: tuple[NodeSpare, ...] = ()
    note: str = ""  # why exempt, or what else Kueue would do

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def at_risk(self) -> tuple[str, ...]:
        """The nodes whose failure alone would evict the Workload."""
        return tuple(dict.fromkeys(n.node for n in self.nodes if not n.replaceable))


@dataclass(frozen=True)
class HotSwapView:
    """Every admitted TAS Workload, judged; ``problems`` lists what could not be judged."""

    workloads: tuple[WorkloadSpare, ...] = ()
    problems: tuple[str, ...] = ()
    fail_fast: bool = True  # TASFailedNodeReplacementFailFast: no replacement evicts
    source: str = ""  # where the numbers come from, for people

    def by_cluster_queue(self) -> dict[str, dict[str, int]]:
        """ClusterQueue → state → Workloads (every state present, zero or not)."""
        out: dict[str, dict[str, int]] = {}
        for w in self.workloads:
            counts = out.setdefault(w.cluster_queue, dict.fromkeys(SwapState, 0))
            counts[w.state] += 1
        return dict(sorted(out.items()))

    @property
    def at_risk(self) -> tuple[WorkloadSpare, ...]:
        """The Workloads one node failure would evict (or strand, without fail-fast)."""
        return tuple(w for w in self.workloads if w.state == SwapState.NOT_REPLACEABLE)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "failFast": self.fail_fast,
            "byClusterQueue": self.by_cluster_queue(),
            "atRisk": [w.key for w in self.at_risk],
            "riskyNodes": {k: list(v) for k, v in self.risky_nodes().items()},
            "workloads": [
                {
                    "namespace": w.namespace,
                    "name": w.name,
                    "clusterQueue": w.cluster_queue,
                    "flavor": w.flavor,
                    "state": w.state.value,
                    "note": w.note,
                    "nodes": [
                        {
                            "node": n.node,
                            "podSet": n.podset,
                            "pods": n.pods,
                            "domain": list(n.domain),
                            "domainLevel": n.domain_level,
                            "spare": n.spare,
                            "replaceable": n.replaceable,
                            "reason": n.reason,
                        }
                        for n in w.nodes
                    ],
                }
                for w in self.workloads
            ],
            "problems": list(self.problems),
        }

    def risky_nodes(self) -> Mapping[str, tuple[str, ...]]:
        """Node → the at-risk Workloads that node's failure alone would evict."""
        out: dict[str, list[str]] = {}
        for w in self.at_risk:
            for node in w.at_risk:
                out.setdefault(node, []).append(w.key)
        return {k: tuple(v) for k, v in sorted(out.items())}
