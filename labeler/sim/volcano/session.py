"""One scheduling cycle's view of the job and the nodes, and the statement that changes it.

``JobState`` is Volcano's ``JobInfo`` for the job being advised: its tasks with their states,
its sub-jobs (``SubJobInfo``: one per sub-group a ``subGroupPolicy`` selects, plus the
default one holding the other tasks), the gang counts the plugins ask about, and the fit
errors of the last attempt. Counts are kept as tasks change state, so the readiness checks
asked after every placement cost no walk over the tasks. ``NodeState`` holds a node's
idle, releasing and pipelined resources and its pod count. A ``Statement`` records
placements so that an attempt can be discarded (a dry run in one HyperNode) and replayed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from labeler.core.capacity import Node
from labeler.core.quantity import PODS
from labeler.core.volcano import TopologyMode
from labeler.sim.volcano import resources as R
from labeler.sim.volcano.model import (
    ALLOCATED,
    ALLOCATED_STATES,
    BINDING,
    PENDING,
    PIPELINED,
    SUCCEEDED,
    NetworkTopology,
    PodGroup,
    SubGroupPolicy,
    Task,
)
from labeler.sim.volcano.predicates import FitErrors

READY_STATES = ALLOCATED_STATES | {SUCCEEDED}
PENDING_BE = "pending best-effort"  # a count beside the states: pending pods asking nothing
VALID_STATES = ALLOCATED_STATES | {SUCCEEDED, PIPELINED, PENDING}


class NodeState:
    """A node during the cycle (``api.NodeInfo``): what is idle, releasing, pipelined."""

    __slots__ = ("idle", "max_pods", "name", "node", "pipelined", "pods", "releasing", "used")

    def __init__(self, node: Node, releasing: Mapping[str, int], empty: bool = False) -> None:
        self.node = node
        self.name = node.name
        self.used = dict(node.resident if empty else node.used)
        self.pods = self.used.pop(PODS, 0)
        # Volcano's idle keeps the ``pods`` allocatable: tasks never ask for it
        self.idle = R.sub(node.allocatable, self.used)
        self.releasing = {} if empty else dict(releasing)
        self.pipelined: dict[str, int] = {}
        self.max_pods = node.allocatable.get(PODS, 0)

    def future_idle(self) -> dict[str, int]:
        return R.sub(R.add(self.idle, self.releasing), self.pipelined)

    def short(self, request: Sequence[tuple[str, int]]) -> str | None:
        """The first resource of ``request`` (ordered as ``R.order``) the node's future idle
        lacks; None when the task fits (``insufficient`` without building the map)."""
        idle, rel, pipe = self.idle, self.releasing, self.pipelined
        for k, v in request:
            if v > idle.get(k, 0) + rel.get(k, 0) - pipe.get(k, 0):
                return k
        return None


class TaskState:
    """A task and what the cycle did with it."""

    __slots__ = ("best_effort", "last", "node", "order", "status", "subjob", "task")

    def __init__(self, task: Task, order: int) -> None:
        self.task = task
        self.status = task.status
        self.node = task.node
        self.last: tuple[str, str] | None = None  # state and node of the last dry run
        self.best_effort = R.is_empty(task.requests)
        self.subjob = ""
        self.order = order

    @property
    def name(self) -> str:
        return self.task.name


class GangCounts:
    """The readiness counts ``JobInfo`` and ``SubJobInfo`` share: tasks by state, kept up
    to date as tasks change state, against ``min_available``."""

    counts: Counter[str]
    min_available: int

    def ready_num(self) -> int:
        return sum(self.counts[s] for s in READY_STATES)

    def pending_best_effort(self) -> int:
        return self.counts[PENDING_BE]

    def is_ready(self) -> bool:
        return self.ready_num() + self.pending_best_effort() >= self.min_available

    def is_pipelined(self) -> bool:
        return (
            self.counts[PIPELINED] + self.ready_num() + self.pending_best_effort()
            >= self.min_available
        )


@dataclass
class SubJob(GangCounts):
    """``SubJobInfo``: tasks that must be placed together (a sub-group or partition)."""

    uid: str
    gid: str
    min_available: int
    network_topology: NetworkTopology | None
    match_index: int = 0
    tasks: list[TaskState] = field(default_factory=list)
    allocated_hypernode: str = ""
    counts: Counter[str] = field(default_factory=Counter)

    def priority(self) -> int:
        return max((t.task.priority for t in self.tasks), default=0)

    def hard_tier(self) -> int | None:
        nt = self.network_topology
        return nt.highest_tier if nt is not None and nt.mode is TopologyMode.HARD else None


def pod_index(name: str) -> int | None:
    """The job controller's pod index: the last ``-`` part, when the name has three parts."""
    parts = name.split("-")
    return int(parts[-1]) if len(parts) >= 3 and re.fullmatch(r"[+-]?\d+", parts[-1]) else None


