"""A scheduling cycle: the plugins as the session calls them, over one set of nodes.

Each ``Session`` extension point Volcano calls walks the configured tiers in order and asks
the plugins whose switch is on (``framework/session_plugins.go``); the ones simulated here
are gang (job and sub-job readiness, validity, order), priority (task and sub-job order),
predicates, proportion/capacity (allocatable, overused) and network-topology-aware
(HyperNode gradients and scores). Without gang a job is "ready" after its first task;
without network-topology-aware every job is placed over the whole cluster, whatever its
``networkTopology`` says.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from labeler.sim.volcano import resources as R
from labeler.sim.volcano.conf import SchedulerConf
from labeler.sim.volcano.hypernodes import TOP, HyperNodeTree
from labeler.sim.volcano.predicates import StaticFilter, Switches
from labeler.sim.volcano.queues import QueueAttr, allocatable, overused
from labeler.sim.volcano.scoring import HyperNodeScores, Weights, weights_from
from labeler.sim.volcano.session import JobState, NodeState, SubJob, TaskState, pod_index


def _switches(conf: SchedulerConf) -> Switches:
    p = conf.plugin("predicates")
    if p is None or not p.on("predicate"):
        return Switches(enabled=False)

    def flag(key: str) -> bool:
        v = p.arguments.get(key, True)
        return v if isinstance(v, bool) else str(v).lower() != "false"

    return Switches(
        enabled=True,
        node_affinity=flag("predicate.NodeAffinityEnable"),
        taints=flag("predicate.TaintTolerationEnable"),
    )


@dataclass
class Cycle:
    """The nodes, the HyperNodes and the configuration one run of allocate works on."""

    conf: SchedulerConf
    tree: HyperNodeTree
    nodes: dict[str, NodeState]
    queue: QueueAttr | None = None
    scores: bool = True  # False: no node or HyperNode scores (counting copies)
    last_index: int = 0  # where the previous node search stopped (Volcano keeps one)
    weights: Weights = field(init=False)
    static: StaticFilter = field(init=False)
    hn_scores: HyperNodeScores | None = field(init=False)
    members: dict[str, list[NodeState]] = field(init=False)

    def __post_init__(self) -> None:
        self.weights = weights_from(self.conf)
        self.static = StaticFilter(_switches(self.conf))
        wanted = self.weights.nta and self.scores
        self.hn_scores = HyperNodeScores(self.tree, self.nodes, self.weights) if wanted else None
        self.members = {}

    def nodes_of(self, hypernode: str) -> list[NodeState]:
        """``RealNodesList``: the nodes of a HyperNode, in name order."""
        got = self.members.get(hypernode)
        if got is None:
            names = self.tree[hypernode].nodes if hypernode in self.tree.hypernodes else ()
            got = self.members[hypernode] = [
                self.nodes[n] for n in sorted(names) if n in self.nodes
            ]
        return got

    def on_place(self, ts: TaskState, sign: int, ns: NodeState) -> None:
        """Allocate/deallocate events: the queue's and the HyperNodes' use follow."""
        if self.queue is not None:
            for k, v in ts.task.requests.items():
                self.queue.allocated[k] = self.queue.allocated.get(k, 0.0) + sign * v
        if self.hn_scores is not None:
            self.hn_scores.on_place(ts.task.requests, ns.name, sign)

    # --- gang and friends --------------------------------------------------------------

    def _gang(self, point: str) -> bool:
        return self.conf.enabled("gang", point)

    def job_ready(self, job: JobState) -> bool:
        if not self._gang("jobReady"):
            return True
        return (
            job.check_task_ready() and not job.subjob_shortfall(SubJob.is_ready) and job.is_ready()
        )

    def job_pipelined(self, job: JobState) -> bool:
        if not self._gang("jobPipelined"):
            return True
        return (
            job.check_task_pipelined()
            and not job.subjob_shortfall(SubJob.is_pipelined)
            and job.is_pipelined()
        )

    def subjob_ready(self, job: JobState, sj: SubJob) -> bool:
        if not job.has_subgroup_policy():
            return self.job_ready(job)
        return sj.is_ready() if self._gang("subJobReady") else True

    def subjob_pipelined(self, job: JobState, sj: SubJob) -> bool:
        if not job.has_subgroup_policy():
            return self.job_pipelined(job)
        return sj.is_pipelined() if self._gang("subJobPipelined") else True

    def job_invalid(self, job: JobState) -> str:
        """gang's ``JobValidFn`` in its words, or ""."""
        if self.conf.plugin("gang") is None:
            return ""
        if not job.check_task_valid():
            return "Not enough valid pods of each task for gang-scheduling"
        if not job.check_subjob_valid():
            return "Not enough valid subGroups of each task for gang-scheduling"
        if job.valid_num() < job.min_available:
            return (
                "Not enough valid tasks for gang-scheduling, valid: "
                f"{job.valid_num()}, min: {job.min_available}"
            )
        return ""

    def sort_tasks(self, tasks: Sequence[TaskState]) -> list[TaskState]:
        by_priority = self.conf.enabled("priority", "taskOrder")
        return sorted(tasks, key=functools.cmp_to_key(functools.partial(_task_cmp, by_priority)))

    def subjob_cmp(self, a: SubJob, b: SubJob) -> int:
        """``SubJobOrderFn``: the plugins in tier order, then match index and UID."""
        for p in self.conf.plugins():
            if not p.on("subJobOrder"):
                continue
            if p.name == "priority" and a.priority() != b.priority():
                return -1 if a.priority() > b.priority() else 1
            if p.name == "gang" and a.is_ready() != b.is_ready():
                return 1 if a.is_ready() else -1
        if a.match_index != b.match_index:
            return -1 if a.match_index < b.match_index else 1
        return -1 if a.uid < b.uid else (1 if a.uid > b.uid else 0)

    # --- queue -------------------------------------------------------------------------

    def allocatable(self, ts: TaskState) -> bool:
        if self.queue is None:
            return True
        return all(
            allocatable(name, self.queue, ts.task.requests)
            for name in ("proportion", "capacity")
            if self.conf.enabled(name, "allocatable")
        )

    def overused(self) -> bool:
        return (
            self.queue is not None
            and self.conf.enabled("proportion", "overused")
            and overused(self.queue)
        )

    # --- network-topology-aware ----------------------------------------------------------

    def gradients(
        self, root: str, highest: int | None, allocated: str, min_res: Mapping[str, int]
    ) -> list[list[str]] | str:
        """HyperNodes to try, grouped by tier, lowest first (``hyperNodeGradientFn``);
        a string says why there are none. ``highest`` None: not hard mode, only ``root``."""
        if highest is None or not self.conf.enabled("network-topology-aware", "hyperNodeGradient"):
            return [[root]]
        start = root
        if allocated:
            allowed = ""
            for a in self.tree.ancestors(allocated):
                if self.tree[a].tier > highest:
                    break
                allowed = a
            if not allowed:
                return (
                    f"its pods already run in HyperNode {_shown(allocated)}, whose tier "
                    f"{self.tree[allocated].tier} is above the highest tier allowed ({highest})"
                )
            lca = self.tree.lca(root, allowed)
            if lca == root:
                start = allowed
            elif lca != allowed:
                return f"HyperNodes {_shown(root)} and {_shown(allowed)} do not overlap"
        eligible: dict[int, list[str]] = {}
        queue, seen = [start], {start}
        while queue:
            cur = queue.pop(0)
            if self._eligible(cur, highest, allocated, min_res):
                eligible.setdefault(self.tree[cur].tier, []).append(cur)
            for child in sorted(self.tree[cur].children):
                if child not in seen:
                    seen.add(child)
                    queue.append(child)
        return [eligible[t] for t in sorted(eligible)]

    def _eligible(self, hn: str, highest: int, allocated: str, min_res: Mapping[str, int]) -> bool:
        if self.tree[hn].tier > highest:
            return False
        if allocated or self.hn_scores is None:
            return True
        s = self.hn_scores
        return R.less_equal(min_res, s.idle[hn]) or R.less_equal(min_res, s.future[hn])


def _shown(name: str) -> str:
    return "(the whole cluster)" if name == TOP else name


def _task_cmp(by_priority: bool, a: TaskState, b: TaskState) -> int:
    """``TaskOrderFn``: priority (when the priority plugin orders tasks), then the job
    controller's pod index, then creation time and UID (here the name when the pod has
    none)."""
    if by_priority and a.task.priority != b.task.priority:
        return -1 if a.task.priority > b.task.priority else 1
    ia, ib = pod_index(a.name), pod_index(b.name)
    if ia is not None and ib is not None and ia != ib:
        return -1 if ia < ib else 1
    if a.task.created != b.task.created:
        return -1 if a.task.created < b.task.created else 1
    ka, kb = a.task.uid or a.task.name, b.task.uid or b.task.name
    return -1 if ka < kb else (1 if ka > kb else 0)
