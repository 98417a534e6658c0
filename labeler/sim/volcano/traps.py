"""The traps, named plainly: what makes a gang never fit, or fit other than its author meant.

Each follows from the rules the simulation applies, so the answer says why a job pends (or
runs unbounded) without anyone reading scheduler logs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from labeler.core.capacity import Node
from labeler.core.volcano import TopologyMode
from labeler.sim.volcano import resources as R
from labeler.sim.volcano.conf import SchedulerConf
from labeler.sim.volcano.hypernodes import HyperNodeTree
from labeler.sim.volcano.model import (
    PENDING,
    Gang,
    NetworkTopology,
    PodGroup,
    Queue,
    Task,
)
from labeler.sim.volcano.predicates import StaticFilter
from labeler.sim.volcano.queues import as_units, real_capability
from labeler.sim.volcano.session import NodeState
from labeler.sim.volcano.tiers import CopyCounter

TIER_NAMES_SINCE = (1, 14)


def configuration_traps(conf: SchedulerConf, original: PodGroup) -> list[str]:
    out = []
    wants = original.network_topology is not None or any(
        p.network_topology for p in original.subgroups
    )
    if wants and not conf.enabled("network-topology-aware", "hyperNodeGradient"):
        out.append(
            "the scheduler configuration does not enable the network-topology-aware plugin: "
            "the networkTopology is not enforced and the pods may land anywhere in the "
            f"cluster ({conf.source})"
        )
    if conf.plugin("gang") is None:
        out.append("the gang plugin is not enabled: pods are bound one by one, not all or none")
    if conf.plugin("predicates") is None:
        out.append(
            "the predicates plugin is not enabled: nodeSelector, node affinity and taints "
            "are not checked"
        )
    return out


def _hard(nt: NetworkTopology | None) -> bool:
    return nt is not None and nt.mode is TopologyMode.HARD


def tier_traps(
    tree: HyperNodeTree, pg: PodGroup, original: PodGroup, version: tuple[int, int]
) -> list[str]:
    out = []
    before, nt = original.network_topology, pg.network_topology
    name = before.highest_tier_name if before is not None else ""
    unknown = name and name not in tree.tier_names and version >= TIER_NAMES_SINCE
    if _hard(before) and unknown:
        known = ", ".join(f"{k} (tier {v})" for k, v in sorted(tree.tier_names.items()))
        out.append(
            f"highestTierName {name!r} is the tierName of no HyperNode (known: "
            f"{known or 'none'}): Volcano drops the bound and places the job anywhere"
        )
    tier = nt.highest_tier if nt is not None else None
    if _hard(before) and tier is not None and tree.real and tier >= tree.top_tier():
        out.append(
            f"highestTierAllowed {tier} reaches the cluster-top tier ({tree.top_tier()}, above "
            "every HyperNode): the job may spread over the whole cluster, nodes outside every "
            "HyperNode included"
        )
    return out


def outside_traps(
    tree: HyperNodeTree,
    pg: PodGroup,
    tasks: Sequence[Task],
    nodes: Sequence[Node],
    static: StaticFilter,
) -> list[str]:
    """A task whose nodes all lie outside the HyperNodes its hard bound allows."""
    nt = pg.network_topology
    if nt is None or nt.highest_tier is None or nt.highest_tier >= tree.top_tier():
        return []
    allowed = [h for h in tree.real if h.tier <= nt.highest_tier]
    inside: set[str] = set().union(*(h.nodes for h in allowed))
    roles: dict[str, set[str]] = {}
    for t in tasks:
        if t.status == PENDING and t.role not in roles:
            roles[t.role] = {n.name for n in nodes if static.reason(t, n) is None}
    out = []
    for role, fit in roles.items():
        who = f"task {role or '(no task-spec)'}"
        if not fit:
            out.append(f"{who} matches no node at all (nodeSelector, node affinity, taints)")
        elif not fit & inside:
            out.append(
                f"{who} can run only on nodes outside every HyperNode of tier ≤ "
                f"{nt.highest_tier} ({len(fit)} node(s) match its nodeSelector, affinity and "
                "tolerations): in hard mode it can never join the others"
            )
    shared = any(all(fit & h.nodes for fit in roles.values()) for h in allowed)
    if not out and len(roles) > 1 and allowed and not shared:
        out.append(
            f"no HyperNode of tier ≤ {nt.highest_tier} has nodes for every task "
            f"({', '.join(sorted(r or '-' for r in roles))}): hard mode keeps them apart"
        )
    return out


def queue_traps(
    queue: Queue | None, pg: PodGroup, queues: Mapping[str, Queue], nodes: Sequence[Node]
) -> list[str]:
    """A queue that can never take the PodGroup's minResources, or is not open."""
    if queue is None:
        return []
    out = []
    if queue.state != "Open":
        out.append(f"queue {queue.name} is {queue.state}: it takes no new work")
    if pg.min_resources is None:
        return out
    everyone = {**queues, queue.name: queue}
    real = as_units(real_capability(queue, everyone, R.total(n.allocatable for n in nodes)))
    short = R.over_in_requested(pg.min_resources, real, pg.min_resources)
    if short:
        have = {k: real.get(k, 0) for k in short}
        need = {k: pg.min_resources.get(k, 0) for k in short}
        out.append(
            f"queue {queue.name} is too small for the PodGroup's minResources: it may use "
            f"{R.describe(have)}, the gang needs {R.describe(need)} to enqueue; it never will"
        )
    return out