class JobState(GangCounts):
    """``JobInfo`` of the advised job."""

    def __init__(self, podgroup: PodGroup, tasks: Sequence[Task]) -> None:
        self.podgroup = podgroup
        self.tasks = [TaskState(t, i) for i, t in enumerate(tasks)]
        self.min_available = podgroup.min_member
        self.task_min = dict(podgroup.min_task_member)
        self.task_min_total = sum(self.task_min.values())
        self.network_topology = podgroup.network_topology
        self.allocated_hypernode = ""
        self.counts: Counter[str] = Counter()
        self.role_counts: dict[str, Counter[str]] = {}
        self.fit_errors: dict[str, FitErrors] = {}
        self.job_fit_error = ""
        self.subjobs: dict[str, SubJob] = {}
        self.min_subjobs: dict[str, int] = {
            f"{podgroup.ref}/{p.name}": p.min_subgroups for p in podgroup.subgroups
        }
        for ts in self.tasks:
            self._add(ts)
        self.by_name = {t.name: t for t in self.tasks}

    # --- sub-jobs --------------------------------------------------------------------

    def _subjob_for(self, task: Task) -> SubJob:
        for policy in self.podgroup.subgroups:
            values = policy.match_values(task.labels)
            if values is not None:
                return self._policy_subjob(policy, values)
        uid = self.podgroup.ref
        if uid not in self.subjobs:
            size = None if self.podgroup.subgroups else self.min_available
            self.subjobs[uid] = SubJob(uid, uid, 1 if size is None else size, self.network_topology)
        return self.subjobs[uid]

    def _policy_subjob(self, policy: SubGroupPolicy, values: tuple[str, ...]) -> SubJob:
        gid = f"{self.podgroup.ref}/{policy.name}"
        uid = f"{gid}-{'-'.join(values)}"
        if uid not in self.subjobs:
            index = int(values[0]) if values and re.fullmatch(r"[+-]?\d+", values[0]) else 0
            self.subjobs[uid] = SubJob(
                uid,
                gid,
                1 if policy.size is None else policy.size,
                policy.network_topology,
                match_index=index,
            )
        return self.subjobs[uid]

    def _add(self, ts: TaskState) -> None:
        sj = self._subjob_for(ts.task)
        ts.subjob = sj.uid
        sj.tasks.append(ts)
        self._count(ts, ts.status, 1)

    def _count(self, ts: TaskState, status: str, delta: int) -> None:
        keys = (status, PENDING_BE) if status == PENDING and ts.best_effort else (status,)
        role = self.role_counts.setdefault(ts.task.role, Counter())
        for key in keys:
            self.counts[key] += delta
            role[key] += delta
            self.subjobs[ts.subjob].counts[key] += delta

    def set_status(self, ts: TaskState, status: str, node: str = "") -> None:
        self._count(ts, ts.status, -1)
        ts.status, ts.node = status, node
        self._count(ts, status, 1)

    def has_subgroup_policy(self) -> bool:
        return bool(self.podgroup.subgroups)

    def default_subjob(self) -> SubJob | None:
        return self.subjobs.get(self.podgroup.ref)

    # --- gang counts (``job_info.go``; readiness in ``GangCounts``) -------------------

    def valid_num(self) -> int:
        return sum(self.counts[s] for s in VALID_STATES)

    def _role_occupied(self, states: Iterable[str], role: str) -> int:
        counts = self.role_counts.get(role, Counter())
        return sum(counts[s] for s in states) + counts[PENDING_BE]

    def check_task_ready(self) -> bool:
        if self.min_available < self.task_min_total:
            return True
        return all(self._role_occupied(READY_STATES, r) >= n for r, n in self.task_min.items())

    def check_task_pipelined(self) -> bool:
        if self.min_available < self.task_min_total:
            return True
        return all(
            self._role_occupied(READY_STATES | {PIPELINED}, r) >= n
            for r, n in self.task_min.items()
        )

    def check_task_valid(self) -> bool:
        if self.min_available < self.task_min_total:
            return True
        for role, n in self.task_min.items():
            counts = self.role_counts.get(role, Counter())
            if n and sum(counts[s] for s in VALID_STATES) < n:
                return False
        return True

    def subjob_shortfall(self, condition: Callable[[SubJob], bool]) -> str:
        """``checkSubJobCondition``: "" when every policy has its minSubGroups."""
        got: Counter[str] = Counter(sj.gid for sj in self.subjobs.values() if condition(sj))
        for gid, need in self.min_subjobs.items():
            if need and got[gid] < need:
                return (
                    f"the number of allocated subGroups {got[gid]} is less than the number "
                    f"of subGroups {need} with the minSubGroups attribute in subGroupPolicy "
                    f"{gid}."
                )
        return ""

    def check_subjob_valid(self) -> bool:
        have = Counter(sj.gid for sj in self.subjobs.values())
        return all(have[g] >= n for g, n in self.min_subjobs.items())

    def failed_roles(self, subjob: str) -> set[str]:
        by_name = self.by_name
        return {
            by_name[n].task.role
            for n in self.fit_errors
            if n in by_name and by_name[n].subjob == subjob
        }

    def need_continue(self, subjob: str) -> bool:
        """``NeedContinueAllocating``: after a task fits nowhere, is the gang still possible?"""
        if self.min_available == len(self.tasks):
            return False
        sj = self.subjobs.get(subjob)
        if sj is not None and sj.min_available >= len(sj.tasks):
            return False
        if self.has_subgroup_policy():
            return True
        failed = self.failed_roles(subjob)
        if self.min_available < self.task_min_total:
            left = sum(1 for t in self.tasks if t.status == PENDING and t.task.role not in failed)
            return self.ready_num() + left >= self.min_available
        for role in failed:
            need = self.task_min.get(role, 0)
            if need and self._role_occupied(ALLOCATED_STATES | {SUCCEEDED}, role) < need:
                return False
        return True

    def reset_fit_errors(self, subjob: str | None = None) -> None:
        if subjob is None:
            self.fit_errors, self.job_fit_error = {}, ""
            return
        by_name = self.by_name
        self.fit_errors = {
            n: e
            for n, e in self.fit_errors.items()
            if n not in by_name or by_name[n].subjob != subjob
        }


