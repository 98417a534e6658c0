"""One scheduling cycle for the advised gang: would Volcano bind it, where, and why not.

``run_cycle`` takes what the command read (the gang, the cluster, the configuration) and runs
what Volcano's session and actions do for that one job: open the session (the HyperNode
tree with its cluster top; ``highestTierName`` turned into a tier, soft mode into hard mode
bounded by the cluster top; the HyperNode the job's running pods already use), ``enqueue``
when the PodGroup is still Pending, then ``allocate``. Other PodGroups count only through
their pods on the nodes and their share of the queue; they are not placed first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from labeler.core.capacity import Node
from labeler.core.volcano import VERSION, TopologyMode
from labeler.sim.volcano import resources as R
from labeler.sim.volcano.allocate import Allocator
from labeler.sim.volcano.ascend import AFFINITY, NPU, POLICY, MultiLevel, plan
from labeler.sim.volcano.conf import SchedulerConf
from labeler.sim.volcano.cycle import Cycle
from labeler.sim.volcano.hypernodes import TOP, HyperNodeTree, build_tree
from labeler.sim.volcano.messages import READY, gang_message
from labeler.sim.volcano.model import (
    ALLOCATED_STATES,
    DEFAULT_QUEUE,
    PENDING,
    RELEASING,
    Gang,
    NetworkTopology,
    PodGroup,
    Queue,
    Task,
    group_of,
    task_from_pod,
)
from labeler.sim.volcano.queues import (
    JobUse,
    QueueAttr,
    build_attrs,
    enqueue_check,
    overcommit_view,
    proportion_deserved,
)
from labeler.sim.volcano.session import JobState, NodeState, releasing_by_node

SUBGROUPS_SINCE = (1, 14)


@dataclass(frozen=True)
class Cluster:
    """What the cluster (or snapshot) holds, as the command read it."""

    nodes: tuple[Node, ...]
    pods: tuple[Mapping[str, Any], ...] = ()
    hypernodes: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    queues: Mapping[str, Queue] = field(default_factory=dict)
    podgroups: tuple[PodGroup, ...] = ()
    hypernode_source: str = ""  # where generated HyperNodes came from; "" = read


@dataclass(frozen=True)
class Placement:
    pod: str  # namespace/name
    task: str
    node: str
    hypernode: str  # the node's lowest-tier HyperNode, "" when it is in none


@dataclass
class Verdict:
    """One simulated cycle."""

    binds: list[Placement]
    pipelined: list[Placement]
    ready: bool
    message: str  # the PodGroup condition Volcano writes
    why: list[str]  # what stopped it before placement, in Volcano's terms
    hypernode: str = ""  # where the gang's pods are (LCA), "" when spread over the cluster
    tier: int | None = None
    job: JobState | None = None
    notes: list[str] = field(default_factory=list)


def adjust(
    podgroup: PodGroup, tree: HyperNodeTree, version: tuple[int, int]
) -> tuple[PodGroup, list[str]]:
    """``adjustNetworkTopologySpec``: names to tiers, soft to hard (with the notes to show)."""
    notes: list[str] = []
    pg = podgroup
    if version < SUBGROUPS_SINCE and pg.subgroups:
        notes.append(
            f"Volcano {version[0]}.{version[1]} has no subGroupPolicy (1.14+): the API server "
            "drops it, so the sub-groups are not simulated"
        )
        pg = replace(pg, subgroups=())
    top = tree.top_tier()

    def fix(nt: NetworkTopology | None, bound: int, what: str) -> NetworkTopology | None:
        if nt is None:
            return None
        if nt.highest_tier is None and nt.highest_tier_name:
            if version < SUBGROUPS_SINCE:
                notes.append(f"{what}: highestTierName needs Volcano 1.14+; it is ignored")
            elif nt.highest_tier_name in tree.tier_names:
                nt = replace(nt, highest_tier=tree.tier_names[nt.highest_tier_name])
        if nt.mode is TopologyMode.SOFT:
            nt = NetworkTopology(TopologyMode.HARD, bound, "")
        return nt

    job_nt = fix(pg.network_topology, top, "the job")
    bound = job_nt.highest_tier if job_nt and job_nt.highest_tier is not None else top
    subgroups = tuple(
        replace(p, network_topology=fix(p.network_topology, bound, f"sub-group {p.name}"))
        for p in pg.subgroups
    )
    return replace(pg, network_topology=job_nt, subgroups=subgroups), notes


def recover_hypernodes(job: JobState, tree: HyperNodeTree) -> None:
    """``recoverAllocatedHyperNode``: the lowest-tier HyperNode holding each sub-job's
    running pods, and their common ancestor for the job."""
    if job.network_topology is None and not any(sj.network_topology for sj in job.subjobs.values()):
        return
    for sj in job.subjobs.values():
        if sj.network_topology is None:
            continue
        holding: set[str] | None = None
        for t in sj.tasks:
            if t.status not in ALLOCATED_STATES or not t.node:
                continue
            here = {h for h in (holding or tree.hypernodes) if t.node in tree[h].nodes}
            holding = here
            if not here:
                break
        if holding:
            sj.allocated_hypernode = min(holding, key=lambda h: (tree[h].tier, h))
    lca = ""
    for sj in job.subjobs.values():
        if sj.allocated_hypernode:
            lca = tree.lca(lca, sj.allocated_hypernode)
    job.allocated_hypernode = lca


def _uses(cluster: Cluster, gang: Gang, job: JobState) -> list[JobUse]:
    """What each PodGroup (the advised one included) holds and asks of its queue."""
    by_group: dict[tuple[str, str], list[Task]] = {}
    for i, pod in enumerate(cluster.pods):
        ref = group_of(pod)
        if ref is not None:
            by_group.setdefault(ref, []).append(task_from_pod(pod, f"pods[{i}]"))
    out = []
    me = (gang.podgroup.namespace, gang.podgroup.name)
    for pg in cluster.podgroups:
        if (pg.namespace, pg.name) != me:
            out.append(_use(pg, by_group.get((pg.namespace, pg.name), []), pg.phase))
    out.append(_use(gang.podgroup, [t.task for t in job.tasks], gang.podgroup.phase))
    return out


def _use(pg: PodGroup, tasks: Sequence[Task], phase: str) -> JobUse:
    held = [t for t in tasks if t.status in ALLOCATED_STATES]
    return JobUse(
        queue=pg.queue,
        phase=phase,
        min_resources=pg.min_resources,
        min_member=pg.min_member,
        allocated=R.total(t.requests for t in held),
        pending=R.total(t.requests for t in tasks if t.status == PENDING),
        allocated_count=len(held),
    )


def queue_of(cluster: Cluster, pg: PodGroup) -> tuple[Queue | None, list[str]]:
    q = cluster.queues.get(pg.queue)
    if q is not None:
        return q, []
    if pg.queue == DEFAULT_QUEUE:  # Volcano's controllers create it
        return Queue(DEFAULT_QUEUE), [
            "the default queue is not in the input: assumed open, unlimited"
        ]
    return None, [f"queue {pg.queue} does not exist: Volcano skips the job until it does"]


def _queue_attr(
    conf: SchedulerConf, cluster: Cluster, gang: Gang, job: JobState, queue: Queue
) -> tuple[QueueAttr, list[JobUse], dict[str, int]]:
    queues = dict(cluster.queues)
    queues.setdefault(queue.name, queue)
    uses = [u for u in _uses(cluster, gang, job) if u.queue in queues]
    total = R.total(n.allocatable for n in cluster.nodes)
    attrs = build_attrs(queues, uses, total)
    if conf.plugin("proportion") is not None:
        proportion_deserved(attrs, total)
    return attrs[queue.name], uses, total


def enqueue_reason(
    conf: SchedulerConf, cluster: Cluster, attr: QueueAttr, uses: Sequence[JobUse], pg: PodGroup
) -> str:
    """Why the enqueue action leaves the PodGroup Pending ("" when it enqueues)."""
    if "enqueue" not in conf.actions or pg.phase not in ("", "Pending"):
        return ""
    if pg.min_resources is None:
        return ""
    order = []
    for tier in conf.tiers:
        names = [
            p.name
            for p in tier
            if p.on("jobEnqueued") and p.name in ("proportion", "capacity", "overcommit")
        ]
        order.append(names)
    oc = conf.plugin("overcommit")
    view = None
    if oc is not None:
        factor = oc.arguments.get("overcommit-factor", 1.2)
        factor = float(factor) if isinstance(factor, int | float) and factor >= 1.0 else 1.2
        total = R.total(n.allocatable for n in cluster.nodes)
        used = R.total(n.used for n in cluster.nodes)
        others = [u for u in uses if u is not uses[-1]]
        view = overcommit_view(total, used, others, factor)
    for names in order:
        verdict = enqueue_check(names, attr, pg.min_resources, view)
        if not verdict.ok:
            return verdict.reason
        if names:
            return ""
    return ""


def releasing_on(cluster: Cluster) -> dict[str, dict[str, int]]:
    """The requests of terminating pods per node: they come back when the pods are gone."""
    terminating = []
    for i, p in enumerate(cluster.pods):
        meta, spec = p.get("metadata") or {}, p.get("spec") or {}
        if meta.get("deletionTimestamp") and spec.get("nodeName"):
            t = task_from_pod(p, f"pods[{i}]")
            if t.status == RELEASING:
                terminating.append((t.node, t.requests))
    return releasing_by_node(terminating)


def node_states(
    nodes: Sequence[Node], releasing: Mapping[str, Mapping[str, int]], *, empty: bool
) -> dict[str, NodeState]:
    """The nodes now (terminating pods' requests releasing) or with only resident pods.
    Fresh each call: a cycle changes the states it runs on."""
    return {n.name: NodeState(n, releasing.get(n.name, {}), empty) for n in nodes}


def placement_of(tree: HyperNodeTree, pod: str, task: str, node: str) -> Placement:
    return Placement(pod, task, node, tree.leaf_of.get(node, ""))


def multilevel_of(conf: SchedulerConf, gang: Gang) -> MultiLevel | str | None:
    """ascend-for-volcano's rules for the gang (see ``ascend.plan``)."""
    notes = dict(gang.podgroup.annotations)
    for t in gang.tasks:  # the plugin also reads these keys from the pods
        notes.update({k: v for k, v in t.annotations.items() if k in (POLICY, AFFINITY)})
    npu = sum(1 for t in gang.tasks if t.requests.get(NPU, 0) > 0)
    return plan([p.name for p in conf.plugins()], conf.configurations, notes, npu)


@dataclass
class CycleResult:
    """One cycle's verdict and what the session decided on the way, which the answer's
    other parts (the per-tier table, the traps) read instead of deciding it again."""

    verdict: Verdict
    podgroup: PodGroup  # as the session sees it (tier names resolved, soft made hard)
    queue: Queue | None  # the PodGroup's queue; None when it does not exist
    multilevel: MultiLevel | str | None  # ascend-for-volcano's rules, or why it refuses
    nodes: tuple[Node, ...]
    releasing: dict[str, dict[str, int]]  # terminating pods' requests per node

    def node_states(self, *, empty: bool) -> dict[str, NodeState]:
        """The nodes as the cycle started (or with only resident pods), fresh to run on."""
        return node_states(self.nodes, self.releasing, empty=empty)


def _blocked(
    conf: SchedulerConf,
    cluster: Cluster,
    gang: Gang,
    job: JobState,
    queue: Queue | None,
    missing: list[str],
) -> tuple[list[str], QueueAttr | None]:
    """What keeps the job from allocate at all, in Volcano's terms ([] when nothing), and
    the queue's share the cycle tracks (None without proportion or capacity)."""
    pg = gang.podgroup
    why: list[str] = []
    tracked = None
    if queue is None:
        return missing, None
    if any(conf.plugin(p) for p in ("proportion", "capacity", "overcommit")):
        attr, uses, _ = _queue_attr(conf, cluster, gang, job, queue)
        tracked = attr if any(conf.plugin(p) for p in ("proportion", "capacity")) else None
        reason = enqueue_reason(conf, cluster, attr, uses, pg)
        if reason:
            why.append(f"the PodGroup stays Pending, not enqueued: {reason}")
    if "allocate" not in conf.actions:
        why.append("the scheduler configuration has no allocate action: nothing is ever bound")
    return why, tracked


def run_cycle(
    gang: Gang,
    cluster: Cluster,
    conf: SchedulerConf,
    tree: HyperNodeTree,
    version: tuple[int, int] = VERSION,
) -> CycleResult:
    """The gang through enqueue and allocate, once, on the cluster as it is now."""
    podgroup, notes = adjust(gang.podgroup, tree, version)
    gang = replace(gang, podgroup=podgroup)
    job = JobState(gang.podgroup, gang.tasks)
    recover_hypernodes(job, tree)
    queue, missing = queue_of(cluster, podgroup)
    why, tracked = _blocked(conf, cluster, gang, job, queue, missing)
    releasing = releasing_on(cluster)
    cy = Cycle(conf, tree, node_states(cluster.nodes, releasing, empty=False), tracked)
    invalid = cy.job_invalid(job)
    if invalid:
        why.append(f"gang: {invalid}")
    ml = multilevel_of(conf, gang)
    if isinstance(ml, str):
        why.append(ml)
    alloc = Allocator(cy, job, multilevel=None if isinstance(ml, str) else ml)
    if not why:
        alloc.run()
    why += alloc.notes
    binds = [
        placement_of(tree, o.task.task.ref, o.task.task.role, o.node.name) for o in alloc.committed
    ]
    waiting = [
        placement_of(tree, o.task.task.ref, o.task.task.role, o.node.name) for o in alloc.waiting
    ]
    ready = cy.job_ready(job) if cy.conf.plugin("gang") else bool(binds)
    held = [t.node for t in job.tasks if t.status in ALLOCATED_STATES | {"Binding"} and t.node]
    where = ""
    for node in held:
        where = tree.lca(where, tree.leaf_of.get(node, TOP))
    verdict = Verdict(
        binds=binds,
        pipelined=waiting,
        ready=ready,
        message=READY if job.is_ready() else gang_message(job),
        why=why,
        hypernode="" if where in ("", TOP) else where,
        tier=None if where in ("", TOP) else tree[where].tier,
        job=job,
        notes=notes,
    )
    return CycleResult(verdict, podgroup, queue, ml, cluster.nodes, releasing)


def cluster_tree(cluster: Cluster) -> HyperNodeTree:
    return build_tree(cluster.hypernodes, cluster.nodes)