def partition_traps(
    gang: Gang, conf: SchedulerConf, tree: HyperNodeTree, empty: dict[str, NodeState]
) -> list[str]:
    """A sub-group (partition) that no HyperNode of its tier can hold, even empty; a policy
    that holds no pod but asks for sub-groups."""
    out = []
    for policy in gang.podgroup.subgroups:
        if policy.min_subgroups > 0 and not any(
            policy.match_values(t.labels) is not None for t in gang.tasks
        ):
            why = (
                "it has no matchLabelKeys, and Volcano files a pod under a policy only by "
                "their values"
                if not policy.match_label_keys
                else "no pod has a value for each of its matchLabelKeys among those it selects"
            )
            out.append(
                f"sub-group policy {policy.name} holds no pod ({why}): its minSubGroups "
                f"{policy.min_subgroups} is never met, so the gang never fits"
            )
        nt = policy.network_topology
        if nt is None or nt.highest_tier is None or nt.highest_tier >= tree.top_tier():
            continue
        members = [t for t in gang.tasks if policy.match_values(t.labels) is not None]
        size = policy.size or 1
        if not members:
            continue
        group = replace(gang.podgroup, min_member=size, min_task_member={}, subgroups=())
        counter = CopyCounter(conf, tree, empty, Gang(group, tuple(members[:size])))
        _, best = counter.best([h.name for h in tree.real if h.tier <= nt.highest_tier], 1)
        if best == 0:
            out.append(
                f"sub-group {policy.name}: no HyperNode of tier ≤ {nt.highest_tier} can hold "
                f"one of its groups of {size} pod(s), even on an empty cluster"
            )
    return out


def task_traps(tasks: Sequence[Task], nodes: Sequence[Node]) -> list[str]:
    out = []
    foreign = sorted({t.scheduler for t in tasks if t.scheduler != "volcano"})
    if foreign:
        out.append(
            f"pods with schedulerName {', '.join(foreign)}: Volcano schedules only pods whose "
            "schedulerName is volcano"
        )
    empty = [t for t in tasks if t.status == PENDING and R.is_empty(t.requests)]
    if empty:
        out.append(
            f"{len(empty)} pod(s) ask for no resources: allocate skips them (backfill places "
            "them later)"
        )
    no_pods = [n.name for n in nodes if "pods" not in n.allocatable]
    if no_pods:
        out.append(
            f"{len(no_pods)} node(s) have no 'pods' allocatable: Volcano places no pod there"
        )
    return out