@dataclass
class Op:
    kind: str  # ALLOCATED or PIPELINED
    task: TaskState
    node: NodeState


class Statement:
    """Placements of one attempt; ``listeners`` see each one (queue and HyperNode use)."""

    def __init__(
        self, job: JobState, listeners: Sequence[Callable[[TaskState, int, NodeState], None]]
    ):
        self.job = job
        self.listeners = listeners
        self.ops: list[Op] = []

    def _apply(self, kind: str, ts: TaskState, ns: NodeState) -> None:
        req = ts.task.requests
        if kind == ALLOCATED:
            ns.idle = R.sub(ns.idle, req)
            ns.used = R.add(ns.used, req)
        else:
            ns.pipelined = R.add(ns.pipelined, req)
        ns.pods += 1
        self.job.set_status(ts, kind, ns.name)
        self._notify(ts, ns, 1)
        self.ops.append(Op(kind, ts, ns))

    def _notify(self, ts: TaskState, ns: NodeState, sign: int) -> None:
        for fn in self.listeners:
            fn(ts, sign, ns)

    def allocate(self, ts: TaskState, ns: NodeState) -> None:
        self._apply(ALLOCATED, ts, ns)

    def pipeline(self, ts: TaskState, ns: NodeState) -> None:
        self._apply(PIPELINED, ts, ns)

    def discard(self) -> None:
        """Undo every placement, newest first; each task remembers it (``LastTransaction``)."""
        for op in reversed(self.ops):
            ts, ns, req = op.task, op.node, op.task.task.requests
            ts.last = (op.kind, ns.name)
            if op.kind == ALLOCATED:
                ns.idle = R.add(ns.idle, req)
                ns.used = R.sub(ns.used, req)
            else:
                ns.pipelined = R.sub(ns.pipelined, req)
            ns.pods -= 1
            self.job.set_status(ts, PENDING)
            self._notify(ts, ns, -1)
        self.ops = []

    def saved(self) -> list[tuple[str, TaskState, NodeState]]:
        return [(op.kind, op.task, op.node) for op in self.ops]

    def replay(self, ops: Iterable[tuple[str, TaskState, NodeState]]) -> None:
        for kind, ts, ns in ops:
            self._apply(kind, ts, ns)

    def commit(self) -> list[Op]:
        done = self.ops
        for op in done:
            if op.kind == ALLOCATED:
                self.job.set_status(op.task, BINDING, op.node.name)
        self.ops = []
        return done


def releasing_by_node(tasks: Iterable[tuple[str, Mapping[str, int]]]) -> dict[str, dict[str, int]]:
    """Requests of terminating pods per node: they come back when the pods are gone."""
    out: dict[str, dict[str, int]] = {}
    for node, req in tasks:
        out[node] = R.add(out.get(node, {}), req)
    return out
